// config.toml (TOML subset) and genesis.json readers: round trips and the errors they name.
#include "polnode/ledger/node_config.h"

#include <gtest/gtest.h>

#include "polnode/contracts/genesis.h"
#include "polnode/rpc/genesis_json.h"

namespace polnode::node {
namespace {

TEST(TomlTest, ParsesSectionsStringsIntegersBoolsAndComments) {
  auto t = ParseToml("# top\nname = \"a \\\"b\\\"\"  # trailing\n[ledger]\nn = 1_000\nneg = -5\nflag = true\n\n[http]\nx = false\n");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(std::get<std::string>(t->at("name")), "a \"b\"");
  EXPECT_EQ(std::get<std::int64_t>(t->at("ledger.n")), 1000);
  EXPECT_EQ(std::get<std::int64_t>(t->at("ledger.neg")), -5);
  EXPECT_TRUE(std::get<bool>(t->at("ledger.flag")));
  EXPECT_FALSE(std::get<bool>(t->at("http.x")));
}

TEST(TomlTest, RejectsWhatItDoesNotUnderstandNamingTheLine) {
  for (const char* bad : {"a = [1, 2]", "a = \"open", "[sec", "novalue", "a = 1\na = 2", "a = 1 junk", "a = 1.5",
                          "a = \"x\\q\"", "bad key = 1", "[a b]"}) {
    auto t = ParseToml(bad);
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(t.status().message().find("config line"), std::string::npos) << bad;
  }
}

TEST(NodeConfigTest, FormattedDefaultsParseBackToTheSameValues) {
  NodeConfig c;
  c.listen = "127.0.0.1:9999";
  c.block_interval_ms = 250;
  c.sync_writes = false;
  auto back = ParseNodeConfig(FormatNodeConfig(c));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->listen, "127.0.0.1:9999");
  EXPECT_EQ(back->block_interval_ms, 250);
  EXPECT_FALSE(back->sync_writes);
  EXPECT_EQ(back->max_body_bytes, c.max_body_bytes);
  EXPECT_EQ(back->http_threads, c.http_threads);
}

TEST(NodeConfigTest, UnknownKeysWrongTypesAndRangesAreErrors) {
  EXPECT_NE(ParseNodeConfig("[ledger]\nlisten_addr = \"x:1\"\n").status().message().find("unknown setting"), std::string::npos);
  EXPECT_NE(ParseNodeConfig("[ledger]\nblock_interval_ms = \"fast\"\n").status().message().find("must be an integer"),
            std::string::npos);
  EXPECT_FALSE(ParseNodeConfig("[ledger]\nblock_interval_ms = 0\n").ok());
  EXPECT_FALSE(ParseNodeConfig("[ledger]\nlisten = \"no-port\"\n").ok());
  EXPECT_FALSE(ParseNodeConfig("[http]\nthreads = 1000\n").ok());
  EXPECT_TRUE(ParseNodeConfig("").ok());
}

TEST(NodeConfigTest, SplitHostPort) {
  auto v4 = SplitHostPort("127.0.0.1:26657");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->first, "127.0.0.1");
  EXPECT_EQ(v4->second, 26657);
  auto v6 = SplitHostPort("[::1]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->first, "::1");
  for (const char* bad : {"", ":80", "host:", "host:99999", "host:8x", "[::1:80"}) EXPECT_FALSE(SplitHostPort(bad).ok()) << bad;
}

GenesisFile SampleGenesis() {
  GenesisFile g;
  g.spec.set_chain_id("chain-1");
  *g.spec.mutable_params() = contracts::DefaultParams();
  g.genesis_time_unix_ms = 1700000000000;
  proto::Allocation* a = g.spec.add_allocations();
  a->set_pubkey(std::string(32, '\x11'));
  a->set_amount(18446744073709551615ull);  // exact uint64, no double rounding
  return g;
}

TEST(GenesisFileTest, FormatThenParseRoundTrips) {
  GenesisFile g = SampleGenesis();
  auto back = ParseGenesisJson(FormatGenesisJson(g));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->spec.SerializeAsString(), g.spec.SerializeAsString());
  EXPECT_EQ(back->genesis_time_unix_ms, g.genesis_time_unix_ms);
}

TEST(GenesisFileTest, MissingUnknownAndMalformedKeysAreNamed) {
  const std::string good = FormatGenesisJson(SampleGenesis());
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return ParseGenesisJson(s).status();
  };
  EXPECT_NE(replace("\"chain_id\"", "\"chain\"").message().find("unknown key \"chain\""), std::string::npos);
  EXPECT_NE(replace("\"tx_fee\"", "\"tx_fees\"").message().find("params"), std::string::npos);
  EXPECT_NE(replace("1111", "zz11").message().find("pubkey"), std::string::npos);
  EXPECT_NE(replace("18446744073709551615", "-1").message().find("balance"), std::string::npos);
  EXPECT_EQ(ParseGenesisJson("{").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseGenesisJson("[]").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace polnode::node
