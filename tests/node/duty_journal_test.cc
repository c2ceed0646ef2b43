// The role daemons' duty journal (duty_journal.h) as a versioned local archive: it round-trips,
// the text form before it still reads, and a newer, truncated or damaged journal is refused by
// name; RoleContext::SendDuty then sends nothing and leaves the file exactly as it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "polnode/base/file_util.h"
#include "polnode/roles/duty_journal.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/testing/fuzz_seeds.h"
#include "polnode/testing/ledger_fixtures.h"
#include "polnode/testing/temp_dir.h"

namespace polnode::node {
namespace {

const std::string kTx(64, 'a');

std::vector<std::uint8_t> Bytes(std::string_view text) { return {text.begin(), text.end()}; }

// Offset of the envelope's version: cereal's endianness byte, then the 16-byte kind.
constexpr std::size_t kVersionAt = 1 + kLocalKindBytes;

TEST(DutyJournalTest, EveryOutcomeRoundTrips) {
  for (const DutyJournal& j : {DutyJournal{kTx, DutyJournal::Outcome::kSent, ""},
                               DutyJournal{kTx, DutyJournal::Outcome::kCommitted, ""},
                               DutyJournal{kTx, DutyJournal::Outcome::kFailed, "insufficient stake\nfor the lock"}}) {
    Result<DutyJournal> decoded = DecodeDutyJournal(EncodeDutyJournal(j), "j");
    ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_EQ(*decoded, j);
  }
}

TEST(DutyJournalTest, ALongReasonIsCutToItsBound) {
  const DutyJournal j{kTx, DutyJournal::Outcome::kFailed, std::string(5000, 'r')};
  Result<DutyJournal> decoded = DecodeDutyJournal(EncodeDutyJournal(j), "j");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->reason, std::string(kMaxDutyReasonBytes, 'r'));
  EXPECT_LE(EncodeDutyJournal(j).size(), kMaxDutyJournalBytes);
}

TEST(DutyJournalTest, TheTextFormBeforeTheArchiveIsStillRead) {
  Result<DutyJournal> sent = DecodeDutyJournal(Bytes(kTx + "\n"), "j");
  ASSERT_TRUE(sent.ok()) << sent.status().ToString();
  EXPECT_EQ(*sent, (DutyJournal{kTx, DutyJournal::Outcome::kSent, ""}));
  Result<DutyJournal> committed = DecodeDutyJournal(Bytes(kTx + " committed\n"), "j");
  ASSERT_TRUE(committed.ok());
  EXPECT_EQ(committed->outcome, DutyJournal::Outcome::kCommitted);
  Result<DutyJournal> failed = DecodeDutyJournal(Bytes(kTx + " failed nonce too low\n"), "j");
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(*failed, (DutyJournal{kTx, DutyJournal::Outcome::kFailed, "nonce too low"}));
  EXPECT_EQ(DecodeDutyJournal(Bytes(kTx + " pondering\n"), "/h/duties/d").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeDutyJournal(Bytes(kTx), "j").status().code(), StatusCode::kCorruption);
}

TEST(DutyJournalTest, NewerTruncatedAndDamagedJournalsAreRefusedByName) {
  const std::vector<std::uint8_t> bytes = EncodeDutyJournal({kTx, DutyJournal::Outcome::kFailed, "why"});
  std::vector<std::uint8_t> newer = bytes;
  newer[kVersionAt] = 2;
  Result<DutyJournal> decoded = DecodeDutyJournal(newer, "/h/duties/d");
  EXPECT_EQ(decoded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(decoded.status().message().find("/h/duties/d"), std::string::npos) << decoded.status().ToString();
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    decoded = DecodeDutyJournal(std::span(bytes.data(), n), "/h/duties/d");
    ASSERT_FALSE(decoded.ok()) << n << " bytes";
    EXPECT_NE(decoded.status().message().find("/h/duties/d"), std::string::npos) << decoded.status().ToString();
  }
  std::vector<std::uint8_t> bad_outcome = bytes;
  bad_outcome[kVersionAt + 4 + 8 + kTx.size()] = 7;
  EXPECT_EQ(DecodeDutyJournal(bad_outcome, "j").status().code(), StatusCode::kCorruption);
  std::vector<std::uint8_t> bad_id = bytes;
  bad_id[kVersionAt + 4 + 8] = 'Z';
  EXPECT_EQ(DecodeDutyJournal(bad_id, "j").status().code(), StatusCode::kCorruption);
}

// The committed seeds of the duty_journal fuzz target still mean what their names say (when the
// format changes, regenerate them: polnode_fuzz --write-seeds=fuzz/corpus).
TEST(DutyJournalTest, TheFuzzSeedsMeanWhatTheirNamesSay) {
  const auto decode = [](const std::string& name) {
    return DecodeDutyJournal(Bytes(polnode::testing::FuzzSeed("duty_journal", name)), name);
  };
  for (const char* name : {"failed", "sent", "text-committed", "text-failed"}) EXPECT_TRUE(decode(name).ok()) << name;
  EXPECT_EQ(decode("truncated").status().code(), StatusCode::kCorruption);
  EXPECT_EQ(decode("newer-version").status().code(), StatusCode::kFailedPrecondition);
}

// SendDuty reads the journal before it signs or posts anything, so these cases never reach the
// ledger (there is none at the context's URL).
class DutyJournalContextTest : public ::testing::Test {
 protected:
  DutyJournalContextTest()
      : ctx_("verifier", home_.path(), polnode::testing::KeyFromByte(0x31),
             *LedgerClient::FromUrl("http://127.0.0.1:1")) {
    std::filesystem::create_directories(home_.File("duties"));
  }

