//! Bundles defined in this crate, so the runtime's tests can use a bundle from another crate of
//! the workspace (`crates/resilience4cata/tests/bundles.rs`).

resilience4cata::bundle! {
    /// Three attempts 10 ms apart, without jitter.
    pub quick_retry = #[retry(max_attempts = 3, delay = "10ms", backoff = Fixed, jitter = None)];

    /// The seeds' retry budget example: three attempts 100 ms apart, retries capped at 20 % of
    /// the calls with a reserve of one a second (100 calls against a dead catalog: 130 attempts).
    pub seed_budget = #[retry(max_attempts = 3, delay = "100ms", budget_percent = 20, budget_min_retries_per_second = 1)];
}
