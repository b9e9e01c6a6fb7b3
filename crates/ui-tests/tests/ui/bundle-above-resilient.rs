use resilience4cata::resilient;

resilience4cata::bundle! {
    pub critical = #[retry];
}

#[bundle(critical)]
#[resilient]
pub trait Inventory {
    fn stock(&self, sku: &str) -> Result<u32, String>;
}

fn main() {}
