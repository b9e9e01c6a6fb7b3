use resilience4cata::resilient;

#[resilient(retry)]
pub trait Inventory {
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
