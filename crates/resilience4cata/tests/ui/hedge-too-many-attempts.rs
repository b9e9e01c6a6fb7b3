#![allow(async_fn_in_trait)]
use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Search {
    #[hedge(max_hedged_attempts = 9)]
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
