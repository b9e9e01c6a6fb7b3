use resilience4cata::{FallbackContext, resilient};

pub struct Order {
    pub sku: String,
}

#[resilient]
pub trait Orders {
    #[fallback(method = queue)]
    fn place(&self, order: Order) -> Result<u32, String>;

    fn queue(&self, order: Order, ctx: FallbackContext<String>) -> Result<u32, String>;
}

fn main() {}
