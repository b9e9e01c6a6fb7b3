#!/usr/bin/env bash
# Times a release build of generated user crates (gen.py) of N methods each, dependencies already
# built: prints "style N wall-seconds cpu-seconds" per crate (cpu: user + system time of cargo
# and rustc, steadier than the wall clock on a shared machine).
#
#   crates/bench/buildtime/measure.sh [--style trait|class|plain] N...
#
# CARGO_TARGET_DIR is honoured (default: target/buildtime in the workspace); the first build there
# also builds the dependencies, which the timed builds then reuse (each timed build compiles the
# generated crate alone).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
style=trait
if [ "${1:-}" = "--style" ]; then style="$2"; shift 2; fi
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target/buildtime}"
export CARGO_INCREMENTAL=0
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Warm-up: the dependencies in release, through a one-method crate.
python3 "$here/gen.py" "$work/crate" 1 --style "$style"
cargo build --release --quiet --manifest-path "$work/crate/Cargo.toml"

for n in "$@"; do
  rm -rf "$work/crate"
  python3 "$here/gen.py" "$work/crate" "$n" --style "$style"
  /usr/bin/time -f "%e %U %S" -o "$work/time" \
    cargo build --release --quiet --manifest-path "$work/crate/Cargo.toml"
  read -r wall user sys < "$work/time"
  printf '%s %s %.2f %.2f\n' "$style" "$n" "$wall" "$(echo "$user + $sys" | bc -l)"
done
