use resilience4cata::{Registry, resilient};

#[resilient]
#[allow(async_fn_in_trait)]
pub trait Inventory {
    #[timeout(name = "inventory", duration = "1s")]
    async fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

struct Backend;

impl Inventory for Backend {
    async fn stock(&self, _sku: &str) -> std::io::Result<u32> {
        Ok(1)
    }
}

fn main() {
    let _ = ResilientInventory::new(Backend, &Registry::builder().build().unwrap());
}
