use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry(budget_window = "500ms")]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
