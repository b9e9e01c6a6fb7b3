//! `PUT /config` (SPEC §16): a TOML body applied to the running registry with
//! `Registry::update_toml`, all or nothing.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use resilience4cata::{ConfigChange, RegistryError};
use serde::Serialize;

use crate::changes::policy_key;
use crate::state::AdminState;

/// The code of a body that is not text (the runtime's code for a configuration that cannot be
/// read): the admin answers it before the registry is asked.
const NOT_TEXT: &str = "R4C-CFG-001";

/// One instance and policy whose resolved values changed.
#[derive(Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
struct Changed {
    instance: String,
    /// The policy's configuration key in snake case: `"rate_limiter"`, `"circuit_breaker"`, …
    policy: String,
}

/// The `200` answer: every (instance, policy) whose values changed, sorted; empty when the body
/// changed nothing.
#[derive(Debug, Serialize)]
struct Applied {
    changed: Vec<Changed>,
}

/// The `400` answer: the `RegistryError`'s code, instance (or `null`) and message, and its whole
/// text as `Display` writes it.
#[derive(Debug, Serialize)]
struct Refused {
    code: String,
    instance: Option<String>,
    message: String,
    error: String,
}

impl Refused {
    fn from_error(error: &RegistryError) -> Refused {
        Refused {
            code: error.code().to_owned(),
            instance: error.instance().map(str::to_owned),
            message: error.message().to_owned(),
            error: error.to_string(),
        }
    }
}

/// `PUT /config`: the body, TOML, replaces the file layer of the registry's configuration, all or
/// nothing. `200` with what changed, `400` with the coded error (nothing changed then). The update
/// runs on a blocking thread: it re-resolves every instance and calls the registry's listeners.
pub(crate) async fn put_config(State(state): State<Arc<AdminState>>, body: Bytes) -> Response {
    let Ok(text) = String::from_utf8(body.to_vec()) else {
        let refused = Refused {
            code: NOT_TEXT.to_owned(),
            instance: None,
            message: "the body is not UTF-8 text: send the TOML configuration as it is".to_owned(),
            error: String::new(),
        };
        let error = format!("[{NOT_TEXT}] {}", refused.message);
        return (StatusCode::BAD_REQUEST, Json(Refused { error, ..refused })).into_response();
    };
    let registry = state.registry.clone();
    match tokio::task::spawn_blocking(move || registry.update_toml(&text)).await {
        Ok(Ok(change)) => Json(applied(&change)).into_response(),
        Ok(Err(error)) => (StatusCode::BAD_REQUEST, Json(Refused::from_error(&error))).into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "the update did not finish\n").into_response(),
    }
}

fn applied(change: &ConfigChange) -> Applied {
    let mut changed: Vec<Changed> = change
        .changed
        .iter()
        .map(|(instance, policy)| Changed { instance: instance.to_string(), policy: policy_key(policy) })
        .collect();
    changed.sort();
    Applied { changed }
}
