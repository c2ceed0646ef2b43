// Query paths and their JSON.
#include <gtest/gtest.h>

#include "polnode/contracts/payloads.h"
#include "task_flow.h"

namespace polnode::contracts::testing {
namespace {

std::string HexOf(std::string_view raw) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string MustQuery(Chain& chain, std::string_view path) {
  auto result = chain.app().Query(path, chain.state());
  EXPECT_TRUE(result.ok()) << path << ": " << result.status().ToString();
  return result.ok() ? *result : std::string();
}

StatusCode QueryCode(Chain& chain, std::string_view path) {
  return chain.app().Query(path, chain.state()).status().code();
}

TEST(Query, AccountStakesJackpotParams) {
  TaskFlow flow;
  const std::string solver = HexOf(Raw(flow.solver));
  EXPECT_EQ(MustQuery(flow.chain, "account/" + solver), R"({"pubkey":")" + solver + R"(","balance":98999,"nonce":1})");
  EXPECT_EQ(MustQuery(flow.chain, "stakes/" + solver),
            R"({"pubkey":")" + solver +
                R"(","solver":{"bonded":1000,"locked":0,"free":1000,"unbonding":0},)"
                R"("verifier":{"bonded":0,"locked":0,"free":0,"unbonding":0},)"
                R"("whistleblower":{"bonded":0,"locked":0,"free":0,"unbonding":0}})");
  EXPECT_EQ(MustQuery(flow.chain, "jackpot"), R"({"pool":0})");
  const std::string params = MustQuery(flow.chain, "params");
  EXPECT_EQ(params.rfind(R"({"tx_fee":1,"mempool_nonce_window":8,)", 0), 0u) << params;
  EXPECT_NE(params.find(R"("forced_error_rate":0)"), std::string::npos);
}

TEST(Query, TaskAndPagedTaskList) {
  TaskFlow flow;
  flow.Submit(1'000);
  const std::string first = flow.task_id;
  flow.Submit(2'000);
  const std::string task = MustQuery(flow.chain, "task/" + HexOf(first));
  EXPECT_EQ(task.rfind(R"({"id":")" + HexOf(first) + R"(","seq":0,)", 0), 0u) << task;
  EXPECT_NE(task.find(R"("status":"TASK_OPEN")"), std::string::npos);
  EXPECT_NE(task.find(R"("payment":1000)"), std::string::npos);
  EXPECT_NE(task.find(R"("verifiers":[])"), std::string::npos);
  const std::string page = MustQuery(flow.chain, "tasks?start=1&limit=1");
  EXPECT_EQ(page.rfind(R"({"total":2,"start":1,"tasks":[{"id":")" + HexOf(flow.task_id), 0), 0u) << page;
  EXPECT_EQ(page.find(HexOf(first)), std::string::npos);
  EXPECT_NE(MustQuery(flow.chain, "tasks").find(HexOf(first)), std::string::npos);
  EXPECT_EQ(MustQuery(flow.chain, "tasks?start=5"), R"({"total":2,"start":5,"tasks":[]})");
}

TEST(Query, SupplyAuditIsBalanced) {
  TaskFlow flow;
  flow.Submit(1'000);
  const std::string supply = MustQuery(flow.chain, "supply");
  EXPECT_NE(supply.find(R"("genesis_supply":700000)"), std::string::npos) << supply;
  EXPECT_NE(supply.find(R"("balanced":true)"), std::string::npos) << supply;
  EXPECT_NE(supply.find(R"("escrow":1000)"), std::string::npos) << supply;  // the cut leaves at verification
}

TEST(Query, ErrorsNameTheProblem) {
  TaskFlow flow;
  EXPECT_EQ(QueryCode(flow.chain, "nope"), StatusCode::kNotFound);
  EXPECT_EQ(QueryCode(flow.chain, "params/extra"), StatusCode::kNotFound);
  EXPECT_EQ(QueryCode(flow.chain, "account/xyz"), StatusCode::kInvalidArgument);
  EXPECT_EQ(QueryCode(flow.chain, "account/" + std::string(64, 'g')), StatusCode::kInvalidArgument);
  EXPECT_EQ(QueryCode(flow.chain, "task/" + std::string(64, 'a')), StatusCode::kNotFound);
  EXPECT_EQ(QueryCode(flow.chain, "tasks?limit=ten"), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::contracts::testing
