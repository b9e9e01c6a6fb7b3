//! Criterion groups: hedge_first_answers (see `bench::CASES`).

#[macro_use]
mod common;

groups!(hedge_first_answers);
