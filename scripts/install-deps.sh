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
  python3-torch libopenblas-dev
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

if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  echo "install-deps.sh: note: no nvcc found (expected at /usr/local/cuda/bin/nvcc); the CUDA backend will be skipped" >&2
fi
