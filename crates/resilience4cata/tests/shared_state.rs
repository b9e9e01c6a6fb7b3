//! The runtime side of shared state (SPEC §13): `shared` / `lease` keys in builders and TOML,
//! `R4C-REG-011`, and a shared limiter spending leases from a store (an in-process fake store here;
//! the Redis store has its own tests in `resilience4cata-redis`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::circuit_breaker::State;
use resilience4cata::events::AnyEvent;
use resilience4cata::shared::{
    BreakerLink, BreakerWork, LeasePool, SharedPolicy, SharedStateEvent, SharedStore, SlotPool,
};
use resilience4cata::{Pipeline, Registry, RegistryBuilder, Rejection, ResilienceError};

/// A store of one process with a fixed stock of permits, granted lease by lease from a thread; it
/// can be switched off (degraded) and on again.
#[derive(Debug, Default, Clone)]
struct Stock {
    left: Arc<AtomicU32>,
    down: Arc<std::sync::atomic::AtomicBool>,
    asked: Arc<AtomicU32>,
    breakers: Arc<Mutex<Vec<Arc<BreakerLink>>>>,
}

impl Stock {
    /// A store holding `left` permits (or slots), and a registry on it that `configure` completes.
    fn fleet(left: u32, configure: impl FnOnce(RegistryBuilder) -> RegistryBuilder) -> (Stock, Registry) {
        let stock = Stock { left: Arc::new(AtomicU32::new(left)), ..Default::default() };
        let registry = configure(Registry::builder().shared_state(stock.clone())).build().unwrap();
        (stock, registry)
    }
}

impl SharedStore for Stock {
    fn share_bulkhead(&self, pool: Arc<SlotPool>) {
        let stock = self.clone();
        std::thread::spawn(move || {
            loop {
                pool.wait_wanted_blocking();
                let back = pool.returned(pool.surplus());
                stock.left.fetch_add(back, Ordering::SeqCst);
                if pool.spare() <= pool.lease() / 2 {
                    let want = pool.wanted_slots();
                    let got =
                        stock.left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| Some(l.saturating_sub(want)));
                    pool.grant(want.min(got.unwrap_or(0)));
                }
            }
        });
    }

    fn share_circuit_breaker(&self, link: Arc<BreakerLink>) {
        self.breakers.lock().unwrap().push(link);
    }

    fn store_timeout(&self) -> Duration {
        Duration::from_millis(25)
    }

    fn share_rate_limiter(&self, pool: Arc<LeasePool>) {
        let stock = self.clone();
        std::thread::spawn(move || {
            loop {
                pool.wait_wanted_blocking();
                stock.asked.fetch_add(1, Ordering::SeqCst);
                if stock.down.load(Ordering::SeqCst) {
                    pool.degrade();
                    continue;
                }
                pool.recover();
                let want = pool.wanted_permits();
                let got = stock.left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| Some(l.saturating_sub(want)));
                let got = want.min(got.unwrap_or(0));
                pool.grant(got, Duration::from_millis(700));
            }
        });
    }
}

#[test]
fn shared_without_a_store_is_reg_011_at_build() {
    let err = Registry::builder().rate_limiter_instance("prices", |r| r.shared(true)).build().unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-011", Some("prices")));
    assert!(err.message().contains("shared_state"), "{err}");
    let err = Registry::builder().rate_limiter_defaults(|r| r.shared(true)).build().unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-011", None));
    assert!(Registry::builder().rate_limiter_defaults(|r| r.shared(false)).build().is_ok());
}

#[cfg(feature = "serde")]
#[test]
fn shared_and_lease_are_config_file_keys() {
    let toml = "[instances.\"prices\".rate_limiter]\nshared = true\nlease = 4\npermits = 40\n";
    let err = Registry::builder().config_toml(toml).build().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-011");
    let registry = Registry::builder().shared_state(Stock::default()).config_toml(toml).build().unwrap();
    Pipeline::builder(&registry, "prices").rate_limiter_with(|r| r).build::<(), std::io::Error>().unwrap();
    let snapshot = registry.snapshot();
    let c = &snapshot.rate_limiters()[0].config;
    assert_eq!((c.shared, c.lease, c.lease()), (true, Some(4), 4));
    let err = Registry::builder().config_toml("[defaults.rate_limiter]\nshared = \"yes\"\n").build().unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-003");
}

