# Runs an ONNX model in onnxruntime (scripts/install-deps.sh installs it for Debian's python3) on
# raw float32 inputs, for the ONNX tests of tests/solver and tests/node.
#   onnx_run.py MODEL INPUT.bin OUTPUT.bin D0 D1 ...   (the input's shape)
# An int64 input (a GPT's token ids) is read as float32 too and converted. Writes the model's first
# output as raw little-endian float32. Exits non-zero, saying why, when
# onnxruntime cannot be imported or the model does not load: the tests then fail, never skip.
import sys

import numpy as np
import onnxruntime as ort

model, x_path, y_path = sys.argv[1:4]
shape = [int(d) for d in sys.argv[4:]]
x = np.fromfile(x_path, dtype="<f4").reshape(shape)
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
first = session.get_inputs()[0]
if first.type == "tensor(int64)":
    x = x.astype(np.int64)
(y,) = session.run(None, {first.name: x})
np.ascontiguousarray(y, dtype="<f4").tofile(y_path)
print("onnxruntime", ort.__version__, "output", list(y.shape))
