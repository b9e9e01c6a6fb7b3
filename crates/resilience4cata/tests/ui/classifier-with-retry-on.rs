use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Inventory {
    #[retry(classifier = accept, retry_on = _)]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn accept(_: &Result<u32, String>) -> resilience4cata::Verdict {
    resilience4cata::Verdict::Success
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
