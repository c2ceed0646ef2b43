#include "ledger_client.h"

#include <rapidjson/document.h>

#include <algorithm>
#include <thread>

#include "polnode/consensus/block.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/tx_envelope.h"

namespace polnode::node {
namespace {

Result<rapidjson::Document> ParseJson(std::string_view body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) return Status::Corruption("the ledger answered with a non-JSON body");
  return doc;
}

// A non-200 answer as a Status carrying the ledger's own reason.
Status Refused(std::string_view what, const HttpResponse& response) {
  std::string reason = response.body;
  if (Result<rapidjson::Document> doc = ParseJson(response.body);
      doc.ok() && doc->HasMember("error") && (*doc)["error"].IsString()) {
    reason = (*doc)["error"].GetString();
  }
  const std::string message = std::string(what) + ": the ledger answered " + std::to_string(response.status) + ": " + reason;
  if (response.status == 404) return Status::NotFound(message);
  if (response.status == 409) return Status::AlreadyExists(message);
  if (response.status >= 500) return Status::Unavailable(message);
  return Status::FailedPrecondition(message);
}

Result<std::uint64_t> UintField(const rapidjson::Value& doc, const char* name) {
  if (!doc.HasMember(name) || !doc[name].IsUint64()) return Status::Corruption(std::string("the answer has no ") + name);
  return doc[name].GetUint64();
}

template <typename Message>
Status HexRecord(const rapidjson::Value& doc, const char* field, Message& out) {
  if (!doc.HasMember(field) || !doc[field].IsString()) return Status::Corruption(std::string("the answer has no ") + field);
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, consensus::HexToBytes(doc[field].GetString()));
  if (!out.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::Corruption(std::string(field) + " is not a valid record");
  }
  return Status::Ok();
}

const char* RoleKey(proto::Role role) {
  switch (role) {
    case proto::ROLE_SOLVER: return "solver";
    case proto::ROLE_VERIFIER: return "verifier";
    case proto::ROLE_WHISTLEBLOWER: return "whistleblower";
    default: return "";
  }
}

}  // namespace

std::string HexOf(std::string_view raw) {
  return consensus::BytesToHex(std::span(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()));
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
  if (r.status != 200) return Refused("GET " + std::string(target), r);
  return std::move(r.body);
}

Result<LedgerInfo> LedgerClient::Info() const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/status"));
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  LedgerInfo info;
  if (!doc.HasMember("chain_id") || !doc["chain_id"].IsString()) return Status::Corruption("/v1/status has no chain_id");
  info.chain_id = doc["chain_id"].GetString();
  POLNODE_ASSIGN_OR_RETURN(info.height, UintField(doc, "height"));
  return info;
}

Result<proto::Params> LedgerClient::Params() const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/params"));
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  proto::Params params;
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, "record", params));
  return params;
}

Result<proto::Task> LedgerClient::Task(std::string_view task_id) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/tasks/" + HexOf(task_id)));
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  proto::Task task;
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, "record", task));
  return task;
}

Result<TaskPage> LedgerClient::Tasks(std::uint64_t start, std::uint64_t limit) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body,
                           GetJson("/v1/tasks?start=" + std::to_string(start) + "&limit=" + std::to_string(limit)));
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  TaskPage page;
  POLNODE_ASSIGN_OR_RETURN(page.total, UintField(doc, "total"));
  if (!doc.HasMember("tasks") || !doc["tasks"].IsArray()) return Status::Corruption("/v1/tasks has no tasks array");
  for (const rapidjson::Value& entry : doc["tasks"].GetArray()) {
    proto::Task task;
    POLNODE_RETURN_IF_ERROR(HexRecord(entry, "record", task));
    page.tasks.push_back(std::move(task));
  }
  return page;
}

