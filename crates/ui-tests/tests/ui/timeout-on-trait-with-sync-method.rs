use resilience4cata::resilient;

#[resilient]
#[timeout(duration = "1s")]
pub trait Inventory {
    async fn stock(&self, sku: &str) -> std::io::Result<u32>;
    fn reserve(&self, sku: &str) -> std::io::Result<()>;
    fn release(&self, sku: &str) -> std::io::Result<()>;
}

fn main() {}
