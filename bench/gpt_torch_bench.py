#!/usr/bin/python3
"""PyTorch's speed and memory on the GPT polnode trains (issue 12), for comparison with
`polnode train --model gpt:... --json` on the same machine in the same session.

Usage: /usr/bin/python3 bench/gpt_torch_bench.py TEXT_FILE [--threads N] [--steps S]
       [--layers L --heads H --width C --context T --batch B] [--device cpu|cuda]

Defaults: nanoGPT's shakespeare_char CPU configuration (4 layers, 4 heads, width 128, context 64,
batch 12, AdamW lr 1e-3, weight decay 0.1, dropout 0). The module is the one
tests/solver/torch_gpt_steps.py checks polnode against (bias-free linear layers, untied head),
trained on random windows of the file's bytes. Prints steps/s over the steps after 5 warm-up steps
and the process's peak resident memory (ru_maxrss); run polnode under `/usr/bin/time -v` for its
own peak. On cuda, TF32 is off (polnode computes in float32); each step reads its loss back, as
polnode's device-resident training does.
"""
import argparse
import math
import resource
import time

import numpy as np
import torch
import torch.nn.functional as F


def build_gpt(layers, heads, width, context, vocab, dev):
    """The GPT's parameters (nanoGPT-style initialisation) and its training step on given token
    batches: train(x, y) runs the forward pass, the mean cross-entropy, the backward pass and one
    AdamW update (lr 1e-3, weight decay 0.1 on the matrices) and returns the loss tensor.
    bench/torch_peer.py times the same step against polnode's."""
    c, t = width, context

    def weight(*shape, std=0.02):
        return (torch.randn(*shape, device=dev) * std).requires_grad_(True)

    def ones(n):
        return torch.ones(n, device=dev, requires_grad=True)

    def zeros(n):
        return torch.zeros(n, device=dev, requires_grad=True)

    p = {"wte": weight(vocab, c), "wpe": weight(t, c), "lnf.g": ones(c), "lnf.b": zeros(c),
         "head.w": weight(c, vocab)}
    proj = 0.02 / math.sqrt(2 * layers)
    for i in range(layers):
        h = f"h{i}"
        for ln in ("ln1", "ln2"):
            p[f"{h}.{ln}.g"] = ones(c)
            p[f"{h}.{ln}.b"] = zeros(c)
        for w in ("wq", "wk", "wv"):
            p[f"{h}.attn.{w}"] = weight(c, c)
        p[f"{h}.attn.wo"] = weight(c, c, std=proj)
        p[f"{h}.mlp.w1"] = weight(c, 4 * c)
        p[f"{h}.mlp.w2"] = weight(4 * c, c, std=proj)
    decay = [x for n, x in p.items() if x.dim() == 2]
    no_decay = [x for n, x in p.items() if x.dim() == 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3)
    d = c // heads
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=dev), diagonal=1)

    def train(x, y):
        batch = x.shape[0]
        z = p["wte"][x] + p["wpe"][None]
        for i in range(layers):
            h = f"h{i}"
            u = F.layer_norm(z, (c,), p[h + ".ln1.g"], p[h + ".ln1.b"], 1e-5)
            q = (u @ p[h + ".attn.wq"]).view(batch, t, heads, d).transpose(1, 2)
            k = (u @ p[h + ".attn.wk"]).view(batch, t, heads, d).transpose(1, 2)
            vv = (u @ p[h + ".attn.wv"]).view(batch, t, heads, d).transpose(1, 2)
            s = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
            o = F.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ vv
            z = z + o.transpose(1, 2).reshape(batch, t, c) @ p[h + ".attn.wo"]
            u = F.layer_norm(z, (c,), p[h + ".ln2.g"], p[h + ".ln2.b"], 1e-5)
            z = z + F.gelu(u @ p[h + ".mlp.w1"], approximate="tanh") @ p[h + ".mlp.w2"]
        z = F.layer_norm(z, (c,), p["lnf.g"], p["lnf.b"], 1e-5) @ p["head.w"]
        loss = F.cross_entropy(z.view(-1, vocab), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    return train


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--context", type=int, default=64)
    ap.add_argument("--batch", type=int, default=12)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    raw = np.fromfile(a.text, dtype=np.uint8)
    vocab = np.unique(raw)
    ids = torch.from_numpy(np.searchsorted(vocab, raw).astype(np.int64)).to(dev)

    train = build_gpt(a.layers, a.heads, a.width, a.context, len(vocab), dev)
    t = a.context

    def step():
        starts = torch.randint(0, int(len(ids) * 0.9) - t - 1, (a.batch,)).tolist()
        x = torch.stack([ids[s:s + t] for s in starts])
        y = torch.stack([ids[s + 1:s + t + 1] for s in starts])
        return train(x, y).item()

    for _ in range(5):
        step()
    start = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    elapsed = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    where = f"{a.threads} thread(s)" if dev.type == "cpu" else torch.cuda.get_device_name(dev)
    print(f"pytorch {torch.__version__}: {a.steps / elapsed:.2f} steps/s on {where}, "
          f"peak RSS {peak_mib:.0f} MiB, last loss {loss:.4f}")


if __name__ == "__main__":
    main()
