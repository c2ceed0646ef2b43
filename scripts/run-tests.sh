#!/usr/bin/env bash
# The README's test command: installs dependencies, checks that every #include follows the layers
# of DESIGN.md section 2 (scripts/check-layers.sh), builds the debug preset (AddressSanitizer +
# UndefinedBehaviorSanitizer, CUDA and HIP compiled when their toolchains exist), runs every
# GoogleTest suite and end-to-end test through CTest, then builds the libFuzzer binary and runs
# every fuzz target from its committed corpus. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
fuzz_seconds=${POLNODE_FUZZ_SECONDS:-30}

./scripts/install-deps.sh

. ./scripts/compiler-cache.sh

echo "== check: GPU code (PTX and AMD assembly against the determinism rules and baseline)"
./scripts/check-gpu-code.sh
echo "== check: includes follow the layers of DESIGN.md section 2"
./scripts/check-layers.sh

echo "== build: debug (ASan + UBSan)"
cmake --preset debug "${compiler_launcher[@]}"
cmake --build --preset debug -j "$jobs"

echo "== test: ctest"
ctest_log=$(mktemp)
set +e
ctest --preset debug -j "$jobs" 2>&1 | tee "$ctest_log"
ctest_rc=${PIPESTATUS[0]}
set -e
total=$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$ctest_log" | tail -1)
failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$ctest_log" | tail -1)
rm -f "$ctest_log"
if [ "$ctest_rc" -ne 0 ] || [ -z "$total" ]; then
  echo "tests: ctest failed (exit $ctest_rc)" >&2
  exit 1
fi

echo "== build: fuzz (clang-14, libFuzzer)"
cmake --preset fuzz "${compiler_launcher[@]}"
cmake --build --preset fuzz -j "$jobs"

echo "== fuzz: every target for ${fuzz_seconds}s"
# The fuzz log goes to stdout and to a temporary file that is parsed afterwards (tee to
# /dev/stderr would reopen, and truncate, a log file that stderr is redirected to).
fuzz_log=$(mktemp)
POLNODE_FUZZ_JOBS="$jobs" ./scripts/fuzz.sh "$fuzz_seconds" | tee "$fuzz_log"
fuzz_targets=$(sed -n 's/^fuzz: \([0-9]*\) targets passed$/\1/p' "$fuzz_log")
rm -f "$fuzz_log"
if [ -z "$fuzz_targets" ]; then
  echo "tests: fuzzing failed" >&2
  exit 1
fi

echo "tests: $((total - failed + fuzz_targets)) passed, ${failed} failed"
