//! The presets (`resilience4cata::presets`), on the manual clock: each one's values and order in
//! effect, from the attribute (`#[bundle(resilience4cata::presets::…)]`) and from the pipeline
//! (`.preset(presets::…)`), with the same outcome, the same time taken and the same events both
//! ways. Each scenario runs once per form, each on a fresh registry (same jitter seed).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use resilience4cata::circuit_breaker::WindowType;
use resilience4cata::hedge::HedgeEvent;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{
    AsyncPipeline, Backoff, GiveUpReason, Jitter, Pipeline, Policy, Registry, RegistryBuilder, Rejection, RetryEvent,
    presets, resilient,
};
use testkit::{Down, block_on};

const S: Duration = Duration::from_secs(1);
const MS: Duration = Duration::from_millis(1);

/// A dependency on the manual clock: each attempt takes the next step of its plan (how long it
/// takes, then its answer); past the plan, every attempt hangs for a minute and then fails.
struct Script {
    clock: ManualClock,
    plan: Mutex<VecDeque<(Duration, Result<u32, Down>)>>,
    attempts: AtomicU32,
}

impl Script {
    fn new(clock: &ManualClock, plan: impl IntoIterator<Item = (Duration, Result<u32, Down>)>) -> Arc<Script> {
        Arc::new(Script {
            clock: clock.clone(),
            plan: Mutex::new(plan.into_iter().collect()),
            attempts: AtomicU32::new(0),
        })
    }

    async fn attempt(&self) -> Result<u32, Down> {
        self.attempts.fetch_add(1, Ordering::Relaxed);
        let (takes, answer) = self.plan.lock().unwrap().pop_front().unwrap_or((60 * S, Err(Down::Failed)));
        self.clock.sleep(takes).await;
        answer
    }

    fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Relaxed)
    }
}

#[resilient]
pub trait Api {
    #[bundle(resilience4cata::presets::standard_http)]
    async fn get(&self) -> Result<u32, Down>;

    #[bundle(resilience4cata::presets::hedged_http)]
    async fn search(&self) -> Result<u32, Down>;
}

struct Backend(Arc<Script>);

impl Api for Backend {
    async fn get(&self) -> Result<u32, Down> {
        self.0.attempt().await
    }
    async fn search(&self) -> Result<u32, Down> {
        self.0.attempt().await
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Form {
    Attribute,
    Pipeline,
}

const FORMS: [Form; 2] = [Form::Attribute, Form::Pipeline];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    Standard,
    Hedged,
}

/// The instance id of the preset's policies: the method's derived id, which the pipeline takes too
/// (each form runs on a registry of its own), so that both draw the same jitter.
fn id(which: Which) -> &'static str {
    match which {
        Which::Standard => "presets::Api::get",
        Which::Hedged => "presets::Api::search",
    }
}

/// One client of `which` preset in `form`, over `script`.
enum Client {
    Attribute(ResilientApi<Backend>, Which),
    Pipeline(Box<AsyncPipeline<u32, Down>>, Arc<Script>),
}

impl Client {
    /// `pipeline_id`: the pipeline's id, the method's derived id unless given.
    fn new(form: Form, which: Which, registry: &Registry, script: &Arc<Script>, pipeline_id: Option<&str>) -> Client {
        match form {
            Form::Attribute => {
                Client::Attribute(ResilientApi::new(Backend(Arc::clone(script)), registry).unwrap(), which)
            }
            Form::Pipeline => {
                let builder = Pipeline::builder(registry, pipeline_id.unwrap_or(id(which)));
                let pipeline = match which {
                    Which::Standard => builder.preset(presets::StandardHttp).build(),
                    Which::Hedged => builder.preset(presets::HedgedHttp).build(),
                };
                Client::Pipeline(Box::new(pipeline.unwrap()), Arc::clone(script))
            }
        }
    }

    fn call(&self) -> Result<u32, Down> {
        match self {
            Client::Attribute(api, Which::Standard) => block_on(api.get()),
            Client::Attribute(api, Which::Hedged) => block_on(api.search()),
            Client::Pipeline(pipeline, script) => block_on(pipeline.execute_async(|| script.attempt())),
        }
    }
}

