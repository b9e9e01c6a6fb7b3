//! The slow path of a hedged call: several attempts polled side by side inside the caller's
//! future, a timer that starts the next one, and the rules that pick the result.
//!
//! Reached only when the first attempt was not ready on its first poll (or failed there), so the
//! common call never creates the timer nor touches the heap. Extra attempts are boxed as they
//! start (one box each, at most `max_hedged_attempts`); the first stays where the caller pinned
//! it. Each round polls the running attempts in start order before the timer, so an attempt that
//! finishes exactly when the timer fires wins, and a finished attempt is dropped at once.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use super::state::HedgeState;

/// The bookkeeping of one hedged call.
struct Call<E, Fut> {
    /// Attempts started so far (numbered from 1).
    started: u32,
    /// `1 + max_hedged_attempts`.
    limit: u32,
    /// Extra attempts still running, with their numbers, in start order.
    extras: Vec<(u32, Pin<Box<Fut>>)>,
    /// The failure of the attempt that finished last.
    last: Option<E>,
    /// A `CallNotPermitted` was seen (or the registry shut down): start nothing more.
    stopped: bool,
    /// An attempt failed or the timer fired: start the next one now.
    due: bool,
}

impl<E, Fut> Call<E, Fut> {
    fn may_start(&self) -> bool {
        !self.stopped && self.started < self.limit
    }

    fn failed(&mut self, error: E, stops: &impl Fn(&E) -> bool) {
        if stops(&error) {
            self.stopped = true;
        } else {
            self.due = true;
        }
        self.last = Some(error);
    }
}

impl<T, E, Fut: Future<Output = Result<T, E>>> Call<E, Fut> {
    /// Polls the running attempts once, in start order (the first unless `skip_first`), dropping
    /// each that finishes: `Some` with the call's answer on the first `Ok`.
    fn poll_running(
        &mut self,
        first: &mut Pin<&mut Option<Fut>>,
        skip_first: bool,
        state: &HedgeState,
        stops: &impl Fn(&E) -> bool,
        cx: &mut Context<'_>,
    ) -> Option<T> {
        if !skip_first
            && let Some(attempt) = first.as_mut().as_pin_mut()
            && let Poll::Ready(outcome) = attempt.poll(cx)
        {
            first.set(None);
            match outcome {
                Ok(value) => return Some(state.won(self.started, 1, value)),
                Err(error) => self.failed(error, stops),
            }
        }
        let mut i = 0;
        while i < self.extras.len() {
            let Poll::Ready(outcome) = self.extras[i].1.as_mut().poll(cx) else {
                i += 1;
                continue;
            };
            let (number, finished) = self.extras.remove(i);
            drop(finished);
            match outcome {
                Ok(value) => return Some(state.won(self.started, number, value)),
                Err(error) => self.failed(error, stops),
            }
        }
        None
    }

    /// Starts the next attempt and polls it once (only it: the others were polled this round).
    fn start(
        &mut self,
        state: &HedgeState,
        attempt: Fut,
        stops: &impl Fn(&E) -> bool,
        cx: &mut Context<'_>,
    ) -> Option<T> {
        self.started += 1;
        self.due = false;
        state.hedged(self.started);
        let mut attempt = Box::pin(attempt);
        match attempt.as_mut().poll(cx) {
            Poll::Pending => self.extras.push((self.started, attempt)),
            Poll::Ready(Ok(value)) => return Some(state.won(self.started, self.started, value)),
            Poll::Ready(Err(error)) => self.failed(error, stops),
        }
        None
    }
}

/// Polls the first attempt once, in place: most calls finish here, before any timer exists.
#[inline(always)]
pub(crate) fn first_poll<Fut: Future>(first: Pin<&mut Option<Fut>>) -> FirstPoll<'_, Fut> {
    FirstPoll(first)
}

/// The future of [`first_poll`]: ready at once with the first attempt's first `Poll` (`Pending`
/// if there is no attempt, which its one caller never asks). A hand-written future rather than a
/// `poll_fn`, for its always-inlined `poll`, as the timeout's `FirstPoll`.
#[derive(Debug)]
pub(crate) struct FirstPoll<'a, Fut>(Pin<&'a mut Option<Fut>>);

impl<Fut: Future> Future for FirstPoll<'_, Fut> {
    type Output = Poll<Fut::Output>;

    /// Polled once by its one caller (`HedgePolicy::run`), which never polls it again after it
    /// is ready.
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Poll<Fut::Output>> {
        Poll::Ready(self.0.as_mut().as_pin_mut().map_or(Poll::Pending, |attempt| attempt.poll(cx)))
    }
}

/// Runs the call to its end from where [`HedgePolicy::run`](super::HedgePolicy::run) left it:
/// `first` is the first attempt (already polled once, `None` when it failed there with
/// `first_failure`).
///
/// Its poll is never inlined (the `async` block's `#[inline(never)]`): the caller's poll, inlined
/// into the method's, keeps only a call to it.
#[allow(clippy::manual_async_fn)] // an `async fn` would carry `#[inline(never)]` to its constructor, not its poll
pub(crate) fn race<'a, T, E, F, Fut>(
    state: &'a HedgeState,
    mut first: Pin<&'a mut Option<Fut>>,
    first_failure: Option<E>,
    make: &'a mut F,
    stops: &'a impl Fn(&E) -> bool,
) -> impl Future<Output = Result<T, E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    #[inline(never)]
    async move {
        // One version of the values for the whole race (SPEC §16: a call in flight keeps them).
        let (limit, delay) = {
            let config = state.config.load();
            (1 + config.max_hedged_attempts, config.delay)
        };
        let mut call: Call<E, Fut> =
            Call { started: 1, limit, extras: Vec::new(), last: None, stopped: false, due: false };
        // The first attempt was polled in this round already: poll it again only in the next.
        let mut skip_first = first_failure.is_none();
        if let Some(error) = first_failure {
            call.failed(error, stops);
        }
        let at_once = delay.is_zero();
        let mut alarm = pin!(None);
        poll_fn(|cx| {
            if let Some(value) = call.poll_running(&mut first, std::mem::take(&mut skip_first), state, stops, cx) {
                return Poll::Ready(Ok(value));
            }
            loop {
                let running = first.is_some() || !call.extras.is_empty();
                if call.may_start() && (call.due || at_once || !running) {
                    alarm.set(None); // every start restarts the delay
                    if let Some(value) = call.start(state, make(), stops, cx) {
                        return Poll::Ready(Ok(value));
                    }
                    continue;
                }
                if !running {
                    state.all_failed(call.started);
                    return Poll::Ready(Err(call.last.take().expect("a call with nothing running has failed")));
                }
                if !call.may_start() {
                    alarm.set(None);
                    return Poll::Pending;
                }
                if alarm.is_none() {
                    alarm.set(Some(state.timer.sleep_async(delay)));
                }
                let Some(timer) = alarm.as_mut().as_pin_mut() else { return Poll::Pending };
                let Poll::Ready(fired) = timer.poll(cx) else { return Poll::Pending };
                alarm.set(None);
                if fired.is_err() {
                    call.stopped = true; // `Registry::shutdown`: start nothing more
                    continue;
                }
                // The clock moved: an attempt that finishes exactly now wins over the next start.
                call.due = true;
                if let Some(value) = call.poll_running(&mut first, false, state, stops, cx) {
                    return Poll::Ready(Ok(value));
                }
            }
        })
        .await
    }
}
