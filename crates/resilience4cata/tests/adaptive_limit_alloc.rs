//! Allocation counts of the adaptive limit's paths (each algorithm, sync and async, limit moving or
//! not), with the counting global allocator that counts only the calling thread.

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
}

fn api() -> ResilientApi<Backend> {
    ResilientApi::new(Backend, &testkit::manual().1).unwrap()
}

#[test]
fn every_algorithm_passes_and_moves_the_limit_without_allocating() {
    let api = api();
    let calls: [&dyn Fn(bool) -> Result<u32, Down>; 3] = [&|f| api.aimd(f), &|f| api.gradient2(f), &|f| api.vegas(f)];
    for call in calls {
        let _ = call(false); // warm up
        let n = allocations_during(|| {
            for i in 0..1000u32 {
                let fail = i % 10 == 0; // drops move the limit, successes leave it
                assert_eq!(call(fail).is_err(), fail);
            }
        });
        assert_eq!(n, 0);
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
