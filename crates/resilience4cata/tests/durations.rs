//! Call and attempt duration histograms (feature `durations`), on the manual clock, so every
//! duration is exact: the generated methods (trait and class style, sync and async, scoped), the
//! pipeline, the pass path's allocations; and, without the feature, no histogram at all.

#[cfg(feature = "durations")]
mod on {
    use std::sync::Arc;
    use std::time::Duration;

    use resilience4cata::durations::{BUCKETS, DurationsSnapshot, HistogramSnapshot};
    use resilience4cata::testing::ManualClock;
    use resilience4cata::{Pipeline, Registry, resilient};
    use testkit::Down;
    use testkit::alloc::allocations_over;
    use testkit::now;

    testkit::count_allocations!();

    const MS: u64 = 1_000_000;

    /// A call of two attempts: the first 300 ms and fails, the retry waits 100 ms, the second
    /// 200 ms and succeeds (600 ms in all).
    #[resilient]
    pub trait Api {
        #[retry(max_attempts = 2, delay = "100ms")]
        #[circuit_breaker]
        async fn fetch(&self) -> Result<u32, Down>;

        #[retry(max_attempts = 2, delay = "100ms")]
        fn fetch_sync(&self) -> Result<u32, Down>;

        #[retry]
        fn quick(&self) -> Result<u32, Down>;

        #[retry]
        #[circuit_breaker]
        async fn quick_async(&self) -> Result<u32, Down>;
    }

    struct Backend {
        clock: ManualClock,
        calls: std::sync::atomic::AtomicU32,
    }

    impl Backend {
        /// 300 ms then `Err` on odd calls, 200 ms then `Ok` on even ones.
        fn next(&self) -> (Duration, Result<u32, Down>) {
            let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n.is_multiple_of(2) {
                (Duration::from_millis(300), Err(Down::Failed))
            } else {
                (Duration::from_millis(200), Ok(7))
            }
        }
    }

    impl Api for Backend {
        async fn fetch(&self) -> Result<u32, Down> {
            let (work, outcome) = self.next();
            self.clock.sleep(work).await;
            outcome
        }
        fn fetch_sync(&self) -> Result<u32, Down> {
            let (work, outcome) = self.next();
            self.clock.advance(work);
            outcome
        }
        fn quick(&self) -> Result<u32, Down> {
            Ok(1)
        }
        async fn quick_async(&self) -> Result<u32, Down> {
            Ok(1)
        }
    }

    fn backend(clock: &ManualClock) -> Backend {
        Backend { clock: clock.clone(), calls: Default::default() }
    }

    fn durations_of(registry: &Registry, id: &str) -> DurationsSnapshot {
        let snapshot = registry.snapshot();
        let found = snapshot.durations().iter().find(|d| &*d.instance == id);
        found.unwrap_or_else(|| panic!("no durations for {id}: {:?}", snapshot.durations())).clone()
    }

    /// The cumulative count at bound `le` (seconds).
    fn at(h: &HistogramSnapshot, le: f64) -> u64 {
        h.buckets.iter().find(|b| b.le == le).unwrap_or_else(|| panic!("no bucket {le}")).count
    }

    /// One call of 600 ms (bucket 1 s, not 0.5 s), attempts of 300 ms and 200 ms (both in 0.5 s,
    /// 200 ms alone in 0.25 s), sums exact.
    fn assert_one_call_of_two_attempts(d: &DurationsSnapshot) {
        assert_eq!((d.calls.count, d.calls.sum_nanos), (1, 600 * MS), "{d:?}");
        assert_eq!((at(&d.calls, 0.5), at(&d.calls, 1.0), at(&d.calls, f64::INFINITY)), (0, 1, 1));
        assert_eq!((d.attempts.count, d.attempts.sum_nanos), (2, 500 * MS), "{d:?}");
        assert_eq!((at(&d.attempts, 0.1), at(&d.attempts, 0.25), at(&d.attempts, 0.5)), (0, 1, 2));
        assert_eq!(d.calls.buckets.len(), BUCKETS.len() + 1);
        assert!(d.calls.buckets.windows(2).all(|w| w[0].count <= w[1].count && w[0].le < w[1].le));
        assert!((d.calls.sum_seconds() - 0.6).abs() < 1e-12);
    }

