use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Inventory {
    #[retry(max_attempts = 3, delay = "100ms")]
    async fn stock(&self, sku: &str) -> Result<u32, String>;
}

struct Backend;

impl Inventory for Backend {
    async fn stock(&self, _sku: &str) -> Result<u32, String> {
        Ok(7)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = Registry::builder().build().unwrap();
    let inventory = ResilientInventory::new(Backend, &registry).unwrap();
    assert_eq!(inventory.stock("sku-1").await, Ok(7));
}
