#!/usr/bin/env bash
# Instructions per call, free of machine noise: each case runs at two iteration counts under
# `valgrind --tool=callgrind`, counting only inside the measured loop (`--toggle-collect`), and the
# difference of the totals divided by the difference of the counts is what one call costs (the
# loop's entry and exit cancel out; setup and warm-up are never counted, so a setup whose cost
# varies from run to run, like a clock calibration, cannot leak in). Allocations per call
# come from a native run with the crate's counting allocator (calling thread only).
#
# usage: crates/bench/callgrind.sh [PATTERN...]   (grep -E patterns over case ids; default: all)
# env:   N1, N2 (iteration counts, default 2000 and 12000), CASES_BIN (skip the build)
#
# Multi-thread rows (form MultiThread) get neither figure: their calls run on the runtime's workers.
# Two-thread cases get allocations only: under valgrind the threads are serialised and the contender's
# instructions land in the same total, so an instruction count would say nothing about contention.
set -euo pipefail
cd "$(dirname "$0")/../.."

N1=${N1:-2000}
N2=${N2:-12000}
if [[ -z "${CASES_BIN:-}" ]]; then
    # The bench profile: lto = "fat", codegen-units = 1, the settings criterion runs with.
    cargo build --quiet --profile bench -p bench --bin cases
    # the bench profile writes to `release/` of the target dir, wherever CARGO_TARGET_DIR puts it
    CASES_BIN=${CARGO_TARGET_DIR:-target}/release/cases
fi
command -v valgrind >/dev/null || { echo "valgrind is required (apt-get install valgrind)" >&2; exit 1; }

instructions() { # case-id iterations -> total instructions of one run
    valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='*measured_loop*' "$CASES_BIN" run "$1" "$2" 2>&1 \
        | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}

pattern=$(IFS='|'; echo "${*:-.}")
printf '%-52s %12s %12s\n' case instr/call allocs/call
"$CASES_BIN" list | while IFS=$'\t' read -r id form threads; do
    grep -qE -- "$pattern" <<<"$id" || continue
    # Multi-thread rows run their calls on the runtime's workers, which the calling thread's
    # allocation counter does not see: time only.
    allocs=-
    [[ "$form" == MultiThread ]] || allocs=$("$CASES_BIN" allocs "$id" | cut -f2)
    per_call=-
    if [[ "$threads" == 1 ]]; then
        i1=$(instructions "$id" "$N1")
        i2=$(instructions "$id" "$N2")
        per_call=$(awk -v a="$i1" -v b="$i2" -v n1="$N1" -v n2="$N2" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }')
    fi
    printf '%-52s %12s %12s\n' "$id" "$per_call" "$allocs"
done
