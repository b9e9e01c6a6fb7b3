use resilience4cata::resilient;

#[resilient]
pub trait Search {
    #[hedge(max_hedged_attempts = 9)]
    async fn find(&self, _query: &str) -> std::io::Result<u32>;
}

fn main() {}
