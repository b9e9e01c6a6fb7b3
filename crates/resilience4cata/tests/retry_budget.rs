//! The retry budget through `#[resilient]`, with the seed's exact figures, on the manual clock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Budget, GiveUpReason, Jitter, Registry, RetryEvent, resilient};

#[derive(Debug, PartialEq)]
pub struct Down;

/// The seed's budget on every method (a trait-level `#[retry]`); a method's attribute changes only
/// the keys it writes.
#[resilient]
#[retry(max_attempts = 3, delay = "100ms", budget_percent = 20, budget_min_retries_per_second = 1)]
pub trait CatalogApi {
    #[retry(name = "catalog")]
    fn product(&self, id: &str) -> Result<String, Down>;

    #[retry(name = "catalog")]
    fn price(&self, id: &str) -> Result<u32, Down>;

    #[retry(budget_min_retries_per_second = 0)]
    fn rarely(&self) -> Result<(), Down>;
}

/// A catalog that is down, or up, and counts attempts.
struct Catalog {
    attempts: AtomicU64,
    down: std::sync::atomic::AtomicBool,
}

impl Catalog {
    fn down() -> Self {
        Catalog { attempts: AtomicU64::new(0), down: true.into() }
    }

    fn attempt(&self) -> Result<(), Down> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) { Err(Down) } else { Ok(()) }
    }
}

impl CatalogApi for Catalog {
    fn product(&self, _id: &str) -> Result<String, Down> {
        self.attempt().map(|()| "p".into())
    }
    fn price(&self, _id: &str) -> Result<u32, Down> {
        self.attempt().map(|()| 1)
    }
    fn rarely(&self) -> Result<(), Down> {
        self.attempt()
    }
}

struct Setup {
    clock: ManualClock,
    registry: Registry,
    gave_up: Arc<Mutex<Vec<GiveUpReason>>>,
    catalog: ResilientCatalogApi<Catalog>,
}

fn setup(jitter: Option<Jitter>) -> Setup {
    let clock = ManualClock::new();
    let gave_up = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&gave_up);
    let mut builder = testing::registry(&clock).listen(move |e: &RetryEvent| {
        if let RetryEvent::GaveUp { reason, .. } = e {
            sink.lock().unwrap().push(*reason);
        }
    });
    if let Some(jitter) = jitter {
        builder = builder.retry_defaults(move |r| r.jitter(jitter));
    }
    let registry = builder.build().unwrap();
    let catalog = ResilientCatalogApi::new(Catalog::down(), &registry).unwrap();
    Setup { clock, registry, gave_up, catalog }
}

fn budget(registry: &Registry, id: &str) -> Budget {
    registry.snapshot().retries().iter().find(|r| &*r.instance == id).unwrap().budget.unwrap()
}

fn exhausted(gave_up: &Mutex<Vec<GiveUpReason>>) -> usize {
    gave_up.lock().unwrap().iter().filter(|r| **r == GiveUpReason::BudgetExhausted).count()
}

#[test]
fn a_hundred_calls_against_a_down_catalog_make_130_attempts_not_300() {
    let s = setup(None); // jitter as the seed: the default, Full, with the testing seed
    for _ in 0..100 {
        assert_eq!(s.catalog.product("p-1"), Err(Down));
    }
    assert_eq!(s.catalog.delegate().attempts.load(Ordering::SeqCst), 130); // 100 + 10 reserve + 20 % of 100
    assert_eq!(exhausted(&s.gave_up), 95);
    assert_eq!(budget(&s.registry, "catalog"), Budget { calls: 100, retries: 30, allowed_retries: 30 });
}

#[test]
fn the_first_five_calls_get_both_retries_then_one_per_five_calls() {
    let s = setup(Some(Jitter::None));
    let mut per_call = Vec::new();
    for _ in 0..10 {
        let before = s.catalog.delegate().attempts.load(Ordering::SeqCst);
        let _ = s.catalog.product("p");
        per_call.push(s.catalog.delegate().attempts.load(Ordering::SeqCst) - before);
    }
    // Calls 1–5 fit the reserve of 10; call 6 raises the allowance to floor(10 + 1.2) = 11, calls 7–9
    // do not reach 12, call 10 does.
    assert_eq!(per_call, [3, 3, 3, 3, 3, 2, 1, 1, 1, 2]);
    assert_eq!(budget(&s.registry, "catalog"), Budget { calls: 10, retries: 12, allowed_retries: 12 });
}

