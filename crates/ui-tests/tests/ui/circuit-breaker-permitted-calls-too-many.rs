use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[circuit_breaker(permitted_calls_in_half_open = 5000)]
    fn stock(&self, sku: &str) -> Result<u32, std::io::Error>;
}

fn main() {}
