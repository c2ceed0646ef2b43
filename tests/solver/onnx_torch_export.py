# Writes an ONNX file with torch.onnx.export (opset 17, do_constant_folding=False, so weights stay
# named initializers) for tests/solver/onnx_model_test.cc, with an input batch and PyTorch's output.
#   onnx_torch_export.py KIND DIR
# KIND: mlp, cnn (what polnode imports), softmax (an MLP ending in Softmax), stride2 (a CNN whose
# Conv has stride 2). DIR receives model.onnx, x.bin (8 inputs [8, 1, 28, 28], raw float32) and
# y.bin (PyTorch's logits [8, 10]).
import sys

import numpy as np
import torch

kind, out = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
nn = torch.nn
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
