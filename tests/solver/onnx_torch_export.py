# Writes an ONNX file with torch.onnx.export (opset 17, do_constant_folding=False, so weights stay
# named initializers) for tests/solver/onnx_model_test.cc, with an input batch and PyTorch's output.
#   onnx_torch_export.py KIND DIR [VOCAB [LAYERS HEADS WIDTH CONTEXT]]
# KIND: mlp, cnn (what polnode imports), softmax (an MLP ending in Softmax), stride2 (a CNN whose
# Conv has stride 2). DIR receives model.onnx, x.bin (8 inputs [8, 1, 28, 28], raw float32) and
# y.bin (PyTorch's logits [8, 10]).
# KIND gpt: the GPT of tests/solver/torch_gpt_steps.py (its forward, so the same architecture the
# PyTorch agreement test trains) with layers=2, heads=4, width=64, context=32 (or the sizes given)
# and VOCAB symbols, as
# an nn.Module whose parameters are the state's tensors (linear weights [in, out], wpe [T * C]);
# gpt_erf: the same with GELU by Erf (approximate='none'), which polnode refuses. x.bin: 4 windows
# of token ids [4, CONTEXT] (as float32), y.bin: PyTorch's logits [4, CONTEXT, VOCAB].
import os
import sys

import numpy as np
import torch

kind, out = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
nn = torch.nn


class Gpt(nn.Module):
    """torch_gpt_steps.forward over named parameters, initialised away from polnode's defaults."""

    def __init__(self, cfg, erf):
        super().__init__()
        layers, _, width, context, vocab = cfg
        self.cfg, self.names = cfg, ["wte", "wpe"]
        shapes = [(vocab, width), (context * width,)]
        for i in range(layers):
            for name, shape in [("ln1.g", (width,)), ("ln1.b", (width,)), ("attn.wq", (width, width)),
                                ("attn.wk", (width, width)), ("attn.wv", (width, width)),
                                ("attn.wo", (width, width)), ("ln2.g", (width,)), ("ln2.b", (width,)),
                                ("mlp.w1", (width, 4 * width)), ("mlp.w2", (4 * width, width))]:
                self.names.append(f"h{i}.{name}")
                shapes.append(shape)
        self.names += ["lnf.g", "lnf.b", "head.w"]
        shapes += [(width,), (width,), (width, vocab)]
        self.params = nn.ParameterList()
        for name, shape in zip(self.names, shapes):
            gain = name.endswith(".g")
            self.params.append(nn.Parameter((1.0 if gain else 0.0) + torch.randn(*shape) * (0.1 if gain else 0.05)))
        self.erf = erf

    def forward(self, ids):
        p = dict(zip(self.names, self.params))
        if not self.erf:
            return torch_gpt_steps.forward(p, self.cfg, ids)
        original = torch_gpt_steps.F.gelu
        torch_gpt_steps.F.gelu = lambda x, approximate: original(x)
        try:
            return torch_gpt_steps.forward(p, self.cfg, ids)
        finally:
            torch_gpt_steps.F.gelu = original


if kind in ("gpt", "gpt_erf"):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_gpt_steps

    vocab = int(sys.argv[3])
    layers, heads, width, context = [int(a) for a in sys.argv[4:8]] if len(sys.argv) > 4 else (2, 4, 64, 32)
    model = Gpt((layers, heads, width, context, vocab), kind == "gpt_erf").eval()
    ids = torch.randint(0, vocab, (4, context))
    torch.onnx.export(model, ids, out + "/model.onnx", opset_version=17, do_constant_folding=False,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    with torch.no_grad():
        y = model(ids)
    ids.numpy().astype("<f4").tofile(out + "/x.bin")
    y.numpy().astype("<f4").tofile(out + "/y.bin")
    sys.exit(0)
if kind in ("mlp", "softmax"):
    layers = [nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10)]
    if kind == "softmax":
        layers.append(nn.Softmax(dim=1))
elif kind == "cnn":
    layers = [nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
              nn.Conv2d(4, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
              nn.Flatten(), nn.Linear(8 * 7 * 7, 16), nn.ReLU(), nn.Linear(16, 10)]
elif kind == "stride2":
    layers = [nn.Conv2d(1, 4, 3, padding=1, stride=2), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 14 * 14, 10)]
else:
    sys.exit("unknown kind " + kind)
model = nn.Sequential(*layers).eval()
x = torch.rand(8, 1, 28, 28) * 2 - 1
torch.onnx.export(model, x, out + "/model.onnx", opset_version=17, do_constant_folding=False,
                  input_names=["input"], output_names=["logits"],
                  dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
with torch.no_grad():
    y = model(x)
x.numpy().astype("<f4").tofile(out + "/x.bin")
y.numpy().astype("<f4").tofile(out + "/y.bin")
