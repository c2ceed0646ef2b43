#!/usr/bin/env bash
# The README's main command: installs dependencies, builds the release preset and runs polnode's
# main job on its embedded default: train the default model on Debian's Fashion-MNIST with the
# deterministic engine, then run the whole protocol on this machine (`polnode devnet`: ledger,
# submitter, an honest and a cheating solver, an honest and a lazy verifier, a whistleblower) to
# settlement, and print its report.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh

. ./scripts/compiler-cache.sh
cmake --preset release "${compiler_launcher[@]}"
cmake --build --preset release -j "$(nproc)"

polnode=$PWD/build/release/node/polnode
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== polnode train (default: mlp:784-256-128-10, SGD momentum, 3 epochs on Fashion-MNIST)"
"$polnode" train

echo "== polnode devnet: the whole protocol on this machine (logs and report.json in $work/devnet)"
"$polnode" devnet --home "$work/devnet"
