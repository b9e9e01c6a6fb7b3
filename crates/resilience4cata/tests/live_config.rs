//! Live configuration (SPEC §16): `update_config` / `update_toml` / `update_file` on a running
//! registry: the file layer replaced in its place, every instance re-resolved, all or nothing,
//! `ConfigChange` and `ConfigEvent`, and `R4C-CFG-005` for what cannot change live.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use resilience4cata::events::AnyEvent;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{
    ConfigEvent, Pipeline, Policy, Registry, RegistryConfig, RegistryError, Rejection, ResilienceError, resilient,
};

#[derive(Debug, PartialEq, ResilienceError)]
pub enum ShopError {
    Down,
    #[rejection]
    Rejected(Rejection),
}

#[resilient]
pub trait Shop {
    #[retry(max_attempts = 2, delay = "0")]
    fn stock(&self) -> Result<u32, ShopError>;

    #[retry(delay = "0")]
    fn price(&self) -> Result<u32, ShopError>;
}

struct Backend;

impl Shop for Backend {
    fn stock(&self) -> Result<u32, ShopError> {
        Err(ShopError::Down)
    }

    fn price(&self) -> Result<u32, ShopError> {
        Err(ShopError::Down)
    }
}

const STOCK: &str = "live_config::Shop::stock";
const PRICE: &str = "live_config::Shop::price";

fn retries(registry: &Registry, id: &str) -> u32 {
    registry.snapshot().retries().iter().find(|r| &*r.instance == id).expect("built").config.max_attempts
}

/// Every `ConfigEvent` a registry publishes to its listeners.
fn heard(
    builder: resilience4cata::RegistryBuilder,
) -> (resilience4cata::RegistryBuilder, Arc<Mutex<Vec<ConfigEvent>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    (builder.listen(move |e: &ConfigEvent| sink.lock().unwrap().push(e.clone())), seen)
}

#[test]
fn an_update_reresolves_every_instance_and_reports_what_changed() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let (builder, seen) = heard(testing::registry(&clock).config_toml("[defaults.retry]\nmax_attempts = 3\n"));
    let registry = builder.build()?;
    let mut subscription = registry.subscribe(16);
    let shop = ResilientShop::new(Backend, &registry)?;
    assert_eq!((retries(&registry, STOCK), retries(&registry, PRICE)), (2, 3));

    let change = registry.update_toml("[defaults.retry]\nmax_attempts = 5\n")?;
    // The attribute (`max_attempts = 2`) sits above the file's defaults: only `price` changed.
    assert_eq!(change.changed, vec![(Arc::from(PRICE), Policy::Retry)]);
    assert_eq!((retries(&registry, STOCK), retries(&registry, PRICE)), (2, 5));
    assert_eq!(*seen.lock().unwrap(), vec![ConfigEvent::Changed { instance: PRICE.into(), policy: Policy::Retry }]);
    match subscription.try_recv() {
        Some(AnyEvent::Config(ConfigEvent::Changed { instance, policy })) => {
            assert_eq!((&*instance, policy), (PRICE, Policy::Retry));
        }
        other => panic!("expected the change, got {other:?}"),
    }
    // The wrapper built before the update calls with the new values.
    assert_eq!(shop.price(), Err(ShopError::Down));
    let attempts = registry.snapshot();
    let _ = attempts;

    // An instance override in the file wins over the attribute.
    let change = registry.update_toml(&format!(
        "[defaults.retry]\nmax_attempts = 5\n[instances.\"{STOCK}\".retry]\nmax_attempts = 6\n"
    ))?;
    assert_eq!(change.changed, vec![(Arc::from(STOCK), Policy::Retry)]);
    assert_eq!(retries(&registry, STOCK), 6);

    // The same file again changes nothing and publishes nothing.
    let before = seen.lock().unwrap().len();
    let change = registry.update_toml(&format!(
        "[defaults.retry]\nmax_attempts = 5\n[instances.\"{STOCK}\".retry]\nmax_attempts = 6\n"
    ))?;
    assert!(change.changed.is_empty());
    assert_eq!(seen.lock().unwrap().len(), before);
    Ok(())
}

