//! When each instance's configuration last changed (SPEC §16), from `ConfigEvent::Changed`,
//! whichever way the change came (`PUT /config`, the application's own `update_toml`, a
//! `watch_file`), and the last watched file the registry refused: kept with the admin's counts,
//! served in `/counters` (`config`) and shown by the page.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use resilience4cata::ConfigEvent;
use serde::Serialize;

/// The last configuration the registry refused to apply and said so with `ConfigEvent::Rejected`
/// (a bad file under `watch_file`; a refused `update_toml` or `PUT /config` answers its caller
/// instead), as `/counters` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct LastRejected {
    /// Milliseconds since the Unix epoch when the admin saw it.
    pub(crate) at: u64,
    pub(crate) code: String,
    pub(crate) message: String,
}

/// When each instance's configuration last changed, as the admin saw the events since it
/// started: instance id → policy key → milliseconds since the Unix epoch (wall-clock time, for
/// people: the registry's own clock may be a manual one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct ConfigChanges {
    pub(crate) changed: BTreeMap<String, BTreeMap<String, u64>>,
    pub(crate) last_rejected: Option<LastRejected>,
}

impl ConfigChanges {
    /// Records `event`, seen at `at` (milliseconds since the Unix epoch).
    pub(crate) fn record(&mut self, event: &ConfigEvent, at: u64) {
        match event {
            ConfigEvent::Changed { instance, policy } => {
                let policies = self.changed.entry(instance.to_string()).or_default();
                policies.insert(policy_key(policy), at);
            }
            ConfigEvent::Rejected { error } => {
                self.last_rejected =
                    Some(LastRejected { at, code: error.code().to_owned(), message: error.to_string() });
            }
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
}

/// Now, in milliseconds since the Unix epoch (0 on a clock set before it).
pub(crate) fn now_millis() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A `Policy` as its configuration key, its `Debug` name in snake case: `RateLimiter` →
/// `rate_limiter`. (The rule of the metrics' labels, `counters::snake_case`, written again here:
/// `counters` imports this module.)
pub(crate) fn policy_key(policy: &impl std::fmt::Debug) -> String {
    let name = format!("{policy:?}");
    let mut key = String::with_capacity(name.len() + 2);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            key.push('_');
        }
        key.push(c.to_ascii_lowercase());
    }
    key
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use resilience4cata::{Policy, Registry};

    use super::*;

    #[test]
    fn the_last_change_per_instance_and_policy_is_kept() {
        let mut changes = ConfigChanges::default();
        let id: Arc<str> = Arc::from("shop::Api::get");
        let changed = |policy| ConfigEvent::Changed { instance: Arc::clone(&id), policy };
        changes.record(&changed(Policy::RateLimiter), 10);
        changes.record(&changed(Policy::CircuitBreaker), 11);
        changes.record(&changed(Policy::RateLimiter), 12);
        let expected: BTreeMap<String, u64> =
            [("circuit_breaker".to_owned(), 11), ("rate_limiter".to_owned(), 12)].into();
        assert_eq!(changes.changed["shop::Api::get"], expected);
        assert_eq!(changes.last_rejected, None);
    }

    #[test]
    fn a_rejected_file_keeps_its_code_and_text() {
        let registry = Registry::builder().build().unwrap();
        let error = registry.update_toml("[defaults.retry]\nmax_attempts = 0\n").unwrap_err();
        let mut changes = ConfigChanges::default();
        changes.record(&ConfigEvent::Rejected { error: error.clone() }, 7);
        let expected = LastRejected { at: 7, code: error.code().to_owned(), message: error.to_string() };
        assert_eq!(changes.last_rejected, Some(expected));
        assert!(changes.changed.is_empty());
    }

    #[test]
    fn policies_are_named_by_their_configuration_keys() {
        assert_eq!(policy_key(&Policy::RateLimiter), "rate_limiter");
        assert_eq!(policy_key(&Policy::CircuitBreaker), "circuit_breaker");
        assert_eq!(policy_key(&Policy::AdaptiveLimit), "adaptive_limit");
        assert_eq!(policy_key(&Policy::Retry), "retry");
    }
}
