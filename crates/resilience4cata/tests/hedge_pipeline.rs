//! The hedge in a `Pipeline` and through its tower layer, on the manual clock: the same executor
//! and instances as `#[hedge]`, under the pipeline's id.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::hedge::HedgeEvent;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{AsyncPipeline, Pipeline, Registry, Rejection};
use testkit::Down;

use testkit::block_on;

const MS: Duration = Duration::from_millis(1);

/// An attempt that takes `ms` on the manual clock and answers `answer`, recording when it started.
async fn attempt(
    clock: &ManualClock,
    starts: &Mutex<Vec<Duration>>,
    ms: u64,
    answer: Result<u32, String>,
) -> Result<u32, String> {
    starts.lock().unwrap().push(clock.elapsed());
    clock.sleep(Duration::from_millis(ms)).await;
    answer
}

#[test]
fn a_hedged_pipeline_races_attempts_that_borrow_locals() {
    let clock = ManualClock::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let registry =
        testing::registry(&clock).listen(move |e: &HedgeEvent| sink.lock().unwrap().push(e.clone())).build().unwrap();
    let search: AsyncPipeline<u32, String> =
        Pipeline::builder(&registry, "search").hedge_with(|h| h.delay(100 * MS)).build().unwrap();
    let starts = Mutex::new(Vec::new()); // a local the attempts borrow
    let mut plan = vec![(500, Ok(1)), (200, Ok(2))].into_iter();
    let outcome = block_on(search.execute_async(|| {
        let (ms, answer) = plan.next().expect("two attempts");
        attempt(&clock, &starts, ms, answer)
    }));
    assert_eq!(outcome, Ok(2));
    assert_eq!(*starts.lock().unwrap(), [Duration::ZERO, 100 * MS]);
    assert_eq!(clock.elapsed(), 300 * MS);
    let finished = HedgeEvent::Finished { instance: "search".into(), attempts: 2, winner: Some(2) };
    assert_eq!(events.lock().unwrap().last(), Some(&finished));
    let snapshot = registry.snapshot();
    let s = &snapshot.hedges()[0];
    assert_eq!((&*s.instance, s.hedged_calls, s.hedge_wins), ("search", 1, 1));
}

#[test]
fn retry_and_hedge_in_one_pipeline_is_reg_001() {
    let registry = Registry::builder().build().unwrap();
    let err = Pipeline::builder(&registry, "search").hedge().retry().build::<u32, String>().unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-001", Some("search")));
    assert!(registry.snapshot().hedges().is_empty(), "nothing was built");
}

#[test]
fn an_open_breaker_inside_a_hedged_pipeline_refuses_once_and_stops_the_hedging() {
    let (_, registry) = testkit::manual();
    let prices = Pipeline::builder(&registry, "prices").hedge().circuit_breaker().build::<u32, Down>().unwrap();
    registry.circuit_breaker("prices").unwrap().force_open();
    let mut calls = 0;
    let outcome = block_on(prices.execute_async(|| {
        calls += 1;
        async { Ok(1) }
    }));
    assert!(matches!(outcome, Err(Down::Rejected(Rejection::CallNotPermitted { .. }))), "{outcome:?}");
    assert_eq!(calls, 1, "one attempt was made (and refused before it ran); none was added");
    assert_eq!(registry.circuit_breaker("prices").unwrap().snapshot().not_permitted_calls, 1);
    assert_eq!(registry.snapshot().hedges()[0].hedged_calls, 0);
}

#[test]
fn a_failed_attempt_starts_the_next_at_once_and_all_failed_returns_the_last() {
    let (clock, registry) = testkit::manual();
    let search = Pipeline::builder(&registry, "search")
        .hedge_with(|h| h.delay(100 * MS).max_hedged_attempts(2))
        .build::<u32, String>()
        .unwrap();
    let starts = Mutex::new(Vec::new());
    let mut plan = vec![(20, "first"), (300, "second"), (10, "third")].into_iter();
    let outcome = block_on(search.execute_async(|| {
        let (ms, name) = plan.next().expect("three attempts");
        attempt(&clock, &starts, ms, Err(name.to_owned()))
    }));
    // 1 fails at 20 ms, 2 starts then; 3 starts at 120 ms and fails at 130 ms; 2 fails at 320 ms.
    assert_eq!(*starts.lock().unwrap(), [Duration::ZERO, 20 * MS, 120 * MS]);
    assert_eq!(outcome, Err("second".to_owned()));
    assert_eq!(clock.elapsed(), 320 * MS);
}

#[cfg(feature = "tower")]
mod tower_layer {
    use super::*;
    use tower::{Layer, ServiceExt, service_fn};

    /// Through the layer, each attempt gets its own ready clone of the service and of the request.
    #[test]
    fn the_tower_layer_hedges_with_a_clone_per_attempt() {
        let (clock, registry) = testkit::manual();
        let pipeline = Pipeline::builder(&registry, "echo")
            .hedge_with(|h| h.delay(100 * MS))
            .circuit_breaker()
            .build::<String, Down>()
            .unwrap();
        let starts = Arc::new(Mutex::new(Vec::new()));
        let (log, inner_clock) = (Arc::clone(&starts), clock.clone());
        let service = service_fn(move |request: String| {
            let (log, clock) = (Arc::clone(&log), inner_clock.clone());
            async move {
                let n = {
                    let mut log = log.lock().unwrap();
                    log.push(clock.elapsed());
                    log.len() as u64
                };
                clock.sleep(if n == 1 { 500 * MS } else { 50 * MS }).await;
                Ok::<_, Down>(format!("{request} from attempt {n}"))
            }
        });
        let answer = block_on(pipeline.layer().layer(service).oneshot("ping".to_owned())).unwrap();
        assert_eq!(answer, "ping from attempt 2");
        assert_eq!(*starts.lock().unwrap(), [Duration::ZERO, 100 * MS]);
        assert_eq!(clock.elapsed(), 150 * MS);
    }
}
