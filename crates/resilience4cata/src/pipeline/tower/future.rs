//! The response future of a [`PipelineService`](super::PipelineService) call: a hand-written state
//! machine (attempt → judge → wait → ready → attempt) that sequences calls to the pipeline's
//! rules and policy objects and decides nothing itself.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;
use tower_service::Service;

use super::{ByClone, CloneRequest};
use crate::circuit_breaker::policy::OwnedPermit;
use crate::pipeline::Pipeline;
use crate::pipeline::fallback::{Applied, Falling};
use crate::pipeline::guards::Reserved;
use crate::pipeline::typestate::SyncOrAsync;
use crate::retry::policy::{RetryCall, RetryPolicy};

/// Attempts a call can make: 1 without a retry or with it disabled.
pub(super) fn max_attempts(retry: &RetryPolicy) -> u32 {
    let config = retry.config();
    if config.enabled { config.max_attempts } else { 1 }
}

/// What the attempts after the first need: a service to drive ready (lent to a guarded attempt
/// while it runs), the original request and how to copy it.
pub(super) struct Later<S, Req, C> {
    pub(super) service: Option<S>,
    pub(super) request: Option<Req>,
    pub(super) max_attempts: u32,
    pub(super) cloner: C,
}

impl<S, Req, C: CloneRequest<Req>> Later<S, Req, C> {
    /// The request for attempt `number`: a copy, or the original for the last possible attempt —
    /// or for an earlier one the request cannot be copied for, which then ends the call.
    fn request(&mut self, number: u32) -> (Req, bool) {
        if number < self.max_attempts
            && let Some(copy) = self.request.as_ref().and_then(|r| self.cloner.clone_request(r))
        {
            return (copy, false);
        }
        let original = self.request.take();
        (
            original
                .expect("the retry grants an attempt only while attempts remain, and the last one takes the original"),
            number < self.max_attempts,
        )
    }
}

type Wait = Pin<Box<dyn Future<Output = bool> + Send>>;

/// A guarded attempt runs the pipeline's attempt code with the service lent to it, and gives the
/// service back with the outcome.
type Guarded<S, T, E> = Pin<Box<dyn Future<Output = (Result<T, E>, S)> + Send>>;