    #[test]
    fn an_async_method_records_its_call_around_the_retry_and_each_attempt_around_the_delegate() {
        let clock = ManualClock::new();
        let registry = testkit::no_jitter(&clock).build().unwrap();
        let api = ResilientApi::new(backend(&clock), &registry).unwrap();
        assert_eq!(testkit::block_on(api.fetch()), Ok(7));
        assert_eq!(clock.elapsed(), Duration::from_millis(600));
        let d = durations_of(&registry, concat!(module_path!(), "::Api::fetch"));
        assert_one_call_of_two_attempts(&d);
    }

    #[test]
    fn a_sync_method_records_the_same() {
        let clock = ManualClock::new();
        let registry = testkit::no_jitter(&clock).build().unwrap();
        let api = ResilientApi::new(backend(&clock), &registry).unwrap();
        assert_eq!(api.fetch_sync(), Ok(7));
        assert_one_call_of_two_attempts(&durations_of(&registry, concat!(module_path!(), "::Api::fetch_sync")));
    }

    #[test]
    fn a_scoped_wrapper_records_under_its_scoped_id_and_wrappers_of_one_id_share_it() {
        let clock = ManualClock::new();
        let registry = testkit::no_jitter(&clock).build().unwrap();
        let scoped = ResilientApi::builder(backend(&clock), &registry).scope("host-a").build().unwrap();
        let (first, second) = (
            ResilientApi::new(backend(&clock), &registry).unwrap(),
            ResilientApi::new(backend(&clock), &registry).unwrap(),
        );
        assert_eq!(scoped.fetch_sync(), Ok(7));
        let _ = (first.quick(), second.quick(), second.quick());
        let d = durations_of(&registry, concat!("host-a/", module_path!(), "::Api::fetch_sync"));
        assert_one_call_of_two_attempts(&d);
        assert_eq!(durations_of(&registry, concat!(module_path!(), "::Api::quick")).calls.count, 3);
        // Nothing recorded under the unscoped id of the scoped wrapper's method.
        let unscoped = durations_of(&registry, concat!(module_path!(), "::Api::fetch_sync"));
        assert_eq!((unscoped.calls.count, unscoped.attempts.count), (0, 0));
        // Zero-duration calls land in the first bucket.
        assert_eq!(at(&durations_of(&registry, concat!(module_path!(), "::Api::quick")).calls, 0.001), 3);
    }

    struct Client {
        clock: ManualClock,
        calls: std::sync::atomic::AtomicU32,
        policies: ClientPolicies,
    }

    #[resilient(policies = policies)]
    impl Client {
        #[retry(max_attempts = 2, delay = "100ms")]
        async fn get(&self) -> Result<u32, Down> {
            let n = self.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let (work, outcome) = if n == 0 {
                (Duration::from_millis(300), Err(Down::Failed))
            } else {
                (Duration::from_millis(200), Ok(7))
            };
            self.clock.sleep(work).await;
            outcome
        }
    }

    #[test]
    fn the_class_style_records_the_same_under_its_derived_id() {
        let clock = ManualClock::new();
        let registry = testkit::no_jitter(&clock).build().unwrap();
        let client = Client {
            clock: clock.clone(),
            calls: Default::default(),
            policies: ClientPolicies::new(&registry).unwrap(),
        };
        assert_eq!(testkit::block_on(client.get()), Ok(7));
        assert_one_call_of_two_attempts(&durations_of(&registry, concat!(module_path!(), "::Client::get")));
    }

