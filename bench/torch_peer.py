#!/usr/bin/python3
"""PyTorch's side of bench/train_bench.cc: training steps per second of an MLP on one thread.

Usage: /usr/bin/python3 torch_peer.py SIZES BATCH SECONDS REPEATS
  SIZES    e.g. 784-256-128-10
Runs torch.nn.Linear layers with ReLU between them, mean cross-entropy and torch.optim.SGD
(lr 0.05, momentum 0.9) on 8 fixed random batches in rotation, the same work as polnode's side.
Each repeat times as many steps as fit in SECONDS (after a warm-up); prints the best repeat as
"steps_per_second X" on stdout. The CPU affinity is inherited from the caller (the benchmark pins
itself to one core before starting this script).
"""
import sys
import time

import torch


def main(sizes_text, batch, seconds, repeats):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    sizes = [int(s) for s in sizes_text.split("-")]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batches = [(torch.rand(batch, sizes[0]), torch.randint(0, sizes[-1], (batch,)))
               for _ in range(8)]

    def step(i):
        x, y = batches[i % len(batches)]
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    for i in range(20):
        step(i)
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        steps = 0
        while True:
            step(steps)
            steps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        best = max(best, steps / elapsed)
    print("steps_per_second %.3f" % best)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
