//! The instruction-count runner: runs one case for N calls, so that `callgrind.sh` can take the
//! difference of two runs under `valgrind --tool=callgrind` and divide by the difference in calls.
//!
//! ```text
//! cases list                  every case id (group/name), one a line, with its form and threads
//! cases run ID N              build case ID, warm it up, make N calls, exit
//! cases allocs [ID...]        allocations per call on the calling thread (all cases by default)
//! cases bytes-per-key [N]     net bytes per key of a keyed rate limiter, ours and governor's,
//!                             after N new keys of each kind (default 100000)
//! cases time [PATTERN...]      ns per call of the cases whose id contains a pattern, without
//!                              criterion: RUNS runs (default 5) of ITERS calls (default 2000000),
//!                              the median, min and max of the calling thread's CPU time per call,
//!                              then the median wall time and the contenders' overlap
//!                              (`Run::overlap`); contended rows use BENCH_THREADS threads
//! ```
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: cases list | cases run GROUP/NAME ITERATIONS | cases allocs [GROUP/NAME...] | cases bytes-per-key [N] | cases time [PATTERN...]"
    );
    ExitCode::from(2)
}

fn find(id: &str) -> Option<&'static bench::Case> {
    let case = bench::find(id);
    if case.is_none() {
        eprintln!("no case named {id:?}; `cases list` shows them");
    }
    case
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["list"] => {
            for case in bench::CASES {
                println!("{}\t{:?}\t{}", case.id(), case.form, case.threads);
            }
            ExitCode::SUCCESS
        }
        ["run", id, iters] => {
            let (Some(case), Ok(iters)) = (find(id), iters.parse::<u64>()) else { return usage() };
            case.run(iters);
            ExitCode::SUCCESS
        }
        ["allocs", ids @ ..] => {
            let chosen: Vec<&bench::Case> = if ids.is_empty() {
                bench::CASES.iter().collect()
            } else {
                match ids.iter().map(|id| find(id)).collect::<Option<Vec<_>>>() {
                    Some(cases) => cases,
                    None => return ExitCode::FAILURE,
                }
            };
            for case in chosen {
                println!("{}\t{}", case.id(), case.allocations_per_call(10_000));
            }
            ExitCode::SUCCESS
        }
        ["bytes-per-key", rest @ ..] => {
            let keys = match rest {
                [] => 100_000,
                [n] => match n.parse::<u64>() {
                    Ok(n) if n > 0 => n,
                    _ => return usage(),
                },
                _ => return usage(),
            };
            let ours = bench::cases::keyed::ours_bytes_per_key(keys);
            let governor = bench::cases::keyed::governor_bytes_per_key(keys);
            println!("{keys} keys\tu64 key\tString key (12 bytes)");
            println!("ours\t{:.0}\t{:.0}", ours.u64_key, ours.str_key);
            println!("governor\t{:.0}\t{:.0}", governor.u64_key, governor.str_key);
            ExitCode::SUCCESS
        }
        ["time", patterns @ ..] => {
            let env =
                |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
            let (runs, iters) = (env("RUNS", 5).max(1), env("ITERS", 2_000_000).max(1));
            println!(
                "# case\tthreads\tcpu ns median\tmin\tmax\twall ns median\toverlap  ({runs} runs of {iters} calls)"
            );
            for case in bench::CASES {
                let id = case.id();
                if !patterns.is_empty() && !patterns.iter().any(|p| id.contains(p)) {
                    continue;
                }
                let per_call = |d: std::time::Duration| d.as_secs_f64() * 1e9 / iters as f64;
                let mut overlap = Vec::new();
                #[cfg(r4c_cas_count)]
                let failed_before = resilience4cata::__private::cas_count::counts();
                let (mut cpu, mut wall): (Vec<f64>, Vec<f64>) = (0..runs)
                    .map(|_| {
                        let run = case.run(iters);
                        overlap.push(run.overlap);
                        (per_call(run.cpu), per_call(run.elapsed))
                    })
                    .unzip();
                #[cfg(r4c_cas_count)]
                {
                    let after = resilience4cata::__private::cas_count::counts();
                    let calls = (runs * iters) as f64;
                    println!(
                        "#   {id}: failed compare-and-sets per call of the measuring thread: rate limiter TAT {:.3}, bulkhead slots {:.3}",
                        (after[0] - failed_before[0]) as f64 / calls,
                        (after[1] - failed_before[1]) as f64 / calls
                    );
                }
                overlap.sort_by(f64::total_cmp);
                cpu.sort_by(f64::total_cmp);
                wall.sort_by(f64::total_cmp);
                let threads = if case.threads > 1 { bench::threads() } else { 1 };
                let mid = cpu.len() / 2;
                println!(
                    "{id}\t{threads}\t{:.1}\t{:.1}\t{:.1}\t{:.1}\t{:.2}",
                    cpu[mid],
                    cpu[0],
                    cpu[cpu.len() - 1],
                    wall[mid],
                    overlap[mid]
                );
            }
            ExitCode::SUCCESS
        }
        _ => usage(),
    }
}
