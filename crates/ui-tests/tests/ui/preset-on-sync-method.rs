// A preset has a timeout, which a blocking call cannot honour: the preset's `#[timeout]` is named,
// and the method.
use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[bundle(resilience4cata::presets::standard_http)]
    fn stock(&self, _sku: &str) -> std::io::Result<u32>;
}

fn main() {}
