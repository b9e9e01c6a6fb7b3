use resilience4cata::{FallbackContext, resilient};

#[resilient]
pub trait Prices {
    #[fallback(method = cached)]
    fn price(&self, sku: &str, units: u32) -> Result<u32, String>;

    fn cached(&self, sku: &str, units: u64, ctx: FallbackContext<String>) -> Result<u32, String>;
}

fn main() {}
