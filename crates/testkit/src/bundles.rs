//! Bundles defined in this crate, so the runtime's tests can use a bundle from another crate of
//! the workspace (`crates/resilience4cata/tests/bundles.rs`).

resilience4cata::bundle! {
    /// Three attempts 10 ms apart, without jitter.
    pub quick_retry = #[retry(max_attempts = 3, delay = "10ms", backoff = Fixed, jitter = None)];
}
