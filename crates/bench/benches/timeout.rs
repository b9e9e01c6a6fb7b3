//! Criterion groups: timeout_pass (see `bench::CASES`).

#[macro_use]
mod common;

groups!(timeout_pass);
