use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry]
    type Sku;

    fn stock(&self, sku: &Self::Sku) -> Result<u32, String>;
}

fn main() {}
