//! Criterion groups: breaker_closed (see `bench::CASES`).

#[macro_use]
mod common;

groups!(breaker_closed);
