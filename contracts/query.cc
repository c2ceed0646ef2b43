// Application::Query: read-only JSON views of the state for the HTTP API.
#include <charconv>
#include <string>
#include <vector>

#include "json_writer.h"
#include "keys.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/application.h"
#include "polnode/contracts/supply.h"
#include "records.h"
#include "task_json.h"

namespace polnode::contracts {
namespace {

inline constexpr std::uint64_t kMaxTasksPerPage = 100;

// Parses a 64-hex path segment into 32 raw bytes.
Result<std::string> ParseId(std::string_view hex) {
  if (hex.size() != 2 * kIdBytes) return Status::InvalidArgument("expected 64 hex characters");
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, consensus::HexToBytes(hex));
  return ToBytes(bytes);
}

// The value of `name` in a "a=1&b=2" query string, or `fallback`.
Result<std::uint64_t> QueryParam(std::string_view query, std::string_view name, std::uint64_t fallback) {
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const std::size_t eq = pair.find('=');
    if (eq == std::string_view::npos || pair.substr(0, eq) != name) continue;
    const std::string_view text = pair.substr(eq + 1);
    std::uint64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
      return Status::InvalidArgument("query parameter '" + std::string(name) + "' is not an unsigned integer");
    }
    return value;
  }
  return fallback;
}

Result<std::string> QueryParamsJson(const StateStore& state) {
  POLNODE_ASSIGN_OR_RETURN(proto::Params params, LoadParams(state));
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
  w.Field("record", ToHex(EncodeRecord(params)));
  w.EndObject();
  return w.str();
}

Result<std::string> QueryStatusJson(const StateStore& state) {
  POLNODE_ASSIGN_OR_RETURN(std::string chain_id, LoadChainId(state));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t height, LoadU64(state, kHeightKey));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t tasks, LoadU64(state, kTaskCountKey));
  JsonWriter w;
  w.BeginObject().Field("chain_id", chain_id).Field("height", height).Field("task_count", tasks).EndObject();
  return w.str();
}

Result<std::string> QueryAccountJson(const StateStore& state, std::string_view hex) {
  POLNODE_ASSIGN_OR_RETURN(std::string pubkey, ParseId(hex));
  POLNODE_ASSIGN_OR_RETURN(proto::Account account, LoadAccount(state, pubkey));
  JsonWriter w;
  w.BeginObject().Field("pubkey", ToHex(pubkey)).Field("balance", account.balance()).Field("nonce", account.nonce());
  w.EndObject();
  return w.str();
}

Result<std::string> QueryStakesJson(const StateStore& state, std::string_view hex) {
  POLNODE_ASSIGN_OR_RETURN(std::string pubkey, ParseId(hex));
  JsonWriter w;
  w.BeginObject().Field("pubkey", ToHex(pubkey));
  for (proto::Role role : {proto::ROLE_SOLVER, proto::ROLE_VERIFIER, proto::ROLE_WHISTLEBLOWER}) {
    POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(state, role, pubkey));
    w.Key(RoleName(role)).BeginObject();
    WriteStakeFields(w, stake);
    w.EndObject();
  }
  w.EndObject();
  return w.str();
}

Result<std::string> QueryVerifiersJson(const StateStore& state) {
  POLNODE_ASSIGN_OR_RETURN(proto::VerifierSet set, LoadVerifierSet(state));
  JsonWriter w;
  w.BeginObject().Key("verifiers").BeginArray();
  for (const std::string& pubkey : set.pubkeys()) {
    POLNODE_ASSIGN_OR_RETURN(proto::StakeRecord stake, LoadStake(state, proto::ROLE_VERIFIER, pubkey));
    w.BeginObject().Field("pubkey", ToHex(pubkey));
    WriteStakeFields(w, stake);
    w.EndObject();
  }
  w.EndArray().EndObject();
  return w.str();
}

Result<std::string> QueryTasksJson(const StateStore& state, std::string_view query) {
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t start, QueryParam(query, "start", 0));
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t limit, QueryParam(query, "limit", kMaxTasksPerPage));
  limit = std::min(limit, kMaxTasksPerPage);
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t count, LoadU64(state, kTaskCountKey));
  JsonWriter w;
  w.BeginObject().Field("total", count).Field("start", start).Key("tasks").BeginArray();
  for (std::uint64_t seq = start; seq < count && seq - start < limit; ++seq) {
    POLNODE_ASSIGN_OR_RETURN(auto id, state.Get(TaskSeqKey(seq)));
    if (!id.has_value()) return Status::Corruption("task sequence " + std::to_string(seq) + " has no task");
    POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(state, *id));
    WriteTaskJson(w, task);
  }
  w.EndArray().EndObject();
  return w.str();
}

