use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    fn same_as(&self, other: &Self) -> bool;

    #[retry]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
