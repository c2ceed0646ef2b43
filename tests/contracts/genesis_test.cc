// InitChain and the params rules.
#include "polnode/contracts/genesis.h"

#include <gtest/gtest.h>

#include "polnode/contracts/queries.h"
#include "polnode/contracts/supply.h"
#include "polnode/testing/chain_harness.h"

namespace polnode::contracts::testing {
namespace {

proto::GenesisSpec Genesis(std::initializer_list<std::pair<std::uint8_t, std::uint64_t>> allocations) {
  proto::GenesisSpec genesis;
  genesis.set_chain_id("polnode-test");
  *genesis.mutable_params() = TestParams();
  for (const auto& [key, amount] : allocations) {
    proto::Allocation* allocation = genesis.add_allocations();
    allocation->set_pubkey(Raw(Key(key)));
    allocation->set_amount(amount);
  }
  return genesis;
}

TEST(InitChain, WritesAllocationsSupplyAndHeightZero) {
  Application app;
  MemoryStateStore state;
  ASSERT_TRUE(app.InitChain(Genesis({{1, 500}, {2, 700}}), state).ok());
  auto supply = AuditSupply(state);
  ASSERT_TRUE(supply.ok());
  EXPECT_EQ(supply->genesis_supply, 1'200u);
  EXPECT_TRUE(supply->balanced());
  auto info = QueryChainInfo(state);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->chain_id, "polnode-test");
  EXPECT_EQ(info->height, 0u);
  EXPECT_EQ(info->task_count, 0u);
}

TEST(InitChain, RejectsBadGenesisWithoutWriting) {
  Application app;
  MemoryStateStore state;
  EXPECT_EQ(app.InitChain(Genesis({{1, 500}, {1, 700}}), state).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(app.InitChain(Genesis({{1, 0}}), state).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(app.InitChain(Genesis({{1, ~std::uint64_t{0}}, {2, 1}}), state).code(), StatusCode::kInvalidArgument);
  proto::GenesisSpec bad_chain = Genesis({{1, 5}});
  bad_chain.set_chain_id("has space");
  EXPECT_EQ(app.InitChain(bad_chain, state).code(), StatusCode::kInvalidArgument);
  proto::GenesisSpec bad_params = Genesis({{1, 5}});
  bad_params.mutable_params()->set_beacon_delay(0);
  EXPECT_EQ(app.InitChain(bad_params, state).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(state.pairs().empty());
}

TEST(InitChain, RunsOnlyOnce) {
  Application app;
  MemoryStateStore state;
  ASSERT_TRUE(app.InitChain(Genesis({{1, 5}}), state).ok());
  const auto pairs = state.pairs();
  EXPECT_EQ(app.InitChain(Genesis({{2, 5}}), state).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(state.pairs(), pairs);
}

TEST(Params, DefaultsAreValidAndEachRuleBites) {
  EXPECT_TRUE(ValidateParams(DefaultParams()).ok());
  EXPECT_TRUE(ValidateParams(TestParams()).ok());
  const auto broken = [](auto mutate) {
    proto::Params params = DefaultParams();
    mutate(params);
    return ValidateParams(params).code();
  };
  EXPECT_EQ(broken([](proto::Params& p) { p.set_min_stake_verifier(0); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(broken([](proto::Params& p) { p.set_verify_window(0); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(broken([](proto::Params& p) { p.set_verifiers_per_task(65); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(broken([](proto::Params& p) { p.set_jackpot_cut_bps(10'001); }), StatusCode::kInvalidArgument);
  EXPECT_EQ(broken([](proto::Params& p) { p.set_max_training_window(p.beacon_delay()); }),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(broken([](proto::Params& p) { p.set_max_payload_bytes(10); }), StatusCode::kInvalidArgument);
}

TEST(ChainId, FollowsTheEnvelopeCharacterSet) {
  EXPECT_TRUE(ValidateChainId("polnode/dev-1.2_x").ok());
  EXPECT_FALSE(ValidateChainId("").ok());
  EXPECT_FALSE(ValidateChainId(std::string(65, 'a')).ok());
  EXPECT_FALSE(ValidateChainId("caf\xc3\xa9").ok());
}

}  // namespace
}  // namespace polnode::contracts::testing
