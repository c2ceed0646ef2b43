#include "tx_json.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <algorithm>
#include <initializer_list>
#include <string>

#include "polnode/consensus/hex.h"

namespace polnode::node {
namespace {

Result<consensus::TxEnvelope> ParseTxJson(std::string_view json, bool signed_form) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());
  if (doc.HasParseError()) {
    return Status::InvalidArgument(std::string("transaction is not valid JSON: ") +
                                   rapidjson::GetParseError_En(doc.GetParseError()) + " at offset " +
                                   std::to_string(doc.GetErrorOffset()));
  }
  if (!doc.IsObject()) return Status::InvalidArgument("transaction JSON must be an object");
  std::initializer_list<std::string_view> unsigned_fields = {"chain_id", "nonce", "payload_type", "payload_hex"};
  std::initializer_list<std::string_view> signed_fields = {"signer_pubkey", "signature"};
  // Members are visited by index and looked up with HasMember: comparing rapidjson's member
  // iterators is ambiguous under C++20's reversed operators (clang rejects it with -Werror).
  auto members = doc.MemberBegin();
  for (rapidjson::SizeType i = 0; i < doc.MemberCount(); ++i) {
    const auto& member = members[i];
    std::string_view name(member.name.GetString(), member.name.GetStringLength());
    bool known = std::find(unsigned_fields.begin(), unsigned_fields.end(), name) != unsigned_fields.end() ||
                 (signed_form && std::find(signed_fields.begin(), signed_fields.end(), name) != signed_fields.end());
    if (!known) return Status::InvalidArgument("unknown field \"" + std::string(name) + "\" in transaction JSON");
  }
  auto string_field = [&](const char* name) -> Result<std::string> {
    if (!doc.HasMember(name) || !doc[name].IsString()) {
      return Status::InvalidArgument(std::string("transaction JSON needs a string field \"") + name + "\"");
    }
    const rapidjson::Value& value = doc[name];
    return std::string(value.GetString(), value.GetStringLength());
  };
  consensus::TxEnvelope tx;
  POLNODE_ASSIGN_OR_RETURN(tx.chain_id, string_field("chain_id"));
  POLNODE_ASSIGN_OR_RETURN(tx.payload_type, string_field("payload_type"));
  if (!doc.HasMember("nonce") || !doc["nonce"].IsUint64()) {
    return Status::InvalidArgument("transaction JSON needs a non-negative integer field \"nonce\"");
  }
  tx.nonce = doc["nonce"].GetUint64();
  POLNODE_ASSIGN_OR_RETURN(std::string payload_hex, string_field("payload_hex"));
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> payload, consensus::HexToBytes(payload_hex));
  tx.payload.assign(payload.begin(), payload.end());
  if (signed_form) {
    POLNODE_ASSIGN_OR_RETURN(std::string signer, string_field("signer_pubkey"));
    POLNODE_RETURN_IF_ERROR(consensus::HexToFixed(signer, tx.signer_pubkey).WithContext("signer_pubkey"));
    POLNODE_ASSIGN_OR_RETURN(std::string signature, string_field("signature"));
    POLNODE_RETURN_IF_ERROR(consensus::HexToFixed(signature, tx.signature).WithContext("signature"));
  }
  POLNODE_RETURN_IF_ERROR(consensus::CheckEnvelopeFields(tx));
  return tx;
}

}  // namespace

Result<consensus::TxEnvelope> ParseUnsignedTxJson(std::string_view json) { return ParseTxJson(json, false); }

Result<consensus::TxEnvelope> ParseSignedTxJson(std::string_view json) { return ParseTxJson(json, true); }

void WriteTxFields(JsonWriter& w, const consensus::TxEnvelope& tx) {
  w.Field("chain_id", tx.chain_id)
      .Field("nonce", tx.nonce)
      .Field("payload_type", tx.payload_type)
      .Field("payload_hex", consensus::ToHex(std::span<const std::uint8_t>(
                                reinterpret_cast<const std::uint8_t*>(tx.payload.data()), tx.payload.size())))
      .Field("signer_pubkey", consensus::ToHex(tx.signer_pubkey))
      .Field("signature", consensus::ToHex(tx.signature));
}

}  // namespace polnode::node
