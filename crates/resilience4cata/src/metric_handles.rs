//! The one shape of every policy's metric handles (feature `metrics`): registered once per
//! instance with its `instance` label, so recording an event is an atomic update that never
//! allocates and never needs the event itself to be built.

/// Declares `$name`, one instance's handles, and its `register(instance)`: each field a
/// `metrics::Counter` or `metrics::Gauge` named `resilience4cata_<policy>_<metric>`, labelled with
/// the instance id. A counter that only counts one event names its recording method after `=>`
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
            pub(crate) fn register(instance: &::std::sync::Arc<str>) -> Self {
                $name {
                    $($field: metric_handles!(@register $kind, concat!("resilience4cata_", $policy, "_", $metric), instance),)*
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
    (@register counter, $metric:expr, $instance:ident) => {
        ::metrics::counter!($metric, "instance" => $instance.to_string())
    };
    (@register gauge, $metric:expr, $instance:ident) => {
        ::metrics::gauge!($metric, "instance" => $instance.to_string())
    };
}
pub(crate) use metric_handles;
