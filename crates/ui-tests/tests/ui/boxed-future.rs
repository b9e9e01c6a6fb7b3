use std::future::Future;
use std::pin::Pin;

use resilience4cata::resilient;

#[resilient]
pub trait Inventory {
    #[retry]
    fn stock(&self, sku: &str) -> Pin<Box<dyn Future<Output = Result<u32, String>> + Send + '_>>;
}

fn main() {}
