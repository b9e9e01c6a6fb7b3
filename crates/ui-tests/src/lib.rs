//! Nothing here: the crate holds `tests/ui.rs` and its cases (`tests/ui/`), the compile-time
//! diagnostics of `#[resilient]` and `#[derive(ResilienceError)]`. They live apart from the
//! runtime's tests so that trybuild, which builds every dev-dependency of the crate it runs in,
//! builds only the runtime, tokio and the test kit for them.

#![forbid(unsafe_code)]
