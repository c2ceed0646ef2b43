#include "polnode/rpc/ledger_api_backend.h"

#include "polnode/consensus/block.h"
#include "polnode/rpc/json.h"

namespace polnode::node {
namespace {

// The codespace AbciApp puts on its non-zero CheckTx codes.
constexpr std::string_view kPolnodeCodespace = "polnode";

std::string Base64(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const std::uint32_t n = (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16) |
                            (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8) |
                            static_cast<unsigned char>(bytes[i + 2]);
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], kAlphabet[n & 63]};
  }
  if (i + 1 == bytes.size()) {
    const std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], '=', '='};
  } else if (i + 2 == bytes.size()) {
    const std::uint32_t n = (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16) |
                            (static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8);
    out += {kAlphabet[(n >> 18) & 63], kAlphabet[(n >> 12) & 63], kAlphabet[(n >> 6) & 63], '='};
  }
  return out;
}

// A Status with `code` (a polnode StatusCode that crossed ABCI as its number) and `message`.
Status WithCode(StatusCode code, std::string message) {
  switch (code) {
    case StatusCode::kInvalidArgument: return Status::InvalidArgument(std::move(message));
    case StatusCode::kNotFound: return Status::NotFound(std::move(message));
    case StatusCode::kAlreadyExists: return Status::AlreadyExists(std::move(message));
    case StatusCode::kPermissionDenied: return Status::PermissionDenied(std::move(message));
    case StatusCode::kCorruption: return Status::Corruption(std::move(message));
    case StatusCode::kIOError: return Status::IOError(std::move(message));
    case StatusCode::kFailedPrecondition: return Status::FailedPrecondition(std::move(message));
    case StatusCode::kOutOfRange: return Status::OutOfRange(std::move(message));
    case StatusCode::kResourceExhausted: return Status::ResourceExhausted(std::move(message));
    case StatusCode::kUnavailable: return Status::Unavailable(std::move(message));
    case StatusCode::kOk:
    case StatusCode::kInternal: break;
  }
  return Status::Internal(std::move(message));
}

// rapidjson's member iterators compare ambiguously under C++20 (clang rejects `it == MemberEnd()`),
// so members are looked up with HasMember and operator[].
std::string_view StringMember(const rapidjson::Value& object, const char* name) {
  if (!object.IsObject() || !object.HasMember(name) || !object[name].IsString()) return {};
  return std::string_view(object[name].GetString(), object[name].GetStringLength());
}

}  // namespace

std::string BroadcastTxSyncRequest(std::string_view tx) {
  JsonWriter w;
  w.BeginObject().Field("jsonrpc", "2.0").Field("id", 1).Field("method", "broadcast_tx_sync");
  w.Key("params").BeginObject().Field("tx", Base64(tx)).EndObject();
  w.EndObject();
  return w.str();
}

Status ParseBroadcastTxSyncAnswer(std::string_view body) {
  Result<rapidjson::Document> doc = ParseJson(body);
  if (!doc.ok() || !doc->IsObject()) return Status::Corruption("CometBFT's broadcast_tx_sync answer is not a JSON object");
  if (doc->HasMember("error")) {
    const rapidjson::Value& error = (*doc)["error"];
    const std::string data(StringMember(error, "data"));
    const std::string message(StringMember(error, "message"));
    // CometBFT's mempool cache refuses a tx it has seen, before CheckTx: the same duplicate the
    // embedded ledger's pool reports.
    if (data.find("tx already exists in cache") != std::string::npos) {
      return Status::AlreadyExists("transaction already submitted (CometBFT: " + data + ")");
    }
    return Status::Unavailable("CometBFT refused the transaction: " + message + (data.empty() ? "" : ": " + data));
  }
  if (!doc->HasMember("result") || !(*doc)["result"].IsObject()) {
    return Status::Corruption("CometBFT's broadcast_tx_sync answer has neither result nor error");
  }
  const rapidjson::Value& result = (*doc)["result"];
  if (!result.HasMember("code") || !result["code"].IsUint()) {
    return Status::Corruption("CometBFT's broadcast_tx_sync result has no code");
  }
  const unsigned value = result["code"].GetUint();
  if (value == 0) return Status::Ok();
  std::string log(StringMember(result, "log"));
  if (StringMember(result, "codespace") != kPolnodeCodespace || value > static_cast<unsigned>(StatusCode::kInternal)) {
    return Status::InvalidArgument("CheckTx refused the transaction with code " + std::to_string(value) + ": " + log);
  }
  const auto status_code = static_cast<StatusCode>(value);
  // AbciApp's log is Status::ToString(), "<code name>: <reason>"; the code travels separately.
  const std::string prefix = std::string(StatusCodeName(status_code)) + ": ";
  if (log.rfind(prefix, 0) == 0) log.erase(0, prefix.size());
  return WithCode(status_code, std::move(log));
}

Result<consensus::Hash256> AbciLedgerBackend::SubmitTx(std::string_view encoded_envelope) {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(comet_rpc_, "POST", "/", BroadcastTxSyncRequest(encoded_envelope),
                                                    "application/json", timeout_));
  if (r.status != 200) {
    return Status::Unavailable("CometBFT's RPC answered HTTP " + std::to_string(r.status) + " to broadcast_tx_sync");
  }
  POLNODE_RETURN_IF_ERROR(ParseBroadcastTxSyncAnswer(r.body));
  return consensus::TxId(encoded_envelope);
}

}  // namespace polnode::node
