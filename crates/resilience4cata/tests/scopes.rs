//! SPEC §5 scopes and `wrapper.ids()`: two scoped wrappers of one trait keep separate instances
//! while a `name`d instance stays shared; scoped ids take per-instance configuration; the ids
//! `ids()` gives are exactly those of snapshots and handles.

use std::sync::atomic::{AtomicBool, Ordering};

use resilience4cata::circuit_breaker::State;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Registry, Rejection, ResilienceError, resilient};

#[derive(Debug, PartialEq, ResilienceError)]
pub enum HostError {
    Down,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Host {
    #[circuit_breaker(window_size = 2, minimum_calls = 2, failure_rate_threshold = 50)]
    #[bulkhead(max_concurrent_calls = 4)]
    fn get(&self, path: &str) -> Result<String, HostError>;

    #[rate_limiter(name = "shared-quota", permits = 3, period = "1s")]
    #[bulkhead(max_concurrent_calls = 2)]
    fn put(&self, path: &str) -> Result<(), HostError>;

    #[retry(max_attempts = 2)]
    #[timeout(duration = "1s")]
    async fn fetch(&self) -> Result<u32, HostError>;

    fn unprotected(&self) -> u32;

    // Compiled out: none of its two instances, constructor or ids exist (each generated item
    // carries the method's `#[cfg]`).
    #[cfg(any())]
    #[retry]
    #[circuit_breaker]
    fn compiled_out(&self) -> Result<u32, HostError>;
}

struct Backend {
    up: AtomicBool,
}

impl Backend {
    fn new(up: bool) -> Backend {
        Backend { up: AtomicBool::new(up) }
    }
}

impl Host for Backend {
    fn get(&self, path: &str) -> Result<String, HostError> {
        if self.up.load(Ordering::SeqCst) { Ok(path.to_owned()) } else { Err(HostError::Down) }
    }
    fn put(&self, _path: &str) -> Result<(), HostError> {
        Ok(())
    }
    async fn fetch(&self) -> Result<u32, HostError> {
        Ok(1)
    }
    fn unprotected(&self) -> u32 {
        0
    }
}

fn derived(method: &str) -> String {
    format!("{}::Host::{method}", module_path!())
}

fn registry() -> Registry {
    testing::registry(&ManualClock::new()).build().unwrap()
}

#[test]
fn a_dead_host_opens_only_its_own_breaker() {
    let registry = registry();
    let a = ResilientHost::builder(Backend::new(false), &registry).scope("host-a").build().unwrap();
    let b = ResilientHost::builder(Backend::new(true), &registry).scope("host-b").build().unwrap();
    assert_eq!(a.get("/x"), Err(HostError::Down));
    assert_eq!(a.get("/x"), Err(HostError::Down));
    assert!(matches!(a.get("/x"), Err(HostError::Rejected(Rejection::CallNotPermitted { .. }))));
    assert_eq!(b.get("/y"), Ok("/y".to_owned())); // host B's breaker never saw host A's failures

    let a_id = format!("host-a/{}", derived("get"));
    let b_id = format!("host-b/{}", derived("get"));
    assert_eq!(registry.circuit_breaker(&a_id).unwrap().snapshot().state, State::Open);
    assert_eq!(registry.circuit_breaker(&b_id).unwrap().snapshot().state, State::Closed);
    assert!(registry.circuit_breaker(&derived("get")).is_none(), "no unscoped instance was made");
}

#[test]
fn unscoped_wrappers_share_and_a_named_instance_is_never_scoped() {
    let registry = registry();
    let plain_1 = ResilientHost::new(Backend::new(false), &registry).unwrap();
    let plain_2 = ResilientHost::new(Backend::new(true), &registry).unwrap();
    let _ = plain_1.get("/x");
    let _ = plain_1.get("/x");
    assert!(matches!(plain_2.get("/y"), Err(HostError::Rejected(Rejection::CallNotPermitted { .. }))));

    let a = ResilientHost::builder(Backend::new(true), &registry).scope("host-a").build().unwrap();
    let b = ResilientHost::builder(Backend::new(true), &registry).scope("host-b").build().unwrap();
    assert_eq!(a.put("/1"), Ok(()));
    assert_eq!(b.put("/2"), Ok(()));
    assert_eq!(plain_1.put("/3"), Ok(()));
    assert!(matches!(b.put("/4"), Err(HostError::Rejected(Rejection::RateLimitExceeded { .. }))));
    let limiters = registry.snapshot();
    let quota: Vec<_> = limiters.rate_limiters().iter().map(|r| &*r.instance).collect();
    assert_eq!(quota, ["shared-quota"], "one limiter for every scope");
    let bulkheads: Vec<String> = limiters.bulkheads().iter().map(|b| b.instance.to_string()).collect();
    assert!(bulkheads.contains(&format!("host-a/{}", derived("put"))), "{bulkheads:?}");
    assert!(bulkheads.contains(&format!("host-b/{}", derived("put"))), "{bulkheads:?}");
}

#[test]
fn scoped_ids_take_per_instance_configuration() {
    let id = format!("host-a/{}", derived("get"));
    let registry = testing::registry(&ManualClock::new())
        .circuit_breaker_instance(id.as_str(), |c| c.minimum_calls(1).window_size(1))
        .build()
        .unwrap();
    let a = ResilientHost::builder(Backend::new(false), &registry).scope("host-a").build().unwrap();
    let b = ResilientHost::builder(Backend::new(false), &registry).scope("host-b").build().unwrap();
    assert_eq!(registry.circuit_breaker(&id).unwrap().snapshot().config.minimum_calls, 1);
    let b_id = b.ids().get.circuit_breaker().unwrap().to_owned();
    assert_eq!(registry.circuit_breaker(&b_id).unwrap().snapshot().config.minimum_calls, 2);
    let _ = a.get("/x");
    assert_eq!(registry.circuit_breaker(&id).unwrap().snapshot().state, State::Open); // after one call
}

#[test]
fn ids_are_the_ids_of_snapshots_and_handles() {
    let registry = registry();
    let scoped = ResilientHost::builder(Backend::new(true), &registry).scope("eu").build().unwrap();
    let plain = ResilientHost::new(Backend::new(true), &registry).unwrap();

    let ids = scoped.ids();
    assert_eq!(ids.get.circuit_breaker(), Some(format!("eu/{}", derived("get")).as_str()));
    assert_eq!(ids.get.bulkhead(), ids.get.circuit_breaker());
    assert_eq!(ids.get.retry(), None);
    assert_eq!(ids.put.rate_limiter(), Some("shared-quota"));
    assert_eq!(ids.fetch.iter().map(|(p, _)| p).collect::<Vec<_>>(), ["retry", "timeout"]);
    assert_eq!(plain.ids().get.circuit_breaker(), Some(derived("get").as_str()));

    // Every id ids() names is an instance of the snapshot, and every instance is named by ids().
    let snapshot = registry.snapshot();
    let mut from_snapshot: Vec<(&str, String)> = Vec::new();
    from_snapshot.extend(snapshot.retries().iter().map(|s| ("retry", s.instance.to_string())));
    from_snapshot.extend(snapshot.circuit_breakers().iter().map(|s| ("circuit_breaker", s.instance.to_string())));
    from_snapshot.extend(snapshot.rate_limiters().iter().map(|s| ("rate_limiter", s.instance.to_string())));
    from_snapshot.extend(snapshot.bulkheads().iter().map(|s| ("bulkhead", s.instance.to_string())));
    from_snapshot.extend(snapshot.timeouts().iter().map(|s| ("timeout", s.instance.to_string())));
    let mut from_ids: Vec<(&str, String)> = Vec::new();
    for wrapper_ids in [scoped.ids(), plain.ids()] {
        for method in [&wrapper_ids.get, &wrapper_ids.put, &wrapper_ids.fetch] {
            from_ids.extend(method.iter().map(|(p, id)| (p, id.to_owned())));
        }
    }
    from_ids.sort();
    from_ids.dedup(); // "shared-quota" twice
    from_snapshot.sort();
    assert_eq!(from_ids, from_snapshot);
    assert_eq!(from_ids.len(), 2 * 5 + 1); // five own instances per wrapper, one shared limiter
}

#[test]
fn events_carry_the_scoped_id() {
    use std::sync::{Arc, Mutex};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let registry = testing::registry(&ManualClock::new())
        .listen(move |e: &resilience4cata::circuit_breaker::CircuitBreakerEvent| {
            sink.lock().unwrap().push(e.instance().to_owned())
        })
        .build()
        .unwrap();
    let a = ResilientHost::builder(Backend::new(false), &registry).scope("host-a").build().unwrap();
    let _ = a.get("/x");
    let expected = a.ids().get.circuit_breaker().unwrap().to_owned();
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|id| *id == expected), "{seen:?}");
}

