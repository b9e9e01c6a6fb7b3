use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry(delay = "1s", delay = "2s")]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
