//! SPEC §6: in the default order the timeout sits outside the bulkhead, and a wait for a slot is
//! local queueing, not the dependency's slowness. A timeout that fires while the attempt still
//! waits for its slot ends it as `BulkheadFull` (the breaker does not record it); an attempt that
//! got its slot and then ran out of time stays a `CallTimeout` (the breaker records it). Shown on
//! the manual clock in every face: the trait style, the class style, the pipeline (default and
//! reordered) and the tower layer; and, for contrast, the order the docs recommend for a queueing
//! bulkhead (`Bulkhead` outside `Timeout`), where every queued call is served.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use resilience4cata::bulkhead::{BulkheadEvent, BulkheadSnapshot};
use resilience4cata::circuit_breaker::{CircuitBreakerSnapshot, State};
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::timeout::TimeoutSnapshot;
use resilience4cata::{Pipeline, Policy, Registry, Rejection, ResilienceError, resilient};
use testkit::{Recorder, block_on};

const MS: Duration = Duration::from_millis(1);

#[derive(Debug, PartialEq, ResilienceError)]
pub enum HostError {
    #[rejection]
    Rejected(Rejection),
}

/// How one call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Ok,
    CallTimeout,
    BulkheadFull,
    Other,
}

fn end(result: &Result<u32, HostError>) -> End {
    match result {
        Ok(_) => End::Ok,
        Err(e) => match e.rejection() {
            Some(Rejection::CallTimeout { .. }) => End::CallTimeout,
            Some(Rejection::BulkheadFull { .. }) => End::BulkheadFull,
            _ => End::Other,
        },
    }
}

/// Polls every future until all are done (on one task, so the manual clock orders their waits).
async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut done = true;
        for (future, output) in futures.iter_mut().zip(&mut outputs) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => done = false,
                }
            }
        }
        if done { Poll::Ready(()) } else { Poll::Pending }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("every future finished")).collect()
}

/// `n` concurrent calls, each with how it ended and when (on the manual clock).
fn concurrently<F, Fut>(clock: &ManualClock, n: usize, call: F) -> Vec<(End, Duration)>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<u32, HostError>>,
{
    let call = &call;
    let calls = (0..n).map(|_| async move { (end(&call().await), clock.elapsed()) }).collect();
    block_on(join_all(calls))
}

/// A registry on `clock` whose bulkhead events are recorded.
fn registry(clock: &ManualClock) -> (Registry, Recorder<BulkheadEvent>) {
    let events = Recorder::default();
    (events.on(testing::registry(clock)).build().unwrap(), events)
}

/// The one instance of each kind whose id ends with `suffix`.
struct Instances {
    breaker: CircuitBreakerSnapshot,
    bulkhead: BulkheadSnapshot,
    timeout: TimeoutSnapshot,
}

fn instances(registry: &Registry, suffix: &str) -> Instances {
    let snapshot = registry.snapshot();
    let one = |ids: Vec<&str>| {
        let found: Vec<usize> = ids.iter().enumerate().filter(|(_, id)| id.ends_with(suffix)).map(|(i, _)| i).collect();
        assert_eq!(found.len(), 1, "one instance ending with {suffix:?} among {ids:?}");
        found[0]
    };
    let breakers = snapshot.circuit_breakers();
    let bulkheads = snapshot.bulkheads();
    let timeouts = snapshot.timeouts();
    Instances {
        breaker: breakers[one(breakers.iter().map(|s| &*s.instance).collect())].clone(),
        bulkhead: bulkheads[one(bulkheads.iter().map(|s| &*s.instance).collect())].clone(),
        timeout: timeouts[one(timeouts.iter().map(|s| &*s.instance).collect())].clone(),
    }
}

fn rejected(events: &Recorder<BulkheadEvent>) -> usize {
    events.filter_map(|e| matches!(e, BulkheadEvent::Rejected { .. }).then_some(())).len()
}

