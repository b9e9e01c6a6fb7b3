use resilience4cata::{Registry, resilient};

#[resilient]
#[timeout(duration = "1s")]
#[allow(async_fn_in_trait)]
pub trait Inventory {
    async fn stock(&self, sku: &str) -> std::io::Result<u32>;
    fn reserve(&self, sku: &str) -> std::io::Result<()>;
    fn release(&self, sku: &str) -> std::io::Result<()>;
}

struct Backend;

impl Inventory for Backend {
    async fn stock(&self, _sku: &str) -> std::io::Result<u32> {
        Ok(1)
    }
    fn reserve(&self, _sku: &str) -> std::io::Result<()> {
        Ok(())
    }
    fn release(&self, _sku: &str) -> std::io::Result<()> {
        Ok(())
    }
}

fn main() {
    let _ = ResilientInventory::new(Backend, &Registry::builder().build().unwrap());
}
