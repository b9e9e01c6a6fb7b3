use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Inventory {
    #[rate_limiter(permits = 10)]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

struct Backend;

impl Inventory for Backend {
    fn stock(&self, _sku: &str) -> Result<u32, String> {
        Ok(1)
    }
}

fn main() {
    let _ = ResilientInventory::new(Backend, &Registry::builder().build().unwrap());
}
