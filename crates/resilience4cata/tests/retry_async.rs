//! The async forms of retry: `async fn`, `fn -> impl Future + Send`, cancellation by drop, shutdown.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Waker};
use std::time::Duration;

use resilience4cata::testing::ManualClock;
use resilience4cata::{GiveUpReason, Jitter, Registry, RetryEvent, resilient};
use testkit::Flaky;

#[derive(Debug, Clone, PartialEq)]
pub struct Down;

#[resilient]
pub trait Stock {
    #[retry(max_attempts = 3, delay = "100ms")]
    async fn stock(&self, sku: &str) -> Result<u32, Down>;

    #[retry(max_attempts = 4, delay = "1s", backoff = Fixed)]
    fn reserve(&self, sku: &str, units: u32) -> impl Future<Output = Result<(), Down>> + Send;
}

/// Fails its first attempts, then answers.
impl Stock for Flaky {
    async fn stock(&self, _sku: &str) -> Result<u32, Down> {
        tokio::task::yield_now().await;
        self.attempt(Down).map(|()| 7)
    }

    fn reserve(&self, _sku: &str, _units: u32) -> impl Future<Output = Result<(), Down>> + Send {
        let outcome = self.attempt(Down);
        async move { outcome }
    }
}

fn registry(clock: &ManualClock, events: &Arc<Mutex<Vec<RetryEvent>>>) -> Registry {
    let sink = Arc::clone(events);
    testkit::no_jitter(clock).listen(move |e: &RetryEvent| sink.lock().unwrap().push(e.clone())).build().unwrap()
}

fn assert_send<T: Send>(t: T) -> T {
    t
}

#[tokio::test]
async fn async_fn_retries_on_the_manual_clock() {
    let clock = ManualClock::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let stock = ResilientStock::new(Flaky::new(2), &registry(&clock, &events)).unwrap();
    assert_eq!(stock.stock("sku").await, Ok(7));
    assert_eq!(stock.delegate().attempts(), 3);
    assert_eq!(clock.elapsed(), Duration::from_millis(300));
}

#[tokio::test]
async fn impl_future_send_form_keeps_send_and_retries() {
    let clock = ManualClock::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let stock = ResilientStock::new(Flaky::new(u32::MAX), &registry(&clock, &events)).unwrap();
    let future = assert_send(stock.reserve("sku", 2));
    assert_eq!(future.await, Err(Down));
    assert_eq!(stock.delegate().attempts(), 4);
    assert_eq!(clock.elapsed(), Duration::from_secs(3));
    let last = events.lock().unwrap().last().cloned();
    assert!(matches!(last, Some(RetryEvent::GaveUp { attempts: 4, reason: GiveUpReason::MaxAttempts, .. })));
}

#[tokio::test]
async fn the_wrapper_is_shareable_across_tasks() {
    let clock = ManualClock::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let stock = Arc::new(ResilientStock::new(Flaky::new(0), &registry(&clock, &events)).unwrap());
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let stock = Arc::clone(&stock);
            tokio::spawn(async move { stock.stock("sku").await })
        })
        .collect();
    for h in handles {
        assert_eq!(h.await.unwrap(), Ok(7));
    }
}

#[test]
fn dropping_the_future_during_a_backoff_wait_starts_no_further_attempt() {
    let clock = ManualClock::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let stock = ResilientStock::new(Flaky::new(u32::MAX), &registry(&clock, &events)).unwrap();
    {
        let mut future = pin!(stock.reserve("sku", 1));
        let mut cx = Context::from_waker(Waker::noop());
        // First poll: the first attempt fails and the retry starts waiting 1 s.
        assert!(future.as_mut().poll(&mut cx).is_pending());
        assert_eq!(stock.delegate().attempts(), 1);
    } // dropped during the wait
    clock.advance(Duration::from_secs(10));
    assert_eq!(stock.delegate().attempts(), 1);
    let published = events.lock().unwrap().clone();
    assert_eq!(published.len(), 1, "only the Retrying before the wait: {published:?}");
}

#[tokio::test]
async fn shutdown_interrupts_an_async_wait_on_the_system_clock() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let registry = Registry::builder()
        .retry_defaults(|r| r.jitter(Jitter::None))
        .listen(move |e: &RetryEvent| sink.lock().unwrap().push(e.clone()))
        .build()
        .unwrap();
    let stock = Arc::new(ResilientStock::new(Flaky::new(u32::MAX), &registry).unwrap());
    let call = {
        let stock = Arc::clone(&stock);
        tokio::spawn(async move { stock.reserve("sku", 1).await })
    };
    while events.lock().unwrap().is_empty() {
        tokio::task::yield_now().await;
    }
    registry.shutdown();
    assert_eq!(call.await.unwrap(), Err(Down));
    let last = events.lock().unwrap().last().cloned();
    assert!(matches!(last, Some(RetryEvent::GaveUp { attempts: 1, reason: GiveUpReason::Interrupted, .. })));
}
