// Bonding, unbonding with its delay, locks and the verifier set.
#include <gtest/gtest.h>

#include "polnode/contracts/payloads.h"
#include "polnode/contracts/queries.h"
#include "polnode/testing/chain_harness.h"

namespace polnode::contracts::testing {
namespace {

const PubKey kAlice = Key(1);

template <typename Message>
Message StakeMsg(proto::Role role, std::uint64_t amount) {
  Message msg;
  msg.set_role(role);
  msg.set_amount(amount);
  return msg;
}

std::vector<VerifierStake> Verifiers(Chain& chain) {
  auto set = QueryVerifiers(chain.state());
  EXPECT_TRUE(set.ok()) << set.status().ToString();
  return set.ok() ? *set : std::vector<VerifierStake>();
}

TEST(Stake, BondsFromTheBalancePerRole) {
  Chain chain(TestParams(), {kAlice}, 10'000);
  ASSERT_EQ(chain.Run(kAlice, payload::kStake, StakeMsg<proto::StakeTx>(proto::ROLE_SOLVER, 1'500)).code,
            StatusCode::kOk);
  ASSERT_EQ(chain.Run(kAlice, payload::kStake, StakeMsg<proto::StakeTx>(proto::ROLE_WHISTLEBLOWER, 300)).code,
            StatusCode::kOk);
  EXPECT_EQ(chain.Balance(kAlice), 10'000u - 2 - 1'500 - 300);
  EXPECT_EQ(chain.Stake(proto::ROLE_SOLVER, kAlice).bonded(), 1'500u);
  EXPECT_EQ(chain.Stake(proto::ROLE_WHISTLEBLOWER, kAlice).bonded(), 300u);
  EXPECT_EQ(chain.Stake(proto::ROLE_VERIFIER, kAlice).bonded(), 0u);
}

TEST(Stake, RejectsUnknownRoleAndShortBalance) {
  Chain chain(TestParams(), {kAlice}, 1'000);
  EXPECT_EQ(chain.Run(kAlice, payload::kStake, StakeMsg<proto::StakeTx>(proto::ROLE_UNSPECIFIED, 10)).code,
            StatusCode::kInvalidArgument);
  EXPECT_EQ(chain.Run(kAlice, payload::kStake, StakeMsg<proto::StakeTx>(proto::ROLE_SOLVER, 5'000)).code,
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(chain.Stake(proto::ROLE_SOLVER, kAlice).bonded(), 0u);
}

TEST(Unstake, ReturnsToTheBalanceAfterTheUnbondingDelay) {
  Chain chain(TestParams(), {kAlice}, 10'000);
  ASSERT_EQ(chain.Run(kAlice, payload::kStake, StakeMsg<proto::StakeTx>(proto::ROLE_SOLVER, 2'000)).code,
            StatusCode::kOk);
  ASSERT_EQ(chain.Run(kAlice, payload::kUnstake, StakeMsg<proto::UnstakeTx>(proto::ROLE_SOLVER, 1'200)).code,
            StatusCode::kOk);
  const std::uint64_t unstaked_at = chain.height();
  const std::uint64_t balance = chain.Balance(kAlice);
  proto::StakeRecord stake = chain.Stake(proto::ROLE_SOLVER, kAlice);
  EXPECT_EQ(stake.bonded(), 800u);
  EXPECT_EQ(stake.unbonding(), 1'200u);
  chain.AdvanceTo(unstaked_at + 4);
  EXPECT_EQ(chain.Balance(kAlice), balance);
  chain.AdvanceTo(unstaked_at + 5);
  EXPECT_EQ(chain.Balance(kAlice), balance + 1'200);
  EXPECT_EQ(chain.Stake(proto::ROLE_SOLVER, kAlice).unbonding(), 0u);
}

TEST(Unstake, CannotTouchMoreThanTheFreeStake) {
  Chain chain(TestParams(), {kAlice}, 10'000);
  ASSERT_EQ(chain.Run(kAlice, payload::kStake, StakeMsg<proto::StakeTx>(proto::ROLE_SOLVER, 1'000)).code,
            StatusCode::kOk);
  EXPECT_EQ(chain.Run(kAlice, payload::kUnstake, StakeMsg<proto::UnstakeTx>(proto::ROLE_SOLVER, 1'001)).code,
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(chain.Run(kAlice, payload::kUnstake, StakeMsg<proto::UnstakeTx>(proto::ROLE_VERIFIER, 1)).code,
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(chain.Stake(proto::ROLE_SOLVER, kAlice).bonded(), 1'000u);
}

TEST(Unstake, LockedStakeStaysUntilTheTaskReleasesIt) {
  Chain chain(TestParams(), {kAlice, Key(2)}, 100'000);
  ASSERT_EQ(chain.Run(kAlice, payload::kStake, StakeMsg<proto::StakeTx>(proto::ROLE_SOLVER, 1'000)).code,
            StatusCode::kOk);
  ASSERT_EQ(chain.Run(Key(2), payload::kSubmitTask, TaskSubmission(5'000)).code, StatusCode::kOk);
  proto::ClaimTaskTx claim;
  claim.set_task_id(chain.TaskIdAt(0));
  claim.set_secret_commitment(Bytes32(7));
  ASSERT_EQ(chain.Run(kAlice, payload::kClaimTask, claim).code, StatusCode::kOk);
  EXPECT_EQ(chain.Run(kAlice, payload::kUnstake, StakeMsg<proto::UnstakeTx>(proto::ROLE_SOLVER, 1)).code,
            StatusCode::kFailedPrecondition);
}

TEST(VerifierSet, FollowsBondedVerifierStake) {
  Chain chain(TestParams(), {kAlice}, 10'000);
  EXPECT_TRUE(Verifiers(chain).empty());
  ASSERT_EQ(chain.Run(kAlice, payload::kStake, StakeMsg<proto::StakeTx>(proto::ROLE_VERIFIER, 700)).code,
            StatusCode::kOk);
  const std::vector<VerifierStake> set = Verifiers(chain);
  ASSERT_EQ(set.size(), 1u);
  EXPECT_EQ(set[0].pubkey, Raw(kAlice));
  EXPECT_EQ(set[0].stake.bonded(), 700u);
  EXPECT_EQ(set[0].stake.locked(), 0u);
  ASSERT_EQ(chain.Run(kAlice, payload::kUnstake, StakeMsg<proto::UnstakeTx>(proto::ROLE_VERIFIER, 700)).code,
            StatusCode::kOk);
  EXPECT_TRUE(Verifiers(chain).empty());
}

}  // namespace
}  // namespace polnode::contracts::testing
