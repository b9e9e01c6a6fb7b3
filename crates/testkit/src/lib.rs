//! Test fixtures shared by the workspace's tests and by `crates/bench`, kept in one place:
//!
//! - [`alloc::Counting`], the one counting allocator. Linking this crate does **not** install it: a
//!   test binary that counts allocations opts in with [`count_allocations!`] (a
//!   `#[global_allocator]` static), and every other test binary keeps the system allocator;
//! - [`block_on`] (a tokio current-thread runtime) and [`now`] / [`poll_once`] (one poll with a
//!   no-op waker, for futures that must not wait);
//! - [`Recorder`], a listener that keeps every event of one type, with the projections the tests
//!   compare ([`Recorder::gave_up`], [`Recorder::delays`], [`Recorder::transitions`]), and
//!   [`RetryAndBreaker`], the pair the seeds' breaker examples watch;
//! - [`no_jitter`], the seeds' examples' registry: the manual clock and exact waits;
//! - [`Down`], the error of a backend that simply fails, with the variant a policy's rejection needs.
//!
//! `publish = false`: a dev-dependency of the workspace only. The runtime's own unit tests may use
//! only the helpers that name no `resilience4cata` type ([`block_on`], [`now`], [`poll_once`],
//! [`ms`]): this crate links the runtime as a library, a second copy beside the one under test.
#![deny(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

pub mod alloc;
pub mod bundles;

use std::fmt;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resilience4cata::circuit_breaker::{CircuitBreakerEvent, State};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Event, GiveUpReason, Jitter, Registry, RegistryBuilder, Rejection, ResilienceError, RetryEvent};

/// Runs `future` to completion on a fresh tokio current-thread runtime with its timers enabled.
///
/// ```
/// assert_eq!(testkit::block_on(async { 7 }), 7);
/// ```
pub fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime").block_on(future)
}

/// Polls `future` once with a no-op waker: `None` while it is pending.
///
/// ```
/// let mut ready = std::pin::pin!(async { 3 });
/// assert_eq!(testkit::poll_once(ready.as_mut()), Some(3));
/// let mut pending = std::pin::pin!(std::future::pending::<()>());
/// assert_eq!(testkit::poll_once(pending.as_mut()), None);
/// ```
pub fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Option<F::Output> {
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// The output of a future that must finish at its first poll (the manual clock, zero waits, a pass
/// path); allocates nothing itself.
///
/// # Panics
///
/// If the future is pending at its first poll.
///
/// ```
/// assert_eq!(testkit::now(async { 5 }), 5);
/// ```
pub fn now<F: Future>(future: F) -> F::Output {
    poll_once(pin!(future)).expect("the future waited")
}

/// `n` milliseconds.
///
/// ```
/// assert_eq!(testkit::ms(1500), std::time::Duration::from_millis(1500));
/// ```
pub const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The answer of a backend that fails its first calls: `Err(failure)` while `failures` is above
/// zero (counting it down), then `Ok(ok)`.
///
/// ```
/// use std::sync::atomic::AtomicU32;
///
/// let failures = AtomicU32::new(1);
/// assert_eq!(testkit::fail_first(&failures, "down", 7), Err("down"));
/// assert_eq!(testkit::fail_first(&failures, "down", 7), Ok(7));
/// ```
pub fn fail_first<T, E>(failures: &AtomicU32, failure: E, ok: T) -> Result<T, E> {
    match failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(1)) {
        Ok(_) => Err(failure),
        Err(_) => Ok(ok),
    }
}

/// A backend that fails its first `failures` attempts and succeeds after, counting every attempt.
///
/// ```
/// let flaky = testkit::Flaky::new(1);
/// assert_eq!(flaky.attempt("down"), Err("down"));
/// assert_eq!(flaky.attempt("down"), Ok(()));
/// assert_eq!(flaky.attempts(), 2);
/// ```
#[derive(Debug, Default)]
pub struct Flaky {
    attempts: AtomicU32,
    failures: u32,
}

impl Flaky {
    /// Fails the first `failures` attempts (`u32::MAX`: every one).
    pub fn new(failures: u32) -> Flaky {
        Flaky { attempts: AtomicU32::new(0), failures }
    }

