//! `GET /events`: every policy event as Server-Sent Events, and the task that counts events.
//!
//! Each client gets its own registry subscription: a bounded buffer the policies push into
//! without ever waiting. A client that reads too slowly loses the events that do not fit; the
//! stream then sends `event: lost` with the running total before the next event, so the page
//! can say its chart has gaps.

use std::convert::Infallible;
use std::sync::{Arc, Weak};

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt};
use resilience4cata::events::Subscription;
use serde_json::json;
use tokio::sync::oneshot;

use crate::state::AdminState;

/// The stream handler: `event: ready` first (the subscription exists from then on), then one
/// unnamed (`message`) event per policy event.
pub(crate) async fn events(State(state): State<Arc<AdminState>>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let buffer = state.options.event_buffer;
    let subscription = state.registry.subscribe(buffer);
    let ready = Event::default().event("ready").data(json!({ "buffer": buffer }).to_string());
    let events = stream::unfold((subscription, 0), next_frames).flat_map(stream::iter);
    Sse::new(stream::once(async { ready }).chain(events).map(Ok)).keep_alive(KeepAlive::default())
}

/// Waits for the next event; yields it, preceded by a `lost` frame when the total grew.
async fn next_frames((mut subscription, reported): (Subscription, u64)) -> Option<(Vec<Event>, (Subscription, u64))> {
    let event = subscription.recv().await;
    let lost = subscription.lost();
    let mut frames = Vec::with_capacity(2);
    if lost > reported {
        frames.push(Event::default().event("lost").data(json!({ "lost": lost }).to_string()));
    }
    // `policy`, `kind`, `instance`, then the variant's own fields (durations in milliseconds):
    // `AnyEvent`'s own `Serialize`, the same for every policy.
    frames.push(
        Event::default().data(
            serde_json::to_string(&event)
                .unwrap_or_else(|_| json!({ "policy": event.policy(), "instance": event.instance() }).to_string()),
        ),
    );
    Some((frames, (subscription, lost)))
}

/// Starts the task that feeds the admin's counts from a subscription of its own. It stops when
/// the router's state is dropped (the returned sender with it), unsubscribing.
pub(crate) fn start_counting(state: &Arc<AdminState>) -> oneshot::Sender<()> {
    let (stop, stopped) = oneshot::channel();
    let subscription = state.registry.subscribe(COUNTING_BUFFER);
    tokio::spawn(count(subscription, Arc::downgrade(state), stopped));
    stop
}

/// Events the counting task may fall behind by before it loses some (then counted in
/// `events_lost`).
const COUNTING_BUFFER: usize = 16 * 1024;

async fn count(mut subscription: Subscription, state: Weak<AdminState>, mut stopped: oneshot::Receiver<()>) {
    loop {
        let event = tokio::select! {
            event = subscription.recv() => event,
            _ = &mut stopped => return,
        };
        let Some(state) = state.upgrade() else { return };
        let lost = subscription.lost();
        state.counts.update(|counts| {
            counts.record(&event);
            counts.events_lost = lost;
        });
    }
}
