// The CUDA and HIP backends against the scalar reference, bit for bit, for every operator
// (kernels/gpu/conformance.h has the cases). Without a device (CI) those tests skip with the
// reason; the harness tests below run everywhere, so CI still checks that the comparison itself
// finds a one-bit difference and that the GPU factories fail cleanly.
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "gpu/conformance.h"
#include "gpu/gpu_backend.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"

namespace polnode::kernels {
namespace {

constexpr std::uint64_t kSeed = 20240601;

// The GPU backend named `name`, or the reason it cannot run here (kUnavailable).
Result<std::unique_ptr<Backend>> MakeGpu(const std::string& name) {
#if defined(POLNODE_HAVE_CUDA)
  if (name == "cuda") return MakeCudaBackend();
#endif
#if defined(POLNODE_HAVE_HIP)
  if (name == "hip") return MakeHipBackend();
#endif
  return Status::Unavailable("this build has no " + name +
                             " backend (its toolchain was missing at configure time, or POLNODE_" +
                             (name == "cuda" ? std::string("CUDA") : std::string("HIP")) + " was OFF)");
}

class GpuBitwiseTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(GpuBitwiseTest, MatchesReferenceBitForBit) {
  const std::string& backend = std::get<0>(GetParam());
  const Op op = static_cast<Op>(std::get<1>(GetParam()));
  Result<std::unique_ptr<Backend>> gpu = MakeGpu(backend);
  if (!gpu.ok()) GTEST_SKIP() << gpu.status().ToString();
  ASSERT_EQ((*gpu)->name(), backend);
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  const std::vector<conformance::CaseResult> results = conformance::CheckOp(**gpu, *reference, op, kSeed);
  ASSERT_FALSE(results.empty());
  for (const conformance::CaseResult& r : results) EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
}

// The same battery through the device-resident interface (buffers, Enqueue, Download).
TEST_P(GpuBitwiseTest, EnqueuedOnDeviceBuffersMatchesReferenceBitForBit) {
  const std::string& backend = std::get<0>(GetParam());
  const Op op = static_cast<Op>(std::get<1>(GetParam()));
  Result<std::unique_ptr<Backend>> gpu = MakeGpu(backend);
  if (!gpu.ok()) GTEST_SKIP() << gpu.status().ToString();
  std::unique_ptr<Backend> through = conformance::ThroughBuffers(**gpu);
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  const std::vector<conformance::CaseResult> results = conformance::CheckOp(*through, *reference, op, kSeed);
  ASSERT_FALSE(results.empty());
  for (const conformance::CaseResult& r : results) EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
}

std::string ParamName(const ::testing::TestParamInfo<GpuBitwiseTest::ParamType>& info) {
  return std::get<0>(info.param) + "_" + std::string(OpName(static_cast<Op>(std::get<1>(info.param))));
}

INSTANTIATE_TEST_SUITE_P(AllOps, GpuBitwiseTest,
                         ::testing::Combine(::testing::Values(std::string("cuda"), std::string("hip")),
                                            ::testing::Range(0, kNumOps)),
                         ParamName);

// Without a device the factories must say so with kUnavailable and a sentence; with one they
// must return the backend they are named for.
TEST(GpuFactoryTest, AvailableOrClearlyUnavailable) {
  for (const std::string name : {"cuda", "hip"}) {
    Result<std::unique_ptr<Backend>> gpu = MakeGpu(name);
    if (gpu.ok()) {
      EXPECT_EQ((*gpu)->name(), name);
    } else {
      EXPECT_EQ(gpu.status().code(), StatusCode::kUnavailable) << gpu.status().ToString();
      EXPECT_FALSE(gpu.status().message().empty());
    }
  }
}

// The harness must pass a backend against itself: every valid case is accepted by the reference
// and every malformed case rejected, so the cases are well-formed.
TEST(ConformanceHarnessTest, ReferenceAgreesWithItself) {
  std::unique_ptr<Backend> a = MakeReferenceBackend();
  std::unique_ptr<Backend> b = MakeReferenceBackend();
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    const std::vector<conformance::CaseResult> results = conformance::CheckOp(*a, *b, op, kSeed);
    ASSERT_FALSE(results.empty()) << OpName(op);
    for (const conformance::CaseResult& r : results) EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
  }
}

// The reference with the lowest bit of one output element flipped: a stand-in for a GPU kernel
// that rounds once differently.
class OneBitOffBackend final : public Backend {
 public:
  std::string name() const override { return "one-bit-off"; }
  Status Run(Op op, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
             std::span<Tensor* const> outputs) override {
    POLNODE_RETURN_IF_ERROR(inner_->Run(op, attrs, inputs, outputs));
    for (Tensor* t : outputs) {
      if (t->numel() == 0) continue;
      float& v = t->data()[t->numel() - 1];
      std::uint32_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      bits ^= 1u;
      std::memcpy(&v, &bits, sizeof bits);
      break;
    }
    return Status::Ok();
  }

