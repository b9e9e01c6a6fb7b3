//! Criterion groups: baseline, retry_success, retry_fail_once, budget_success (see `bench::CASES`).

#[macro_use]
mod common;

groups!(baseline, retry_success, retry_fail_once, budget_success);
