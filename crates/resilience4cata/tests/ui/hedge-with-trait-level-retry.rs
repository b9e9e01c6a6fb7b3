#![allow(async_fn_in_trait)]
use resilience4cata::{Registry, resilient};

#[resilient]
#[retry(max_attempts = 3)]
pub trait Search {
    #[hedge(delay = "50ms")]
    async fn find(&self, _query: &str) -> std::io::Result<u32>;
}

struct Backend;

impl Search for Backend {
    async fn find(&self, _query: &str) -> std::io::Result<u32> {
        Ok(1)
    }
}

fn main() {
    let _ = ResilientSearch::new(Backend, &Registry::builder().build().unwrap());
}
