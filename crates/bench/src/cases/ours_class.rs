//! resilience4cata's class style, as most users write it: a struct whose own methods carry the
//! attributes (`#[resilient(policies = policies)]` on its impl block), over the same
//! `#[inline(never)]` functions as every anchor. The rows sit beside the trait style's
//! (`ours_sync`, `ours_async`) in the same groups, so the two styles compare call for call.

use std::cell::Cell;

use resilience4cata::{Registry, resilient};

use super::ours_guarded::GuardError;
use crate::{Fail, consume, exec, flaky, opaque, work};

/// A client holding its policies.
#[derive(Debug)]
pub struct Client {
    fail_next: Cell<bool>,
    policies: ClientPolicies,
}

#[resilient(policies = policies)]
impl Client {
    /// Retry whose first attempt succeeds.
    #[retry(max_attempts = 3)]
    pub fn call(&self, x: u64) -> Result<u64, Fail> {
        work(x)
    }

    /// The async form.
    #[retry(max_attempts = 3)]
    pub async fn call_async(&self, x: u64) -> Result<u64, Fail> {
        work(x)
    }

    /// Fails when the flag is set; zero wait between attempts.
    #[retry(max_attempts = 3, delay = "0")]
    pub fn flaky(&self, x: u64) -> Result<u64, Fail> {
        flaky(x, &self.fail_next)
    }

    /// Circuit breaker, default configuration, closed.
    #[circuit_breaker]
    pub fn broken(&self, x: u64) -> Result<u64, GuardError> {
        work(x).map_err(|_| GuardError::Fail)
    }
}

fn client() -> Client {
    let registry = Registry::builder().build().expect("the default registry builds");
    Client { fail_next: Cell::new(false), policies: ClientPolicies::new(&registry).expect("the instances resolve") }
}

cases! { client;
    /// `#[retry]`, first attempt succeeds, sync.
    fn success_sync() -> impl FnMut() = |client| client.call(opaque(1));
    /// `#[retry]`, first attempt succeeds, async.
    fn success_async() -> impl FnMut() = |client| exec::poll_now(client.call_async(opaque(1)));
    /// `#[circuit_breaker]`, closed, success, sync.
    fn breaker_sync() -> impl FnMut() = |client| client.broken(opaque(1));
}

/// `#[retry(delay = "0")]`, first attempt fails, second succeeds, sync.
pub fn fail_once_sync() -> impl FnMut() {
    let client = client();
    move || {
        client.fail_next.set(true);
        consume(client.flaky(opaque(1)))
    }
}
