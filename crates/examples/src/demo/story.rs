//! What the script made happen, counted per phase and tenant, and the checks that say whether it
//! told its story: the demo exits non-zero when one fails.

use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use resilience4cata::Rejection;
use resilience4cata::circuit_breaker::State;

use super::client::{PriceError, Quote};
use super::{Phase, TENANTS, TROUBLED};

/// How one tenant's calls ended in one phase (one outcome per call, whatever its retries). Its
/// words are the dashboard's: a call is "failed" (the retry card's red) or "refused" (a policy said
/// no without sending it); "cached" calls were refused by the open breaker and answered by the
/// fallback, so they count as answered, not as refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Answered by the service.
    pub ok: u64,
    /// Answered by the fallback from the cache, the breaker being open.
    pub cached: u64,
    /// Ended with the service's error (a 503, a broken connection) after the retries.
    pub failed: u64,
    /// Ended with the last attempt timed out: failed too.
    pub failed_timed_out: u64,
    /// Refused by the open breaker, with no cached price to answer with.
    pub refused_open: u64,
    /// Refused by the full bulkhead.
    pub refused_bulkhead: u64,
    /// Refused by the adaptive limit.
    pub refused_limit: u64,
}

impl Counts {
    /// Every call counted.
    pub fn calls(&self) -> u64 {
        self.answered() + self.failed + self.failed_timed_out + self.refused()
    }

    /// Calls that got a price: from the service or from the cache.
    pub fn answered(&self) -> u64 {
        self.ok + self.cached
    }

    /// Calls a policy refused without an answer.
    pub fn refused(&self) -> u64 {
        self.refused_open + self.refused_bulkhead + self.refused_limit
    }

    /// The console's line for these counts.
    pub fn describe(&self) -> String {
        format!(
            "calls: {} ok, {} answered from the cache, {} failed ({} timed out on their last attempt), {} refused \
             ({} by the open breaker, {} by the adaptive limit, {} by the full bulkhead)",
            self.ok,
            self.cached,
            self.failed + self.failed_timed_out,
            self.failed_timed_out,
            self.refused(),
            self.refused_open,
            self.refused_limit,
            self.refused_bulkhead,
        )
    }
}

/// One tenant's counts of the current phase, as its callers record them.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    counts: [AtomicU64; 7],
}

impl Tally {
    pub(crate) fn record(&self, outcome: &Result<Quote, PriceError>) {
        let slot = match outcome {
            Ok(Quote { cached: false, .. }) => 0,
            Ok(Quote { cached: true, .. }) => 1,
            Err(PriceError::Rejected(Rejection::CallTimeout { .. })) => 3,
            Err(PriceError::Rejected(Rejection::CallNotPermitted { .. })) => 4,
            Err(PriceError::Rejected(Rejection::BulkheadFull { .. })) => 5,
            Err(PriceError::Rejected(Rejection::LimitExceeded { .. })) => 6,
            Err(_) => 2,
        };
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far, reset for the next phase.
    pub(crate) fn take(&self) -> Counts {
        let [ok, cached, failed, failed_timed_out, refused_open, refused_bulkhead, refused_limit] =
            self.counts.each_ref().map(|c| c.swap(0, Ordering::Relaxed));
        Counts { ok, cached, failed, failed_timed_out, refused_open, refused_bulkhead, refused_limit }
    }
}

/// What the listeners saw of one tenant's policies during the current phase.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// States the breaker moved to.
    moves: Mutex<Vec<State>>,
    /// The lowest adaptive limit.
    lowest_limit: AtomicU32,
}

impl Watch {
    pub(crate) fn breaker_moved(&self, to: State) {
        self.moves.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(to);
    }

    pub(crate) fn limit_moved(&self, to: u32) {
        self.lowest_limit.fetch_min(to, Ordering::Relaxed);
    }

