#!/usr/bin/env bash
# gpu-check.sh: the GPU-versus-CPU bitwise check in one command, on any machine with a GPU.
#
#   scripts/gpu-check.sh [--backend cuda|hip] [--jobs N] [--steps N] [--standalone]
#                        [--polnode PATH] [--data DIR] [--prebuilt DIR]
#
# 1. Configures and builds a release build with the GPU backend required (POLNODE_CUDA=ON or
#    POLNODE_HIP=ON) in build/release. If the full configure fails (GPU machines often lack the
#    node's other dependencies: OpenSSL, RocksDB, protobuf, libsecp256k1, GoogleTest), it builds
#    only the kernels and the standalone checker from kernels/gpu/check in build/gpu-check
#    (--standalone goes there directly).
# 2. Runs polnode_gpu_check: every operator on ragged random shapes, GPU against the scalar
#    reference, bit for bit; one PASS/FAIL line per operator. Then its in-process training runs
#    (--train): an MLP (SGD) and a CNN (AdamW) for --steps steps on synthetic data, GPU against
#    the CPU backend, the whole state compared after every step, with digests and steps/s; this
#    end-to-end check needs nothing but the kernels, so it runs in every mode.
#    The cases include NaN with each vendor's payload, +-inf, +-0 and subnormals (NaN payloads
#    may differ; hashes read every NaN alike), and creating the backend runs the device self-test
#    (fma, division, square root, subnormals, ReLU's -0.0 and NaN, det::Exp).
# 3. Runs the GoogleTest GPU suites (polnode_kernels_tests); a skipped GPU test is a failure here.
# 4. With a polnode binary (the full build's, or --polnode PATH, e.g. one built elsewhere and
#    copied here with its libraries): 200-step training runs of an MLP (SGD), a CNN (AdamW) and a
#    GPT (AdamW, on a corpus written here) on the CPU and on the GPU, compared by state hash, with
#    the GPU's steps/s. --data DIR names the Fashion-MNIST folder (default: Debian's
#    dataset-fashion-mnist).
# 5. With that binary: a small GPT task proved on the CPU and on the GPU (equal Merkle roots), and
#    each proof's every segment verified on the other backend.
# --prebuilt DIR skips step 1 and runs binaries built elsewhere (with POLNODE_CUDA or POLNODE_HIP on)
# from DIR, laid out as in a build tree: DIR/kernels/polnode_gpu_check, DIR/tests/polnode_kernels_tests,
# DIR/node/polnode; every step is then required, as with the full build.
# Ends with a summary. With the full build every step is required: one that cannot run (polnode
# or the test suite failed to build) is a FAIL, not a skip. The standalone build runs step 2 only
# and says so in its result line ("RESULT: PASS (standalone: ...)").
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
backend=""
jobs="$(nproc 2>/dev/null || echo 2)"
steps=200
standalone=0
polnode_bin=""
prebuilt=""
data=fashion-mnist
while [[ $# -gt 0 ]]; do
  case "$1" in
    --backend) backend="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --standalone) standalone=1; shift ;;
    --polnode) polnode_bin="$2"; shift 2 ;;
    --data) data="$2"; shift 2 ;;
    --prebuilt) prebuilt="$2"; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "gpu-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [[ -z "$backend" ]]; then
  if command -v nvidia-smi >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
    backend=cuda
  elif [[ -e /dev/kfd ]]; then
    backend=hip
  else
    echo "gpu-check: no NVIDIA or AMD GPU toolchain found; pass --backend cuda|hip" >&2
    exit 2
  fi
fi
case "$backend" in
  cuda) gpu_flags=(-DPOLNODE_CUDA=ON -DPOLNODE_HIP=OFF) ;;
  hip) gpu_flags=(-DPOLNODE_CUDA=OFF -DPOLNODE_HIP=ON) ;;
  *) echo "gpu-check: --backend must be cuda or hip, not '$backend'" >&2; exit 2 ;;
esac

summary=()
failed=0
note() { summary+=("$1"); }

echo "== gpu-check: backend $backend, $jobs build jobs"
if [[ "$backend" == cuda ]] && command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
fi

