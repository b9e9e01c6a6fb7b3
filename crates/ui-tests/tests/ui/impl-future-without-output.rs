use std::future::Future;

use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry]
    fn stock(&self, sku: &str) -> impl Future + Send;
}

fn main() {}
