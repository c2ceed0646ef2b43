#include "genesis_file.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <set>

#include "json.h"
#include "polnode/consensus/hex.h"

namespace polnode::node {
namespace {

using google::protobuf::FieldDescriptor;

Status CheckKeys(const rapidjson::Value& object, std::string_view where, const std::set<std::string_view>& allowed) {
  for (auto it = object.MemberBegin(); it != object.MemberEnd(); ++it) {
    std::string_view name(it->name.GetString(), it->name.GetStringLength());
    if (allowed.count(name) == 0) {
      return Status::InvalidArgument("genesis: unknown key \"" + std::string(name) + "\" in " + std::string(where));
    }
  }
  for (std::string_view key : allowed) {
    if (!object.HasMember(rapidjson::Value(key.data(), static_cast<rapidjson::SizeType>(key.size())))) {
      return Status::InvalidArgument("genesis: missing key \"" + std::string(key) + "\" in " + std::string(where));
    }
  }
  return Status::Ok();
}

Status ParseParams(const rapidjson::Value& v, proto::Params& params) {
  if (!v.IsObject()) return Status::InvalidArgument("genesis: \"params\" must be an object");
  const auto* descriptor = params.GetDescriptor();
  const auto* reflection = params.GetReflection();
  std::set<std::string_view> names;
  for (int i = 0; i < descriptor->field_count(); ++i) names.insert(descriptor->field(i)->name());
  POLNODE_RETURN_IF_ERROR(CheckKeys(v, "params", names));
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    const rapidjson::Value& x = v[field->name().c_str()];
    if (!x.IsUint64()) return Status::InvalidArgument("genesis: params." + field->name() + " must be a non-negative integer");
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
      if (x.GetUint64() > 0xffffffffu) return Status::InvalidArgument("genesis: params." + field->name() + " exceeds 2^32-1");
      reflection->SetUInt32(&params, field, static_cast<std::uint32_t>(x.GetUint64()));
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_UINT64) {
      reflection->SetUInt64(&params, field, x.GetUint64());
    } else {
      return Status::Internal("genesis: params." + field->name() + " has a type this reader does not know");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<GenesisFile> ParseGenesisJson(std::string_view json) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(json.data(), json.size());
  if (doc.HasParseError()) {
    return Status::InvalidArgument(std::string("genesis is not valid JSON: ") + rapidjson::GetParseError_En(doc.GetParseError()) +
                                   " at offset " + std::to_string(doc.GetErrorOffset()));
  }
  if (!doc.IsObject()) return Status::InvalidArgument("genesis must be a JSON object");
  POLNODE_RETURN_IF_ERROR(CheckKeys(doc, "the top level", {"chain_id", "genesis_time_unix_ms", "params", "accounts"}));
  GenesisFile out;
  if (!doc["chain_id"].IsString()) return Status::InvalidArgument("genesis: \"chain_id\" must be a string");
  out.spec.set_chain_id(std::string(doc["chain_id"].GetString(), doc["chain_id"].GetStringLength()));
  if (!doc["genesis_time_unix_ms"].IsInt64()) return Status::InvalidArgument("genesis: \"genesis_time_unix_ms\" must be an integer");
  out.genesis_time_unix_ms = doc["genesis_time_unix_ms"].GetInt64();
  POLNODE_RETURN_IF_ERROR(ParseParams(doc["params"], *out.spec.mutable_params()));
  const rapidjson::Value& accounts = doc["accounts"];
  if (!accounts.IsArray()) return Status::InvalidArgument("genesis: \"accounts\" must be an array");
  for (rapidjson::SizeType i = 0; i < accounts.Size(); ++i) {
    const rapidjson::Value& a = accounts[i];
    const std::string where = "accounts[" + std::to_string(i) + "]";
    if (!a.IsObject()) return Status::InvalidArgument("genesis: " + where + " must be an object");
    POLNODE_RETURN_IF_ERROR(CheckKeys(a, where, {"pubkey", "balance"}));
    if (!a["pubkey"].IsString()) return Status::InvalidArgument("genesis: " + where + ".pubkey must be a hex string");
    std::array<std::uint8_t, 32> key{};
    POLNODE_RETURN_IF_ERROR(consensus::HexToFixed(std::string_view(a["pubkey"].GetString(), a["pubkey"].GetStringLength()), key)
                                .WithContext("genesis: " + where + ".pubkey"));
    if (!a["balance"].IsUint64()) return Status::InvalidArgument("genesis: " + where + ".balance must be a non-negative integer");
    proto::Allocation* alloc = out.spec.add_allocations();
    alloc->set_pubkey(key.data(), key.size());
    alloc->set_amount(a["balance"].GetUint64());
  }
  return out;
}

std::string FormatGenesisJson(const GenesisFile& genesis) {
  JsonWriter params;
  params.BeginObject();
  const proto::Params& p = genesis.spec.params();
  const auto* descriptor = p.GetDescriptor();
  const auto* reflection = p.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    params.Field(field->name(), field->cpp_type() == FieldDescriptor::CPPTYPE_UINT32
                                    ? std::uint64_t{reflection->GetUInt32(p, field)}
                                    : reflection->GetUInt64(p, field));
  }
  params.EndObject();
  std::string out = "{\n  \"chain_id\": " + JsonQuote(genesis.spec.chain_id()) + ",\n";
  out += "  \"genesis_time_unix_ms\": " + std::to_string(genesis.genesis_time_unix_ms) + ",\n";
  out += "  \"params\": " + params.str() + ",\n";
  out += "  \"accounts\": [";
  for (int i = 0; i < genesis.spec.allocations_size(); ++i) {
    const proto::Allocation& a = genesis.spec.allocations(i);
    JsonWriter w;
    w.BeginObject()
        .Field("pubkey", consensus::ToHex({reinterpret_cast<const std::uint8_t*>(a.pubkey().data()), a.pubkey().size()}))
        .Field("balance", a.amount())
        .EndObject();
    out += (i == 0 ? "\n    " : ",\n    ") + w.str();
  }
  out += genesis.spec.allocations_size() > 0 ? "\n  ]\n}\n" : "]\n}\n";
  return out;
}

}  // namespace polnode::node