#[test]
fn an_empty_scope_is_a_coded_error() {
    let registry = registry();
    let err = ResilientHost::builder(Backend::new(true), &registry).scope("").build().err().unwrap();
    assert_eq!(err.code(), "R4C-REG-003");
    assert!(err.to_string().contains("scope"), "{err}");
}

#[test]
fn new_is_the_builder_without_a_scope() {
    let registry = registry();
    let built = ResilientHost::builder(Backend::new(true), &registry).build().unwrap();
    let new = ResilientHost::new(Backend::new(true), &registry).unwrap();
    assert_eq!(built.ids(), new.ids());
    assert_eq!(new.unprotected(), 0);
}

#[test]
fn ids_without_building_are_the_ids_of_the_built_wrapper() {
    let registry = registry();
    let scoped = ResilientHost::builder(Backend::new(true), &registry).scope("host-a").build().unwrap();
    let plain = ResilientHost::new(Backend::new(true), &registry).unwrap();
    assert_eq!(ResilientHostIds::scoped("host-a"), scoped.ids());
    assert_eq!(ResilientHostIds::unscoped(), plain.ids());
    assert_ne!(ResilientHostIds::scoped("host-b"), scoped.ids());
    let ids = ResilientHostIds::scoped("host-b");
    assert_eq!(ids.get.circuit_breaker(), Some(format!("host-b/{}", derived("get")).as_str()));
    assert_eq!(ids.put.rate_limiter(), Some("shared-quota")); // named: never scoped
}

