//! Criterion groups: full_stack (see `bench::CASES`).

#[macro_use]
mod common;

groups!(full_stack);
