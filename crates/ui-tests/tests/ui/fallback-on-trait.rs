use resilience4cata::{FallbackContext, resilient};

#[resilient]
#[fallback(method = cached)]
pub trait Prices {
    fn price(&self, sku: &str) -> Result<u32, String>;

    fn cached(&self, sku: &str, ctx: FallbackContext<String>) -> Result<u32, String>;
}

fn main() {}
