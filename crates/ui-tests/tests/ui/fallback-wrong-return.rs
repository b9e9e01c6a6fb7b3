use resilience4cata::{FallbackContext, resilient};

#[resilient]
pub trait Prices {
    #[fallback(method = cached)]
    fn price(&self, sku: &str) -> Result<u32, String>;

    fn cached(&self, sku: &str, ctx: FallbackContext<String>) -> Result<u64, String>;
}

fn main() {}
