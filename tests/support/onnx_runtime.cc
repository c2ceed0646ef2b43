#include "polnode/testing/onnx_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <utility>

#include "polnode/testing/data_files.h"
#include "polnode/testing/torch_files.h"

namespace polnode::testing {

Result<std::vector<float>> OnnxRuntimeOutput(const std::string& scratch_dir, const std::string& model,
                                             const kernels::Tensor& inputs) {
  const std::string x = scratch_dir + "/ort_x.bin", y = scratch_dir + "/ort_y.bin", log = scratch_dir + "/ort.log";
  WriteRawFloats(x, inputs);
  std::string cmd = std::string(kTorchPython) + " " POLNODE_SOURCE_DIR "/tests/onnx_run.py '" + model + "' '" + x +
                    "' '" + y + "'";
  for (std::int64_t d : inputs.shape()) cmd += " " + std::to_string(d);
  cmd += " >'" + log + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    return Status::Internal("onnxruntime failed on " + model + " (scripts/install-deps.sh installs it): " +
                            ReadFileText(log));
  }
  std::vector<float> out = ReadRawFloats(y);
  if (out.empty()) return Status::Internal("onnxruntime wrote no output for " + model + ": " + ReadFileText(log));
  return out;
}

double MaxRelativeError(std::span<const float> ort, std::span<const float> polnode) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < ort.size() && i < polnode.size(); ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(ort[i]) - polnode[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(polnode[i])));
  }
  return scale > 0.0 ? diff / scale : std::numeric_limits<double>::infinity();
}

void ExpectOnnxRuntimeMatches(const std::string& scratch_dir, const std::string& model, const kernels::Tensor& inputs,
                              const kernels::Tensor& polnode, std::vector<float>* ort_out) {
  Result<std::vector<float>> ort = OnnxRuntimeOutput(scratch_dir, model, inputs);
  ASSERT_TRUE(ort.ok()) << ort.status().ToString();
  ASSERT_EQ(static_cast<std::int64_t>(ort->size()), polnode.numel()) << model;
  const double error = MaxRelativeError(*ort, polnode.values());
  EXPECT_LE(error, 1e-5) << model;
  ::testing::Test::RecordProperty("onnxruntime_relative_error", ::testing::PrintToString(error));
  if (ort_out != nullptr) *ort_out = std::move(*ort);
}

}  // namespace polnode::testing