#[test]
fn config_set_through_the_ids_accessor_takes_effect_on_a_scoped_instance() {
    let ids = ResilientHostIds::scoped("host-a");
    let registry = testing::registry(&ManualClock::new())
        .circuit_breaker_instance(ids.get.circuit_breaker().unwrap(), |c| c.minimum_calls(1).window_size(1))
        .bulkhead_instance(ids.put.bulkhead().unwrap(), |b| b.max_concurrent_calls(7))
        .build()
        .unwrap();
    let a = ResilientHost::builder(Backend::new(false), &registry).scope("host-a").build().unwrap();
    let b = ResilientHost::builder(Backend::new(false), &registry).scope("host-b").build().unwrap();
    let a_id = ids.get.circuit_breaker().unwrap();
    assert_eq!(registry.circuit_breaker(a_id).unwrap().snapshot().config.minimum_calls, 1);
    let b_id = b.ids().get.circuit_breaker().unwrap().to_owned();
    assert_eq!(registry.circuit_breaker(&b_id).unwrap().snapshot().config.minimum_calls, 2);
    let bulkheads = registry.snapshot();
    let put = bulkheads.bulkheads().iter().find(|s| Some(&*s.instance) == ids.put.bulkhead()).unwrap();
    assert_eq!(put.config.max_concurrent_calls, 7);
    let _ = a.get("/x");
    assert_eq!(registry.circuit_breaker(a_id).unwrap().snapshot().state, State::Open); // after one call
    let _ = b.get("/x");
    assert_eq!(registry.circuit_breaker(&b_id).unwrap().snapshot().state, State::Closed);
    assert_eq!(registry.check_unused_config(), Ok(()));
}

#[test]
fn check_unused_config_turns_a_misspelt_id_into_a_coded_error() {
    let misspelt = format!("host-a/{}::Hots::get", module_path!());
    let configured = testing::registry(&ManualClock::new())
        .circuit_breaker_instance(misspelt.as_str(), |c| c.minimum_calls(1))
        .retry("unused-config", |r| r.max_attempts(4))
        .build()
        .unwrap();
    let _a = ResilientHost::builder(Backend::new(true), &configured).scope("host-a").build().unwrap();
    let err = configured.check_unused_config().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-012");
    assert_eq!(err.instance(), None);
    assert!(err.message().contains(&format!("circuit_breaker instance \"{misspelt}\"")), "{err}");
    assert!(err.message().contains("retry configuration \"unused-config\""), "{err}");
    assert!(err.to_string().starts_with("[R4C-REG-012]"), "{err}");
    assert_eq!(configured.unused_config().len(), 2);

    // What nothing configured leaves nothing to report.
    let clean = registry();
    let _b = ResilientHost::builder(Backend::new(true), &clean).scope("host-b").build().unwrap();
    assert_eq!(clean.check_unused_config(), Ok(()));
}

#[test]
fn check_unused_config_is_ok_once_the_instance_is_built() {
    let ids = ResilientHostIds::scoped("late");
    let registry = testing::registry(&ManualClock::new())
        .retry_instance(ids.fetch.retry().unwrap(), |r| r.max_attempts(5))
        .build()
        .unwrap();
    assert_eq!(registry.check_unused_config().unwrap_err().code(), "R4C-REG-012"); // nothing built yet
    let late = ResilientHost::builder(Backend::new(true), &registry).scope("late").build().unwrap();
    assert_eq!(registry.check_unused_config(), Ok(()));
    let snapshot = registry.snapshot();
    let retry = snapshot.retries().iter().find(|r| Some(&*r.instance) == late.ids().fetch.retry()).unwrap();
    assert_eq!(retry.config.max_attempts, 5);
}