#[test]
fn a_wrapper_built_before_the_update_makes_the_new_number_of_attempts() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build()?;
    let calls = Arc::new(Mutex::new(0));
    let pipeline = Pipeline::builder(&registry, "fetch").retry_with(|r| r.delay(Duration::ZERO)).build::<(), &str>()?;
    let count = |p: &Pipeline<(), &str>| {
        let before = *calls.lock().unwrap();
        let _ = p.execute(|| {
            *calls.lock().unwrap() += 1;
            Err("down")
        });
        *calls.lock().unwrap() - before
    };
    assert_eq!(count(&pipeline), 3, "the built-in default");
    registry.update_toml("[instances.fetch.retry]\nmax_attempts = 5\n")?;
    assert_eq!(count(&pipeline), 5);
    registry.update_toml("")?; // the file layer emptied: back to the defaults
    assert_eq!(count(&pipeline), 3);
    Ok(())
}

#[test]
fn one_bad_value_anywhere_changes_nothing() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).config_toml("[defaults.retry]\nmax_attempts = 3\n").build()?;
    let _shop = ResilientShop::new(Backend, &registry)?;
    let _fetch = Pipeline::builder(&registry, "fetch").retry().build::<(), &str>()?;

    // The last instance of the file is out of range: the code, the key path and the line.
    let text = "[defaults.retry]\nmax_attempts = 9\n\n[instances.fetch.retry]\nmax_attempts = 4\n\n\
                [instances.\"live_config::Shop::price\".retry]\nmax_attempts = 0\n";
    let err = registry.update_toml(text).unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-004");
    assert!(err.to_string().contains("config:8: `instances.live_config::Shop::price.retry.max_attempts`"), "{err}");
    assert_eq!((retries(&registry, PRICE), retries(&registry, "fetch")), (3, 3), "nothing changed");

    // A rule between keys, judged per instance: the last instance breaks it, the first is valid.
    let text = "[instances.fetch.retry]\nmax_attempts = 4\n\n\
                [instances.\"live_config::Shop::price\".retry]\ndelay = \"10s\"\nmax_delay = \"1s\"\n";
    let err = registry.update_toml(text).unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-003", Some(PRICE)), "{err}");
    assert_eq!((retries(&registry, PRICE), retries(&registry, "fetch")), (3, 3), "nothing changed");

    // A named configuration an instance chose that the update drops.
    let registry = testing::registry(&clock).config_toml("[configs.slow.retry]\nmax_attempts = 2\n").build()?;
    let _named = Pipeline::builder(&registry, "named").retry_config("slow").build::<(), &str>()?;
    let err = registry.update_toml("[configs.fast.retry]\nmax_attempts = 2\n").unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-004", Some("named")));
    assert_eq!(retries(&registry, "named"), 2);

    // Syntax and unknown keys: the same codes and lines as at build.
    assert_eq!(registry.update_toml("[defaults.retry\n").unwrap_err().code(), "R4C-CFG-001");
    let err = registry.update_toml("[defaults.retry]\nmax_atempts = 2\n").unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-002");
    assert!(err.to_string().contains("config:2"), "{err}");
    Ok(())
}

#[test]
fn builder_closures_keep_their_places_around_the_file() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock)
        .retry_defaults(|r| r.max_attempts(2).budget_min_retries_per_second(7)) // below the file
        .config_toml("[defaults.retry]\nmax_attempts = 3\n")
        .retry_instance("after", |r| r.max_attempts(8)) // above the file
        .build()?;
    let _before = Pipeline::builder(&registry, "before").retry().build::<(), &str>()?;
    let _after = Pipeline::builder(&registry, "after").retry().build::<(), &str>()?;
    assert_eq!((retries(&registry, "before"), retries(&registry, "after")), (3, 8));

    registry.update_toml("[defaults.retry]\nmax_attempts = 4\n[instances.after.retry]\nmax_attempts = 5\n")?;
    assert_eq!(retries(&registry, "before"), 4, "the file is above the closure written before it");
    assert_eq!(retries(&registry, "after"), 8, "the closure written after the file stays above it");

    // The file no longer sets `max_attempts`: the closure below shows through again.
    registry.update_toml("")?;
    assert_eq!(retries(&registry, "before"), 2);
    let snapshot = registry.snapshot();
    let before = snapshot.retries().iter().find(|r| &*r.instance == "before").unwrap();
    assert_eq!(before.config.budget_min_retries_per_second, 7, "the closure's other keys stayed throughout");
    Ok(())
}

