use resilience4cata::resilient;

#[resilient]
pub trait Search {
    #[hedge(delay = "50ms")]
    fn find(&self, _query: &str) -> std::io::Result<u32>;
}

fn main() {}
