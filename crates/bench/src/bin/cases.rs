//! The instruction-count runner: runs one case for N calls, so that `callgrind.sh` can take the
//! difference of two runs under `valgrind --tool=callgrind` and divide by the difference in calls.
//!
//! ```text
//! cases list                  every case id (group/name), one a line, with its form and threads
//! cases run ID N              build case ID, warm it up, make N calls, exit
//! cases allocs [ID...]        allocations per call on the calling thread (all cases by default)
//! cases bytes-per-key [N]     net bytes per key of a keyed rate limiter, ours and governor's,
//!                             after N new keys of each kind (default 100000)
//! ```
#![forbid(unsafe_code)]

use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!(
        "usage: cases list | cases run GROUP/NAME ITERATIONS | cases allocs [GROUP/NAME...] | cases bytes-per-key [N]"
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
        _ => usage(),
    }
}