/// What one scenario observed, compared across the two forms.
#[derive(Debug, PartialEq)]
struct Seen {
    outcomes: Vec<Result<u32, Down>>,
    attempts: u32,
    elapsed: Duration,
    retry_events: Vec<(u32, Option<GiveUpReason>)>,
    hedge_events: Vec<HedgeEvent>,
}

/// Runs `calls` calls of `which` preset in `form` on a fresh registry (`tune` may add instance
/// overrides to it, by the form's id) over a dependency following `plan`. `probe` runs in the
/// registry's retry listener, before each backoff.
fn run(
    form: Form,
    which: Which,
    plan: Vec<(Duration, Result<u32, Down>)>,
    calls: usize,
    tune: impl FnOnce(RegistryBuilder, &str) -> RegistryBuilder,
    probe: impl Fn(&Registry, &str) + Send + Sync + 'static,
) -> (Seen, Registry) {
    let clock = ManualClock::new();
    let script = Script::new(&clock, plan);
    let id = id(which);
    let retries = Arc::new(Mutex::new(Vec::new()));
    let hedges = Arc::new(Mutex::new(Vec::new()));
    let built: Arc<OnceLock<Registry>> = Arc::new(OnceLock::new());
    let (retry_sink, hedge_sink, in_listener) = (Arc::clone(&retries), Arc::clone(&hedges), Arc::clone(&built));
    let registry = tune(testing::registry(&clock), id)
        .listen(move |e: &RetryEvent| {
            let seen = match e {
                RetryEvent::Retrying { instance, attempt, .. } if &**instance == id => {
                    probe(in_listener.get().expect("built"), id);
                    (*attempt, None)
                }
                RetryEvent::GaveUp { instance, attempts, reason } if &**instance == id => (*attempts, Some(*reason)),
                _ => return,
            };
            retry_sink.lock().unwrap().push(seen);
        })
        .listen(move |e: &HedgeEvent| hedge_sink.lock().unwrap().push(renamed(e)))
        .build()
        .unwrap();
    built.set(registry.clone()).ok();
    let client = Client::new(form, which, &registry, &script, None);
    let outcomes = (0..calls).map(|_| client.call()).collect();
    let seen = Seen {
        outcomes,
        attempts: script.attempts(),
        elapsed: clock.elapsed(),
        retry_events: retries.lock().unwrap().clone(),
        hedge_events: hedges.lock().unwrap().clone(),
    };
    (seen, registry)
}

/// A hedge event with its instance blanked, so the two forms' events compare.
fn renamed(e: &HedgeEvent) -> HedgeEvent {
    let mut e = e.clone();
    match &mut e {
        HedgeEvent::Hedged { instance, .. } | HedgeEvent::Finished { instance, .. } => *instance = "".into(),
        _ => {}
    }
    e
}

/// Runs the scenario in both forms, asserts they saw the same, and returns what they saw.
fn both(
    which: Which,
    plan: Vec<(Duration, Result<u32, Down>)>,
    calls: usize,
    tune: impl Fn(RegistryBuilder, &str) -> RegistryBuilder,
    probe: impl Fn(&Registry, &str) + Clone + Send + Sync + 'static,
) -> Seen {
    let [attribute, pipeline] = FORMS.map(|form| run(form, which, plan.clone(), calls, &tune, probe.clone()).0);
    assert_eq!(attribute, pipeline, "the attribute and the pipeline behave alike");
    attribute
}

fn untuned(builder: RegistryBuilder, _: &str) -> RegistryBuilder {
    builder
}

fn no_probe(_: &Registry, _: &str) {}