#[test]
fn a_registry_built_without_a_file_gets_it_above_every_closure() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).retry_instance("fetch", |r| r.max_attempts(2)).build()?;
    let _fetch = Pipeline::builder(&registry, "fetch").retry().build::<(), &str>()?;
    registry.update_toml("[instances.fetch.retry]\nmax_attempts = 6\n")?;
    assert_eq!(retries(&registry, "fetch"), 6);
    Ok(())
}

#[test]
fn update_config_and_update_file_take_the_same_tree() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build()?;
    let _fetch = Pipeline::builder(&registry, "fetch").retry().build::<(), &str>()?;
    let config: RegistryConfig = toml::from_str("[instances.fetch.retry]\nmax_attempts = 7\n").unwrap();
    assert_eq!(registry.update_config(config)?.changed, vec![(Arc::from("fetch"), Policy::Retry)]);
    assert_eq!(retries(&registry, "fetch"), 7);
    let config: RegistryConfig = toml::from_str("[instances.fetch.retry]\nmax_attempts = 0\n").unwrap();
    let err = registry.update_config(config).unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-004");
    assert!(err.to_string().contains("`instances.fetch.retry.max_attempts`"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resilience.toml");
    std::fs::write(&path, "[instances.fetch.retry]\nmax_attempts = 4\n").unwrap();
    registry.update_file(&path)?;
    assert_eq!(retries(&registry, "fetch"), 4);
    std::fs::write(&path, "[instances.fetch.retry]\n\nmax_attempts = \"four\"\n").unwrap();
    let err = registry.update_file(&path).unwrap_err();
    assert_eq!(err.code(), "R4C-CFG-003");
    assert!(err.to_string().contains(&format!("{}:3", path.display())), "{err}");
    assert_eq!(registry.update_file(dir.path().join("missing.toml")).unwrap_err().code(), "R4C-CFG-001");
    assert_eq!(retries(&registry, "fetch"), 4);
    Ok(())
}

#[test]
fn shared_and_lease_cannot_change_on_a_live_instance() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).build()?;
    let _quotes = Pipeline::builder(&registry, "quotes").rate_limiter().build::<(), ShopError>()?;
    let _slots = Pipeline::builder(&registry, "slots").bulkhead().build::<(), ShopError>()?;
    let _breaker = Pipeline::builder(&registry, "breaker").circuit_breaker().build::<(), ShopError>()?;
    for (text, key) in [
        ("[instances.quotes.rate_limiter]\nlease = 5\n", "lease"),
        ("[instances.quotes.rate_limiter]\nshared = true\n", "shared"),
        ("[instances.slots.bulkhead]\nlease = 2\n", "lease"),
        ("[instances.breaker.circuit_breaker]\nshared = true\n", "shared"),
    ] {
        // Also on a registry without a store: the key is named, not the missing store.
        let err = registry.update_toml(&format!("[defaults.retry]\nmax_attempts = 4\n{text}")).unwrap_err();
        assert_eq!(err.code(), "R4C-CFG-005", "{err}");
        assert!(err.message().contains(&format!("`{key}`")), "{err}");
    }
    // Writing the value it already has is no change.
    let change = registry.update_toml("[instances.quotes.rate_limiter]\nshared = false\npermits = 9\n")?;
    assert_eq!(change.changed, vec![(Arc::from("quotes"), Policy::RateLimiter)]);
    // For an id no instance uses yet, they apply when it is built (here: without a store, REG-011).
    registry.update_toml("[instances.later.rate_limiter]\nshared = true\n")?;
    let err = Pipeline::builder(&registry, "later").rate_limiter().build::<(), ShopError>().unwrap_err();
    assert_eq!(err.code(), "R4C-REG-011");
    Ok(())
}

#[test]
fn ids_that_share_an_instance_must_still_agree_after_the_update() -> Result<(), RegistryError> {
    let clock = ManualClock::new();
    let registry = testing::registry(&clock).config_toml("[defaults.retry]\nmax_attempts = 4\n").build()?;
    // Two users of one id: one writes `max_attempts = 4` itself, the other takes the default 4.
    let _a = Pipeline::builder(&registry, "shared").retry_with(|r| r.max_attempts(4)).build::<(), &str>()?;
    let _b = Pipeline::builder(&registry, "shared").retry().build::<(), &str>()?;
    let err = registry.update_toml("[defaults.retry]\nmax_attempts = 5\n").unwrap_err();
    assert_eq!((err.code(), err.instance()), ("R4C-REG-008", Some("shared")), "{err}");
    assert_eq!(retries(&registry, "shared"), 4);
    Ok(())
}
