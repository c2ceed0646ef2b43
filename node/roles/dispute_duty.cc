#include "polnode/roles/dispute_duty.h"

#include <algorithm>
#include <filesystem>

#include "polnode/consensus/hex.h"
#include "polnode/contracts/payloads.h"
#include "polnode/roles/submitter_model.h"
#include "polnode/rpc/proof_http.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/train_state.h"
#include "polnode/verifier/dispute_player.h"

namespace polnode::node {

struct DisputeDuty::State {
  DisputeParty party;
  std::optional<solver::ProofManifest> manifest;
  std::optional<solver::BlobStore> store;
  std::optional<verifier::DisputePlayer> player;
  std::string prepared_root;  // the proof root the player was built for
};

DisputeParty DaemonParty(const RoleContext& ctx, solver::TaskSpec document, const solver::ImageDataset* data,
                         kernels::Backend* backend) {
  DisputeParty party;
  party.document = std::move(document);
  party.data = data;
  party.backend = backend;
  party.cache_dir = ctx.home() + "/cache";
  party.ledger = &ctx.ledger();
  return party;
}

DisputeDuty::DisputeDuty(DisputeParty party) : state_(std::make_unique<State>()) { state_->party = std::move(party); }
DisputeDuty::~DisputeDuty() = default;
DisputeDuty::DisputeDuty(DisputeDuty&&) noexcept = default;
DisputeDuty& DisputeDuty::operator=(DisputeDuty&&) noexcept = default;

namespace {

Result<consensus::Hash256> Hash32(const std::string& raw, std::string_view what) {
  consensus::Hash256 hash{};
  if (raw.size() != hash.size()) return Status::FailedPrecondition(std::string(what) + " is not 32 bytes");
  std::copy(raw.begin(), raw.end(), hash.begin());
  return hash;
}

}  // namespace

Status DisputeDuty::Prepare(RoleContext& ctx, const proto::Task& task, const proto::DisputeGame& game) {
  State& s = *state_;
  // Segments start from the committed proof's checkpoints (what the solver serves at proof_uri and
  // trained on from) and end at the proof on trial's: after a forced round's reveal the result
  // proof, the committed one with the forced checkpoints restored, served beside it.
  const std::string& start_raw = game.start_root().empty() ? game.proof_root() : game.start_root();
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 committed, Hash32(start_raw, "the game's start root"));
  POLNODE_ASSIGN_OR_RETURN(consensus::Hash256 on_trial, Hash32(game.proof_root(), "the game's proof root"));
  const std::string uri(task.proof_uri());
  // An unreachable proof server is not the ledger going away: report it as this pass's error.
  Result<solver::ProofManifest> manifest = FetchManifest(ctx.fetch_policy(), uri, committed);
  // Data availability is the solver's burden: a solver whose server is down after it published
  // checkpoints is challenged from the ledger's copies (after a forced round's reveal, with the
  // revealed result proofs for the segments' ends). Its defence has only its own data.
  if (!manifest.ok() && game.challenger().key() == ctx.pubkey() && s.party.ledger != nullptr &&
      !task.published().empty()) {
    return PrepareFromLedger(ctx, task, game, on_trial != committed);
  }
  if (!manifest.ok()) return Status::FailedPrecondition("cannot fetch the disputed proof: " + manifest.status().ToString());
  s.manifest = std::move(*manifest);
  POLNODE_ASSIGN_OR_RETURN(s.store, solver::BlobStore::Open(s.party.cache_dir + "/blobs"));
  verifier::PlayerContext context;
  context.task = &s.party.document;
  context.data = s.party.data;
  context.backend = s.party.backend;
  context.key = ctx.pubkey();
  context.checkpoint_hashes = s.manifest->checkpoint_hashes;
  if (on_trial != committed) {
    POLNODE_ASSIGN_OR_RETURN(std::string result_uri, ResultProofUri(uri, game.proof_root()));
    Result<solver::ProofManifest> result = FetchManifest(ctx.fetch_policy(), result_uri, on_trial);
    if (!result.ok()) return Status::FailedPrecondition("cannot fetch the result proof: " + result.status().ToString());
    context.start_hashes = s.manifest->checkpoint_hashes;
    context.checkpoint_hashes = result->checkpoint_hashes;
  }
  context.suspect_segments = s.party.suspect_segments;
  context.responder_options.tamper = s.party.tamper;
  State* state = state_.get();
  const LedgerClient* ledger = s.party.ledger;
  const proto::Task task_record = task;
  // A replay starts from a checkpoint of the committed proof (never the final one): from the
  // solver's server, or as the solver published it on the ledger.
  context.load_checkpoint = [state, uri, ledger, task_record, fetch = ctx.fetch_policy()](
                                std::uint64_t checkpoint) -> Result<solver::TrainState> {
    if (checkpoint >= state->manifest->checkpoint_blobs.size()) return Status::OutOfRange("no such checkpoint");
    const consensus::Hash256& blob = state->manifest->checkpoint_blobs[checkpoint];
    Status fetched = FetchBlob(fetch, uri, blob, *state->store);
    const auto& published = task_record.published();
    if (!fetched.ok() && ledger != nullptr &&
        std::find(published.begin(), published.end(), checkpoint) != published.end()) {
      return ledger->PublishedState(task_record, checkpoint);
    }
    POLNODE_RETURN_IF_ERROR(fetched);
    POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, state->store->Get(blob));
    return solver::DecodeState(bytes);
  };
  POLNODE_ASSIGN_OR_RETURN(verifier::DisputePlayer player, verifier::DisputePlayer::Create(std::move(context)));
  s.player.emplace(std::move(player));
  s.prepared_root = game.proof_root();
  return Status::Ok();
}

