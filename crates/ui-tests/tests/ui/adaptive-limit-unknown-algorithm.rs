use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[adaptive_limit(algorithm = Reno)]
    fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
