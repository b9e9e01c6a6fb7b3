//! Which gRPC failures the policies retry and record, and how a policy's refusal reaches the
//! caller as a `tonic::Status`.
//!
//! Every failure the pipeline sees is a [`GrpcError`] holding either a `tonic::Status` (the
//! server's answer, or tonic's reading of a transport error: a refused connection is
//! `UNAVAILABLE`) or a [`Rejection`] of one of the pipeline's own policies.
//!
//! | code | retried ([`is_retryable`]) | breaker failure ([`is_server_fault`]) |
//! | --- | --- | --- |
//! | `UNAVAILABLE` | yes | yes |
//! | `DEADLINE_EXCEEDED`, `INTERNAL`, `UNKNOWN`, `DATA_LOSS` | no | yes |
//! | every other code (`INVALID_ARGUMENT`, `NOT_FOUND`, `RESOURCE_EXHAUSTED`, ...) | no | no (a success) |
//! | the timeout's `CallTimeout` | no | yes (the pipeline records a timeout as a failure) |
//! | the breaker's `CallNotPermitted` | never (built in) | - |

use resilience4cata::Rejection;
use tonic::{Code, Status};

/// The pipeline's error type: a boxed error holding a `tonic::Status` or a [`Rejection`]
/// (`Box<dyn Error + Send + Sync>` implements `ResilienceError`, and tonic's generated clients
/// turn it back into the `Status` it holds).
pub type GrpcError = Box<dyn std::error::Error + Send + Sync>;

/// The code of a failure: the status's own, or the one [`rejection_code`] gives a refusal;
/// `UNKNOWN` for anything else.
///
/// ```
/// use resilience4cata_grpc_example::codes::{GrpcError, code_of};
/// use tonic::{Code, Status};
///
/// let error: GrpcError = Box::new(Status::unavailable("draining"));
/// assert_eq!(code_of(&error), Code::Unavailable);
/// ```
pub fn code_of(error: &GrpcError) -> Code {
    if let Some(status) = error.downcast_ref::<Status>() {
        return status.code();
    }
    error.downcast_ref::<Rejection>().map_or(Code::Unknown, rejection_code)
}

/// Retries only a server's (or the transport's) `UNAVAILABLE`: the one code gRPC defines as
/// transient and safe to retry. A refusal of the pipeline's own policies is not retried here:
/// a timed-out attempt used up the call's deadline, and an open breaker is never retried.
///
/// ```
/// use resilience4cata::Rejection;
/// use resilience4cata_grpc_example::codes::{GrpcError, is_retryable};
/// use tonic::Status;
///
/// assert!(is_retryable(&(Box::new(Status::unavailable("restarting")) as GrpcError)));
/// assert!(!is_retryable(&(Box::new(Status::invalid_argument("no such sku")) as GrpcError)));
/// let open: GrpcError = Box::new(Rejection::CallNotPermitted { instance: "stock".into() });
/// assert!(!is_retryable(&open));
/// ```
pub fn is_retryable(error: &GrpcError) -> bool {
    error.downcast_ref::<Status>().is_some_and(|s| s.code() == Code::Unavailable)
}

/// Counts toward opening the breaker only the codes that say the server is in trouble; a
/// caller's mistake (`INVALID_ARGUMENT`, `NOT_FOUND`, `PERMISSION_DENIED`, ...) or a quota
/// (`RESOURCE_EXHAUSTED`) is an answer from a healthy server, and counts as a success.
///
/// ```
/// use resilience4cata_grpc_example::codes::{GrpcError, is_server_fault};
/// use tonic::Status;
///
/// assert!(is_server_fault(&(Box::new(Status::internal("panicked")) as GrpcError)));
/// assert!(!is_server_fault(&(Box::new(Status::not_found("sku-9")) as GrpcError)));
/// ```
pub fn is_server_fault(error: &GrpcError) -> bool {
    matches!(
        code_of(error),
        Code::Unavailable | Code::DeadlineExceeded | Code::Internal | Code::Unknown | Code::DataLoss
    )
}

