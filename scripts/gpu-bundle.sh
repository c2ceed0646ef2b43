#!/usr/bin/env bash
# gpu-bundle.sh: this build's GPU check and GPU benchmarks, packed for a GPU machine that cannot
# build polnode (GPU machines often lack RocksDB, protobuf, libsecp256k1 and the rest).
#
#   scripts/gpu-bundle.sh [--build DIR] [--images N] (--out FILE.tar.xz | --dir DIR)
#
# Packs, from the build tree DIR (default build/release; configure it with POLNODE_CUDA or
# POLNODE_HIP on): the binaries `scripts/gpu-check.sh --prebuilt` runs (kernels/polnode_gpu_check,
# tests/polnode_kernels_tests, node/polnode) and bench/step_profile, laid out as in the build tree;
# the shared libraries they link apart from the C library's own (so the CUDA runtime, HIP, OpenSSL,
# protobuf, ... travel; the GPU driver's libcuda does not); gpu-check.sh and bench/gpu_bench.sh
# with the PyTorch peers they call; the first N images of Debian's Fashion-MNIST training set and
# N/5 of its test set (default N = 10000, 9.4 MB) as an IDX directory; and run.sh.
# --out writes one xz archive (about 25 MB for a release build); --dir leaves the directory.
#
# On the GPU machine:   tar -xJf FILE.tar.xz && polnode-gpu/run.sh check    (gpu-check.sh --prebuilt)
#                       polnode-gpu/run.sh bench [REPEATS]  (step_profile per family, gpu_bench.sh)
# Extra arguments after `check` go to gpu-check.sh (--backend hip, --steps N).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build/release"
images=10000
out=""
dir=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --images) images="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "gpu-bundle: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ -z "$out" && -z "$dir" ]] || [[ -n "$out" && -n "$dir" ]]; then
  echo "gpu-bundle: give exactly one of --out FILE.tar.xz and --dir DIR" >&2
  exit 2
fi
if ! [[ "$images" =~ ^[0-9]+$ ]] || (( images < 5 || images > 60000 )); then
  echo "gpu-bundle: --images must be a whole number from 5 to 60000, not '$images'" >&2
  exit 2
fi
fashion=/usr/share/datasets/fashion-mnist
binaries=(kernels/polnode_gpu_check tests/polnode_kernels_tests node/polnode bench/step_profile)
for b in "${binaries[@]}"; do
  if [[ ! -x "$build/$b" ]]; then
    echo "gpu-bundle: no $build/$b (build it with POLNODE_CUDA or POLNODE_HIP on)" >&2
    exit 1
  fi
done
if [[ ! -f "$fashion/train-images-idx3-ubyte.gz" ]]; then
  echo "gpu-bundle: no $fashion (install Debian's dataset-fashion-mnist)" >&2
  exit 1
fi

# Every library the binaries resolve, except the C library's own (libc, libm, libdl, libpthread,
# librt, the loader), which must be the GPU machine's.
libraries="$(ldd "${binaries[@]/#/$build/}")"
if grep -q 'not found' <<<"$libraries"; then
  echo "gpu-bundle: a library the binaries need is not found here:" >&2
  grep 'not found' <<<"$libraries" >&2
  exit 1
fi

staging="$(mktemp -d)"
trap 'rm -rf "$staging"' EXIT
top="$staging/polnode-gpu"
mkdir -p "$top/lib" "$top/scripts" "$top/bench" "$top/data/fashion-mnist"
for b in "${binaries[@]}"; do
  mkdir -p "$top/build/$(dirname "$b")"
  cp "$build/$b" "$top/build/$b"
done
awk '/=> \// {print $3}' <<<"$libraries" | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) ;;
    *) cp -L "$lib" "$top/lib/" ;;
  esac
done

cp "$root/scripts/gpu-check.sh" "$top/scripts/"
cp "$root/bench/gpu_bench.sh" "$root/bench/torch_peer.py" "$root/bench/gpt_torch_bench.py" "$top/bench/"

# An IDX slice: the header's item count rewritten, then the first `count` items.
python3 - "$fashion" "$top/data/fashion-mnist" "$images" <<'PY'
import gzip, struct, sys
src, dst, images = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, count in (("train-images-idx3-ubyte", images), ("train-labels-idx1-ubyte", images),
                    ("t10k-images-idx3-ubyte", images // 5), ("t10k-labels-idx1-ubyte", images // 5)):
    raw = gzip.open(f"{src}/{name}.gz").read()
    rank = raw[3]
    dims = list(struct.unpack(f">{rank}I", raw[4:4 + 4 * rank]))
    item = 1
    for d in dims[1:]:
        item *= d
    dims[0] = min(count, dims[0])
    body = raw[4 + 4 * rank:4 + 4 * rank + dims[0] * item]
    with open(f"{dst}/{name}", "wb") as f:
        f.write(raw[:4] + struct.pack(f">{rank}I", *dims) + body)
PY

cat > "$top/run.sh" <<'RUN'
#!/usr/bin/env bash
# run.sh check [gpu-check.sh options] | bench [REPEATS]: polnode's GPU check or GPU benchmarks from
# this bundle (scripts/gpu-bundle.sh made it).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mode="${1:-check}"
shift || true
case "$mode" in
  check) exec "$here/scripts/gpu-check.sh" --prebuilt "$here/build" --data "$here/data/fashion-mnist" "$@" ;;
  bench)
    backend=cuda
    [[ -e /dev/kfd ]] && ! command -v nvidia-smi >/dev/null 2>&1 && backend=hip
    for family in mlp cnn gpt; do "$here/build/bench/step_profile" "$backend" 50 1 "$family"; done
    corpus="$(mktemp)"
    trap 'rm -f "$corpus"' EXIT
    for i in $(seq 1 3000); do echo "line $i: the quick brown fox jumps over the lazy dog, $((i * 7919 % 1000))."; done > "$corpus"
    "$here/bench/gpu_bench.sh" "$here/build/node/polnode" "$here/data/fashion-mnist" "$corpus" "${1:-3}" "$backend" ;;
  *) echo "run.sh: check [gpu-check.sh options] or bench [REPEATS], not '$mode'" >&2; exit 2 ;;
esac
RUN
chmod +x "$top/run.sh"

if [[ -n "$dir" ]]; then
  mkdir -p "$dir"
  rm -rf "$dir/polnode-gpu"
  mv "$top" "$dir/polnode-gpu"
  echo "gpu-bundle: $dir/polnode-gpu ($(du -sh "$dir/polnode-gpu" | cut -f1))"
else
  tar -C "$staging" -cf - polnode-gpu | xz -T0 -6 > "$out.partial"
  mv "$out.partial" "$out"
  echo "gpu-bundle: $out ($(du -h "$out" | cut -f1)); on the GPU machine: tar -xJf $(basename "$out") && polnode-gpu/run.sh check"
fi