#[test]
fn a_shared_limiter_admits_exactly_what_the_fleet_grants() {
    let (stock, registry) =
        Stock::fleet(25, |b| b.rate_limiter_instance("prices", |r| r.shared(true).permits(1000).lease(10)));
    let limiter =
        Pipeline::builder(&registry, "prices").rate_limiter_with(|r| r).build::<(), std::io::Error>().unwrap();
    let mut admitted = 0;
    let mut refused = Vec::new();
    for _ in 0..40 {
        match limiter.execute(|| Ok(())) {
            Ok(()) => admitted += 1,
            Err(e) => refused.push(e),
        }
    }
    assert_eq!(admitted, 25, "the local quota of 1000 would have admitted all 40");
    let Some(&Rejection::RateLimitExceeded { retry_after, .. }) = refused[0].rejection() else { panic!() };
    assert!(retry_after <= Duration::from_millis(700) && retry_after > Duration::from_millis(500), "{retry_after:?}");
    assert!(stock.asked.load(Ordering::SeqCst) >= 3, "25 permits come in leases of at most 10");
}

#[test]
fn a_store_that_cannot_answer_degrades_to_the_local_limiter_and_recovers() {
    let stock = Stock { left: Arc::new(AtomicU32::new(1_000)), ..Default::default() };
    stock.down.store(true, Ordering::SeqCst);
    let seen: Arc<Mutex<Vec<SharedStateEvent>>> = Arc::default();
    let sink = Arc::clone(&seen);
    // The manual clock stands still, so the counts do not depend on how fast this machine runs
    // the calls.
    let clock = resilience4cata::testing::ManualClock::new();
    let registry = resilience4cata::testing::registry(&clock)
        .shared_state(stock.clone())
        .listen(move |e: &SharedStateEvent| sink.lock().unwrap().push(e.clone()))
        .rate_limiter_instance("prices", |r| r.shared(true).permits(5).lease(1))
        .build()
        .unwrap();
    let mut events = registry.subscribe(64);
    let limiter =
        Pipeline::builder(&registry, "prices").rate_limiter_with(|r| r).build::<(), std::io::Error>().unwrap();
    let admitted = (0..10).filter(|_| limiter.execute(|| Ok(())).is_ok()).count();
    assert_eq!(
        admitted, 1,
        "degraded: the local limiter continues from what the process was granted (nothing), one permit \
         now and no saved-up burst of 5; never an error from the store"
    );
    let mut admitted = 0;
    for _ in 0..10 {
        clock.advance(Duration::from_millis(100));
        admitted += (0..3).filter(|_| limiter.execute(|| Ok(())).is_ok()).count();
    }
    assert_eq!(admitted, 5, "the next second: the local quota of 5, one per 200 ms");
    clock.advance(Duration::from_secs(10));
    let admitted = (0..10).filter(|_| limiter.execute(|| Ok(())).is_ok()).count();
    assert_eq!(admitted, 1, "idle while degraded: still no burst saved up");
    assert_eq!(
        *seen.lock().unwrap(),
        [SharedStateEvent::Degraded { instance: Arc::from("prices"), policy: SharedPolicy::RateLimiter }]
    );
    assert_eq!(
        std::iter::from_fn(|| events.try_recv()).find(|e| matches!(e, AnyEvent::SharedState(_))),
        Some(AnyEvent::SharedState(SharedStateEvent::Degraded {
            instance: Arc::from("prices"),
            policy: SharedPolicy::RateLimiter
        }))
    );

    stock.down.store(false, Ordering::SeqCst);
    let handle = registry.rate_limiter("prices").unwrap();
    // The next refill request (any call that finds the lease empty asks) reaches the store again.
    let mut recovered = false;
    for _ in 0..200 {
        let _ = limiter.execute(|| Ok(()));
        if seen.lock().unwrap().len() == 2 {
            recovered = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(recovered, "{:?}", seen.lock().unwrap());
    assert_eq!(
        seen.lock().unwrap()[1],
        SharedStateEvent::Recovered { instance: Arc::from("prices"), policy: SharedPolicy::RateLimiter }
    );
    assert_eq!(handle.instance(), "prices");
}

/// The breaker's side of the link: a local Open is handed to the store, the fleet's Open opens
/// this process for the rest of the wait, and half-open probes need a fleet-wide grant.
#[test]
fn a_shared_breaker_publishes_its_opens_applies_the_fleets_and_caps_probes() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let stock = Stock::default();
    let clock = resilience4cata::testing::ManualClock::new();
    let registry = resilience4cata::testing::registry(&clock)
        .shared_state(stock.clone())
        .circuit_breaker_instance("down", |c| {
            c.shared(true)
                .window_size(2)
                .minimum_calls(2)
                .wait_in_open(Duration::from_secs(10))
                .permitted_calls_in_half_open(3)
        })
        .build()
        .unwrap();
    let breaker =
        Pipeline::builder(&registry, "down").circuit_breaker_with(|c| c).build::<(), std::io::Error>().unwrap();
    let handle = registry.circuit_breaker("down").unwrap();
    let link = Arc::clone(&stock.breakers.lock().unwrap()[0]);
    let mut cx = Context::from_waker(Waker::noop());
    let mut work = Box::pin(link.work());
    assert_eq!(work.as_mut().poll(&mut cx), Poll::Pending, "nothing to publish yet");
    drop(work);

    // Another process opened: this one refuses for the rest of the wait, without a failure of its own.
    link.open_remotely(Duration::from_secs(4));
    assert_eq!(handle.snapshot().state, State::Open);
    assert!(breaker.execute(|| Ok(())).is_err());
    let mut work = Box::pin(link.work());
    assert_eq!(work.as_mut().poll(&mut cx), Poll::Pending, "a remote Open is not published back");
    drop(work);
    clock.advance(Duration::from_secs(4));

    // Half-open: no probe until the fleet grants some, then exactly the grant.
    assert!(breaker.execute(|| Ok(())).is_err(), "half-open, no fleet-wide probe in hand");
    assert_eq!(handle.snapshot().state, State::HalfOpen);
    assert_eq!(Box::pin(link.work()).as_mut().poll(&mut cx), Poll::Ready(BreakerWork::Probes), "probes wanted");
    link.grant_probes(1);
    // The one probe fails: the breaker reopens on its own judgement, and that Open is published.
    assert!(breaker.execute(|| Err(std::io::Error::other("down"))).is_err());
    assert!(breaker.execute(|| Ok(())).is_err(), "no second probe: the fleet granted one");
    assert_eq!(handle.snapshot().state, State::Open, "the only probe failed: reopened");
    let Poll::Ready(BreakerWork::Open(left)) = Box::pin(link.work()).as_mut().poll(&mut cx) else {
        panic!("a local Open to publish")
    };
    assert_eq!(left, Duration::from_secs(10), "for the whole wait: it was just decided");

    // An Open the store could not publish stays with the link, and is published later only while
    // it is still current: half its wait later, for the other half.
    link.unpublished(BreakerWork::Open(left));
    assert!(link.is_degraded() && link.has_pending());
    clock.advance(Duration::from_secs(5));
    assert_eq!(
        Box::pin(link.work()).as_mut().poll(&mut cx),
        Poll::Ready(BreakerWork::Open(Duration::from_secs(5))),
        "still current: published for the rest of its wait"
    );
    link.published();
    assert!(!link.is_degraded());

    // Half-open again; the probe succeeds: the Close is published.
    clock.advance(Duration::from_secs(5));
    assert!(breaker.execute(|| Ok(())).is_err(), "half-open, no probe granted yet");
    assert_eq!(Box::pin(link.work()).as_mut().poll(&mut cx), Poll::Ready(BreakerWork::Probes));
    link.grant_probes(1);
    assert!(breaker.execute(|| Ok(())).is_ok(), "the probe");
    assert_eq!(handle.snapshot().state, State::Closed);
    assert_eq!(Box::pin(link.work()).as_mut().poll(&mut cx), Poll::Ready(BreakerWork::Closed), "a Close to publish");

    // Another process's Close closes a breaker the fleet opened.
    link.open_remotely(Duration::from_secs(4));
    assert_eq!(handle.snapshot().state, State::Open);
    link.close_remotely();
    assert_eq!(handle.snapshot().state, State::Closed, "closed by the fleet's Close");
    assert!(breaker.execute(|| Ok(())).is_ok());

    // An Open no longer current when the store returns is dropped, never published late.
    for _ in 0..2 {
        let _ = breaker.execute(|| Err(std::io::Error::other("down")));
    }
    assert_eq!(handle.snapshot().state, State::Open);
    let Poll::Ready(work) = Box::pin(link.work()).as_mut().poll(&mut cx) else { panic!("the Open") };
    link.unpublished(work);
    clock.advance(Duration::from_secs(10));
    let mut work = Box::pin(link.work());
    assert_eq!(work.as_mut().poll(&mut cx), Poll::Pending, "its wait is over: nothing to publish");
}

/// A shared bulkhead holds the fleet's slots: a call needs one of them as well as a local slot,
/// gives it back when it ends, and surplus slots go back to the fleet.
#[test]
fn a_shared_bulkhead_admits_only_what_the_fleet_has_left() {
    let (_, registry) =
        Stock::fleet(3, |b| b.bulkhead_instance("db", |b| b.shared(true).max_concurrent_calls(10).lease(1)));
    let bulkhead = Pipeline::builder(&registry, "db").bulkhead_with(|b| b).build::<(), std::io::Error>().unwrap();
    let (entered, release) = (std::sync::Barrier::new(4), std::sync::Barrier::new(4));
    let refused = std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                bulkhead
                    .execute(|| {
                        entered.wait();
                        release.wait();
                        Ok(())
                    })
                    .unwrap()
            });
        }
        entered.wait(); // three calls hold the fleet's three slots
        let refused = bulkhead.execute(|| Ok(())).unwrap_err();
        release.wait();
        refused
    });
    assert!(matches!(refused.rejection(), Some(Rejection::BulkheadFull { .. })), "{refused:?}");
    assert!(bulkhead.execute(|| Ok(())).is_ok(), "the slots came back when the calls ended");
}