pin_project! {
    /// One attempt in flight: the service's own future (alone, or under an owned breaker permit),
    /// a breaker's refusal, or a boxed run through the inner policies.
    #[project = AttemptProj]
    pub(super) enum Attempt<F, S, T, E> {
        Direct { #[pin] future: F },
        Breaker { permit: Option<OwnedPermit>, #[pin] future: F },
        Refused { outcome: Option<Result<T, E>> },
        Guarded { future: Guarded<S, T, E> },
        Hedged { future: Pin<Box<dyn Future<Output = Result<T, E>> + Send>> },
        Idle,
    }
}

/// Whether attempts must be lent the service and boxed: inner policies other than a lone breaker,
/// or (feature `chaos`) injection switched on, whose point sits innermost in the boxed attempt.
fn lends<T, E, M>(pipeline: &Pipeline<T, E, M>) -> bool {
    #[cfg(feature = "chaos")]
    if pipeline.chaos_on() {
        return true;
    }
    pipeline.guards().is_some_and(|guards| guards.only_breaker().is_none())
}

impl<F, S, T, E> Attempt<F, S, T, E> {
    /// Whether the service stays with the caller, so later attempts need a clone.
    pub(super) fn keeps_service(&self) -> bool {
        !matches!(self, Attempt::Guarded { .. })
    }

    /// Starts the first attempt on `service`, which is ready. When attempts are lent the service,
    /// the ready one moves into the attempt and a clone takes its place.
    pub(super) fn start<Req, M>(
        pipeline: &Arc<Pipeline<T, E, M>>,
        service: &mut S,
        request: Req,
        reserved: Reserved,
    ) -> Self
    where
        S: Service<Req, Response = T, Error = E, Future = F> + Clone + Send + 'static,
        F: Future<Output = Result<T, E>> + Send + 'static,
        Req: Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
        M: 'static,
    {
        if !lends(pipeline) {
            // Nothing to reserve without a rate limiter or bulkhead: `reserved` is empty.
            return Attempt::call(pipeline, service, request);
        }
        let ready = std::mem::replace(service, service.clone());
        Attempt::lend(Arc::clone(pipeline), ready, request, reserved)
    }

    /// An unboxed attempt: the call itself, under the breaker's owned permit when there is one (a
    /// refusal never calls the service), exactly the generated breaker layer.
    fn call<Req, M>(pipeline: &Pipeline<T, E, M>, service: &mut S, request: Req) -> Self
    where
        S: Service<Req, Response = T, Error = E, Future = F>,
    {
        let Some(guards) = pipeline.guards() else {
            return Attempt::Direct { future: service.call(request) };
        };
        let breaker = guards.only_breaker().expect("unboxed attempts have no inner policy but a breaker");
        match breaker.acquire_owned() {
            Ok(permit) => Attempt::Breaker { permit: Some(permit), future: service.call(request) },
            Err(rejection) => Attempt::Refused { outcome: Some(Err(guards.refuse(rejection))) },
        }
    }

    fn lend<Req, M>(pipeline: Arc<Pipeline<T, E, M>>, mut service: S, request: Req, reserved: Reserved) -> Self
    where
        S: Service<Req, Response = T, Error = E, Future = F> + Send + 'static,
        F: Future<Output = Result<T, E>> + Send + 'static,
        Req: Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
        M: 'static,
    {
        let future = Box::pin(async move {
            // With the feature `chaos`, the injection point around the service's call, innermost.
            #[cfg(feature = "chaos")]
            let outcome =
                pipeline.attempt_reserved(|| pipeline.chaos_attempt(|| service.call(request)), reserved).await;
            #[cfg(not(feature = "chaos"))]
            let outcome = pipeline.attempt_reserved(|| service.call(request), reserved).await;
            (outcome, service)
        });
        Attempt::Guarded { future }
    }
}

impl<F, S, T, E> Attempt<F, S, T, E> {
    /// A hedged call, boxed whole: `execute_async` races its attempts, each on a service of its
    /// own (the ready `service` first, then clones, each made ready before it is called) and its own
    /// request (the original first, then the `copies` made by the layer's `CloneRequest`, one per
    /// possible extra attempt), so attempts never wait for one another's service.
    pub(super) fn hedged<Req, M>(pipeline: Arc<Pipeline<T, E, M>>, service: S, request: Req, copies: Vec<Req>) -> Self
    where
        S: Service<Req, Response = T, Error = E, Future = F> + Clone + Send + 'static,
        F: Future<Output = Result<T, E>> + Send + 'static,
        Req: Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
        M: 'static,
    {
        let spare = service.clone();
        let mut ready = Some((service, request));
        let mut copies = copies;
        let attempt = move || {
            let (mut service, request, fresh) = match ready.take() {
                Some((service, request)) => (service, Some(request), false),
                None => (spare.clone(), copies.pop(), true),
            };
            async move {
                if fresh {
                    std::future::poll_fn(|cx| service.poll_ready(cx)).await?;
                }
                match request {
                    Some(request) => service.call(request).await,
                    None => unreachable!("one request copy per possible extra attempt"),
                }
            }
        };
        Attempt::Hedged { future: Box::pin(async move { pipeline.execute_async(attempt).await }) }
    }
}

/// Where a [`ResponseFuture`] stands.
enum Phase<T, E> {
    /// `attempt` holds an attempt in flight.
    Calling,
    /// Waiting before the next attempt; `failed` is returned if the wait is interrupted.
    Waiting { wait: Wait, failed: Result<T, E> },
    /// Waiting for the service to be ready for the next attempt.
    Readying,
    /// Awaiting the pipeline's async fallback on the final failure.
    Falling(Falling<T, E>),
    /// The outcome was returned.
    Done,
}

pin_project! {
    /// The future of a [`PipelineService`](super::PipelineService) call (feature `tower`): attempts, waits between them, and
    /// the final outcome, with every decision taken by the pipeline's policy objects.
    pub struct ResponseFuture<S, Req, T, E, M = SyncOrAsync, C = ByClone>
    where
        S: Service<Req>,
    {
        #[pin]
        attempt: Attempt<S::Future, S, T, E>,
        phase: Phase<T, E>,
        call: Option<RetryCall>,
        later: Option<Later<S, Req, C>>,
        pipeline: Arc<Pipeline<T, E, M>>,
    }
}

impl<S, Req, T, E, M, C> fmt::Debug for ResponseFuture<S, Req, T, E, M, C>
where
    S: Service<Req>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let phase = match self.phase {
            Phase::Calling => "calling",
            Phase::Waiting { .. } => "waiting",
            Phase::Readying => "readying",
            Phase::Falling(_) => "falling back",
            Phase::Done => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("pipeline", &self.pipeline.id())
            .field("phase", &phase)
            .field("attempts", &self.call.map(|c| c.attempts()))
            .finish()
    }
}

impl<S, Req, T, E, M, C> ResponseFuture<S, Req, T, E, M, C>
where
    S: Service<Req>,
{
    pub(super) fn new(
        pipeline: Arc<Pipeline<T, E, M>>,
        call: Option<RetryCall>,
        first: Attempt<S::Future, S, T, E>,
        later: Option<Later<S, Req, C>>,
    ) -> Self {
        ResponseFuture { attempt: first, phase: Phase::Calling, call, later, pipeline }
    }
}

impl<S, Req, T, E, M, C> Future for ResponseFuture<S, Req, T, E, M, C>
where
    S: Service<Req, Response = T, Error = E> + Send + 'static,
    S::Future: Send + 'static,
    C: CloneRequest<Req>,
    Req: Send + 'static,
    T: Send + 'static,
    E: Send + 'static,
    M: 'static,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T, E>> {
        let mut this = self.project();
        loop {
            let outcome = match this.phase {
                Phase::Calling => {
                    let outcome = match this.attempt.as_mut().project() {
                        AttemptProj::Direct { future } => match ready!(future.poll(cx)) {
                            // The generated `Ok(v) => break Ok(v)`: only the value moves.
                            Ok(value) if this.pipeline.rules().accepts_every_ok() => {
                                this.attempt.set(Attempt::Idle);
                                *this.phase = Phase::Done;
                                return Poll::Ready(Ok(value));
                            }
                            outcome => outcome,
                        },
                        AttemptProj::Breaker { permit, future } => {
                            let outcome = ready!(future.poll(cx));
                            if let (Some(permit), Some(guards)) = (permit.take(), this.pipeline.guards()) {
                                permit.record(guards.classify(&outcome));
                            }
                            outcome
                        }
                        AttemptProj::Refused { outcome } => outcome.take().expect("a refusal is returned once"),
                        AttemptProj::Guarded { future } => {
                            let (outcome, service) = ready!(future.as_mut().poll(cx));
                            if let Some(later) = this.later.as_mut() {
                                later.service = Some(service);
                            }
                            outcome
                        }
                        AttemptProj::Hedged { future } => {
                            // `execute_async` ran the whole call, its fallback included: a second
                            // `fall_back` would hand the fallback's own `Err` to it again.
                            let outcome = ready!(future.as_mut().poll(cx));
                            this.attempt.set(Attempt::Idle);
                            *this.phase = Phase::Done;
                            return Poll::Ready(outcome);
                        }
                        AttemptProj::Idle => unreachable!("an attempt is in flight while calling"),
                    };
                    this.attempt.set(Attempt::Idle);
                    outcome
                }
                Phase::Waiting { wait, .. } => {
                    let again = ready!(wait.as_mut().poll(cx));
                    let Phase::Waiting { failed, .. } = std::mem::replace(this.phase, Phase::Readying) else {
                        unreachable!("matched above")
                    };
                    if again {
                        continue;
                    }
                    let attempts = this.call.map_or(1, |c| c.attempts());
                    match fall_back(this.pipeline, this.pipeline.rules().give_back(failed), attempts) {
                        Applied::Now(outcome) => {
                            *this.phase = Phase::Done;
                            return Poll::Ready(outcome);
                        }
                        Applied::Later(future) => {
                            *this.phase = Phase::Falling(future);
                            continue;
                        }
                    }
                }
                Phase::Falling(future) => {
                    let outcome = ready!(future.as_mut().poll(cx));
                    *this.phase = Phase::Done;
                    return Poll::Ready(outcome);
                }
                Phase::Readying => {
                    let later = this.later.as_mut().expect("only calls that may retry wait for readiness");
                    let service = later.service.as_mut().expect("the service is back once an attempt ends");
                    match ready!(service.poll_ready(cx)) {
                        Ok(()) => {
                            let number = this.call.map_or(1, |c| c.attempts() + 1);
                            let (request, ends_call) = later.request(number);
                            if ends_call {
                                *this.call = None; // no copy for another attempt: the retry is not asked again
                            }
                            let attempt = if lends(this.pipeline) {
                                let service = later.service.take().expect("checked above");
                                Attempt::lend(Arc::clone(this.pipeline), service, request, Reserved::default())
                            } else {
                                let service = later.service.as_mut().expect("checked above");
                                Attempt::call(this.pipeline, service, request)
                            };
                            this.attempt.set(attempt);
                            *this.phase = Phase::Calling;
                            continue;
                        }
                        Err(e) => Err(e), // this attempt's outcome: the service could not take it
                    }
                }
                Phase::Done => panic!("`ResponseFuture` polled after completion"),
            };
            match next(this.pipeline, this.call, outcome) {
                Next::Return(outcome, attempts) => match fall_back(this.pipeline, outcome, attempts) {
                    Applied::Now(outcome) => {
                        *this.phase = Phase::Done;
                        return Poll::Ready(outcome);
                    }
                    Applied::Later(future) => *this.phase = Phase::Falling(future),
                },
                Next::Wait(wait, failed) => *this.phase = Phase::Waiting { wait, failed },
                Next::Again => *this.phase = Phase::Readying,
            }
        }
    }
}

