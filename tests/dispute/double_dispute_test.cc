// A cheating solver that disputes every reject verdict defends one game per verifier, one after
// the other. The first game the referee decides against it ends the series (the second claim stands
// without a game), and its lock is slashed once, split between the two rejecters.
#include <gtest/gtest.h>

#include "../solver/proof_test_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/payloads.h"
#include "real_match.h"

namespace polnode::dispute_testing {
namespace {

using contracts::testing::Raw;

TEST(DoubleDisputeTest, SolverLosingItsFirstGameIsSlashedOnceAndTheOtherClaimStands) {
  const solver::ImageDataset data = solver::testing::TinyDataset();
  solver::TaskSpec task = MlpTask(data);
  const solver::TamperSpec tamper{13, NodeIndex(GraphOf(task, data), "fc2.matmul"), 0, 22};
  Proof proof = ProveTask(task, data, tamper);
  contracts::testing::TaskFlow flow;
  flow.spec = LedgerSpec(task, data);
  flow.SetCheckpoints(proof.manifest.checkpoint_hashes);
  flow.RunToVerifying();
  const std::vector<PubKey> assigned = flow.Assigned();
  ASSERT_EQ(assigned.size(), 2u);
  for (const PubKey& v : assigned) ASSERT_EQ(flow.Verdict(v, false).code, StatusCode::kOk);
  for (const PubKey& v : assigned) ASSERT_EQ(flow.Dispute(v).code, StatusCode::kOk);
  flow.AdvancePastDeadline();
  ASSERT_EQ(flow.Reveal(flow.proof_root).code, StatusCode::kOk);
  const std::uint64_t solver_bonded = flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded();

  auto backend = kernels::MakeReferenceBackend();
  auto make = [&](const PubKey& key, bool honest) {
    verifier::PlayerContext c;
    c.task = &task;
    c.data = &data;
    c.backend = backend.get();
    c.key = Raw(key);
    c.checkpoint_hashes = proof.manifest.checkpoint_hashes;
    c.load_checkpoint = proof.Loader();
    if (!honest) c.responder_options.tamper = tamper;
    Result<verifier::DisputePlayer> player = verifier::DisputePlayer::Create(std::move(c));
    EXPECT_TRUE(player.ok()) << player.status().ToString();
    return std::move(player).value();
  };
  verifier::DisputePlayer cheater = make(flow.solver, false);
  const std::uint64_t second = flow.chain.Balance(assigned[1]);
  {
    const PubKey& v = assigned[0];
    verifier::DisputePlayer honest = make(v, true);
    proto::DisputeGame game;
    for (int round = 0; round < 64; ++round) {
      Result<std::optional<std::string>> bytes = flow.chain.state().Get("game/" + consensus::ToHex(flow.task_id) + "/" + consensus::ToHex(Raw(v)));
      ASSERT_TRUE(bytes.ok() && bytes->has_value());
      ASSERT_TRUE(game.ParseFromString(**bytes));
      if (game.phase() == proto::GAME_RESOLVED) break;
      std::vector<contracts::VerifiedTx> txs;
      const proto::Task ledger_task = flow.task();
      for (auto [player, key] : {std::pair{&cheater, flow.solver}, std::pair{&honest, v}}) {
        Result<std::optional<proto::DisputeMoveTx>> move = player->NextMove(ledger_task, game);
        ASSERT_TRUE(move.ok()) << move.status().ToString();
        if (*move) txs.push_back(flow.chain.Tx(key, contracts::payload::kDisputeMove, **move));
      }
      ASSERT_FALSE(txs.empty()) << "nobody moved in round " << game.round();
      flow.chain.Block(txs);  // the harness fails the test if the block itself fails
    }
    ASSERT_EQ(game.phase(), proto::GAME_RESOLVED);
    EXPECT_EQ(game.winner(), Raw(v));
    EXPECT_EQ(game.ruling().rfind("leaf ", 0), 0u) << "decided by the referee: " << game.ruling();
  }
  const proto::Task settled = flow.task();
  EXPECT_EQ(settled.outcome(), proto::OUTCOME_REJECTED);
  EXPECT_EQ(settled.standing(), proto::PROOF_DISPROVEN);
  EXPECT_EQ(settled.verifiers(0).game_result(), proto::GAME_CHALLENGER_WON);
  EXPECT_EQ(settled.verifiers(1).game_result(), proto::GAME_NOT_PLAYED);
  EXPECT_EQ(flow.chain.Stake(proto::ROLE_SOLVER, flow.solver).bonded(), solver_bonded - 1000) << "slashed once";
  // The second rejecter's claim stood without a game: its fee and half the solver's lock.
  const std::uint64_t fee = settled.spec().payment() * 98 / 100 / 10 / 2;
  EXPECT_EQ(flow.chain.Balance(assigned[1]), second + fee + 500);
}

}  // namespace
}  // namespace polnode::dispute_testing
