//! A simulated dependency under steady load, protected by an adaptive limit: the model behind
//! `cargo run --example adaptive_limit` and the test that checks each algorithm finds the
//! dependency's capacity.
//!
//! It is a discrete-event loop on a [`ManualClock`]: every millisecond the clock moves on, every
//! call in flight is polled once (a noop waker: nothing waits for real), finished calls report to
//! the real policy (a [`Pipeline`] with an adaptive limit) and new calls arrive. The dependency
//! serves `capacity` calls at the base latency; past that, latency rises with the square of the
//! load (`base × (n / capacity)²`: twice the capacity, four times the latency) and a call that would take over `give_up` fails with an error at
//! `give_up`, as an overloaded server that times out its own requests. Halfway through, its
//! capacity falls from 40 to 15.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use resilience4cata::adaptive_limit::Algorithm;
use resilience4cata::testing::{self, ManualClock};
use resilience4cata::{Pipeline, Registry};

/// The simulation's parameters; [`Scenario::default`] is the one the chart shows.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Calls offered per millisecond, steadily.
    pub arrivals_per_ms: u32,
    /// Latency of a call while the dependency is within capacity.
    pub base_latency: Duration,
    /// A call that would take longer fails with an error after this long.
    pub give_up: Duration,
    /// Capacity in the first half, then in the second.
    pub capacity: (u32, u32),
    /// Simulated time in total.
    pub duration: Duration,
    /// One sample of the chart per this much time.
    pub sample_every: Duration,
}

impl Default for Scenario {
    fn default() -> Self {
        Scenario {
            arrivals_per_ms: 8,
            base_latency: Duration::from_millis(10),
            give_up: Duration::from_millis(100),
            capacity: (40, 15),
            duration: Duration::from_secs(20),
            sample_every: Duration::from_millis(100),
        }
    }
}

/// One point of the chart: averages over one sampling interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Simulated time, in seconds.
    pub at: f64,
    /// The limit, averaged over the interval's milliseconds.
    pub limit: f64,
    /// Calls holding a slot, averaged over the interval's milliseconds.
    pub in_flight: f64,
    /// The dependency's capacity then.
    pub capacity: u32,
    /// Mean latency of the calls that finished in the interval, in milliseconds.
    pub latency_ms: f64,
    /// Calls refused by the limit in the interval.
    pub refused: u32,
}

/// The dependency: how many calls are inside, and how long a new one will take.
struct Dependency {
    inside: Cell<u32>,
    capacity: Cell<u32>,
}

impl Dependency {
    /// Latency of a call entering with `n` calls inside (itself included).
    fn latency(&self, scenario: &Scenario, n: u32) -> Duration {
        let load = f64::from(n) / f64::from(self.capacity.get());
        scenario.base_latency.mul_f64(load.max(1.0).powi(2))
    }
}

/// One call inside the dependency: ready once the clock reaches its end.
struct Call {
    clock: ManualClock,
    end: Duration,
    fails: bool,
    dependency: Rc<Dependency>,
}

impl Future for Call {
    type Output = std::io::Result<u32>;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        if self.clock.elapsed() < self.end {
            return Poll::Pending;
        }
        Poll::Ready(if self.fails { Err(std::io::Error::other("overloaded")) } else { Ok(1) })
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        self.dependency.inside.set(self.dependency.inside.get() - 1);
    }
}

/// The adaptive limit configuration each algorithm runs with: the defaults, plus (Aimd) a latency
/// timeout of 1.5 × the base latency, since Aimd reacts to latency only through it.
pub fn registry(clock: &ManualClock, algorithm: Algorithm, scenario: &Scenario) -> Registry {
    testing::registry(clock)
        .adaptive_limit_defaults(|a| {
            a.algorithm(algorithm).latency_timeout(scenario.base_latency.mul_f64(1.5)).max_limit(200)
        })
        .build()
        .expect("valid configuration")
}

type Pending<'a> = Pin<Box<dyn Future<Output = std::io::Result<u32>> + 'a>>;

/// Runs the scenario with one algorithm and returns the chart's samples.
pub fn simulate(algorithm: Algorithm, scenario: &Scenario) -> Vec<Sample> {
    let clock = ManualClock::new();
    let registry = registry(&clock, algorithm, scenario);
    let pipeline = Pipeline::builder(&registry, "downstream")
        .adaptive_limit()
        .build::<u32, std::io::Error>()
        .expect("valid pipeline");
    let handle = registry.adaptive_limit("downstream").expect("built");
    let dependency = Rc::new(Dependency { inside: Cell::new(0), capacity: Cell::new(scenario.capacity.0) });
    let start_call = || {
        let dependency = Rc::clone(&dependency);
        let (clock, scenario) = (clock.clone(), scenario.clone());
        pipeline.execute_async(move || {
            let n = dependency.inside.get() + 1;
            dependency.inside.set(n);
            let latency = dependency.latency(&scenario, n);
            let fails = latency > scenario.give_up;
            let end = clock.elapsed() + latency.min(scenario.give_up);
            Call { clock: clock.clone(), end, fails, dependency: Rc::clone(&dependency) }
        })
    };
    let mut cx = Context::from_waker(Waker::noop());
    let mut calls: Vec<Pending<'_>> = Vec::new();
    let mut samples = Vec::new();
    let (mut latency_sum, mut finished, mut refused) = (0.0, 0u32, 0u32);
    let (mut limit_sum, mut in_flight_sum) = (0.0, 0.0);
    let mut started_at: Vec<Duration> = Vec::new();
    let tick = Duration::from_millis(1);
    let ticks_per_sample = (scenario.sample_every.as_millis() / tick.as_millis()) as u64;
    let total_ticks = (scenario.duration.as_millis() / tick.as_millis()) as u64;
    for t in 1..=total_ticks {
        clock.advance(tick);
        if t == total_ticks / 2 {
            dependency.capacity.set(scenario.capacity.1);
        }
        let now = clock.elapsed();
        let mut i = 0;
        while i < calls.len() {
            match calls[i].as_mut().poll(&mut cx) {
                Poll::Pending => i += 1,
                Poll::Ready(_) => {
                    latency_sum += (now - started_at[i]).as_secs_f64() * 1e3;
                    finished += 1;
                    drop(calls.swap_remove(i));
                    started_at.swap_remove(i);
                }
            }
        }
        for _ in 0..scenario.arrivals_per_ms {
            let mut call: Pending<'_> = Box::pin(start_call());
            match call.as_mut().poll(&mut cx) {
                Poll::Pending => {
                    calls.push(call);
                    started_at.push(now);
                }
                Poll::Ready(Err(_)) => refused += 1, // LimitExceeded: the call never started
                Poll::Ready(Ok(_)) => unreachable!("no call finishes in zero time"),
            }
        }
        let s = handle.snapshot();
        limit_sum += f64::from(s.limit);
        in_flight_sum += f64::from(s.in_flight);
        if t % ticks_per_sample == 0 {
            let n = ticks_per_sample as f64;
            samples.push(Sample {
                at: now.as_secs_f64(),
                limit: limit_sum / n,
                in_flight: in_flight_sum / n,
                capacity: dependency.capacity.get(),
                latency_ms: if finished == 0 { 0.0 } else { latency_sum / f64::from(finished) },
                refused,
            });
            (latency_sum, finished, refused) = (0.0, 0, 0);
            (limit_sum, in_flight_sum) = (0.0, 0.0);
        }
    }
    samples
}
