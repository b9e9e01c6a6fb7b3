//! `GET /`: the dashboard, one self-contained HTML file compiled into the binary, served with the
//! first snapshot already in it.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use serde::Serialize;

use crate::counters::Counts;
use crate::keys::AdminSnapshot;
use crate::state::AdminState;

/// The page: markup, style and script in one file, no external request of any kind.
const DASHBOARD: &str = include_str!("../assets/dashboard.html");

/// Where the page's `<script id="initial" type="application/json">` block takes [`Initial`].
const INITIAL_MARK: &str = "{\"initial\":null}";

/// What the page paints before its first poll: the snapshot and counts of the moment it was
/// served, and whether the breaker controls exist (a token is set), so it never shows buttons
/// that could only answer 404.
#[derive(Serialize)]
struct Initial<'a> {
    snapshot: &'a AdminSnapshot,
    counters: &'a Counts,
    controls: bool,
}

pub(crate) async fn page(State(state): State<Arc<AdminState>>) -> impl IntoResponse {
    let snapshot = AdminSnapshot::of(&state.registry);
    let counters = state.counts(&snapshot.registry);
    let initial = Initial { snapshot: &snapshot, counters: &counters, controls: state.options.token.is_some() };
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
        render(&initial),
    )
}

/// The page with `initial` in its data block. Every `<` of the JSON is written `\u003c` (the same
/// string to `JSON.parse`), so no instance id can close the block or open markup.
fn render(initial: &Initial<'_>) -> String {
    let json = serde_json::to_string(initial).unwrap_or_else(|_| "null".to_owned()).replace('<', "\\u003c");
    DASHBOARD.replacen(INITIAL_MARK, &json, 1)
}

#[cfg(test)]
mod tests {
    use resilience4cata::{Pipeline, Registry};

    use super::*;

    #[test]
    fn the_page_carries_the_snapshot_and_no_id_can_close_its_block() {
        assert_eq!(DASHBOARD.matches(INITIAL_MARK).count(), 1, "one data block");
        let registry = Registry::builder().build().unwrap();
        let id = "</script><script>alert(1)</script>";
        let _p = Pipeline::builder(&registry, id).circuit_breaker().build::<u32, std::io::Error>().unwrap();
        let snapshot = AdminSnapshot::of(&registry);
        let counters = Counts::default().with_registered(&snapshot.registry);
        let page = render(&Initial { snapshot: &snapshot, counters: &counters, controls: false });
        assert!(!page.contains(INITIAL_MARK));
        assert!(!page.contains(id), "the id is escaped");
        let start = page.find(r#"<script id="initial" type="application/json">"#).unwrap();
        let block = &page[start..];
        let json = &block[block.find('>').unwrap() + 1..block.find("</script>").unwrap()];
        let parsed: serde_json::Value = serde_json::from_str(json).unwrap();
        assert_eq!(parsed["snapshot"]["circuit_breakers"][0]["instance"], id);
        assert_eq!(parsed["controls"], false);
    }
}
