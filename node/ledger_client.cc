#include "ledger_client.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <thread>

#include "polnode/consensus/block.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/tx_envelope.h"

namespace polnode::node {
namespace {

// Names a field of a ledger answer in errors: "field 'tasks[2].record' of the /v1/tasks answer".
struct FieldPath {
  std::string_view answer;  // the route, e.g. "/v1/tasks"
  std::string prefix;       // the enclosing object's path and a '.', or empty at the top level

  std::string Name(std::string_view field) const {
    return "field '" + prefix + std::string(field) + "' of the " + std::string(answer) + " answer";
  }
  FieldPath Nested(std::string_view object) const { return {answer, prefix + std::string(object) + "."}; }
};

// The iterative parser keeps its nesting on the heap: the recursive default would overflow the
// thread's stack on a deeply nested body, and a ledger answer may be up to 64 MiB.
Result<rapidjson::Document> ParseJson(std::string_view answer, std::string_view body) {
  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return Status::Corruption("the " + std::string(answer) + " answer is not a JSON object");
  }
  return doc;
}

// Member `field` of `object`. Array entries may be anything, and FindMember on a non-object is
// undefined behaviour in rapidjson (an assert compiled out of release builds), so it is checked.
Result<const rapidjson::Value*> Member(const rapidjson::Value& object, const FieldPath& path, const char* field) {
  if (!object.IsObject()) {
    return Status::Corruption(path.Name(field) + " cannot be read: its parent is not an object");
  }
  const auto it = object.FindMember(field);
  if (it == object.MemberEnd()) return Status::Corruption(path.Name(field) + " is missing");
  return &it->value;
}

Result<std::uint64_t> UintField(const rapidjson::Value& object, const FieldPath& path, const char* field) {
  POLNODE_ASSIGN_OR_RETURN(const rapidjson::Value* value, Member(object, path, field));
  if (!value->IsUint64()) return Status::Corruption(path.Name(field) + " is not an unsigned 64-bit integer");
  return value->GetUint64();
}

Result<std::string> StringField(const rapidjson::Value& object, const FieldPath& path, const char* field) {
  POLNODE_ASSIGN_OR_RETURN(const rapidjson::Value* value, Member(object, path, field));
  if (!value->IsString()) return Status::Corruption(path.Name(field) + " is not a string");
  return std::string(value->GetString(), value->GetStringLength());
}

Result<const rapidjson::Value*> ArrayField(const rapidjson::Value& object, const FieldPath& path, const char* field) {
  POLNODE_ASSIGN_OR_RETURN(const rapidjson::Value* value, Member(object, path, field));
  if (!value->IsArray()) return Status::Corruption(path.Name(field) + " is not an array");
  return value;
}

// A protobuf record the API writes as hex (the contracts' stored bytes).
template <typename Message>
Status HexRecord(const rapidjson::Value& object, const FieldPath& path, const char* field, Message& out) {
  POLNODE_ASSIGN_OR_RETURN(std::string hex, StringField(object, path, field));
  Result<std::vector<std::uint8_t>> bytes = consensus::HexToBytes(hex);
  if (!bytes.ok()) return Status::Corruption(path.Name(field) + " is not hex: " + bytes.status().message());
  if (!out.ParseFromArray(bytes->data(), static_cast<int>(bytes->size()))) {
    return Status::Corruption(path.Name(field) + " is not a valid " + out.GetTypeName() + " record");
  }
  return Status::Ok();
}

// The "record" of every object in `array`, named "<array>[i]" in errors.
template <typename Message>
Result<std::vector<Message>> RecordArray(const rapidjson::Value& object, const FieldPath& path, const char* array) {
  POLNODE_ASSIGN_OR_RETURN(const rapidjson::Value* entries, ArrayField(object, path, array));
  std::vector<Message> out;
  out.reserve(entries->Size());
  for (rapidjson::SizeType i = 0; i < entries->Size(); ++i) {
    const FieldPath entry_path = path.Nested(std::string(array) + "[" + std::to_string(i) + "]");
    Message message;
    POLNODE_RETURN_IF_ERROR(HexRecord((*entries)[i], entry_path, "record", message));
    out.push_back(std::move(message));
  }
  return out;
}

const char* RoleKey(proto::Role role) {
  switch (role) {
    case proto::ROLE_SOLVER: return "solver";
    case proto::ROLE_VERIFIER: return "verifier";
    case proto::ROLE_WHISTLEBLOWER: return "whistleblower";
    default: return nullptr;
  }
}

}  // namespace

