// The economic simulator (DESIGN.md section 10): many tasks run through the real contracts
// state machine (real transactions, real blocks, real settlement, one jackpot evolving across the
// tasks of one chain), each actor playing a strategy, each replay and each trained segment costed.
//
// The cast of a world: one submitter, one solver, params.verifiers_per_task verifiers (exactly
// enough to fill every task's slots, so each of them verifies every task; verifier 0 is the one
// whose strategy varies), one whistleblower, and two parties that only some worlds use: an owner
// (a submitter key, a solver key and a whistleblower key under one control) and an operator (one
// verifier stake on one key, or split over several). Tasks run one after another; before each,
// every staked actor tops its stake up to the lock the task takes, so a slashed actor pays to
// come back. A world starts as a copy of a chain warmed up by honest tasks (the jackpot near its
// steady state), so worlds that differ in one actor's strategy can be compared task by task.
//
// Dispute games are played with real moves but no model: a party that is wrong about the
// disputed segment stops moving (a rational loser forfeits) and a right challenger (one that
// replayed a segment it named and found the result proof wrong there) opens with Merkle proofs of
// the segment's start in the committed proof and its end in the result proof and makes its first
// bisection move; every result, forfeit and payout comes from the contracts.
#ifndef POLNODE_ECON_SIMULATOR_H_
#define POLNODE_ECON_SIMULATOR_H_

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::econ {

/// How the varying verifier (verifier 0) plays.
enum class VerifierPlay : std::uint8_t {
  kHonest,            // replays its covered segments (its draw and the final one), reports what failed
                      // with a digest of each failed segment's replayed end
  kLazyAccept,        // never replays, always accepts
  kLazyReject,        // never replays, always rejects (naming the final segment, with the proof's own
                      // final state standing in for a replay's in its digest: World::StandIn)
  kAbsent,            // never answers
  kFalseUnavailable,  // says "unavailable" without trying; replays once the solver published
  kFinalOnly,         // replays only the final segment (1 of its Q + 1) and judges on it alone
};

/// How the task's solver plays.
enum class SolverPlay : std::uint8_t {
  kHonest,         // trains every segment; in forced rounds falsifies each forced checkpoint, trains on
                   // from the falsified state, and reveals the result proof
  kFake,           // skips WorldSpec::faked_segments segments (never the final one) and makes up their ends,
                   // in every round (forced rounds falsified as the honest solver does)
  kWithhold,       // commits a random root and serves nothing
  kForcedGarbage,  // honest, except that in forced rounds it trains nothing (random checkpoints) and
                   // reveals random states at the forced checkpoints
  kSkipsForced,    // honest, except that in forced rounds it skips the segments ending at its first
                   // WorldSpec::faked_segments forced checkpoints before the final one: it falsifies
                   // those checkpoints anyway, so it makes up the state it reveals there instead of
                   // training to it
};

/// How the whistleblower plays.
enum class WhistleblowerPlay : std::uint8_t {
  kHonest,         // replays its covered segments (beacon.h ChallengeSegments) on every task, challenges
                   // what fails with a digest of each failed segment's replayed end
  kNeverChecks,    // never replays, never challenges
  kChallengesAll,  // challenges every proof without replaying (naming the final segment)
  kCopycat,        // never replays; challenges naming its covered segments that public rejects named,
                   // with those rejects' digests
  kReplaysNamed,   // replays only its covered segments that public rejects named, challenges what fails
};

/// Who plays what in a world.
struct WorldSpec {
  VerifierPlay verifier = VerifierPlay::kHonest;
  SolverPlay solver = SolverPlay::kHonest;
  std::uint32_t faked_segments = 0;  // SolverPlay::kFake
  WhistleblowerPlay whistleblower = WhistleblowerPlay::kHonest;
  /// The owner posts every task with its submitter key and claims it with its solver key; it
  /// abandons every claim whose round is not forced (it learns that before committing) and, in
  /// forced rounds, trains honestly while its whistleblower key challenges without replaying.
  bool self_dealing = false;
  /// The operator's verifier stake: operator_locks task locks, on one key (operator_keys == 1) or
  /// split evenly over operator_keys keys; no operator when operator_keys == 0. Its keys verify
  /// honestly.
  std::uint32_t operator_keys = 0;
  std::uint32_t operator_locks = 0;

  friend bool operator==(const WorldSpec&, const WorldSpec&) = default;
};

/// The parties whose payoffs a world records.
enum class Party : std::uint8_t {
  kSubmitter,
  kSolver,
  kVerifier,        // verifier 0
  kOtherVerifiers,  // verifiers 1..n-1 together
  kWhistleblower,
  kOwner,     // WorldSpec::self_dealing: all three keys together
  kOperator,  // WorldSpec::operator_keys: all keys together
};
inline constexpr std::size_t kPartyCount = 7;

/// What one task did to one party.
struct PartyTask {
  std::int64_t money = 0;                // change of its balances and stakes, fees and slashes included
  std::uint64_t segments_replayed = 0;   // verification work done
  std::uint64_t segments_trained = 0;    // training work done
};

/// One task of a world.
struct TaskRecord {
  std::array<PartyTask, kPartyCount> parties{};
  bool forced = false;
  /// The forced checkpoints the reveal showed (Task.forced_checkpoints: those some verdict or
  /// challenge covered, and the final one when forced), ascending.
  std::vector<std::uint64_t> forced_checkpoints;
  proto::TaskOutcome outcome = proto::OUTCOME_NONE;
  std::uint64_t jackpot_after = 0;

  const PartyTask& of(Party p) const { return parties[static_cast<std::size_t>(p)]; }
};

/// The shape of the simulated tasks and the length of a run.
struct SimConfig {
  proto::Params params;                  // genesis params
  std::uint64_t payment = 100'000;
  std::uint64_t segments = 16;           // S
  std::uint64_t checkpoint_interval = 4;  // k (> 1, so games bisect steps)
  std::uint32_t segments_per_verification = 2;  // Q
  /// Tolerant-mode tasks (TaskSpec.tolerant): a forced round perturbs a few elements of each forced
  /// checkpoint by +-forced_delta (consensus/forced_perturbation.h) instead of replacing its state,
  /// and a failed segment's digest commits to the elements a replay finds beyond forced_delta / 2
  /// instead of to the replayed state's hash. Forced checkpoints are drawn as in exact mode.
  bool tolerant = false;
  /// TaskSpec.forced_delta of tolerant tasks (exact tasks have none), in [2^-12, 2^-3): above the
  /// simulated replay error (none: a modelled replay is exact) and below what a segment moves a
  /// value (two simulated states differ by at least 1/16 wherever they differ), where a task's
  /// profile must place it.
  float forced_delta = 1.0f / 1024.0f;
  std::uint64_t warmup_tasks = 100;      // honest tasks before the worlds fork
  std::uint64_t tasks = 400;             // tasks per world
  std::uint64_t seed = 1;
};

/// The money of a task of SimConfig::payment under the params: escrow after the jackpot cut, the
/// fee each verifier whose verdict agrees with the outcome earns (f), the solver's pay, the locks.
struct TaskMoney {
  std::uint64_t escrow = 0;
  std::uint64_t verifier_fee = 0;
  std::uint64_t solver_pay = 0;
  std::uint64_t solver_lock = 0;
  std::uint64_t verifier_lock = 0;
  std::uint64_t whistleblower_lock = 0;
};
TaskMoney MoneyOf(const proto::Params& params, std::uint64_t payment);

/// A chain with the genesis and the warm-up of a SimConfig, from which worlds fork.
class Simulator {
 public:
  /// kInvalidArgument for a config the contracts or the cast cannot run (params that fail
  /// ValidateParams, k < 2, Q > S, a tolerant forced_delta outside [2^-12, 2^-3)); otherwise runs
  /// the warm-up.
  [[nodiscard]] static Result<Simulator> Create(const SimConfig& config);

  Simulator(Simulator&&) noexcept;
  Simulator& operator=(Simulator&&) noexcept;
  ~Simulator();

  /// Runs config.tasks tasks of a world forked from the warm chain; one record per task.
  [[nodiscard]] Result<std::vector<TaskRecord>> Run(const WorldSpec& spec) const;

  const SimConfig& config() const;

 private:
  struct State;
  explicit Simulator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace polnode::econ

#endif  // POLNODE_ECON_SIMULATOR_H_
