use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[policy_order(Retry, Breaker)]
    #[retry(max_attempts = 2)]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
