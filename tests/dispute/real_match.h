// One disputed verdict of a real task, played through the ledger: the task is posted on a
// contracts test Chain (TaskFlow's cast), proven by an honest or a cheating solver, verified,
// disputed and revealed; then two verifier::DisputePlayers, one honest and one dishonest, post
// every move of the game until it is decided.
#ifndef POLNODE_TESTS_DISPUTE_REAL_MATCH_H_
#define POLNODE_TESTS_DISPUTE_REAL_MATCH_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "polnode/kernels/backend.h"
#include "polnode/testing/task_flow.h"
#include "polnode/verifier/dispute_player.h"
#include "real_task.h"

namespace polnode::dispute_testing {

using contracts::PubKey;

enum class Scenario {
  kCheatingSolverDisputesReject,  // tampered proof; an honest verifier rejects; the solver disputes
  kLazyVerifierAcceptedCheat,     // tampered proof; the verifiers accepted; an honest whistleblower challenges
  kLazyVerifierRejectedHonest,    // honest proof; the verifier rejected and defends that with a lie
};

struct MatchOptions {
  Scenario scenario = Scenario::kCheatingSolverDisputesReject;
  solver::TaskSpec task;
  /// The solver's cheat (the proof is trained through it), or in kLazyVerifierRejectedHonest the
  /// verifier's lie. The dishonest party's player replays with it, to stay consistent.
  solver::TamperSpec tamper;
  /// Build both players afresh before every round, as daemons restarting between polls would.
  bool restart_players = false;
  /// The backend the proof is trained and the players replay on ("reference" or "cpu"; the
  /// bits are the same, the cpu backend is faster for the large models).
  std::string backend = "reference";
  /// A proof proven beforehand (it must outlive the match, and be honest or carry this tamper),
  /// with the segments an honest replay finds wrong; else Setup proves and checks one.
  const Proof* proof = nullptr;
  std::vector<std::uint64_t> proof_failed_segments;
};

/// What the game cost on the ledger.
struct MatchStats {
  int rounds = 0;                  // blocks that carried moves
  int posted = 0;                  // moves sent, a refused second referee move included
  std::size_t posted_bytes = 0;
  int recorded = 0;                // moves the game record holds
  std::size_t recorded_bytes = 0;  // their payloads
  std::size_t referee_bytes = 0;   // the deciding referee move's payload
  std::size_t max_move_bytes = 0;  // the largest payload posted
  int tile_rounds = 0;             // rounds inside the disputed operator's output
  int chain_rounds = 0;            // rounds along the disputed tile's chain
  double referee_ms = 0;           // the block that carried the deciding referee move
};

class RealMatch {
 public:
  /// `data` must outlive the match.
  RealMatch(const solver::ImageDataset& data, MatchOptions options);

  /// Proves (unless the options hold a proof), submits, verifies, disputes and reveals: afterwards the game is opening.
  void Setup();
  /// Plays from where the game stands until it is decided (or reaches phase `until`, before
  /// anyone moves in it), sending every move through the ledger. Fails the test when a player
  /// errs, a move is refused, or nobody moves.
  void Play(int max_rounds = 64, proto::GamePhase until = proto::GAME_RESOLVED);
  /// Sends `moves` (signer, move) in one block and returns the ledger's results.
  contracts::BlockResult Post(const std::vector<std::pair<PubKey, proto::DisputeMoveTx>>& moves);
  /// The decided game narrowed down to the tamper's segment and step (the state before it agreed,
  /// after it disputed) and to the tampered output's leaf in `graph`, the task's step graph.
  void ExpectPinpointed(const solver::StepGraph& graph);
  /// Plays the game to its end (Play), reports it as `name` (Report) and checks what every game
  /// over a tampered operator output shows: pinpointed at the tamper (ExpectPinpointed on `graph`),
  /// ruled on a leaf for the honest party against the dishonest one. Returns the decided game; the
  /// caller stops when ::testing::Test::HasFatalFailure().
  proto::DisputeGame PlayToRuling(const char* name, const solver::StepGraph& graph);
  /// The auditor's re-execution of the decided game (contracts::AuditGame, what `polnode dispute
  /// replay` runs) agrees with the ledger's record, reaches its result and names operator `node`;
  /// each referee move Play sent, re-executed in place of the deciding one, agrees too.
  void ExpectAuditAgrees(std::string_view node);
  /// Prints the stats (for the lead's report) and records them as test properties.
  void Report(const char* name) const;

  /// The context of a player for `key` as the scenario casts it: honest (its suspects are the
  /// segments an honest replay found wrong), or replaying with the tamper.
  verifier::PlayerContext ContextFor(const PubKey& key, bool honest) const;

  proto::DisputeGame Game();
  proto::Task LedgerTask() const { return flow_.task(); }
  contracts::testing::TaskFlow& flow() { return flow_; }
  const PubKey& honest() const { return honest_.key; }
  const PubKey& dishonest() const { return dishonest_.key; }
  const PubKey& disputed_verifier() const { return verifier_; }
  const MatchStats& stats() const { return stats_; }
  /// The referee moves Play sent, in order: the first decided the game, the second was refused.
  const std::vector<std::pair<PubKey, proto::DisputeMoveTx>>& referee_moves() const { return referee_moves_; }
  const Proof& proof() const { return *proof_; }
  /// Whether the proof is wrong (the solver cheated).
  bool proof_wrong() const { return options_.scenario != Scenario::kLazyVerifierRejectedHonest; }
  /// The segments an honest full replay finds wrong.
  const std::vector<std::uint64_t>& failed_segments() const { return failed_; }

 private:
  struct Party {
    PubKey key{};
    bool honest = true;
    std::optional<verifier::DisputePlayer> player;
  };
  void MakePlayers();

  const solver::ImageDataset& data_;
  MatchOptions options_;
  std::unique_ptr<kernels::Backend> backend_;
  contracts::testing::TaskFlow flow_;
  std::unique_ptr<Proof> owned_proof_;
  const Proof* proof_ = nullptr;
  std::vector<std::uint64_t> failed_;
  PubKey verifier_{};
  PubKey challenger_{};  // names the game: the disputed verifier or the whistleblower
  Party honest_, dishonest_;
  MatchStats stats_;
  std::vector<std::pair<PubKey, proto::DisputeMoveTx>> referee_moves_;
};

}  // namespace polnode::dispute_testing

#endif  // POLNODE_TESTS_DISPUTE_REAL_MATCH_H_
