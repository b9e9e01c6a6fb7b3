//! Criterion group: fallback (see `bench::CASES`).

#[macro_use]
mod common;

groups!(fallback);