Result<LedgerInfo> DecodeLedgerInfo(std::string_view body) {
  const FieldPath path{"/v1/status", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  LedgerInfo info;
  POLNODE_ASSIGN_OR_RETURN(info.chain_id, StringField(doc, path, "chain_id"));
  POLNODE_ASSIGN_OR_RETURN(info.height, UintField(doc, path, "height"));
  return info;
}

Result<proto::Params> DecodeParams(std::string_view body) {
  const FieldPath path{"/v1/params", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  proto::Params params;
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, path, "record", params));
  return params;
}

Result<proto::Task> DecodeTask(std::string_view body) {
  const FieldPath path{"/v1/tasks/{id}", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  proto::Task task;
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, path, "record", task));
  return task;
}

Result<TaskPage> DecodeTaskPage(std::string_view body) {
  const FieldPath path{"/v1/tasks", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  TaskPage page;
  POLNODE_ASSIGN_OR_RETURN(page.total, UintField(doc, path, "total"));
  POLNODE_ASSIGN_OR_RETURN(page.tasks, RecordArray<proto::Task>(doc, path, "tasks"));
  return page;
}

Result<GamesView> DecodeGamesView(std::string_view body) {
  const FieldPath path{"/v1/tasks/{id}/games", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  GamesView view;
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, path, "task_record", view.task));
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, path, "params_record", view.params));
  POLNODE_ASSIGN_OR_RETURN(view.games, RecordArray<proto::DisputeGame>(doc, path, "games"));
  return view;
}