    /// One attempt: `Err(failure)` while it is among the first `failures`, `Ok(())` after.
    pub fn attempt<E>(&self, failure: E) -> Result<(), E> {
        if self.attempts.fetch_add(1, Ordering::SeqCst) < self.failures { Err(failure) } else { Ok(()) }
    }

    /// The attempts made so far.
    pub fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::SeqCst)
    }
}

/// Every event of type `E` a registry publishes, in publication order. Clones share one list.
///
/// ```
/// use resilience4cata::RetryEvent;
/// use resilience4cata::testing::{self, ManualClock};
///
/// let events = testkit::Recorder::<RetryEvent>::default();
/// let registry = events.on(testing::registry(&ManualClock::new())).build()?;
/// assert!(events.all().is_empty());
/// # drop(registry);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub struct Recorder<E> {
    events: Arc<Mutex<Vec<E>>>,
}

impl<E> Default for Recorder<E> {
    fn default() -> Self {
        Recorder { events: Arc::default() }
    }
}

impl<E> Clone for Recorder<E> {
    fn clone(&self) -> Self {
        Recorder { events: Arc::clone(&self.events) }
    }
}

impl<E: fmt::Debug> fmt::Debug for Recorder<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.lock().iter()).finish()
    }
}

impl<E> Recorder<E> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<E>> {
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many events were recorded.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Forgets the events recorded so far.
    pub fn clear(&self) {
        self.lock().clear();
    }

    /// The projection `f` of every event it applies to, in order.
    pub fn filter_map<T>(&self, f: impl FnMut(&E) -> Option<T>) -> Vec<T> {
        self.lock().iter().filter_map(f).collect()
    }
}

impl<E: Event> Recorder<E> {
    /// `builder` with a listener that records into this recorder.
    pub fn on(&self, builder: RegistryBuilder) -> RegistryBuilder {
        let events = Arc::clone(&self.events);
        builder.listen(move |e: &E| events.lock().unwrap_or_else(PoisonError::into_inner).push(e.clone()))
    }

    /// A copy of every event recorded so far.
    pub fn all(&self) -> Vec<E> {
        self.lock().clone()
    }

    /// A copy of the last event recorded, if any.
    pub fn last(&self) -> Option<E> {
        self.lock().last().cloned()
    }
}

impl Recorder<RetryEvent> {
    /// `(attempts, reason)` of every `GaveUp`.
    pub fn gave_up(&self) -> Vec<(u32, GiveUpReason)> {
        self.filter_map(|e| match e {
            RetryEvent::GaveUp { attempts, reason, .. } => Some((*attempts, *reason)),
            _ => None,
        })
    }

    /// The `delay` of every `Retrying`.
    pub fn delays(&self) -> Vec<Duration> {
        self.filter_map(|e| match e {
            RetryEvent::Retrying { delay, .. } => Some(*delay),
            _ => None,
        })
    }
}

impl Recorder<CircuitBreakerEvent> {
    /// `(from, to)` of every `StateTransition`.
    pub fn transitions(&self) -> Vec<(State, State)> {
        self.filter_map(|e| match e {
            CircuitBreakerEvent::StateTransition { from, to, .. } => Some((*from, *to)),
            _ => None,
        })
    }
}

/// `testing::registry(clock)` with jitter off, so waits are exactly the configured backoff: the
/// set-up of the seeds' examples (`100 ms then 200 ms`, the `report` timeline, …).
///
/// ```
/// use resilience4cata::testing::ManualClock;
///
/// let registry = testkit::no_jitter(&ManualClock::new()).build()?;
/// # drop(registry);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub fn no_jitter(clock: &ManualClock) -> RegistryBuilder {
    testing::registry(clock).retry_defaults(|r| r.jitter(Jitter::None))
}

/// A manual clock, a [`Recorder`] of `E` and a registry on that clock with jitter off
/// ([`no_jitter`]) that publishes to the recorder: the start of the tests that read back what a
/// policy published.
///
/// ```
/// use resilience4cata::RetryEvent;
///
/// let (clock, events, registry) = testkit::recorded::<RetryEvent>();
/// assert!(events.is_empty());
/// assert_eq!(clock.elapsed(), std::time::Duration::ZERO);
/// # drop(registry);
/// ```
pub fn recorded<E: Event>() -> (ManualClock, Recorder<E>, Registry) {
    let clock = ManualClock::new();
    let events = Recorder::default();
    let registry = events.on(no_jitter(&clock)).build().expect("the testing registry builds");
    (clock, events, registry)
}

