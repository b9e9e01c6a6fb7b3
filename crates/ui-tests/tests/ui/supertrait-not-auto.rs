use resilience4cata::resilient;

pub trait Named {
    fn name(&self) -> String;
}

#[resilient]
pub trait Inventory: Named + Send {
    #[retry]
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
