#!/usr/bin/env bash
# The README's main command: installs dependencies, builds the release preset and runs polnode's
# main job on its embedded default. Today that job is: train the default model on Debian's
# Fashion-MNIST with the deterministic engine; train the example task with proof of learning,
# profile it and verify segments drawn from a random beacon; sign and verify a transaction with a
# fresh key. It grows into the full devnet as the protocol lands.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)"

polnode=$PWD/build/release/node/polnode
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== polnode train (default: mlp:784-256-128-10, SGD momentum, 3 epochs on Fashion-MNIST)"
"$polnode" train

example=$PWD/examples/fashion-mlp.toml
cd "$work"
"$polnode" keygen --out solver.key

echo "== polnode prove: the example task with a checkpoint every k steps and a signed manifest"
"$polnode" prove --task "$example" --out proof --key solver.key
echo "== polnode profile: replay segments under every backend and thread count this build has"
"$polnode" profile --task "$example" --proof proof
beacon=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
echo "== polnode verify --proof: replay 2 segments drawn from beacon $beacon"
"$polnode" verify --proof proof --task "$example" --beacon "$beacon" --segments 2

echo "== polnode keygen / sign / verify a transaction"
"$polnode" keygen --out node.key
printf '{"chain_id":"polnode-local","nonce":1,"payload_type":"transfer","payload_hex":"00"}' > tx.json
"$polnode" sign --key node.key --tx tx.json --out tx.bin
"$polnode" verify --tx tx.bin
