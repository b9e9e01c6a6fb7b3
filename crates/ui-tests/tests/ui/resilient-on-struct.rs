use resilience4cata::resilient;

#[resilient]
pub struct Inventory {
    pub units: u32,
}

fn main() {}
