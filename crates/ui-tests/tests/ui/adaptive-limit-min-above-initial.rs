use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[adaptive_limit(min_limit = 10, initial_limit = 5)]
    fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