# ---- 1. build ------------------------------------------------------------------------------
full=0
mkdir -p "$root/build"
build_dir="$root/build/release"
if [[ -n "$prebuilt" ]]; then
  build_dir="$(cd "$prebuilt" && pwd)"
  full=1
  echo "== prebuilt binaries in $build_dir (no build)"
  if [[ ! -x "$build_dir/kernels/polnode_gpu_check" ]]; then
    echo "FAIL prebuilt: no $build_dir/kernels/polnode_gpu_check"
    exit 1
  fi
elif [[ $standalone -eq 0 ]]; then
  echo "== configure (full release build) in $build_dir"
  if cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
       -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc "${gpu_flags[@]}" >"$root/build/gpu-check-configure.log" 2>&1; then
    full=1
  else
    echo "   full configure failed (last lines below); building the kernels alone instead"
    tail -n 5 "$root/build/gpu-check-configure.log" | sed 's/^/   | /'
  fi
fi
if [[ $full -eq 0 && -z "$prebuilt" ]]; then
  build_dir="$root/build/gpu-check"
  echo "== configure (standalone kernels + checker) in $build_dir"
  if ! cmake -S "$root/kernels/gpu/check" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DCMAKE_CXX_COMPILER=g++ -DCMAKE_C_COMPILER=gcc "${gpu_flags[@]}"; then
    echo "FAIL configure: see the CMake errors above"
    exit 1
  fi
fi

if [[ -z "$prebuilt" ]]; then
  # The checker is required; the test suite and the node are extras that depend on everyone
  # else's code, so a break there is reported without hiding the operator results.
  echo "== build polnode_gpu_check"
  start=$(date +%s)
  if ! cmake --build "$build_dir" --target polnode_gpu_check -j "$jobs"; then
    echo "FAIL build: see the compiler errors above"
    exit 1
  fi
  echo "   built in $(( $(date +%s) - start )) s"
  if [[ $full -eq 1 ]]; then
    available="$(cmake --build "$build_dir" --target help 2>/dev/null)"
    for t in polnode_kernels_tests polnode; do
      if ! grep -q "^$t:" <<<"$available"; then continue; fi
      echo "== build $t"
      if ! cmake --build "$build_dir" --target "$t" -j "$jobs" >"$build_dir/gpu-check-build-$t.log" 2>&1; then
        note "FAIL build of $t (last lines of $build_dir/gpu-check-build-$t.log):"
        while read -r line; do note "       $line"; done < <(tail -n 5 "$build_dir/gpu-check-build-$t.log")
        failed=1
      fi
    done
  fi
fi

# ---- 2. per-operator bitwise check -----------------------------------------------------------
echo "== bitwise check: $backend against the scalar reference, every operator"
check_log="$build_dir/gpu-check-ops.log"
"$build_dir/kernels/polnode_gpu_check" --backend "$backend" --train "$steps" | tee "$check_log"
rc=${PIPESTATUS[0]}
pass_ops=$(grep -c '^PASS' "$check_log" || true)
fail_ops=$(grep -c '^FAIL' "$check_log" || true)
while read -r line; do note "$line"; done < <(grep -E '^(PASS|FAIL|SKIP) |^       ' "$check_log")
if [[ $rc -eq 0 ]]; then
  note "PASS operators and in-process training: $pass_ops of $((pass_ops + fail_ops)) checks bit-identical ($backend)"
elif [[ $rc -eq 2 ]]; then
  note "FAIL operators: the $backend backend could not run here (see the SKIP line)"
  failed=1
else
  note "FAIL operators and in-process training: $fail_ops of $((pass_ops + fail_ops)) checks differ ($backend)"
  failed=1
fi