Status DisputeDuty::PrepareFromLedger(RoleContext& ctx, const proto::Task& task, const proto::DisputeGame& game,
                                      bool forced) {
  State& s = *state_;
  const LedgerClient* ledger = s.party.ledger;
  verifier::PlayerContext context;
  context.task = &s.party.document;
  context.data = s.party.data;
  context.backend = s.party.backend;
  context.key = ctx.pubkey();
  const std::size_t checkpoints = static_cast<std::size_t>(s.party.document.checkpoint_count());
  context.checkpoint_hashes.assign(checkpoints, consensus::Hash256{});
  // Published checkpoints are of the committed proof: a forced round's segments start there and
  // end at the result proof, whose checkpoints the reveal showed.
  if (forced) context.start_hashes.assign(checkpoints, consensus::Hash256{});
  std::vector<consensus::Hash256>& published_hashes = forced ? context.start_hashes : context.checkpoint_hashes;
  for (std::uint64_t checkpoint : task.published()) {
    POLNODE_ASSIGN_OR_RETURN(proto::PublishedCheckpoint published, ledger->Published(task.id(), checkpoint));
    // A checkpoint whose elements are not all on the ledger cannot start a replay.
    const auto& verified = published.verified();
    const bool complete = published.tensors_size() > 0 && verified.size() == published.tensors_size() &&
                          std::all_of(verified.begin(), verified.end(), [](bool v) { return v; });
    if (!complete) continue;
    if (checkpoint >= checkpoints) {
      return Status::FailedPrecondition("the ledger published checkpoint " + std::to_string(checkpoint) +
                                        " of a proof with fewer");
    }
    POLNODE_ASSIGN_OR_RETURN(published_hashes[checkpoint], Hash32(published.state_hash(), "a published state hash"));
    context.start_proofs[checkpoint] = published.proof();
  }
  if (context.start_proofs.empty()) {
    return Status::FailedPrecondition("the proof server does not answer and no checkpoint is completely published");
  }
  if (!forced) {
    context.end_proofs = context.start_proofs;
  } else {
    POLNODE_ASSIGN_OR_RETURN(proto::RevealedCheckpoints revealed, ledger->Revealed(task.id()));
    for (const proto::RevealedLeaf& leaf : revealed.leaves()) {
      if (leaf.checkpoint() >= checkpoints) {
        return Status::FailedPrecondition("the ledger revealed checkpoint " + std::to_string(leaf.checkpoint()) +
                                          " of a proof with fewer");
      }
      POLNODE_ASSIGN_OR_RETURN(context.checkpoint_hashes[leaf.checkpoint()],
                               Hash32(leaf.result_hash(), "a revealed result hash"));
      context.end_proofs[leaf.checkpoint()] = leaf.result_proof();
    }
    if (context.end_proofs.empty()) return Status::FailedPrecondition("the ledger holds no revealed checkpoint");
  }
  context.suspect_segments = s.party.suspect_segments;
  context.responder_options.tamper = s.party.tamper;
  const proto::Task task_record = task;
  context.load_checkpoint = [ledger, task_record](std::uint64_t checkpoint) -> Result<solver::TrainState> {
    return ledger->PublishedState(task_record, checkpoint);
  };
  POLNODE_ASSIGN_OR_RETURN(verifier::DisputePlayer player, verifier::DisputePlayer::Create(std::move(context)));
  s.player.emplace(std::move(player));
  s.prepared_root = game.proof_root();
  ctx.log().Event("dispute_from_ledger", {{"task_id", consensus::ToHex(task.id())},
                                          {"published", std::to_string(task.published_size())},
                                          {"forced", forced ? "true" : "false"}});
  return Status::Ok();
}

Result<int> DisputeDuty::Poll(RoleContext& ctx, const proto::Task& task) {
  POLNODE_ASSIGN_OR_RETURN(contracts::TaskGames view, ctx.ledger().Games(task.id()));
  int sent = 0;
  for (const proto::DisputeGame& game : view.games) {
    if (game.phase() == proto::GAME_RESOLVED) continue;
    if (game.challenger().key() != ctx.pubkey() && game.defender().key() != ctx.pubkey()) continue;
    // Every game of a task is over the same proofs (games start after the reveal).
    if (!state_->player || state_->prepared_root != game.proof_root()) POLNODE_RETURN_IF_ERROR(Prepare(ctx, view.task, game));
    POLNODE_ASSIGN_OR_RETURN(std::optional<proto::DisputeMoveTx> move, state_->player->NextMove(view.task, game));
    if (!move) continue;
    const std::string challenger = consensus::ToHex(game.challenger().key());
    const std::string duty = "move-" + consensus::ToHex(task.id()).substr(0, 16) + "-" + challenger.substr(0, 16) + "-" +
                             std::to_string(game.round());
    std::string payload;
    move->SerializeToString(&payload);
    const std::size_t bytes = payload.size();
    POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty(duty, contracts::payload::kDisputeMove, std::move(payload)));
    if (state != DutyState::kSent) continue;
    ++sent;
    ctx.metrics().Add("dispute_moves_total");
    ctx.metrics().Add("dispute_move_bytes_total", static_cast<double>(bytes));
    const bool as_challenger = game.challenger().key() == ctx.pubkey();
    ctx.log().Event("dispute_move", {{"task_id", consensus::ToHex(task.id())},
                                     {"challenger", challenger},
                                     {"as", as_challenger ? "challenger" : "defender"},
                                     {"phase", proto::GamePhase_Name(game.phase())},
                                     {"round", std::to_string(game.round())},
                                     {"bytes", std::to_string(bytes)}});
  }
  return sent;
}

}  // namespace polnode::node
