// The ABCI-shaped entry points: CheckTx admission, proposal building and checking, block height
// sequencing and Commit.
#include <gtest/gtest.h>

#include "chain_harness.h"
#include "polnode/contracts/payloads.h"

namespace polnode::contracts::testing {
namespace {

const PubKey kAlice = Key(1);
const PubKey kBob = Key(2);

proto::TransferTx TransferMsg(std::uint64_t amount) {
  proto::TransferTx msg;
  msg.set_to(Raw(kBob));
  msg.set_amount(amount);
  return msg;
}

VerifiedTx TransferWithNonce(Chain& chain, std::uint64_t nonce, std::uint64_t amount = 1) {
  VerifiedTx tx = chain.Tx(kAlice, payload::kTransfer, TransferMsg(amount));
  tx.nonce = nonce;
  return tx;
}

BlockContext NextContext(const Chain& chain) {
  BlockContext context;
  context.height = chain.height() + 1;
  context.randomness = Chain::RandomnessAt(context.height);
  context.proposer = Chain::Proposer();
  return context;
}

TEST(CheckTx, AdmitsNoncesInsideTheWindow) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  EXPECT_TRUE(chain.app().CheckTx(TransferWithNonce(chain, 0), chain.state()).ok());
  EXPECT_TRUE(chain.app().CheckTx(TransferWithNonce(chain, 7), chain.state()).ok());
  EXPECT_EQ(chain.app().CheckTx(TransferWithNonce(chain, 8), chain.state()).code(), StatusCode::kFailedPrecondition);
  ASSERT_EQ(chain.Block({TransferWithNonce(chain, 0)}).tx_results[0].code, StatusCode::kOk);
  EXPECT_EQ(chain.app().CheckTx(TransferWithNonce(chain, 0), chain.state()).code(), StatusCode::kFailedPrecondition);
}

TEST(CheckTx, RejectsForeignChainBadPayloadAndUnpayableFees) {
  Chain chain(TestParams(), {kAlice}, 3);
  VerifiedTx foreign = TransferWithNonce(chain, 0);
  foreign.chain_id = "elsewhere";
  EXPECT_EQ(chain.app().CheckTx(foreign, chain.state()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(chain.app().CheckTx(TransferWithNonce(chain, 0, 0), chain.state()).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(chain.app().CheckTx(TransferWithNonce(chain, 2), chain.state()).ok());  // 3 fees of 1
  EXPECT_EQ(chain.app().CheckTx(TransferWithNonce(chain, 3), chain.state()).code(), StatusCode::kFailedPrecondition);
  VerifiedTx stranger = TransferWithNonce(chain, 0);
  stranger.signer = Key(9);
  EXPECT_EQ(chain.app().CheckTx(stranger, chain.state()).code(), StatusCode::kFailedPrecondition);
}

TEST(PrepareProposal, OrdersEachSignersNoncesAndDropsTxsThatFailTheAnte) {
  Chain chain(TestParams(), {kAlice, kBob}, 1'000);
  VerifiedTx bob = chain.Tx(kBob, payload::kTransfer, TransferMsg(1));
  std::vector<VerifiedTx> candidates = {TransferWithNonce(chain, 1), bob, TransferWithNonce(chain, 0),
                                        TransferWithNonce(chain, 5)};
  auto chosen = chain.app().PrepareProposal(candidates, NextContext(chain), chain.state(), ProposalLimits{});
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  ASSERT_EQ(chosen->size(), 3u);  // nonce 5 leaves a gap
  EXPECT_EQ((*chosen)[0].nonce, 0u);
  EXPECT_EQ((*chosen)[1].signer, kBob);
  EXPECT_EQ((*chosen)[2].nonce, 1u);
  EXPECT_TRUE(chain.app().ProcessProposal(*chosen, NextContext(chain), chain.state(), ProposalLimits{}).ok());
  BlockResult result = chain.Block(*chosen);
  for (const TxResult& r : result.tx_results) EXPECT_EQ(r.code, StatusCode::kOk) << r.log;
}

TEST(PrepareProposal, RespectsCountAndByteLimits) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  std::vector<VerifiedTx> candidates;
  for (std::uint64_t n = 0; n < 5; ++n) candidates.push_back(TransferWithNonce(chain, n));
  auto by_count =
      chain.app().PrepareProposal(candidates, NextContext(chain), chain.state(), ProposalLimits{2, 1u << 20});
  ASSERT_TRUE(by_count.ok());
  EXPECT_EQ(by_count->size(), 2u);
  const std::uint64_t one = candidates[0].wire_size;
  auto by_bytes =
      chain.app().PrepareProposal(candidates, NextContext(chain), chain.state(), ProposalLimits{100, 3 * one});
  ASSERT_TRUE(by_bytes.ok());
  EXPECT_EQ(by_bytes->size(), 3u);
}

TEST(ProcessProposal, RejectsAnteFailuresAndOversizedBlocks) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  std::vector<VerifiedTx> gap = {TransferWithNonce(chain, 1)};
  EXPECT_EQ(chain.app().ProcessProposal(gap, NextContext(chain), chain.state(), ProposalLimits{}).code(),
            StatusCode::kInvalidArgument);
  std::vector<VerifiedTx> two = {TransferWithNonce(chain, 0), TransferWithNonce(chain, 1)};
  EXPECT_EQ(chain.app().ProcessProposal(two, NextContext(chain), chain.state(), ProposalLimits{1, 1u << 20}).code(),
            StatusCode::kInvalidArgument);
  // A payload failure is not an ante failure: the block is valid, the tx pays its fee.
  std::vector<VerifiedTx> overdraft = {TransferWithNonce(chain, 0, 5'000)};
  EXPECT_TRUE(chain.app().ProcessProposal(overdraft, NextContext(chain), chain.state(), ProposalLimits{}).ok());
  EXPECT_EQ(chain.Nonce(kAlice), 0u);  // proposals write nothing
}

// Issues 15 and 18: every transaction ran twice per block (PrepareProposal's simulation, then
// FinalizeBlock). FinalizeBlock now reuses the proposal's execution when the block is the one
// prepared; the result must be exactly what executing it gives.
TEST(FinalizeBlock, ReusingThePreparedExecutionGivesTheSameStateAndResults) {
  auto run = [](bool prepare_first) {
    Chain chain(TestParams(), {kAlice, kBob}, 1'000);
    std::vector<VerifiedTx> txs = {TransferWithNonce(chain, 1, 5), TransferWithNonce(chain, 0, 7),
                                   TransferWithNonce(chain, 2, 5'000)};  // the last fails its payload
    const BlockContext context = NextContext(chain);
    std::vector<VerifiedTx> block = txs;
    if (prepare_first) {
      auto chosen = chain.app().PrepareProposal(txs, context, chain.state(), ProposalLimits{});
      EXPECT_TRUE(chosen.ok());
      block = *chosen;
    } else {
      std::swap(block[0], block[1]);  // the order PrepareProposal gives: each signer's nonces ascending
    }
    auto result = chain.app().FinalizeBlock(context, block, chain.state());
    EXPECT_TRUE(result.ok()) << result.status().ToString();
    std::vector<std::pair<StatusCode, std::string>> codes;
    for (const TxResult& r : result->tx_results) codes.emplace_back(r.code, r.log);
    return std::make_pair(chain.state().pairs(), codes);
  };
  const auto reused = run(true);
  const auto executed = run(false);
  EXPECT_EQ(reused.first, executed.first);
  EXPECT_EQ(reused.second, executed.second);
  ASSERT_EQ(reused.second.size(), 3u);
  EXPECT_NE(reused.second[2].first, StatusCode::kOk);
}

TEST(FinalizeBlock, HeightsMustFollowTheStoredHeight) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  BlockContext context = NextContext(chain);
  context.height = 2;
  auto skipped = chain.app().FinalizeBlock(context, {}, chain.state());
  EXPECT_EQ(skipped.status().code(), StatusCode::kFailedPrecondition);
  chain.Block({});
  context.height = 1;
  EXPECT_EQ(chain.app().FinalizeBlock(context, {}, chain.state()).status().code(), StatusCode::kFailedPrecondition);
}

TEST(FinalizeBlock, RefusesAStoreWithoutGenesis) {
  Application app;
  MemoryStateStore empty;
  BlockContext context;
  context.height = 1;
  EXPECT_EQ(app.FinalizeBlock(context, {}, empty).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(empty.pairs().empty());
}

TEST(Commit, NeedsAFinalizedBlock) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  EXPECT_EQ(chain.app().Commit().status().code(), StatusCode::kFailedPrecondition);
  auto result = chain.app().FinalizeBlock(NextContext(chain), {}, chain.state());
  ASSERT_TRUE(result.ok());
  auto committed = chain.app().Commit();
  ASSERT_TRUE(committed.ok());
  EXPECT_EQ(*committed, 1u);
  EXPECT_EQ(chain.app().Commit().status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace polnode::contracts::testing
