use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[adaptive_limit(algorithm = Vegas, min_window_time = "2s", max_window_time = "1s")]
    fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