/// A registry whose retry listener records, before each backoff, how many calls hold the slot
/// of the retrying instance's bulkhead.
fn probing_bulkheads(builder: RegistryBuilder) -> (Registry, Arc<Mutex<Vec<u32>>>) {
    let in_flight = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&in_flight);
    let built: Arc<OnceLock<Registry>> = Arc::new(OnceLock::new());
    let in_listener = Arc::clone(&built);
    let registry = builder
        .listen(move |e: &RetryEvent| {
            if let RetryEvent::Retrying { instance, .. } = e {
                let bulkhead = in_listener.get().expect("built").bulkhead(instance).expect("a bulkhead").snapshot();
                sink.lock().unwrap().push(bulkhead.in_flight);
            }
        })
        .build()
        .unwrap();
    built.set(registry.clone()).ok();
    (registry, in_flight)
}

fn timed_out(outcome: &Result<u32, Down>) -> bool {
    matches!(outcome, Err(Down::Rejected(Rejection::CallTimeout { .. })))
}

#[test]
fn standard_http_resolves_the_documented_values_in_both_forms() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let script = Script::new(&clock, []);
    let _attribute = Client::new(Form::Attribute, Which::Standard, &registry, &script, None);
    let _pipeline = Client::new(Form::Pipeline, Which::Standard, &registry, &script, Some("standard"));
    let snapshot = registry.snapshot();
    let (attribute, pipeline) = (id(Which::Standard), "standard");
    let of = |id: &str| {
        let retry = snapshot.retries().iter().find(|s| &*s.instance == id).unwrap().config.clone();
        let breaker = snapshot.circuit_breakers().iter().find(|s| &*s.instance == id).unwrap().config.clone();
        let bulkhead = snapshot.bulkheads().iter().find(|s| &*s.instance == id).unwrap().config.clone();
        let timeout = snapshot.timeouts().iter().find(|s| &*s.instance == id).unwrap().config.clone();
        (retry, breaker, bulkhead, timeout)
    };
    let (retry, breaker, bulkhead, timeout) = of(attribute);
    assert_eq!(
        (retry.max_attempts, retry.delay, retry.backoff, retry.multiplier),
        (4, 2 * S, Backoff::Exponential, 2.0)
    );
    assert_eq!((retry.max_delay, retry.jitter, retry.max_duration), (10 * S, Jitter::Full, Some(20 * S)));
    assert_eq!((retry.budget_percent, retry.budget_min_retries_per_second, retry.budget_window), (20.0, 10, 10 * S));
    assert_eq!((breaker.window_type, breaker.window_size, breaker.minimum_calls), (WindowType::Time, 30, 100));
    assert_eq!(
        (breaker.failure_rate_threshold, breaker.wait_in_open, breaker.permitted_calls_in_half_open),
        (10.0, 5 * S, 1)
    );
    assert_eq!((bulkhead.max_concurrent_calls, bulkhead.max_wait), (1000, Duration::ZERO));
    assert_eq!(timeout.duration, 10 * S);
    assert_eq!(of(pipeline), of(attribute), "the pipeline resolves the very same configuration");
    assert!(
        !snapshot.hedges().iter().any(|h| [attribute, pipeline].contains(&&*h.instance)),
        "no hedge beside the retry"
    );
}

#[test]
fn hedged_http_resolves_the_documented_values_in_both_forms() {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build().unwrap();
    let script = Script::new(&clock, []);
    let _attribute = Client::new(Form::Attribute, Which::Hedged, &registry, &script, None);
    let _pipeline = Client::new(Form::Pipeline, Which::Hedged, &registry, &script, Some("hedged"));
    let snapshot = registry.snapshot();
    let of = |id: &str| {
        let hedge = snapshot.hedges().iter().find(|s| &*s.instance == id).unwrap().config.clone();
        let breaker = snapshot.circuit_breakers().iter().find(|s| &*s.instance == id).unwrap().config.clone();
        let bulkhead = snapshot.bulkheads().iter().find(|s| &*s.instance == id).unwrap().config.clone();
        let timeout = snapshot.timeouts().iter().find(|s| &*s.instance == id).unwrap().config.clone();
        (hedge, breaker, bulkhead, timeout)
    };
    let attribute = of(id(Which::Hedged));
    let (hedge, breaker, bulkhead, timeout) = &attribute;
    assert_eq!((hedge.delay, hedge.max_hedged_attempts), (2 * S, 1));
    assert_eq!((breaker.window_type, breaker.window_size, breaker.minimum_calls), (WindowType::Time, 30, 100));
    assert_eq!(
        (breaker.failure_rate_threshold, breaker.wait_in_open, breaker.permitted_calls_in_half_open),
        (10.0, 5 * S, 1)
    );
    assert_eq!((bulkhead.max_concurrent_calls, bulkhead.max_wait), (1000, Duration::ZERO));
    assert_eq!(timeout.duration, 10 * S);
    assert_eq!(of("hedged"), attribute, "the pipeline resolves the very same configuration");
    let retried: Vec<_> = snapshot.retries().iter().map(|s| s.instance.to_string()).collect();
    assert!(!retried.iter().any(|i| i == id(Which::Hedged) || i == "hedged"), "no retry beside the hedge: {retried:?}");
}

