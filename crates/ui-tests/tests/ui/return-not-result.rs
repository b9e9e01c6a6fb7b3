use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry]
    fn stock(&self, sku: &str) -> u32;
}

fn main() {}
