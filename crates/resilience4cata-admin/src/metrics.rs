//! `GET /metrics`: Prometheus text exposition, through the admin's own recorder
//! ([`Exporter`](crate::exporter::Exporter)).
//!
//! Every scrape sets the gauges from a fresh snapshot and the counters from the admin's event
//! counts, then renders. Every registered instance has its series from the first scrape, at 0
//! until something is counted.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use crate::state::AdminState;

/// The scrape handler.
pub(crate) async fn metrics(State(state): State<Arc<AdminState>>) -> impl IntoResponse {
    let snapshot = state.registry.snapshot();
    let text = state.exporter.render(&snapshot, &state.counts(&snapshot));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], text)
}
