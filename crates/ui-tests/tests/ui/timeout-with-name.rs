use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[timeout(name = "inventory", duration = "1s")]
    async fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
