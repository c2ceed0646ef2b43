// The ledger API's JSON documents (ledger_json.h). The seeds of the ledger_client fuzz target are
// answers of a real ledger (fuzz/targets/ledger_client.cc writes them), so writing their decoded
// records again must give the same bytes: the API's output does not depend on who renders it.
#include "polnode/rpc/ledger_json.h"

#include <gtest/gtest.h>

#include <string>

#include "polnode/consensus/hex.h"
#include "polnode/rpc/json.h"
#include "polnode/testing/fuzz_seeds.h"
#include "polnode/testing/status_matchers.h"

namespace polnode::node {
namespace {

using polnode::testing::IsOk;

// A seed of the ledger_client target without its first byte (which picks the decoder).
std::string LedgerAnswer(const std::string& seed) {
  const std::string bytes = polnode::testing::FuzzSeed("ledger_client", seed);
  return bytes.empty() ? bytes : bytes.substr(1);
}

// The raw bytes of the answer's hex field `name`.
std::string RawField(const std::string& json, const char* name) {
  Result<rapidjson::Document> doc = ParseJson(json);
  EXPECT_TRUE(doc.ok() && doc->HasMember(name) && (*doc)[name].IsString()) << json;
  if (!doc.ok() || !doc->HasMember(name) || !(*doc)[name].IsString()) return "";
  Result<std::vector<std::uint8_t>> bytes = consensus::HexToBytes((*doc)[name].GetString());
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? std::string(bytes->begin(), bytes->end()) : "";
}

TEST(LedgerJsonTest, TaskAnswersAreWrittenAsTheLedgerWroteThem) {
  const std::string task_json = LedgerAnswer("task");
  Result<proto::Task> task = DecodeTask(task_json);
  ASSERT_TRUE(IsOk(task));
  EXPECT_EQ(TaskJson(*task), task_json);

  // A verifier slot and a whistleblower's challenge after a forced round's reveal: the challenge's
  // covered and failed segments with their digests, whether it caught the forced error, and the
  // task's forced checkpoints with their honest hashes.
  const std::string challenged_json = LedgerAnswer("task-challenged");
  Result<proto::Task> challenged = DecodeTask(challenged_json);
  ASSERT_TRUE(IsOk(challenged));
  EXPECT_EQ(TaskJson(*challenged), challenged_json);
  ASSERT_EQ(challenged->challenges_size(), 1);
  EXPECT_TRUE(challenged->challenges(0).caught());
  const proto::Challenge& challenge = challenged->challenges(0);
  ASSERT_EQ(challenge.segment_digests_size(), 1);
  EXPECT_NE(challenged_json.find(R"("caught":true,"game_result":"GAME_RESULT_NONE","segments":[2,7],)"
                                 R"("failed_segments":[7],"segment_digests":[")" +
                                 consensus::ToHex(challenge.segment_digests(0)) + R"("]})"),
            std::string::npos)
      << challenged_json;
  ASSERT_EQ(challenged->verifiers_size(), 1);
  EXPECT_NE(challenged_json.find(R"("failed_segments":[7],"segment_digests":[")" +
                                 consensus::ToHex(challenged->verifiers(0).segment_digests(0)) + R"("]})"),
            std::string::npos)
      << challenged_json;
  ASSERT_EQ(challenged->honest_hashes_size(), 1);
  EXPECT_NE(challenged_json.find(R"("forced_checkpoints":[8],"honest_hashes":[")" +
                                 consensus::ToHex(challenged->honest_hashes(0)) + R"("])"),
            std::string::npos)
      << challenged_json;

  for (const char* seed : {"tasks", "tasks-empty"}) {
    const std::string page_json = LedgerAnswer(seed);
    Result<contracts::TaskPage> page = DecodeTaskPage(page_json);
    ASSERT_TRUE(IsOk(page)) << seed;
    EXPECT_EQ(TaskPageJson(*page), page_json) << seed;
  }

  const std::string games_json = LedgerAnswer("games");
  Result<contracts::TaskGames> games = DecodeTaskGames(games_json);
  ASSERT_TRUE(IsOk(games));
  EXPECT_EQ(TaskGamesJson(*games), games_json);
}

