//! The class style's pass paths allocate nothing, as the trait style's do: a retry that succeeds
//! at once, one that fails once with a zero wait, a closed breaker, and an async retry.

use std::cell::Cell;

use resilience4cata::{Registry, Rejection, ResilienceError, resilient};
use testkit::alloc::allocations_over;

#[global_allocator]
static GLOBAL: testkit::alloc::Counting = testkit::alloc::Counting;

#[derive(Debug, PartialEq, ResilienceError)]
pub enum Error {
    Down,
    #[rejection]
    Rejected(Rejection),
}

struct Client {
    policies: ClientPolicies,
}

#[resilient(policies = policies)]
impl Client {
    #[retry(max_attempts = 3, delay = "0")]
    fn get(&self, flaky: &Cell<bool>) -> Result<u32, Error> {
        if flaky.replace(false) { Err(Error::Down) } else { Ok(1) }
    }

    #[circuit_breaker]
    fn guarded(&self) -> Result<u32, Error> {
        Ok(2)
    }

    #[retry(max_attempts = 3, delay = "0")]
    async fn get_async(&self, flaky: &Cell<bool>) -> Result<u32, Error> {
        if flaky.replace(false) { Err(Error::Down) } else { Ok(3) }
    }
}

fn client() -> Client {
    let registry = Registry::builder().build().unwrap();
    Client { policies: ClientPolicies::new(&registry).unwrap() }
}

#[test]
fn success_and_a_zero_wait_retry_allocate_nothing() {
    let client = client();
    let (ok, flaky) = (Cell::new(false), Cell::new(true));
    client.get(&flaky).unwrap(); // warm up thread-locals
    assert_eq!(allocations_over(1000, || client.get(&ok).unwrap()), 0);
    assert_eq!(
        allocations_over(1000, || {
            flaky.set(true);
            assert_eq!(client.get(&flaky), Ok(1));
        }),
        0
    );
    assert!(!flaky.get(), "every call failed once");
}

#[test]
fn a_closed_breaker_and_an_async_retry_allocate_nothing() {
    let client = client();
    let flaky = Cell::new(true);
    client.guarded().unwrap();
    testkit::now(client.get_async(&flaky)).unwrap();
    assert_eq!(allocations_over(1000, || client.guarded().unwrap()), 0);
    assert_eq!(
        allocations_over(1000, || {
            flaky.set(true);
            assert_eq!(testkit::now(client.get_async(&flaky)), Ok(3));
        }),
        0
    );
}
