//! Allocation counts of the adaptive limit's paths (each algorithm, sync and async, limit moving or
//! not), with the counting global allocator that counts only the calling thread.

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Rejection, resilient};
use testkit::Down;
use testkit::alloc::allocations_during;
use testkit::now;

testkit::count_allocations!();

#[resilient]
pub trait Api {
    #[adaptive_limit]
    fn aimd(&self, fail: bool) -> Result<u32, Down>;

    #[adaptive_limit(algorithm = Gradient2)]
    fn gradient2(&self, fail: bool) -> Result<u32, Down>;

    #[adaptive_limit(algorithm = Vegas)]
    fn vegas(&self, fail: bool) -> Result<u32, Down>;

    #[adaptive_limit(max_wait = "10ms")]
    async fn aimd_async(&self, fail: bool) -> Result<u32, Down>;

    #[adaptive_limit(initial_limit = 1, max_limit = 1)]
    fn refusing(&self, next: &dyn Fn() -> Result<u32, Down>) -> Result<u32, Down>;

    /// Every call a sample, a window folded every call or two.
    #[adaptive_limit(algorithm = Gradient2, initial_limit = 1, window_size = 1, min_window_time = "1ms", max_window_time = "1ms")]
    fn gradient2_timed(&self, clock: &ManualClock, fail: bool) -> Result<u32, Down>;

    #[adaptive_limit(algorithm = Vegas, window_size = 1, min_window_time = "1ms", max_window_time = "1ms")]
    fn vegas_timed(&self, clock: &ManualClock, fail: bool) -> Result<u32, Down>;
}

struct Backend;

impl Api for Backend {
    testkit::same_body! { fn(&self, fail: bool) -> Result<u32, Down> { Down::when(fail) } for aimd gradient2 vegas }
    async fn aimd_async(&self, fail: bool) -> Result<u32, Down> {
        Down::when(fail)
    }
    fn refusing(&self, next: &dyn Fn() -> Result<u32, Down>) -> Result<u32, Down> {
        next()
    }
    fn gradient2_timed(&self, clock: &ManualClock, fail: bool) -> Result<u32, Down> {
        clock.advance(std::time::Duration::from_micros(700));
        self.aimd(fail)
    }
    fn vegas_timed(&self, clock: &ManualClock, fail: bool) -> Result<u32, Down> {
        self.gradient2_timed(clock, fail)
    }
}

fn api() -> ResilientApi<Backend> {
    ResilientApi::new(Backend, &testkit::manual().1).unwrap()
}

/// On a clock that does not move, Aimd's drops move its limit; Gradient2's and Vegas's calls are
/// under `min_rtt_threshold`, so this is their path for calls that are not samples (the next test
/// covers samples and folds).
#[test]
fn every_algorithm_passes_and_moves_the_limit_without_allocating() {
    let api = api();
    let calls: [&dyn Fn(bool) -> Result<u32, Down>; 3] = [&|f| api.aimd(f), &|f| api.gradient2(f), &|f| api.vegas(f)];
    for call in calls {
        let _ = call(false); // warm up
        let n = allocations_during(|| {
            for i in 0..1000u32 {
                let fail = i % 10 == 0; // Aimd: drops move the limit, successes leave it
                assert_eq!(call(fail).is_err(), fail);
            }
        });
        assert_eq!(n, 0);
    }
}

/// Gradient2 and Vegas with calls that are samples: recording on the thread's stripe, folding a
/// window every call or two, and moving the limit allocate nothing.
#[test]
fn windowed_samples_and_folds_allocate_nothing() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    type Call<'a> = &'a dyn Fn(bool) -> Result<u32, Down>;
    let calls: [(&str, Call<'_>); 2] =
        [("gradient2_timed", &|f| api.gradient2_timed(&clock, f)), ("vegas_timed", &|f| api.vegas_timed(&clock, f))];
    for (method, call) in calls {
        let handle = registry.adaptive_limit(&format!("{}::Api::{method}", module_path!())).unwrap();
        let _ = call(false); // warm up: the thread claims its stripe
        let before = handle.snapshot().limit;
        let n = allocations_during(|| {
            for i in 0..1000u32 {
                let fail = i % 3 == 0; // Vegas falls on drops; Gradient2 climbs from 1 (one call in flight)
                assert_eq!(call(fail).is_err(), fail);
            }
        });
        assert_eq!(n, 0, "{method}");
        assert_ne!(handle.snapshot().limit, before, "{method}: the folds moved the limit");
    }
}

#[test]
fn async_pass_path_allocates_nothing() {
    let api = api();
    now(api.aimd_async(false)).unwrap();
    let n = allocations_during(|| {
        for i in 0..1000u32 {
            assert_eq!(now(api.aimd_async(i % 7 == 0)).is_err(), i % 7 == 0);
        }
    });
    assert_eq!(n, 0);
}

#[test]
fn a_refusal_allocates_nothing_without_listeners() {
    let api = api();
    let refused = || api.refusing(&|| api.refusing(&|| Ok(1)));
    assert!(matches!(refused(), Err(Down::Rejected(Rejection::LimitExceeded { .. }))));
    let n = allocations_during(|| {
        for _ in 0..1000 {
            assert!(refused().is_err());
        }
    });
    assert_eq!(n, 0);
}
