//! `GET /snapshot`: `registry.snapshot()` as JSON.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use resilience4cata::RegistrySnapshot;

use crate::state::AdminState;

/// The registry's snapshot, field for field as the runtime's `serde` feature writes it.
pub(crate) async fn snapshot(State(state): State<Arc<AdminState>>) -> Json<RegistrySnapshot> {
    Json(state.registry.snapshot())
}
