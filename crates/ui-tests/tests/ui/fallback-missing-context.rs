use resilience4cata::resilient;

#[resilient]
pub trait Prices {
    #[fallback(method = cached)]
    fn price(&self, sku: &str) -> Result<u32, String>;

    fn cached(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
