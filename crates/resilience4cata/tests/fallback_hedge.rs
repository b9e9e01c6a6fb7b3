//! `#[fallback]` outside `#[hedge]` (SPEC §7.7, §7.8; issue 11): the fallback's
//! `FallbackContext::attempts` is every attempt the hedge started, a refused one included, in
//! generated code, in a pipeline and through the pipeline's tower layer, on the manual clock.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::testing::ManualClock;
use resilience4cata::{FallbackContext, Pipeline, Rejection, ResilienceError, resilient};

use testkit::block_on;

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, PartialEq, ResilienceError)]
pub enum Down {
    Slow,
    CacheMiss,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Search {
    #[hedge(delay = "100ms", max_hedged_attempts = 2)]
    #[fallback(method = cached)]
    async fn find(&self, query: String) -> Result<u32, Down>;

    async fn cached(&self, query: String, ctx: FallbackContext<Down>) -> Result<u32, Down>;
}

/// Every attempt takes 500 ms and fails; the fallback records what it was told.
struct Slow {
    clock: ManualClock,
    starts: Mutex<Vec<Duration>>,
    /// (attempts, error, when) per fallback call.
    seen: Mutex<Vec<(u32, Down, Duration)>>,
}

impl Slow {
    fn new(clock: &ManualClock) -> Self {
        Slow { clock: clock.clone(), starts: Mutex::default(), seen: Mutex::default() }
    }
}

impl Search for Slow {
    async fn find(&self, _query: String) -> Result<u32, Down> {
        self.starts.lock().unwrap().push(self.clock.elapsed());
        self.clock.sleep(500 * MS).await;
        Err(Down::Slow)
    }

    async fn cached(&self, query: String, ctx: FallbackContext<Down>) -> Result<u32, Down> {
        let attempts = ctx.attempts();
        self.seen.lock().unwrap().push((attempts, ctx.into_error(), self.clock.elapsed()));
        Ok(query.len() as u32)
    }
}

#[test]
fn a_hedged_method_falls_back_with_every_attempt_started() {
    let (clock, registry) = testkit::manual();
    let search = ResilientSearch::new(Slow::new(&clock), &registry).unwrap();
    assert_eq!(block_on(search.find("abc".to_owned())), Ok(3));
    let slow = search.delegate();
    assert_eq!(*slow.starts.lock().unwrap(), [Duration::ZERO, 100 * MS, 200 * MS]);
    // The last attempt failed at 200 + 500 ms; the fallback ran once, then, told of all three.
    assert_eq!(*slow.seen.lock().unwrap(), [(3, Down::Slow, 700 * MS)]);
    assert_eq!(clock.elapsed(), 700 * MS);
}

#[test]
fn each_hedged_call_counts_its_own_attempts() {
    let (clock, registry) = testkit::manual();
    let search = ResilientSearch::new(Slow::new(&clock), &registry).unwrap();
    // Two calls in a row: the counter starts again from 0 for each, not from the last call's 3.
    assert_eq!(block_on(search.find("ab".to_owned())), Ok(2));
    assert_eq!(block_on(search.find("abcd".to_owned())), Ok(4));
    let seen = search.delegate().seen.lock().unwrap();
    assert_eq!(seen.iter().map(|s| s.0).collect::<Vec<_>>(), [3, 3]);
}

/// A pipeline whose every attempt takes 500 ms and fails, recording when it started.
fn slow_attempts(
    clock: &ManualClock,
    starts: &Arc<Mutex<Vec<Duration>>>,
) -> impl FnMut() -> std::pin::Pin<Box<dyn Future<Output = Result<u32, Down>> + Send>> + Clone + use<> {
    let (clock, starts) = (clock.clone(), Arc::clone(starts));
    move || {
        let (clock, starts) = (clock.clone(), Arc::clone(&starts));
        Box::pin(async move {
            starts.lock().unwrap().push(clock.elapsed());
            clock.sleep(500 * MS).await;
            Err(Down::Slow)
        })
    }
}

#[test]
fn a_hedged_pipeline_falls_back_with_every_attempt_started() {
    let (clock, registry) = testkit::manual();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (sink, when) = (Arc::clone(&seen), clock.clone());
    let search = Pipeline::builder(&registry, "search")
        .hedge_with(|h| h.delay(100 * MS).max_hedged_attempts(2))
        .build::<u32, Down>()
        .unwrap()
        .fallback(move |ctx: FallbackContext<Down>| {
            sink.lock().unwrap().push((ctx.attempts(), when.elapsed()));
            Ok(9)
        });
    let starts = Arc::new(Mutex::new(Vec::new()));
    assert_eq!(block_on(search.execute_async(slow_attempts(&clock, &starts))), Ok(9));
    assert_eq!(*starts.lock().unwrap(), [Duration::ZERO, 100 * MS, 200 * MS]);
    assert_eq!(*seen.lock().unwrap(), [(3, 700 * MS)]);
}

#[test]
fn an_open_breaker_inside_a_hedged_pipeline_falls_back_with_its_one_refused_attempt() {
    let (clock, registry) = testkit::manual();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let search = Pipeline::builder(&registry, "search")
        .hedge_with(|h| h.delay(100 * MS).max_hedged_attempts(2))
        .circuit_breaker()
        .build::<u32, Down>()
        .unwrap()
        .fallback(move |ctx: FallbackContext<Down>| {
            let refused = matches!(ctx.error(), Down::Rejected(Rejection::CallNotPermitted { .. }));
            sink.lock().unwrap().push((ctx.attempts(), refused));
            Ok(9)
        });
    registry.circuit_breaker("search").unwrap().force_open();
    let starts = Arc::new(Mutex::new(Vec::new()));
    assert_eq!(block_on(search.execute_async(slow_attempts(&clock, &starts))), Ok(9));
    assert!(starts.lock().unwrap().is_empty(), "the refused attempt never reached the call");
    assert_eq!(*seen.lock().unwrap(), [(1, true)]);
    assert_eq!(clock.elapsed(), Duration::ZERO);
}

#[cfg(feature = "tower")]
mod tower_layer {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use tower::{Layer, ServiceExt, service_fn};

