//! `E` as an associated type. Without a bound, retry compiles (the autoref probe falls back and a
//! nested open breaker is retried like any error); with `type Error: ResilienceError` the probe
//! sees the bound and the nested refusal stops the retry.
use std::sync::atomic::{AtomicU32, Ordering};

use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

#[resilient]
pub trait Unbounded {
    type Error;

    #[retry(max_attempts = 3, delay = "0")]
    fn get(&self) -> Result<u32, Self::Error>;
}

#[resilient]
pub trait Bounded {
    type Error: ResilienceError;

    #[retry(max_attempts = 3, delay = "0")]
    fn get(&self) -> Result<u32, Self::Error>;
}

#[derive(Default)]
struct Backend(AtomicU32);

impl Backend {
    fn refuse(&self) -> Result<u32, std::io::Error> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Err(std::io::Error::from_rejection(Rejection::CallNotPermitted { instance: "x".into() }))
    }
}

impl Unbounded for Backend {
    type Error = std::io::Error;

    fn get(&self) -> Result<u32, std::io::Error> {
        self.refuse()
    }
}

impl Bounded for Backend {
    type Error = std::io::Error;

    fn get(&self) -> Result<u32, std::io::Error> {
        self.refuse()
    }
}

fn main() {
    let registry = Registry::builder().build().unwrap();
    let unbounded = ResilientUnbounded::new(Backend::default(), &registry).unwrap();
    assert!(unbounded.get().is_err());
    assert_eq!(unbounded.delegate().0.load(Ordering::SeqCst), 3);

    let bounded = ResilientBounded::new(Backend::default(), &registry).unwrap();
    assert!(bounded.get().is_err());
    assert_eq!(bounded.delegate().0.load(Ordering::SeqCst), 1);
}
