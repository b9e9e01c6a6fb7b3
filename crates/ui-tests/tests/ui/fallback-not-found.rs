use resilience4cata::{FallbackContext, resilient};

#[resilient]
pub trait Prices {
    #[fallback(method = cahced_price)]
    fn price(&self, sku: &str) -> Result<u32, String>;

    fn cached_price(&self, sku: &str, ctx: FallbackContext<String>) -> Result<u32, String>;
    fn name(&self) -> String;
}

fn main() {}
