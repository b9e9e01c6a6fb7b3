use std::future::Future;

use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry]
    fn stock(&self, sku: &str) -> impl Future<Output = u32> + Send;
}

fn main() {}
