// SHA-256 known-answer tests (FIPS 180-2 examples and the NIST long-message vector), plus the
// hex helpers on digests and the incremental hasher's equivalence with the one-shot function.
#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256.h"

#include <gtest/gtest.h>

#include <string>

namespace polnode::consensus {
namespace {

TEST(Sha256Test, EmptyString) {
  EXPECT_EQ(ToHex(Sha256(std::string_view())),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, Abc) {
  EXPECT_EQ(ToHex(Sha256("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, Nist448BitMessage) {
  EXPECT_EQ(ToHex(Sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, Nist896BitMessage) {
  EXPECT_EQ(ToHex(Sha256("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
                             "lmnopqrsmnopqrstnopqrstu")),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256Test, OneMillionAsIncrementally) {
  // Fed in uneven pieces so block boundaries fall inside Update calls.
  Sha256Hasher hasher;
  const std::string chunk(997, 'a');
  std::size_t fed = 0;
  while (fed + chunk.size() <= 1000000) {
    hasher.Update(chunk);
    fed += chunk.size();
  }
  hasher.Update(std::string(1000000 - fed, 'a'));
  EXPECT_EQ(ToHex(hasher.Finalize()), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, IncrementalMatchesOneShotAtEverySplit) {
  std::string message;
  for (int i = 0; i < 130; ++i) message.push_back(static_cast<char>(i * 7 + 3));
  const Hash256 expected = Sha256(message);
  Sha256Hasher hasher;
  for (std::size_t split = 0; split <= message.size(); ++split) {
    hasher.Update(std::string_view(message).substr(0, split));
    hasher.Update(std::string_view(message).substr(split));
    ASSERT_EQ(hasher.Finalize(), expected) << "split at " << split;  // Finalize also resets
  }
}

TEST(Sha256Test, HexRoundTripAndRejection) {
  const Hash256 h = Sha256("abc");
  Result<Hash256> back = HashFromHex(ToHex(h));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, h);
  Result<Hash256> upper = HashFromHex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(*upper, h);
  EXPECT_EQ(HashFromHex("abc").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(HashFromHex(std::string(63, '0') + "g").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::consensus