Result<proto::Account> DecodeAccount(std::string_view body) {
  const FieldPath path{"/v1/accounts/{pubkey}", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  proto::Account account;
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t balance, UintField(doc, path, "balance"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t nonce, UintField(doc, path, "nonce"));
  account.set_balance(balance);
  account.set_nonce(nonce);
  return account;
}

Result<proto::StakeRecord> DecodeStake(std::string_view body, proto::Role role) {
  const char* key = RoleKey(role);
  if (key == nullptr) return Status::InvalidArgument("the ledger reports no stakes for role " + std::to_string(role));
  const FieldPath path{"/v1/accounts/{pubkey}/stakes", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  POLNODE_ASSIGN_OR_RETURN(const rapidjson::Value* object, Member(doc, path, key));
  if (!object->IsObject()) return Status::Corruption(path.Name(key) + " is not an object");
  const FieldPath nested = path.Nested(key);
  proto::StakeRecord stake;
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t bonded, UintField(*object, nested, "bonded"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t locked, UintField(*object, nested, "locked"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t unbonding, UintField(*object, nested, "unbonding"));
  stake.set_bonded(bonded);
  stake.set_locked(locked);
  stake.set_unbonding(unbonding);
  return stake;
}

Result<std::optional<std::uint64_t>> DecodePendingNonce(std::string_view body) {
  const FieldPath path{"/v1/accounts/{pubkey}/pending", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  POLNODE_ASSIGN_OR_RETURN(const rapidjson::Value* next, Member(doc, path, "next_nonce"));
  if (next->IsNull()) return std::optional<std::uint64_t>();
  if (!next->IsUint64()) {
    return Status::Corruption(path.Name("next_nonce") + " is neither null nor an unsigned 64-bit integer");
  }
  return std::optional<std::uint64_t>(next->GetUint64());
}

Result<std::string> DecodeTxId(std::string_view body) {
  const FieldPath path{"POST /v1/tx", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  return StringField(doc, path, "tx_id");
}

Result<TxState> DecodeTxState(std::string_view body) {
  const FieldPath path{"/v1/txs/{id}", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(path.answer, body));
  POLNODE_ASSIGN_OR_RETURN(std::string status, StringField(doc, path, "status"));
  TxState state;
  if (status == "pending") {
    state.kind = TxState::Kind::kPending;
    return state;
  }
  if (status != "committed") {
    return Status::Corruption(path.Name("status") + " is neither \"pending\" nor \"committed\"");
  }
  POLNODE_ASSIGN_OR_RETURN(state.height, UintField(doc, path, "height"));
  state.kind = TxState::Kind::kCommitted;
  // A tx stored before results were kept has no "result"; only "failed" says it did not take effect.
  if (doc.HasMember("result") && doc["result"].IsString() && std::string_view(doc["result"].GetString()) == "failed") {
    state.kind = TxState::Kind::kFailed;
    POLNODE_ASSIGN_OR_RETURN(state.error, StringField(doc, path, "error"));
  }
  return state;
}

Status DecodeRefusal(std::string_view what, int status, std::string_view body) {
  std::string reason(body);
  if (Result<rapidjson::Document> doc = ParseJson(what, body); doc.ok()) {
    Result<std::string> error = StringField(*doc, FieldPath{what, ""}, "error");
    if (error.ok()) reason = *std::move(error);
  }
  const std::string message = std::string(what) + ": the ledger answered " + std::to_string(status) + ": " + reason;
  if (status == 404) return Status::NotFound(message);
  if (status == 409) return Status::AlreadyExists(message);
  if (status >= 500) return Status::Unavailable(message);
  return Status::FailedPrecondition(message);
}

Result<std::string> RawFromHex(std::string_view hex, std::string_view what) {
  Result<std::vector<std::uint8_t>> bytes = consensus::HexToBytes(hex);
  if (!bytes.ok() || bytes->size() != 32) return Status::InvalidArgument(std::string(what) + " must be 64 hex characters");
  return std::string(bytes->begin(), bytes->end());
}

Result<LedgerClient> LedgerClient::FromUrl(std::string_view url) {
  POLNODE_ASSIGN_OR_RETURN(HttpEndpoint endpoint, ParseHttpUrl(url));
  return LedgerClient(std::move(endpoint));
}

Result<std::string> LedgerClient::GetJson(std::string_view target) const {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(endpoint_, "GET", target, {}, {}, timeout_));
  if (r.status != 200) return DecodeRefusal("GET " + std::string(target), r.status, r.body);
  return std::move(r.body);
}

Result<LedgerInfo> LedgerClient::Info() const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/status"));
  return DecodeLedgerInfo(body);
}

Result<proto::Params> LedgerClient::Params() const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/params"));
  return DecodeParams(body);
}

Result<proto::Task> LedgerClient::Task(std::string_view task_id) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/tasks/" + consensus::ToHex(task_id)));
  return DecodeTask(body);
}

Result<TaskPage> LedgerClient::Tasks(std::uint64_t start, std::uint64_t limit) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body,
                           GetJson("/v1/tasks?start=" + std::to_string(start) + "&limit=" + std::to_string(limit)));
  return DecodeTaskPage(body);
}

Result<GamesView> LedgerClient::Games(std::string_view task_id) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/tasks/" + consensus::ToHex(task_id) + "/games"));
  return DecodeGamesView(body);
}

Result<proto::Account> LedgerClient::Account(std::string_view pubkey) const {
  Result<std::string> body = GetJson("/v1/accounts/" + consensus::ToHex(pubkey));
  if (!body.ok() && body.status().code() == StatusCode::kNotFound) return proto::Account();
  if (!body.ok()) return body.status();
  return DecodeAccount(*body);
}

Result<proto::StakeRecord> LedgerClient::Stake(std::string_view pubkey, proto::Role role) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/accounts/" + consensus::ToHex(pubkey) + "/stakes"));
  return DecodeStake(body, role);
}

