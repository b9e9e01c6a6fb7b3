use resilience4cata::{Registry, resilient};

#[derive(Debug)]
pub enum InventoryError {
    Unavailable,
}

#[resilient]
pub trait Inventory {
    #[retry(max_attempts = 3, delay = "100ms")]
    fn stock(&self, sku: &str) -> Result<u32, InventoryError>;
}

#[derive(Debug)]
struct Backend;

impl Inventory for Backend {
    fn stock(&self, _sku: &str) -> Result<u32, InventoryError> {
        Ok(7)
    }
}

fn main() {
    let registry = Registry::builder().build().unwrap();
    let inventory = ResilientInventory::new(Backend, &registry).unwrap();
    assert_eq!(inventory.stock("sku-1").unwrap(), 7);
    assert!(format!("{inventory:?}").starts_with("ResilientInventory { delegate: Backend"));
    let _: &Backend = inventory.delegate();
    let _ = InventoryError::Unavailable;
}
