//! The middleware against axum servers on loopback, one test binary (one link) for all of it:
//! the retry and `Retry-After` on the manual clock, the breaker per host, the timeout and the
//! bulkhead on the system clock, streaming bodies.

mod breaker;
mod common;
mod retry;
mod streaming;
mod timeout_bulkhead;
