//! Allocation counts of the fallback, with the counting allocator of `testkit` (calling thread
//! only): a successful call never touches the fallback, and applying one without listeners
//! allocates nothing (the context holds the instance id by reference count), in the generated
//! code and in a pipeline with a sync fallback.

use std::cell::Cell;

use resilience4cata::{FallbackContext, Pipeline, resilient};

use testkit::alloc::allocations_over;

testkit::count_allocations!();

#[derive(Clone, Debug, PartialEq)]
pub struct Down;

#[resilient]
pub trait Api {
    #[retry(max_attempts = 3, delay = "10ms")]
    #[fallback(method = cached)]
    fn get(&self, fail: &Cell<bool>) -> Result<u32, Down>;

    fn cached(&self, fail: &Cell<bool>, ctx: FallbackContext<Down>) -> Result<u32, Down>;
}

struct Backend;

impl Api for Backend {
    fn get(&self, fail: &Cell<bool>) -> Result<u32, Down> {
        if fail.get() { Err(Down) } else { Ok(1) }
    }
    fn cached(&self, _fail: &Cell<bool>, ctx: FallbackContext<Down>) -> Result<u32, Down> {
        Ok(100 + ctx.attempts())
    }
}

#[test]
fn success_and_fallback_paths_of_a_wrapped_method_allocate_nothing() {
    let (_, registry) = testkit::manual();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    let (ok, failing) = (Cell::new(false), Cell::new(true));
    assert_eq!(api.get(&failing), Ok(103)); // warm up thread-locals
    assert_eq!(allocations_over(1000, || assert_eq!(api.get(&ok), Ok(1))), 0);
    assert_eq!(
        allocations_over(1000, || {
            assert_eq!(api.get(&failing), Ok(103)); // three attempts, two waits, the fallback
        }),
        0
    );
}

#[test]
fn success_and_sync_fallback_paths_of_a_pipeline_allocate_nothing() {
    let (_, registry) = testkit::manual();
    let pipeline = Pipeline::builder(&registry, "quotes")
        .retry_with(|r| r.max_attempts(2))
        .build::<u32, Down>()
        .unwrap()
        .fallback(|ctx: FallbackContext<Down>| Ok(100 + ctx.attempts()));
    assert_eq!(pipeline.execute(|| Err(Down)), Ok(102));
    assert_eq!(allocations_over(1000, || assert_eq!(pipeline.execute(|| Ok(1)), Ok(1))), 0);
    assert_eq!(allocations_over(1000, || assert_eq!(pipeline.execute(|| Err(Down)), Ok(102))), 0);
}
