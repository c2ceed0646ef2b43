#include "polnode/cli/cli.h"

#include <gtest/gtest.h>

#include <sstream>

#include "polnode/cli/commands.h"
#include "polnode/rpc/genesis_json.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/tx_json.h"

namespace polnode::node {
namespace {

FlagSet ExampleFlags() {
  FlagSet flags("polnode example", "An example command.");
  flags.Value("out", "FILE", "output path", "", true);
  flags.Value("steps", "N", "step count", "10");
  flags.Bool("fast", "go fast");
  return flags;
}

TEST(FlagSetTest, ParsesBothValueFormsBooleansAndDefaults) {
  FlagSet flags = ExampleFlags();
  ASSERT_TRUE(flags.Parse({"--out", "a.bin", "--fast", "--json"}).ok());
  EXPECT_EQ(flags.Get("out"), "a.bin");
  EXPECT_EQ(flags.Get("steps"), "10");
  EXPECT_FALSE(flags.Given("steps"));
  EXPECT_TRUE(flags.GetBool("fast"));
  EXPECT_TRUE(flags.json());
  ASSERT_TRUE(flags.Parse({"--out=b.bin", "--steps=300"}).ok());
  EXPECT_EQ(flags.Get("out"), "b.bin");
  EXPECT_FALSE(flags.GetBool("fast"));
  Result<std::int64_t> steps = flags.GetInt("steps", 1, 1000);
  ASSERT_TRUE(steps.ok());
  EXPECT_EQ(*steps, 300);
}

TEST(FlagSetTest, RejectsUnknownMissingAndMalformed) {
  FlagSet flags = ExampleFlags();
  Status unknown = flags.Parse({"--out", "x", "--stpes", "3"});
  EXPECT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("--stpes"), std::string::npos);
  EXPECT_NE(unknown.message().find("--steps"), std::string::npos) << "lists the valid flags";
  EXPECT_FALSE(flags.Parse({"--steps", "3"}).ok()) << "--out is required";
  EXPECT_FALSE(flags.Parse({"--out"}).ok()) << "value missing";
  EXPECT_FALSE(flags.Parse({"--out", "x", "stray"}).ok()) << "no positionals declared";
  EXPECT_FALSE(flags.Parse({"--out", "x", "--fast=yes"}).ok()) << "booleans take no value";
  ASSERT_TRUE(flags.Parse({"--out", "x", "--steps", "12abc"}).ok());
  EXPECT_FALSE(flags.GetInt("steps", 1, 100).ok());
  ASSERT_TRUE(flags.Parse({"--out", "x", "--steps", "101"}).ok());
  EXPECT_FALSE(flags.GetInt("steps", 1, 100).ok());
}

TEST(FlagSetTest, HelpSkipsRequiredChecksAndListsFlags) {
  FlagSet flags = ExampleFlags();
  ASSERT_TRUE(flags.Parse({"--help"}).ok());
  EXPECT_TRUE(flags.help_requested());
  std::string help = flags.Help();
  EXPECT_NE(help.find("--out FILE"), std::string::npos);
  EXPECT_NE(help.find("(default: 10)"), std::string::npos);
  EXPECT_NE(help.find("(required)"), std::string::npos);
}

TEST(JsonWriterTest, WritesNestedEscapedDocument) {
  JsonWriter w;
  w.BeginObject()
      .Field("name", "a\"b\\c\n\x01")
      .Field("n", std::int64_t{-3})
      .Field("x", 0.85)
      .Field("ok", true)
      .Key("list")
      .BeginArray()
      .Int(1)
      .String("two")
      .Null()
      .EndArray()
      .EndObject();
  EXPECT_EQ(w.str(), R"({"name":"a\"b\\c\n\u0001","n":-3,"x":0.85,"ok":true,"list":[1,"two",null]})");
}

TEST(TxJsonTest, ParsesUnsignedTransactionStrictly) {
  Result<consensus::TxEnvelope> tx = ParseUnsignedTxJson(
      R"({"chain_id":"polnode-local","nonce":7,"payload_type":"transfer","payload_hex":"00ff"})");
  ASSERT_TRUE(tx.ok()) << tx.status().ToString();
  EXPECT_EQ(tx->chain_id, "polnode-local");
  EXPECT_EQ(tx->nonce, 7u);
  EXPECT_EQ(tx->payload, std::string("\x00\xff", 2));
  EXPECT_FALSE(ParseUnsignedTxJson(R"({"chain_id":"c","nonce":-1,"payload_type":"t","payload_hex":""})").ok());
  EXPECT_FALSE(ParseUnsignedTxJson(R"({"chain_id":"c","nonce":1,"payload_type":"t","payload_hex":"0"})").ok());
  EXPECT_FALSE(ParseUnsignedTxJson(R"({"chain_id":"c","nonce":1,"payload_type":"t"})").ok());
  EXPECT_FALSE(ParseUnsignedTxJson(
                   R"({"chain_id":"c","nonce":1,"payload_type":"t","payload_hex":"","nonse":2})")
                   .ok())
      << "unknown fields are refused";
  EXPECT_FALSE(ParseUnsignedTxJson("[1,2]").ok());
  EXPECT_FALSE(ParseUnsignedTxJson("{\"chain_id\":").ok());
}

// POST /v1/tx takes JSON bodies up to the ledger's body limit (12 MiB): nesting that deep must be
// an error, not a parser recursing once per level until the ledger's stack overflows.
TEST(TxJsonTest, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string deep = std::string(4 << 20, '[') + std::string(4 << 20, ']');
  Result<consensus::TxEnvelope> tx = ParseSignedTxJson(deep);
  EXPECT_EQ(tx.status().code(), StatusCode::kInvalidArgument) << tx.status().ToString();
  EXPECT_FALSE(ParseGenesisJson(std::string(4 << 20, '[')).ok());
}

TEST(CliTest, UnknownCommandFailsWithAGuidingSentenceAndEveryRoleIsListed) {
  std::ostringstream out, err;
  Io io{out, err};
  EXPECT_EQ(RunCli({"frobnicate"}, io), kExitUsage);
  EXPECT_NE(err.str().find("polnode --help"), std::string::npos);
  err.str("");
  EXPECT_EQ(RunCli({"--help"}, io), kExitOk);
  for (const char* role :
       {"submitter", "solver", "verifier", "whistleblower", "ledger", "devnet", "status", "dispute", "econ", "tx"}) {
    EXPECT_NE(out.str().find(std::string("\n  ") + role + " "), std::string::npos) << role << " is listed in --help";
    std::ostringstream role_out, role_err;
    Io role_io{role_out, role_err};
    EXPECT_EQ(RunCli({role, "--help"}, role_io), kExitOk) << role << " takes --help";
  }
  // A command group without its subcommand still says how to go on, and fails.
  std::ostringstream group_out, group_err;
  Io group_io{group_out, group_err};
  EXPECT_EQ(RunCli({"dispute"}, group_io), kExitUsage);
  EXPECT_NE(group_err.str().find("polnode dispute replay TASK_ID"), std::string::npos) << group_err.str();
}

}  // namespace
}  // namespace polnode::node