/// The minimal case: one slot, `max_wait` 5 s, a 300 ms timeout, a host answering in
/// 200 ms, three calls at once. Call 1 answers at 200 ms; call 2 gets the slot at 200 ms and runs
/// out of time at 300 ms (a `CallTimeout`, recorded); call 3 still waits at 300 ms: `BulkheadFull`,
/// not recorded. The breaker (window 3, 3 calls at least, 50 %) stays closed with 2 calls
/// buffered; before the fix it recorded 2 failures of 3 and opened.
fn check_minimal_case(
    clock: &ManualClock,
    registry: &Registry,
    events: &Recorder<BulkheadEvent>,
    suffix: &str,
    ends: &[(End, Duration)],
) {
    assert_eq!(ends, [(End::Ok, 200 * MS), (End::CallTimeout, 300 * MS), (End::BulkheadFull, 300 * MS)]);
    let now = instances(registry, suffix);
    assert_eq!(now.breaker.state, State::Closed);
    assert_eq!(
        (now.breaker.buffered_calls, now.breaker.failed_calls),
        (2, 1),
        "the call that never got its slot is not recorded"
    );
    assert_eq!(now.timeout.timed_out, 1, "the timeout counts only the attempt that had its slot");
    assert_eq!(rejected(events), 1, "the bulkhead published its refusal");
    assert_eq!(
        (now.bulkhead.in_flight, now.bulkhead.waiting, now.bulkhead.available),
        (0, 0, 1),
        "the waiter left the queue"
    );
    // The call cut off at 300 ms was dropped inside its 200 ms of work: the clock stopped at the
    // deadline, not at the end of that work, nor at the waiter's `max_wait`.
    assert_eq!(clock.elapsed(), 300 * MS);
}

/// 20 calls at once on 2 slots, 120 ms each, a 300 ms timeout and 5 s of `max_wait`: 4 answer
/// (at 120 and 240 ms), 2 get their slots at 240 ms and run out of time (recorded), 14 never get a
/// slot (refused by the bulkhead at 300 ms, not recorded): the breaker buffers 6 calls, not 20.
fn check_crowd(registry: &Registry, events: &Recorder<BulkheadEvent>, suffix: &str, ends: &[(End, Duration)]) {
    let count = |kind: End| ends.iter().filter(|(e, _)| *e == kind).count();
    assert_eq!((count(End::Ok), count(End::CallTimeout), count(End::BulkheadFull), count(End::Other)), (4, 2, 14, 0));
    assert!(ends.iter().filter(|(e, _)| *e != End::Ok).all(|(_, at)| *at == 300 * MS), "{ends:?}");
    let now = instances(registry, suffix);
    assert_eq!(now.breaker.state, State::Closed);
    assert_eq!(
        (now.breaker.buffered_calls, now.breaker.failed_calls),
        (count(End::Ok) as u64 + count(End::CallTimeout) as u64, count(End::CallTimeout) as u64),
        "the breaker recorded exactly the calls that got a slot"
    );
    assert_eq!(rejected(events), 14);
    assert_eq!(now.timeout.timed_out, 2);
    assert_eq!((now.bulkhead.in_flight, now.bulkhead.waiting, now.bulkhead.available), (0, 0, 2));
}

// ---- the trait style ----

#[resilient]
pub trait Host {
    /// The minimal case: the default order.
    #[circuit_breaker(window_size = 3, minimum_calls = 3, failure_rate_threshold = 50.0)]
    #[timeout(duration = "300ms")]
    #[bulkhead(max_concurrent_calls = 1, max_wait = "5s")]
    async fn get(&self, work: Duration) -> Result<u32, HostError>;

    /// Many calls on two slots.
    #[circuit_breaker]
    #[timeout(duration = "300ms")]
    #[bulkhead(max_concurrent_calls = 2, max_wait = "5s")]
    async fn crowd(&self, work: Duration) -> Result<u32, HostError>;

    /// A custom order in which the timeout is still outside the bulkhead, with a retry between.
    #[policy_order(CircuitBreaker, Timeout, Retry)]
    #[retry(max_attempts = 1)]
    #[circuit_breaker(window_size = 3, minimum_calls = 3, failure_rate_threshold = 50.0)]
    #[timeout(duration = "300ms")]
    #[bulkhead(max_concurrent_calls = 1, max_wait = "5s")]
    async fn reordered(&self, work: Duration) -> Result<u32, HostError>;

