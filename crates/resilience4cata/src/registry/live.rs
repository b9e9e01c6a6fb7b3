//! Live configuration (SPEC §16): the builder's configuration kept segment by segment, so an update
//! replaces only what a file gave ([`Segments`]); `Registry::update_config` and its siblings
//! (feature `serde`), which re-resolve every live instance all or nothing; and
//! `Registry::watch_file` (features `serde` + `tokio`).
//!
//! How an instance takes new values without losing its state is each policy's `reconfigure`
//! (`PolicyKind::reconfigure`); the registry only decides which instances changed and hands each its
//! new configuration. See `docs/live-config.md`.

use std::sync::Arc;
#[cfg(feature = "serde")]
use std::sync::PoisonError;

#[cfg(feature = "serde")]
use super::Registry;
use super::policies::PolicyConfigs;
#[cfg(feature = "serde")]
use crate::error::RegistryError;
#[cfg(feature = "serde")]
use crate::events::{ConfigEvent, publish_config};
use crate::policy_list::Policy;

/// What a live configuration update changed: each instance whose resolved values differ, once per
/// policy, in no set order. Each also published [`ConfigEvent::Changed`](crate::ConfigEvent::Changed).
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use resilience4cata::{Pipeline, Policy, Registry};
///
/// let registry = Registry::builder().build()?;
/// let _quotes = Pipeline::builder(&registry, "quotes").rate_limiter().build::<u32, std::io::Error>()?;
/// let change = registry.update_toml("[instances.quotes.rate_limiter]\npermits = 5\n")?;
/// assert_eq!(change.changed, vec![("quotes".into(), Policy::RateLimiter)]);
/// assert_eq!(registry.snapshot().rate_limiters()[0].config.permits, 5);
/// # }
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConfigChange {
    /// `(instance id, policy)` for each instance whose values changed.
    pub changed: Vec<(Arc<str>, Policy)>,
}

/// The builder's configuration in call order: runs of builder closures, and what each
/// configuration file (or `RegistryConfig`) gave, each a segment overlaid on the ones before.
#[derive(Clone, Debug, Default)]
pub(crate) struct Segments(Vec<Segment>);

#[derive(Clone, Debug)]
struct Segment {
    from_file: bool,
    configs: PolicyConfigs,
}

impl Segments {
    /// The segment builder closures write to: the last one, unless a file came after it.
    pub(crate) fn closures(&mut self) -> &mut PolicyConfigs {
        if self.0.last().is_none_or(|s| s.from_file) {
            self.0.push(Segment { from_file: false, configs: PolicyConfigs::default() });
        }
        &mut self.0.last_mut().expect("pushed above").configs
    }

    /// A configuration file's (or `RegistryConfig`'s) segment, after everything before it.
    #[cfg(feature = "serde")]
    pub(crate) fn push_file(&mut self, config: super::config_file::RegistryConfig) {
        let mut configs = PolicyConfigs::default();
        config.apply(&mut configs);
        self.0.push(Segment { from_file: true, configs });
    }

    /// These segments with `file` in the place of what the files gave (the first file's place;
    /// the others are gone), or, if no file gave any, above every builder closure.
    #[cfg_attr(not(feature = "serde"), allow(dead_code))]
    fn with_file(&self, file: PolicyConfigs) -> Segments {
        let mut out = Vec::with_capacity(self.0.len() + 1);
        let mut file = Some(file);
        for segment in &self.0 {
            match segment.from_file {
                false => out.push(segment.clone()),
                true => {
                    if let Some(configs) = file.take() {
                        out.push(Segment { from_file: true, configs });
                    }
                }
            }
        }
        if let Some(configs) = file {
            out.push(Segment { from_file: true, configs });
        }
        Segments(out)
    }

    /// Every segment overlaid in order: the layers instances resolve through.
    pub(crate) fn merged(&self) -> PolicyConfigs {
        let mut merged = PolicyConfigs::default();
        for segment in &self.0 {
            merged.overlay(&segment.configs);
        }
        merged
    }
}

#[cfg(feature = "serde")]
use super::config_file::RegistryConfig;

