use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry(on_exhausted_result = keep)]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn keep(units: u32) -> Result<u32, String> {
    Ok(units)
}

fn main() {}
