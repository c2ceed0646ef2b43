#include "real_match.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <span>
#include <string>

#include "polnode/consensus/hex.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts/dispute_audit.h"
#include "polnode/contracts/payloads.h"
#include "polnode/solver/pinpoint_graph.h"

namespace polnode::dispute_testing {
namespace {

using contracts::testing::Raw;

PubKey KeyOf(const std::string& raw) {
  PubKey key{};
  std::copy_n(raw.begin(), std::min(raw.size(), key.size()), key.begin());
  return key;
}

}  // namespace

RealMatch::RealMatch(const solver::ImageDataset& data, MatchOptions options)
    : data_(data), options_(std::move(options)) {
  Result<std::unique_ptr<kernels::Backend>> backend = kernels::MakeBackend(options_.backend, 2);
  EXPECT_TRUE(backend.ok()) << backend.status().ToString();
  backend_ = backend.ok() ? std::move(*backend) : kernels::MakeReferenceBackend();
}

void RealMatch::Setup() {
  if (options_.proof != nullptr) {
    proof_ = options_.proof;
    failed_ = options_.proof_failed_segments;
  } else {
    owned_proof_ = std::make_unique<Proof>(
        ProveTask(options_.task, data_, proof_wrong() ? std::optional<solver::TamperSpec>(options_.tamper) : std::nullopt,
                  backend_.get()));
    proof_ = owned_proof_.get();
    failed_ = FailedSegments(options_.task, data_, *proof_, backend_.get());
  }
  const std::uint64_t tampered_segment =
      static_cast<std::uint64_t>(options_.tamper.step / options_.task.checkpoint_interval);
  if (proof_wrong()) {
    // Only the tampered segment is wrong: later ones replay correctly from the forged checkpoints.
    ASSERT_EQ(failed_, std::vector<std::uint64_t>{tampered_segment}) << "the cheat must reach the proof";
  } else {
    ASSERT_TRUE(failed_.empty());
  }
  flow_.spec = LedgerSpec(options_.task, data_);
  flow_.SetCheckpoints(proof_->manifest.checkpoint_hashes);
  flow_.RunToVerifying();
  const std::vector<PubKey> assigned = flow_.Assigned();
  ASSERT_EQ(assigned.size(), 2u);
  verifier_ = assigned[0];
  // The disputed verifier accepts only in the lazy-accept scenario (and so does the other one
  // there: both lazy); elsewhere it rejects, rightly (a cheat) or wrongly (an honest proof), and
  // the other verifier is honest.
  const bool lazy = options_.scenario == Scenario::kLazyVerifierAcceptedCheat;
  ASSERT_EQ(flow_.Verdict(verifier_, lazy).code, StatusCode::kOk);
  ASSERT_EQ(flow_.Verdict(assigned[1], lazy || failed_.empty()).code, StatusCode::kOk);
  // The solver defends its proof in every game: against each reject it disputes (a cheat disputes
  // them all, or an undisputed one stands), or against the whistleblower that challenges the proof
  // the verifiers accepted.
  if (lazy) {
    ASSERT_EQ(flow_.Challenge(flow_.whistleblower).code, StatusCode::kOk);
    challenger_ = flow_.whistleblower;
  } else {
    for (const PubKey& v : assigned) {
      if (flow_.task().verifiers(v == verifier_ ? 0 : 1).verdict() == proto::VERDICT_REJECT) {
        ASSERT_EQ(flow_.Dispute(v).code, StatusCode::kOk);
      }
    }
    challenger_ = verifier_;
  }
  flow_.AdvancePastDeadline();
  ASSERT_EQ(flow_.Reveal(flow_.proof_root).code, StatusCode::kOk);
  const proto::DisputeGame game = Game();
  ASSERT_EQ(game.phase(), proto::GAME_OPENING);
  // The honest party challenges a wrong proof and defends a right one.
  const PubKey challenger = KeyOf(game.challenger().key());
  const PubKey defender = KeyOf(game.defender().key());
  honest_.key = proof_wrong() ? challenger : defender;
  dishonest_.key = proof_wrong() ? defender : challenger;
  dishonest_.honest = false;
  MakePlayers();
}

verifier::PlayerContext RealMatch::ContextFor(const PubKey& key, bool honest) const {
  verifier::PlayerContext context;
  context.task = &options_.task;
  context.data = &data_;
  context.backend = backend_.get();
  context.key = Raw(key);
  context.checkpoint_hashes = proof_->manifest.checkpoint_hashes;
  context.load_checkpoint = proof_->Loader();
  if (honest) {
    context.suspect_segments = failed_;
  } else {
    context.responder_options.tamper = options_.tamper;
  }
  return context;
}

void RealMatch::MakePlayers() {
  for (Party* party : {&honest_, &dishonest_}) {
    party->player.reset();
    Result<verifier::DisputePlayer> player = verifier::DisputePlayer::Create(ContextFor(party->key, party->honest));
    ASSERT_TRUE(player.ok()) << player.status().ToString();
    party->player.emplace(std::move(*player));
  }
}

proto::DisputeGame RealMatch::Game() {
  // state_store.h: "game/<task id hex>/<challenger hex>".
  Result<std::optional<std::string>> bytes =
      flow_.chain.state().Get("game/" + consensus::ToHex(flow_.task_id) + "/" + consensus::ToHex(Raw(challenger_)));
  proto::DisputeGame game;
  EXPECT_TRUE(bytes.ok() && bytes->has_value() && game.ParseFromString(**bytes));
  return game;
}

void RealMatch::Play(int max_rounds, proto::GamePhase until) {
  for (int round = 0; round < max_rounds; ++round) {
    const proto::DisputeGame game = Game();
    if (game.phase() == proto::GAME_RESOLVED || game.phase() == until) break;
    if (options_.restart_players) MakePlayers();
    const proto::Task task = LedgerTask();
    std::vector<contracts::VerifiedTx> txs;
    // The dishonest party moves first, so that at the referee its evidence is the one that rules.
    for (Party* party : {&dishonest_, &honest_}) {
      Result<std::optional<proto::DisputeMoveTx>> move = party->player->NextMove(task, game);
      ASSERT_TRUE(move.ok()) << (party->honest ? "honest" : "dishonest") << " player in round " << game.round()
                             << ": " << move.status().ToString();
      if (!move->has_value()) continue;
      txs.push_back(flow_.chain.Tx(party->key, contracts::payload::kDisputeMove, **move));
      if ((*move)->has_referee()) referee_moves_.emplace_back(party->key, **move);
      ++stats_.posted;
      stats_.posted_bytes += txs.back().payload.size();
      stats_.max_move_bytes = std::max(stats_.max_move_bytes, txs.back().payload.size());
      EXPECT_LE(txs.back().payload.size(), consensus::kMaxPayloadBytes) << "a move does not fit a transaction";
    }
    ASSERT_FALSE(txs.empty()) << "nobody moved in round " << game.round() << " (phase " << game.phase() << ")";
    const auto started = std::chrono::steady_clock::now();
    const contracts::BlockResult result = flow_.chain.Block(txs);
    const double block_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
    if (game.phase() == proto::GAME_REFEREE) stats_.referee_ms = block_ms;
    if (game.phase() == proto::GAME_TILES) ++stats_.tile_rounds;
    if (game.phase() == proto::GAME_CHAIN) ++stats_.chain_rounds;
    ++stats_.rounds;
    ASSERT_EQ(result.tx_results.size(), txs.size());
    for (std::size_t i = 0; i < txs.size(); ++i) {
      // Both parties post the referee's evidence; the first decides and the second finds the game over.
      const bool late_evidence = game.phase() == proto::GAME_REFEREE && i > 0;
      const StatusCode want = late_evidence ? StatusCode::kFailedPrecondition : StatusCode::kOk;
      EXPECT_EQ(result.tx_results[i].code, want) << "move " << i << " of round " << game.round() << ": "
                                                 << result.tx_results[i].log;
    }
  }
  const proto::DisputeGame game = Game();
  if (until != proto::GAME_RESOLVED && game.phase() == until) return;
  ASSERT_EQ(game.phase(), proto::GAME_RESOLVED) << "undecided after " << max_rounds << " rounds";
  stats_.recorded = game.moves_size();
  stats_.recorded_bytes = 0;
  for (const proto::MoveRecord& m : game.moves()) stats_.recorded_bytes += m.payload().size();
  if (game.moves_size() > 0) stats_.referee_bytes = game.moves(game.moves_size() - 1).payload().size();
}

contracts::BlockResult RealMatch::Post(const std::vector<std::pair<PubKey, proto::DisputeMoveTx>>& moves) {
  std::vector<contracts::VerifiedTx> txs;
  for (const auto& [signer, move] : moves) txs.push_back(flow_.chain.Tx(signer, contracts::payload::kDisputeMove, move));
  return flow_.chain.Block(txs);
}

void RealMatch::ExpectPinpointed(const solver::StepGraph& graph) {
  const proto::DisputeGame game = Game();
  const solver::TamperSpec& t = options_.tamper;
  EXPECT_EQ(game.segment(), static_cast<std::uint64_t>(t.step / options_.task.checkpoint_interval));
  EXPECT_EQ(game.first_step() + game.lo(), static_cast<std::uint64_t>(t.step));
  EXPECT_EQ(game.hi(), game.lo() + 1);
  EXPECT_EQ(game.leaf(), solver::StepLeafLayout(graph).first_output_leaf(t.node) + static_cast<std::uint64_t>(t.output));
}

proto::DisputeGame RealMatch::PlayToRuling(const char* name, const solver::StepGraph& graph) {
  Play();
  if (::testing::Test::HasFatalFailure()) return Game();
  Report(name);
  const proto::DisputeGame game = Game();
  ExpectPinpointed(graph);
  EXPECT_TRUE(game.ruling().starts_with("leaf ")) << game.ruling();
  EXPECT_EQ(game.winner(), Raw(honest())) << game.ruling();
  EXPECT_EQ(game.loser(), Raw(dishonest()));
  EXPECT_EQ(game.challenger_won(), proof_wrong());
  return game;
}

void RealMatch::ExpectAuditAgrees(std::string_view node) {
  const proto::DisputeGame game = Game();
  const proto::Task task = LedgerTask();
  Result<contracts::GameAudit> audit = contracts::AuditGame(flow_.chain.params(), task, game);
  ASSERT_TRUE(audit.ok()) << audit.status().ToString();
  EXPECT_TRUE(audit->differences.empty()) << audit->differences.front();
  EXPECT_TRUE(audit->decided);
  EXPECT_EQ(audit->result, proof_wrong() ? proto::GAME_CHALLENGER_WON : proto::GAME_DEFENDER_WON);
  ASSERT_TRUE(audit->node.has_value());
  EXPECT_EQ(audit->node->name(), node);
  // Both parties posted evidence; the ledger ruled on the first and refused the second as late.
  // Re-executed in its place, the other party's evidence passes the referee's checks and gets
  // the same ruling.
  ASSERT_EQ(referee_moves_.size(), 2u);
  for (const auto& [signer, move] : referee_moves_) {
    proto::DisputeGame swapped = game;
    proto::MoveRecord& last = *swapped.mutable_moves(swapped.moves_size() - 1);
    last.set_signer(Raw(signer));
    last.set_payload(move.SerializeAsString());
    Result<contracts::GameAudit> again = contracts::AuditGame(flow_.chain.params(), task, swapped);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_TRUE(again->differences.empty()) << again->differences.front();
  }
}

void RealMatch::Report(const char* name) const {
  std::cout << "[dispute] " << name << ": " << stats_.rounds << " rounds, " << stats_.recorded << " moves recorded ("
            << stats_.recorded_bytes << " bytes), " << stats_.posted << " posted (" << stats_.posted_bytes
            << " bytes), referee move " << stats_.referee_bytes << " bytes, largest move " << stats_.max_move_bytes
            << " bytes, " << stats_.tile_rounds << " tile and " << stats_.chain_rounds << " chain rounds\n";
  ::testing::Test::RecordProperty("rounds", stats_.rounds);
  ::testing::Test::RecordProperty("moves_recorded", stats_.recorded);
  ::testing::Test::RecordProperty("bytes_recorded", static_cast<int>(stats_.recorded_bytes));
  ::testing::Test::RecordProperty("moves_posted", stats_.posted);
  ::testing::Test::RecordProperty("bytes_posted", static_cast<int>(stats_.posted_bytes));
  ::testing::Test::RecordProperty("referee_bytes", static_cast<int>(stats_.referee_bytes));
}

}  // namespace polnode::dispute_testing