  std::string Journal(std::string_view duty) const { return home_.File("duties/" + std::string(duty)); }

  polnode::testing::TempDir home_{"duty-journal"};
  RoleContext ctx_;
};

TEST_F(DutyJournalContextTest, AJournalThatCannotBeReadStopsTheDutyAndKeepsItsBytes) {
  std::vector<std::uint8_t> newer = EncodeDutyJournal({kTx, DutyJournal::Outcome::kSent, ""});
  newer[kVersionAt] = 3;
  ASSERT_TRUE(WriteFileAtomically(Journal("newer"), newer).ok());
  Result<DutyState> state = ctx_.SendDuty("newer", "stake", "payload");
  EXPECT_EQ(state.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(state.status().message().find(Journal("newer")), std::string::npos) << state.status().ToString();
  EXPECT_EQ(*ReadWholeFile(Journal("newer"), kMaxDutyJournalBytes), newer);

  const std::vector<std::uint8_t> damaged = {1, 2, 3};
  ASSERT_TRUE(WriteFileAtomically(Journal("damaged"), damaged).ok());
  state = ctx_.SendDuty("damaged", "stake", "payload");
  EXPECT_EQ(state.status().code(), StatusCode::kCorruption);
  EXPECT_EQ(*ReadWholeFile(Journal("damaged"), kMaxDutyJournalBytes), damaged);
  EXPECT_TRUE(ctx_.DutySent("damaged"));
  EXPECT_EQ(ctx_.DutyFailure("damaged"), "");
}

TEST_F(DutyJournalContextTest, SettledDutiesAreAnsweredFromTheJournalOfEitherForm) {
  ASSERT_TRUE(WriteFileAtomically(Journal("old"), kTx + " failed nonce too low\n").ok());
  ASSERT_TRUE(WriteFileAtomically(Journal("new"), EncodeDutyJournal({kTx, DutyJournal::Outcome::kCommitted, ""})).ok());
  Result<DutyState> old_state = ctx_.SendDuty("old", "stake", "payload");
  ASSERT_TRUE(old_state.ok()) << old_state.status().ToString();
  EXPECT_EQ(*old_state, DutyState::kFailed);
  EXPECT_EQ(ctx_.DutyFailure("old"), "nonce too low");
  Result<DutyState> new_state = ctx_.SendDuty("new", "stake", "payload");
  ASSERT_TRUE(new_state.ok()) << new_state.status().ToString();
  EXPECT_EQ(*new_state, DutyState::kCommitted);
  EXPECT_FALSE(ctx_.DutySent("never"));
}

}  // namespace
}  // namespace polnode::node
