//! An admin endpoint for a [`resilience4cata`] registry, on axum: what an operator opens when a
//! dependency misbehaves.
//!
//! | route | what |
//! |---|---|
//! | `GET /` | the live dashboard: one self-contained page (no CDN, no build step, works offline) |
//! | `GET /snapshot` | `registry.snapshot()` as JSON (field names: `docs/admin.md`) |
//! | `GET /counters` | what the admin counted from events since it started (retries, hedged calls, fallbacks applied, adaptive-limit moves) |
//! | `GET /events` | Server-Sent Events, one JSON object per policy event |
//! | `GET /metrics` | Prometheus text exposition of every instance |
//! | `POST /circuit-breakers/{id}/{force-open,disable,reset}` | only with a token: the breaker's manual controls |
//! | `POST /circuit-breakers/{id}/keys/{key}/{force-open,disable,reset}` | only with a token: the same, on one key of a keyed breaker (by its text) |
//! | `PUT /config` | only with a token: a TOML body applied live (`Registry::update_toml`): `200` with the changed instances, `400` with the coded error |
//!
//! The admin reads the registry only through `snapshot()` and `subscribe()` (and writes it only
//! through `update_toml()`, for `PUT /config`), so it attaches to a running registry and costs
//! the policies nothing while nobody watches. Instance ids in paths are percent-encoded
//! (`/circuit-breakers/host-a%2Fshop%3A%3AApi%3A%3Aget/reset`), and so are key texts
//! (`/circuit-breakers/hosts/keys/%22a.example%22/force-open` for the `&str` key `"a.example"`).
//!
//! # Security
//! - Without [`AdminOptions::token`] the endpoint is read-only: the control routes (the breaker
//!   controls and `PUT /config`) do not exist.
//! - With a token, control routes need `Authorization: Bearer <token>`, compared in constant time:
//!   401 when wrong or missing, 404 for an unknown id; a request from a page of another origin is
//!   refused (403) whatever it carries. [`AdminOptions::protect_reads`] puts the reads behind the
//!   token too.
//! - The token is never logged, printed by `Debug`, or put in the page.
//! - [`serve`] binds where it is told; [`DEFAULT_ADDR`] is loopback.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! use resilience4cata::Registry;
//! use resilience4cata_admin::{AdminOptions, router};
//!
//! let registry = Registry::builder().build().expect("valid configuration");
//! // Mount it under the application's own server (here under /admin):
//! let app: axum::Router = axum::Router::new().nest("/admin", router(registry, AdminOptions::new().token("s3cret")));
//! # let _ = app;
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs, missing_debug_implementations, unreachable_pub)]

mod auth;
mod changes;
mod config;
mod control;
mod counters;
mod events;
mod exporter;
mod keys;
mod metrics;
mod options;
mod page;
mod server;
mod snapshot;
mod state;

use std::sync::Arc;

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::routing::{get, post, put};
use resilience4cata::Registry;

pub use options::AdminOptions;
pub use server::{AdminServer, DEFAULT_ADDR, serve};

use state::AdminState;

/// The admin routes for `registry`, to mount in the application's own axum server (or serve with
/// [`serve`]). Call it inside a Tokio runtime: it starts the task that counts events (stopped when
/// the router is dropped).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use resilience4cata::Registry;
/// use resilience4cata_admin::{AdminOptions, router};
///
/// let registry = Registry::builder().build().expect("valid configuration");
/// let app = axum::Router::new()
///     .route("/health", axum::routing::get(|| async { "ok" }))
///     .nest("/admin", router(registry, AdminOptions::new().token("from-a-secret-store")));
/// # let _ = app;
/// # }
/// ```
pub fn router(registry: Registry, options: AdminOptions) -> Router {
    let state = Arc::new(AdminState::new(registry, options));
    let _ = state.stop_counting.set(events::start_counting(&state));
    let mut reads = Router::new()
        .route("/", get(page::page))
        .route("/snapshot", get(snapshot::snapshot))
        .route("/counters", get(counters_route))
        .route("/events", get(events::events))
        .route("/metrics", get(metrics::metrics));
    if state.options.protect_reads {
        reads = reads.route_layer(from_fn_with_state(Arc::clone(&state), auth::require_token));
    }
    let mut app = reads;
    if state.options.token.is_some() {
        let control = Router::new()
            .route("/circuit-breakers/{id}/{action}", post(control::control))
            .route("/circuit-breakers/{id}/keys/{key}/{action}", post(control::control_key))
            .route("/config", put(config::put_config))
            .route_layer(from_fn_with_state(Arc::clone(&state), auth::same_origin_and_token));
        app = app.merge(control);
    }
    app.with_state(state)
}

/// `GET /counters`.
async fn counters_route(
    axum::extract::State(state): axum::extract::State<Arc<AdminState>>,
) -> axum::Json<counters::Counts> {
    axum::Json(state.counts(&state.registry.snapshot()))
}
