//! A misspelt method in an id accessor does not compile (rustc's own E0609, on the name): ids
//! are never spelled by hand.

use resilience4cata::resilient;

#[resilient]
pub trait Stock {
    #[circuit_breaker]
    fn stock(&self, sku: &str) -> std::io::Result<u32>;
}

fn main() {
    let _ = ResilientStockIds::scoped("host-a").stok.circuit_breaker();
}
