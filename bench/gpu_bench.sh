#!/bin/bash
# polnode's GPU training against PyTorch on the same GPU, in one run: for an MLP, a CNN and a GPT,
# `polnode train --backend BACKEND` (device-resident training) and PyTorch on cuda alternate repeat
# by repeat, both pinned to the same core (one host thread drives each GPU), then the ratio of
# steps/s (polnode over PyTorch) as best and median over the repeats.
#
# Usage: bench/gpu_bench.sh POLNODE_BINARY FASHION_MNIST_DIR TEXT_FILE [REPEATS] [BACKEND]
# REPEATS defaults to 3, BACKEND to cuda. PYTHON names the interpreter whose torch is the peer
# (default python3). PyTorch runs in float32 with TF32 off, as polnode computes; it does not
# promise bitwise results, polnode does, so a ratio below 1 is the price of determinism, which this
# benchmark measures rather than hides.
set -euo pipefail
polnode=$1 images=$2 text=$3 repeats=${4:-3} backend=${5:-cuda}
python=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
steps=300

steps_of_json() { "$python" -c 'import json,sys; print(json.load(sys.stdin)["steps_per_second"])'; }

# One model: NAME, polnode's train arguments, the PyTorch command (prints steps/s somewhere).
compare() {
  local name=$1 ours_args=$2 theirs_cmd=$3
  local ours=() theirs=()
  for ((r = 0; r < repeats; ++r)); do
    # shellcheck disable=SC2086
    ours+=("$(taskset -c 0 "$polnode" train $ours_args --steps "$steps" --backend "$backend" --threads 1 \
      --json 2>/dev/null | steps_of_json)")
    theirs+=("$(taskset -c 0 bash -c "$theirs_cmd" | sed -n 's/.*[^0-9.]\([0-9][0-9.]*\) steps\/s.*/\1/p; s/^steps_per_second \([0-9.]*\)/\1/p' | head -1)")
  done
  "$python" - "$name" "${ours[*]}" "${theirs[*]}" <<'PY'
import statistics, sys
name, ours, theirs = sys.argv[1], list(map(float, sys.argv[2].split())), list(map(float, sys.argv[3].split()))
ratios = [a / b for a, b in zip(ours, theirs)]
print(f"{name}: polnode steps/s " + " ".join(f"{x:.1f}" for x in ours) +
      " | pytorch steps/s " + " ".join(f"{x:.1f}" for x in theirs) +
      f" | ratio best {max(ratios):.2f}x median {statistics.median(ratios):.2f}x " +
      ("MET" if statistics.median(ratios) >= 1.0 else "MISSED"))
PY
}

echo "gpu_bench: $("$python" -c 'import torch; print("torch", torch.__version__, "on", torch.cuda.get_device_name(0))')"
compare "mlp 784-256-128-10 sgd batch 128" \
  "--model mlp:784-256-128-10 --data $images --batch 128 --optimizer sgd --seed 7" \
  "$python $here/torch_peer.py mlp:784-256-128-10 128 3 1 cuda"
compare "cnn c8-p-c16-p-f64-10 sgd batch 128" \
  "--model cnn:c8-p-c16-p-f64-10 --data $images --batch 128 --optimizer sgd --seed 7" \
  "$python $here/torch_peer.py cnn:c8-p-c16-p-f64-10 128 3 1 cuda"
compare "gpt layers=4,heads=4,width=128,context=64 adamw batch 12" \
  "--model gpt:layers=4,heads=4,width=128,context=64 --data $text --batch 12 --optimizer adam --lr 0.001 --weight-decay 0.1 --eval-windows 1" \
  "$python $here/gpt_torch_bench.py $text --steps $steps --device cuda"