    /// The order the docs recommend for a queueing bulkhead: the wait is outside the timeout.
    #[policy_order(Retry, CircuitBreaker, Bulkhead, Timeout)]
    #[circuit_breaker(window_size = 3, minimum_calls = 3, failure_rate_threshold = 50.0)]
    #[timeout(duration = "300ms")]
    #[bulkhead(max_concurrent_calls = 1, max_wait = "5s")]
    async fn queued_outside(&self, work: Duration) -> Result<u32, HostError>;
}

struct Backend {
    clock: ManualClock,
}

impl Host for Backend {
    async fn get(&self, work: Duration) -> Result<u32, HostError> {
        self.clock.sleep(work).await;
        Ok(1)
    }
    async fn crowd(&self, work: Duration) -> Result<u32, HostError> {
        self.clock.sleep(work).await;
        Ok(1)
    }
    async fn reordered(&self, work: Duration) -> Result<u32, HostError> {
        self.clock.sleep(work).await;
        Ok(1)
    }
    async fn queued_outside(&self, work: Duration) -> Result<u32, HostError> {
        self.clock.sleep(work).await;
        Ok(1)
    }
}

fn host(clock: &ManualClock) -> (Registry, Recorder<BulkheadEvent>, ResilientHost<Backend>) {
    let (registry, events) = registry(clock);
    let host = ResilientHost::new(Backend { clock: clock.clone() }, &registry).unwrap();
    (registry, events, host)
}

#[test]
fn trait_style_a_call_that_never_got_its_slot_ends_bulkhead_full_and_is_not_recorded() {
    let clock = ManualClock::new();
    let (registry, events, host) = host(&clock);
    let ends = concurrently(&clock, 3, || host.get(200 * MS));
    check_minimal_case(&clock, &registry, &events, "::Host::get", &ends);
}

#[test]
fn trait_style_the_breaker_records_only_the_calls_that_got_a_slot() {
    let clock = ManualClock::new();
    let (registry, events, host) = host(&clock);
    let ends = concurrently(&clock, 20, || host.crowd(120 * MS));
    check_crowd(&registry, &events, "::Host::crowd", &ends);
}

#[test]
fn trait_style_a_custom_order_with_the_timeout_outside_the_bulkhead_keeps_the_rule() {
    let clock = ManualClock::new();
    let (registry, events, host) = host(&clock);
    let ends = concurrently(&clock, 3, || host.reordered(200 * MS));
    check_minimal_case(&clock, &registry, &events, "::Host::reordered", &ends);
}

#[test]
fn trait_style_a_bulkhead_outside_the_timeout_serves_every_queued_call() {
    let clock = ManualClock::new();
    let (registry, events, host) = host(&clock);
    let ends = concurrently(&clock, 3, || host.queued_outside(200 * MS));
    assert_eq!(ends, [(End::Ok, 200 * MS), (End::Ok, 400 * MS), (End::Ok, 600 * MS)]);
    let now = instances(&registry, "::Host::queued_outside");
    assert_eq!((now.breaker.state, now.breaker.buffered_calls, now.breaker.failed_calls), (State::Closed, 3, 0));
    assert_eq!((now.timeout.timed_out, rejected(&events)), (0, 0));
}

#[test]
fn a_wait_refused_by_its_own_max_wait_before_the_timeout_stays_the_bulkheads_refusal() {
    #[resilient]
    pub trait Short {
        #[circuit_breaker]
        #[timeout(duration = "300ms")]
        #[bulkhead(max_concurrent_calls = 1, max_wait = "50ms")]
        async fn get(&self, work: Duration) -> Result<u32, HostError>;
    }
    impl Short for Backend {
        async fn get(&self, work: Duration) -> Result<u32, HostError> {
            self.clock.sleep(work).await;
            Ok(1)
        }
    }
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let short = ResilientShort::new(Backend { clock: clock.clone() }, &registry).unwrap();
    let ends = concurrently(&clock, 2, || short.get(200 * MS));
    assert_eq!(ends, [(End::Ok, 200 * MS), (End::BulkheadFull, 50 * MS)]);
    let now = instances(&registry, "::Short::get");
    assert_eq!((now.breaker.buffered_calls, now.timeout.timed_out, rejected(&events)), (1, 0, 1));
}

