#!/usr/bin/env bash
# check-gpu-code.sh: what the GPU compilers make of kernels/gpu/gpu_backend.cu, checked without a
# GPU (DESIGN.md section 3; issue 19). Compiles the source as CI's toolchains do (nvcc from
# install-deps.sh, Debian's hipcc) to NVIDIA PTX (sm_80, sm_90) and AMD assembly (gfx90a,
# gfx1030), with the build's determinism flags, and fails when
#   - PTX holds flush-to-zero (.ftz), approximate (.approx) or hardware transcendental/reciprocal
#     instructions (rcp, rsqrt, ex2, lg2, sin, cos, tanh), float atomics or reductions (atom/red
#     on .f16/.f32/.f64), or an add/sub/mul/fma/div/sqrt on floats without an explicit
#     round-to-nearest (.rn): ptxas may fuse an unrounded mul and add into an fma on its own;
#   - AMD assembly holds hardware transcendentals (v_exp/v_log/v_sin/v_cos/v_rsq), float atomics,
#     non-IEEE mad/mac or mixed-precision fma, or a kernel that flushes fp32 denormals
#     (.amdhsa_float_denorm_mode_32 other than 3);
#   - the per-kernel counts of fused multiply-adds, divisions and square roots differ from the
#     checked-in baseline (kernels/gpu/check/isa_baseline.txt): a compiler flag or a kernel change
#     that contracts or splits arithmetic shows up here. After a deliberate kernel change, rerun
#     with --update and commit the new baseline with the change.
#
#   scripts/check-gpu-code.sh [--update] [--keep DIR]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
baseline="$root/kernels/gpu/check/isa_baseline.txt"
update=0
keep=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --update) update=1; shift ;;
    --keep) keep="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "check-gpu-code: unknown argument '$1'" >&2; exit 2 ;;
  esac
done

find_tool() {  # name, candidate paths...
  local name="$1"
  shift
  for candidate in "$@"; do
    if [[ -x "$candidate" ]]; then echo "$candidate"; return 0; fi
  done
  command -v "$name" || true
}
nvcc="$(find_tool nvcc /usr/local/cuda/bin/nvcc /opt/polnode-cuda/nvidia/cu13/bin/nvcc)"
hipcc="$(find_tool hipcc /opt/rocm/bin/hipcc /usr/bin/hipcc)"
if [[ -z "$nvcc" || -z "$hipcc" ]]; then
  echo "check-gpu-code: needs nvcc and hipcc (run scripts/install-deps.sh); found nvcc='$nvcc' hipcc='$hipcc'" >&2
  exit 1
fi

work="${keep:-$(mktemp -d)}"
mkdir -p "$work"
[[ -n "$keep" ]] || trap 'rm -rf "$work"' EXIT
source_file="$root/kernels/gpu/gpu_backend.cu"
includes=(-I"$root/kernels/include" -I"$root/kernels" -I"$root/base/include")
# The build's own determinism flags (kernels/gpu/gpu.cmake reads the same files).
mapfile -t nvcc_flags < <(grep -v '^#' "$root/kernels/gpu/nvcc_flags.txt")
mapfile -t hipcc_flags < <(grep -v '^#' "$root/kernels/gpu/hipcc_flags.txt")

for arch in 80 90; do
  "$nvcc" -ptx -arch="sm_$arch" -std=c++20 -O3 "${nvcc_flags[@]}" -DPOLNODE_HAVE_CUDA "${includes[@]}" \
    "$source_file" -o "$work/sm_$arch.ptx"
done
for arch in gfx90a gfx1030; do
  "$hipcc" -x hip -S --cuda-device-only --offload-arch="$arch" -std=c++20 -O3 "${hipcc_flags[@]}" -DPOLNODE_HAVE_HIP \
    "${includes[@]}" "$source_file" -o "$work/$arch.s" 2> "$work/$arch.log" || {
      cat "$work/$arch.log" >&2
      exit 1
    }
done

failures=0
forbid() {  # file, regex, why
  local hits
  hits="$(grep -nE "$2" "$1" | head -5 || true)"
  if [[ -n "$hits" ]]; then
    echo "FAIL $(basename "$1"): $3" >&2
    echo "$hits" | sed 's/^/    /' >&2
    failures=$((failures + 1))
  fi
}
for ptx in "$work"/sm_*.ptx; do
  forbid "$ptx" '\.ftz\b' "flush-to-zero arithmetic"
  forbid "$ptx" '\.approx\b' "approximate arithmetic"
  forbid "$ptx" '^\s*(rcp|rsqrt|ex2|lg2|sin|cos|tanh)\.' "a hardware transcendental or reciprocal"
  forbid "$ptx" '^\s*(atom|red)\.[a-z0-9.]*\.f(16|32|64)\b' "a float atomic or reduction"
  forbid "$ptx" '^\s*(add|sub|mul|fma)\.f(32|64)\b' "float arithmetic without .rn (may be contracted)"
  forbid "$ptx" '^\s*(div|sqrt)\.(full\.)?f(32|64)\b' "division or square root that is not correctly rounded"
