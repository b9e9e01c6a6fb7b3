//! The one shape of every policy's metric handles (feature `metrics`): registered once per
//! instance with its `instance` label (and, for a key of a keyed instance with `key_metrics = true`,
//! its `key` label), so recording an event is an atomic update that never allocates and never
//! needs the event itself to be built.

use metrics::Label;

/// The labels every series of one instance carries: `instance`, and `key` (the key's text) for a
/// key of a keyed instance whose `key_metrics` is on (SPEC §15; off by default: the keys of an
/// instance record into the instance's series, so their figures add up there).
#[derive(Clone, Debug)]
pub(crate) struct MetricLabels(Vec<Label>);

impl MetricLabels {
    pub(crate) fn new(instance: &str, key: Option<&str>) -> Self {
        let mut labels = vec![Label::new("instance", instance.to_owned())];
        if let Some(key) = key {
            labels.push(Label::new("key", key.to_owned()));
        }
        MetricLabels(labels)
    }

    /// The labels, for one series.
    pub(crate) fn get(&self) -> Vec<Label> {
        self.0.clone()
    }

    /// The labels and one more (`outcome`, `reason`, `to`).
    pub(crate) fn and(&self, name: &'static str, value: &'static str) -> Vec<Label> {
        let mut labels = self.get();
        labels.push(Label::new(name, value));
        labels
    }
}

/// Declares `$name`, one instance's handles, and its `register(instance)`: each field a
/// `metrics::Counter` or `metrics::Gauge` named `resilience4cata_<policy>_<metric>`, labelled with
/// the instance's [`MetricLabels`]. A counter that only counts one event names its recording method after `=>`
/// (`rejected: counter "rejected_total" => /// A `Rejected` event. fn rejected`); the policy's
/// other recording methods go in an `impl` of its own.
macro_rules! metric_handles {
    ($(#[$meta:meta])* $name:ident for $policy:literal {
        $($field:ident: $kind:ident $metric:literal $(=> $(#[$doc:meta])* fn $method:ident)?),* $(,)?
    }) => {
        $(#[$meta])*
        #[allow(unreachable_pub, missing_debug_implementations)] // named only by the sealed `Event` machinery
        pub struct $name {
            $($field: metric_handles!(@type $kind),)*
        }

        impl $name {
            pub(crate) fn register(labels: &$crate::metric_handles::MetricLabels) -> Self {
                $name {
                    $($field: metric_handles!(@register $kind, concat!("resilience4cata_", $policy, "_", $metric), labels),)*
                }
            }
            $($(
                $(#[$doc])*
                pub(crate) fn $method(&self) {
                    self.$field.increment(1);
                }
            )?)*
        }
    };
    (@type counter) => { ::metrics::Counter };
    (@type gauge) => { ::metrics::Gauge };
    (@register counter, $metric:expr, $labels:ident) => {
        ::metrics::counter!($metric, $labels.get())
    };
    (@register gauge, $metric:expr, $labels:ident) => {
        ::metrics::gauge!($metric, $labels.get())
    };
}
pub(crate) use metric_handles;
