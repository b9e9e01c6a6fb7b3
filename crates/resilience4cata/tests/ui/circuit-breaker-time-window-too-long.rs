use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Inventory {
    #[circuit_breaker(window_type = Time, window_size = 100000)]
    fn stock(&self, sku: &str) -> Result<u32, std::io::Error>;
}

struct Backend;

impl Inventory for Backend {
    fn stock(&self, _sku: &str) -> Result<u32, std::io::Error> {
        Ok(1)
    }
}

fn main() {
    let inventory = ResilientInventory::new(Backend, &Registry::builder().build().unwrap()).unwrap();
    let _ = inventory.stock("sku-1");
}
