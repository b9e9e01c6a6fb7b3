//! `GET /`: the dashboard, one self-contained HTML file compiled into the binary.

use axum::http::header;
use axum::response::IntoResponse;

/// The page: markup, style and script in one file, no external request of any kind.
const DASHBOARD: &str = include_str!("../assets/dashboard.html");

pub(crate) async fn page() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            // Nothing but this origin: the page needs no other, and a script injected through an
            // instance id could reach none.
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
            ),
        ],
        DASHBOARD,
    )
}
