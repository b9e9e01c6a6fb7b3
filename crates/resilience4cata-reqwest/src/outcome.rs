//! What one attempt ended with, as the policies see it: which outcomes are failures, which of
//! them are worth another attempt, which say something about the host's health, and how long the
//! server asked us to wait.

use std::time::{Duration, SystemTime};

use reqwest::header::RETRY_AFTER;
use reqwest::{Response, StatusCode};
use resilience4cata::{Rejection, ResilienceError};

/// The error type of the pipelines inside the middleware. A failed status travels as its whole
/// response, so the last one can be handed back to the caller as an ordinary response.
#[derive(Debug)]
pub(crate) enum AttemptError {
    /// 408, 429 or a 5xx: the server answered, and the answer is a failure (boxed: a response is
    /// large, and only failures pay for the box).
    Status(Box<Response>),
    /// The request got no response (connection refused or reset, reqwest's own timeout, ...).
    Transport(reqwest::Error),
    /// A middleware further down the chain failed.
    Middleware(anyhow::Error),
    /// A policy refused the attempt (open breaker, full bulkhead, attempt timed out).
    Rejected(Rejection),
}

impl ResilienceError for AttemptError {
    fn from_rejection(rejection: Rejection) -> Self {
        AttemptError::Rejected(rejection)
    }

    fn rejection(&self) -> Option<&Rejection> {
        match self {
            AttemptError::Rejected(r) => Some(r),
            _ => None,
        }
    }
}

/// Splits a response into a success (handed back as is) and a failure the policies act on.
pub(crate) fn judge(response: Response) -> Result<Response, AttemptError> {
    let status = response.status();
    match status == StatusCode::REQUEST_TIMEOUT || status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
        true => Err(AttemptError::Status(Box::new(response))),
        false => Ok(response),
    }
}

/// The transport failures that may pass on another attempt: no connection, reqwest's own
/// timeout, or a request that broke on the way (reset, incomplete answer).
fn transient(e: &reqwest::Error) -> bool {
    e.is_connect() || e.is_timeout() || (e.is_request() && !e.is_builder())
}

impl AttemptError {
    /// Whether another attempt may pass: 408, 429, 500, 502, 503, 504, a transient transport
    /// failure, or an attempt the timeout cut. Never a local refusal, a 501 or 505, a middleware's
    /// failure.
    pub(crate) fn retryable(&self) -> bool {
        match self {
            AttemptError::Status(r) => matches!(r.status().as_u16(), 408 | 429 | 500 | 502 | 503 | 504),
            AttemptError::Transport(e) => transient(e),
            AttemptError::Middleware(_) => false,
            AttemptError::Rejected(r) => matches!(r, Rejection::CallTimeout { .. }),
        }
    }

    /// Whether the breaker should leave this outcome out: a 408 or 429 (the server is alive and
    /// asks us to slow down), a middleware's failure or a request reqwest could not build (they
    /// say nothing about the host).
    pub(crate) fn says_nothing_about_the_host(&self) -> bool {
        match self {
            AttemptError::Status(r) => !r.status().is_server_error(),
            AttemptError::Transport(e) => !transient(e),
            AttemptError::Middleware(_) => true,
            AttemptError::Rejected(_) => false,
        }
    }

    /// The server's `Retry-After` on a failed status, if it sent one that parses.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self {
            AttemptError::Status(r) => retry_after(r.headers().get(RETRY_AFTER)?.to_str().ok()?, SystemTime::now()),
            _ => None,
        }
    }
}

/// `Retry-After` in either form (RFC 9110 §10.2.3): a number of seconds, or an HTTP date, read
/// against `now`; a date in the past means no wait.
pub(crate) fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(retry_after(" 0 ", now), Some(Duration::ZERO));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(retry_after(&later, now), Some(Duration::from_secs(90)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(90));
        assert_eq!(retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("-3", now), None);
    }
}
