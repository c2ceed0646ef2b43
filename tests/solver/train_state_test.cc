#include "polnode/solver/train_state.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "polnode/consensus/pinpoint.h"
#include "polnode/solver/init.h"

namespace polnode::solver {
namespace {

TrainState SampleState() {
  Result<ModelSpec> m = ParseModelSpec("cnn:i1x6x6-c2-p-3");
  EXPECT_TRUE(m.ok());
  TrainState s = InitialState(*m, OptimizerKind::kAdam, 3);
  s.step = 1234567;
  // Values whose bits an encoding could lose: -0, a NaN payload, infinities, a subnormal.
  float* b = s.tensors[1].tensor.data();
  b[0] = -0.0f;
  b[1] = std::numeric_limits<float>::denorm_min();
  std::uint32_t nan_bits = 0x7fc01234u;
  std::memcpy(&s.tensors[3].tensor.data()[0], &nan_bits, 4);
  s.tensors[3].tensor.data()[1] = -std::numeric_limits<float>::infinity();
  return s;
}

void ExpectSameState(const TrainState& a, const TrainState& b) {
  EXPECT_EQ(a.step, b.step);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
    EXPECT_TRUE(a.tensors[i].tensor.BitwiseEqual(b.tensors[i].tensor)) << a.tensors[i].name;
  }
}

TEST(TrainStateTest, EncodeDecodeRoundTripsEveryBit) {
  const TrainState s = SampleState();
  const std::vector<std::uint8_t> bytes = EncodeState(s);
  Result<TrainState> back = DecodeState(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectSameState(s, *back);
  EXPECT_EQ(EncodeState(*back), bytes);
}

// The checkpoint writer encodes every checkpoint into one reused buffer: whatever the buffer held
// before (a larger state, a smaller one), it ends up holding exactly EncodeState's bytes.
TEST(TrainStateTest, EncodeStateIntoReplacesWhatTheBufferHeld) {
  const TrainState s = SampleState();
  const std::vector<std::uint8_t> want = EncodeState(s);
  std::vector<std::uint8_t> buffer(want.size() * 3, 0xab);
  EncodeStateInto(s, buffer);
  EXPECT_EQ(buffer, want);
  TrainState smaller = s;
  smaller.tensors.pop_back();
  EncodeStateInto(smaller, buffer);
  EXPECT_EQ(buffer, EncodeState(smaller));
  EncodeStateInto(s, buffer);
  EXPECT_EQ(buffer, want);
}

TEST(TrainStateTest, StateHashIsVersion2OverTheTensorHashes) {
  const TrainState s = SampleState();
  std::vector<std::string> names;
  std::vector<consensus::Hash256> tensor_hashes;
  for (const NamedTensor& nt : s.tensors) {
    names.push_back(nt.name);
    tensor_hashes.push_back(TensorHash(nt.tensor));
  }
  EXPECT_EQ(TensorHashes(s), tensor_hashes);
  EXPECT_EQ(StateHash(s),
            consensus::StateHashFromTensorHashes(static_cast<std::uint64_t>(s.step), names, tensor_hashes));
  // The state hash names the state, the content hash names the blob: they differ.
  EXPECT_NE(StateHash(s), consensus::Sha256(EncodeState(s)));
  // A decoded blob has the state hash of the state it was encoded from.
  Result<TrainState> back = DecodeState(EncodeState(s));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(StateHash(*back), StateHash(s));
}

// Every bit of every number counts; a NaN counts as NaN, whatever its payload and sign (hardware
// disagrees on those: consensus/pinpoint.h reads every NaN as 0x7FC00000), while the encoding
// keeps them (EncodeDecodeRoundTripsEveryBit).
TEST(TrainStateTest, StateHashSeesEveryBitButNanPayloadsTheStepAndTheNames) {
  const TrainState s = SampleState();
  const consensus::Hash256 before = StateHash(s);
  TrainState t = s;
  t.tensors[0].tensor.data()[0] = std::nextafter(t.tensors[0].tensor.data()[0], 1.0f);
  EXPECT_NE(StateHash(t), before);
  t = s;
  for (std::uint32_t nan_bits : {0x7fc01235u, 0xffc00000u, 0x7fffffffu}) {  // other NaN payloads and signs
    std::memcpy(&t.tensors[3].tensor.data()[0], &nan_bits, 4);
    EXPECT_EQ(StateHash(t), before) << std::hex << nan_bits;
  }
  t.tensors[3].tensor.data()[0] = std::numeric_limits<float>::infinity();
  EXPECT_NE(StateHash(t), before);
  t = s;
  t.step += 1;
  EXPECT_NE(StateHash(t), before);
  t = s;
  t.tensors[0].name += "x";
  EXPECT_NE(StateHash(t), before);
  t = s;
  std::swap(t.tensors[0], t.tensors[1]);
  EXPECT_NE(StateHash(t), before);
}

// The version-2 layout of consensus/pinpoint.h, written out byte by byte.
TEST(TrainStateTest, StateHashLayoutIsAsDocumented) {
  TrainState s;
  s.step = 2;
  s.tensors.push_back({"w", *kernels::Tensor::FromValues({2}, {1.0f, -2.0f})});
  // Version 3: one 1 x 2 block, SHA-256(0x00 || its elements) is the block root (a one-leaf tree).
  // Strings rather than vector inserts: GCC 12 reports a false -Wstringop-overflow for the latter.
  const char block[] = {'\x00', '\x00', '\x00', '\x80', '\x3f', '\x00', '\x00', '\x00', '\xc0'};  // 0x00, 1.0f, -2.0f
  const consensus::Hash256 root = consensus::Sha256(std::string_view(block, sizeof block));
  std::string tensor_bytes = "polnode.tensor.v3\n";
  const char tensor_rest[] = {1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};  // rank, dims
  tensor_bytes.append(tensor_rest, sizeof tensor_rest);
  tensor_bytes.append(reinterpret_cast<const char*>(root.data()), root.size());
  const consensus::Hash256 tensor_hash = consensus::Sha256(tensor_bytes);
  EXPECT_EQ(TensorHash(s.tensors[0].tensor), tensor_hash);

  std::string state_bytes = "polnode.state.v2\n";
  const char state_rest[] = {
      2, 0, 0, 0, 0, 0, 0, 0,       // step
      1, 0, 0, 0,                   // tensor count
      1, 0, 0, 0, 0, 0, 0, 0, 'w',  // name (U64 length)
  };
  state_bytes.append(state_rest, sizeof state_rest);
  state_bytes.append(reinterpret_cast<const char*>(tensor_hash.data()), tensor_hash.size());
  EXPECT_EQ(StateHash(s), consensus::Sha256(state_bytes));
}

TEST(TrainStateTest, EncodingLayoutIsAsDocumented) {
  TrainState s;
  s.step = 2;
  s.tensors.push_back({"w", *kernels::Tensor::FromValues({2}, {1.0f, -2.0f})});
  const std::vector<std::uint8_t> expected = {
      'P',  'L',  'N',  'S',  'T', 'A', 'T', 'E',              // magic
      1,    0,    0,    0,                                     // version
      2,    0,    0,    0,    0,   0,   0,   0,                // step
      1,    0,    0,    0,                                     // tensor count
      1,    0,    0,    0,    'w',                             // name
      1,    0,    0,    0,    2,   0,   0,   0,   0, 0, 0, 0,  // rank, dims
      0x00, 0x00, 0x80, 0x3f,                                  // 1.0f
      0x00, 0x00, 0x00, 0xc0,                                  // -2.0f
  };
  EXPECT_EQ(EncodeState(s), expected);
}

TEST(TrainStateTest, EveryTruncationIsRejected) {
  const std::vector<std::uint8_t> bytes = EncodeState(SampleState());
  for (std::size_t len = 0; len < bytes.size(); ++len) {
    Result<TrainState> r = DecodeState(std::span(bytes.data(), len));
    ASSERT_FALSE(r.ok()) << "length " << len;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
  }
}

TEST(TrainStateTest, GarbledFieldsAreRejectedWithAReason) {
  const std::vector<std::uint8_t> good = EncodeState(SampleState());
  struct Case {
    std::size_t offset;
    std::uint8_t value;
    const char* expect;
  };
  // Offsets: magic 0..7, version 8..11, step 12..19, count 20..23, first name length 24..27,
  // first name 28.., then its rank.
  const Case cases[] = {
      {0, 'X', "bad magic"},
      {8, 2, "version"},
      {19, 0x80, "negative"},
      {23, 0x40, "tensor count"},
      {24, 0, "name length"},
      {27, 1, "name length"},
      {28, ' ', "printable"},
      {28 + 7, 9, "rank"},  // "conv1.w" is 7 characters
      {28 + 7 + 4 + 7, 0x7f, "dimensions exceed"},
  };
  for (const Case& c : cases) {
    std::vector<std::uint8_t> bad = good;
    bad[c.offset] = c.value;
    Result<TrainState> r = DecodeState(bad);
    ASSERT_FALSE(r.ok()) << "offset " << c.offset;
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos)
        << "offset " << c.offset << ": " << r.status().ToString();
  }
  std::vector<std::uint8_t> trailing = good;
  trailing.push_back(0);
  Result<TrainState> r = DecodeState(trailing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("trailing"), std::string::npos);
}

TEST(TrainStateTest, RepeatedNamesAreRejected) {
  TrainState s;
  s.tensors.push_back({"a", kernels::Tensor({1})});
  s.tensors.push_back({"a", kernels::Tensor({1})});
  Result<TrainState> r = DecodeState(EncodeState(s));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("twice"), std::string::npos);
}

TEST(TrainStateTest, TensorHashCoversShapeAndBits) {
  const kernels::Tensor a = *kernels::Tensor::FromValues({2, 2}, {1, 2, 3, 4});
  kernels::Tensor b = a;
  EXPECT_EQ(TensorHash(a), TensorHash(b));
  ASSERT_TRUE(b.Reshape({4}).ok());
  EXPECT_NE(TensorHash(a), TensorHash(b));
  kernels::Tensor c = a;
  c.data()[3] = -c.data()[3];
  EXPECT_NE(TensorHash(a), TensorHash(c));
  EXPECT_EQ(TensorHash(a), consensus::TensorHashOf(a.shape(), a.values()));
}

}  // namespace
}  // namespace polnode::solver