// ---- the class style ----

struct Client {
    clock: ManualClock,
    policies: ClientPolicies,
}

#[resilient(policies = policies)]
impl Client {
    fn new(registry: &Registry, clock: &ManualClock) -> Self {
        Client { clock: clock.clone(), policies: ClientPolicies::new(registry).unwrap() }
    }

    #[circuit_breaker(window_size = 3, minimum_calls = 3, failure_rate_threshold = 50.0)]
    #[timeout(duration = "300ms")]
    #[bulkhead(max_concurrent_calls = 1, max_wait = "5s")]
    async fn get(&self, work: Duration) -> Result<u32, HostError> {
        self.clock.sleep(work).await;
        Ok(1)
    }

    #[circuit_breaker]
    #[timeout(duration = "300ms")]
    #[bulkhead(max_concurrent_calls = 2, max_wait = "5s")]
    async fn crowd(&self, work: Duration) -> Result<u32, HostError> {
        self.clock.sleep(work).await;
        Ok(1)
    }
}

#[test]
fn class_style_a_call_that_never_got_its_slot_ends_bulkhead_full_and_is_not_recorded() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let client = Client::new(&registry, &clock);
    let ends = concurrently(&clock, 3, || client.get(200 * MS));
    check_minimal_case(&clock, &registry, &events, "::Client::get", &ends);
}

#[test]
fn class_style_the_breaker_records_only_the_calls_that_got_a_slot() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let client = Client::new(&registry, &clock);
    let ends = concurrently(&clock, 20, || client.crowd(120 * MS));
    check_crowd(&registry, &events, "::Client::crowd", &ends);
}

// ---- the pipeline ----

type HostPipeline = Pipeline<u32, HostError, resilience4cata::pipeline::AsyncOnly>;

fn pipeline(registry: &Registry, slots: u32, order: Option<&[Policy]>) -> HostPipeline {
    let builder = Pipeline::builder(registry, "host")
        .circuit_breaker_with(|c| c.window_size(3).minimum_calls(3).failure_rate_threshold(50.0))
        .timeout_with(|t| t.duration(300 * MS))
        .bulkhead_with(|b| b.max_concurrent_calls(slots).max_wait(5000 * MS));
    match order {
        Some(order) => builder.retry_with(|r| r.max_attempts(1)).order(order.iter().copied()).build().unwrap(),
        None => builder.build().unwrap(),
    }
}

fn sleeper(clock: &ManualClock, work: Duration) -> impl Future<Output = Result<u32, HostError>> + use<> {
    let clock = clock.clone();
    async move {
        clock.sleep(work).await;
        Ok(1)
    }
}

#[test]
fn pipeline_a_call_that_never_got_its_slot_ends_bulkhead_full_and_is_not_recorded() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let host = pipeline(&registry, 1, None);
    let ends = concurrently(&clock, 3, || host.execute_async(|| sleeper(&clock, 200 * MS)));
    check_minimal_case(&clock, &registry, &events, "host", &ends);
}

#[test]
fn pipeline_the_breaker_records_only_the_calls_that_got_a_slot() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let host = Pipeline::builder(&registry, "host")
        .circuit_breaker()
        .timeout_with(|t| t.duration(300 * MS))
        .bulkhead_with(|b| b.max_concurrent_calls(2).max_wait(5000 * MS))
        .build::<u32, HostError>()
        .unwrap();
    let ends = concurrently(&clock, 20, || host.execute_async(|| sleeper(&clock, 120 * MS)));
    check_crowd(&registry, &events, "host", &ends);
}