# ---- 3. GoogleTest suite -------------------------------------------------------------------
tests_bin="$build_dir/tests/polnode_kernels_tests"
if [[ -x "$tests_bin" ]]; then
  echo "== GoogleTest: GPU suites"
  gtest_log="$build_dir/gpu-check-gtest.log"
  # Only this backend's instances: the other vendor's skip in a build without it.
  "$tests_bin" --gtest_filter="*GpuBitwise*/${backend}_*:*GpuFactory*:*ConformanceHarness*:*GpuSelfTest*" --gtest_brief=1 \
    2>&1 | tee "$gtest_log"
  gtest_rc=${PIPESTATUS[0]}
  if [[ $gtest_rc -ne 0 ]]; then
    note "FAIL gtest GPU suites (see output above)"
    failed=1
  elif grep -q '\[  SKIPPED \]' "$gtest_log"; then
    # A GPU test skips when it finds no usable device: on a GPU machine that is the failure.
    note "FAIL gtest GPU suites: tests were skipped ($(grep -c '^\[  SKIPPED \]' "$gtest_log") lines), so the $backend device was not used"
    failed=1
  else
    note "PASS gtest GPU suites"
  fi
elif [[ $full -eq 0 ]]; then
  note "NOT RUN gtest GPU suites: standalone build"
else
  note "FAIL gtest GPU suites: polnode_kernels_tests did not build"
  failed=1
fi

# ---- 4. training run by state hash ---------------------------------------------------------
if [[ -z "$polnode_bin" ]]; then polnode_bin="$build_dir/node/polnode"; fi
hash_of() { grep -o '"state_hash"[[:space:]]*:[[:space:]]*"[0-9a-fA-F]*"' | head -n 1 | grep -o '[0-9a-fA-F]\{16,\}'; }
rate_of() { grep -o '"steps_per_s[a-z_]*"[[:space:]]*:[[:space:]]*[0-9.eE+-]*' | head -n 1 | sed 's/.*:[[:space:]]*//' | awk '{printf "%.1f", $1}'; }
corpus_dir="$(mktemp -d)"
trap 'rm -rf "$corpus_dir"' EXIT
for i in $(seq 1 400); do echo "line $i: the quick brown fox jumps over the lazy dog, $((i * 7919 % 1000))."; done > "$corpus_dir/corpus.txt"
if [[ ! -x "$polnode_bin" && $full -eq 0 ]]; then
  note "NOT RUN polnode training: standalone build (pass --polnode PATH to add it)"
elif [[ ! -x "$polnode_bin" ]]; then
  note "FAIL training: no polnode binary at $polnode_bin (it did not build)"
  failed=1
elif ! "$polnode_bin" train --help 2>&1 | grep -q -- '--backend'; then
  note "FAIL training: this polnode's train command has no --backend option"
  failed=1
else
  # An MLP with SGD, a CNN with AdamW and a GPT with AdamW: between them every operator.
  runs=("mlp:784-256-128-10 sgd $data 128" "cnn:c8-p-c16-p-f64-10 adam $data 128"
        "gpt:layers=2,heads=4,width=64,context=32 adam $corpus_dir/corpus.txt 12")
  for run in "${runs[@]}"; do
    read -r model optimizer run_data batch <<<"$run"
    train_args=(train --model "$model" --data "$run_data" --steps "$steps" --batch "$batch"
                --optimizer "$optimizer" --seed 7 --json)
    echo "== training: ${train_args[*]} on cpu and on $backend"
    cpu_out="$("$polnode_bin" "${train_args[@]}" --backend cpu --threads 4 2>&1)"; cpu_rc=$?
    gpu_out="$("$polnode_bin" "${train_args[@]}" --backend "$backend" --threads 1 2>&1)"; gpu_rc=$?
    echo "   cpu: $(tail -n 1 <<<"$cpu_out")"
    echo "   $backend: $(tail -n 1 <<<"$gpu_out")"
    cpu_hash="$(hash_of <<<"$cpu_out")"
    gpu_hash="$(hash_of <<<"$gpu_out")"
    if [[ $cpu_rc -ne 0 || $gpu_rc -ne 0 || -z "$cpu_hash" || -z "$gpu_hash" ]]; then
      note "FAIL training $model $optimizer: a run failed or printed no state_hash (cpu rc $cpu_rc, $backend rc $gpu_rc)"
      failed=1
    elif [[ "$cpu_hash" == "$gpu_hash" ]]; then
      note "PASS training $model $optimizer: $steps steps, identical state hash $cpu_hash ($backend $(rate_of <<<"$gpu_out") steps/s, cpu x4 $(rate_of <<<"$cpu_out") steps/s)"
    else
      note "FAIL training $model $optimizer: $steps steps, state hash cpu $cpu_hash vs $backend $gpu_hash"
      failed=1
    fi
  done
