use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[rate_limiter(permits = 0)]
    fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
