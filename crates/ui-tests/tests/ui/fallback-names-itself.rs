use resilience4cata::resilient;

#[resilient]
pub trait Prices {
    #[fallback(method = price)]
    fn price(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
