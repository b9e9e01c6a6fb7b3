use resilience4cata::resilient;

#[resilient]
#[retry(max_attempts = 3)]
pub trait Search {
    #[hedge(delay = "50ms")]
    async fn find(&self, _query: &str) -> std::io::Result<u32>;
}

fn main() {}
