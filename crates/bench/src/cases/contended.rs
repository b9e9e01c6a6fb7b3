//! The contended rows (group `contended`, issue 28): [`threads`](crate::threads) threads call one
//! instance at once. Each policy sits beside its anchors, and every row beside the *floor*: what
//! one read-modify-write on a word every thread writes costs at the same thread count, over the
//! same delegate ([`floor_fetch_add`]). A shared-word policy cannot go below its unavoidable
//! read-modify-writes on such a word; `docs/benchmarks.md` ("Contended rows") counts them per policy.
//!
//! The rows whose callers are `Fn + Sync` live beside their single-thread forms (`ours_guarded`,
//! `limits`, `breaker`, `retry`, `adaptive`); here are the floors and the callers that need one
//! clone per thread (tower services are polled through `&mut self`).

use std::future::ready;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use backon::{BlockingRetryable, ExponentialBuilder};
use layered::{Execute, Service as _, Stack};
use seatbelt::ResilienceContext;
use tower::Layer;

use crate::{Fail, consume, exec, opaque, work};

/// One word on a cache line of its own (128 bytes: the adjacent-line prefetcher pairs lines), so
/// the floors measure that word's traffic and nothing that shares its line.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Word(AtomicU64);

/// The floor of a policy that writes no shared word on its pass path: the call alone, on every
/// thread (what the machine's other threads cost the measured one when they share nothing).
pub fn floor_call() -> impl Fn() + Sync {
    || consume(work(opaque(1)))
}

/// The floor: one `fetch_add` (`lock xadd` on x86) on a word every thread writes, then the call.
pub fn floor_fetch_add() -> impl Fn() + Sync {
    let word = Word::default();
    move || {
        word.0.fetch_add(1, Ordering::AcqRel);
        consume(work(opaque(1)));
    }
}

/// The shape of a compare-and-set pass path on the same word: a load, then a compare-and-set
/// loop adding one. Against [`floor_fetch_add`], what the load and the failed attempts cost.
pub fn floor_load_cas() -> impl Fn() + Sync {
    let word = Word::default();
    move || {
        let mut current = word.0.load(Ordering::Acquire);
        while let Err(actual) = word.0.compare_exchange_weak(current, current + 1, Ordering::AcqRel, Ordering::Acquire)
        {
            current = actual;
        }
        consume(work(opaque(1)));
    }
}

/// [`floor_load_cas`] without the load: the first compare-and-set guesses (0, never the value
/// after the first call), fails, and hands back the current value with the line already held for
/// writing, so the second usually succeeds. What a compare-and-set pass path would pay under
/// contention if it did not load first (alone, the failed attempt costs one more locked
/// instruction per call).
pub fn floor_cas_first() -> impl Fn() + Sync {
    let word = Word::default();
    move || {
        let mut current = 0;
        while let Err(actual) = word.0.compare_exchange_weak(current, current + 1, Ordering::AcqRel, Ordering::Acquire)
        {
            current = actual;
        }
        consume(work(opaque(1)));
    }
}

/// The shape of a slot (bulkhead, adaptive limit): a `fetch_add` before the call and a
/// `fetch_sub` after it, on the same word.
pub fn floor_add_sub() -> impl Fn() + Sync {
    let word = Word::default();
    move || {
        word.0.fetch_add(1, Ordering::Acquire);
        consume(work(opaque(1)));
        word.0.fetch_sub(1, Ordering::Release);
    }
}

/// The shape of a pass path that takes a GCRA permit with one `fetch_add` (`docs/benchmarks.md`,
/// "One read-modify-write for the rate limiter"): the frame's stamp (a word on its own line that
/// only a rebase writes) loaded, the add on the credit word every thread writes, the stamp loaded
/// again, and the answer judged from the three. Against [`floor_fetch_add`], what the design
/// would cost with nothing else of a policy around it.
pub fn floor_stamped_add() -> impl Fn() + Sync {
    let (stamp, credit) = (Word::default(), Word::default());
    stamp.0.store(opaque(7), Ordering::Relaxed);
    move || {
        let now = opaque(7u64);
        let before = stamp.0.load(Ordering::Acquire);
        let old = credit.0.fetch_add(opaque(1), Ordering::AcqRel);
        let after = stamp.0.load(Ordering::Acquire);
        let permitted = before == now && after == before && old >> 63 == 0 && old <= opaque(u64::MAX >> 1);
        consume(if permitted { work(opaque(1)) } else { Err(crate::Fail) });
    }
}

