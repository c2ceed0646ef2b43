#include "records.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstdlib>

#include "keys.h"

namespace polnode::contracts {
namespace {

// Loads a record, or the default (all-zero) message when the key is absent.
template <typename Message>
Result<Message> LoadOrDefault(const StateStore& state, std::string_view key) {
  POLNODE_ASSIGN_OR_RETURN(auto bytes, state.Get(key));
  Message message;
  if (bytes.has_value()) POLNODE_RETURN_IF_ERROR(DecodeRecord(*bytes, key, message));
  return message;
}

// Stores `message`, or deletes the key when the message encodes to nothing (every field zero).
void StoreOrDelete(StateStore& state, std::string key, const google::protobuf::MessageLite& message) {
  std::string bytes = EncodeRecord(message);
  if (bytes.empty()) {
    state.Delete(std::move(key));
  } else {
    state.Put(std::move(key), std::move(bytes));
  }
}

}  // namespace

std::string EncodeRecord(const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    // proto3 messages have no required fields, so serializing into memory cannot fail; a false
    // here would mean a broken protobuf library, and writing a truncated record must not happen.
    if (!message.SerializeToCodedStream(&coded)) std::abort();
  }
  return bytes;
}

Status DecodeRecord(std::string_view bytes, std::string_view key, google::protobuf::MessageLite& message) {
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::Corruption("state record '" + std::string(key) + "' does not parse");
  }
  return Status::Ok();
}

Result<std::uint64_t> LoadU64(const StateStore& state, std::string_view key) {
  POLNODE_ASSIGN_OR_RETURN(auto bytes, state.Get(key));
  if (!bytes.has_value()) return std::uint64_t{0};
  if (bytes->size() != 8) return Status::Corruption("state value '" + std::string(key) + "' is not 8 bytes");
  std::uint64_t value = 0;
  for (unsigned char byte : *bytes) value = (value << 8) | byte;
  return value;
}

void StoreU64(StateStore& state, std::string_view key, std::uint64_t value) {
  std::string bytes(8, '\0');
  for (int i = 7; i >= 0; --i, value >>= 8) bytes[static_cast<std::size_t>(i)] = static_cast<char>(value & 0xff);
  state.Put(std::string(key), std::move(bytes));
}

Result<std::string> LoadChainId(const StateStore& state) {
  POLNODE_ASSIGN_OR_RETURN(auto bytes, state.Get(kChainIdKey));
  if (!bytes.has_value()) return Status::FailedPrecondition("the state has no genesis (no chain id)");
  return std::move(*bytes);
}

Result<proto::Params> LoadParams(const StateStore& state) {
  POLNODE_ASSIGN_OR_RETURN(auto bytes, state.Get(kParamsKey));
  if (!bytes.has_value()) return Status::FailedPrecondition("the state has no genesis (no params)");
  proto::Params params;
  POLNODE_RETURN_IF_ERROR(DecodeRecord(*bytes, kParamsKey, params));
  return params;
}

Result<proto::Account> LoadAccount(const StateStore& state, std::string_view pubkey) {
  return LoadOrDefault<proto::Account>(state, AccountKey(pubkey));
}

void StoreAccount(StateStore& state, std::string_view pubkey, const proto::Account& account) {
  StoreOrDelete(state, AccountKey(pubkey), account);
}

Result<proto::StakeRecord> LoadStake(const StateStore& state, proto::Role role, std::string_view pubkey) {
  return LoadOrDefault<proto::StakeRecord>(state, StakeKey(role, pubkey));
}

void StoreStake(StateStore& state, proto::Role role, std::string_view pubkey, const proto::StakeRecord& stake) {
  StoreOrDelete(state, StakeKey(role, pubkey), stake);
}

Result<proto::Jackpot> LoadJackpot(const StateStore& state) {
  return LoadOrDefault<proto::Jackpot>(state, kJackpotKey);
}

void StoreJackpot(StateStore& state, const proto::Jackpot& jackpot) {
  StoreOrDelete(state, std::string(kJackpotKey), jackpot);
}

