//! Examples of resilience4cata that need more than the runtime: an HTTP stack, a chart library or
//! the admin crate. The example programs live in the workspace's `examples/` folder and are declared
//! in this package's `Cargo.toml`; what they share (and their tests drive) lives here.
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations)]

pub mod adaptive_limit_sim;
pub mod demo;
pub mod per_client_limits;
