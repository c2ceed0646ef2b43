#!/usr/bin/env bash
# Installs every package polnode needs to build, test and run, from Debian 12's archive.
# Idempotent: packages already present are left alone. Must run as root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  ccache  # keeps compiled objects between builds and clean clones on one machine
  libsecp256k1-dev libssl-dev librocksdb-dev libboost-dev
  libzstd-dev liblz4-dev  # proof_bench: checkpoint sizes compressed (bench/CMakeLists.txt)
  libprotobuf-dev protobuf-compiler libcereal-dev rapidjson-dev libgtest-dev zlib1g-dev
  clang-14 libclang-rt-14-dev
  hipcc libamdhip64-dev
  dataset-fashion-mnist
  jargon-text  # the default GPT corpus: /usr/share/doc/jargon-text/jargon.txt.gz (public domain)
  python3-torch libopenblas-dev
  python3-pip  # installs onnxruntime (below) for Debian's python3
)

if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps.sh: run as root (it calls apt-get)" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all ${#packages[@]} packages present"
else
  echo "install-deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The CUDA compiler and runtime, from NVIDIA's PyPI wheels (Debian has no nvcc), so the CUDA
# backend compiles on every machine, GPU or not; kernels/gpu/gpu.cmake finds nvcc under
# /opt/polnode-cuda. The versions are pinned: the PTX the checks read depends on them.
cuda_root=/opt/polnode-cuda
cuda_wheels=(nvidia-cuda-nvcc==13.5.37 nvidia-cuda-runtime==13.5.37 nvidia-cuda-cccl==13.3.5.0.6)
cuda_stamp="$cuda_root/.polnode-wheels"
if [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "install-deps.sh: using the CUDA toolkit in /usr/local/cuda"
elif [ -f "$cuda_stamp" ] && [ "$(cat "$cuda_stamp")" = "${cuda_wheels[*]}" ]; then
  echo "install-deps.sh: nvcc present ($cuda_root)"
else
  echo "install-deps.sh: installing ${cuda_wheels[*]} into $cuda_root"
  rm -rf "$cuda_root"
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location --root-user-action=ignore \
    --target "$cuda_root" "${cuda_wheels[@]}"
  # The wheels ship libcudart.so.13 only; the linker looks for libcudart.so.
  ln -sf libcudart.so.13 "$cuda_root/nvidia/cu13/lib/libcudart.so"
  "$cuda_root/nvidia/cu13/bin/nvcc" --version >/dev/null
  echo "${cuda_wheels[*]}" > "$cuda_stamp"
fi

# onnxruntime, which the ONNX tests run polnode's exported models in, from PyPI into Debian's
# python3 (the one with python3-torch and python3-numpy). --no-deps: importing onnxruntime and
# running a session needs only numpy, which Debian provides; its other requirements (sympy,
# protobuf, ...) serve its tools, and pip would replace Debian's numpy with an incompatible one.
onnxruntime_version=1.20.1
if /usr/bin/python3 -c "import onnxruntime, sys; sys.exit(onnxruntime.__version__ != '$onnxruntime_version')" 2>/dev/null; then
  echo "install-deps.sh: onnxruntime $onnxruntime_version present"
else
  echo "install-deps.sh: installing onnxruntime==$onnxruntime_version for /usr/bin/python3"
  /usr/bin/python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --root-user-action=ignore --break-system-packages --no-deps "onnxruntime==$onnxruntime_version"
  /usr/bin/python3 -c "import onnxruntime" >/dev/null
fi

# CometBFT, the BFT engine that drives polnode's ABCI server (node/ledger/abci_*) when validators
# are many. The version is pinned: proto/polnode/abci.proto copies this tag's ABCI field numbers,
# which are the wire contract. Built from source with the Go toolchain (pure Go, CGO off) into a
# versioned directory and reused when present; the tests find it through POLNODE_COMETBFT or this
# path (tests/node/abci_e2e_test.cc).
cometbft_version=v0.38.26
cometbft_root=/opt/polnode-cometbft/$cometbft_version
if [ -x "$cometbft_root/bin/cometbft" ]; then
  echo "install-deps.sh: cometbft $cometbft_version present ($cometbft_root)"
else
  if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    export PATH="/usr/local/go/bin:$PATH"
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "install-deps.sh: building cometbft $cometbft_version needs Go 1.22 or newer (not found)" >&2
    exit 1
  fi
  echo "install-deps.sh: building cometbft $cometbft_version into $cometbft_root"
  cometbft_start=$(date +%s)
  # The module and build caches live beside the binary, not in the user's home, so a rebuild after
  # an interrupted one reuses the downloaded modules.
  mkdir -p "$cometbft_root"
  CGO_ENABLED=0 GOPATH="/opt/polnode-cometbft/gopath" \
    GOCACHE="/opt/polnode-cometbft/gocache" GOBIN="$cometbft_root/bin.tmp" \
    go install "github.com/cometbft/cometbft/cmd/cometbft@$cometbft_version"
  mv "$cometbft_root/bin.tmp" "$cometbft_root/bin"
  echo "install-deps.sh: cometbft $("$cometbft_root/bin/cometbft" version) built in $(( $(date +%s) - cometbft_start )) s"
fi
