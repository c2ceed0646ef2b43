// Device-resident execution on the host backends (backend.h Buffer, Allocate, Upload, Download,
// Enqueue, Synchronize): the contract every backend keeps, tested where CI can run it. An enqueued
// operator gives Run's bits; misuse is refused with a message and changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "gpu/conformance.h"
#include "polnode/kernels/backend.h"
#include "polnode/kernels/op.h"
#include "polnode/kernels/tensor.h"

namespace polnode::kernels {
namespace {

std::vector<float> Iota(std::int64_t n, float scale) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(static_cast<int>(i % 13) - 6);
  return v;
}

std::unique_ptr<Buffer> Alloc(Backend& b, const Shape& shape) {
  Result<std::unique_ptr<Buffer>> buffer = b.Allocate(shape);
  EXPECT_TRUE(buffer.ok()) << buffer.status().ToString();
  return buffer.ok() ? std::move(*buffer) : nullptr;
}

class BufferTest : public ::testing::TestWithParam<const char*> {
 protected:
  std::unique_ptr<Backend> Make() {
    Result<std::unique_ptr<Backend>> b = MakeBackend(GetParam(), 2);
    EXPECT_TRUE(b.ok());
    return std::move(*b);
  }
};

TEST_P(BufferTest, AnEnqueuedOperatorGivesRunsBits) {
  auto backend = Make();
  const std::vector<float> a = Iota(6 * 5, 0.37f), b = Iota(5 * 4, -0.11f);
  auto ba = Alloc(*backend, {6, 5}), bb = Alloc(*backend, {5, 4}), bc = Alloc(*backend, {6, 4});
  ASSERT_TRUE(ba && bb && bc);
  ASSERT_TRUE(backend->Upload(a, *ba).ok());
  ASSERT_TRUE(backend->Upload(b, *bb).ok());
  const Buffer* in[] = {ba.get(), bb.get()};
  Buffer* out[] = {bc.get()};
  ASSERT_TRUE(backend->Enqueue(Op::kMatmul, {}, in, out).ok());
  ASSERT_TRUE(backend->Synchronize().ok());
  Tensor got({6, 4});
  ASSERT_TRUE(backend->Download(*bc, got.values()).ok());

  Tensor ta = *Tensor::FromValues({6, 5}, a), tb = *Tensor::FromValues({5, 4}, b), want;
  const Tensor* tin[] = {&ta, &tb};
  Tensor* tout[] = {&want};
  ASSERT_TRUE(backend->Run(Op::kMatmul, {}, tin, tout).ok());
  EXPECT_TRUE(got.BitwiseEqual(want));
  // Two uploads, one download, counted in bytes.
  EXPECT_EQ(backend->transfers().uploads, 2);
  EXPECT_EQ(backend->transfers().upload_bytes, (30 + 20) * 4);
  EXPECT_EQ(backend->transfers().downloads, 1);
  EXPECT_EQ(backend->transfers().download_bytes, 24 * 4);
}

TEST_P(BufferTest, ABufferStartsAtPositiveZeroAndViewsKeepTheElementCount) {
  auto backend = Make();
  auto buffer = Alloc(*backend, {3, 4});
  ASSERT_TRUE(buffer);
  std::vector<float> values(12, 1.0f);
  ASSERT_TRUE(backend->Download(*buffer, values).ok());
  for (float v : values) {
    std::uint32_t bits = 1;
    std::memcpy(&bits, &v, sizeof bits);
    EXPECT_EQ(bits, 0u);  // +0.0f
  }
  EXPECT_TRUE(buffer->Reshape({2, 6}).ok());
  EXPECT_EQ(buffer->shape(), (Shape{2, 6}));
  EXPECT_EQ(buffer->Reshape({5, 5}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(buffer->shape(), (Shape{2, 6}));
  EXPECT_EQ(backend->Allocate({2, -1}).status().code(), StatusCode::kInvalidArgument);
}

TEST_P(BufferTest, TheOptimizersUpdateTheirBuffersInPlace) {
  auto backend = Make();
  const std::vector<float> w = Iota(10, 0.5f), g = Iota(10, 0.25f), v = Iota(10, 0.125f);
  auto bw = Alloc(*backend, {10}), bg = Alloc(*backend, {10}), bv = Alloc(*backend, {10});
  ASSERT_TRUE(backend->Upload(w, *bw).ok() && backend->Upload(g, *bg).ok() && backend->Upload(v, *bv).ok());
  OpAttrs attrs;
  attrs.lr = 0.1f;
  attrs.momentum = 0.9f;
  const Buffer* in[] = {bw.get(), bg.get(), bv.get()};
  Buffer* out[] = {bw.get(), bv.get()};
  ASSERT_TRUE(backend->Enqueue(Op::kSgdMomentum, attrs, in, out).ok());
  Tensor got_w({10}), got_v({10});
  ASSERT_TRUE(backend->Download(*bw, got_w.values()).ok());
  ASSERT_TRUE(backend->Download(*bv, got_v.values()).ok());

  Tensor tw = *Tensor::FromValues({10}, w), tg = *Tensor::FromValues({10}, g), tv = *Tensor::FromValues({10}, v);
  const Tensor* tin[] = {&tw, &tg, &tv};
  Tensor* tout[] = {&tw, &tv};
  ASSERT_TRUE(backend->Run(Op::kSgdMomentum, attrs, tin, tout).ok());
  EXPECT_TRUE(got_w.BitwiseEqual(tw));
  EXPECT_TRUE(got_v.BitwiseEqual(tv));
}

TEST_P(BufferTest, MisuseIsRefusedAndChangesNothing) {
  auto backend = Make();
  auto other = MakeReferenceBackend();
  auto ba = Alloc(*backend, {2, 3}), bb = Alloc(*backend, {3, 2}), bc = Alloc(*backend, {2, 2});
  auto wrong_shape = Alloc(*backend, {4, 1});
  auto foreign = Alloc(*other, {2, 2});
  const std::vector<float> a = Iota(6, 1.0f);
  ASSERT_TRUE(backend->Upload(a, *ba).ok());
  EXPECT_EQ(backend->Upload(Iota(5, 1.0f), *ba).code(), StatusCode::kInvalidArgument);
  std::vector<float> five(5);
  EXPECT_EQ(backend->Download(*ba, five).code(), StatusCode::kInvalidArgument);
  const Buffer* in[] = {ba.get(), bb.get()};
  Buffer* out_wrong[] = {wrong_shape.get()};
  const Status shape = backend->Enqueue(Op::kMatmul, {}, in, out_wrong);
  EXPECT_EQ(shape.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(shape.message().find("the operator writes [2, 2]"), std::string::npos) << shape.ToString();
  Buffer* out_foreign[] = {foreign.get()};
  const Status alien = backend->Enqueue(Op::kMatmul, {}, in, out_foreign);
  EXPECT_NE(alien.message().find("was not allocated by backend"), std::string::npos) << alien.ToString();
  if (GetParam() != std::string("reference")) {
    EXPECT_EQ(other->Upload(a, *ba).code(), StatusCode::kInvalidArgument);
  }
  Buffer* out_alias[] = {ba.get()};
  const Buffer* square_in[] = {ba.get(), bb.get()};
  EXPECT_EQ(backend->Enqueue(Op::kMatmul, {}, square_in, out_alias).code(), StatusCode::kInvalidArgument);
  std::vector<float> after(6);
  ASSERT_TRUE(backend->Download(*ba, after).ok());
  EXPECT_EQ(after, a);
  Buffer* out_ok[] = {bc.get()};
  EXPECT_TRUE(backend->Enqueue(Op::kMatmul, {}, in, out_ok).ok());
}

// A host backend reads its buffers, so it checks index values as Run does.
TEST_P(BufferTest, AHostBackendChecksIndexValuesAsRunDoes) {
  auto backend = Make();
  auto z = Alloc(*backend, {2, 3}), labels = Alloc(*backend, {2}), loss = Alloc(*backend, {1}), p = Alloc(*backend, {2, 3});
  ASSERT_TRUE(backend->Upload(Iota(6, 0.5f), *z).ok());
  ASSERT_TRUE(backend->Upload(std::vector<float>{1.0f, 3.0f}, *labels).ok());
  const Buffer* in[] = {z.get(), labels.get()};
  Buffer* out[] = {loss.get(), p.get()};
  const Status bad = backend->Enqueue(Op::kSoftmaxCrossEntropy, {}, in, out);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("expected an integer in [0, 3)"), std::string::npos) << bad.ToString();
  ASSERT_TRUE(backend->Upload(std::vector<float>{1.0f, 2.0f}, *labels).ok());
  EXPECT_TRUE(backend->Enqueue(Op::kSoftmaxCrossEntropy, {}, in, out).ok());
}

// A fused pair is refused as its operators are: wrong counts, shapes or aliasing, before anything
// is written.
TEST_P(BufferTest, AFusedPairRefusesMisuseAndWritesNothing) {
  auto backend = Make();
  const std::vector<float> x = Iota(4 * 6, 0.5f);
  std::unique_ptr<Buffer> bx = Alloc(*backend, {4, 6}), bb = Alloc(*backend, {6}), by = Alloc(*backend, {4, 6});
  std::unique_ptr<Buffer> br = Alloc(*backend, {4, 6}), wrong = Alloc(*backend, {4, 5});
  ASSERT_TRUE(backend->Upload(x, *bx).ok());
  const Buffer* in[] = {bx.get(), bb.get()};
  Buffer* too_few[] = {by.get()};
  EXPECT_EQ(backend->EnqueueFused(Fusion::kBiasAddRelu, in, too_few).code(), StatusCode::kInvalidArgument);
  Buffer* wrong_shape[] = {by.get(), wrong.get()};
  EXPECT_EQ(backend->EnqueueFused(Fusion::kBiasAddRelu, in, wrong_shape).code(), StatusCode::kInvalidArgument);
  Buffer* r_over_y[] = {by.get(), by.get()};
  EXPECT_EQ(backend->EnqueueFused(Fusion::kBiasAddRelu, in, r_over_y).code(), StatusCode::kInvalidArgument);
  Buffer* db_wrong[] = {by.get(), br.get()};  // kBiasGrad's output is [6], not [4, 6]
  const Buffer* grad_in[] = {bx.get(), bx.get()};
  EXPECT_EQ(backend->EnqueueFused(Fusion::kReluGradBiasGrad, grad_in, db_wrong).code(), StatusCode::kInvalidArgument);
  for (const Buffer* untouched : {by.get(), br.get()}) {
    std::vector<float> values(24, 1.0f);
    ASSERT_TRUE(backend->Download(*untouched, values).ok());
    EXPECT_TRUE(std::all_of(values.begin(), values.end(), [](float v) { return v == 0.0f && !std::signbit(v); }));
  }
}

INSTANTIATE_TEST_SUITE_P(HostBackends, BufferTest, ::testing::Values("reference", "cpu"));

// Every operator's conformance battery (ragged shapes, ties, in-place updates, NaN/inf/subnormal
// variants, malformed calls) through the CPU backend's buffers: Enqueue is held to the reference
// exactly as Run is. The GPU backends get the same check in gpu_backend_test.cc and gpu-check.sh.
class EnqueueConformanceTest : public ::testing::TestWithParam<int> {};

TEST_P(EnqueueConformanceTest, TheCpuBackendsBuffersMatchTheReference) {
  const Op op = static_cast<Op>(GetParam());
  std::unique_ptr<Backend> cpu = MakeCpuBackend(2);
  std::unique_ptr<Backend> through = conformance::ThroughBuffers(*cpu);
  std::unique_ptr<Backend> reference = MakeReferenceBackend();
  const std::vector<conformance::CaseResult> results = conformance::CheckOp(*through, *reference, op, 20240601);
  ASSERT_FALSE(results.empty());
  for (const conformance::CaseResult& r : results) EXPECT_TRUE(r.passed) << r.name << ": " << r.detail;
  EXPECT_GT(cpu->transfers().uploads, 0);
}

INSTANTIATE_TEST_SUITE_P(AllOps, EnqueueConformanceTest, ::testing::Range(0, kNumOps),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return std::string(OpName(static_cast<Op>(param_info.param)));
                         });

TEST(CheckIndexValues, AcceptsExactlyTheIntegersInRange) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const IndexInput small{1, "labels", 10};
  // Valid: every integer in range, -0.0 (which equals 0).
  std::vector<float> good = {-0.0f, 0.0f, 1.0f, 8.0f, 9.0f};
  EXPECT_TRUE(CheckIndexValues(Op::kSoftmaxCrossEntropy, small, good).ok());
  // Each of these, alone among valid values, is refused and named by its position.
  for (const float bad : {-1.0f, 10.0f, 0.5f, 9.5f, std::nextafter(1.0f, 2.0f), std::nextafter(1.0f, 0.0f),
                          -std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::denorm_min(), nan,
                          inf, -inf}) {
    std::vector<float> values(37, 3.0f);
    values[29] = bad;
    const Status status = CheckIndexValues(Op::kSoftmaxCrossEntropy, small, values);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(status.message().find("element 29 is"), std::string::npos) << status.ToString();
  }
  // Around 2^23, where the integer test changes method: 2^23 - 0.5 is no integer, 2^23 and the
  // floats above it all are.
  const IndexInput large{1, "ids", std::int64_t{1} << 30};
  const std::vector<float> large_good = {8388607.0f, 8388608.0f, 8388609.0f, 16777216.0f, 1073741760.0f};
  EXPECT_TRUE(CheckIndexValues(Op::kEmbeddingGrad, large, large_good).ok());
  const std::vector<float> large_bad = {8388607.5f};
  EXPECT_FALSE(CheckIndexValues(Op::kEmbeddingGrad, large, large_bad).ok());
  const std::vector<float> at_bound = {1073741824.0f};
  EXPECT_FALSE(CheckIndexValues(Op::kEmbeddingGrad, large, at_bound).ok());
}

TEST(InferOutputShapesOf, NamesTheIndexInputsInsteadOfReadingThem) {
  const Shape z{4, 10}, labels{4};
  const Shape* shapes[] = {&z, &labels};
  std::vector<IndexInput> indices;
  Result<std::vector<Shape>> out = InferOutputShapesOf(Op::kSoftmaxCrossEntropy, {}, shapes, &indices);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[1], z);
  ASSERT_EQ(indices.size(), 1u);
  EXPECT_EQ(indices[0].input, 1);
  EXPECT_EQ(indices[0].bound, 10);
  const std::vector<float> bad = {0.0f, 9.0f, 10.0f, 1.0f};
  EXPECT_EQ(CheckIndexValues(Op::kSoftmaxCrossEntropy, indices[0], bad).code(), StatusCode::kInvalidArgument);
  const Shape wrong{5};
  const Shape* mismatched[] = {&z, &wrong};
  EXPECT_EQ(InferOutputShapesOf(Op::kSoftmaxCrossEntropy, {}, mismatched).status().code(), StatusCode::kInvalidArgument);
  OpAttrs pool;
  const Shape arg{2, 1, 2, 2}, dpool{2, 1, 2, 2};
  pool.pool_input_h = 4;
  pool.pool_input_w = 4;
  const Shape* pool_shapes[] = {&arg, &dpool};
  indices.clear();
  ASSERT_TRUE(InferOutputShapesOf(Op::kMaxPool2x2Grad, pool, pool_shapes, &indices).ok());
  ASSERT_EQ(indices.size(), 1u);
  EXPECT_EQ(indices[0].bound, 4);
}

}  // namespace
}  // namespace polnode::kernels