#[cfg(feature = "serde")]
impl Registry {
    /// Replaces the configuration-file layer of a running registry (feature `serde`, SPEC §16):
    /// what `config_toml`, `config_file` or a [`RegistryConfig`] gave at build, in the place that
    /// layer had among the builder closures (a registry built without one gets it above the
    /// closures of each level). Every instance is resolved again in the usual order (attributes
    /// and builder closures keep their places); the update is all or nothing: one invalid value
    /// (the same codes as at build) and nothing changes. Changed instances keep their state and take
    /// the new values from their next call or decision on; each publishes
    /// [`ConfigEvent::Changed`]. See `docs/live-config.md`.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry, RegistryConfig};
    ///
    /// let registry = Registry::builder().build()?;
    /// let _pipeline = Pipeline::builder(&registry, "fetch").retry().build::<(), std::io::Error>()?;
    /// let config: RegistryConfig = toml::from_str("[defaults.retry]\nmax_attempts = 5\n").unwrap();
    /// let change = registry.update_config(config)?;
    /// assert_eq!(change.changed.len(), 1);
    /// assert_eq!(registry.snapshot().retries()[0].config.max_attempts, 5);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// `R4C-CFG-004` for a value out of range on its own, `R4C-REG-003` / `R4C-REG-004` /
    /// `R4C-REG-008` / `R4C-REG-010` / `R4C-REG-011` as when an instance is built, `R4C-CFG-005` when
    /// `shared` or `lease` of a live instance would change. Nothing changed.
    pub fn update_config(&self, config: RegistryConfig) -> Result<ConfigChange, RegistryError> {
        config.check_ranges("", "update")?;
        let mut file = PolicyConfigs::default();
        config.apply(&mut file);
        self.replace_file_layer(file)
    }

    /// Parses TOML (the key tree of `config_toml`) and applies it like
    /// [`update_config`](Self::update_config).
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let _pipeline = Pipeline::builder(&registry, "fetch").retry().build::<(), std::io::Error>()?;
    /// let err = registry.update_toml("[defaults.retry]\nmax_attempts = 4\n\n[instances.fetch.retry]\nmax_attempts = 0\n").unwrap_err();
    /// assert_eq!(err.code(), "R4C-CFG-004");
    /// assert!(err.to_string().contains("config:5: `instances.fetch.retry.max_attempts`"), "{err}");
    /// assert_eq!(registry.snapshot().retries()[0].config.max_attempts, 3); // nothing changed
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// `R4C-CFG-001` to `R4C-CFG-004` with the key path and line, then as
    /// [`update_config`](Self::update_config).
    pub fn update_toml(&self, text: &str) -> Result<ConfigChange, RegistryError> {
        self.update_from_text(text, "config")
    }

    /// Reads a TOML file and applies it like [`update_toml`](Self::update_toml); errors name the
    /// file's path and the line.
    ///
    /// ```
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// # let dir = std::env::temp_dir().join(format!("r4c-update-doc-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("resilience.toml");
    /// std::fs::write(&path, "[instances.fetch.retry]\nmax_attempts = 6\n").unwrap();
    /// let registry = Registry::builder().build()?;
    /// let _fetch = Pipeline::builder(&registry, "fetch").retry().build::<(), std::io::Error>()?;
    /// registry.update_file(&path)?;
    /// assert_eq!(registry.snapshot().retries()[0].config.max_attempts, 6);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    ///
    /// # Errors
    /// `R4C-CFG-001` when the file cannot be read, then as [`update_toml`](Self::update_toml).
    pub fn update_file(&self, path: impl AsRef<std::path::Path>) -> Result<ConfigChange, RegistryError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            RegistryError::new(
                crate::error::codes::CONFIG_SYNTAX,
                None,
                format!("{}: cannot read: {e}", path.display()),
            )
        })?;
        self.update_from_text(&text, &path.display().to_string())
    }

    pub(crate) fn update_from_text(&self, text: &str, origin: &str) -> Result<ConfigChange, RegistryError> {
        let config = RegistryConfig::from_toml(text, origin)?;
        let mut file = PolicyConfigs::default();
        config.apply(&mut file);
        self.replace_file_layer(file)
    }

    /// One update at a time: the segments with `file` in the file's place, every instance
    /// re-resolved over them, then (no lock held) the events.
    fn replace_file_layer(&self, file: PolicyConfigs) -> Result<ConfigChange, RegistryError> {
        let changed = {
            let mut segments = self.parts.segments.lock().unwrap_or_else(PoisonError::into_inner);
            let next = segments.with_file(file);
            let changed = self.parts.stores.reconfigure(&self.parts.inner, next.merged())?;
            *segments = next;
            changed
        };
        for (instance, policy) in &changed {
            publish_config(
                &self.parts.inner.listeners,
                ConfigEvent::Changed { instance: Arc::clone(instance), policy: *policy },
            );
        }
        Ok(ConfigChange { changed })
    }

    /// Publishes `ConfigEvent::Rejected` (a watched file that could not be applied).
    #[cfg(feature = "tokio")]
    fn rejected(&self, error: RegistryError) {
        publish_config(&self.parts.inner.listeners, ConfigEvent::Rejected { error });
    }
}