#[test]
fn without_a_reserve_four_calls_at_twenty_percent_retry_nothing() {
    let s = setup(None);
    for _ in 0..4 {
        assert_eq!(s.catalog.rarely(), Err(Down));
    }
    assert_eq!(s.catalog.delegate().attempts.load(Ordering::SeqCst), 4);
    assert_eq!(exhausted(&s.gave_up), 4);
    let b = budget(&s.registry, "retry_budget::CatalogApi::rarely");
    assert_eq!(b, Budget { calls: 4, retries: 0, allowed_retries: 0 });
}

#[test]
fn after_a_quiet_period_longer_than_the_window_the_budget_restarts_from_its_reserve() {
    let s = setup(Some(Jitter::None));
    for _ in 0..100 {
        let _ = s.catalog.product("p");
    }
    assert_eq!(budget(&s.registry, "catalog").retries, 30);
    assert_eq!(s.clock.elapsed(), Duration::from_millis(3500), "five calls wait 100+200 ms, twenty wait 100 ms");
    let before = exhausted(&s.gave_up);
    assert!(before > 0);

    s.clock.advance(Duration::from_millis(10_100));
    // Nothing failed for longer than the window: every call and retry has expired.
    assert_eq!(budget(&s.registry, "catalog"), Budget { calls: 0, retries: 0, allowed_retries: 10 });

    // Calls made while nothing fails are dated at the last failure, so they have expired too.
    s.catalog.delegate().down.store(false, Ordering::SeqCst);
    for _ in 0..50 {
        assert!(s.catalog.product("p").is_ok());
    }
    assert_eq!(budget(&s.registry, "catalog").allowed_retries, 10);

    // The next failing calls get their retries again, from the reserve.
    s.catalog.delegate().down.store(true, Ordering::SeqCst);
    let attempts = s.catalog.delegate().attempts.load(Ordering::SeqCst);
    assert_eq!(s.catalog.product("p"), Err(Down));
    assert_eq!(s.catalog.delegate().attempts.load(Ordering::SeqCst) - attempts, 3);
    assert_eq!(exhausted(&s.gave_up), before);
    assert_eq!(budget(&s.registry, "catalog").retries, 2);
}

#[test]
fn two_methods_sharing_a_name_share_one_budget() {
    let s = setup(Some(Jitter::None));
    for _ in 0..50 {
        let _ = s.catalog.product("p");
    }
    let spent = budget(&s.registry, "catalog");
    assert_eq!(spent.retries, spent.allowed_retries, "product spent the shared budget");
    let attempts = s.catalog.delegate().attempts.load(Ordering::SeqCst);
    assert_eq!(s.catalog.price("p"), Err(Down));
    // One call adds 20 % of a call: not enough for a whole retry, so price gets none.
    assert_eq!(s.catalog.delegate().attempts.load(Ordering::SeqCst) - attempts, 1);
    assert_eq!(budget(&s.registry, "catalog").calls, 51);
    assert_eq!(s.registry.snapshot().retries().iter().filter(|r| &*r.instance == "catalog").count(), 1);
}

#[resilient]
pub trait Hot {
    #[retry(max_attempts = 3, delay = "0", budget_percent = 10, budget_min_retries_per_second = 1)]
    fn get(&self) -> Result<(), Down>;
}

impl Hot for Catalog {
    fn get(&self) -> Result<(), Down> {
        self.attempt()
    }
}

#[test]
fn under_two_threads_the_budget_is_never_exceeded() {
    let (_, registry) = testkit::manual();
    let hot = Arc::new(ResilientHot::new(Catalog::down(), &registry).unwrap());
    let calls_per_thread = 5_000u64;
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let hot = Arc::clone(&hot);
            std::thread::spawn(move || {
                for _ in 0..calls_per_thread {
                    let _ = hot.get();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let calls = 2 * calls_per_thread;
    let retries = hot.delegate().attempts.load(Ordering::SeqCst) - calls;
    let b = registry.snapshot().retries()[0].budget.unwrap();
    assert_eq!(b.retries, retries, "every granted retry is counted");
    assert!(b.calls <= calls, "a lost increment only undercounts calls");
    assert!(retries <= b.allowed_retries, "{retries} retries > allowed {}", b.allowed_retries);
    assert!(retries <= 10 + calls / 10, "the budget bound on the true call count");
    assert!(retries >= 10, "the reserve was granted");
}
