//! `Pipeline::fallback` / `fallback_async` on the manual clock: the same rules as `#[fallback]`
//! (once on the final `Err`, refusals included, with the attempt count and the pipeline's id),
//! in `execute`, `execute_async` and the tower layer.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::fallback::FallbackEvent;
use resilience4cata::testing::ManualClock;
use resilience4cata::{FallbackContext, Pipeline, Registry, Rejection, ResilienceError, Verdict};

#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum QuoteError {
    Unavailable,
    Final,
    CacheMiss,
    #[rejection]
    Refused(Rejection),
}

use testkit::{Recorder, block_on};

/// What the fallback saw: (attempts, instance, error).
type Seen = Arc<Mutex<Vec<(u32, String, QuoteError)>>>;

/// A manual clock, a registry on it (exact waits) whose fallback events land in the recorder, and
/// an empty list of what [`cache`] saw.
fn world() -> (ManualClock, Registry, Recorder<FallbackEvent>, Seen) {
    let (clock, events, registry) = testkit::recorded();
    (clock, registry, events, Seen::default())
}

fn cache(seen: &Seen) -> impl Fn(FallbackContext<QuoteError>) -> Result<u32, QuoteError> + Send + Sync + 'static {
    let seen = Arc::clone(seen);
    move |ctx| {
        seen.lock().unwrap().push((ctx.attempts(), ctx.instance().to_owned(), ctx.error().clone()));
        Ok(99)
    }
}

fn assert_clone_send_sync<P: Clone + Send + Sync>(_: &P) {}

/// A pipeline `id` retrying `max_attempts` times `delay` apart, falling back on [`cache`].
fn retried(
    registry: &Registry,
    id: &str,
    max_attempts: u32,
    delay: Duration,
    seen: &Seen,
) -> Pipeline<u32, QuoteError> {
    Pipeline::builder(registry, id)
        .retry_with(|r| r.max_attempts(max_attempts).delay(delay))
        .build::<u32, QuoteError>()
        .unwrap()
        .fallback(cache(seen))
}

#[test]
fn after_the_retries_run_out_it_runs_once_with_max_attempts() {
    let (clock, registry, events, seen) = world();
    let quotes = retried(&registry, "quotes", 3, Duration::from_millis(100), &seen);
    assert_clone_send_sync(&quotes);
    let calls = AtomicU32::new(0);
    let quote = quotes.execute(|| {
        calls.fetch_add(1, Ordering::SeqCst);
        Err(QuoteError::Unavailable)
    });
    assert_eq!(quote, Ok(99));
    three_attempts_then_the_fallback("quotes", &calls, &clock, &seen, &events);
}

/// The timeline of a pipeline `id` from [`retried`] (3 attempts, 100 ms apart) whose every attempt
/// failed: the fallback ran once, after 300 ms, with 3 attempts, and published that.
fn three_attempts_then_the_fallback(
    id: &str,
    calls: &AtomicU32,
    clock: &ManualClock,
    seen: &Seen,
    events: &Recorder<FallbackEvent>,
) {
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(clock.elapsed(), Duration::from_millis(300));
    assert_eq!(*seen.lock().unwrap(), [(3, id.to_owned(), QuoteError::Unavailable)]);
    assert_eq!(events.all(), [FallbackEvent::Applied { instance: id.into(), attempts: 3 }]);
}

#[test]
fn an_ok_never_reaches_it_and_publishes_nothing() {
    let (_, registry, events, seen) = world();
    let quotes =
        Pipeline::builder(&registry, "quotes").retry().build::<u32, QuoteError>().unwrap().fallback(cache(&seen));
    assert_eq!(quotes.execute(|| Ok(7)), Ok(7));
    assert_eq!(block_on(quotes.execute_async(|| async { Ok(8) })), Ok(8));
    assert!(seen.lock().unwrap().is_empty());
    assert!(events.is_empty());
}

#[test]
fn an_open_breaker_hands_it_the_refusal_with_the_refused_attempt_counted() {
    let (_, registry, _, _) = world();
    let seen = Seen::default();
    let quotes = Pipeline::builder(&registry, "quotes")
        .retry_with(|r| r.max_attempts(4).delay(Duration::ZERO))
        .circuit_breaker_with(|c| c.window_size(2).minimum_calls(2))
        .build::<u32, QuoteError>()
        .unwrap()
        .fallback(cache(&seen));
    let calls = AtomicU32::new(0);
    // Attempts 1 and 2 fail and open the breaker; attempt 3 is refused and never retried.
    let quote = quotes.execute(|| {
        calls.fetch_add(1, Ordering::SeqCst);
        Err(QuoteError::Unavailable)
    });
    assert_eq!(quote, Ok(99));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    // Open now: the next call's only attempt is refused.
    assert_eq!(quotes.execute(|| Ok(1)), Ok(99));
    let refused = QuoteError::Refused(Rejection::CallNotPermitted { instance: "quotes".into() });
    assert_eq!(*seen.lock().unwrap(), [(3, "quotes".to_owned(), refused.clone()), (1, "quotes".to_owned(), refused)]);
}

