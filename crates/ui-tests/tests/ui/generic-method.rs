use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry]
    fn stock<S: AsRef<str>>(&self, sku: S) -> Result<u32, String>;
}

fn main() {}
