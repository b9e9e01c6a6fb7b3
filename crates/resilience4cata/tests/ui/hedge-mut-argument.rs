#![allow(async_fn_in_trait)]
use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Search {
    #[hedge(delay = "50ms")]
    async fn find(&self, hits: &mut Vec<u32>) -> std::io::Result<u32>;
}

struct Backend;

impl Search for Backend {
    async fn find(&self, hits: &mut Vec<u32>) -> std::io::Result<u32> {
        hits.push(1);
        Ok(1)
    }
}

fn main() {
    let _ = ResilientSearch::new(Backend, &Registry::builder().build().unwrap());
}