    /// The hedged call inside the layer applied the fallback already: the response future returns
    /// its answer as it is. A fallback that fails shows it: its own `CacheMiss` comes back, and it
    /// ran once (a second application would have been handed that `CacheMiss` as well).
    #[test]
    fn the_tower_layer_falls_back_once_with_every_attempt_started() {
        let (clock, registry) = testkit::manual();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&seen);
        let pipeline = Pipeline::builder(&registry, "search")
            .hedge_with(|h| h.delay(100 * MS).max_hedged_attempts(2))
            .build::<u32, Down>()
            .unwrap()
            .fallback(move |ctx: FallbackContext<Down>| {
                let attempts = ctx.attempts();
                sink.lock().unwrap().push((attempts, ctx.into_error()));
                Err(Down::CacheMiss)
            });
        let starts = Arc::new(Mutex::new(Vec::new()));
        let calls = Arc::new(AtomicU32::new(0));
        let (counter, mut attempt) = (Arc::clone(&calls), slow_attempts(&clock, &starts));
        let service = service_fn(move |_request: String| {
            counter.fetch_add(1, Ordering::Relaxed);
            attempt()
        });
        let answer = block_on(pipeline.layer().layer(service).oneshot("ping".to_owned()));
        assert_eq!(answer, Err(Down::CacheMiss));
        assert_eq!(calls.load(Ordering::Relaxed), 3);
        assert_eq!(*starts.lock().unwrap(), [Duration::ZERO, 100 * MS, 200 * MS]);
        assert_eq!(*seen.lock().unwrap(), [(3, Down::Slow)], "the fallback ran once, told of all three attempts");
        assert_eq!(clock.elapsed(), 700 * MS);
    }
}