#[test]
fn pipeline_reordered_with_the_timeout_outside_the_bulkhead_keeps_the_rule() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let order = [Policy::CircuitBreaker, Policy::Timeout, Policy::Retry];
    let host = pipeline(&registry, 1, Some(&order));
    let ends = concurrently(&clock, 3, || host.execute_async(|| sleeper(&clock, 200 * MS)));
    check_minimal_case(&clock, &registry, &events, "host", &ends);
}

#[test]
fn pipeline_with_the_bulkhead_outside_the_timeout_serves_every_queued_call() {
    let clock = ManualClock::new();
    let (registry, events) = registry(&clock);
    let order = [Policy::Retry, Policy::CircuitBreaker, Policy::Bulkhead, Policy::Timeout];
    let host = pipeline(&registry, 1, Some(&order));
    let ends = concurrently(&clock, 3, || host.execute_async(|| sleeper(&clock, 200 * MS)));
    assert_eq!(ends, [(End::Ok, 200 * MS), (End::Ok, 400 * MS), (End::Ok, 600 * MS)]);
    let now = instances(&registry, "host");
    assert_eq!((now.breaker.buffered_calls, now.timeout.timed_out, rejected(&events)), (3, 0, 0));
}

// ---- the tower layer ----

#[cfg(feature = "tower")]
mod tower_layer {
    use tower::{Layer, ServiceExt, service_fn};

    use super::*;

    fn service(
        clock: &ManualClock,
        host: &HostPipeline,
    ) -> impl tower::Service<Duration, Response = u32, Error = HostError, Future: Send> + Clone + use<> {
        let clock = clock.clone();
        host.layer().layer(service_fn(move |work: Duration| sleeper(&clock, work)))
    }

    #[test]
    fn a_call_that_never_got_its_slot_ends_bulkhead_full_and_is_not_recorded() {
        let clock = ManualClock::new();
        let (registry, events) = registry(&clock);
        let svc = service(&clock, &pipeline(&registry, 1, None));
        let ends = concurrently(&clock, 3, || svc.clone().oneshot(200 * MS));
        check_minimal_case(&clock, &registry, &events, "host", &ends);
    }

    #[test]
    fn the_breaker_records_only_the_calls_that_got_a_slot() {
        let clock = ManualClock::new();
        let (registry, events) = registry(&clock);
        let host = Pipeline::builder(&registry, "host")
            .circuit_breaker()
            .timeout_with(|t| t.duration(300 * MS))
            .bulkhead_with(|b| b.max_concurrent_calls(2).max_wait(5000 * MS))
            .build::<u32, HostError>()
            .unwrap();
        let svc = service(&clock, &host);
        let ends = concurrently(&clock, 20, || svc.clone().oneshot(120 * MS));
        check_crowd(&registry, &events, "host", &ends);
    }

    #[test]
    fn reordered_with_the_timeout_outside_the_bulkhead_keeps_the_rule() {
        let clock = ManualClock::new();
        let (registry, events) = registry(&clock);
        let order = [Policy::CircuitBreaker, Policy::Timeout, Policy::Retry];
        let svc = service(&clock, &pipeline(&registry, 1, Some(&order)));
        let ends = concurrently(&clock, 3, || svc.clone().oneshot(200 * MS));
        check_minimal_case(&clock, &registry, &events, "host", &ends);
    }
}

#[test]
fn a_disabled_timeout_leaves_the_queued_call_to_its_max_wait() {
    let clock = ManualClock::new();
    let events = Recorder::<BulkheadEvent>::default();
    let registry = events
        .on(testing::registry(&clock))
        .timeout_instance(format!("{}::Host::get", module_path!()), |t| t.enabled(false))
        .build()
        .unwrap();
    let host = ResilientHost::new(Backend { clock: clock.clone() }, &registry).unwrap();
    let ends = concurrently(&clock, 3, || host.get(200 * MS));
    assert_eq!(ends, [(End::Ok, 200 * MS), (End::Ok, 400 * MS), (End::Ok, 600 * MS)]);
    assert_eq!(rejected(&events), 0);
}
