// Transfers, the ante (chain id, nonce, fee) and transaction atomicity.
#include <gtest/gtest.h>

#include <limits>
#include <map>

#include "polnode/contracts/payloads.h"
#include "polnode/testing/chain_harness.h"

namespace polnode::contracts::testing {
namespace {

const PubKey kAlice = Key(1);
const PubKey kBob = Key(2);

proto::TransferTx TransferMsg(const PubKey& to, std::uint64_t amount) {
  proto::TransferTx msg;
  msg.set_to(Raw(to));
  msg.set_amount(amount);
  return msg;
}

// The state's pairs except the accounts whose fee and nonce a failed tx legitimately changes.
std::map<std::string, std::string, std::less<>> PairsExceptFeeAccounts(const MemoryStateStore& state) {
  auto pairs = state.pairs();
  for (auto it = pairs.begin(); it != pairs.end();) {
    it = it->first.rfind("acct/", 0) == 0 || it->first == "meta/height" ? pairs.erase(it) : std::next(it);
  }
  return pairs;
}

TEST(Transfer, MovesFundsAndPaysTheFeeToTheProposer) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  TxResult r = chain.Run(kAlice, payload::kTransfer, TransferMsg(kBob, 300));
  ASSERT_EQ(r.code, StatusCode::kOk) << r.log;
  EXPECT_TRUE(r.fee_charged);
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].type, "transfer");
  EXPECT_EQ(chain.Balance(kAlice), 699u);
  EXPECT_EQ(chain.Balance(kBob), 300u);
  EXPECT_EQ(chain.Balance(Chain::Proposer()), 1u);
  EXPECT_EQ(chain.Nonce(kAlice), 1u);
}

TEST(Transfer, ShortBalanceFailsButPaysFeeAndAdvancesNonce) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  const auto before = PairsExceptFeeAccounts(chain.state());
  TxResult r = chain.Run(kAlice, payload::kTransfer, TransferMsg(kBob, 1'000));  // fee leaves 999
  EXPECT_EQ(r.code, StatusCode::kFailedPrecondition);
  EXPECT_TRUE(r.fee_charged);
  EXPECT_TRUE(r.events.empty());
  EXPECT_EQ(chain.Balance(kAlice), 999u);
  EXPECT_EQ(chain.Balance(kBob), 0u);
  EXPECT_EQ(chain.Nonce(kAlice), 1u);
  EXPECT_EQ(PairsExceptFeeAccounts(chain.state()), before);
}

TEST(Transfer, ZeroAmountAndShortKeyAreInvalid) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  EXPECT_EQ(chain.Run(kAlice, payload::kTransfer, TransferMsg(kBob, 0)).code, StatusCode::kInvalidArgument);
  proto::TransferTx short_key;
  short_key.set_to("abc");
  short_key.set_amount(1);
  EXPECT_EQ(chain.Run(kAlice, payload::kTransfer, short_key).code, StatusCode::kInvalidArgument);
}

TEST(Transfer, AmountsNearUint64MaxFailWithoutOverflow) {
  proto::Params params = TestParams();
  Chain chain(params, {kAlice, kBob}, (std::numeric_limits<std::uint64_t>::max() / 2) - 10);
  TxResult r = chain.Run(kAlice, payload::kTransfer, TransferMsg(kBob, std::numeric_limits<std::uint64_t>::max()));
  EXPECT_EQ(r.code, StatusCode::kFailedPrecondition);
}

TEST(Ante, WrongNonceAndWrongChainChargeNothing) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  const auto before = chain.state().pairs();
  VerifiedTx replay = chain.Tx(kAlice, payload::kTransfer, TransferMsg(kBob, 1));
  replay.nonce = 5;
  VerifiedTx foreign = chain.Tx(kAlice, payload::kTransfer, TransferMsg(kBob, 1));
  foreign.nonce = 0;
  foreign.chain_id = "other-chain";
  BlockResult result = chain.Block({replay, foreign});
  ASSERT_EQ(result.tx_results.size(), 2u);
  EXPECT_EQ(result.tx_results[0].code, StatusCode::kFailedPrecondition);
  EXPECT_FALSE(result.tx_results[0].fee_charged);
  EXPECT_EQ(result.tx_results[1].code, StatusCode::kInvalidArgument);
  auto after = chain.state().pairs();
  after.erase("meta/height");
  auto expected = before;
  expected.erase("meta/height");
  EXPECT_EQ(after, expected);
}

TEST(Ante, ReusedNonceIsRejected) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  VerifiedTx tx = chain.Tx(kAlice, payload::kTransfer, TransferMsg(kBob, 1));
  ASSERT_EQ(chain.Block({tx}).tx_results[0].code, StatusCode::kOk);
  EXPECT_EQ(chain.Block({tx}).tx_results[0].code, StatusCode::kFailedPrecondition);
  EXPECT_EQ(chain.Balance(kBob), 1u);
}

TEST(Ante, UnknownPayloadTypeAndNonCanonicalPayloadFailAfterTheFee) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  VerifiedTx unknown = chain.Tx(kAlice, "mint", TransferMsg(kBob, 1));
  VerifiedTx padded = chain.Tx(kAlice, payload::kTransfer, TransferMsg(kBob, 1));
  padded.payload += std::string("\x08\x01", 2);  // field 1 as a varint: an unknown encoding
  BlockResult result = chain.Block({unknown, padded});
  EXPECT_EQ(result.tx_results[0].code, StatusCode::kInvalidArgument);
  EXPECT_EQ(result.tx_results[1].code, StatusCode::kInvalidArgument);
  EXPECT_EQ(chain.Balance(kAlice), 998u);
  EXPECT_EQ(chain.Balance(kBob), 0u);
}

}  // namespace
}  // namespace polnode::contracts::testing
