// One error, at the bundle: the uses do not repeat it.
use resilience4cata::resilient;

resilience4cata::bundle! {
    pub critical = #[retry(max_attempts = 0)];
}

#[resilient]
pub trait Inventory {
    #[bundle(critical)]
    fn stock(&self, sku: &str) -> Result<u32, String>;
    #[bundle(critical)]
    fn reserve(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