#[test]
fn a_failing_fallback_returns_its_own_error() {
    let (_, registry, _, _) = world();
    let quotes = Pipeline::builder(&registry, "quotes")
        .build::<u32, QuoteError>()
        .unwrap()
        .fallback(|_ctx: FallbackContext<QuoteError>| Err(QuoteError::CacheMiss));
    assert_eq!(quotes.execute(|| Err(QuoteError::Unavailable)), Err(QuoteError::CacheMiss));
}

#[test]
fn an_err_a_classifier_accepts_reaches_it_with_that_attempt_counted() {
    let (_, registry, _, _) = world();
    let seen = Seen::default();
    let quotes = retried(&registry, "quotes", 5, Duration::ZERO, &seen).classifier(|r| match r {
        Err(QuoteError::Final) => Verdict::Success,
        Err(_) => Verdict::Retry,
        Ok(_) => Verdict::Success,
    });
    let mut calls = 0;
    let quote = quotes.execute(|| {
        calls += 1;
        if calls < 2 { Err(QuoteError::Unavailable) } else { Err(QuoteError::Final) }
    });
    assert_eq!(quote, Ok(99));
    assert_eq!(*seen.lock().unwrap(), [(2, "quotes".to_owned(), QuoteError::Final)]);
}

#[test]
fn async_calls_take_a_sync_or_an_async_fallback() {
    let (clock, registry, events, seen) = world();
    let sync = retried(&registry, "sync", 2, Duration::from_secs(1), &seen);
    assert_eq!(block_on(sync.execute_async(|| async { Err(QuoteError::Unavailable) })), Ok(99));
    assert_eq!(clock.elapsed(), Duration::from_secs(1));

    let sleeper = clock.clone();
    let asynchronous = Pipeline::builder(&registry, "async")
        .retry_with(|r| r.max_attempts(3).delay(Duration::ZERO))
        .build::<u32, QuoteError>()
        .unwrap()
        .fallback_async(move |ctx: FallbackContext<QuoteError>| {
            let clock = sleeper.clone();
            async move {
                clock.advance(Duration::from_millis(5)); // the fallback's own work takes time
                Ok(ctx.attempts() * 10)
            }
        });
    assert_clone_send_sync(&asynchronous);
    assert_eq!(block_on(asynchronous.execute_async(|| async { Err(QuoteError::Unavailable) })), Ok(30));
    assert_eq!(clock.elapsed(), Duration::from_millis(1005));
    assert_eq!(
        events.all(),
        [
            FallbackEvent::Applied { instance: "sync".into(), attempts: 2 },
            FallbackEvent::Applied { instance: "async".into(), attempts: 3 },
        ]
    );
}

#[test]
fn fallback_replaces_an_earlier_one() {
    let registry = Registry::builder().build().unwrap();
    let quotes = Pipeline::builder(&registry, "quotes")
        .build::<u32, QuoteError>()
        .unwrap()
        .fallback(|_| Ok(1))
        .fallback(|_| Ok(2));
    assert_eq!(quotes.execute(|| Err(QuoteError::Unavailable)), Ok(2));
}

/// `fallback_apply_on` / `fallback_skip_on`, as `#[fallback(apply_on = …, skip_on = …)]`: only the
/// errors applied on and not skipped reach the fallback (skip wins); the others are the call's
/// result, unchanged, and publish nothing.
#[test]
fn apply_on_and_skip_on_choose_the_errors_it_answers_and_skip_wins() {
    let (_, registry, events, seen) = world();
    let quotes = Pipeline::builder(&registry, "chosen")
        .retry_with(|r| r.max_attempts(2).delay(Duration::ZERO))
        .build::<u32, QuoteError>()
        .unwrap()
        .fallback_apply_on(|e| matches!(e, QuoteError::Unavailable | QuoteError::CacheMiss))
        .fallback(cache(&seen)) // set after the rules: they stay
        .fallback_skip_on(|e| *e == QuoteError::CacheMiss);
    assert_eq!(quotes.execute(|| Err(QuoteError::Unavailable)), Ok(99));
    assert_eq!(quotes.execute(|| Err(QuoteError::Final)), Err(QuoteError::Final), "not applied on");
    assert_eq!(quotes.execute(|| Err(QuoteError::CacheMiss)), Err(QuoteError::CacheMiss), "skip wins");
    assert_eq!(block_on(quotes.execute_async(|| async { Err(QuoteError::Final) })), Err(QuoteError::Final));
    assert_eq!(block_on(quotes.execute_async(|| async { Err(QuoteError::Unavailable) })), Ok(99));
    let answered =
        [(2, "chosen".to_owned(), QuoteError::Unavailable), (2, "chosen".to_owned(), QuoteError::Unavailable)];
    assert_eq!(*seen.lock().unwrap(), answered);
    assert_eq!(events.all(), vec![FallbackEvent::Applied { instance: "chosen".into(), attempts: 2 }; 2]);
}