/// The manual-clock time of every call a backend received, in order: the timelines the seeds'
/// examples compare (`0, 500, 1500, 3500 ms`).
///
/// ```
/// use resilience4cata::testing::ManualClock;
///
/// let clock = ManualClock::new();
/// let calls = testkit::Stamps::new(&clock);
/// calls.stamp();
/// clock.advance(testkit::ms(500));
/// calls.stamp();
/// assert_eq!(calls.all(), [testkit::ms(0), testkit::ms(500)]);
/// ```
#[derive(Debug)]
pub struct Stamps {
    clock: ManualClock,
    at: Mutex<Vec<Duration>>,
}

impl Stamps {
    /// No calls yet, on `clock`.
    pub fn new(clock: &ManualClock) -> Stamps {
        Stamps { clock: clock.clone(), at: Mutex::default() }
    }

    /// Records a call now.
    pub fn stamp(&self) {
        self.at.lock().unwrap_or_else(PoisonError::into_inner).push(self.clock.elapsed());
    }

    /// The times of the calls so far.
    pub fn all(&self) -> Vec<Duration> {
        self.at.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// A manual clock and a registry built on it with the testing defaults (`testing::registry`): the
/// start of most tests that need nothing else from the registry.
///
/// ```
/// use resilience4cata::Pipeline;
///
/// let (clock, registry) = testkit::manual();
/// let pipeline = Pipeline::builder(&registry, "api").retry_with(|r| r.max_attempts(1)).build::<u32, String>()?;
/// assert_eq!(pipeline.execute(|| Ok(1)), Ok(1));
/// assert_eq!(clock.elapsed(), std::time::Duration::ZERO);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub fn manual() -> (ManualClock, Registry) {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().expect("the testing registry builds");
    (clock, registry)
}

/// The seed's retry timeline for `instance` (3 attempts, 100 ms apart, doubling): the two
/// `Retrying` events of a call that fails twice, waiting 100 ms then 200 ms.
///
/// ```
/// use resilience4cata::RetryEvent;
///
/// let [first, second] = testkit::seed_retrying("inventory");
/// assert!(matches!(first, RetryEvent::Retrying { attempt: 1, .. }));
/// assert!(matches!(second, RetryEvent::Retrying { attempt: 2, .. }));
/// ```
pub fn seed_retrying(instance: &str) -> [RetryEvent; 2] {
    [
        RetryEvent::Retrying { instance: instance.into(), attempt: 1, delay: ms(100) },
        RetryEvent::Retrying { instance: instance.into(), attempt: 2, delay: ms(200) },
    ]
}

/// The `GaveUp` event of retry `instance` after `attempts` attempts, for `reason`.
///
/// ```
/// use resilience4cata::{GiveUpReason, RetryEvent};
///
/// let event = testkit::gave_up("inventory", 3, GiveUpReason::MaxAttempts);
/// assert!(matches!(event, RetryEvent::GaveUp { attempts: 3, reason: GiveUpReason::MaxAttempts, .. }));
/// ```
pub fn gave_up(instance: &str, attempts: u32, reason: GiveUpReason) -> RetryEvent {
    RetryEvent::GaveUp { instance: instance.into(), attempts, reason }
}

/// A registry on `clock` with jitter off that runs `probe` on itself each time a retry is about
/// to wait (at its `Retrying` event), and what `probe` returned each time: the view from inside a
/// backoff, e.g. whether a bulkhead slot is free while the retry waits.
///
/// ```
/// use resilience4cata::Pipeline;
/// use resilience4cata::testing::ManualClock;
///
/// let clock = ManualClock::new();
/// let (registry, seen) = testkit::probe_before_backoff(&clock, |r| r.snapshot().retries().len());
/// let pipeline = Pipeline::builder(&registry, "api").retry_with(|r| r.max_attempts(2)).build::<u32, String>()?;
/// let mut failed = false;
/// let _ = pipeline.execute(|| if std::mem::replace(&mut failed, true) { Ok(1) } else { Err("down".into()) });
/// assert_eq!(*seen.lock().unwrap(), [1]);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub fn probe_before_backoff<T: Send + 'static>(
    clock: &ManualClock,
    probe: impl Fn(&Registry) -> T + Send + Sync + 'static,
) -> (Registry, Arc<Mutex<Vec<T>>>) {
    let cell: Arc<OnceLock<Registry>> = Arc::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (registry_of, sink) = (Arc::clone(&cell), Arc::clone(&seen));
    let registry = no_jitter(clock)
        .listen(move |e: &RetryEvent| {
            if let (RetryEvent::Retrying { .. }, Some(registry)) = (e, registry_of.get()) {
                sink.lock().unwrap_or_else(PoisonError::into_inner).push(probe(registry));
            }
        })
        .build()
        .expect("the testing registry builds");
    cell.set(registry.clone()).unwrap_or_else(|_| unreachable!("set once"));
    (registry, seen)
}

