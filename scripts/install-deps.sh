#!/usr/bin/env bash
# Installs every package polnode needs to build, test and run, from Debian 12's archive.
# Idempotent: packages already present are left alone. Must run as root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libsecp256k1-dev libssl-dev librocksdb-dev libboost-dev
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
