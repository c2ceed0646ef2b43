// Running an ONNX file in onnxruntime (tests/onnx_run.py under kTorchPython; scripts/install-deps.sh
// installs it) and comparing its output with polnode's: what the ONNX end-to-end tests share.
#ifndef POLNODE_TESTING_ONNX_RUNTIME_H_
#define POLNODE_TESTING_ONNX_RUNTIME_H_

#include <span>
#include <string>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/kernels/tensor.h"

namespace polnode::testing {

/// onnxruntime's output for the ONNX file `model` on `inputs` (its one input, shaped as `inputs`).
/// Writes its exchange files and onnxruntime's log into the existing directory `scratch_dir`.
/// An error when onnxruntime fails (its message holds the log) or writes no output.
Result<std::vector<float>> OnnxRuntimeOutput(const std::string& scratch_dir, const std::string& model,
                                             const kernels::Tensor& inputs);

/// max |ort - polnode| / max |polnode| over the elements of both; `ort` and `polnode` must hold the
/// same number of elements (the caller asserts it). Infinite when every polnode value is zero, so
/// that an all-zero output cannot pass a tolerance.
double MaxRelativeError(std::span<const float> ort, std::span<const float> polnode);

/// Expects onnxruntime's output for `model` on `inputs` (scratch files in `scratch_dir`) to be
/// `polnode`'s, element for element, within a max relative error of 1e-5, and records the error as
/// the test's property "onnxruntime_relative_error". With `ort_out`, onnxruntime's output is kept
/// there as well.
void ExpectOnnxRuntimeMatches(const std::string& scratch_dir, const std::string& model, const kernels::Tensor& inputs,
                              const kernels::Tensor& polnode, std::vector<float>* ort_out = nullptr);

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_ONNX_RUNTIME_H_