/// The code a caller sees for a policy's refusal: an open breaker is `UNAVAILABLE` (what a
/// proxy with no healthy backend answers), a timeout `DEADLINE_EXCEEDED`, a full bulkhead, rate
/// limit or adaptive limit `RESOURCE_EXHAUSTED`.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::Rejection;
/// use resilience4cata_grpc_example::codes::rejection_code;
/// use tonic::Code;
///
/// let timeout = Rejection::CallTimeout { instance: "stock".into(), timeout: Duration::from_millis(200) };
/// assert_eq!(rejection_code(&timeout), Code::DeadlineExceeded);
/// ```
pub fn rejection_code(rejection: &Rejection) -> Code {
    match rejection {
        Rejection::CallNotPermitted { .. } => Code::Unavailable,
        Rejection::CallTimeout { .. } => Code::DeadlineExceeded,
        Rejection::RateLimitExceeded { .. }
        | Rejection::BulkheadFull { .. }
        | Rejection::LimitExceeded { .. }
        | Rejection::KeysExhausted { .. } => Code::ResourceExhausted,
        _ => Code::Unknown,
    }
}

/// The `tonic::Status` a caller gets for a failure: the status itself, or one made of a
/// refusal (its code from [`rejection_code`], its message the refusal's text).
///
/// ```
/// use resilience4cata::Rejection;
/// use resilience4cata_grpc_example::codes::into_status;
/// use tonic::Code;
///
/// let status = into_status(Box::new(Rejection::CallNotPermitted { instance: "stock".into() }));
/// assert_eq!(status.code(), Code::Unavailable);
/// assert!(status.message().contains("stock"));
/// ```
pub fn into_status(error: GrpcError) -> Status {
    match error.downcast::<Rejection>() {
        Ok(rejection) => Status::new(rejection_code(&rejection), rejection.to_string()),
        Err(error) => Status::from_error(error),
    }
}

/// The status a response without `grpc-status` stands for, from its HTTP status (the gRPC
/// spec's table for responses from a proxy that does not speak gRPC): `None` for `200`.
pub(crate) fn http_status(status: http::StatusCode) -> Option<Status> {
    let code = match status.as_u16() {
        200 => return None,
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502 | 503 | 504 => Code::Unavailable,
        _ => Code::Unknown,
    };
    Some(Status::new(code, format!("HTTP status {status} without a grpc-status")))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn boxed(status: Status) -> GrpcError {
        Box::new(status)
    }

    #[test]
    fn only_unavailable_is_retried() {
        let retried: Vec<Code> =
            (0..17).map(Code::from_i32).filter(|&code| is_retryable(&boxed(Status::new(code, "")))).collect();
        assert_eq!(retried, [Code::Unavailable]);
        let timeout: GrpcError = Box::new(Rejection::CallTimeout { instance: "x".into(), timeout: Duration::ZERO });
        assert!(!is_retryable(&timeout));
        assert!(!is_retryable(&(Box::new(std::io::Error::other("odd")) as GrpcError)));
    }

    #[test]
    fn server_faults_are_five_codes() {
        let faults = (0..17).map(Code::from_i32).filter(|&code| is_server_fault(&boxed(Status::new(code, "")))).count();
        assert_eq!(faults, 5);
        assert!(!is_server_fault(&boxed(Status::resource_exhausted("quota"))));
    }

    #[test]
    fn a_status_passes_through_unchanged() {
        let status = into_status(boxed(Status::invalid_argument("bad sku")));
        assert_eq!((status.code(), status.message()), (Code::InvalidArgument, "bad sku"));
    }

    #[test]
    fn refusals_map_to_codes() {
        let full = Rejection::BulkheadFull { instance: "x".into() };
        assert_eq!(into_status(Box::new(full)).code(), Code::ResourceExhausted);
        assert_eq!(
            code_of(&(Box::new(Rejection::CallNotPermitted { instance: "x".into() }) as GrpcError)),
            Code::Unavailable
        );
    }

    #[test]
    fn http_statuses_of_proxies() {
        assert!(http_status(http::StatusCode::OK).is_none());
        assert_eq!(http_status(http::StatusCode::SERVICE_UNAVAILABLE).unwrap().code(), Code::Unavailable);
        assert_eq!(http_status(http::StatusCode::NOT_FOUND).unwrap().code(), Code::Unimplemented);
        assert_eq!(http_status(http::StatusCode::IM_A_TEAPOT).unwrap().code(), Code::Unknown);
    }
}
