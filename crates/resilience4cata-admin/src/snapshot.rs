//! `GET /snapshot`: `registry.snapshot()` as JSON, and the busiest keys of keyed instances.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;

use crate::keys::AdminSnapshot;
use crate::state::AdminState;

/// The registry's snapshot, field for field as the runtime's `serde` feature writes it, and
/// `keys` ([`Keys`](crate::keys::Keys)).
pub(crate) async fn snapshot(State(state): State<Arc<AdminState>>) -> Json<AdminSnapshot> {
    Json(AdminSnapshot::of(&state.registry))
}
