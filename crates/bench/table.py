#!/usr/bin/env python3
"""Prints docs/benchmarks.md's table from criterion's results and callgrind.sh's output.

usage: crates/bench/table.py CALLGRIND_OUTPUT [CRITERION_DIR]

CALLGRIND_OUTPUT is what `crates/bench/callgrind.sh` printed (saved to a file); CRITERION_DIR
defaults to target/criterion. Time is criterion's median of the per-call sample means, with the
smallest and largest sample; "x anchor" is the anchor's figure divided by the case's (above 1:
faster than the anchor; the keyed rows are each compared with governor's row of the same key
type and threads). Cases without a figure show a dash. The user-shaped rows (groups user_*)
have their own tables: `cargo run -p bench --bin chart -- --table`.
"""
import json
import os
import subprocess
import sys

ANCHORS = {
    "baseline": "direct",
    "retry_success": "direct",
    "retry_fail_once": "backon_sync",
    "budget_success": "direct",
    "breaker_closed": "recloser_sync",
    "rate_limiter_pass": "governor_sync",
    "bulkhead_pass": "tokio_semaphore_sync",
    "adaptive_limit_pass": "tower_resilience_adaptive_async",
    "timeout_pass": "tokio_timeout_async",
    "full_stack": "tower_resilience_async",
}
# Groups whose rows each have their own anchor: the row of the same name with `ours` replaced.
TWIN_ANCHORS = {
    "keyed_rate_limiter_pass": ("ours_", "governor_"),
}


def callgrind(path):
    figures = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 3 and "/" in parts[0]:
                try:
                    figures[parts[0]] = (None if parts[1] == "-" else float(parts[1]), float(parts[2]))
                except ValueError:
                    pass
    return figures


def criterion(root, group, name):
    base = os.path.join(root, group, name, "new")
    try:
        with open(os.path.join(base, "estimates.json")) as f:
            median = json.load(f)["median"]["point_estimate"]
        with open(os.path.join(base, "sample.json")) as f:
            sample = json.load(f)
    except FileNotFoundError:
        return None
    per_call = [t / n for t, n in zip(sample["times"], sample["iters"])]
    return median, min(per_call), max(per_call)


def ns(x):
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    instr = callgrind(sys.argv[1])
    root = sys.argv[2] if len(sys.argv) > 2 else "target/criterion"
    cases_bin = os.environ.get("CASES_BIN", "target/release/cases")
    listing = subprocess.run([cases_bin, "list"], capture_output=True, text=True, check=True).stdout
    rows = [line.split("\t") for line in listing.splitlines()]
    print("| case | form | threads | ns median (min–max) | instr/call | allocs/call | × anchor (ns) | × anchor (instr) |")
    print("|---|---|---|---|---|---|---|---|")
    for case_id, form, threads in rows:
        group, name = case_id.split("/", 1)
        if group.startswith("user_"):
            continue  # the user-shaped rows: `cargo run -p bench --bin chart -- --table`
        if group in TWIN_ANCHORS:
            ours, theirs = TWIN_ANCHORS[group]
            anchor = f"{group}/{name.replace(ours, theirs, 1)}"
        else:
            anchor = f"{group}/{ANCHORS.get(group, '')}"
        t = criterion(root, group, name)
        ta = criterion(root, *anchor.split("/", 1))
        i = instr.get(case_id)
        ia = instr.get(anchor)
        time_cell = f"{ns(t[0])} ({ns(t[1])}–{ns(t[2])})" if t else "–"
        instr_cell = f"{i[0]:.0f}" if i and i[0] is not None else "–"
        alloc_cell = f"{i[1]:g}" if i else "–"
        x_time = f"{ta[0] / t[0]:.2f}" if t and ta else "–"
        x_instr = f"{ia[0] / i[0]:.2f}" if i and ia and i[0] and ia[0] else "–"
        label = f"**{case_id}**" if case_id == anchor else case_id
        print(f"| {label} | {form.lower()} | {threads} | {time_cell} | {instr_cell} | {alloc_cell} | {x_time} | {x_instr} |")


if __name__ == "__main__":
    main()
