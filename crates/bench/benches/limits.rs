//! Criterion groups: rate_limiter_pass, keyed_rate_limiter_pass, bulkhead_pass, adaptive_limit_pass
//! (see `bench::CASES`).

#[macro_use]
mod common;

groups!(rate_limiter_pass, keyed_rate_limiter_pass, bulkhead_pass, adaptive_limit_pass);
