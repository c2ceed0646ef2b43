#include "polnode/rpc/abci_genesis.h"

#include <vector>

#include "polnode/consensus/hex.h"
#include "polnode/rpc/genesis_json.h"
#include "polnode/rpc/json.h"

namespace polnode::node {
namespace {

constexpr char kBeaconKeys[] = "beacon_keys";

// Writes `v` (a parsed JSON value) back as text, so the rest of the document goes through
// ParseGenesisJson unchanged.
void WriteValue(JsonWriter& w, const rapidjson::Value& v) {
  if (v.IsObject()) {
    w.BeginObject();
    for (auto it = v.MemberBegin(); it != v.MemberEnd(); ++it) {
      w.Key(std::string_view(it->name.GetString(), it->name.GetStringLength()));
      WriteValue(w, it->value);
    }
    w.EndObject();
  } else if (v.IsArray()) {
    w.BeginArray();
    for (const rapidjson::Value& e : v.GetArray()) WriteValue(w, e);
    w.EndArray();
  } else if (v.IsString()) {
    w.String(std::string_view(v.GetString(), v.GetStringLength()));
  } else if (v.IsUint64()) {
    w.Uint(v.GetUint64());
  } else if (v.IsInt64()) {
    w.Int(v.GetInt64());
  } else if (v.IsNumber()) {
    w.Double(v.GetDouble());
  } else if (v.IsBool()) {
    w.Bool(v.GetBool());
  } else {
    w.Null();
  }
}

Result<std::string> HexField(const rapidjson::Value& entry, const char* name, std::size_t bytes, const std::string& where) {
  if (!entry.HasMember(name) || !entry[name].IsString()) {
    return Status::InvalidArgument("genesis: " + where + "." + name + " must be a hex string");
  }
  const std::string_view hex(entry[name].GetString(), entry[name].GetStringLength());
  if (hex.size() != 2 * bytes) {
    return Status::InvalidArgument("genesis: " + where + "." + name + " must be " + std::to_string(2 * bytes) + " hex characters");
  }
  Result<std::vector<std::uint8_t>> raw = consensus::HexToBytes(hex);
  if (!raw.ok()) return raw.status().WithContext("genesis: " + where + "." + name);
  return std::string(raw->begin(), raw->end());
}

}  // namespace

Result<AbciGenesis> ParseAbciGenesisJson(std::string_view json) {
  Result<rapidjson::Document> parsed = ParseJson(json);
  if (!parsed.ok()) return Status::InvalidArgument("genesis is " + parsed.status().message());
  rapidjson::Document& doc = *parsed;
  if (!doc.IsObject()) return Status::InvalidArgument("genesis must be a JSON object");
  if (!doc.HasMember(kBeaconKeys)) {
    return Status::InvalidArgument(
        "genesis: missing key \"beacon_keys\" (each validator's VRF public key by its CometBFT address)");
  }
  const rapidjson::Value& list = doc[kBeaconKeys];
  if (!list.IsArray() || list.Empty()) return Status::InvalidArgument("genesis: \"beacon_keys\" must be a non-empty array");
  AbciGenesis out;
  for (rapidjson::SizeType i = 0; i < list.Size(); ++i) {
    const std::string where = "beacon_keys[" + std::to_string(i) + "]";
    const rapidjson::Value& entry = list[i];
    if (!entry.IsObject() || entry.MemberCount() != 2) {
      return Status::InvalidArgument("genesis: " + where + " must be an object with \"address\" and \"vrf_pubkey\"");
    }
    POLNODE_ASSIGN_OR_RETURN(std::string address, HexField(entry, "address", kValidatorAddressBytes, where));
    POLNODE_ASSIGN_OR_RETURN(std::string key_bytes, HexField(entry, "vrf_pubkey", 32, where));
    Result<consensus::XOnlyPublicKey> key = consensus::XOnlyPublicKey::FromBytes(
        std::span<const std::uint8_t, 32>(reinterpret_cast<const std::uint8_t*>(key_bytes.data()), 32));
    if (!key.ok()) return key.status().WithContext("genesis: " + where + ".vrf_pubkey");
    if (!out.beacon_keys.emplace(address, *key).second) {
      return Status::InvalidArgument("genesis: " + where + " repeats an address");
    }
  }
  doc.RemoveMember(kBeaconKeys);
  JsonWriter rest;
  WriteValue(rest, doc);
  POLNODE_ASSIGN_OR_RETURN(out.file, ParseGenesisJson(rest.str()));
  return out;
}

Result<std::string> AddBeaconKeys(std::string_view genesis_json, const BeaconKeys& keys) {
  const std::size_t open = genesis_json.find_first_not_of(" \t\r\n");
  if (open == std::string_view::npos || genesis_json[open] != '{') {
    return Status::InvalidArgument("genesis JSON is not an object");
  }
  JsonWriter list;
  list.BeginArray();
  for (const auto& [address, key] : keys) {
    list.BeginObject()
        .Field("address", consensus::ToHex({reinterpret_cast<const std::uint8_t*>(address.data()), address.size()}))
        .Field("vrf_pubkey", consensus::ToHex(key.bytes()))
        .EndObject();
  }
  list.EndArray();
  const std::size_t next = genesis_json.find_first_not_of(" \t\r\n", open + 1);
  const bool empty_object = next != std::string_view::npos && genesis_json[next] == '}';
  return std::string(genesis_json.substr(0, open + 1)) + "\n  \"" + kBeaconKeys + "\": " + list.str() +
         (empty_object ? "" : ",") + std::string(genesis_json.substr(open + 1));
}

}  // namespace polnode::node