    #[test]
    fn a_pipeline_records_under_its_id_sync_and_async() {
        let clock = ManualClock::new();
        let registry = testkit::no_jitter(&clock).build().unwrap();
        let pipeline = Pipeline::builder(&registry, "prices")
            .retry_with(|r| r.max_attempts(2).delay(Duration::from_millis(100)))
            .circuit_breaker()
            .build::<u32, Down>()
            .unwrap();
        let backend = backend(&clock);
        let outcome = testkit::block_on(pipeline.execute_async(|| {
            let (work, outcome) = backend.next();
            let clock = clock.clone();
            async move {
                clock.sleep(work).await;
                outcome
            }
        }));
        assert_eq!(outcome, Ok(7));
        assert_one_call_of_two_attempts(&durations_of(&registry, "prices"));

        let sync = Pipeline::builder(&registry, "prices-sync")
            .retry_with(|r| r.max_attempts(2).delay(Duration::from_millis(100)))
            .build::<u32, Down>()
            .unwrap();
        let outcome = sync.execute(|| {
            let (work, outcome) = backend.next();
            clock.advance(work);
            outcome
        });
        assert_eq!(outcome, Ok(7));
        assert_one_call_of_two_attempts(&durations_of(&registry, "prices-sync"));
    }

    #[test]
    fn the_timed_pass_path_allocates_nothing() {
        let clock = ManualClock::new();
        let registry = testkit::no_jitter(&clock).build().unwrap();
        let api = ResilientApi::new(backend(&clock), &registry).unwrap();
        let pipeline = Pipeline::builder(&registry, "p").retry().circuit_breaker().build::<u32, Down>().unwrap();
        let _ = (
            api.quick(),
            now(api.quick_async()),
            pipeline.execute(|| Ok(1)),
            now(pipeline.execute_async(|| async { Ok(1) })),
        );
        assert_eq!(allocations_over(1000, || api.quick()), 0);
        assert_eq!(allocations_over(1000, || now(api.quick_async())), 0);
        assert_eq!(allocations_over(1000, || pipeline.execute(|| Ok(1))), 0);
        assert_eq!(allocations_over(1000, || now(pipeline.execute_async(|| async { Ok(1) }))), 0);
        assert_eq!(durations_of(&registry, concat!(module_path!(), "::Api::quick")).calls.count, 1001);
        assert_eq!(durations_of(&registry, concat!(module_path!(), "::Api::quick_async")).attempts.count, 1001);
        assert_eq!(durations_of(&registry, "p").attempts.count, 2002);
    }

    #[test]
    fn the_snapshot_lists_ids_in_order_and_names_the_ids_it_has() {
        let registry = Registry::builder().build().unwrap();
        let _b = Pipeline::builder(&registry, "b").build::<u32, Down>().unwrap();
        let _a = Pipeline::builder(&registry, "a").build::<u32, Down>().unwrap();
        let ids: Vec<Arc<str>> = registry.snapshot().durations().iter().map(|d| Arc::clone(&d.instance)).collect();
        assert_eq!(ids, [Arc::from("a"), Arc::from("b")]);
    }
}

/// Without the feature nothing is timed and nothing is listed.
#[cfg(not(feature = "durations"))]
#[test]
fn without_the_feature_no_durations_are_listed() {
    use resilience4cata::{Pipeline, resilient};
    use testkit::Down;

    #[resilient]
    pub trait Api {
        #[retry]
        fn get(&self) -> Result<u32, Down>;
    }
    struct Backend;
    impl Api for Backend {
        fn get(&self) -> Result<u32, Down> {
            Ok(1)
        }
    }
    let (_clock, registry) = testkit::manual();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    let pipeline = Pipeline::builder(&registry, "p").retry().build::<u32, Down>().unwrap();
    assert_eq!((api.get(), pipeline.execute(|| Ok(2))), (Ok(1), Ok(2)));
    assert_eq!(registry.snapshot().retries().len(), 2);
    assert!(registry.snapshot().durations().is_empty());
    assert_eq!(std::mem::size_of::<resilience4cata::__private::CallTimer>(), 0);
}