// The task and its dispute games, with their protobuf records in hex so that an auditor
// (`polnode dispute replay`) can re-execute them exactly.
Result<std::string> QueryGamesJson(const StateStore& state, std::string_view hex) {
  POLNODE_ASSIGN_OR_RETURN(std::string id, ParseId(hex));
  POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(state, id));
  POLNODE_ASSIGN_OR_RETURN(proto::Params params, LoadParams(state));
  JsonWriter w;
  w.BeginObject()
      .Field("task_id", ToHex(id))
      .Field("task_record", ToHex(EncodeRecord(task)))
      .Field("params_record", ToHex(EncodeRecord(params)));
  std::vector<std::string> challengers;
  for (const proto::VerifierSlot& slot : task.verifiers()) challengers.push_back(slot.verifier());
  for (const proto::Challenge& challenge : task.challenges()) challengers.push_back(challenge.challenger());
  w.Key("games").BeginArray();
  for (const std::string& challenger : challengers) {
    Result<proto::DisputeGame> game = LoadGame(state, id, challenger);
    if (!game.ok() && game.status().code() == StatusCode::kNotFound) continue;
    if (!game.ok()) return game.status();
    w.BeginObject()
        .Field("challenger", ToHex(game->challenger().key()))
        .Field("defender", ToHex(game->defender().key()))
        .Field("phase", proto::GamePhase_Name(game->phase()))
        .Field("round", game->round())
        .Field("deadline", game->deadline())
        .Field("moves", static_cast<std::uint64_t>(game->moves_size()))
        .Field("winner", ToHex(game->winner()))
        .Field("ruling", game->ruling())
        .Field("record", ToHex(EncodeRecord(*game)))
        .EndObject();
  }
  w.EndArray().EndObject();
  return w.str();
}

// A published checkpoint (publication.h): "<task hex>/<checkpoint>" gives its header and progress
// as a record; "<task hex>/<checkpoint>/<tensor>/<chunk>" one stored chunk of a tensor's elements.
Result<std::string> QueryPublishedJson(const StateStore& state, std::string_view arg) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    const std::size_t slash = arg.find('/', start);
    parts.push_back(arg.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  if (parts.size() != 2 && parts.size() != 4) return Status::NotFound("unknown published path");
  POLNODE_ASSIGN_OR_RETURN(std::string id, ParseId(parts[0]));
  std::uint64_t numbers[3] = {0, 0, 0};
  for (std::size_t i = 1; i < parts.size(); ++i) {
    auto [end, error] = std::from_chars(parts[i].data(), parts[i].data() + parts[i].size(), numbers[i - 1]);
    if (error != std::errc() || end != parts[i].data() + parts[i].size()) {
      return Status::InvalidArgument("'" + std::string(parts[i]) + "' is not a number");
    }
  }
  JsonWriter w;
  if (parts.size() == 2) {
    POLNODE_ASSIGN_OR_RETURN(proto::PublishedCheckpoint published, LoadPublished(state, id, numbers[0]));
    if (published.tensors_size() == 0) return Status::NotFound("checkpoint " + std::to_string(numbers[0]) + " is not published");
    w.BeginObject().Field("record", ToHex(EncodeRecord(published))).EndObject();
    return w.str();
  }
  if (numbers[1] > UINT32_MAX || numbers[2] > UINT32_MAX) return Status::NotFound("no such chunk");
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> chunk,
                           state.Get(PublishChunkKey(id, numbers[0], static_cast<std::uint32_t>(numbers[1]),
                                                     static_cast<std::uint32_t>(numbers[2]))));
  if (!chunk) return Status::NotFound("no such published chunk");
  w.BeginObject().Field("data", ToHex(*chunk)).EndObject();
  return w.str();
}

Result<std::string> QuerySupplyJson(const StateStore& state) {
  POLNODE_ASSIGN_OR_RETURN(SupplyReport report, AuditSupply(state));
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

}  // namespace

Result<std::string> Application::Query(std::string_view path, const StateStore& state) const {
  const std::size_t question = path.find('?');
  const std::string_view route = path.substr(0, question);
  const std::string_view query = question == std::string_view::npos ? std::string_view() : path.substr(question + 1);
  const std::size_t slash = route.find('/');
  const std::string_view head = route.substr(0, slash);
  const std::string_view arg = slash == std::string_view::npos ? std::string_view() : route.substr(slash + 1);
  const bool has_arg = slash != std::string_view::npos;

  if (head == "params" && !has_arg) return QueryParamsJson(state);
  if (head == "status" && !has_arg) return QueryStatusJson(state);
  if (head == "supply" && !has_arg) return QuerySupplyJson(state);
  if (head == "verifiers" && !has_arg) return QueryVerifiersJson(state);
  if (head == "tasks" && !has_arg) return QueryTasksJson(state, query);
  if (head == "jackpot" && !has_arg) {
    POLNODE_ASSIGN_OR_RETURN(proto::Jackpot jackpot, LoadJackpot(state));
    JsonWriter w;
    w.BeginObject().Field("pool", jackpot.pool()).EndObject();
    return w.str();
  }
  if (head == "account" && has_arg) return QueryAccountJson(state, arg);
  if (head == "stakes" && has_arg) return QueryStakesJson(state, arg);
  if (head == "games" && has_arg) return QueryGamesJson(state, arg);
  if (head == "published" && has_arg) return QueryPublishedJson(state, arg);
  if (head == "task" && has_arg) {
    POLNODE_ASSIGN_OR_RETURN(std::string id, ParseId(arg));
    POLNODE_ASSIGN_OR_RETURN(proto::Task task, LoadTask(state, id));
    JsonWriter w;
    WriteTaskJson(w, task);
    return w.str();
  }
  return Status::NotFound("unknown query path '" + std::string(path) + "'");
}

}  // namespace polnode::contracts
