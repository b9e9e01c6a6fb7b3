//! Allocation counts of a hedged call whose first attempt answers within `delay` (SPEC §7.7): none,
//! whether the attempt is ready on its first poll (no timer at all) or pending once first (the
//! delay's timer is created inline on the system clock and dropped unfired). Counted on the
//! calling thread only.

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Registry, resilient};

use testkit::Down;
use testkit::alloc::allocations_during;
use testkit::now;

testkit::count_allocations!();

#[resilient]
pub trait Api {
    #[hedge(delay = "100ms")]
    async fn at_once(&self, x: u32) -> Result<u32, Down>;

    #[hedge(delay = "100ms")]
    async fn after_a_yield(&self, x: u32) -> Result<u32, Down>;

    #[hedge(delay = "100ms", max_hedged_attempts = 2)]
    #[circuit_breaker]
    #[timeout(duration = "1s")]
    #[bulkhead(max_concurrent_calls = 4)]
    async fn guarded(&self, x: u32) -> Result<u32, Down>;
}

struct Backend;

impl Api for Backend {
    async fn at_once(&self, x: u32) -> Result<u32, Down> {
        Ok(x + 1)
    }
    async fn after_a_yield(&self, x: u32) -> Result<u32, Down> {
        tokio::task::yield_now().await; // pending once: the hedge's timer now exists
        Ok(x + 1)
    }
    async fn guarded(&self, x: u32) -> Result<u32, Down> {
        Ok(x + 1)
    }
}

#[test]
fn a_first_attempt_ready_at_once_allocates_nothing() {
    let clock = ManualClock::new();
    let api = ResilientApi::new(Backend, &testing::registry(&clock).build().unwrap()).unwrap();
    now(api.at_once(0)).unwrap();
    now(api.guarded(0)).unwrap();
    let n = allocations_during(|| {
        for i in 0..1000 {
            assert_eq!(now(api.at_once(i)), Ok(i + 1));
            assert_eq!(now(api.guarded(i)), Ok(i + 1));
        }
    });
    assert_eq!(n, 0, "allocations in 2000 hedged calls answered by their first poll");
}

#[test]
fn a_first_attempt_pending_once_then_answering_within_the_delay_allocates_nothing() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
    let api = ResilientApi::new(Backend, &Registry::builder().build().unwrap()).unwrap();
    // Warm up: the runtime's first timer registration and run queue growth are its own.
    runtime.block_on(async {
        for i in 0..10 {
            api.after_a_yield(i).await.unwrap();
        }
    });
    // `block_on` itself may allocate once per call: the bare delegate under the same runtime is
    // the baseline, and the hedge must add nothing to it.
    let bare = allocations_during(|| {
        runtime.block_on(async {
            for i in 0..1000 {
                assert_eq!(api.delegate().after_a_yield(i).await, Ok(i + 1));
            }
        })
    });
    let hedged = allocations_during(|| {
        runtime.block_on(async {
            for i in 0..1000 {
                assert_eq!(api.after_a_yield(i).await, Ok(i + 1));
            }
        })
    });
    assert!(bare <= 1, "the runtime's own allocations per block_on: {bare}");
    assert_eq!(hedged, bare, "allocations added by 1000 hedged calls whose first attempt was pending once");
}
