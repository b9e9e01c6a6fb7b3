use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Inventory {
    #[adaptive_limit(algorithm = Gradient2, smoothing = 1.5)]
    fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

struct Backend;

impl Inventory for Backend {
    fn stock(&self, _sku: &str) -> std::io::Result<u32> {
        Ok(1)
    }
}

fn main() {
    let _ = ResilientInventory::new(Backend, &Registry::builder().build().unwrap());
}