// The pending nonce is read first: if a block commits between the two reads, the committed nonce
// read second already includes those txs, so the larger value is never stale.
Result<std::uint64_t> LedgerClient::NextNonce(std::string_view pubkey) const {
  POLNODE_ASSIGN_OR_RETURN(std::string pending_body, GetJson("/v1/accounts/" + consensus::ToHex(pubkey) + "/pending"));
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::uint64_t> pending_next, DecodePendingNonce(pending_body));
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, Account(pubkey));
  return std::max(pending_next.value_or(0), account.nonce());
}

Result<std::string> LedgerClient::PostTx(std::string_view envelope_bytes) const {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r,
                           HttpCall(endpoint_, "POST", "/v1/tx", envelope_bytes, "application/x-protobuf", timeout_));
  if (r.status != 200) return DecodeRefusal("POST /v1/tx", r.status, r.body);
  return DecodeTxId(r.body);
}

Result<LedgerClient::Sent> LedgerClient::Sign(const consensus::SecretKey& key, std::string_view payload_type,
                                              std::string payload, std::optional<std::uint64_t> nonce,
                                              std::optional<std::string> chain_id) const {
  consensus::TxEnvelope envelope;
  envelope.payload_type = std::string(payload_type);
  envelope.payload = std::move(payload);
  if (chain_id) {
    envelope.chain_id = *chain_id;
  } else {
    POLNODE_ASSIGN_OR_RETURN(LedgerInfo info, Info());
    envelope.chain_id = info.chain_id;
  }
  if (nonce) {
    envelope.nonce = *nonce;
  } else {
    const auto& pub = key.PublicKey().bytes();
    POLNODE_ASSIGN_OR_RETURN(envelope.nonce, NextNonce(std::string_view(reinterpret_cast<const char*>(pub.data()), pub.size())));
  }
  Sent sent;
  sent.nonce = envelope.nonce;
  POLNODE_ASSIGN_OR_RETURN(consensus::TxEnvelope signed_envelope, consensus::SignEnvelope(key, std::move(envelope)));
  POLNODE_ASSIGN_OR_RETURN(sent.envelope, consensus::EncodeEnvelope(signed_envelope));
  sent.id_hex = consensus::ToHex(consensus::TxId(sent.envelope));
  return sent;
}

Result<LedgerClient::Sent> LedgerClient::Send(const consensus::SecretKey& key, std::string_view payload_type,
                                              std::string payload, std::optional<std::uint64_t> nonce,
                                              std::optional<std::string> chain_id) const {
  POLNODE_ASSIGN_OR_RETURN(Sent sent, Sign(key, payload_type, std::move(payload), nonce, std::move(chain_id)));
  POLNODE_ASSIGN_OR_RETURN(std::string id, PostTx(sent.envelope));
  if (id != sent.id_hex) return Status::Corruption("the ledger named the transaction " + id + ", not " + sent.id_hex);
  return sent;
}

Result<TxState> LedgerClient::Tx(std::string_view id_hex) const {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r, HttpCall(endpoint_, "GET", "/v1/txs/" + std::string(id_hex), {}, {}, timeout_));
  if (r.status == 404) return TxState();
  if (r.status != 200) return DecodeRefusal("GET /v1/txs", r.status, r.body);
  return DecodeTxState(r.body);
}

Result<std::uint64_t> LedgerClient::WaitCommitted(std::string_view id_hex, std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    POLNODE_ASSIGN_OR_RETURN(TxState state, Tx(id_hex));
    switch (state.kind) {
      case TxState::Kind::kCommitted: return state.height;
      case TxState::Kind::kFailed:
        return Status::FailedPrecondition("transaction " + std::string(id_hex) + " was committed but failed: " + state.error);
      case TxState::Kind::kUnknown:
        return Status::FailedPrecondition("transaction " + std::string(id_hex) +
                                          " left the mempool without being committed (its nonce or balance no longer checks out)");
      case TxState::Kind::kPending: break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Unavailable("transaction " + std::string(id_hex) + " not committed within " +
                                 std::to_string(timeout.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace polnode::node
