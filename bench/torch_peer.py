#!/usr/bin/python3
"""PyTorch's side of bench/train_bench.cc: training steps per second of an MLP, a CNN or a GPT.

Usage: PYTHON torch_peer.py SPEC BATCH SECONDS THREADS [DEVICE]
  SPEC     polnode's model spec: mlp:784-256-128-10 or cnn:c8-p-c16-p-f64-10 (input 1x28x28), or
           gpt:layers=4,heads=4,width=128,context=64,vocab=65 (the module and AdamW step of
           bench/gpt_torch_bench.py, on random token windows)
  DEVICE   cpu (the default) or cuda; on cuda TF32 is off (polnode computes in float32) and the
           timer stops after a device synchronization
Builds the same model as polnode (mlp: Linear layers with ReLU between them; cnn: 3x3 convolutions
with padding 1, bias and ReLU, 2x2 max pools, then Linear layers with ReLU but the last), mean
cross-entropy and torch.optim.SGD (lr 0.05, momentum 0.9) on 8 fixed random batches in rotation,
the same work as polnode's side (a GPT: AdamW, lr 1e-3, weight decay 0.1 on its matrices). After 20 warm-up steps it times as many steps as fit in SECONDS
and prints "steps_per_second X" (steps over the elapsed time), on the CPU "median_step_seconds Y"
(the median of the steps' own times: on a shared machine a step the scheduler interrupted is slow
for reasons that are not PyTorch's, and the median leaves those out), then what PyTorch runs on
("torch VERSION threads N mkl M mkldnn D blas B"). The CPU affinity is inherited from the
caller, which pins itself first.
"""
import os
import re
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpt_torch_bench import build_gpt  # noqa: E402 (the path above first)


def build_model(spec):
    kind, _, body = spec.partition(":")
    tokens = body.split("-")
    layers = []
    if kind == "mlp":
        sizes = [int(t) for t in tokens]
        for i in range(len(sizes) - 1):
            layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
            if i + 2 < len(sizes):
                layers.append(torch.nn.ReLU())
        return torch.nn.Sequential(*layers), (sizes[0],), sizes[-1]
    if kind != "cnn":
        raise SystemExit("torch_peer: unsupported model spec " + spec)
    channels, height, width = 1, 28, 28
    if tokens[0].startswith("i"):
        channels, height, width = (int(v) for v in tokens.pop(0)[1:].split("x"))
    input_shape = (channels, height, width)
    features = None
    for token in tokens[:-1]:
        if token.startswith("c"):
            out = int(token[1:])
            layers += [torch.nn.Conv2d(channels, out, 3, padding=1), torch.nn.ReLU()]
            channels = out
        elif token == "p":
            layers.append(torch.nn.MaxPool2d(2))
            height, width = height // 2, width // 2
        elif token.startswith("f"):
            if features is None:
                layers.append(torch.nn.Flatten())
                features = channels * height * width
            layers += [torch.nn.Linear(features, int(token[1:])), torch.nn.ReLU()]
            features = int(token[1:])
        else:
            raise SystemExit("torch_peer: unsupported layer " + token)
    if features is None:
        layers.append(torch.nn.Flatten())
        features = channels * height * width
    outputs = int(tokens[-1])
    layers.append(torch.nn.Linear(features, outputs))
    return torch.nn.Sequential(*layers), input_shape, outputs


def blas_name():
    match = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
    return match.group(1) if match else "unknown"


def main(spec, batch, seconds, threads, device="cpu"):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if spec.startswith("gpt:"):
        g = {key: int(value) for key, value in (item.split("=") for item in spec[4:].split(","))}
        train = build_gpt(g["layers"], g["heads"], g["width"], g["context"], g["vocab"], device)
        batches = [(torch.randint(0, g["vocab"], (batch, g["context"]), device=device),
                    torch.randint(0, g["vocab"], (batch, g["context"]), device=device)) for _ in range(8)]
    else:
        model, input_shape, outputs = build_model(spec)
        model = model.to(device)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        batches = [(torch.rand(batch, *input_shape, device=device),
                    torch.randint(0, outputs, (batch,), device=device)) for _ in range(8)]

        def train(x, y):
            optimizer.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()

    def synchronize():
        if device == "cuda":
            torch.cuda.synchronize()

    def step(i):
        train(*batches[i % len(batches)])

    for i in range(20):
        step(i)
    synchronize()
    start = time.perf_counter()
    steps = 0
    step_seconds = []
    while True:
        step_start = time.perf_counter()
        step(steps)
        steps += 1
        now = time.perf_counter()
        step_seconds.append(now - step_start)
        if now - start >= seconds:
            break
    synchronize()
    elapsed = time.perf_counter() - start
    step_seconds.sort()
    print("steps_per_second %.3f" % (steps / elapsed))
    if device == "cpu":  # a CUDA step's own time is only its launches
        print("median_step_seconds %.9f" % step_seconds[len(step_seconds) // 2])
    print("torch %s threads %d mkl %s mkldnn %s blas %s" % (
        torch.__version__, torch.get_num_threads(), torch.backends.mkl.is_available(),
        torch.backends.mkldnn.is_available(), blas_name()))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]),
         sys.argv[5] if len(sys.argv) > 5 else "cpu")
