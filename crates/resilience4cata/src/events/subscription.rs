//! Subscribers that attach to a built registry: one bounded, lossy queue each.
//!
//! A publisher pushes a clone of the event into every subscriber's queue without waiting on it: a
//! full queue drops its oldest event and counts the loss. While nobody subscribes, the only cost on
//! a publishing path is one relaxed load of a process-wide count of live subscriptions (a static,
//! so no pointer is followed); only when it is not zero does a publisher look at its own
//! registry's subscribers.

use std::fmt;
use std::future::poll_fn;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::task::Poll;

use atomic_waker::AtomicWaker;
use crossbeam_queue::ArrayQueue;

use super::AnyEvent;

/// Live subscriptions in the process, of every registry: the one load a publisher pays while there
/// are none.
static SUBSCRIPTIONS: AtomicUsize = AtomicUsize::new(0);

/// Whether any registry of the process has a live subscription (one relaxed load of a static).
#[inline]
pub(crate) fn any_subscription() -> usize {
    SUBSCRIPTIONS.load(Ordering::Relaxed)
}

/// The subscribers of one registry.
#[derive(Default)]
pub(crate) struct Hub {
    /// How many of this registry's subscriptions are alive.
    count: AtomicUsize,
    queues: RwLock<Vec<Arc<Queue>>>,
}

/// One subscriber's buffer, shared by the publishers and the [`Subscription`].
struct Queue {
    events: ArrayQueue<AnyEvent>,
    lost: AtomicU64,
    waker: AtomicWaker,
}

impl Hub {
    /// Whether any subscription is alive (one relaxed load).
    #[inline]
    pub(crate) fn has_subscribers(&self) -> bool {
        self.count.load(Ordering::Relaxed) != 0
    }

    /// Hands `event` to every subscriber; a full queue drops its oldest event.
    pub(crate) fn publish(&self, event: &AnyEvent) {
        let queues = self.queues.read().unwrap_or_else(PoisonError::into_inner);
        for queue in queues.iter() {
            if queue.events.force_push(event.clone()).is_some() {
                queue.lost.fetch_add(1, Ordering::Relaxed);
            }
            queue.waker.wake();
        }
    }

    pub(crate) fn subscribe(self: &Arc<Self>, capacity: usize) -> Subscription {
        let queue = Arc::new(Queue {
            events: ArrayQueue::new(capacity.max(1)),
            lost: AtomicU64::new(0),
            waker: AtomicWaker::new(),
        });
        let mut queues = self.queues.write().unwrap_or_else(PoisonError::into_inner);
        queues.push(Arc::clone(&queue));
        self.count.store(queues.len(), Ordering::Relaxed);
        SUBSCRIPTIONS.fetch_add(1, Ordering::Relaxed);
        Subscription { hub: Arc::clone(self), queue }
    }

    fn unsubscribe(&self, queue: &Arc<Queue>) {
        let mut queues = self.queues.write().unwrap_or_else(PoisonError::into_inner);
        queues.retain(|q| !Arc::ptr_eq(q, queue));
        self.count.store(queues.len(), Ordering::Relaxed);
        SUBSCRIPTIONS.fetch_sub(1, Ordering::Relaxed);
    }
}

impl fmt::Debug for Hub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hub").field("subscribers", &self.count.load(Ordering::Relaxed)).finish()
    }
}

/// A bounded, lossy stream of every event a registry publishes, from [`Registry::subscribe`].
///
/// Events arrive in the order each publisher published them. When the buffer is full the oldest
/// event is dropped and counted in [`lost`](Subscription::lost); a publisher never waits for a
/// subscriber. Dropping the subscription unsubscribes.
///
/// [`Registry::subscribe`]: crate::Registry::subscribe
///
/// ```
/// use resilience4cata::events::AnyEvent;
/// use resilience4cata::{Registry, RetryEvent};
///
/// let registry = Registry::builder().build()?;
/// let mut events = registry.subscribe(64);
/// assert_eq!(events.try_recv(), None); // nothing published yet
/// assert_eq!(events.lost(), 0);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub struct Subscription {
    hub: Arc<Hub>,
    queue: Arc<Queue>,
}

impl Subscription {
    /// The oldest buffered event, or `None` when the buffer is empty.
    pub fn try_recv(&mut self) -> Option<AnyEvent> {
        self.queue.events.pop()
    }

    /// Waits for the next event. The future needs no particular runtime: a publisher wakes it.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), resilience4cata::RegistryError> {
    /// use std::time::Duration;
    /// use resilience4cata::{Pipeline, Registry};
    ///
    /// let registry = Registry::builder().build()?;
    /// let mut events = registry.subscribe(16);
    /// let pipeline = Pipeline::builder(&registry, "fetch")
    ///     .retry_with(|r| r.max_attempts(2).delay(Duration::ZERO))
    ///     .build::<(), &str>()?;
    /// let _ = pipeline.execute(|| Err("down"));
    /// let event = events.recv().await;
    /// assert_eq!((event.policy(), event.instance()), ("retry", "fetch"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn recv(&mut self) -> impl Future<Output = AnyEvent> + Send + '_ {
        poll_fn(move |cx| {
            if let Some(event) = self.queue.events.pop() {
                return Poll::Ready(event);
            }
            self.queue.waker.register(cx.waker());
            match self.queue.events.pop() {
                Some(event) => Poll::Ready(event),
                None => Poll::Pending,
            }
        })
    }

    /// How many events this subscriber lost because its buffer was full.
    pub fn lost(&self) -> u64 {
        self.queue.lost.load(Ordering::Relaxed)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.unsubscribe(&self.queue);
    }
}

impl fmt::Debug for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subscription")
            .field("buffered", &self.queue.events.len())
            .field("capacity", &self.queue.events.capacity())
            .field("lost", &self.lost())
            .finish()
    }
}