#[test]
fn standard_http_cuts_a_slow_attempt_at_10s_and_retries_it_through_the_breaker() {
    // The attempt timeout sits inside the retry: the hung first attempt ends at 10 s, and the
    // retry tries again after its backoff (at most the 2 s base, full jitter).
    let plan = vec![(60 * S, Ok(1)), (100 * MS, Ok(2))];
    let seen = both(Which::Standard, plan, 1, untuned, no_probe);
    assert_eq!(seen.outcomes, [Ok(2)]);
    assert_eq!(seen.attempts, 2);
    assert_eq!(seen.retry_events, [(1, None)], "one retry, no give-up");
    assert!(seen.elapsed >= 10 * S + 100 * MS && seen.elapsed <= 12 * S + 100 * MS, "{:?}", seen.elapsed);
    // …and the breaker inside the retry recorded both attempts, the timeout as a failure.
    for form in FORMS {
        let (_, registry) = run(form, Which::Standard, vec![(60 * S, Ok(1)), (100 * MS, Ok(2))], 1, untuned, no_probe);
        let breaker = registry.circuit_breaker(id(Which::Standard)).unwrap().snapshot();
        assert_eq!((breaker.buffered_calls, breaker.failed_calls), (2, 1), "{form:?}");
        assert_eq!(registry.snapshot().timeouts()[0].timed_out, 1, "{form:?}");
    }
}

#[test]
fn standard_http_ends_a_hanging_call_within_30s() {
    // The handler's 30 s total timeout, as the retry's `max_duration = 20s` around 10 s attempts:
    // no attempt starts after 20 s, so the call is over by 30 s, whatever the jitter drew.
    let seen = both(Which::Standard, Vec::new(), 1, untuned, no_probe);
    assert!(timed_out(&seen.outcomes[0]), "{:?}", seen.outcomes);
    let (attempts, reason) = *seen.retry_events.last().unwrap();
    assert_eq!((attempts, reason), (seen.attempts, Some(GiveUpReason::MaxDuration)));
    assert!(seen.attempts >= 2, "at least one retry fits in 20 s: {}", seen.attempts);
    assert!(seen.elapsed <= 30 * S, "{:?}", seen.elapsed);
    assert!(seen.elapsed >= 20 * S, "two 10 s attempts at least: {:?}", seen.elapsed);
}

#[test]
fn standard_http_retry_budget_refuses_retries_beyond_20_percent_of_calls() {
    // With the budget's floor of 10 retries a second lowered to 0 for this instance, its 20 %
    // remain: after 4 calls that succeeded, the 5th call may be retried once (20 % of 5 calls).
    let no_floor =
        |builder: RegistryBuilder, id: &str| builder.retry_instance(id, |r| r.budget_min_retries_per_second(0));
    let mut plan: Vec<_> = (0..4).map(|_| (10 * MS, Ok(1))).collect();
    plan.extend([(10 * MS, Err(Down::Failed)), (10 * MS, Err(Down::Failed)), (10 * MS, Ok(9))]);
    let seen = both(Which::Standard, plan, 5, no_floor, no_probe);
    assert_eq!(seen.outcomes[..4], [Ok(1), Ok(1), Ok(1), Ok(1)]);
    assert_eq!(seen.outcomes[4], Err(Down::Failed), "the second retry was refused, so the 9 never came");
    assert_eq!(seen.retry_events, [(1, None), (2, Some(GiveUpReason::BudgetExhausted))]);
    assert_eq!(seen.attempts, 6);
}

