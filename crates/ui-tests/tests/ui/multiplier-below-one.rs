use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry(multiplier = 0.5)]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