    /// Starts a phase: no move yet, the lowest limit the current one.
    pub(crate) fn restart(&self, limit: u32) -> (Vec<State>, u32) {
        let moves = std::mem::take(&mut *self.moves.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        (moves, self.lowest_limit.swap(limit, Ordering::Relaxed))
    }
}

/// One tenant in one phase.
#[derive(Clone, Debug, PartialEq)]
pub struct TenantReport {
    /// How its calls ended.
    pub counts: Counts,
    /// The states its breaker moved to, in order.
    pub breaker_moves: Vec<State>,
    /// Its breaker's state when the phase ended.
    pub breaker: State,
    /// The lowest adaptive limit of the phase.
    pub lowest_limit: u32,
    /// The adaptive limit when the phase ended.
    pub limit: u32,
    /// Attempts its timeout cut off during the phase (most of them retried into a success).
    pub attempts_timed_out: u64,
    /// Faults chaos injected into its calls during the phase (the chaos phase's, SPEC §17).
    pub chaos_faults: u64,
}

impl TenantReport {
    /// The console's line.
    pub fn describe(&self) -> String {
        format!(
            "{}; attempts timed out: {}; breaker {:?}; adaptive limit {} (lowest {})",
            self.counts.describe(),
            self.attempts_timed_out,
            self.breaker,
            self.limit,
            self.lowest_limit
        )
    }
}

/// One phase: a report per tenant, in the order of [`TENANTS`].
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseReport {
    /// The phase.
    pub phase: Phase,
    /// Per tenant.
    pub tenants: Vec<TenantReport>,
}

/// One check of the story, passed or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What should have happened.
    pub claim: &'static str,
    /// What did.
    pub seen: String,
    /// Whether it happened.
    pub passed: bool,
}

/// The script's run: each phase's report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Story {
    /// In script order.
    pub phases: Vec<PhaseReport>,
}

/// A call answered is one that got a price; the healthy tenant must have (nearly) all of them:
/// a call fails only after three attempts, so a busy machine's stall does not count against it.
const HEALTHY_SHARE: f64 = 0.95;

impl Story {
    fn tenant(&self, phase: Phase, tenant: &str) -> Option<&TenantReport> {
        let index = TENANTS.iter().position(|t| *t == tenant)?;
        self.phases.iter().find(|p| p.phase == phase)?.tenants.get(index)
    }

    fn sum(&self, tenant: &str, phases: &[Phase], f: impl Fn(&TenantReport) -> u64) -> u64 {
        phases.iter().filter_map(|p| self.tenant(*p, tenant)).map(f).sum()
    }

