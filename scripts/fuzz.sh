#!/usr/bin/env bash
# Runs every target of polnode_fuzz for SECONDS seconds each (default 30), starting from its
# committed seed corpus fuzz/corpus/<target>/. The corpus is copied to a temporary directory first,
# so new inputs libFuzzer finds never modify the committed files.
#
# Usage: scripts/fuzz.sh [SECONDS]
# Environment:
#   POLNODE_FUZZ_BIN        the fuzz binary (default: build/fuzz/fuzz/polnode_fuzz, the fuzz preset's)
#   POLNODE_FUZZ_ARTIFACTS  where crashing inputs and logs are kept (default: build/fuzz-artifacts)
#   POLNODE_FUZZ_JOBS       how many targets run at once (default: the number of cores)
#
# Prints "fuzz: N targets passed" and exits 0 when no target crashed; otherwise names the failed
# targets, shows the end of their logs, and exits 1. Reproduce a crash with
#   FUZZ=<target> $POLNODE_FUZZ_BIN <artifact file>
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
seconds="${1:-30}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: $0 [SECONDS]   (SECONDS: a positive whole number, default 30)" >&2
  exit 2
fi
bin="${POLNODE_FUZZ_BIN:-$root/build/fuzz/fuzz/polnode_fuzz}"
if [[ ! -x "$bin" ]]; then
  echo "fuzz.sh: no fuzz binary at $bin; build it with" >&2
  echo "  cmake --preset fuzz && cmake --build --preset fuzz --target polnode_fuzz" >&2
  exit 2
fi
artifacts="${POLNODE_FUZZ_ARTIFACTS:-$root/build/fuzz-artifacts}"
jobs="${POLNODE_FUZZ_JOBS:-$(nproc)}"
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: POLNODE_FUZZ_JOBS must be a positive whole number, not '$jobs'" >&2
  exit 2
fi
mkdir -p "$artifacts"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

targets="$("$bin" --list)"
if [[ -z "$targets" ]]; then
  echo "fuzz.sh: $bin lists no targets" >&2
  exit 1
fi

# Runs one target from a scratch copy of its seeds; its exit status goes to $work/rc-<target>.
fuzz_one() {
  local target="$1" seeds="$root/fuzz/corpus/$1" corpus="$work/corpus-$1"
  mkdir -p "$corpus"
  cp -R "$seeds/." "$corpus/"
  # -timeout: one input running 10 s is a hang worth reporting; -rss_limit_mb bounds a leak.
  local rc=0
  FUZZ="$target" "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/$target-" -print_final_stats=1 "$corpus" >"$artifacts/$target.log" 2>&1 || rc=$?
  echo "$rc" >"$work/rc-$target"
}

# Targets run $jobs at a time (each libFuzzer process is single-threaded); results are printed in
# the binary's order once all have ended, so the log reads the same however they interleaved.
passed=0
failed=()
runnable=()
for target in $targets; do
  seeds="$root/fuzz/corpus/$target"
  if [[ ! -d "$seeds" ]] || [[ -z "$(ls -A "$seeds")" ]]; then
    echo "fuzz.sh: target $target has no seed corpus; generate it with" >&2
    echo "  $bin --write-seeds=fuzz/corpus   and commit fuzz/corpus/$target/" >&2
    failed+=("$target")
    continue
  fi
  runnable+=("$target")
done
echo "fuzz: ${#runnable[@]} targets for ${seconds}s each, $jobs at a time"
running=0
for target in "${runnable[@]}"; do
  if [[ $running -ge $jobs ]]; then
    wait -n || true
    running=$((running - 1))
  fi
  fuzz_one "$target" &
  running=$((running + 1))
done
wait
for target in "${runnable[@]}"; do
  log="$artifacts/$target.log"
  rc=$(cat "$work/rc-$target" 2>/dev/null || echo "no status")
  echo "== fuzz $target for ${seconds}s ($(ls "$root/fuzz/corpus/$target" | wc -l) seeds)"
  if [[ "$rc" == 0 ]]; then
    grep -E '^(Done|stat::number_of_executed_units)' "$log" | sed 's/^/   /' || true
    passed=$((passed + 1))
  else
    echo "fuzz.sh: target $target failed (exit $rc); log: $log; last lines:" >&2
    tail -n 40 "$log" >&2
    failed+=("$target")
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: ${#failed[@]} targets failed: ${failed[*]} (inputs in $artifacts)" >&2
  exit 1
fi
echo "fuzz: $passed targets passed"