 private:
  std::unique_ptr<Backend> inner_ = MakeReferenceBackend();
};

TEST(ConformanceHarnessTest, FindsOneFlippedBitInEveryOperator) {
  OneBitOffBackend broken;
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    int caught = 0;
    for (const conformance::CaseResult& r : conformance::CheckOp(broken, *reference, op, kSeed)) {
      if (!r.passed) {
        ++caught;
        EXPECT_NE(r.detail.find("differ"), std::string::npos) << r.detail;
      }
    }
    EXPECT_GT(caught, 0) << OpName(op) << ": a one-bit difference went unnoticed";
  }
}

// The reference with its NaN outputs rewritten: `nan_bits` for every NaN (another vendor's
// payload: harmless), or, with `nan_becomes_zero`, +0.0f in their place (what a hardware max or a
// flushing kernel would do: a different state).
class RewritesNansBackend final : public Backend {
 public:
  RewritesNansBackend(std::uint32_t nan_bits, bool nan_becomes_zero)
      : nan_bits_(nan_bits), nan_becomes_zero_(nan_becomes_zero) {}
  std::string name() const override { return "rewrites-nans"; }
  Status Run(Op op, const OpAttrs& attrs, std::span<const Tensor* const> inputs,
             std::span<Tensor* const> outputs) override {
    POLNODE_RETURN_IF_ERROR(inner_->Run(op, attrs, inputs, outputs));
    for (Tensor* t : outputs) {
      for (float& v : t->values()) {
        if (v != v) {
          if (nan_becomes_zero_) {
            v = 0.0f;
          } else {
            std::memcpy(&v, &nan_bits_, sizeof v);
          }
        }
      }
    }
    return Status::Ok();
  }

 private:
  std::uint32_t nan_bits_;
  bool nan_becomes_zero_;
  std::unique_ptr<Backend> inner_ = MakeReferenceBackend();
};

// The special-value variants reach a NaN in some output of every operator that can output one
// (all but ReLU, whose NaN gives +0), so a backend that turns NaNs into numbers is caught there,
// while one that only writes NaNs with its own payload passes everywhere.
TEST(ConformanceHarnessTest, NanPayloadsPassAndNansTurnedIntoNumbersFail) {
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  RewritesNansBackend nvidia_payload(0x7FFFFFFFu, false);
  RewritesNansBackend flushes_nan(0, true);
  for (int i = 0; i < kNumOps; ++i) {
    const Op op = static_cast<Op>(i);
    for (const conformance::CaseResult& r :
         conformance::CheckOp(nvidia_payload, *reference, op, kSeed, conformance::CaseSet::kSpecialValues)) {
      EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
    }
    int caught = 0;
    for (const conformance::CaseResult& r :
         conformance::CheckOp(flushes_nan, *reference, op, kSeed, conformance::CaseSet::kSpecialValues)) {
      caught += r.passed ? 0 : 1;
    }
    if (op == Op::kRelu) {
      EXPECT_EQ(caught, 0);
    } else {
      EXPECT_GT(caught, 0) << OpName(op) << ": no special-value case puts a NaN in its outputs";
    }
  }
}

}  // namespace
}  // namespace polnode::kernels
