use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry(enabled = "false")]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