    /// Every check, in the order of the story.
    pub fn checks(&self) -> Vec<Check> {
        use Phase::{Failing, Healthy, Recovered, Slow};
        let check = |claim, seen: String, passed| Check { claim, seen, passed };
        let (a, b) = (TROUBLED, TENANTS[1]);
        let failing_moves = self.tenant(Failing, a).map_or(&[][..], |r| &r.breaker_moves[..]);
        let opened = failing_moves.contains(&State::Open);
        let cached = self.sum(a, &[Failing, Recovered], |r| r.counts.cached);
        let closed = self.tenant(Recovered, a).map_or(State::Open, |r| r.breaker);
        let before = self.tenant(Healthy, a).map_or(0, |r| r.limit);
        let lowest =
            [Slow, Failing].iter().filter_map(|p| self.tenant(*p, a)).map(|r| r.lowest_limit).min().unwrap_or(0);
        let (low, last) = self.tenant(Recovered, a).map_or((0, 0), |r| (r.lowest_limit, r.limit));
        let b_moves: Vec<State> =
            Phase::ALL.iter().filter_map(|p| self.tenant(*p, b)).flat_map(|r| r.breaker_moves.clone()).collect();
        let b_refused = self.sum(b, &Phase::ALL, |r| r.counts.refused_open);
        let b_calls = self.sum(b, &[Slow, Failing], |r| r.counts.calls());
        let b_answered = self.sum(b, &[Slow, Failing], |r| r.counts.answered());
        let a_healthy = self.tenant(Healthy, a).map_or((0, 0), |r| (r.counts.answered(), r.counts.calls()));
        let (faults, a_chaos) = self
            .tenant(Phase::Chaos, a)
            .map_or((0, (0, 0)), |r| (r.chaos_faults, (r.counts.answered(), r.counts.calls())));
        let b_faults = self.sum(b, &Phase::ALL, |r| r.chaos_faults);
        vec![
            check(
                "healthy: tenant-a's calls are answered",
                format!("{} of {} answered", a_healthy.0, a_healthy.1),
                a_healthy.1 > 0 && share(a_healthy.0, a_healthy.1) >= HEALTHY_SHARE,
            ),
            check(
                "tenant-a's adaptive limit comes down while its shard is slow and failing",
                format!("{before} at the end of the healthy phase, {lowest} at the lowest after"),
                lowest > 0 && lowest < before,
            ),
            check(
                "tenant-a's breaker opens while its shard fails",
                format!("moves in the failing phase: {failing_moves:?}"),
                opened,
            ),
            check(
                "the fallback answers tenant-a's refused calls from the cache",
                format!("{cached} calls answered from the cache"),
                cached > 0,
            ),
            check(
                "tenant-a's breaker closes after recovery",
                format!("{closed:?} at the end"),
                closed == State::Closed,
            ),
            check(
                "tenant-a's adaptive limit rises again after recovery",
                format!("from {low} up to {last} in the recovered phase"),
                last > low,
            ),
            check(
                "tenant-b's breaker never leaves Closed and refuses nothing",
                format!("its moves: {b_moves:?}; {b_refused} calls refused by it"),
                b_moves.is_empty() && b_refused == 0,
            ),
            check(
                "tenant-b's calls are answered while tenant-a's shard is slow and failing",
                format!("{b_answered} of {b_calls} answered"),
                b_calls > 0 && share(b_answered, b_calls) >= HEALTHY_SHARE,
            ),
            check(
                "chaos switched on from configuration injects faults into tenant-a's calls, and its retries absorb them",
                format!(
                    "{faults} faults injected; {} of {} calls answered; {b_faults} injected into tenant-b's",
                    a_chaos.0, a_chaos.1
                ),
                faults > 0 && a_chaos.1 > 0 && share(a_chaos.0, a_chaos.1) >= HEALTHY_SHARE && b_faults == 0,
            ),
        ]
    }

    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks().iter().all(|c| c.passed)
    }

    /// The summary: a table of phases and tenants, then each check.
    pub fn summary(&self) -> String {
        let mut out = String::from(
            "phase      tenant    calls  ok   cached  failed  refused  timed-out  breaker  limit (lowest)\n",
        );
        for report in &self.phases {
            for (tenant, r) in TENANTS.iter().zip(&report.tenants) {
                let c = &r.counts;
                let _ = writeln!(
                    out,
                    "{:<10} {tenant:<9} {:>5}  {:>4} {:>6}  {:>6}  {:>7}  {:>9}  {:<8} {} ({})",
                    format!("{:?}", report.phase).to_lowercase(),
                    c.calls(),
                    c.ok,
                    c.cached,
                    c.failed + c.failed_timed_out,
                    c.refused(),
                    r.attempts_timed_out,
                    format!("{:?}", r.breaker),
                    r.limit,
                    r.lowest_limit,
                );
            }
        }
        for check in self.checks() {
            let _ = writeln!(out, "{} {}: {}", if check.passed { "ok  " } else { "FAIL" }, check.claim, check.seen);
        }
        out
    }
}

