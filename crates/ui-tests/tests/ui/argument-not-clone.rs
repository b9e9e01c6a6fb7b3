use resilience4cata::resilient;

pub struct Order {
    pub sku: String,
}

#[resilient]
pub trait Orders {
    #[retry]
    fn place(&self, order: Order) -> Result<u32, String>;
}

fn main() {}
