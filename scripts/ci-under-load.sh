#!/usr/bin/env bash
# Runs .ci/run on fresh clones of this repository's HEAD, RUNS times in a row, while BUSY busy loops
# (`yes > /dev/null`) compete for the cores: the suite must not depend on how fast the machine is.
# Prints each run's wall time and result and stops at the first failure (its clone and log kept).
#
# Usage: scripts/ci-under-load.sh [RUNS [BUSY]]   (defaults 3 and 2)
# Environment: POLNODE_CI_LOAD_DIR  where clones and logs go (default: a new directory in /var/tmp)
set -euo pipefail

runs="${1:-3}"
busy="${2:-2}"
for n in "$runs" "$busy"; do
  if ! [[ "$n" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 [RUNS [BUSY]]   (whole numbers)" >&2
    exit 2
  fi
done
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${POLNODE_CI_LOAD_DIR:-$(mktemp -d /var/tmp/polnode-ci-load.XXXXXX)}"
mkdir -p "$work"
commit="$(git -C "$root" rev-parse HEAD)"

loops=()
stop_loops() {
  if [[ ${#loops[@]} -gt 0 ]]; then
    kill "${loops[@]}" 2>/dev/null || true
    wait "${loops[@]}" 2>/dev/null || true
  fi
}
trap stop_loops EXIT
for ((i = 0; i < busy; i++)); do
  yes >/dev/null &
  loops+=("$!")
done

echo "ci-under-load: $runs runs of .ci/run at $commit with $busy busy loops; clones and logs in $work"
for ((run = 1; run <= runs; run++)); do
  clone="$work/run-$run"
  rm -rf "$clone"
  git clone --quiet "$root" "$clone"
  git -C "$clone" checkout --quiet "$commit"
  start=$(date +%s)
  if (cd "$clone" && .ci/run) >"$work/run-$run.log" 2>&1; then
    echo "run $run: passed in $(( $(date +%s) - start )) s ($(grep -E '^tests: ' "$work/run-$run.log" | tail -1))"
    rm -rf "$clone"
  else
    echo "run $run: FAILED after $(( $(date +%s) - start )) s; log $work/run-$run.log, clone $clone" >&2
    grep -E 'Failed|FAILED|\*\*\*' "$work/run-$run.log" | tail -20 >&2 || true
    exit 1
  fi
done
echo "ci-under-load: $runs of $runs runs passed"
