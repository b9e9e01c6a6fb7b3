// `#[resilient(?Send)]`: futures promise no `Send`, so a delegate holding an `Rc` across an await
// works, and the wrapper needs no `D: Sync`.
#![deny(warnings)]

use std::cell::Cell;
use std::rc::Rc;

use resilience4cata::{Registry, resilient};

#[resilient(?Send)]
pub trait Local {
    #[retry(max_attempts = 2, delay = "0")]
    async fn next(&self) -> Result<u32, String>;
}

struct Counter(Rc<Cell<u32>>);

impl Local for Counter {
    async fn next(&self) -> Result<u32, String> {
        let shared = Rc::clone(&self.0);
        std::future::ready(()).await;
        shared.set(shared.get() + 1);
        if shared.get() < 2 { Err("first".into()) } else { Ok(shared.get()) }
    }
}

fn main() {
    let registry = Registry::builder().build().unwrap();
    let local = ResilientLocal::new(Counter(Rc::new(Cell::new(0))), &registry).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    assert_eq!(runtime.block_on(local.next()), Ok(2));
}
