use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[timeout(duration = "0ms")]
    async fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