#[test]
fn the_rules_apply_to_an_async_fallback_and_survive_a_replaced_one() {
    let (_, registry, events, _) = world();
    let quotes = Pipeline::builder(&registry, "async-rules")
        .build::<u32, QuoteError>()
        .unwrap()
        .fallback_skip_on(|e| *e == QuoteError::Final)
        .fallback(|_| Ok(1))
        .fallback_async(|ctx: FallbackContext<QuoteError>| async move { Ok(ctx.attempts() + 40) });
    assert_eq!(block_on(quotes.execute_async(|| async { Err(QuoteError::Unavailable) })), Ok(41));
    assert_eq!(block_on(quotes.execute_async(|| async { Err(QuoteError::Final) })), Err(QuoteError::Final));
    assert_eq!(events.len(), 1);
}

/// A refusal is an error like any: `skip_on` can pass an open breaker's refusal through.
#[test]
fn skip_on_can_pass_a_refusal_through() {
    let (_, registry, _, seen) = world();
    let quotes = Pipeline::builder(&registry, "refusals")
        .circuit_breaker_with(|c| c.window_size(1).minimum_calls(1))
        .build::<u32, QuoteError>()
        .unwrap()
        .fallback(cache(&seen))
        .fallback_skip_on(|e| matches!(e, QuoteError::Refused(_)));
    assert_eq!(quotes.execute(|| Err(QuoteError::Unavailable)), Ok(99)); // opens the breaker
    let refused = quotes.execute(|| Ok(1));
    assert!(matches!(refused, Err(QuoteError::Refused(Rejection::CallNotPermitted { .. }))), "{refused:?}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

/// Rules without a fallback change nothing: every error is the call's result.
#[test]
fn rules_without_a_fallback_pass_every_error_through() {
    let (_, registry, events, _) = world();
    let quotes =
        Pipeline::builder(&registry, "no-fallback").build::<u32, QuoteError>().unwrap().fallback_apply_on(|_| true);
    assert_eq!(quotes.execute(|| Err(QuoteError::Unavailable)), Err(QuoteError::Unavailable));
    assert_eq!(quotes.execute(|| Ok(3)), Ok(3));
    assert!(events.is_empty());
}

/// The tower layer applies the pipeline's fallback to the service's final error, sync or async.
#[cfg(feature = "tower")]
mod tower_layer {
    use super::*;
    use tower::{Layer, ServiceExt, service_fn};

    #[test]
    fn the_layer_falls_back_after_the_retries_with_their_count() {
        let (clock, registry, events, seen) = world();
        let pipeline = retried(&registry, "tower-quotes", 3, Duration::from_millis(100), &seen);
        let calls = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&calls);
        let service = pipeline.layer().layer(service_fn(move |_req: u32| {
            counted.fetch_add(1, Ordering::SeqCst);
            async { Err::<u32, _>(QuoteError::Unavailable) }
        }));
        assert_eq!(block_on(service.clone().oneshot(1)), Ok(99));
        three_attempts_then_the_fallback("tower-quotes", &calls, &clock, &seen, &events);
    }

    #[test]
    fn the_layer_awaits_an_async_fallback_and_passes_an_ok_through() {
        let (_, registry, _, _) = world();
        let pipeline = Pipeline::builder(&registry, "tower-async").build::<u32, QuoteError>().unwrap().fallback_async(
            |ctx: FallbackContext<QuoteError>| async move {
                tokio::task::yield_now().await;
                if ctx.rejection().is_some() { Err(ctx.into_error()) } else { Ok(42) }
            },
        );
        let layer = pipeline.layer();
        let failing = layer.layer(service_fn(|_req: u32| async { Err::<u32, _>(QuoteError::Unavailable) }));
        assert_eq!(block_on(failing.oneshot(1)), Ok(42));
        let answering = layer.layer(service_fn(|req: u32| async move { Ok::<u32, QuoteError>(req) }));
        assert_eq!(block_on(answering.oneshot(5)), Ok(5));
    }

    #[test]
    fn the_layer_keeps_the_fallback_rules() {
        let (_, registry, events, seen) = world();
        let pipeline = Pipeline::builder(&registry, "tower-rules")
            .build::<u32, QuoteError>()
            .unwrap()
            .fallback(cache(&seen))
            .fallback_apply_on(|e| *e == QuoteError::Unavailable);
        let service = pipeline.layer().layer(service_fn(|req: u32| async move {
            Err::<u32, _>(if req == 1 { QuoteError::Unavailable } else { QuoteError::Final })
        }));
        assert_eq!(block_on(service.clone().oneshot(1)), Ok(99));
        assert_eq!(block_on(service.oneshot(2)), Err(QuoteError::Final));
        assert_eq!(events.len(), 1);
    }
}
