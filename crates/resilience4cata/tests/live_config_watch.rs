//! `Registry::watch_file` (SPEC §16) on real files: rewritten in place, renamed over (an editor's
//! atomic save), a Kubernetes ConfigMap's symlink swapped, a bad file refused, the watch dropped.

use std::path::Path;
use std::time::Duration;

use resilience4cata::events::{AnyEvent, Subscription};
use resilience4cata::{ConfigEvent, Pipeline, Policy, Registry, RegistryError};

const POLL: Duration = Duration::from_millis(20);

fn retries(registry: &Registry) -> u32 {
    registry.snapshot().retries()[0].config.max_attempts
}

fn file(max_attempts: u32) -> String {
    format!("[instances.fetch.retry]\nmax_attempts = {max_attempts}\n")
}

/// The next configuration event, waiting up to a generous bound (not a timing assertion: a missing
/// event fails after it, a present one returns as soon as it is seen).
async fn next_config_event(events: &mut Subscription) -> ConfigEvent {
    for _ in 0..1000 {
        while let Some(event) = events.try_recv() {
            if let AnyEvent::Config(e) = event {
                return e;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no configuration event within 10 s");
}

fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[tokio::test]
async fn a_watched_file_is_applied_on_every_change_and_a_bad_one_is_refused() -> Result<(), RegistryError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resilience.toml");
    std::fs::write(&path, file(2)).unwrap();
    let registry = Registry::builder().build()?;
    let _fetch = Pipeline::builder(&registry, "fetch").retry().build::<(), std::io::Error>()?;
    let mut events = registry.subscribe(64);
    let watch = registry.watch_file_every(&path, POLL)?;
    assert_eq!(retries(&registry), 2, "applied at once");
    let changed = ConfigEvent::Changed { instance: "fetch".into(), policy: Policy::Retry };
    assert_eq!(next_config_event(&mut events).await, changed);

    // Rewritten in place.
    std::fs::write(&path, file(4)).unwrap();
    assert_eq!(next_config_event(&mut events).await, changed);
    assert_eq!(retries(&registry), 4);

    // A bad file: refused with its code and line, the running configuration kept.
    std::fs::write(&path, "[instances.fetch.retry]\n\nmax_attempts = 0\n").unwrap();
    match next_config_event(&mut events).await {
        ConfigEvent::Rejected { error } => {
            assert_eq!(error.code(), "R4C-CFG-004");
            assert!(error.to_string().contains(&format!("{}:3", path.display())), "{error}");
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    assert_eq!(retries(&registry), 4);

    // Renamed over, as editors save and as a fixed file comes back.
    write_atomically(&path, &file(5));
    assert_eq!(next_config_event(&mut events).await, changed);
    assert_eq!(retries(&registry), 5);

    // Dropped: a later change is not applied.
    drop(watch);
    std::fs::write(&path, file(6)).unwrap();
    tokio::time::sleep(POLL * 10).await;
    assert_eq!(retries(&registry), 5);
    assert!(events.try_recv().is_none());
    Ok(())
}

#[cfg(unix)]
#[tokio::test]
async fn a_configmap_whose_symlink_is_swapped_is_applied() -> Result<(), RegistryError> {
    use std::os::unix::fs::symlink;
    // Kubernetes mounts a ConfigMap as `key -> ..data/key`, `..data -> ..<timestamp>`, and
    // updates it by renaming a new `..data` symlink over the old one.
    let dir = tempfile::tempdir().unwrap();
    let version = |name: &str, text: &str| {
        std::fs::create_dir(dir.path().join(name)).unwrap();
        std::fs::write(dir.path().join(name).join("resilience.toml"), text).unwrap();
    };
    version("..v1", &file(2));
    symlink("..v1", dir.path().join("..data")).unwrap();
    symlink("..data/resilience.toml", dir.path().join("resilience.toml")).unwrap();
    let path = dir.path().join("resilience.toml");

    let registry = Registry::builder().build()?;
    let _fetch = Pipeline::builder(&registry, "fetch").retry().build::<(), std::io::Error>()?;
    let mut events = registry.subscribe(64);
    let _watch = registry.watch_file_every(&path, POLL)?;
    assert_eq!(retries(&registry), 2);
    let _ = next_config_event(&mut events).await;

    version("..v2", &file(7));
    symlink("..v2", dir.path().join("..data_tmp")).unwrap();
    std::fs::rename(dir.path().join("..data_tmp"), dir.path().join("..data")).unwrap();
    std::fs::remove_dir_all(dir.path().join("..v1")).unwrap();
    assert_eq!(
        next_config_event(&mut events).await,
        ConfigEvent::Changed { instance: "fetch".into(), policy: Policy::Retry }
    );
    assert_eq!(retries(&registry), 7);
    Ok(())
}

#[test]
fn watching_needs_a_runtime_and_a_readable_file() -> Result<(), RegistryError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resilience.toml");
    std::fs::write(&path, file(2)).unwrap();
    let registry = Registry::builder().build()?;
    assert_eq!(registry.watch_file(&path).unwrap_err().code(), "R4C-REG-010");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let _guard = runtime.enter();
    assert_eq!(registry.watch_file(dir.path().join("missing.toml")).unwrap_err().code(), "R4C-CFG-001");
    std::fs::write(&path, "[defaults.retry]\nmax_attempts = 0\n").unwrap();
    assert_eq!(registry.watch_file(&path).unwrap_err().code(), "R4C-CFG-004", "a bad file is refused at once");
    Ok(())
}
