//! Timeout that does not fire: the operation completes at once, well within the limit.

use std::future::ready;
use std::time::Duration;

use tower::Layer;

use crate::{consume, exec, opaque, work};

const LIMIT: Duration = Duration::from_secs(1);

/// `tokio::time::timeout` around a ready future.
pub fn tokio_timeout() -> impl FnMut() {
    || {
        consume(exec::poll_now(tokio::time::timeout(LIMIT, async { work(opaque(1)) })));
    }
}

/// tower's `Timeout` around a `service_fn`.
pub fn tower_timeout() -> impl FnMut() {
    let mut service = tower::timeout::Timeout::new(tower::service_fn(|x: u64| ready(work(x))), LIMIT);
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}

/// tower-resilience's time limiter layer around a `service_fn`.
pub fn tower_resilience_time_limiter() -> impl FnMut() {
    let layer = tower_resilience::timelimiter::TimeLimiterLayer::builder().timeout_duration(LIMIT).build();
    let mut service = layer.layer(tower::service_fn(|x: u64| ready(work(x))));
    move || {
        consume(exec::call_tower(&mut service, opaque(1)));
    }
}