fi

# ---- 5. a GPT proof across backends ---------------------------------------------------------
# Proves a small GPT task on the GPU and on the CPU (the Merkle roots must be equal), then verifies
# every segment of each proof on the other backend. The corpus is written here, so no data set is
# needed.
if [[ -x "$polnode_bin" ]] && "$polnode_bin" train --help 2>&1 | grep -q 'gpt:'; then
  work="$(mktemp -d)"
  cp "$corpus_dir/corpus.txt" "$work/corpus.txt"
  corpus_hash="$("$polnode_bin" train --model gpt:layers=1,heads=2,width=16,context=8 --data "$work/corpus.txt" \
                   --steps 1 --batch 2 --optimizer adam --json 2>/dev/null | grep -o '"dataset_hash":"[0-9a-f]*"' | grep -o '[0-9a-f]\{64\}')"
  cat > "$work/gpt.toml" <<TASK
model = "gpt:layers=2,heads=4,width=64,context=32"
data = "$work/corpus.txt"
dataset_hash = "$corpus_hash"
optimizer = "adam"
lr = 0.003
weight_decay = 0.1
batch = 12
steps = 120
checkpoint_interval = 20
seed = 1
segments = 2
TASK
  "$polnode_bin" keygen --out "$work/solver.key" >/dev/null 2>&1
  root_of() { grep -o '"merkle_root":"[0-9a-f]*"' | grep -o '[0-9a-f]\{64\}'; }
  echo "== GPT proof: prove on cpu and on $backend, verify each on the other"
  cpu_root="$("$polnode_bin" prove --task "$work/gpt.toml" --out "$work/proof-cpu" --key "$work/solver.key" --backend cpu --json 2>/dev/null | root_of)"
  gpu_root="$("$polnode_bin" prove --task "$work/gpt.toml" --out "$work/proof-gpu" --key "$work/solver.key" --backend "$backend" --json 2>/dev/null | root_of)"
  beacon="$(printf '%064d' 7)"
  "$polnode_bin" verify --proof "$work/proof-gpu" --task "$work/gpt.toml" --beacon "$beacon" --segments 6 --backend cpu --json >/dev/null 2>&1; gpu_on_cpu=$?
  "$polnode_bin" verify --proof "$work/proof-cpu" --task "$work/gpt.toml" --beacon "$beacon" --segments 6 --backend "$backend" --json >/dev/null 2>&1; cpu_on_gpu=$?
  if [[ -n "$cpu_root" && "$cpu_root" == "$gpu_root" && $gpu_on_cpu -eq 0 && $cpu_on_gpu -eq 0 ]]; then
    note "PASS GPT proof: identical Merkle root $cpu_root on cpu and $backend; each proof's 6 segments verified on the other backend"
  else
    note "FAIL GPT proof: roots cpu '$cpu_root' vs $backend '$gpu_root'; verify $backend proof on cpu rc $gpu_on_cpu, cpu proof on $backend rc $cpu_on_gpu"
    failed=1
  fi
  rm -rf "$work"
elif [[ ! -x "$polnode_bin" && $full -eq 0 ]]; then
  note "NOT RUN GPT proof: standalone build (pass --polnode PATH to add it)"
else
  note "FAIL GPT proof: no polnode with gpt: models at $polnode_bin"
  failed=1
fi

echo
echo "== gpu-check summary ($backend)"
for line in "${summary[@]}"; do echo "$line"; done
if [[ $failed -ne 0 ]]; then
  echo "RESULT: FAIL"
elif [[ $full -eq 0 && ! -x "$polnode_bin" ]]; then
  echo "RESULT: PASS (standalone: operators, device self-test and in-process MLP/CNN training only)"
else
  echo "RESULT: PASS"
fi
exit $failed
