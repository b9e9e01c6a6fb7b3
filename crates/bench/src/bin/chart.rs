//! Draws `docs/img/benchmarks.svg` and prints the user-shaped tables of `docs/benchmarks.md`.
//!
//! ```text
//! cargo run -p bench --bin chart                     # the chart, from the committed callgrind output
//! cargo run -p bench --bin chart -- --table          # also print the tables (times from target/criterion)
//! cargo run -p bench --bin chart -- --metric ns      # draw criterion's medians instead of instructions
//!   --callgrind FILE   callgrind.sh's output (default docs/img/benchmarks.callgrind.txt)
//!   --criterion DIR    criterion's results (default target/criterion)
//!   --out FILE         the SVG to write (default docs/img/benchmarks.svg)
//! cargo run -p bench --bin chart -- --contended FILE # the contended chart and table instead, from
//!                                                    # `cases time contended/` output (FILE);
//!                                                    # --out defaults to docs/img/contended.svg
//! ```
//!
//! Needs neither valgrind nor a font: the figures come from files, the SVG carries its text as text.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::ExitCode;

use bench::report::{self, Figures, Metric};

fn usage() -> ExitCode {
    eprintln!(
        "usage: chart [--table] [--metric instructions|ns] [--callgrind FILE] [--criterion DIR] [--out FILE] | chart --contended FILE [--out FILE]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut callgrind = root.join("docs/img/benchmarks.callgrind.txt");
    let mut criterion = root.join("target/criterion");
    let mut out = root.join("docs/img/benchmarks.svg");
    let (mut metric, mut table) = (Metric::Instructions, false);
    let mut contended: Option<PathBuf> = None;
    let mut out_given = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--table", value) => {
                table = true;
                if let Some(value) = value {
                    eprintln!("--table takes no value, got {value:?}");
                    return usage();
                }
            }
            ("--metric", Some(m)) if m == "instructions" => metric = Metric::Instructions,
            ("--metric", Some(m)) if m == "ns" => metric = Metric::Nanoseconds,
            ("--callgrind", Some(path)) => callgrind = path.into(),
            ("--criterion", Some(path)) => criterion = path.into(),
            ("--out", Some(path)) => {
                out = path.into();
                out_given = true;
            }
            ("--contended", Some(path)) => contended = Some(path.into()),
            _ => return usage(),
        }
    }
    if let Some(path) = contended {
        if !out_given {
            out = root.join("docs/img/contended.svg");
        }
        return contended_chart(&path, &out);
    }
    let text = match std::fs::read_to_string(&callgrind) {
        Ok(text) => text,
        Err(error) => {
            eprintln!(
                "cannot read {}: {error} (crates/bench/callgrind.sh '^user_' > FILE makes it)",
                callgrind.display()
            );
            return ExitCode::FAILURE;
        }
    };
    let mut figures = Figures::from_callgrind(&text);
    figures.read_criterion(&criterion);
    if metric == Metric::Nanoseconds && figures.nanoseconds.is_empty() {
        eprintln!("no criterion results under {} (cargo bench -p bench --bench user_shaped)", criterion.display());
        return ExitCode::FAILURE;
    }
    let source = match metric {
        Metric::Instructions => "callgrind.sh '^user_', fat LTO",
        Metric::Nanoseconds => "criterion medians, bench profile (fat LTO), shared 2-core machine",
    };
    let subtitle = format!(
        "User-shaped rows (crates/bench/src/cases/user_shaped): #[resilient] trait over an #[inline(never)] Result<u32, MyError> call. {source}. Drawn by `cargo run -p bench --bin chart`."
    );
    let svg = match report::svg(&figures, metric, &subtitle) {
        Ok(svg) => svg,
        Err(error) => {
            eprintln!("drawing failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(error) = std::fs::write(&out, svg) {
        eprintln!("cannot write {}: {error}", out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", out.display());
    if table {
        print!("{}", report::markdown(&figures));
    }
    ExitCode::SUCCESS
}

/// The contended chart from `cases time contended/` output, and its table on stdout.
fn contended_chart(path: &std::path::Path, out: &std::path::Path) -> ExitCode {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("cannot read {}: {error} (cases time contended/ > FILE makes it)", path.display());
            return ExitCode::FAILURE;
        }
    };
    let rows = bench::contended::parse(&text);
    let header = text.lines().next().unwrap_or_default().trim_start_matches("# ");
    let threads = text.lines().nth(1).and_then(|line| line.split('\t').nth(1)).unwrap_or("?");
    let subtitle = format!(
        "{threads} threads on one instance; the calling thread's CPU time, median of {} (`cases time contended/`). Drawn by `chart --contended`.",
        header.split_once("  ").map_or("", |s| s.1).trim_matches(|c| c == '(' || c == ')')
    );
    let svg = match bench::contended::svg(&rows, &subtitle) {
        Ok(svg) => svg,
        Err(error) => {
            eprintln!("drawing failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(error) = std::fs::write(out, svg) {
        eprintln!("cannot write {}: {error}", out.display());
        return ExitCode::FAILURE;
    }
    eprintln!("wrote {}", out.display());
    print!("{}", bench::contended::markdown(&rows));
    ExitCode::SUCCESS
}
