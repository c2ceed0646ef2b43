// The typed read-only queries (queries.h). Their JSON forms are tested with the ledger API
// (tests/node/ledger_json_test.cc).
#include "polnode/contracts/queries.h"

#include <gtest/gtest.h>

#include "polnode/contracts/supply.h"
#include "polnode/testing/status_matchers.h"
#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {
namespace {

using polnode::testing::IsOk;
using polnode::testing::StatusIs;

TEST(Queries, AccountStakesJackpotParams) {
  TaskFlow flow;
  Result<proto::Account> account = QueryAccount(flow.chain.state(), Raw(flow.solver));
  ASSERT_TRUE(IsOk(account));
  EXPECT_EQ(account->balance(), 98'999u);
  EXPECT_EQ(account->nonce(), 1u);
  Result<proto::Account> stranger = QueryAccount(flow.chain.state(), Raw(Key(99)));
  ASSERT_TRUE(IsOk(stranger));
  EXPECT_EQ(stranger->balance(), 0u);

  Result<AccountStakes> stakes = QueryStakes(flow.chain.state(), Raw(flow.solver));
  ASSERT_TRUE(IsOk(stakes));
  EXPECT_EQ(stakes->solver.bonded(), 1'000u);
  EXPECT_EQ(stakes->verifier.bonded(), 0u);
  EXPECT_EQ(stakes->whistleblower.bonded(), 0u);

  Result<proto::Jackpot> jackpot = QueryJackpot(flow.chain.state());
  ASSERT_TRUE(IsOk(jackpot));
  EXPECT_EQ(jackpot->pool(), 0u);
  Result<proto::Params> params = QueryParams(flow.chain.state());
  ASSERT_TRUE(IsOk(params));
  EXPECT_EQ(params->tx_fee(), 1u);
}

TEST(Queries, TaskAndPagedTaskList) {
  TaskFlow flow;
  flow.Submit(1'000);
  const std::string first = flow.task_id;
  flow.Submit(2'000);
  Result<proto::Task> task = QueryTask(flow.chain.state(), first);
  ASSERT_TRUE(IsOk(task));
  EXPECT_EQ(task->seq(), 0u);
  EXPECT_EQ(task->status(), proto::TASK_OPEN);
  EXPECT_EQ(task->spec().payment(), 1'000u);

  Result<TaskPage> page = QueryTasks(flow.chain.state(), 1, 1);
  ASSERT_TRUE(IsOk(page));
  EXPECT_EQ(page->total, 2u);
  EXPECT_EQ(page->start, 1u);
  ASSERT_EQ(page->tasks.size(), 1u);
  EXPECT_EQ(page->tasks[0].id(), flow.task_id);
  Result<TaskPage> all = QueryTasks(flow.chain.state(), 0, 1'000);
  ASSERT_TRUE(IsOk(all));
  ASSERT_EQ(all->tasks.size(), 2u);
  EXPECT_EQ(all->tasks[0].id(), first);
  Result<TaskPage> past_the_end = QueryTasks(flow.chain.state(), 5, kMaxTasksPerPage);
  ASSERT_TRUE(IsOk(past_the_end));
  EXPECT_EQ(past_the_end->total, 2u);
  EXPECT_TRUE(past_the_end->tasks.empty());
}

TEST(Queries, GamesOfATaskWithoutDisputes) {
  TaskFlow flow;
  flow.Submit(1'000);
  Result<TaskGames> games = QueryGames(flow.chain.state(), flow.task_id);
  ASSERT_TRUE(IsOk(games));
  EXPECT_EQ(games->task.id(), flow.task_id);
  EXPECT_EQ(games->params.tx_fee(), 1u);
  EXPECT_TRUE(games->games.empty());
}

TEST(Queries, SupplyAuditIsBalanced) {
  TaskFlow flow;
  flow.Submit(1'000);
  Result<SupplyReport> supply = AuditSupply(flow.chain.state());
  ASSERT_TRUE(IsOk(supply));
  EXPECT_EQ(supply->genesis_supply, 700'000u);
  EXPECT_TRUE(supply->balanced());
  EXPECT_EQ(supply->escrow, 1'000u) << "the jackpot cut leaves the escrow only when verification starts";
}

TEST(Queries, MissingTaskIsNotFound) {
  TaskFlow flow;
  EXPECT_TRUE(StatusIs(QueryTask(flow.chain.state(), std::string(32, 'a')), StatusCode::kNotFound));
  EXPECT_TRUE(StatusIs(QueryGames(flow.chain.state(), std::string(32, 'a')), StatusCode::kNotFound));
}

}  // namespace
}  // namespace polnode::contracts::testing
