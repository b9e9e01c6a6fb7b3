use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry]
    fn stock(&mut self, sku: &str) -> Result<u32, String>;
}

fn main() {}
