#!/bin/bash
# polnode against PyTorch on nanoGPT's shakespeare_char CPU GPT (issue 18), in one run: each side
# pinned to the same cores with taskset, alternating repeat by repeat so both see the same load,
# then the ratio (polnode steps/s over PyTorch steps/s) as best and median over the repeats.
#
# Usage: bench/gpt_bench.sh POLNODE_BINARY TEXT_FILE [THREADS] [REPEATS] [STEPS]
# THREADS (default 1) pins to cores 0..THREADS-1; REPEATS defaults to 3, STEPS to 60.
# PYTHON names the interpreter whose torch is the peer (default /usr/bin/python3, Debian's torch;
# a current PyTorch from PyPI in a virtual environment is the peer that counts).
set -euo pipefail
polnode=$1 text=$2 threads=${3:-1} repeats=${4:-3} steps=${5:-60}
python=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
cores=$(seq -s, 0 $((threads - 1)))
model=gpt:layers=4,heads=4,width=128,context=64
ours=() theirs=()
for ((r = 0; r < repeats; ++r)); do
  ours+=("$(taskset -c "$cores" "$polnode" train --model "$model" --data "$text" --steps "$steps" \
    --batch 12 --optimizer adam --lr 0.001 --weight-decay 0.1 --threads "$threads" \
    --eval-windows 1 --json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["steps_per_second"])')")
  theirs+=("$(taskset -c "$cores" "$python" "$here/gpt_torch_bench.py" "$text" \
    --threads "$threads" --steps "$steps" | sed -n 's/.*[^0-9.]\([0-9.]*\) steps\/s.*/\1/p' | head -1)")
done
torch_version=$("$python" -c 'import torch; print(torch.__version__)')
/usr/bin/python3 - "$threads" "${ours[*]}" "${theirs[*]}" "$torch_version" <<'PY'
import statistics, sys
threads, ours, theirs = sys.argv[1], list(map(float, sys.argv[2].split())), list(map(float, sys.argv[3].split()))
torch_version = sys.argv[4]
ratios = [a / b for a, b in zip(ours, theirs)]
print(f"gpt threads={threads} polnode steps/s " + " ".join(f"{x:.2f}" for x in ours) +
      f" | pytorch {torch_version} steps/s " + " ".join(f"{x:.2f}" for x in theirs) +
      f" | ratio best {max(ratios):.2f}x median {statistics.median(ratios):.2f}x (target >= 1.5x) " +
      ("MET" if statistics.median(ratios) >= 1.5 else "MISSED"))
PY
