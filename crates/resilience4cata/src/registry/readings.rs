//! Every policy snapshot's readings (`readings.rs`), from the one list of policies: an exporter
//! reads them from a [`RegistrySnapshot`] without naming a policy.

use super::RegistrySnapshot;
use crate::readings::{Reading, Readings, Series};
use crate::registry::for_each_policy;

/// `RegistrySnapshot::readings` and `series`, over each policy's snapshot list.
macro_rules! readings_parts {
    ($({ $module:ident: $policy:ident($builder:ident, $snapshot:ident), $event:ident => $variant:ident,
        $human:literal, $list:ident, $($rest:tt)* })*) => {
        $(use crate::$module::$snapshot;)*

        impl RegistrySnapshot {
            /// Every instance's readings, policy by policy in nesting order, instances by id:
            /// `out(instance, reading)`.
            pub fn readings(&self, mut out: impl FnMut(&str, Reading)) {
                $(for snapshot in self.$list() {
                    let instance = Readings::instance(snapshot);
                    Readings::read(snapshot, &mut |reading| out(instance, reading));
                })*
            }

            /// Every series [`readings`](Self::readings) may give, with its help text: one list per
            /// policy's snapshot type, in nesting order.
            pub fn series() -> impl Iterator<Item = &'static Series> {
                [$(<$snapshot as Readings>::SERIES),*].into_iter().flatten()
            }
        }
    };
}

for_each_policy!(readings_parts);

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::readings::SeriesKind::{Counter, Gauge};
    use crate::{Pipeline, Registry, RegistrySnapshot};

    /// One instance of every policy kind: each kind's series, by name and extra label, with its
    /// kind and value as the snapshot has it right after build; and no series listed but not given.
    #[test]
    fn every_policy_kind_gives_its_series() {
        let registry = Registry::builder().build().unwrap();
        let _calls = Pipeline::builder(&registry, "shop::Api::get")
            .retry_with(|r| r.budget_percent(20.0))
            .circuit_breaker()
            .rate_limiter_with(|r| r.permits(7))
            .adaptive_limit_with(|a| a.initial_limit(10))
            .timeout()
            .bulkhead_with(|b| b.max_concurrent_calls(3))
            .build::<u32, std::io::Error>()
            .unwrap();
        // A pipeline takes a retry or a hedge: the hedge on its own (it lists no series).
        let _search = Pipeline::builder(&registry, "shop::Api::search").hedge().build::<u32, std::io::Error>().unwrap();
        let snapshot = registry.snapshot();
        assert_eq!(snapshot.hedges().len(), 1);
        let mut seen = BTreeMap::new();
        snapshot.readings(|instance, reading| {
            // With the feature `chaos` every pipeline has an injection point: the hedged one's aside.
            if cfg!(feature = "chaos") && instance == "shop::Api::search" {
                return;
            }
            assert_eq!(instance, "shop::Api::get");
            assert!(RegistrySnapshot::series().any(|s| s == reading.series), "{reading:?} not listed");
            let key = (reading.series.name, reading.label);
            let previous = seen.insert(key, (reading.series.kind, reading.value.to_string()));
            assert!(previous.is_none(), "{key:?} given twice");
        });
        let allowed = snapshot.retries()[0].budget.unwrap().allowed_retries;
        let state = |label| ("circuit_breaker_state", Some(("state", label)));
        #[allow(unused_mut)]
        let mut expected = BTreeMap::from([
            (("retry_budget_allowed_retries", None), (Gauge, allowed.to_string())),
            (("retry_budget_retries", None), (Gauge, "0".into())),
            (state("closed"), (Gauge, "1".into())),
            (state("open"), (Gauge, "0".into())),
            (state("half_open"), (Gauge, "0".into())),
            (state("forced_open"), (Gauge, "0".into())),
            (state("disabled"), (Gauge, "0".into())),
            (("circuit_breaker_failure_rate", None), (Gauge, "NaN".into())),
            (("circuit_breaker_slow_call_rate", None), (Gauge, "NaN".into())),
            (("circuit_breaker_not_permitted_calls", None), (Gauge, "0".into())),
            (("rate_limiter_available_permits", None), (Gauge, "7".into())),
            (("rate_limiter_permits", None), (Gauge, "7".into())),
            (("adaptive_limit_limit", None), (Gauge, "10".into())),
            (("adaptive_limit_in_flight", None), (Gauge, "0".into())),
            (("adaptive_limit_waiting", None), (Gauge, "0".into())),
            (("timeout_timed_out_total", None), (Counter, "0".into())),
            (("bulkhead_in_flight", None), (Gauge, "0".into())),
            (("bulkhead_available", None), (Gauge, "3".into())),
            (("bulkhead_waiting", None), (Gauge, "0".into())),
            (("bulkhead_max_concurrent_calls", None), (Gauge, "3".into())),
        ]);
        #[cfg(feature = "chaos")]
        expected.extend([
            (("chaos_faults_total", None), (Counter, "0".into())),
            (("chaos_latencies_total", None), (Counter, "0".into())),
            (("chaos_enabled", None), (Gauge, "0".into())),
        ]);
        assert_eq!(seen, expected);
        let listed: Vec<&str> = RegistrySnapshot::series().map(|s| s.name).collect();
        let given: Vec<&str> = seen.keys().map(|(name, _)| *name).collect();
        assert!(listed.iter().all(|name| given.contains(name)), "listed but never given: {listed:?}");
        assert!(RegistrySnapshot::series().all(|s| !s.help.is_empty()));
    }

    /// A retry without a budget has nothing to measure; an empty registry gives nothing.
    #[test]
    fn readings_follow_what_the_snapshot_has() {
        let registry = Registry::builder().build().unwrap();
        let mut count = 0;
        registry.snapshot().readings(|_, _| count += 1);
        assert_eq!(count, 0);
        let _calls = Pipeline::builder(&registry, "shop::Api::get").retry().build::<u32, std::io::Error>().unwrap();
        // (With the feature `chaos`, the pipeline's injection point has its own readings.)
        registry.snapshot().readings(|_, r| count += usize::from(!r.series.name.starts_with("chaos_")));
        assert_eq!(count, 0);
    }
}
