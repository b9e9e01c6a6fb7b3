use resilience4cata::{Registry, resilient};

#[resilient]
pub trait Search {
    #[hedge(delay = "50ms")]
    fn find(&self, _query: &str) -> std::io::Result<u32>;
}

struct Backend;

impl Search for Backend {
    fn find(&self, _query: &str) -> std::io::Result<u32> {
        Ok(1)
    }
}

fn main() {
    let _ = ResilientSearch::new(Backend, &Registry::builder().build().unwrap());
}
