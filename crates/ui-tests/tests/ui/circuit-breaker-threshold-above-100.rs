use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[circuit_breaker(failure_rate_threshold = 150)]
    fn stock(&self, sku: &str) -> Result<u32, std::io::Error>;
}

fn main() {}
