#!/usr/bin/env python3
"""Per-instruction profile of one bench case: which instructions one call executes, with the
source line each comes from.

usage: crates/bench/annotate.py CASE [ITERATIONS]     (needs valgrind and objdump)
env:   CASES_BIN (default target/release/cases; build it with
       `cargo build --profile bench -p bench --bin cases`)

Runs the case under callgrind (counting only inside the measured loop, as callgrind.sh does) and
prints every instruction executed at least once per call on average, as `count address
instruction`, grouped by function and preceded by the source line it was compiled from (the
bench profile keeps line tables: `debug = 1`). The counts are per call (total / iterations), so a
row's "instr/call" in callgrind.sh is the sum of this listing minus the loop's own entry and exit.
"""
import collections, os, re, subprocess, sys, tempfile

case = sys.argv[1]
iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
binary = os.environ.get("CASES_BIN", "target/release/cases")

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "cg.out")
    subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", "--dump-instr=yes",
         "--toggle-collect=*measured_loop*", binary, "run", case, str(iterations)],
        check=True, capture_output=True)
    lines = open(out).read().splitlines()

# Cost lines are `<address> <line> <Ir>`; addresses may be absolute, relative (+n/-n) or `*`.
# A `calls=` line is followed by one line giving the call's inclusive cost: skipped (it belongs
# to the callee, which has its own cost lines).
counts = collections.Counter()
address, skip = 0, False
for line in lines:
    if line.startswith("calls="):
        skip = True
        continue
    if not line or line[0] not in "+-*0123456789":
        continue
    parts = line.split()
    token = parts[0]
    if token.startswith("0x"):
        address = int(token, 16)
    elif token[0] in "+-":
        step = int(token[1:], 0)
        address += step if token[0] == "+" else -step
    if skip:
        skip = False
        continue
    if len(parts) >= 3:
        counts[address] += int(parts[2])

hot = sorted(a for a, c in counts.items() if c / iterations >= 0.5)
if not hot:
    sys.exit(f"no instruction of {case} ran once per call")

# Disassemble around clusters of hot addresses (one objdump per function-sized cluster).
clusters, start, prev = [], hot[0], hot[0]
for a in hot[1:]:
    if a - prev > 4096:
        clusters.append((start, prev))
        start = a
    prev = a
clusters.append((start, prev))

total = 0.0
for lo, hi in clusters:
    listing = subprocess.run(
        ["objdump", "-d", "-l", "-C", "--no-show-raw-insn", f"--start-address={lo}",
         f"--stop-address={hi + 16}", binary], capture_output=True, text=True, check=True).stdout
    source, shown_source, function = None, None, None
    for row in listing.splitlines():
        m = re.match(r"^[0-9a-f]+ <(.*)>:$", row)
        if m:
            function = m.group(1)
            continue
        m = re.match(r"^\s*([0-9a-f]+):\s*(.*)$", row)
        if not m:
            if row.startswith("/") and ":" in row:
                source = row.split(" (discriminator")[0]
            continue
        per_call = counts.get(int(m.group(1), 16), 0) / iterations
        if per_call < 0.5:
            continue
        if function:
            print(f"\n== {function[:160]}")
            function = None
        if source != shown_source:
            short = re.sub(r"^.*/(library|crates)/", r"\1/", source or "?")
            print(f"      -- {short}")
            shown_source = source
        print(f"{per_call:6.1f}  {m.group(1)}  {m.group(2)[:100]}")
        total += per_call
print(f"\n{total:.1f} instructions per call in this listing (loop entry/exit included)")
