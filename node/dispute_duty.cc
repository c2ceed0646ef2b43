#include "dispute_duty.h"

#include <filesystem>

#include "proof_http.h"
#include "polnode/consensus/hex.h"
#include "polnode/contracts/payloads.h"
#include "polnode/solver/blob_store.h"
#include "polnode/solver/train_state.h"
#include "polnode/verifier/dispute_player.h"

namespace polnode::node {

struct DisputeDuty::State {
  DisputeParty party;
  std::optional<solver::ProofManifest> manifest;
  std::optional<solver::BlobStore> store;
  std::optional<verifier::DisputePlayer> player;
};

DisputeDuty::DisputeDuty(DisputeParty party) : state_(std::make_unique<State>()) { state_->party = std::move(party); }
DisputeDuty::~DisputeDuty() = default;
DisputeDuty::DisputeDuty(DisputeDuty&&) noexcept = default;
DisputeDuty& DisputeDuty::operator=(DisputeDuty&&) noexcept = default;

Result<int> DisputeDuty::Poll(RoleContext& ctx, const proto::Task& task) {
  POLNODE_ASSIGN_OR_RETURN(GamesView view, ctx.ledger().Games(task.id()));
  int sent = 0;
  for (const proto::DisputeGame& game : view.games) {
    if (game.phase() == proto::GAME_RESOLVED) continue;
    if (game.challenger().key() != ctx.pubkey() && game.defender().key() != ctx.pubkey()) continue;
    if (!state_->player) {
      State& s = *state_;
      consensus::Hash256 root{};
      if (view.task.proof_root().size() != root.size()) return Status::FailedPrecondition("the disputed task has no proof root");
      std::copy(view.task.proof_root().begin(), view.task.proof_root().end(), root.begin());
      const std::string uri(view.task.proof_uri());
      // An unreachable proof server is not the ledger going away: report it as this pass's error.
      Result<solver::ProofManifest> manifest = FetchManifest(uri, root);
      if (!manifest.ok()) return Status::FailedPrecondition("cannot fetch the disputed proof: " + manifest.status().ToString());
      s.manifest = std::move(*manifest);
      POLNODE_ASSIGN_OR_RETURN(s.store, solver::BlobStore::Open(s.party.cache_dir + "/blobs"));
      verifier::PlayerContext context;
      context.task = &s.party.document;
      context.data = s.party.data;
      context.backend = s.party.backend;
      context.key = ctx.pubkey();
      context.checkpoint_hashes = s.manifest->checkpoint_hashes;
      context.suspect_segments = s.party.suspect_segments;
      context.responder_options.tamper = s.party.tamper;
      State* state = state_.get();
      context.load_checkpoint = [state, uri](std::uint64_t checkpoint) -> Result<solver::TrainState> {
        if (checkpoint >= state->manifest->checkpoint_blobs.size()) return Status::OutOfRange("no such checkpoint");
        const consensus::Hash256& blob = state->manifest->checkpoint_blobs[checkpoint];
        POLNODE_RETURN_IF_ERROR(FetchBlob(uri, blob, *state->store));
        POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, state->store->Get(blob));
        return solver::DecodeState(bytes);
      };
      POLNODE_ASSIGN_OR_RETURN(verifier::DisputePlayer player, verifier::DisputePlayer::Create(std::move(context)));
      s.player.emplace(std::move(player));
    }
    POLNODE_ASSIGN_OR_RETURN(std::optional<proto::DisputeMoveTx> move, state_->player->NextMove(view.task, game));
    if (!move) continue;
    const std::string duty = "move-" + consensus::ToHex(task.id()).substr(0, 16) + "-" + consensus::ToHex(game.verifier()).substr(0, 16) + "-" +
                             std::to_string(game.round());
    std::string payload;
    move->SerializeToString(&payload);
    const std::size_t bytes = payload.size();
    POLNODE_ASSIGN_OR_RETURN(DutyState state, ctx.SendDuty(duty, contracts::payload::kDisputeMove, std::move(payload)));
    if (state != DutyState::kSent) continue;
    ++sent;
    ctx.metrics().Add("dispute_moves_total");
    ctx.metrics().Add("dispute_move_bytes_total", static_cast<double>(bytes));
    const bool challenger = game.challenger().key() == ctx.pubkey();
    ctx.log().Event("dispute_move", {{"task", consensus::ToHex(task.id())},
                                     {"verifier", consensus::ToHex(game.verifier())},
                                     {"as", challenger ? "challenger" : "defender"},
                                     {"phase", proto::GamePhase_Name(game.phase())},
                                     {"round", std::to_string(game.round())},
                                     {"bytes", std::to_string(bytes)}});
  }
  return sent;
}

}  // namespace polnode::node
