use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry]
    fn restock(&self, sku: &str);
}

fn main() {}
