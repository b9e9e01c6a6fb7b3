//! The three limit algorithms, pure and clock-free: a sample in, the new limit out.
//!
//! Ported from Netflix's concurrency-limits (`AIMDLimit`, `Gradient2Limit`, `VegasLimit`); the unit
//! tests below replay its `AIMDLimitTest` and `VegasLimitTest` cases. Every limit is an integer
//! (Gradient2 and Vegas keep a floating-point estimate and report its floor, as Netflix does).

use std::time::Duration;

use super::{AdaptiveLimitConfig, AdaptiveLimitConfigBuilder};
use crate::error::RegistryError;

/// A concurrency-limit algorithm: fed one sample per finished call, it returns the new limit.
///
/// `rtt` is the call's duration, `in_flight` the calls in flight when it took its slot (itself
/// included), `dropped` whether it failed in a way that signals overload (a matching error or a
/// timeout; Aimd also treats `rtt > latency_timeout` as a drop on its own).
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::adaptive_limit::{AdaptiveLimitConfigBuilder, Aimd, LimitAlgorithm};
///
/// let mut aimd = Aimd::new(AdaptiveLimitConfigBuilder::new())?;
/// assert_eq!(aimd.on_sample(Duration::from_millis(5), 1, true), 18); // 20 × 0.9
/// assert_eq!(aimd.limit(), 18);
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
pub trait LimitAlgorithm {
    /// Takes one sample and returns the new limit, within `[min_limit, max_limit]`.
    fn on_sample(&mut self, rtt: Duration, in_flight: u32, dropped: bool) -> u32;

    /// The current limit.
    fn limit(&self) -> u32;
}

/// Netflix's `log10` root function: `max(1, ⌊log10 n⌋)` (so 1 below 100).
pub(crate) fn log10_root(n: u32) -> u32 {
    n.checked_ilog10().unwrap_or(0).max(1)
}

/// A sample's duration in nanoseconds, at least 1 (a zero reading on a coarse or manual clock
/// would divide by zero; Netflix requires `rtt > 0`).
fn rtt_nanos(rtt: Duration) -> f64 {
    (rtt.as_nanos().max(1)) as f64
}

/// Additive increase, multiplicative decrease (Netflix `AIMDLimit`).
///
/// On a drop, or a sample slower than `latency_timeout` (strictly), `limit = ⌊limit ×
/// backoff_ratio⌋`; otherwise, when `in_flight × 2 ≥ limit` (the limit is in use), `limit + 1`;
/// then clamped to `[min_limit, max_limit]`. From 20, successive drops give 18, 16, 14, 12, 10, 9,
/// 8, …, 2, 1, 1.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::adaptive_limit::{AdaptiveLimitConfigBuilder, Aimd, LimitAlgorithm};
///
/// let mut aimd = Aimd::new(AdaptiveLimitConfigBuilder::new().initial_limit(2))?;
/// assert_eq!(aimd.on_sample(Duration::from_millis(1), 1, false), 3); // 1 × 2 ≥ 2
/// assert_eq!(aimd.on_sample(Duration::from_millis(1), 1, false), 3); // 1 × 2 < 3: not in use
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Aimd {
    limit: u32,
    min: u32,
    max: u32,
    backoff_ratio: f64,
    /// `latency_timeout` in nanoseconds, so the policy's pass path compares two integers.
    latency_timeout: u64,
}

impl Aimd {
    /// Aimd from a builder's `initial_limit`, `min_limit`, `max_limit`, `backoff_ratio` and
    /// `latency_timeout` (unset keys take their defaults); `R4C-REG-003` for invalid values.
    pub fn new(config: AdaptiveLimitConfigBuilder) -> Result<Self, RegistryError> {
        Ok(Aimd::from_config(&config.build(None)?))
    }

    pub(crate) fn from_config(c: &AdaptiveLimitConfig) -> Self {
        Aimd {
            limit: c.initial_limit,
            min: c.min_limit,
            max: c.max_limit,
            backoff_ratio: c.backoff_ratio,
            latency_timeout: crate::clock::nanos(c.latency_timeout),
        }
    }

