use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[circuit_breaker(window_size = 0)]
    fn stock(&self, sku: &str) -> Result<u32, std::io::Error>;
}

fn main() {}
