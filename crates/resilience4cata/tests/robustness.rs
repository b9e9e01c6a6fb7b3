//! Inputs at the edges: configuration out of range, durations at `Duration::MAX`, and configuration
//! nothing uses. Each is a coded error or a defined behaviour, never a panic.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

use resilience4cata::{GiveUpReason, Registry, RetryEvent, UnusedConfig, resilient};
use testkit::Down;

#[resilient]
pub trait Api {
    #[retry(max_attempts = 2, delay = "10ms")]
    fn fetch(&self, failures: &AtomicU32) -> Result<u32, Down>;

    #[retry(config = "external")]
    fn external(&self) -> Result<u32, Down>;

    #[timeout(duration = "1s")]
    async fn slow(&self) -> Result<u32, Down>;
}

struct Backend;

impl Api for Backend {
    fn fetch(&self, failures: &AtomicU32) -> Result<u32, Down> {
        testkit::fail_first(failures, Down::Failed, 1)
    }
    fn external(&self) -> Result<u32, Down> {
        Ok(2)
    }
    async fn slow(&self) -> Result<u32, Down> {
        tokio::task::yield_now().await; // pending once: the timer is armed
        Ok(3)
    }
}

fn id(method: &str) -> String {
    format!("{}::Api::{method}", module_path!())
}

#[test]
fn a_budget_window_under_one_second_is_refused_with_a_code() {
    let registry = Registry::builder()
        .retry("external", |r| r)
        .retry_instance(id("fetch"), |r| r.budget_percent(10.0).budget_window(Duration::from_nanos(1)))
        .build()
        .unwrap();
    let err = ResilientApi::new(Backend, &registry).err().expect("a 1 ns window wraps the budget's tenths");
    assert_eq!(err.code(), "R4C-REG-003");
    assert!(err.message().contains("budget_window"), "{err}");
}

#[cfg(feature = "serde")]
#[test]
fn out_of_range_values_in_a_file_are_cfg_004_at_build() {
    let err = Registry::builder()
        .config_toml("[instances.\"robustness::Api::fetch\".retry]\nmax_attempts = 0\n")
        .build()
        .unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-004");
    assert!(err.to_string().contains("config:2: `instances.robustness::Api::fetch.retry.max_attempts`"), "{err}");
}

#[cfg(feature = "serde")]
#[test]
fn a_non_ascii_duration_in_a_file_is_cfg_003() {
    let err = Registry::builder().config_toml("[defaults.retry]\ndelay = \"€5s\"\n").build().unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-003");
}

#[test]
fn a_retry_wait_of_duration_max_on_the_system_clock_waits_until_shutdown() {
    let registry = Registry::builder()
        .retry("external", |r| r)
        .retry_instance(id("fetch"), |r| r.delay(Duration::MAX).max_delay(Duration::MAX))
        .listen(|e: &RetryEvent| assert!(!matches!(e, RetryEvent::GaveUp { reason: GiveUpReason::MaxAttempts, .. })))
        .build()
        .unwrap();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    std::thread::scope(|s| {
        let call = s.spawn(|| api.fetch(&AtomicU32::new(1)));
        std::thread::sleep(Duration::from_millis(20));
        registry.shutdown();
        assert_eq!(call.join().expect("no overflow of Instant + Duration::MAX"), Err(Down::Failed));
    });
}

#[test]
fn a_timeout_of_duration_max_on_the_system_clock_never_fires() {
    let registry = Registry::builder()
        .retry("external", |r| r)
        .timeout_instance(id("slow"), |t| t.duration(Duration::MAX))
        .build()
        .unwrap();
    let api = ResilientApi::new(Backend, &registry).unwrap();
    assert_eq!(testkit::block_on(api.slow()), Ok(3), "the deadline saturates instead of overflowing");
}

#[test]
fn unused_config_lists_what_no_wrapper_resolved() {
    let registry = Registry::builder()
        .retry("external", |r| r.max_attempts(4))
        .retry("internal", |r| r.max_attempts(2))
        .retry_instance(id("fetch"), |r| r.max_attempts(3))
        .retry_instance("robustness::Api::fecth", |r| r.max_attempts(3))
        .bulkhead_instance("robustness::Api::gone", |b| b.max_concurrent_calls(2))
        .build()
        .unwrap();
    assert_eq!(registry.unused_config().len(), 5, "{:?}", registry.unused_config());
    let _api = ResilientApi::new(Backend, &registry).unwrap();
    assert_eq!(
        registry.unused_config(),
        vec![
            UnusedConfig::Named { policy: "retry", name: "internal".into() },
            UnusedConfig::Instance { policy: "bulkhead", id: "robustness::Api::gone".into() },
            UnusedConfig::Instance { policy: "retry", id: "robustness::Api::fecth".into() },
        ]
        .into_iter()
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect::<Vec<_>>(),
    );
}
