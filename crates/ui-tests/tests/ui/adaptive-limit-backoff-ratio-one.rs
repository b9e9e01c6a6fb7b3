use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[adaptive_limit(backoff_ratio = 1.0)]
    fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