Result<GamesView> LedgerClient::Games(std::string_view task_id) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/tasks/" + HexOf(task_id) + "/games"));
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  GamesView view;
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, "task_record", view.task));
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, "params_record", view.params));
  if (!doc.HasMember("games") || !doc["games"].IsArray()) return Status::Corruption("the games answer has no games array");
  for (const rapidjson::Value& entry : doc["games"].GetArray()) {
    proto::DisputeGame game;
    POLNODE_RETURN_IF_ERROR(HexRecord(entry, "record", game));
    view.games.push_back(std::move(game));
  }
  return view;
}

Result<proto::Account> LedgerClient::Account(std::string_view pubkey) const {
  Result<std::string> body = GetJson("/v1/accounts/" + HexOf(pubkey));
  if (!body.ok() && body.status().code() == StatusCode::kNotFound) return proto::Account();
  if (!body.ok()) return body.status();
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(*body));
  proto::Account account;
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t balance, UintField(doc, "balance"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t nonce, UintField(doc, "nonce"));
  account.set_balance(balance);
  account.set_nonce(nonce);
  return account;
}

Result<proto::StakeRecord> LedgerClient::Stake(std::string_view pubkey, proto::Role role) const {
  POLNODE_ASSIGN_OR_RETURN(std::string body, GetJson("/v1/accounts/" + HexOf(pubkey) + "/stakes"));
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(body));
  const char* key = RoleKey(role);
  if (!doc.HasMember(key) || !doc[key].IsObject()) return Status::Corruption(std::string("the stakes answer has no ") + key);
  proto::StakeRecord stake;
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t bonded, UintField(doc[key], "bonded"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t locked, UintField(doc[key], "locked"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t unbonding, UintField(doc[key], "unbonding"));
  stake.set_bonded(bonded);
  stake.set_locked(locked);
  stake.set_unbonding(unbonding);
  return stake;
}

// The pending nonce is read first: if a block commits between the two reads, the committed nonce
// read second already includes those txs, so the larger value is never stale.
Result<std::uint64_t> LedgerClient::NextNonce(std::string_view pubkey) const {
  POLNODE_ASSIGN_OR_RETURN(std::string pending_body, GetJson("/v1/accounts/" + HexOf(pubkey) + "/pending"));
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document pending, ParseJson(pending_body));
  std::uint64_t pending_next = 0;
  if (pending.HasMember("next_nonce") && pending["next_nonce"].IsUint64()) pending_next = pending["next_nonce"].GetUint64();
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, Account(pubkey));
  return std::max(pending_next, account.nonce());
}

Result<std::string> LedgerClient::PostTx(std::string_view envelope_bytes) const {
  POLNODE_ASSIGN_OR_RETURN(HttpResponse r,
                           HttpCall(endpoint_, "POST", "/v1/tx", envelope_bytes, "application/x-protobuf", timeout_));
  if (r.status != 200) return Refused("POST /v1/tx", r);
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(r.body));
  if (!doc.HasMember("tx_id") || !doc["tx_id"].IsString()) return Status::Corruption("POST /v1/tx answer has no tx_id");
  return std::string(doc["tx_id"].GetString());
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
  sent.id_hex = consensus::HashToHex(consensus::TxId(sent.envelope));
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
  TxState state;
  if (r.status == 404) return state;
  if (r.status != 200) return Refused("GET /v1/txs", r);
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseJson(r.body));
  if (doc.HasMember("status") && doc["status"].IsString() && std::string_view(doc["status"].GetString()) == "pending") {
    state.kind = TxState::Kind::kPending;
    return state;
  }
  POLNODE_ASSIGN_OR_RETURN(state.height, UintField(doc, "height"));
  state.kind = TxState::Kind::kCommitted;
  if (doc.HasMember("result") && doc["result"].IsString() && std::string_view(doc["result"].GetString()) == "failed") {
    state.kind = TxState::Kind::kFailed;
    state.error = doc.HasMember("error") && doc["error"].IsString() ? doc["error"].GetString() : "";
  }
  return state;
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
