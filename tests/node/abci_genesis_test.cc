// The app_state of a validator network's genesis (node/rpc/abci_genesis.h): polnode's genesis
// plus beacon_keys, written by AddBeaconKeys and read back, and every malformed key list refused.
#include "polnode/rpc/abci_genesis.h"

#include <gtest/gtest.h>

#include "polnode/consensus/hex.h"
#include "polnode/rpc/genesis_json.h"
#include "polnode/testing/ledger_fixtures.h"

namespace polnode::node {
namespace {

using polnode::testing::KeyFromByte;

std::string Genesis() { return FormatGenesisJson(polnode::testing::TestGenesis("abci-genesis", KeyFromByte(1), 1000)); }

TEST(AbciGenesisTest, KeysRoundTripBesideThePolnodeGenesis) {
  BeaconKeys keys;
  keys.emplace(std::string(kValidatorAddressBytes, 'a'), KeyFromByte(11).PublicKey());
  keys.emplace(std::string(kValidatorAddressBytes, 'b'), KeyFromByte(12).PublicKey());
  Result<std::string> app_state = AddBeaconKeys(Genesis(), keys);
  ASSERT_TRUE(app_state.ok()) << app_state.status().ToString();
  Result<AbciGenesis> parsed = ParseAbciGenesisJson(*app_state);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->beacon_keys.size(), 2u);
  EXPECT_TRUE(parsed->beacon_keys.at(std::string(kValidatorAddressBytes, 'b')) == KeyFromByte(12).PublicKey());
  Result<GenesisFile> plain = ParseGenesisJson(Genesis());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(parsed->file.spec.SerializeAsString(), plain->spec.SerializeAsString());
  EXPECT_EQ(parsed->file.genesis_time_unix_ms, plain->genesis_time_unix_ms);
}

TEST(AbciGenesisTest, RefusesMissingOrMalformedKeys) {
  const std::string key = consensus::ToHex(KeyFromByte(11).PublicKey().bytes());
  const std::string address(40, 'a');
  const auto with = [&](const std::string& list) {
    std::string text = Genesis();
    text.insert(text.find('{') + 1, "\"beacon_keys\": " + list + ",");
    return ParseAbciGenesisJson(text).status();
  };
  const auto entry = [](const std::string& a, const std::string& k) {
    return "{\"address\": \"" + a + "\", \"vrf_pubkey\": \"" + k + "\"}";
  };
  EXPECT_TRUE(with("[" + entry(address, key) + "]").ok());
  EXPECT_FALSE(ParseAbciGenesisJson(Genesis()).ok());  // no beacon_keys at all
  EXPECT_FALSE(with("[]").ok());
  EXPECT_FALSE(with("{}").ok());
  EXPECT_FALSE(with("[" + entry(address.substr(2), key) + "]").ok());         // short address
  EXPECT_FALSE(with("[" + entry(address, key.substr(2)) + "]").ok());         // short key
  EXPECT_FALSE(with("[" + entry(std::string(40, 'g'), key) + "]").ok());      // not hex
  EXPECT_FALSE(with("[" + entry(address, std::string(64, 'f')) + "]").ok());  // not a curve point
  EXPECT_FALSE(with("[" + entry(address, key) + "," + entry(address, key) + "]").ok());  // address twice
  EXPECT_FALSE(with("[{\"address\": \"" + address + "\"}]").ok());
  // The rest is polnode's genesis, as strict as ever: an unknown key is still refused.
  EXPECT_FALSE(with("[" + entry(address, key) + "], \"extra\": 1").ok());
  EXPECT_FALSE(AddBeaconKeys("[]", {}).ok());
}

}  // namespace
}  // namespace polnode::node
