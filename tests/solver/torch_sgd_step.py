#!/usr/bin/python3
"""PyTorch's answer to polnode's MLP training steps, for tests/solver/torch_agreement_test.cc.

Usage: /usr/bin/python3 torch_sgd_step.py DIR

DIR/manifest.txt, written by the test, holds lines "key value..." :
  param NAME ROWS [COLS]   a parameter, stored as DIR/NAME.bin (raw little-endian float32,
                           row-major); Linear weights are [in, out] as in polnode
  batch INDEX N FEATURES   images DIR/x<INDEX>.bin [N, FEATURES], labels DIR/y<INDEX>.bin [N]
                           (float32 holding class indices)
  lr X / momentum X / weight_decay X
The script runs one torch.optim.SGD step per batch, in order, on the MLP
relu(x @ W1 + b1) -> ... -> x @ Wn + bn with mean cross-entropy, and writes every updated
parameter to DIR/NAME.out.bin, its momentum buffer to DIR/NAME.velocity.out.bin and the losses
(float32, one per step) to DIR/losses.out.bin.
"""
import os
import sys

import numpy as np
import torch


def main(directory):
    torch.set_num_threads(1)
    params, batches, hyper = [], [], {}
    with open(os.path.join(directory, "manifest.txt")) as manifest:
        for line in manifest:
            words = line.split()
            if not words:
                continue
            if words[0] == "param":
                shape = [int(w) for w in words[2:]]
                data = np.fromfile(os.path.join(directory, words[1] + ".bin"), dtype="<f4")
                params.append((words[1], torch.tensor(data.reshape(shape), requires_grad=True)))
            elif words[0] == "batch":
                index, n, features = words[1], int(words[2]), int(words[3])
                x = np.fromfile(os.path.join(directory, "x%s.bin" % index), dtype="<f4")
                y = np.fromfile(os.path.join(directory, "y%s.bin" % index), dtype="<f4")
                batches.append((torch.tensor(x.reshape(n, features)), torch.tensor(y).long()))
            else:
                hyper[words[0]] = float(words[1])

    tensors = [t for _, t in params]
    optimizer = torch.optim.SGD(tensors, lr=hyper["lr"], momentum=hyper["momentum"],
                                weight_decay=hyper["weight_decay"])
    losses = []
    for x, y in batches:
        optimizer.zero_grad()
        h = x
        layers = len(tensors) // 2
        for i in range(layers):
            h = h @ tensors[2 * i] + tensors[2 * i + 1]
            if i + 1 < layers:
                h = torch.relu(h)
        loss = torch.nn.functional.cross_entropy(h, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    for name, t in params:
        t.detach().numpy().astype("<f4").tofile(os.path.join(directory, name + ".out.bin"))
        velocity = optimizer.state[t]["momentum_buffer"]
        velocity.numpy().astype("<f4").tofile(os.path.join(directory, name + ".velocity.out.bin"))
    np.array(losses, dtype="<f4").tofile(os.path.join(directory, "losses.out.bin"))


if __name__ == "__main__":
    main(sys.argv[1])
