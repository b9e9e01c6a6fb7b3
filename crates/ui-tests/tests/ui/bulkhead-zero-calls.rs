use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[bulkhead(max_concurrent_calls = 0)]
    fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