done
for asm in "$work"/gfx*.s; do
  forbid "$asm" '\bv_(exp|log|sin|cos|rsq)_(f16|f32|legacy_f32)\b' "a hardware transcendental"
  forbid "$asm" '\b(global|flat|buffer|ds)_(atomic_)?(add|fadd|min|max|fmin|fmax|pk_add)(_rtn)?_f(16|32|64)\b' \
    "a float atomic"
  forbid "$asm" '\bv_(mad|mac)_(f32|legacy_f32)\b|\bv_fma_mix' "non-IEEE or mixed-precision multiply-add"
  forbid "$asm" '\.amdhsa_float_denorm_mode_32 [012]\b' "a kernel that flushes fp32 denormals"
done

# Per-kernel operation counts, in a stable order: "<target> <kernel> <op>=<n> ...". Kernels are
# named by their demangled signature (an anonymous namespace's mangled name carries a hash of the
# file's path; demangled it reads "(anonymous namespace)").
counts="$work/isa_counts.txt"
: > "$counts"
for ptx in "$work"/sm_*.ptx; do
  awk -v target="$(basename "$ptx" .ptx)" '
    /^(\.visible[ \t]+)?\.entry[ \t]/ { name = $0; sub(/^.*\.entry[ \t]+/, "", name); sub(/\(.*/, "", name); kernels[name] = 1; next }
    name != "" && /^[ \t]*fma\.rn\.f32/ { fma[name]++ }
    name != "" && /^[ \t]*div\.rn\.f32/ { div[name]++ }
    name != "" && /^[ \t]*sqrt\.rn\.f32/ { sqr[name]++ }
    END { for (k in kernels) printf "%s %s fma=%d div=%d sqrt=%d\n", target, k, fma[k], div[k], sqr[k] }
  ' "$ptx" >> "$counts"
done
for asm in "$work"/gfx*.s; do
  awk -v target="$(basename "$asm" .s)" '
    /^_Z[A-Za-z0-9_]*:/ { name = $0; sub(/:.*/, "", name); kernels[name] = 1; next }
    name != "" && /[ \t]v_(pk_)?(fma|fmac|fmaak|fmamk)_f32(_e32|_e64)?[ \t]/ { fma[name]++ }
    name != "" && /[ \t]v_div_fixup_f32(_e64)?[ \t]/ { div[name]++ }
    name != "" && /[ \t]v_(rcp|sqrt)_f32(_e32|_e64)?[ \t]/ { rcp[name]++ }
    END { for (k in kernels) printf "%s %s fma=%d div=%d rcp_sqrt=%d\n", target, k, fma[k], div[k], rcp[k] }
  ' "$asm" >> "$counts"
done
# Demangled, without the spaces after commas (one field per kernel).
c++filt < "$counts" | sed -E 's/, /,/g' > "$counts.named"
mv "$counts.named" "$counts"
sort -o "$counts" "$counts"

tools="# nvcc: $("$nvcc" --version | tail -1); hipcc: $("$hipcc" --version 2>/dev/null | grep -m1 -i 'clang version' || echo unknown)"
if [[ $update -eq 1 ]]; then
  { echo "$tools"; cat "$counts"; } > "$baseline"
  echo "check-gpu-code: baseline updated ($(wc -l < "$counts") kernel entries)"
elif [[ ! -f "$baseline" ]]; then
  echo "FAIL no baseline at $baseline (run with --update and commit it)" >&2
  failures=$((failures + 1))
elif ! diff <(grep -v '^#' "$baseline") "$counts" > "$work/baseline.diff"; then
  echo "FAIL per-kernel operation counts differ from kernels/gpu/check/isa_baseline.txt" \
       "(a flag or kernel change contracted or split arithmetic; if deliberate, rerun with --update):" >&2
  sed 's/^/    /' "$work/baseline.diff" | head -40 >&2
  failures=$((failures + 1))
fi

if [[ $failures -ne 0 ]]; then
  echo "check-gpu-code: $failures check(s) failed" >&2
  exit 1
fi
echo "check-gpu-code: PTX (sm_80, sm_90) and AMD assembly (gfx90a, gfx1030) pass: $(wc -l < "$counts") kernel entries"