/// What follows an attempt's outcome.
enum Next<T, E> {
    /// The call's outcome, and the attempts it took (for the fallback).
    Return(Result<T, E>, u32),
    Wait(Wait, Result<T, E>),
    Again,
}

/// Judges an attempt as `execute_async` does and lets the retry decide; a zero wait (or a clock
/// that cannot wait in a future) is taken on the spot, a non-zero one becomes a boxed wait.
fn next<T, E, M>(pipeline: &Pipeline<T, E, M>, call: &mut Option<RetryCall>, outcome: Result<T, E>) -> Next<T, E> {
    let (Some(retry), Some(call)) = (pipeline.retry_policy(), call.as_mut()) else {
        return Next::Return(outcome, 1);
    };
    let Some(failure) = pipeline.rules().judge(&outcome) else {
        return Next::Return(outcome, call.attempts().saturating_add(1));
    };
    match pipeline.rules().next_wait(retry, call, failure, &outcome) {
        None => Next::Return(pipeline.rules().give_back(outcome), call.attempts()),
        Some(wait) if wait.is_zero() || !pipeline.waits_async() => {
            if retry.wait_blocking(call, wait) {
                Next::Again
            } else {
                Next::Return(pipeline.rules().give_back(outcome), call.attempts())
            }
        }
        Some(wait) => {
            let (retry, call) = (retry.clone(), *call);
            Next::Wait(Box::pin(async move { retry.wait_async(&call, wait).await }), outcome)
        }
    }
}

/// An `Err` that ended the call goes to the pipeline's fallback, if it has one.
fn fall_back<T, E, M>(pipeline: &Pipeline<T, E, M>, outcome: Result<T, E>, attempts: u32) -> Applied<T, E> {
    match (outcome, pipeline.fallback_of()) {
        (Err(error), Some(fallback)) => fallback.apply(error, attempts),
        (outcome, _) => Applied::Now(outcome),
    }
}
