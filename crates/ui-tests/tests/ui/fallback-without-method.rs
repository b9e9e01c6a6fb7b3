use resilience4cata::resilient;

#[resilient]
pub trait Prices {
    #[fallback(skip_on = _)]
    fn price(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