/// The shape of the stack's shared words with nothing else, on two words `APART` blocks of 128
/// bytes apart: the rate limiter's (a load, then a compare-and-set loop) on the first, then a
/// slot's (`fetch_add` before the call, `fetch_sub` after it) on the second. The rows put them
/// 4 KiB apart (`APART = 32`), as two instances' states on the heap are; every distance from
/// 128 bytes to 8 KiB measured alike (`docs/benchmarks.md`). Against the sum of [`floor_load_cas`] and [`floor_add_sub`], what
/// moving between two contended lines costs by itself.
pub fn floor_two_lines<const APART: usize>() -> impl Fn() + Sync {
    let words: Box<[Word]> = (0..=APART).map(|_| Word::default()).collect();
    move || {
        let (tat, slots) = (&words[0], &words[APART]);
        let mut current = tat.0.load(Ordering::Acquire);
        while let Err(actual) = tat.0.compare_exchange_weak(current, current + 1, Ordering::AcqRel, Ordering::Acquire) {
            current = actual;
        }
        slots.0.fetch_add(1, Ordering::Acquire);
        consume(work(opaque(1)));
        slots.0.fetch_sub(1, Ordering::Release);
    }
}

/// backon, blocking, first attempt succeeds: nothing shared, each thread its own retry.
pub fn retry_backon() -> impl Fn() -> Box<dyn FnMut()> + Sync {
    || Box::new(|| consume((|| work(opaque(1))).retry(ExponentialBuilder::default()).call()))
}

/// One tower service, cloned for each thread (the clones share its state), each clone called and
/// its response polled once.
fn tower_each<S>(service: S) -> impl Fn() -> Box<dyn FnMut()> + Sync
where
    S: tower::Service<u64, Response = u64> + Clone + Send + 'static,
{
    let template = Mutex::new(service);
    move || {
        let mut service = template.lock().expect("the template is never poisoned").clone();
        Box::new(move || consume(exec::call_tower(&mut service, opaque(1))))
    }
}

/// tower-resilience's rate limiter (a limit never reached), one instance cloned for each thread.
pub fn tower_resilience_rate_limiter() -> impl Fn() -> Box<dyn FnMut()> + Sync {
    let layer = tower_resilience::ratelimiter::RateLimiterLayer::builder()
        .limit_for_period(usize::MAX / 2)
        .refresh_period(Duration::from_secs(1))
        .build()
        .expect("a valid rate limiter configuration");
    tower_each(layer.layer(tower::service_fn(|x: u64| ready(work(x)))))
}

/// tower's `ConcurrencyLimit` (room to spare), cloned for each thread: the clones share one
/// semaphore.
pub fn tower_concurrency_limit() -> impl Fn() -> Box<dyn FnMut()> + Sync {
    tower_each(tower::limit::ConcurrencyLimit::new(tower::service_fn(|x: u64| ready(work(x))), 1024))
}

/// tower-resilience's adaptive limiter (AIMD, initial limit 20, never reached), cloned for each
/// thread.
pub fn tower_resilience_adaptive() -> impl Fn() -> Box<dyn FnMut()> + Sync {
    let layer = tower_resilience::adaptive::AdaptiveLimiterLayer::new(super::adaptive::tower_resilience_aimd());
    tower_each(layer.layer(tower::service_fn(|x: u64| ready(work(x)))))
}

const LIMIT: Duration = Duration::from_secs(1);

/// `tokio::time::timeout` around a ready future, on every thread at once (they share the runtime's
/// timer through its handle).
pub fn tokio_timeout() -> impl Fn() + Sync {
    || consume(exec::poll_now(tokio::time::timeout(LIMIT, async { work(opaque(1)) })))
}

/// seatbelt's timeout layer over `Execute`, on tick's tokio clock, one service for all threads.
pub fn seatbelt_timeout() -> impl Fn() + Sync {
    let context: ResilienceContext<u64, Result<u64, Fail>> =
        ResilienceContext::new(tick::Clock::new_tokio()).name("bench");
    let service = (
        seatbelt::timeout::Timeout::layer("timeout", &context).timeout(LIMIT).timeout_error(|_| Fail),
        Execute::new(|x: u64| async move { work(x) }),
    )
        .into_service();
    move || consume(exec::poll_now(service.execute(opaque(1))))
}
