use resilience4cata::{FallbackContext, resilient};

#[resilient]
pub trait Prices {
    #[fallback(method = cached)]
    fn price(&self, sku: &str) -> Result<u32, String>;

    #[fallback(method = price)]
    fn cached(&self, sku: &str, ctx: FallbackContext<String>) -> Result<u32, String>;
}

fn main() {}