    /// The limit after a sample taken at `limit`, leaving `self` alone: the policy applies it in
    /// the compare-and-set that frees the call's slot.
    #[inline]
    pub(crate) fn next(&self, limit: u32, rtt_nanos: u64, in_flight: u32, dropped: bool) -> u32 {
        self.next_within(limit, rtt_nanos, in_flight, dropped, || (self.min, self.max))
    }

    /// [`next`](Self::next) clamped into `bounds()` instead of its own bounds: the policy's
    /// bounds, which a live update may change (SPEC §16). A limit the sample leaves as it is
    /// comes back unclamped and `bounds` is not called: every writer of the limit clamps it (the
    /// releases here, a live update in `Slots::clamp` after storing its bounds), so it is already
    /// within them, and the common release (a call under half the limit) reads no bounds.
    #[inline]
    pub(crate) fn next_within(
        &self,
        limit: u32,
        rtt_nanos: u64,
        in_flight: u32,
        dropped: bool,
        bounds: impl FnOnce() -> (u32, u32),
    ) -> u32 {
        let next = if dropped || rtt_nanos > self.latency_timeout {
            (f64::from(limit) * self.backoff_ratio) as u32
        } else if u64::from(in_flight) * 2 >= u64::from(limit) {
            limit.saturating_add(1)
        } else {
            return limit;
        };
        let (min, max) = bounds();
        next.clamp(min, max)
    }
}

impl LimitAlgorithm for Aimd {
    fn on_sample(&mut self, rtt: Duration, in_flight: u32, dropped: bool) -> u32 {
        self.limit = self.next(self.limit, crate::clock::nanos(rtt), in_flight, dropped);
        self.limit
    }

    fn limit(&self) -> u32 {
        self.limit
    }
}

/// Netflix's `ExpAvgMeasurement`: a plain mean of the first `warmup` samples, then an exponential
/// moving average with factor `2 / (window + 1)`.
#[derive(Clone, Debug, PartialEq)]
struct ExpAvg {
    value: f64,
    sum: f64,
    count: u32,
    warmup: u32,
    factor: f64,
}

impl ExpAvg {
    fn new(window: u32, warmup: u32) -> Self {
        ExpAvg { value: 0.0, sum: 0.0, count: 0, warmup, factor: 2.0 / (f64::from(window) + 1.0) }
    }

    fn add(&mut self, sample: f64) -> f64 {
        if self.count < self.warmup {
            self.count += 1;
            self.sum += sample;
            self.value = self.sum / f64::from(self.count);
        } else {
            self.value = self.value * (1.0 - self.factor) + sample * self.factor;
        }
        self.value
    }
}

/// The gradient between long-term and current latency (Netflix `Gradient2Limit`).
///
/// Per sample: `long` = the exponential average of `rtt` over `long_window` samples (a plain mean
/// of the first 10); when `long / rtt > 2` (latency came back down after a long overload), `long
/// ×= 0.95`. When `in_flight < limit / 2` the limit stays (the caller, not the dependency, is the
/// bottleneck). Otherwise `gradient = clamp(rtt_tolerance × long / rtt, 0.5, 1)`, `target = limit ×
/// gradient + queue_size`, `limit = limit × (1 − smoothing) + target × smoothing`, clamped to
/// `[min_limit, max_limit]`. Drops are seen only through their latency, as in Netflix's.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::adaptive_limit::{AdaptiveLimitConfigBuilder, Algorithm, Gradient2, LimitAlgorithm};
///
/// let mut g = Gradient2::new(AdaptiveLimitConfigBuilder::new().algorithm(Algorithm::Gradient2))?;
/// // Steady latency and demand: gradient 1, so the limit grows by smoothing × queue_size.
/// assert_eq!(g.on_sample(Duration::from_millis(10), 20, false), 20); // 20.8
/// assert_eq!(g.on_sample(Duration::from_millis(10), 20, false), 21); // 21.6
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Gradient2 {
    estimate: f64,
    long_rtt: ExpAvg,
    min: f64,
    max: f64,
    smoothing: f64,
    tolerance: f64,
    queue_size: f64,
}

impl Gradient2 {
    /// Gradient2 from a builder's limits, `smoothing`, `long_window`, `rtt_tolerance` and
    /// `queue_size`; `R4C-REG-003` for invalid values.
    pub fn new(config: AdaptiveLimitConfigBuilder) -> Result<Self, RegistryError> {
        let config = config.algorithm(super::Algorithm::Gradient2);
        Ok(Gradient2::from_config(&config.build(None)?))
    }

