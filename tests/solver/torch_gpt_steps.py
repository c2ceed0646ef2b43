#!/usr/bin/python3
"""PyTorch's answer to polnode's GPT training steps, for tests/solver/torch_gpt_test.cc.

Usage: /usr/bin/python3 torch_gpt_steps.py DIR

DIR/manifest.txt, written by the test, holds lines "key value...":
  config LAYERS HEADS WIDTH CONTEXT VOCAB
  param NAME DECAY DIMS...  a parameter in polnode's state order, stored as DIR/NAME.bin (raw
                            little-endian float32, row-major; linear weights [in, out], wpe as
                            [CONTEXT * WIDTH]); DECAY is 1 when AdamW decays it
  batch INDEX N             token ids DIR/x<INDEX>.bin [N, CONTEXT] and next-symbol targets
                            DIR/y<INDEX>.bin [N * CONTEXT] (float32 holding ids)
  lr X / beta1 X / beta2 X / eps X / weight_decay X
  grad_clip X               torch.nn.utils.clip_grad_norm_ before every step when X > 0
  warmup_steps N / lr_decay_steps N / min_lr X   nanoGPT's learning-rate schedule (optional; all
                            absent or 0: a constant lr), computed here as nanoGPT's get_lr does,
                            with Python floats and math.cos
The script builds the same GPT (nanoGPT's block with bias-free linear layers, pre-LayerNorm with
eps 1e-5, causal softmax attention scaled by 1/sqrt(head size), tanh GELU, untied head, mean
cross-entropy over every position), runs one torch.optim.AdamW step per batch in order and writes
the losses (float32, one per step) to DIR/losses.out.bin and every final parameter to
DIR/NAME.out.bin.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def load(directory, name, shape):
    data = np.fromfile(os.path.join(directory, name), dtype="<f4")
    return torch.from_numpy(data.reshape(shape).copy())


def forward(p, cfg, ids):
    layers, heads, width, context, vocab = cfg
    b, t = ids.shape
    d = width // heads
    x = p["wte"][ids] + p["wpe"].view(context, width)[None, :t, :]
    for i in range(layers):
        h = f"h{i}"
        y = F.layer_norm(x, (width,), p[h + ".ln1.g"], p[h + ".ln1.b"], 1e-5)
        q = (y @ p[h + ".attn.wq"]).view(b, t, heads, d).transpose(1, 2)
        k = (y @ p[h + ".attn.wk"]).view(b, t, heads, d).transpose(1, 2)
        v = (y @ p[h + ".attn.wv"]).view(b, t, heads, d).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        a = F.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v
        x = x + a.transpose(1, 2).reshape(b, t, width) @ p[h + ".attn.wo"]
        y = F.layer_norm(x, (width,), p[h + ".ln2.g"], p[h + ".ln2.b"], 1e-5)
        x = x + F.gelu(y @ p[h + ".mlp.w1"], approximate="tanh") @ p[h + ".mlp.w2"]
    x = F.layer_norm(x, (width,), p["lnf.g"], p["lnf.b"], 1e-5)
    return x @ p["head.w"]


def scheduled_lr(hyper, it):
    """The learning rate of step `it` (0-based) under nanoGPT's warm-up and cosine decay."""
    lr, floor = hyper["lr"], hyper.get("min_lr", 0.0)
    warmup, decay = int(hyper.get("warmup_steps", 0)), int(hyper.get("lr_decay_steps", 0))
    if it < warmup:
        return lr * (it + 1) / (warmup + 1)
    if decay == 0:
        return lr
    if it > decay:
        return floor
    ratio = (it - warmup) / (decay - warmup)
    return floor + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (lr - floor)


def main(directory):
    torch.set_num_threads(1)
    names, decay, shapes, batches, hyper, cfg = [], {}, {}, [], {}, None
    with open(os.path.join(directory, "manifest.txt")) as manifest:
        for line in manifest:
            words = line.split()
            if not words:
                continue
            if words[0] == "config":
                cfg = tuple(int(w) for w in words[1:6])
            elif words[0] == "param":
                names.append(words[1])
                decay[words[1]] = words[2] == "1"
                shapes[words[1]] = tuple(int(w) for w in words[3:])
            elif words[0] == "batch":
                batches.append((words[1], int(words[2])))
            else:
                hyper[words[0]] = float(words[1])
    p = {n: load(directory, n + ".bin", shapes[n]).requires_grad_(True) for n in names}
    groups = [
        {"params": [p[n] for n in names if decay[n]], "weight_decay": hyper["weight_decay"]},
        {"params": [p[n] for n in names if not decay[n]], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=hyper["lr"], betas=(hyper["beta1"], hyper["beta2"]),
                            eps=hyper["eps"], foreach=False)
    context = cfg[3]
    losses = []
    for it, (index, n) in enumerate(batches):
        for group in opt.param_groups:
            group["lr"] = scheduled_lr(hyper, it)
        ids = load(directory, f"x{index}.bin", (n, context)).long()
        targets = load(directory, f"y{index}.bin", (n * context,)).long()
        opt.zero_grad()
        logits = forward(p, cfg, ids)
        loss = F.cross_entropy(logits.view(-1, cfg[4]), targets)
        loss.backward()
        if hyper.get("grad_clip", 0.0) > 0.0:
            torch.nn.utils.clip_grad_norm_([p[n] for n in names], hyper["grad_clip"])
        opt.step()
        losses.append(loss.item())
    np.asarray(losses, dtype="<f4").tofile(os.path.join(directory, "losses.out.bin"))
    for n in names:
        p[n].detach().numpy().astype("<f4").tofile(os.path.join(directory, n + ".out.bin"))


if __name__ == "__main__":
    main(sys.argv[1])
