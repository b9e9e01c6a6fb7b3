//! Criterion group `contended` (see `bench::CASES` and `bench::cases::contended`): `BENCH_THREADS`
//! threads (2 by default) call one instance; only the measuring thread's loop is timed.

#[macro_use]
mod common;

groups!(contended, contended_apart);