    pub(crate) fn from_config(c: &AdaptiveLimitConfig) -> Self {
        Gradient2 {
            estimate: f64::from(c.initial_limit),
            long_rtt: ExpAvg::new(c.long_window, 10),
            min: f64::from(c.min_limit),
            max: f64::from(c.max_limit),
            smoothing: c.smoothing.unwrap_or(0.2),
            tolerance: c.rtt_tolerance,
            queue_size: f64::from(c.queue_size),
        }
    }
}

impl LimitAlgorithm for Gradient2 {
    fn on_sample(&mut self, rtt: Duration, in_flight: u32, _dropped: bool) -> u32 {
        let short = rtt_nanos(rtt);
        let long = self.long_rtt.add(short);
        if long / short > 2.0 {
            self.long_rtt.value *= 0.95;
        }
        if f64::from(in_flight) < self.estimate / 2.0 {
            return self.limit();
        }
        let gradient = (self.tolerance * long / short).clamp(0.5, 1.0);
        let target = self.estimate * gradient + self.queue_size;
        let smoothed = self.estimate * (1.0 - self.smoothing) + target * self.smoothing;
        self.estimate = smoothed.clamp(self.min, self.max);
        self.limit()
    }

    fn limit(&self) -> u32 {
        self.estimate as u32
    }
}

/// The queue estimated from the no-load latency, as TCP Vegas (Netflix `VegasLimit`).
///
/// The first sample, and any sample faster than it, sets the no-load latency `rtt_noload` and
/// leaves the limit. Every `probe` samples the no-load latency is re-taken from the current
/// sample (`probe = jitter × 30 × limit`, `jitter` in [0.5, 1) from a seeded generator, so runs
/// repeat). Otherwise, with `l = log10_root(limit) = max(1, ⌊log10 limit⌋)` and `queue = ⌈limit ×
/// (1 − rtt_noload / rtt)⌉`: a drop gives `limit − l`; `in_flight × 2 < limit` leaves it (not in
/// use); `queue ≤ l` gives `limit + beta`; `queue < alpha` gives `limit + l`; `queue > beta` gives
/// `limit − l`; else the limit stays. The target is clamped to `[min_limit, max_limit]`, then
/// `limit = (1 − smoothing) × limit + smoothing × target`. `alpha` and `beta` default to `3·l` and
/// `6·l`; the keys replace them with constants.
///
/// ```
/// use std::time::Duration;
/// use resilience4cata::adaptive_limit::{AdaptiveLimitConfigBuilder, LimitAlgorithm, Vegas};
///
/// let ms = Duration::from_millis;
/// let mut v = Vegas::new(AdaptiveLimitConfigBuilder::new().initial_limit(10).alpha(3).beta(6))?;
/// assert_eq!(v.on_sample(ms(10), 10, false), 10); // no-load latency: 10 ms
/// assert_eq!(v.on_sample(ms(50), 11, false), 9); // queue ⌈10 × 0.8⌉ = 8 > beta: 10 − 1
/// # Ok::<(), resilience4cata::RegistryError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Vegas {
    estimate: f64,
    rtt_noload: u128,
    min: f64,
    max: f64,
    smoothing: f64,
    alpha: Option<u32>,
    beta: Option<u32>,
    probe_count: u64,
    probe_jitter: f64,
    rng: fastrand::Rng,
}

/// Netflix's `probeMultiplier`: the no-load latency is re-probed about every 15–30 × limit samples.
const PROBE_MULTIPLIER: f64 = 30.0;
/// The seed of the probe jitter, so every run probes at the same samples.
const PROBE_SEED: u64 = 0x7E6A_5000;

impl Vegas {
    /// Vegas from a builder's limits, `smoothing`, `alpha` and `beta`; `R4C-REG-003` for invalid
    /// values.
    pub fn new(config: AdaptiveLimitConfigBuilder) -> Result<Self, RegistryError> {
        let config = config.algorithm(super::Algorithm::Vegas);
        Ok(Vegas::from_config(&config.build(None)?))
    }

