#!/usr/bin/env bash
# Times a release build of generated user crates (gen.py) of N methods each, dependencies already
# built: prints "style N wall-seconds cpu-seconds" per crate (cpu: user + system time of cargo
# and rustc, from timed.py: steadier than the wall clock on a shared machine).
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
  read -r wall cpu < <(python3 "$here/timed.py" cargo build --release --quiet --manifest-path "$work/crate/Cargo.toml") || true
  [ -n "${cpu:-}" ] || { echo "the build of $n methods failed" >&2; exit 1; }
  echo "$style $n $wall $cpu"
done