fn share(part: u64, whole: u64) -> f64 {
    part as f64 / whole.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(counts: Counts, breaker_moves: Vec<State>, breaker: State, limits: (u32, u32)) -> TenantReport {
        let (lowest_limit, limit) = limits;
        TenantReport { counts, breaker_moves, breaker, lowest_limit, limit, attempts_timed_out: 0, chaos_faults: 0 }
    }

    fn answered(ok: u64, cached: u64) -> Counts {
        Counts { ok, cached, ..Counts::default() }
    }

    /// The story as the demo means it: tenant-a's limit falls, its breaker opens and the cache
    /// answers, both recover; tenant-b is answered throughout.
    fn told() -> Story {
        let b = || report(answered(100, 0), vec![], State::Closed, (8, 8));
        let phase = |phase, a| PhaseReport { phase, tenants: vec![a, b()] };
        Story {
            phases: vec![
                phase(Phase::Healthy, report(answered(100, 0), vec![], State::Closed, (8, 8))),
                phase(Phase::Slow, report(answered(60, 0), vec![], State::Closed, (2, 3))),
                phase(
                    Phase::Failing,
                    report(answered(0, 40), vec![State::Open, State::HalfOpen, State::Open], State::Open, (2, 2)),
                ),
                phase(
                    Phase::Recovered,
                    report(answered(70, 10), vec![State::HalfOpen, State::Closed], State::Closed, (2, 6)),
                ),
                phase(
                    Phase::Chaos,
                    TenantReport { chaos_faults: 25, ..report(answered(96, 4), vec![], State::Closed, (6, 8)) },
                ),
            ],
        }
    }

    fn failed(story: &Story) -> Vec<&'static str> {
        story.checks().into_iter().filter(|c| !c.passed).map(|c| c.claim).collect()
    }

    #[test]
    fn the_whole_story_passes_every_check() {
        let story = told();
        assert_eq!(failed(&story), Vec::<&str>::new());
        assert!(story.passed());
        assert!(story.summary().contains("failing    tenant-a"), "{}", story.summary());
    }

    #[test]
    fn tenant_b_refused_for_tenant_a_trouble_fails_the_story() {
        let mut story = told();
        let b = &mut story.phases[2].tenants[1];
        b.counts = Counts { ok: 10, refused_open: 90, ..Counts::default() };
        b.breaker_moves = vec![State::Open];
        let failed = failed(&story);
        assert_eq!(
            failed,
            [
                "tenant-b's breaker never leaves Closed and refuses nothing",
                "tenant-b's calls are answered while tenant-a's shard is slow and failing"
            ]
        );
        assert!(!story.passed());
        assert!(story.summary().contains("FAIL tenant-b"));
    }

    #[test]
    fn a_breaker_that_never_opens_or_a_limit_that_never_moves_fails_the_story() {
        let mut story = told();
        for phase in &mut story.phases {
            let a = &mut phase.tenants[0];
            a.breaker_moves.clear();
            a.counts.cached = 0;
            (a.lowest_limit, a.limit) = (8, 8);
        }
        assert_eq!(
            failed(&story),
            [
                "tenant-a's adaptive limit comes down while its shard is slow and failing",
                "tenant-a's breaker opens while its shard fails",
                "the fallback answers tenant-a's refused calls from the cache",
                "tenant-a's adaptive limit rises again after recovery",
            ]
        );
    }

    #[test]
    fn a_tally_sorts_each_outcome() {
        let tally = Tally::default();
        let refused = |r| Err(PriceError::Rejected(r));
        for outcome in [
            Ok(Quote { cents: 1, cached: false }),
            Ok(Quote { cents: 1, cached: true }),
            Err(PriceError::Status(503)),
            refused(Rejection::CallTimeout { instance: "a".into(), timeout: std::time::Duration::from_secs(1) }),
            refused(Rejection::CallNotPermitted { instance: "a".into() }),
            refused(Rejection::BulkheadFull { instance: "a".into() }),
            refused(Rejection::LimitExceeded { instance: "a".into() }),
        ] {
            tally.record(&outcome);
        }
        let counts = tally.take();
        assert_eq!(
            counts,
            Counts {
                ok: 1,
                cached: 1,
                failed: 1,
                failed_timed_out: 1,
                refused_open: 1,
                refused_bulkhead: 1,
                refused_limit: 1
            }
        );
        assert_eq!((counts.calls(), counts.answered(), counts.refused()), (7, 2, 3));
        assert_eq!(tally.take(), Counts::default(), "taken: reset for the next phase");
    }
}
