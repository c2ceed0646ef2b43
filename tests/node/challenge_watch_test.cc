// The whistleblower's watch on a challenged task (challenge_watch.h) as a versioned local archive:
// it round-trips, the text form before it still reads from a file written by hand, and a newer,
// truncated or damaged watch is refused by name and left exactly as it was.
#include "polnode/roles/challenge_watch.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "polnode/base/file_util.h"
#include "polnode/testing/fuzz_seeds.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

std::vector<std::uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

// Offset of the envelope's version: cereal's endianness byte, then the 16-byte kind.
constexpr std::size_t kVersionAt = 1 + kLocalKindBytes;

TEST(ChallengeWatchTest, RoundTripsWithinItsBound) {
  for (std::uint64_t holdings : {std::uint64_t{0}, std::uint64_t{4900}, std::numeric_limits<std::uint64_t>::max()}) {
    const std::vector<std::uint8_t> bytes = EncodeChallengeWatch({holdings});
    EXPECT_LE(bytes.size(), kMaxChallengeWatchBytes);
    Result<ChallengeWatch> decoded = DecodeChallengeWatch(bytes, "w");
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(decoded->holdings_before, holdings);
  }
}

TEST(ChallengeWatchTest, TheTextFormBeforeTheArchiveIsStillRead) {
  Result<ChallengeWatch> text = DecodeChallengeWatch(Bytes("123456789\n"), "w");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(text->holdings_before, 123456789u);
  for (const char* damaged : {"123", "12x\n", "\n", "99999999999999999999999\n", "1 2\n"}) {
    Result<ChallengeWatch> decoded = DecodeChallengeWatch(Bytes(damaged), "/h/watch/t");
    EXPECT_EQ(decoded.status().code(), StatusCode::kCorruption) << damaged;
    EXPECT_NE(decoded.status().message().find("/h/watch/t"), std::string::npos) << decoded.status().ToString();
  }
}

TEST(ChallengeWatchTest, NewerTruncatedAndOtherKindsAreRefusedByName) {
  const std::vector<std::uint8_t> bytes = EncodeChallengeWatch({77});
  std::vector<std::uint8_t> newer = bytes;
  newer[kVersionAt] = 2;
  Result<ChallengeWatch> decoded = DecodeChallengeWatch(newer, "/h/watch/t");
  EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(decoded.status().message().find("/h/watch/t"), std::string::npos) << decoded.status().ToString();
  std::vector<std::uint8_t> other_kind = bytes;
  other_kind[1] = 'x';
  EXPECT_EQ(DecodeChallengeWatch(other_kind, "w").status().code(), StatusCode::kFailedPrecondition);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    decoded = DecodeChallengeWatch(std::span(bytes.data(), n), "/h/watch/t");
    ASSERT_FALSE(decoded.ok()) << n << " bytes";
    EXPECT_NE(decoded.status().message().find("/h/watch/t"), std::string::npos) << decoded.status().ToString();
  }
  std::vector<std::uint8_t> longer = bytes;
  longer.push_back(0);
  EXPECT_EQ(DecodeChallengeWatch(longer, "w").status().code(), StatusCode::kCorruption);
}

TEST(ChallengeWatchTest, LoadReadsAnOldTextFileAndKeepsAnUnreadableOne) {
  polnode::testing::TempDir home("challenge-watch");
  Result<std::optional<ChallengeWatch>> none = LoadChallengeWatch(home.File("absent"));
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());

  // A watch as the whistleblower wrote it before the archive.
  ASSERT_TRUE(WriteFileAtomically(home.File("old"), std::string_view("5000\n")).ok());
  Result<std::optional<ChallengeWatch>> old = LoadChallengeWatch(home.File("old"));
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  ASSERT_TRUE(old->has_value());
  EXPECT_EQ((*old)->holdings_before, 5000u);

  std::vector<std::uint8_t> newer = EncodeChallengeWatch({5000});
  newer[kVersionAt] = 9;
  ASSERT_TRUE(WriteFileAtomically(home.File("newer"), newer).ok());
  Result<std::optional<ChallengeWatch>> refused = LoadChallengeWatch(home.File("newer"));
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find(home.File("newer")), std::string::npos) << refused.status().ToString();
  EXPECT_EQ(*ReadWholeFile(home.File("newer"), kMaxChallengeWatchBytes), newer);
}

// The committed seeds of the challenge_watch fuzz target still mean what their names say (when
// the format changes, regenerate them: polnode_fuzz --write-seeds=fuzz/corpus).
TEST(ChallengeWatchTest, TheFuzzSeedsMeanWhatTheirNamesSay) {
  const auto decode = [](const std::string& name) {
    return DecodeChallengeWatch(Bytes(polnode::testing::FuzzSeed("challenge_watch", name)), name);
  };
  for (const char* name : {"holdings", "zero", "text"}) EXPECT_TRUE(decode(name).ok()) << name;
  EXPECT_EQ(decode("truncated").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(decode("text-not-a-number").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(decode("newer-version").status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace polnode::node
