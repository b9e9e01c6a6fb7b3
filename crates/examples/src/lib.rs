//! Examples of resilience4cata that need more than the runtime: an HTTP stack, a chart library or
//! the admin crate. The example programs live in the workspace's `examples/` folder and are declared
//! in this package's `Cargo.toml`; this library holds what an example shares with its tests.
#![forbid(unsafe_code)]

pub mod adaptive_limit_sim;