/// The events of a retry around a circuit breaker (the seeds' `report` and `StockClient`
/// examples), each policy's in publication order.
#[derive(Clone, Debug, Default)]
pub struct RetryAndBreaker {
    /// The retry's events.
    pub retry: Recorder<RetryEvent>,
    /// The breaker's events.
    pub breaker: Recorder<CircuitBreakerEvent>,
}

impl RetryAndBreaker {
    /// `builder` with both recorders listening.
    pub fn on(&self, builder: RegistryBuilder) -> RegistryBuilder {
        self.breaker.on(self.retry.on(builder))
    }

    /// `(from, to)` of every breaker transition.
    pub fn transitions(&self) -> Vec<(State, State)> {
        self.breaker.transitions()
    }

    /// `(attempts, reason)` of every time the retry gave up.
    pub fn gave_up(&self) -> Vec<(u32, GiveUpReason)> {
        self.retry.gave_up()
    }
}

/// The error of a backend that fails for no particular reason, for tests whose subject is the
/// policy rather than the error: [`Down::Failed`] is the backend's own failure and
/// [`Down::Rejected`] carries a policy's [`Rejection`].
///
/// ```
/// use resilience4cata::{Registry, resilient};
/// use testkit::Down;
///
/// #[resilient]
/// trait Api {
///     #[retry(max_attempts = 2, delay = "0")]
///     fn get(&self) -> Result<u32, Down>;
/// }
///
/// struct Backend;
///
/// impl Api for Backend {
///     fn get(&self) -> Result<u32, Down> {
///         Err(Down::Failed)
///     }
/// }
///
/// let api = ResilientApi::new(Backend, &Registry::builder().build()?)?;
/// assert_eq!(api.get(), Err(Down::Failed));
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, PartialEq, ResilienceError)]
pub enum Down {
    /// The backend's own failure.
    Failed,
    /// A policy refused or abandoned the call.
    #[rejection]
    Rejected(Rejection),
}

impl Down {
    /// `Err(Down::Failed)` when `fail`, `Ok(1)` otherwise: the answer of a backend whose caller
    /// decides whether it fails.
    ///
    /// ```
    /// assert_eq!(testkit::Down::when(false), Ok(1));
    /// assert_eq!(testkit::Down::when(true), Err(testkit::Down::Failed));
    /// ```
    pub fn when(fail: bool) -> Result<u32, Down> {
        if fail { Err(Down::Failed) } else { Ok(1) }
    }
}

/// Trait methods that share one body, written once: inside an `impl`, `same_body! { fn(params) ->
/// Ret { body } for a b c }` is `fn a(params) -> Ret { body }` and the same for `b` and `c`
/// (`async fn(…)` likewise). For the test backends whose methods differ only by the attribute on
/// the trait.
///
/// ```
/// trait Api {
///     fn get(&self) -> u32;
///     fn head(&self) -> u32;
///     async fn fetch(&self) -> u32;
/// }
///
/// struct Backend(u32);
///
/// impl Api for Backend {
///     testkit::same_body! { fn(&self) -> u32 { self.0 } for get head }
///     testkit::same_body! { async fn(&self) -> u32 { self.0 + 1 } for fetch }
/// }
///
/// assert_eq!((Backend(7).get(), Backend(7).head()), (7, 7));
/// assert_eq!(testkit::now(Backend(7).fetch()), 8);
/// ```
#[macro_export]
macro_rules! same_body {
    (fn $params:tt -> $ret:ty $body:block for $($name:ident)+) => {
        $(fn $name $params -> $ret $body)+
    };
    (async fn $params:tt -> $ret:ty $body:block for $($name:ident)+) => {
        $(async fn $name $params -> $ret $body)+
    };
}
