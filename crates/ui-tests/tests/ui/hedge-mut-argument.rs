use resilience4cata::resilient;

#[resilient]
pub trait Search {
    #[hedge(delay = "50ms")]
    async fn find(&self, hits: &mut Vec<u32>) -> std::io::Result<u32>;
}

fn main() {}