    pub(crate) fn from_config(c: &AdaptiveLimitConfig) -> Self {
        let mut vegas = Vegas {
            estimate: f64::from(c.initial_limit),
            rtt_noload: 0,
            min: f64::from(c.min_limit),
            max: f64::from(c.max_limit),
            smoothing: c.smoothing.unwrap_or(1.0),
            alpha: c.alpha,
            beta: c.beta,
            probe_count: 0,
            probe_jitter: 0.0,
            rng: fastrand::Rng::with_seed(PROBE_SEED),
        };
        vegas.reset_probe();
        vegas
    }

    /// The no-load latency measured so far (zero before the first sample).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resilience4cata::adaptive_limit::{AdaptiveLimitConfigBuilder, LimitAlgorithm, Vegas};
    ///
    /// let mut v = Vegas::new(AdaptiveLimitConfigBuilder::new())?;
    /// v.on_sample(Duration::from_millis(7), 1, false);
    /// assert_eq!(v.rtt_noload(), Duration::from_millis(7));
    /// # Ok::<(), resilience4cata::RegistryError>(())
    /// ```
    pub fn rtt_noload(&self) -> Duration {
        Duration::from_nanos(u64::try_from(self.rtt_noload).unwrap_or(u64::MAX))
    }

    fn reset_probe(&mut self) {
        self.probe_jitter = 0.5 + 0.5 * self.rng.f64();
    }

    fn should_probe(&self) -> bool {
        self.probe_jitter * PROBE_MULTIPLIER * self.estimate <= self.probe_count as f64
    }

    fn target(&self, rtt: u128, in_flight: u32, dropped: bool) -> Option<f64> {
        let limit = self.estimate;
        let l = f64::from(log10_root(limit as u32));
        if dropped {
            return Some(limit - l);
        }
        if f64::from(in_flight) * 2.0 < limit {
            return None;
        }
        let queue = (limit * (1.0 - self.rtt_noload as f64 / rtt as f64)).ceil();
        let alpha = self.alpha.map_or(3.0 * l, f64::from);
        let beta = self.beta.map_or(6.0 * l, f64::from);
        if queue <= l {
            Some(limit + beta)
        } else if queue < alpha {
            Some(limit + l)
        } else if queue > beta {
            Some(limit - l)
        } else {
            None
        }
    }
}

impl LimitAlgorithm for Vegas {
    fn on_sample(&mut self, rtt: Duration, in_flight: u32, dropped: bool) -> u32 {
        let rtt = rtt.as_nanos().max(1);
        self.probe_count += 1;
        if self.should_probe() {
            self.reset_probe();
            self.probe_count = 0;
            self.rtt_noload = rtt;
            return self.limit();
        }
        if self.rtt_noload == 0 || rtt < self.rtt_noload {
            self.rtt_noload = rtt;
            return self.limit();
        }
        if let Some(target) = self.target(rtt, in_flight, dropped) {
            let target = target.clamp(self.min, self.max);
            self.estimate = (1.0 - self.smoothing) * self.estimate + self.smoothing * target;
        }
        self.limit()
    }