#[test]
fn standard_http_holds_its_bulkhead_slot_across_the_backoff() {
    // The bulkhead sits outside the retry (the handler's concurrency limiter is outermost): one
    // slot per call, still held while the retry waits.
    let in_flight = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&in_flight);
    let probe = move |registry: &Registry, id: &str| {
        sink.lock().unwrap().push(registry.bulkhead(id).unwrap().snapshot().in_flight);
    };
    let seen = both(Which::Standard, vec![(10 * MS, Err(Down::Failed)), (10 * MS, Ok(3))], 1, untuned, probe);
    assert_eq!(seen.outcomes, [Ok(3)]);
    assert_eq!(*in_flight.lock().unwrap(), [1, 1], "one backoff per form, each with the slot held");
}

#[test]
fn hedged_http_hedges_a_slow_first_attempt_after_2s() {
    let plan = vec![(60 * S, Ok(1)), (100 * MS, Ok(2))];
    let seen = both(Which::Hedged, plan, 1, untuned, no_probe);
    assert_eq!(seen.outcomes, [Ok(2)]);
    assert_eq!(seen.elapsed, 2 * S + 100 * MS, "the hedge started at 2 s and won 100 ms later");
    assert_eq!(seen.attempts, 2);
    let finished = HedgeEvent::Finished { instance: "".into(), attempts: 2, winner: Some(2) };
    assert_eq!(seen.hedge_events.last(), Some(&finished));
}

#[test]
fn hedged_http_ends_a_hanging_call_at_12s_with_each_attempt_timed_out() {
    // Each attempt has its own 10 s timeout (inside the hedge): the first ends at 10 s, the hedge
    // started at 2 s ends at 12 s, and the call with it.
    let seen = both(Which::Hedged, Vec::new(), 1, untuned, no_probe);
    assert!(timed_out(&seen.outcomes[0]), "{:?}", seen.outcomes);
    assert_eq!(seen.elapsed, 12 * S);
    assert_eq!(seen.attempts, 2);
    let finished = HedgeEvent::Finished { instance: "".into(), attempts: 2, winner: None };
    assert_eq!(seen.hedge_events.last(), Some(&finished));
}

#[test]
fn a_failed_first_attempt_is_hedged_at_once() {
    let plan = vec![(10 * MS, Err(Down::Failed)), (100 * MS, Ok(5))];
    let seen = both(Which::Hedged, plan, 1, untuned, no_probe);
    assert_eq!((seen.outcomes[0].clone(), seen.elapsed), (Ok(5), 110 * MS));
}

#[resilient]
pub trait Tuned {
    // A direct attribute wins key by key; a written order replaces the preset's.
    #[bundle(resilience4cata::presets::standard_http)]
    #[retry(max_attempts = 2)]
    #[policy_order()]
    async fn get(&self) -> Result<u32, Down>;
}

struct TunedBackend(Arc<Script>);

impl Tuned for TunedBackend {
    async fn get(&self) -> Result<u32, Down> {
        self.0.attempt().await
    }
}

#[test]
fn direct_attributes_and_a_written_order_override_the_preset_in_both_forms() {
    let clock = ManualClock::new();
    let (registry, in_flight) = probing_bulkheads(testing::registry(&clock));
    let script = Script::new(&clock, [(MS, Err(Down::Failed)), (MS, Ok(1)), (MS, Err(Down::Failed)), (MS, Ok(2))]);
    let tuned = ResilientTuned::new(TunedBackend(Arc::clone(&script)), &registry).unwrap();
    // Written before the preset on purpose: the builder's order of calls does not matter.
    let pipeline: AsyncPipeline<u32, Down> = Pipeline::builder(&registry, "tuned")
        .retry_with(|r| r.max_attempts(2))
        .order([])
        .preset(presets::StandardHttp)
        .build()
        .unwrap();
    assert_eq!(block_on(tuned.get()), Ok(1));
    assert_eq!(block_on(pipeline.execute_async(|| script.attempt())), Ok(2));
    let snapshot = registry.snapshot();
    for retry in snapshot.retries() {
        assert_eq!((retry.config.max_attempts, retry.config.delay), (2, 2 * S), "{}", retry.instance);
    }
    assert_eq!(snapshot.retries().len(), 2);
    // The default order: the bulkhead inside the retry, its slot given back before the backoff.
    assert_eq!(*in_flight.lock().unwrap(), [0, 0]);
}