#[cfg(all(feature = "serde", feature = "tokio"))]
pub use watch::ConfigWatch;

#[cfg(all(feature = "serde", feature = "tokio"))]
mod watch {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::{Duration, SystemTime};

    use super::Registry;
    use crate::error::{RegistryError, codes};

    /// A watched configuration file ([`Registry::watch_file`]): the watch ends when this is
    /// dropped (or [`stop`](Self::stop) is called), or when the registry is gone.
    #[must_use = "the watch stops when this handle is dropped"]
    #[derive(Debug)]
    pub struct ConfigWatch {
        task: tokio::task::JoinHandle<()>,
        path: PathBuf,
    }

    impl ConfigWatch {
        /// The watched path.
        pub fn path(&self) -> &Path {
            &self.path
        }

        /// Stops watching (as dropping does).
        pub fn stop(self) {}
    }

    impl Drop for ConfigWatch {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    /// What a poll compares: the file's modification time, length and (on Unix) inode, so a
    /// rename over the file (editors, Kubernetes ConfigMaps) is seen as a change too.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    struct Fingerprint {
        modified: Option<SystemTime>,
        len: u64,
        inode: u64,
    }

    fn fingerprint(path: &Path) -> Option<Fingerprint> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(&meta);
        #[cfg(not(unix))]
        let inode = 0;
        Some(Fingerprint { modified: meta.modified().ok(), len: meta.len(), inode })
    }

    /// The rule that keeps a half-written file from being applied: a text read from the file is
    /// applied only when the next poll reads the same text again. A writer that truncates the
    /// file and then writes it (an in-place save) can be read between the two (an empty or cut
    /// text, which may even parse: an empty file is a valid configuration of defaults); read
    /// twice alike, one poll interval apart, it is taken as settled. A writer that stalls longer
    /// than an interval mid-write can still be read alike twice: write the new file beside it and
    /// rename it over (editors and ConfigMaps do), which no poll can see half done.
    #[derive(Debug, Default)]
    struct Settle {
        /// The last text applied (or refused): read again, nothing to do.
        last: String,
        /// A text read once that differs from `last`, waiting for a second read alike.
        pending: Option<String>,
    }

    impl Settle {
        fn new(applied: String) -> Self {
            Settle { last: applied, pending: None }
        }

        /// Whether a poll must read the file even though its metadata did not change: a pending
        /// text waits for its second reading.
        fn waiting(&self) -> bool {
            self.pending.is_some()
        }

        /// One poll's reading: the text to apply now, if it has settled.
        fn read(&mut self, text: String) -> Option<String> {
            if text == self.last {
                self.pending = None;
                return None;
            }
            if self.pending.as_deref() == Some(text.as_str()) {
                self.pending = None;
                self.last = text.clone();
                return Some(text);
            }
            self.pending = Some(text);
            None
        }
    }

    /// Whether a file last modified at `modified` may still change without its modification
    /// time moving (a file system with coarse timestamps): read it again until it is older.
    fn recent(modified: Option<SystemTime>) -> bool {
        modified.is_none_or(|m| SystemTime::now().duration_since(m).map_or(true, |age| age < Duration::from_secs(2)))
    }

    impl Registry {
        /// Applies the TOML file at `path` now and whenever it changes afterwards (features `serde` +
        /// `tokio`; SPEC §16), polling its metadata every second on the current tokio runtime: see
        /// [`watch_file_every`](Self::watch_file_every).
        ///
        /// # Errors
        /// As [`update_file`](Self::update_file) for the first application; `R4C-REG-010` outside a
        /// tokio runtime.
        pub fn watch_file(&self, path: impl AsRef<Path>) -> Result<ConfigWatch, RegistryError> {
            self.watch_file_every(path, Duration::from_secs(1))
        }

        /// [`watch_file`](Self::watch_file), polling every `interval` (at least 10 ms).
        ///
        /// Each poll reads the file's metadata (modification time, length, inode) and reads the
        /// file only when that changed, or while its modification time is under two seconds old
        /// (coarse file-system clocks); a text unlike the last one applied is applied like
        /// [`update_toml`](Self::update_toml) once it has settled: when the next poll reads the
        /// same text again, so a file caught half-written (truncated, then written in place) is
        /// not applied. A change therefore applies one or two intervals after it is written. A change publishes [`ConfigEvent::Changed`] per
        /// instance; a bad file leaves the running configuration as it was and publishes
        /// [`ConfigEvent::Rejected`] (once per distinct text). A missing file is waited for. Why
        /// polling rather than inotify and its kin: no dependency, and it sees every way a file
        /// is replaced (written in place, renamed over, a ConfigMap's symlink swapped) alike.
        ///
        /// ```
        /// use std::time::Duration;
        /// use resilience4cata::Registry;
        ///
        /// # let dir = std::env::temp_dir().join(format!("r4c-watch-doc-{}", std::process::id()));
        /// # std::fs::create_dir_all(&dir).unwrap();
        /// let path = dir.join("resilience.toml");
        /// std::fs::write(&path, "[defaults.retry]\nmax_attempts = 4\n").unwrap();
        /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        /// let registry = Registry::builder().build()?;
        /// let watch = runtime.block_on(async { registry.watch_file_every(&path, Duration::from_millis(50)) })?;
        /// assert_eq!(watch.path(), path.as_path());
        /// drop(watch); // stops watching
        /// # Ok::<(), resilience4cata::RegistryError>(())
        /// ```
        ///
        /// [`ConfigEvent::Changed`]: crate::ConfigEvent::Changed
        /// [`ConfigEvent::Rejected`]: crate::ConfigEvent::Rejected
        ///
        /// # Errors
        /// As [`watch_file`](Self::watch_file).
        pub fn watch_file_every(
            &self,
            path: impl AsRef<Path>,
            interval: Duration,
        ) -> Result<ConfigWatch, RegistryError> {
            let path = path.as_ref().to_path_buf();
            let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
                RegistryError::new(
                    codes::NO_ASYNC_CLOCK,
                    None,
                    "`watch_file` polls the file on a tokio runtime: call it inside one (`Handle::enter`)",
                )
            })?;
            let mut seen = fingerprint(&path);
            let text = std::fs::read_to_string(&path).map_err(|e| {
                RegistryError::new(codes::CONFIG_SYNTAX, None, format!("{}: cannot read: {e}", path.display()))
            })?;
            self.update_from_text(&text, &path.display().to_string())?;
            let parts = Arc::downgrade(&self.parts);
            let interval = interval.max(Duration::from_millis(10));
            let watched = path.clone();
            let task = runtime.spawn(async move {
                let mut settle = Settle::new(text);
                loop {
                    tokio::time::sleep(interval).await;
                    let Some(parts) = parts.upgrade() else { return };
                    let registry = Registry { parts };
                    let now = fingerprint(&watched);
                    let unchanged = now == seen && !recent(now.and_then(|f| f.modified));
                    if now.is_none() || (unchanged && !settle.waiting()) {
                        continue;
                    }
                    seen = now;
                    let Ok(text) = std::fs::read_to_string(&watched) else { continue };
                    let Some(text) = settle.read(text) else { continue };
                    if let Err(error) = registry.update_from_text(&text, &watched.display().to_string()) {
                        registry.rejected(error);
                    }
                }
            });
            Ok(ConfigWatch { task, path })
        }
    }

    #[cfg(test)]
    mod tests {
        use super::Settle;

        fn text(s: &str) -> String {
            s.to_owned()
        }

        #[test]
        fn a_new_text_is_applied_only_when_read_alike_twice() {
            let mut settle = Settle::new(text("a = 1"));
            assert!(!settle.waiting());
            assert_eq!(settle.read(text("a = 2")), None, "first reading: not yet");
            assert!(settle.waiting(), "the next poll reads the file even if its metadata is unchanged");
            assert_eq!(settle.read(text("a = 2")), Some(text("a = 2")), "second reading alike: applied");
            assert!(!settle.waiting());
            assert_eq!(settle.read(text("a = 2")), None, "applied once only");
        }

        #[test]
        fn a_file_caught_half_written_is_never_applied() {
            let mut settle = Settle::new(text("a = 1"));
            // Truncated, then written in place: a poll reads it empty, the next reads it whole.
            assert_eq!(settle.read(text("")), None);
            assert_eq!(settle.read(text("a = 3")), None, "a different text restarts the wait");
            assert_eq!(settle.read(text("a = 3")), Some(text("a = 3")));
            // Half a text, then back to what runs: nothing applied, nothing pending.
            assert_eq!(settle.read(text("a =")), None);
            assert_eq!(settle.read(text("a = 3")), None);
            assert!(!settle.waiting());
        }
    }
}
