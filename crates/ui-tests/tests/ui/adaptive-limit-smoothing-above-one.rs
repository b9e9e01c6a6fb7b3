use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[adaptive_limit(algorithm = Gradient2, smoothing = 1.5)]
    fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