#[resilient]
#[bundle(resilience4cata::presets::standard_http)]
pub trait Whole {
    async fn first(&self) -> Result<u32, Down>;

    // The method's own attribute wins over the trait's preset, which the method still takes.
    #[timeout(duration = "3s")]
    async fn second(&self) -> Result<u32, Down>;
}

struct WholeBackend(Arc<Script>);

impl Whole for WholeBackend {
    async fn first(&self) -> Result<u32, Down> {
        self.0.attempt().await
    }
    async fn second(&self) -> Result<u32, Down> {
        self.0.attempt().await
    }
}

#[test]
fn a_preset_on_the_trait_serves_every_method_with_its_order() {
    let clock = ManualClock::new();
    let (registry, in_flight) = probing_bulkheads(testing::registry(&clock));
    let script = Script::new(&clock, [(MS, Err(Down::Failed)), (MS, Ok(4))]);
    let whole = ResilientWhole::new(WholeBackend(Arc::clone(&script)), &registry).unwrap();
    let snapshot = registry.snapshot();
    let timeouts: Vec<_> = snapshot.timeouts().iter().map(|t| (t.instance.to_string(), t.config.duration)).collect();
    assert!(timeouts.contains(&("presets::Whole::first".into(), 10 * S)), "{timeouts:?}");
    assert!(timeouts.contains(&("presets::Whole::second".into(), 3 * S)), "{timeouts:?}");
    assert!(snapshot.retries().iter().all(|r| r.config.max_attempts == 4));
    assert_eq!(block_on(whole.first()), Ok(4));
    assert_eq!(
        *in_flight.lock().unwrap(),
        [1],
        "the preset's order, from the trait: the slot is held across the backoff"
    );
}

#[test]
fn a_pipeline_order_replaces_the_presets_and_a_second_preset_with_a_retry_is_reg_001() {
    let registry = Registry::builder().build().unwrap();
    let reordered = Pipeline::builder(&registry, "reordered")
        .preset(presets::StandardHttp)
        .order([Policy::Timeout, Policy::Retry])
        .build::<u32, Down>();
    assert!(reordered.is_ok());
    let both = Pipeline::builder(&registry, "both").preset(presets::StandardHttp).preset(presets::HedgedHttp);
    let err = both.build::<u32, Down>().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-001");
}

pub struct Catalog {
    policies: CatalogPolicies,
    script: Arc<Script>,
}

#[resilient(policies = policies)]
impl Catalog {
    #[bundle(resilience4cata::presets::standard_http)]
    pub async fn item(&self) -> Result<u32, Down> {
        self.script.attempt().await
    }
}

#[test]
fn a_preset_in_the_class_style_has_the_same_values_and_order() {
    let clock = ManualClock::new();
    let (registry, in_flight) = probing_bulkheads(testing::registry(&clock));
    let script = Script::new(&clock, [(MS, Err(Down::Failed)), (MS, Ok(8))]);
    let catalog = Catalog { policies: CatalogPolicies::new(&registry).unwrap(), script };
    assert_eq!(block_on(catalog.item()), Ok(8));
    assert_eq!(*in_flight.lock().unwrap(), [1], "the slot is held across the backoff");
    let snapshot = registry.snapshot();
    assert_eq!(snapshot.retries()[0].config.max_attempts, 4);
    assert_eq!(snapshot.timeouts()[0].config.duration, 10 * S);
}