    fn limit(&self) -> u32 {
        self.estimate as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive_limit::Algorithm;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn b() -> AdaptiveLimitConfigBuilder {
        AdaptiveLimitConfigBuilder::new()
    }

    #[test]
    fn log10_root_matches_netflix_table() {
        let cases = [(0, 1), (1, 1), (9, 1), (10, 1), (99, 1), (100, 2), (999, 2), (1000, 3), (10_000, 4)];
        for (n, l) in cases {
            assert_eq!(log10_root(n), l, "log10_root({n})");
        }
    }

    // Netflix AIMDLimitTest, case by case (their minLimit default is 20, ours 1: the cases never reach it).
    #[test]
    fn aimd_netflix_default() {
        assert_eq!(Aimd::new(b().initial_limit(10)).unwrap().limit(), 10);
    }

    #[test]
    fn aimd_netflix_increase_on_success() {
        let mut a = Aimd::new(b().initial_limit(20)).unwrap();
        a.on_sample(ms(1), 10, false);
        assert_eq!(a.limit(), 21);
    }

    #[test]
    fn aimd_netflix_decrease_on_drops() {
        let mut a = Aimd::new(b().initial_limit(30)).unwrap();
        a.on_sample(Duration::ZERO, 0, true);
        assert_eq!(a.limit(), 27);
    }

    #[test]
    fn aimd_netflix_success_overflow() {
        let mut a = Aimd::new(b().initial_limit(21).max_limit(21).min_limit(1)).unwrap();
        a.on_sample(ms(1), 10, false);
        assert_eq!(a.limit(), 21, "still at the max after a success");
    }

    #[test]
    fn aimd_drops_from_20_follow_the_spec_sequence() {
        let mut a = Aimd::new(b()).unwrap();
        let seen: Vec<u32> = (0..15).map(|_| a.on_sample(ms(1), 1, true)).collect();
        assert_eq!(seen, [18, 16, 14, 12, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1]);
    }

    #[test]
    fn aimd_latency_strictly_above_the_timeout_is_a_drop() {
        let mut a = Aimd::new(b().latency_timeout(ms(100))).unwrap();
        assert_eq!(a.on_sample(ms(100), 20, false), 21, "at the timeout: a success");
        assert_eq!(a.on_sample(ms(100) + Duration::from_nanos(1), 20, false), 18, "⌊21 × 0.9⌋");
    }

    #[test]
    fn aimd_grows_only_when_the_limit_is_in_use() {
        let mut a = Aimd::new(b().initial_limit(2)).unwrap();
        assert_eq!(a.on_sample(ms(1), 1, false), 3);
        assert_eq!(a.on_sample(ms(1), 1, false), 3);
        assert_eq!(a.on_sample(ms(1), 2, false), 4);
    }

    #[test]
    fn aimd_clamps() {
        let mut a = Aimd::new(b().min_limit(5).initial_limit(6).max_limit(7)).unwrap();
        assert_eq!(a.on_sample(ms(1), 6, false), 7);
        assert_eq!(a.on_sample(ms(1), 7, false), 7);
        assert_eq!(a.on_sample(ms(1), 7, true), 6);
        assert_eq!(a.on_sample(ms(1), 7, true), 5);
        assert_eq!(a.on_sample(ms(1), 7, true), 5);
    }

    fn vegas_netflix() -> Vegas {
        Vegas::new(b().alpha(3).beta(6).smoothing(1.0).initial_limit(10).max_limit(20)).unwrap()
    }

    // Netflix VegasLimitTest.
    #[test]
    fn vegas_netflix_large_limit_increase() {
        let mut v = Vegas::new(b().initial_limit(10_000).max_limit(20_000)).unwrap();
        assert_eq!(v.on_sample(Duration::from_secs(10), 5000, false), 10_000);
        assert_eq!(v.on_sample(Duration::from_secs(10), 6000, false), 10_024, "10000 + 6·log10(10000)");
    }

    #[test]
    fn vegas_netflix_increase_limit() {
        let mut v = vegas_netflix();
        assert_eq!(v.on_sample(ms(10), 10, false), 10);
        assert_eq!(v.on_sample(ms(10), 11, false), 16);
    }

    #[test]
    fn vegas_netflix_decrease_limit() {
        let mut v = vegas_netflix();
        assert_eq!(v.on_sample(ms(10), 10, false), 10);
        assert_eq!(v.on_sample(ms(50), 11, false), 9);
    }

    #[test]
    fn vegas_netflix_no_change_within_thresholds() {
        let mut v = vegas_netflix();
        assert_eq!(v.on_sample(ms(10), 10, false), 10);
        assert_eq!(v.on_sample(ms(14), 14, false), 10);
    }

    /// Netflix's `decreaseSmoothing` uses a custom decrease function (not a key here); the same
    /// shape with the default `limit − log10_root(limit)`, computed by hand.
    #[test]
    fn vegas_decrease_with_smoothing_by_hand() {
        let mut v = Vegas::new(b().smoothing(0.5).initial_limit(100).max_limit(200)).unwrap();
        assert_eq!(v.on_sample(ms(10), 100, false), 100);
        // queue ⌈100 × (1 − 10/20)⌉ = 50 > beta = 6·2 → target 100 − 2 = 98; ½·100 + ½·98 = 99
        assert_eq!(v.on_sample(ms(20), 100, false), 99);
        // 99: l = 1, queue 50 > 6 → target 98; ½·99 + ½·98 = 98.5
        assert_eq!(v.on_sample(ms(20), 100, false), 98);
    }

    #[test]
    fn vegas_drop_lowers_by_log10_and_respects_min() {
        let mut v = Vegas::new(b().min_limit(9).initial_limit(10)).unwrap();
        v.on_sample(ms(10), 10, false);
        assert_eq!(v.on_sample(ms(10), 10, true), 9);
        assert_eq!(v.on_sample(ms(10), 10, true), 9, "clamped at min_limit");
    }

    #[test]
    fn vegas_probe_retakes_the_no_load_latency_deterministically() {
        let run = || {
            let mut v = Vegas::new(b().initial_limit(2).max_limit(2)).unwrap();
            v.on_sample(ms(10), 2, false);
            (1..=60).find(|_| {
                v.on_sample(ms(30), 2, false);
                v.rtt_noload() == ms(30)
            })
        };
        let first = run().expect("probed within 30 × limit samples");
        assert!((30..=61).contains(&first), "jitter × 30 × 2 in [30, 60): {first}");
        assert_eq!(run(), Some(first), "seeded: the same sample every run");
    }

    #[test]
    fn gradient2_by_hand() {
        let mut g = Gradient2::new(b().initial_limit(20)).unwrap();
        // long = 10 ms (mean of one), gradient = min(1, 1.5) = 1: target 24, 0.8·20 + 0.2·24 = 20.8
        assert_eq!(g.on_sample(ms(10), 20, false), 20);
        // long = mean(10, 40) = 25 ms, gradient = clamp(1.5 × 25 / 40) = 0.9375:
        // target 20.8 × 0.9375 + 4 = 23.5, 0.8·20.8 + 0.2·23.5 = 21.34
        assert_eq!(g.on_sample(ms(40), 20, false), 21);
        // app-limited: 5 < 21.34 / 2, no change
        assert_eq!(g.on_sample(ms(1), 5, false), 21);
    }

    #[test]
    fn gradient2_falls_under_sustained_high_latency_and_stays_in_bounds() {
        let mut g = Gradient2::new(b().min_limit(3).initial_limit(50).max_limit(60)).unwrap();
        for _ in 0..10 {
            g.on_sample(ms(10), 50, false);
        }
        let before = g.limit();
        let mut last = before;
        for _ in 0..200 {
            let now = g.on_sample(ms(100), 60, false);
            assert!((3..=60).contains(&now));
            last = now;
        }
        assert!(last < before / 2, "{before} → {last}");
        for _ in 0..2000 {
            last = g.on_sample(ms(1), 60, false);
            assert!((3..=60).contains(&last));
        }
        assert_eq!(last, 60, "low latency with demand climbs to max_limit");
    }

    #[test]
    fn vegas_rises_with_demand_and_falls_with_queueing_within_bounds() {
        let mut v = Vegas::new(b().min_limit(4).initial_limit(10).max_limit(80)).unwrap();
        v.on_sample(ms(10), 10, false);
        let mut last = 0;
        for _ in 0..100 {
            last = v.on_sample(ms(10), 80, false);
            assert!((4..=80).contains(&last));
        }
        assert_eq!(last, 80);
        let mut lowest = last;
        for _ in 0..100 {
            last = v.on_sample(ms(40), 80, false);
            assert!((4..=80).contains(&last));
            lowest = lowest.min(last);
        }
        // Falls by log10_root(limit) = 1 per sample (it would stop at 8, where the queue ⌈limit × ¾⌉
        // is within beta = 6), until the seeded probe, due after 30 × jitter × limit samples.
        assert!((8..=12).contains(&lowest), "{lowest}");
        // A probe then takes 40 ms as the new no-load latency, and the limit climbs again.
        assert_eq!(v.rtt_noload(), ms(40));
        assert_eq!(last, 80);
    }

    #[test]
    fn the_constructors_validate() {
        assert_eq!(Aimd::new(b().backoff_ratio(1.5)).unwrap_err().code(), "R4C-REG-003");
        assert_eq!(Gradient2::new(b().min_limit(0)).unwrap_err().code(), "R4C-REG-003");
        assert_eq!(Vegas::new(b().initial_limit(500)).unwrap_err().code(), "R4C-REG-003");
        let _ = Algorithm::Vegas;
    }
}
