//! Chaos counters through the `metrics` facade (feature `metrics`).

use crate::metric_handles::metric_handles;

metric_handles! {
    /// One instance's handles: increments never allocate.
    ChaosMetrics for "chaos" {
        faults: counter "faults_total" => /// A `FaultInjected` event.
            fn fault_injected,
        latencies: counter "latencies_total" => /// A `LatencyInjected` event.
            fn latency_injected,
    }
}
