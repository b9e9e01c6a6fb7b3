use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry(delay = "10 parsecs")]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
