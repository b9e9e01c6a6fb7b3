//! `registry.subscribe`: a subscriber attached after build sees every policy's events, a full buffer
//! drops the oldest and counts them, dropping a subscription unsubscribes, and `recv` is woken by a
//! publisher without any runtime.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use resilience4cata::events::{AnyEvent, Subscription};
use resilience4cata::{GiveUpReason, Pipeline, Registry, RetryEvent};
use testkit::block_on;

fn drain(events: &mut Subscription) -> Vec<AnyEvent> {
    std::iter::from_fn(|| events.try_recv()).collect()
}

/// A retry of `max_attempts` zero-delay attempts that always fails: `max_attempts - 1` `Retrying`
/// events and one `GaveUp`.
fn failing_retry(registry: &Registry, id: &str, max_attempts: u32) -> impl Fn() + Send + 'static {
    let pipeline = Pipeline::builder(registry, id)
        .retry_with(|r| r.max_attempts(max_attempts).delay(Duration::ZERO))
        .build::<(), &str>()
        .unwrap();
    move || assert!(pipeline.execute(|| Err("down")).is_err())
}

#[test]
fn a_subscriber_attached_after_build_sees_every_policy() {
    let (_, registry) = testkit::manual();
    let all = Pipeline::builder(&registry, "all")
        .retry_with(|r| r.max_attempts(2).delay(Duration::ZERO))
        .circuit_breaker()
        .rate_limiter()
        .bulkhead()
        .timeout()
        .build::<u32, std::io::Error>()
        .unwrap();
    let mut events = registry.subscribe(64);

    assert!(block_on(all.execute_async(std::future::pending)).is_err());

    let seen = drain(&mut events);
    let mut policies: Vec<&str> = seen.iter().map(AnyEvent::policy).collect();
    policies.sort_unstable();
    policies.dedup();
    assert_eq!(policies, ["bulkhead", "circuit_breaker", "rate_limiter", "retry", "timeout"], "{seen:#?}");
    assert!(seen.iter().all(|e| e.instance() == "all"), "{seen:#?}");
    assert!(seen.contains(&AnyEvent::Retry(RetryEvent::GaveUp {
        instance: Arc::from("all"),
        attempts: 2,
        reason: GiveUpReason::MaxAttempts,
    })));
    assert_eq!(events.lost(), 0);
}

#[test]
fn a_full_buffer_drops_the_oldest_events_and_counts_them() {
    let registry = Registry::builder().build().unwrap();
    let call = failing_retry(&registry, "flaky", 5); // 4 Retrying + 1 GaveUp
    let mut small = registry.subscribe(2);
    let mut large = registry.subscribe(16);
    call();

    assert_eq!(small.lost(), 3);
    let kept = drain(&mut small);
    assert!(matches!(kept[0], AnyEvent::Retry(RetryEvent::Retrying { attempt: 4, .. })), "{kept:?}");
    assert!(matches!(kept[1], AnyEvent::Retry(RetryEvent::GaveUp { attempts: 5, .. })), "{kept:?}");
    assert_eq!(kept.len(), 2);
    assert_eq!((drain(&mut large).len(), large.lost()), (5, 0), "one subscriber's loss is its own");
}

#[test]
fn a_capacity_of_zero_buffers_one_event() {
    let registry = Registry::builder().build().unwrap();
    let call = failing_retry(&registry, "flaky", 3);
    let mut events = registry.subscribe(0);
    call();
    assert_eq!((drain(&mut events).len(), events.lost()), (1, 2));
}

#[test]
fn dropping_a_subscription_unsubscribes() {
    let registry = Registry::builder().build().unwrap();
    let call = failing_retry(&registry, "flaky", 2);
    let mut kept = registry.subscribe(8);
    let dropped = registry.subscribe(8);
    call();
    drop(dropped);
    call();
    assert_eq!(drain(&mut kept).len(), 4);

    drop(kept);
    let mut late = registry.subscribe(8);
    assert_eq!(late.try_recv(), None, "events published before subscribing are not replayed");
    call();
    assert_eq!(drain(&mut late).len(), 2);
}

/// Counts wake-ups.
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn recv_is_woken_by_a_publisher() {
    let registry = Registry::builder().build().unwrap();
    let call = failing_retry(&registry, "flaky", 1);
    let mut events = registry.subscribe(8);
    let woken = Arc::new(CountingWaker(AtomicUsize::new(0)));
    let waker = Waker::from(Arc::clone(&woken));
    let mut cx = Context::from_waker(&waker);

    let mut next = pin!(events.recv());
    assert!(next.as_mut().poll(&mut cx).is_pending());
    assert_eq!(woken.0.load(Ordering::SeqCst), 0);
    call();
    assert_eq!(woken.0.load(Ordering::SeqCst), 1);
    match next.as_mut().poll(&mut cx) {
        Poll::Ready(event) => assert_eq!((event.policy(), event.instance()), ("retry", "flaky")),
        Poll::Pending => panic!("woken but still pending"),
    }
}

#[test]
fn recv_waits_across_threads() {
    let registry = Registry::builder().build().unwrap();
    let call = failing_retry(&registry, "flaky", 1);
    let mut events = registry.subscribe(8);
    let publisher = std::thread::spawn(call);
    let event = block_on(events.recv());
    publisher.join().unwrap();
    assert!(matches!(event, AnyEvent::Retry(RetryEvent::GaveUp { attempts: 1, .. })), "{event:?}");
}

/// The retry's zero-wait quick path publishes nothing while nobody listens; a subscriber that
/// attaches later must still see every `Retrying` event of that same instance.
#[test]
fn a_subscriber_turns_the_quick_path_off_while_it_lives() {
    let registry = Registry::builder().build().unwrap();
    let call = failing_retry(&registry, "quick", 3);
    call();
    let mut events = registry.subscribe(8);
    call();
    let retrying =
        drain(&mut events).iter().filter(|e| matches!(e, AnyEvent::Retry(RetryEvent::Retrying { .. }))).count();
    assert_eq!(retrying, 2);
}