Result<proto::VerifierSet> LoadVerifierSet(const StateStore& state) {
  return LoadOrDefault<proto::VerifierSet>(state, kVerifiersKey);
}

void StoreVerifierSet(StateStore& state, const proto::VerifierSet& set) {
  StoreOrDelete(state, std::string(kVerifiersKey), set);
}

Result<proto::Task> LoadTask(const StateStore& state, std::string_view task_id) {
  const std::string key = TaskKey(task_id);
  POLNODE_ASSIGN_OR_RETURN(auto bytes, state.Get(key));
  if (!bytes.has_value()) return Status::NotFound("no task " + ToHex(task_id));
  proto::Task task;
  POLNODE_RETURN_IF_ERROR(DecodeRecord(*bytes, key, task));
  return task;
}

void StoreTask(StateStore& state, const proto::Task& task) { state.Put(TaskKey(task.id()), EncodeRecord(task)); }

Result<proto::DueList> LoadDueList(const StateStore& state, std::uint64_t height) {
  return LoadOrDefault<proto::DueList>(state, DueKey(height));
}

void StoreDueList(StateStore& state, std::uint64_t height, const proto::DueList& list) {
  StoreOrDelete(state, DueKey(height), list);
}

Result<proto::DisputeGame> LoadGame(const StateStore& state, std::string_view task_id, std::string_view challenger) {
  const std::string key = GameKey(task_id, challenger);
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> bytes, state.Get(key));
  if (!bytes) {
    return Status::NotFound("no dispute game of challenger " + ToHex(challenger) + " on task " + ToHex(task_id));
  }
  proto::DisputeGame game;
  POLNODE_RETURN_IF_ERROR(DecodeRecord(*bytes, key, game));
  return game;
}

void StoreGame(StateStore& state, const proto::DisputeGame& game) {
  state.Put(GameKey(game.task_id(), game.challenger().key()), EncodeRecord(game));
}

std::vector<std::string> GameChallengers(const proto::Task& task) {
  std::vector<std::string> challengers;
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (std::find(challengers.begin(), challengers.end(), slot.verifier()) == challengers.end()) {
      challengers.push_back(slot.verifier());
    }
  }
  for (const proto::Challenge& challenge : task.challenges()) challengers.push_back(challenge.challenger());
  return challengers;
}

Result<std::optional<std::string>> LoadSpecOwner(const StateStore& state, std::string_view spec_hash) {
  const std::string key = SpecKey(spec_hash);
  POLNODE_ASSIGN_OR_RETURN(std::optional<std::string> bytes, state.Get(key));
  if (!bytes) return std::optional<std::string>();
  proto::SpecIndex index;
  POLNODE_RETURN_IF_ERROR(DecodeRecord(*bytes, key, index));
  return std::optional<std::string>(index.task_id());
}

void StoreSpecOwner(StateStore& state, std::string_view spec_hash, std::string_view task_id) {
  proto::SpecIndex index;
  index.set_task_id(std::string(task_id));
  StoreOrDelete(state, SpecKey(spec_hash), index);
}

Result<proto::PublishedCheckpoint> LoadPublished(const StateStore& state, std::string_view task_id,
                                                 std::uint64_t checkpoint) {
  return LoadOrDefault<proto::PublishedCheckpoint>(state, PublishKey(task_id, checkpoint));
}

void StorePublished(StateStore& state, std::string_view task_id, std::uint64_t checkpoint,
                    const proto::PublishedCheckpoint& published) {
  StoreOrDelete(state, PublishKey(task_id, checkpoint), published);
}

Result<proto::RevealedCheckpoints> LoadRevealed(const StateStore& state, std::string_view task_id) {
  return LoadOrDefault<proto::RevealedCheckpoints>(state, RevealKey(task_id));
}

void StoreRevealed(StateStore& state, std::string_view task_id, const proto::RevealedCheckpoints& revealed) {
  StoreOrDelete(state, RevealKey(task_id), revealed);
}

}  // namespace polnode::contracts
