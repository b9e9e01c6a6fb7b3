//! The bearer token check (constant time) and the same-origin check of the control routes.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::state::AdminState;

/// Whether `headers` carry `Authorization: Bearer <expected>`. The comparison takes the same
/// time wherever the first differing byte is (only the length may show).
pub(crate) fn bearer_matches(headers: &HeaderMap, expected: Option<&str>) -> bool {
    let Some(expected) = expected else { return false };
    let Some(given) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) else { return false };
    let Some(given) = given.strip_prefix("Bearer ") else { return false };
    bool::from(given.trim().as_bytes().ct_eq(expected.as_bytes()))
}

/// A 401 with the scheme the client should use; never says what was expected.
fn unauthorized() -> Response {
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], "missing or wrong bearer token\n")
        .into_response()
}

/// Middleware: the request must carry the token.
pub(crate) async fn require_token(State(state): State<Arc<AdminState>>, request: Request, next: Next) -> Response {
    if bearer_matches(request.headers(), state.options.token.as_deref()) {
        next.run(request).await
    } else {
        unauthorized()
    }
}

/// Middleware of the control routes: a request sent by a page of another origin is refused
/// (403) before the token is even looked at, and then the token is required.
pub(crate) async fn same_origin_and_token(state: State<Arc<AdminState>>, request: Request, next: Next) -> Response {
    if is_cross_origin(request.headers()) {
        return (StatusCode::FORBIDDEN, "cross-origin control requests are refused\n").into_response();
    }
    require_token(state, request, next).await
}

/// A browser names the page's origin in `Origin`; tools like curl send none. Cross-origin means
/// an `Origin` whose host differs from the `Host` the request was sent to.
fn is_cross_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else { return false };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin_host = origin.to_str().ok().and_then(|o| o.split_once("://")).map(|(_, rest)| rest);
    match (origin_host, host) {
        (Some(o), Some(h)) => !o.eq_ignore_ascii_case(h),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (k.clone(), HeaderValue::from_str(v).unwrap())).collect()
    }

    #[test]
    fn bearer_needs_the_exact_token() {
        let ok = headers(&[(header::AUTHORIZATION, "Bearer s3cret")]);
        assert!(bearer_matches(&ok, Some("s3cret")));
        assert!(!bearer_matches(&ok, Some("s3cret!")));
        assert!(!bearer_matches(&ok, None));
        assert!(!bearer_matches(&headers(&[(header::AUTHORIZATION, "Basic s3cret")]), Some("s3cret")));
        assert!(!bearer_matches(&headers(&[(header::AUTHORIZATION, "Bearer s3creT")]), Some("s3cret")));
        assert!(!bearer_matches(&HeaderMap::new(), Some("s3cret")));
    }

    #[test]
    fn origin_must_match_host() {
        assert!(!is_cross_origin(&headers(&[(header::HOST, "127.0.0.1:9")])));
        assert!(!is_cross_origin(&headers(&[(header::HOST, "127.0.0.1:9"), (header::ORIGIN, "http://127.0.0.1:9")])));
        assert!(is_cross_origin(&headers(&[(header::HOST, "127.0.0.1:9"), (header::ORIGIN, "http://evil.test")])));
        assert!(is_cross_origin(&headers(&[(header::HOST, "127.0.0.1:9"), (header::ORIGIN, "null")])));
    }
}