// A published checkpoint's answer carries the state hash and Merkle proof the ledger checked, a
// forced round's reveal its leaves' hashes and proofs (a challenger opens a game from them), and a
// slot says whether it is overdue.
TEST(LedgerJsonTest, PublishedAndRevealedCheckpointsCarryTheirProofsAndSlotsTheirOverdueFlag) {
  proto::PublishedCheckpoint published;
  proto::PublishedTensorHeader* tensor = published.add_tensors();
  tensor->set_name("w");
  tensor->add_dims(3);
  tensor->set_hash(std::string(32, '\x11'));
  published.add_chunks_received(1);
  published.add_verified(true);
  published.set_state_hash(std::string(32, '\xab'));
  published.set_proof(std::string("\x01\x02\x03"));
  const std::string json = PublishedCheckpointJson(published);
  EXPECT_NE(json.find(R"("state_hash":")" + consensus::ToHex(published.state_hash()) + R"(","proof":"010203")"),
            std::string::npos)
      << json;
  Result<proto::PublishedCheckpoint> decoded = DecodePublishedCheckpoint(json);
  ASSERT_TRUE(IsOk(decoded));
  EXPECT_EQ(decoded->state_hash(), published.state_hash());
  EXPECT_EQ(decoded->proof(), published.proof());

  // A forced round's reveal, as the ledger keeps it, carries each leaf's hashes and proofs.
  proto::RevealedCheckpoints revealed;
  proto::RevealedLeaf* leaf = revealed.add_leaves();
  leaf->set_checkpoint(8);
  leaf->set_committed_hash(std::string(32, '\x31'));
  leaf->set_committed_proof(std::string("\x04\x05"));
  leaf->set_result_hash(std::string(32, '\x33'));
  leaf->set_result_proof(std::string("\x06\x07"));
  const std::string revealed_json = RevealedCheckpointsJson(revealed);
  EXPECT_NE(revealed_json.find(R"("checkpoint":8,)"), std::string::npos) << revealed_json;
  EXPECT_NE(revealed_json.find(R"("result_hash":")" + consensus::ToHex(leaf->result_hash()) + R"(","result_proof":"0607")"),
            std::string::npos)
      << revealed_json;
  Result<proto::RevealedCheckpoints> revealed_back = DecodeRevealedCheckpoints(revealed_json);
  ASSERT_TRUE(IsOk(revealed_back));
  EXPECT_EQ(revealed_back->SerializeAsString(), revealed.SerializeAsString());
  EXPECT_EQ(DecodeRevealedCheckpoints(R"({"leaves":[],"record":"0a"})").status().code(), StatusCode::kCorruption);

  Result<proto::Task> task = DecodeTask(LedgerAnswer("task-challenged"));
  ASSERT_TRUE(IsOk(task));
  ASSERT_GT(task->verifiers_size(), 0);
  EXPECT_NE(TaskJson(*task).find(R"("overdue":false)"), std::string::npos);
  task->mutable_verifiers(0)->set_overdue(true);
  EXPECT_NE(TaskJson(*task).find(R"("overdue":true)"), std::string::npos);
}

TEST(LedgerJsonTest, ParamsAccountAndStakesAreWrittenAsTheLedgerWroteThem) {
  const std::string params_json = LedgerAnswer("params");
  Result<proto::Params> params = DecodeParams(params_json);
  ASSERT_TRUE(IsOk(params));
  EXPECT_EQ(ParamsJson(*params), params_json);

  const std::string account_json = LedgerAnswer("account");
  Result<proto::Account> account = DecodeAccount(account_json);
  ASSERT_TRUE(IsOk(account));
  EXPECT_EQ(AccountJson(RawField(account_json, "pubkey"), *account), account_json);

  for (const char* seed : {"stakes-solver", "stakes-verifier"}) {
    const std::string stakes_json = LedgerAnswer(seed);
    contracts::AccountStakes stakes;
    for (auto [role, out] : {std::pair{proto::ROLE_SOLVER, &stakes.solver}, std::pair{proto::ROLE_VERIFIER, &stakes.verifier},
                             std::pair{proto::ROLE_WHISTLEBLOWER, &stakes.whistleblower}}) {
      Result<proto::StakeRecord> stake = DecodeStake(stakes_json, role);
      ASSERT_TRUE(IsOk(stake)) << seed;
      *out = *stake;
    }
    EXPECT_EQ(StakesJson(RawField(stakes_json, "pubkey"), stakes), stakes_json) << seed;
  }
}

TEST(LedgerJsonTest, VerifiersJackpotAndSupply) {
  proto::StakeRecord stake;
  stake.set_bonded(700);
  stake.set_locked(200);
  EXPECT_EQ(VerifiersJson({}), R"({"verifiers":[]})");
  EXPECT_EQ(VerifiersJson({contracts::VerifierStake{std::string(32, '\x01'), stake}}),
            R"({"verifiers":[{"pubkey":")" + consensus::ToHex(std::string(32, '\x01')) +
                R"(","bonded":700,"locked":200,"free":500,"unbonding":0}]})");
  proto::Jackpot jackpot;
  jackpot.set_pool(12);
  EXPECT_EQ(JackpotJson(jackpot), R"({"pool":12})");
  contracts::SupplyReport supply;
  supply.genesis_supply = 700'000;
  supply.balances = 699'000;
  supply.escrow = 980;
  supply.jackpot = 20;
  EXPECT_EQ(SupplyJson(supply),
            R"({"genesis_supply":700000,"balances":699000,"bonded":0,"unbonding":0,"escrow":980,"jackpot":20,)"
            R"("total":700000,"balanced":true})");
}

}  // namespace
}  // namespace polnode::node
