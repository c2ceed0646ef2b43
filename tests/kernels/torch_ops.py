#!/usr/bin/python3
"""PyTorch's answers for the transformer operators, for tests/kernels/torch_ops_test.cc.

Usage: /usr/bin/python3 torch_ops.py DIR

DIR/manifest.txt, written by the test, lists cases:
  case NAME OP             starts a case computed as operator OP (polnode's OpName)
  tensor NAME D0 D1 ...    an input of the case, DIR/<case>.<NAME>.bin (raw little-endian float32,
                           row-major)
  attr KEY VALUE           a scalar attribute (eps, scale; lr, betas, weight_decay, step for AdamW)
For every output the test compares, the script writes DIR/<case>.<OUT>.torch.bin (float32, what
PyTorch computes in float32 on the CPU) and DIR/<case>.<OUT>.f64.bin (float64, the same PyTorch
code in double precision from the same float32 inputs: a reference for both sides' rounding).
Gradients come from autograd with the given upstream gradient, so "backward" means PyTorch's own.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


def leaf(tensor, dtype):
    """A fresh autograd leaf holding `tensor`'s values as `dtype` (each pass gets its own copy)."""
    return tensor.detach().to(dtype, copy=True).requires_grad_()


def gelu(t, dtype):
    x = leaf(t["X"], dtype)
    y = F.gelu(x, approximate="tanh")
    y.backward(t["dY"].to(dtype))
    return {"Y": y, "dX": x.grad}


def layer_norm(t, a, dtype):
    x = leaf(t["X"], dtype)
    gamma = leaf(t["gamma"], dtype)
    beta = leaf(t["beta"], dtype)
    channels = x.shape[-1]
    # native_layer_norm also returns the saved statistics, shaped [rows, 1].
    y, mean, rstd = torch.native_layer_norm(x, [channels], gamma, beta, a["eps"])
    y.backward(t["dY"].to(dtype))
    return {"Y": y, "Mean": mean.reshape(x.shape[:-1]), "Rstd": rstd.reshape(x.shape[:-1]),
            "dX": x.grad, "dGamma": gamma.grad, "dBeta": beta.grad}


def causal_softmax(t, a, dtype):
    # nanoGPT's attention weights: (scores * scale), future keys set to -inf, softmax.
    s = leaf(t["S"], dtype)
    length = s.shape[-1]
    mask = torch.ones(length, length, dtype=torch.bool).tril().logical_not()
    p = F.softmax((s * a["scale"]).masked_fill(mask, float("-inf")), dim=-1)
    p.backward(t["dP"].to(dtype))
    return {"P": p, "dS": s.grad}


def batched_matmul(t, dtype):
    a = leaf(t["A"], dtype)
    b = leaf(t["B"], dtype)
    c = a @ b
    c.backward(t["dC"].to(dtype))
    return {"C": c, "dA": a.grad, "dB": b.grad}


def embedding(t, dtype):
    w = leaf(t["W"], dtype)
    y = F.embedding(t["ids"].long(), w)
    y.backward(t["dY"].to(dtype))
    return {"Y": y, "dW": w.grad}


def transpose_heads(t, dtype):
    x = leaf(t["X"], dtype)
    y = x.transpose(1, 2).contiguous()
    y.backward(t["dY"].to(dtype))
    return {"Y": y, "dX": x.grad}


def add(t, dtype):
    return {"C": t["A"].to(dtype) + t["B"].to(dtype)}


def softmax_cross_entropy(t, dtype):
    z = leaf(t["Z"], dtype)
    loss = F.cross_entropy(z, t["labels"].long())
    loss.backward()
    return {"loss": loss.reshape(1), "dZ": z.grad}


def bias_add(t, dtype):
    x = leaf(t["X"], dtype)
    b = leaf(t["b"], dtype)
    y = x + b
    y.backward(t["dY"].to(dtype))
    return {"Y": y, "dX": x.grad, "db": b.grad}


def adamw(t, a, dtype):
    """One torch.optim.AdamW step (the single-tensor implementation) from the given state: the
    parameter W with gradient G, the moments M and V after a["step"] - 1 earlier steps."""
    p = torch.nn.Parameter(t["W"].to(dtype, copy=True))
    p.grad = t["G"].to(dtype, copy=True)
    opt = torch.optim.AdamW([p], lr=a["lr"], betas=(a["beta1"], a["beta2"]), eps=a["eps"],
                            weight_decay=a["weight_decay"], foreach=False)
    opt.state[p] = {"step": torch.tensor(a["step"] - 1.0),
                    "exp_avg": t["M"].to(dtype, copy=True),
                    "exp_avg_sq": t["V"].to(dtype, copy=True)}
    opt.step()
    state = opt.state[p]
    return {"W": p, "M": state["exp_avg"], "V": state["exp_avg_sq"]}


def clip_grad_norm(t, a, dtype):
    """torch.nn.utils.clip_grad_norm_ over two gradients G0 and G1."""
    params = []
    for name in ("G0", "G1"):
        p = torch.nn.Parameter(torch.zeros(t[name].shape, dtype=dtype))
        p.grad = t[name].to(dtype, copy=True)
        params.append(p)
    torch.nn.utils.clip_grad_norm_(params, a["max_norm"])
    return {"G0": params[0].grad, "G1": params[1].grad}


def run(op, tensors, attrs, dtype):
    if op == "gelu":
        return gelu(tensors, dtype)
    if op == "layer_norm":
        return layer_norm(tensors, attrs, dtype)
    if op == "causal_softmax":
        return causal_softmax(tensors, attrs, dtype)
    if op == "batched_matmul" or op == "matmul":
        return batched_matmul(tensors, dtype)
    if op == "bias_add":
        return bias_add(tensors, dtype)
    if op == "adamw":
        return adamw(tensors, attrs, dtype)
    if op == "clip_grad_norm":
        return clip_grad_norm(tensors, attrs, dtype)
    if op == "embedding":
        return embedding(tensors, dtype)
    if op == "transpose_heads":
        return transpose_heads(tensors, dtype)
    if op == "add":
        return add(tensors, dtype)
    if op == "softmax_cross_entropy":
        return softmax_cross_entropy(tensors, dtype)
    raise ValueError("no PyTorch counterpart for operator " + op)


def main(directory):
    torch.set_num_threads(1)
    cases = []
    with open(os.path.join(directory, "manifest.txt")) as manifest:
        for line in manifest:
            words = line.split()
            if not words:
                continue
            if words[0] == "case":
                cases.append((words[1], words[2], {}, {}))
            elif words[0] == "tensor":
                name, tensors = words[1], cases[-1][2]
                path = os.path.join(directory, "%s.%s.bin" % (cases[-1][0], name))
                data = np.fromfile(path, dtype="<f4").reshape([int(d) for d in words[2:]])
                tensors[name] = torch.from_numpy(data)
            elif words[0] == "attr":
                cases[-1][3][words[1]] = float(words[2])
            else:
                raise ValueError("unknown manifest line: " + line)
    for name, op, tensors, attrs in cases:
        for dtype, suffix, numpy_type in ((torch.float32, "torch", "<f4"), (torch.float64, "f64", "<f8")):
            for out, value in run(op, tensors, attrs, dtype).items():
                path = os.path.join(directory, "%s.%s.%s.bin" % (name, out, suffix))
                value.detach().numpy().astype(numpy_type).tofile(path)


if __name__ == "__main__":
    main(sys.argv[1])
