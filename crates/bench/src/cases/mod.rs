//! The cases, one module per policy. Each constructor builds its instance (outside the measurement)
//! and returns the closure that makes one protected call with an opaque input and an opaque output.
//!
//! Anchors are configured the way their documentation shows, with what the case needs and no more:
//! no listeners, no metrics, no tracing features.

pub mod adaptive;
pub mod baseline;
pub mod breaker;
pub mod hedge;
pub mod limits;
pub mod ours;
pub mod ours_class;
pub mod ours_fallback;
pub mod ours_guarded;
pub mod ours_ordered;
pub mod retry;
pub mod stack;
pub mod timeout;
pub mod user_shaped;
