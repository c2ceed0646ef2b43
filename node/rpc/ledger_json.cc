#include "polnode/rpc/ledger_json.h"

#include <utility>

#include "polnode/consensus/hex.h"
#include "polnode/contracts/record_encoding.h"
#include "polnode/rpc/json.h"

namespace polnode::node {
namespace {

using consensus::ToHex;

// Names a field of a ledger answer in errors: "field 'tasks[2].record' of the /v1/tasks answer".
struct FieldPath {
  std::string_view answer;  // the route, e.g. "/v1/tasks"
  std::string prefix;       // the enclosing object's path and a '.', or empty at the top level

  std::string Name(std::string_view field) const {
    return "field '" + prefix + std::string(field) + "' of the " + std::string(answer) + " answer";
  }
  FieldPath Nested(std::string_view object) const { return {answer, prefix + std::string(object) + "."}; }
};

// A ledger answer is up to 64 MiB of untrusted text; ParseJson keeps deep nesting off the stack.
Result<rapidjson::Document> ParseAnswer(std::string_view answer, std::string_view body) {
  Result<rapidjson::Document> doc = ParseJson(body);
  if (!doc.ok() || !doc->IsObject()) {
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

// The answer of route `answer` whose one field read is its hex "record".
template <typename Message>
Result<Message> RecordAnswer(std::string_view answer, std::string_view body) {
  const FieldPath path{answer, ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  Message message;
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, path, "record", message));
  return message;
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

// The key of each staking role's object in the stakes answer.
const char* RoleKey(proto::Role role) {
  switch (role) {
    case proto::ROLE_SOLVER: return "solver";
    case proto::ROLE_VERIFIER: return "verifier";
    case proto::ROLE_WHISTLEBLOWER: return "whistleblower";
    default: return nullptr;
  }
}

void WriteStakeFields(JsonWriter& w, const proto::StakeRecord& stake) {
  w.Field("bonded", stake.bonded())
      .Field("locked", stake.locked())
      .Field("free", stake.bonded() >= stake.locked() ? stake.bonded() - stake.locked() : std::uint64_t{0})
      .Field("unbonding", stake.unbonding());
}

void WriteSpec(JsonWriter& w, const proto::TaskSpec& spec) {
  w.BeginObject()
      .Field("model_spec", spec.model_spec())
      .Field("dataset_hash", ToHex(spec.dataset_hash()))
      .Field("hyperparameters_hash", ToHex(spec.hyperparameters_hash()))
      .Field("total_steps", spec.total_steps())
      .Field("checkpoint_interval", spec.checkpoint_interval())
      .Field("segments_per_verification", spec.segments_per_verification())
      .Field("payment", spec.payment())
      .Field("claim_window", spec.claim_window())
      .Field("training_window", spec.training_window())
      .Field("graph_root", ToHex(spec.graph_root()))
      .Field("batch_root", ToHex(spec.batch_root()))
      .Field("step_leaf_count", spec.step_leaf_count())
      .Field("state_tensor_count", spec.state_tensor_count())
      .Field("tolerant", spec.tolerant())
      .Field("forced_delta", static_cast<double>(spec.forced_delta()))
      .Field("initial_state_hash", ToHex(spec.initial_state_hash()))
      .EndObject();
}

void WriteSlot(JsonWriter& w, const proto::VerifierSlot& slot) {
  w.BeginObject()
      .Field("verifier", ToHex(slot.verifier()))
      .Field("verdict", proto::Verdict_Name(slot.verdict()))
      .Field("report_hash", ToHex(slot.report_hash()))
      .Field("lock", slot.lock())
      .Field("absent", slot.absent())
      .Field("published", slot.published())
      .Field("overdue", slot.overdue())
      .Field("disputed", slot.disputed())
      .Field("vouched", slot.vouched())
      .Field("game_result", proto::GameResult_Name(slot.game_result()));
  w.Key("segments").BeginArray();
  for (std::uint64_t s : slot.segments()) w.Uint(s);
  w.EndArray();
  w.Key("failed_segments").BeginArray();
  for (std::uint64_t s : slot.failed_segments()) w.Uint(s);
  w.EndArray();
  w.Key("segment_digests").BeginArray();
  for (const std::string& d : slot.segment_digests()) w.String(ToHex(d));
  w.EndArray().EndObject();
}

void WriteChallenge(JsonWriter& w, const proto::Challenge& challenge) {
  w.BeginObject()
      .Field("challenger", ToHex(challenge.challenger()))
      .Field("lock", challenge.lock())
      .Field("caught", challenge.caught())
      .Field("game_result", proto::GameResult_Name(challenge.game_result()));
  w.Key("segments").BeginArray();
  for (std::uint64_t s : challenge.segments()) w.Uint(s);
  w.EndArray();
  w.Key("failed_segments").BeginArray();
  for (std::uint64_t s : challenge.failed_segments()) w.Uint(s);
  w.EndArray();
  w.Key("segment_digests").BeginArray();
  for (const std::string& d : challenge.segment_digests()) w.String(ToHex(d));
  w.EndArray().EndObject();
}

// `task` as one JSON object value.
void WriteTask(JsonWriter& w, const proto::Task& task) {
  w.BeginObject()
      .Field("id", ToHex(task.id()))
      .Field("seq", task.seq())
      .Field("submitter", ToHex(task.submitter()))
      .Field("status", proto::TaskStatus_Name(task.status()))
      .Field("outcome", proto::TaskOutcome_Name(task.outcome()))
      .Field("spec_hash", ToHex(task.spec_hash()))
      .Field("spec_uri", task.spec_uri())
      .Field("escrow", task.escrow())
      .Field("submit_height", task.submit_height())
      .Field("deadline", task.deadline())
      .Field("solver", ToHex(task.solver()))
      .Field("claim_height", task.claim_height())
      .Field("forced_seed_drawn", !task.forced_seed().empty())
      .Field("proof_root", ToHex(task.proof_root()))
      .Field("proof_uri", task.proof_uri())
      .Field("commit_height", task.commit_height())
      .Field("segment_beacon", ToHex(task.segment_beacon()))
      .Field("forced_error", task.forced_error())
      .Field("result_root", ToHex(task.result_root()))
      .Field("settle_height", task.settle_height())
      .Field("standing", proto::ProofStanding_Name(task.standing()))
      .Field("disproven_segment", task.disproven_segment())
      .Field("disprover", ToHex(task.disprover()))
      .Field("solver_lock", task.solver_lock())
      .Field("jackpot_cut", task.jackpot_cut())
      .Field("verification_round", static_cast<std::uint64_t>(task.verification_round()))
      .Field("forced_root", ToHex(task.forced_root()))
      .Field("seed_committed", !task.seed_commitment().empty())
      .Field("seed_revealed", !task.submitter_seed().empty())
      .Field("pruned", task.pruned())
      .Field("record", ToHex(contracts::EncodeRecord(task)));
  w.Key("publish_required").BeginArray();
  for (std::uint64_t c : task.publish_required()) w.Uint(c);
  w.EndArray();
  // Forced rounds, after the reveal (contracts.proto Task).
  w.Key("forced_checkpoints").BeginArray();
  for (std::uint64_t c : task.forced_checkpoints()) w.Uint(c);
  w.EndArray();
  w.Key("honest_hashes").BeginArray();
  for (const std::string& h : task.honest_hashes()) w.String(ToHex(h));
  w.EndArray();
  w.Key("perturbed_index_hashes").BeginArray();
  for (const std::string& h : task.perturbed_index_hashes()) w.String(ToHex(h));
  w.EndArray();
  w.Key("spec");
  WriteSpec(w, task.spec());
  w.Key("verifiers").BeginArray();
  for (const proto::VerifierSlot& slot : task.verifiers()) WriteSlot(w, slot);
  w.EndArray();
  w.Key("challenges").BeginArray();
  for (const proto::Challenge& challenge : task.challenges()) WriteChallenge(w, challenge);
  w.EndArray().EndObject();
}

}  // namespace

std::string ParamsJson(const proto::Params& params) {
  JsonWriter w;
  w.BeginObject();
  const auto* descriptor = params.GetDescriptor();
  const auto* reflection = params.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const auto* field = descriptor->field(i);
    const bool is_u32 = field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_UINT32;
    w.Field(field->name(),
            is_u32 ? std::uint64_t{reflection->GetUInt32(params, field)} : reflection->GetUInt64(params, field));
  }
  w.Field("record", ToHex(contracts::EncodeRecord(params)));
  w.EndObject();
  return w.str();
}

std::string AccountJson(std::string_view pubkey, const proto::Account& account) {
  JsonWriter w;
  w.BeginObject().Field("pubkey", ToHex(pubkey)).Field("balance", account.balance()).Field("nonce", account.nonce());
  w.EndObject();
  return w.str();
}

std::string StakesJson(std::string_view pubkey, const contracts::AccountStakes& stakes) {
  JsonWriter w;
  w.BeginObject().Field("pubkey", ToHex(pubkey));
  for (const auto& [role, stake] : {std::pair{proto::ROLE_SOLVER, &stakes.solver},
                                    std::pair{proto::ROLE_VERIFIER, &stakes.verifier},
                                    std::pair{proto::ROLE_WHISTLEBLOWER, &stakes.whistleblower}}) {
    w.Key(RoleKey(role)).BeginObject();
    WriteStakeFields(w, *stake);
    w.EndObject();
  }
  w.EndObject();
  return w.str();
}

std::string VerifiersJson(const std::vector<contracts::VerifierStake>& verifiers) {
  JsonWriter w;
  w.BeginObject().Key("verifiers").BeginArray();
  for (const contracts::VerifierStake& v : verifiers) {
    w.BeginObject().Field("pubkey", ToHex(v.pubkey));
    WriteStakeFields(w, v.stake);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return w.str();
}

std::string JackpotJson(const proto::Jackpot& jackpot) {
  JsonWriter w;
  w.BeginObject().Field("pool", jackpot.pool()).EndObject();
  return w.str();
}

std::string TaskJson(const proto::Task& task) {
  JsonWriter w;
  WriteTask(w, task);
  return w.str();
}

std::string TaskPageJson(const contracts::TaskPage& page) {
  JsonWriter w;
  w.BeginObject().Field("total", page.total).Field("start", page.start).Key("tasks").BeginArray();
  for (const proto::Task& task : page.tasks) WriteTask(w, task);
  w.EndArray().EndObject();
  return w.str();
}

std::string TaskGamesJson(const contracts::TaskGames& games) {
  JsonWriter w;
  w.BeginObject()
      .Field("task_id", ToHex(games.task.id()))
      .Field("task_record", ToHex(contracts::EncodeRecord(games.task)))
      .Field("params_record", ToHex(contracts::EncodeRecord(games.params)));
  w.Key("games").BeginArray();
  for (const proto::DisputeGame& game : games.games) {
    w.BeginObject()
        .Field("challenger", ToHex(game.challenger().key()))
        .Field("challenger_is_verifier", game.challenger_is_verifier())
        .Field("defender", ToHex(game.defender().key()))
        .Field("phase", proto::GamePhase_Name(game.phase()))
        .Field("round", game.round())
        .Field("deadline", game.deadline())
        .Field("moves", static_cast<std::uint64_t>(game.moves_size()))
        .Field("winner", ToHex(game.winner()))
        .Field("ruling", game.ruling())
        .Field("proof_root", ToHex(game.proof_root()))
        .Field("start_root", ToHex(game.start_root()))
        .Field("record", ToHex(contracts::EncodeRecord(game)))
        .EndObject();
  }
  w.EndArray().EndObject();
  return w.str();
}

std::string SupplyJson(const contracts::SupplyReport& report) {
  JsonWriter w;
  w.BeginObject()
      .Field("genesis_supply", report.genesis_supply)
      .Field("balances", report.balances)
      .Field("bonded", report.bonded)
      .Field("unbonding", report.unbonding)
      .Field("escrow", report.escrow)
      .Field("jackpot", report.jackpot)
      .Field("total", report.total())
      .Field("balanced", report.balanced())
      .EndObject();
  return w.str();
}

std::string PublishedCheckpointJson(const proto::PublishedCheckpoint& published) {
  JsonWriter w;
  w.BeginObject().Key("tensors").BeginArray();
  for (int t = 0; t < published.tensors_size(); ++t) {
    const proto::PublishedTensorHeader& tensor = published.tensors(t);
    w.BeginObject().Field("name", tensor.name()).Key("dims").BeginArray();
    for (std::int64_t d : tensor.dims()) w.Int(d);
    w.EndArray()
        .Field("hash", ToHex(tensor.hash()))
        .Field("chunks_received", static_cast<std::uint64_t>(t < published.chunks_received_size() ? published.chunks_received(t) : 0))
        .Field("verified", t < published.verified_size() && published.verified(t))
        .EndObject();
  }
  // The state hash and the Merkle proof the ledger checked: with them a challenger opens a dispute
  // game without the solver's server (contracts/publication.h).
  w.EndArray()
      .Field("state_hash", ToHex(published.state_hash()))
      .Field("proof", ToHex(published.proof()))
      .Field("record", ToHex(contracts::EncodeRecord(published)))
      .EndObject();
  return w.str();
}

std::string PublishedChunkJson(std::string_view bytes) {
  JsonWriter w;
  w.BeginObject().Field("data", ToHex(bytes)).EndObject();
  return w.str();
}

std::string RevealedCheckpointsJson(const proto::RevealedCheckpoints& revealed) {
  JsonWriter w;
  w.BeginObject().Key("leaves").BeginArray();
  for (const proto::RevealedLeaf& leaf : revealed.leaves()) {
    w.BeginObject()
        .Field("checkpoint", leaf.checkpoint())
        .Field("committed_hash", ToHex(leaf.committed_hash()))
        .Field("committed_proof", ToHex(leaf.committed_proof()))
        .Field("result_hash", ToHex(leaf.result_hash()))
        .Field("result_proof", ToHex(leaf.result_proof()))
        .EndObject();
  }
  w.EndArray().Field("record", ToHex(contracts::EncodeRecord(revealed))).EndObject();
  return w.str();
}

Result<LedgerInfo> DecodeLedgerInfo(std::string_view body) {
  const FieldPath path{"/v1/status", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  LedgerInfo info;
  POLNODE_ASSIGN_OR_RETURN(info.chain_id, StringField(doc, path, "chain_id"));
  POLNODE_ASSIGN_OR_RETURN(info.height, UintField(doc, path, "height"));
  return info;
}

Result<proto::Params> DecodeParams(std::string_view body) { return RecordAnswer<proto::Params>("/v1/params", body); }

Result<proto::PublishedCheckpoint> DecodePublishedCheckpoint(std::string_view body) {
  return RecordAnswer<proto::PublishedCheckpoint>("/v1/tasks/{id}/published/{checkpoint}", body);
}

Result<std::vector<std::uint8_t>> DecodePublishedChunk(std::string_view body) {
  const FieldPath path{"/v1/tasks/{id}/published/{checkpoint}/{tensor}/{chunk}", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  POLNODE_ASSIGN_OR_RETURN(std::string hex, StringField(doc, path, "data"));
  Result<std::vector<std::uint8_t>> bytes = consensus::HexToBytes(hex);
  if (!bytes.ok()) return Status::Corruption(path.Name("data") + " is not hex: " + bytes.status().message());
  return bytes;
}

Result<proto::RevealedCheckpoints> DecodeRevealedCheckpoints(std::string_view body) {
  return RecordAnswer<proto::RevealedCheckpoints>("/v1/tasks/{id}/revealed", body);
}

Result<proto::Task> DecodeTask(std::string_view body) { return RecordAnswer<proto::Task>("/v1/tasks/{id}", body); }

Result<contracts::TaskPage> DecodeTaskPage(std::string_view body) {
  const FieldPath path{"/v1/tasks", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  contracts::TaskPage page;
  POLNODE_ASSIGN_OR_RETURN(page.total, UintField(doc, path, "total"));
  POLNODE_ASSIGN_OR_RETURN(page.tasks, RecordArray<proto::Task>(doc, path, "tasks"));
  POLNODE_ASSIGN_OR_RETURN(page.start, UintField(doc, path, "start"));
  return page;
}

Result<contracts::TaskGames> DecodeTaskGames(std::string_view body) {
  const FieldPath path{"/v1/tasks/{id}/games", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  contracts::TaskGames view;
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, path, "task_record", view.task));
  POLNODE_RETURN_IF_ERROR(HexRecord(doc, path, "params_record", view.params));
  POLNODE_ASSIGN_OR_RETURN(view.games, RecordArray<proto::DisputeGame>(doc, path, "games"));
  return view;
}

Result<proto::Account> DecodeAccount(std::string_view body) {
  const FieldPath path{"/v1/accounts/{pubkey}", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  proto::Account account;
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t balance, UintField(doc, path, "balance"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t nonce, UintField(doc, path, "nonce"));
  account.set_balance(balance);
  account.set_nonce(nonce);
  return account;
}

// A stake object's three amounts.
Result<proto::StakeRecord> StakeFields(const rapidjson::Value& object, const FieldPath& path) {
  proto::StakeRecord stake;
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t bonded, UintField(object, path, "bonded"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t locked, UintField(object, path, "locked"));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t unbonding, UintField(object, path, "unbonding"));
  stake.set_bonded(bonded);
  stake.set_locked(locked);
  stake.set_unbonding(unbonding);
  return stake;
}

Result<std::vector<contracts::VerifierStake>> DecodeVerifiers(std::string_view body) {
  const FieldPath path{"/v1/verifiers", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  POLNODE_ASSIGN_OR_RETURN(const rapidjson::Value* entries, ArrayField(doc, path, "verifiers"));
  std::vector<contracts::VerifierStake> out;
  out.reserve(entries->Size());
  for (rapidjson::SizeType i = 0; i < entries->Size(); ++i) {
    const FieldPath entry = path.Nested("verifiers[" + std::to_string(i) + "]");
    contracts::VerifierStake v;
    POLNODE_ASSIGN_OR_RETURN(std::string hex, StringField((*entries)[i], entry, "pubkey"));
    Result<std::vector<std::uint8_t>> raw = consensus::HexToBytes(hex);
    if (!raw.ok() || raw->size() != 32) return Status::Corruption(entry.Name("pubkey") + " is not 64 hex characters");
    v.pubkey.assign(raw->begin(), raw->end());
    POLNODE_ASSIGN_OR_RETURN(v.stake, StakeFields((*entries)[i], entry));
    out.push_back(std::move(v));
  }
  return out;
}

Result<proto::StakeRecord> DecodeStake(std::string_view body, proto::Role role) {
  const char* key = RoleKey(role);
  if (key == nullptr) return Status::InvalidArgument("the ledger reports no stakes for role " + std::to_string(role));
  const FieldPath path{"/v1/accounts/{pubkey}/stakes", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  POLNODE_ASSIGN_OR_RETURN(const rapidjson::Value* object, Member(doc, path, key));
  if (!object->IsObject()) return Status::Corruption(path.Name(key) + " is not an object");
  return StakeFields(*object, path.Nested(key));
}

Result<std::optional<std::uint64_t>> DecodePendingNonce(std::string_view body) {
  const FieldPath path{"/v1/accounts/{pubkey}/pending", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  POLNODE_ASSIGN_OR_RETURN(const rapidjson::Value* next, Member(doc, path, "next_nonce"));
  if (next->IsNull()) return std::optional<std::uint64_t>();
  if (!next->IsUint64()) {
    return Status::Corruption(path.Name("next_nonce") + " is neither null nor an unsigned 64-bit integer");
  }
  return std::optional<std::uint64_t>(next->GetUint64());
}

Result<std::string> DecodeTxId(std::string_view body) {
  const FieldPath path{"POST /v1/tx", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
  return StringField(doc, path, "tx_id");
}

Result<TxState> DecodeTxState(std::string_view body) {
  const FieldPath path{"/v1/txs/{id}", ""};
  POLNODE_ASSIGN_OR_RETURN(rapidjson::Document doc, ParseAnswer(path.answer, body));
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
  if (Result<rapidjson::Document> doc = ParseAnswer(what, body); doc.ok()) {
    Result<std::string> error = StringField(*doc, FieldPath{what, ""}, "error");
    if (error.ok()) reason = *std::move(error);
  }
  const std::string message = std::string(what) + ": the ledger answered " + std::to_string(status) + ": " + reason;
  if (status == 404) return Status::NotFound(message);
  if (status == 409) return Status::AlreadyExists(message);
  if (status >= 500) return Status::Unavailable(message);
  return Status::FailedPrecondition(message);
}

}  // namespace polnode::node
