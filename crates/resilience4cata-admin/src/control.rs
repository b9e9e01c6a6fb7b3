//! `POST /circuit-breakers/{id}/{force-open|disable|reset}`: the breaker's manual controls; and
//! `POST /circuit-breakers/{id}/keys/{key}/{…}`: the same on one key of a keyed breaker (SPEC §15),
//! by the key's text.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use resilience4cata::circuit_breaker::CircuitBreakerHandle;

use crate::state::AdminState;

/// Applies `action` to the breaker `id` (percent-decoded from the path) and answers with its new
/// snapshot; 404 for an unknown id or action.
pub(crate) async fn control(
    State(state): State<Arc<AdminState>>,
    Path((id, action)): Path<(String, String)>,
) -> Response {
    let Some(apply) = action_named(&action) else {
        return (StatusCode::NOT_FOUND, "unknown action: use force-open, disable or reset\n").into_response();
    };
    let Some(breaker) = state.registry.circuit_breaker(&id) else {
        return (StatusCode::NOT_FOUND, "no circuit breaker has this id\n").into_response();
    };
    apply(&breaker);
    Json(breaker.snapshot()).into_response()
}

/// Applies `action` to the key of the keyed breaker `id` whose text is `key` (both
/// percent-decoded from the path) and answers with the key's new snapshot; 404 for an unknown id,
/// key or action.
pub(crate) async fn control_key(
    State(state): State<Arc<AdminState>>,
    Path((id, key, action)): Path<(String, String, String)>,
) -> Response {
    let Some(apply) = action_named(&action) else {
        return (StatusCode::NOT_FOUND, "unknown action: use force-open, disable or reset\n").into_response();
    };
    let Some(breaker) = state.registry.circuit_breaker(&id) else {
        return (StatusCode::NOT_FOUND, "no circuit breaker has this id\n").into_response();
    };
    let Some(key) = breaker.key(&key) else {
        return (StatusCode::NOT_FOUND, "this circuit breaker has no key with this text\n").into_response();
    };
    apply(&key);
    Json(key.snapshot()).into_response()
}

/// The handle method an action name stands for.
fn action_named(action: &str) -> Option<fn(&CircuitBreakerHandle)> {
    match action {
        "force-open" => Some(CircuitBreakerHandle::force_open),
        "disable" => Some(CircuitBreakerHandle::disable),
        "reset" => Some(CircuitBreakerHandle::reset),
        _ => None,
    }
}