/// A tower service under backpressure on a shared bulkhead reserves a fleet slot in `poll_ready`
/// as `execute` does: with the fleet's only slot reserved by one service, another is refused
/// (local slots are free, the fleet's are not), and the slot goes back to the fleet when the
/// reservation is dropped unused.
#[cfg(feature = "tower")]
#[test]
fn backpressure_on_a_shared_bulkhead_reserves_a_fleet_slot() {
    use std::task::{Context, Poll, Waker};
    use tower::{Layer, Service, service_fn};

    let (stock, registry) =
        Stock::fleet(1, |b| b.bulkhead_instance("db", |b| b.shared(true).max_concurrent_calls(10).lease(1)));
    let layer = Pipeline::builder(&registry, "db").bulkhead_with(|b| b).build::<u32, std::io::Error>().unwrap().layer();
    let echo = || service_fn(|n: u32| async move { Ok::<_, std::io::Error>(n) });
    let (mut first, mut second) = (layer.clone().backpressure().layer(echo()), layer.backpressure().layer(echo()));
    let mut cx = Context::from_waker(Waker::noop());
    // The store grants the fleet's one slot ahead of the first call.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while stock.left.load(Ordering::SeqCst) != 0 {
        assert!(std::time::Instant::now() < deadline, "the store never granted the slot");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(matches!(first.poll_ready(&mut cx), Poll::Ready(Ok(()))), "the fleet's slot, reserved");
    match second.poll_ready(&mut cx) {
        Poll::Ready(Err(e)) => {
            assert!(matches!(e.rejection(), Some(Rejection::BulkheadFull { .. })), "{e:?}")
        }
        other => panic!("the fleet has no slot left, yet the second reservation got {other:?}"),
    }
    drop(first); // the reservation, unused: its fleet slot is spare again
    assert!(matches!(second.poll_ready(&mut cx), Poll::Ready(Ok(()))), "the slot came back to the process");
}
