//! The middleware itself: find the request's host, run the request through that host's pipeline,
//! hand back what the last attempt got.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use http::Extensions;
use reqwest::{Method, Request, Response};
use reqwest_middleware::{Error, Middleware, Next};
use resilience4cata::Rejection;

use crate::hosts::{Hosts, host_of};
use crate::outcome::{AttemptError, judge};

/// A [`reqwest_middleware::Middleware`] that runs every request through a resilience4cata
/// pipeline of its host: retry (honouring `Retry-After`), circuit breaker, timeout per attempt
/// and bulkhead, each one the caller chose on the [builder](ResilientMiddleware::builder).
///
/// Cheap to clone (an `Arc` inside): clones share their hosts and instances. See the
/// [crate docs](crate) for what is retried, what the breaker records and how hosts are bounded.
///
/// ```
/// use resilience4cata::Registry;
/// use resilience4cata_reqwest::ResilientMiddleware;
///
/// let registry = Registry::builder().build()?;
/// let middleware = ResilientMiddleware::builder(&registry, "catalog").retry().circuit_breaker().build()?;
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).with(middleware.clone()).build();
/// # drop(client);
/// assert!(middleware.instances().is_empty()); // no request yet: no host, no instance
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone)]
pub struct ResilientMiddleware {
    hosts: Arc<Hosts>,
    every_method: bool,
}

impl fmt::Debug for ResilientMiddleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResilientMiddleware").field("instances", &self.instances()).finish_non_exhaustive()
    }
}

/// A request extension that sends the request once, without retry, whatever its method and
/// body: for a request that must not be repeated although its method is idempotent, or on a
/// middleware built with [`retry_every_method`](crate::ResilientMiddlewareBuilder::retry_every_method).
/// The breaker, the timeout and the bulkhead still apply.
///
/// ```
/// use resilience4cata_reqwest::NoRetry;
///
/// let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new()).build();
/// let request = client.put("http://127.0.0.1:9/documents/7").with_extension(NoRetry);
/// # drop(request);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoRetry;

/// The policy refusal inside an error the middleware returned: an open breaker
/// ([`Rejection::CallNotPermitted`]), a full bulkhead ([`Rejection::BulkheadFull`]) or an
/// attempt cut by the timeout ([`Rejection::CallTimeout`]) with nothing left to retry.
///
/// ```
/// use resilience4cata::Rejection;
///
/// let refused = Rejection::BulkheadFull { instance: "catalog/api.example.com".into() };
/// let error = reqwest_middleware::Error::Middleware(anyhow::Error::new(refused.clone()));
/// assert_eq!(resilience4cata_reqwest::rejection(&error), Some(&refused));
/// ```
pub fn rejection(error: &Error) -> Option<&Rejection> {
    match error {
        Error::Middleware(e) => e.downcast_ref::<Rejection>(),
        Error::Reqwest(_) => None,
    }
}

impl ResilientMiddleware {
    pub(crate) fn from_hosts(hosts: Hosts, every_method: bool) -> Self {
        ResilientMiddleware { hosts: Arc::new(hosts), every_method }
    }

    /// The instance ids made so far, one per host met (`<name>/<host>`), plus `<name>/*` once
    /// more than `max_hosts` hosts were met; sorted.
    ///
    /// ```
    /// use resilience4cata::Registry;
    /// use resilience4cata_reqwest::ResilientMiddleware;
    ///
    /// let registry = Registry::builder().build()?;
    /// let middleware = ResilientMiddleware::builder(&registry, "catalog").circuit_breaker().host("api.example.com").build()?;
    /// assert_eq!(middleware.instances(), ["catalog/api.example.com".into()]);
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn instances(&self) -> Vec<Arc<str>> {
        self.hosts.ids()
    }
}

/// Whether a request may be sent again: its method is idempotent (RFC 9110 §9.2.2) or
/// `every_method` says any will do, its body (if any) is in memory, and the caller did not ask
/// for [`NoRetry`].
fn repeatable(request: &Request, extensions: &Extensions, every_method: bool) -> bool {
    (every_method || idempotent(request.method()))
        && extensions.get::<NoRetry>().is_none()
        && request.body().is_none_or(|b| b.as_bytes().is_some())
}

fn idempotent(method: &Method) -> bool {
    [Method::GET, Method::HEAD, Method::OPTIONS, Method::TRACE, Method::PUT, Method::DELETE].contains(method)
}

/// What an attempt's result becomes for the policies.
fn attempt_outcome(result: reqwest_middleware::Result<Response>) -> Result<Response, AttemptError> {
    match result {
        Ok(response) => judge(response),
        Err(Error::Reqwest(e)) => Err(AttemptError::Transport(e)),
        Err(Error::Middleware(e)) => Err(AttemptError::Middleware(e)),
    }
}

/// What the caller gets: a failed status is a response like any other (the last one the server
/// sent), a refusal is a middleware error holding the [`Rejection`].
fn to_caller(outcome: Result<Response, AttemptError>) -> reqwest_middleware::Result<Response> {
    match outcome {
        Ok(response) => Ok(response),
        Err(AttemptError::Status(response)) => Ok(*response),
        Err(AttemptError::Transport(e)) => Err(Error::Reqwest(e)),
        Err(AttemptError::Middleware(e)) => Err(Error::Middleware(e)),
        Err(AttemptError::Rejected(r)) => Err(Error::Middleware(anyhow::Error::new(r))),
    }
}

/// The request for the next attempt: a copy while the request may be sent again, else the
/// original itself, once (`None` after that, which the pipeline without retry never asks for).
fn next_request(original: &mut Option<Request>, repeatable: bool) -> Option<Request> {
    match repeatable {
        true => original.as_ref().and_then(Request::try_clone),
        false => original.take(),
    }
}

/// One attempt down the rest of the chain, on a copy of the caller's extensions, which `last`
/// keeps once the attempt finishes (a timed-out attempt leaves nothing).
async fn send(
    request: Option<Request>,
    next: Next<'_>,
    callers: &Extensions,
    last: &Mutex<Option<Extensions>>,
) -> Result<Response, AttemptError> {
    let Some(request) = request else {
        return Err(AttemptError::Middleware(anyhow::anyhow!("the request cannot be sent twice")));
    };
    let mut ext = callers.clone();
    let result = next.run(request, &mut ext).await;
    *last.lock().unwrap_or_else(PoisonError::into_inner) = Some(ext);
    attempt_outcome(result)
}

#[async_trait::async_trait]
impl Middleware for ResilientMiddleware {
    async fn handle(
        &self,
        req: Request,
        extensions: &mut Extensions,
        next: Next<'_>,
    ) -> reqwest_middleware::Result<Response> {
        let chains = self.hosts.get(&host_of(req.url())).map_err(|e| Error::Middleware(e.into()))?;
        let repeatable = repeatable(&req, extensions, self.every_method);
        let (callers, last, mut original) = (&*extensions, Mutex::new(None), Some(req));
        let attempt = || send(next_request(&mut original, repeatable), next.clone(), callers, &last);
        let outcome = chains.chain(repeatable).execute(attempt).await;
        if let Some(ext) = last.into_inner().unwrap_or_else(PoisonError::into_inner) {
            *extensions = ext;
        }
        to_caller(outcome)
    }
}
