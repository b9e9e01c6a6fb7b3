use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Inventory {
    #[policy_order(Retry, Fallback)]
    #[retry(max_attempts = 2)]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

struct Backend;

impl Inventory for Backend {
    fn stock(&self, _sku: &str) -> Result<u32, String> {
        Ok(1)
    }
}

fn main() {
    let inventory = ResilientInventory::new(Backend, &Registry::builder().build().unwrap()).unwrap();
    let _ = inventory.stock("sku-1");
}
