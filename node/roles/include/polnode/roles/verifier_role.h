// `polnode verifier`: the daemon of an assigned verifier (DESIGN.md section 5, docs/protocol.md).
// Each pass over the ledger it
//   - keeps its verifier stake bonded (by default enough for four assignments at once);
//   - for every task in TASK_VERIFYING with slots for its key and no verdict yet (slots are drawn
//     by stake with replacement, so a key may hold several of one task), checks the committed
//     proof on a worker thread, one task at a time (verification_job.h: one replay of the union of
//     those slots' segments plus the final one, from the solver's server or, once the solver
//     published them, from the ledger), and for each slot writes the evidence to
//     DIR/reports/<task hex>-<slot>[-published].json and the VerdictTx beside it (.verdict), and
//     posts the VerdictTx naming the slot: accept, reject naming the slot's failed segments, or
//     unavailable when the proof's data could not be had; a reject commits to what each failed
//     segment's replay found (beacon.h SegmentDigest: the end state's hash in exact mode, the
//     elements beyond forced_delta / 2 in tolerant mode), which a forced round's reveal checks;
//     a tolerant task whose forced_delta this machine's replays cannot resolve is declined (no
//     verdict, never retried: verification_job.h CheckForcedDeltaFits);
//   - challenges the solver's proof in the game over its disputed reject verdicts (one game per
//     key, dispute_duty.h) while a task is TASK_DISPUTED.
// Restarts: a verdict saved on disk is posted from it (the journal keeps it from being posted
// twice), and a check that was cut short simply runs again.
//
// `--lazy` makes it the devnet's lazy verifier: it posts accept at once without fetching or
// replaying anything, so a forced error or a disproven segment among its own costs it its lock.
#ifndef POLNODE_ROLES_VERIFIER_ROLE_H_
#define POLNODE_ROLES_VERIFIER_ROLE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "polnode/kernels/backend.h"
#include "polnode/roles/dispute_duty.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/roles/verification_job.h"

namespace polnode::node {

struct VerifierOptions {
  bool lazy = false;
  std::uint64_t stake = 0;  // free verifier stake to keep; 0: 4 x params.min_stake_verifier
  std::string backend = "cpu";
  int threads = 1;
  DataCache::Loader loader;  // a task document's data (solver::LoadTaskData in the daemon)
};

class VerifierRole final : public Role {
 public:
  explicit VerifierRole(VerifierOptions options);
  ~VerifierRole() override;  // waits for a running check

  [[nodiscard]] Status Poll(RoleContext& ctx) override;
  void Stop() override;

 private:
  // A check running on the worker thread.
  struct Running {
    proto::Task task;                  // as it stood when the check started
    std::vector<std::uint32_t> slots;  // the slots the check answers
    std::unique_ptr<BackgroundCheck> check;
  };
  // A check that failed on this verifier's side, retried no sooner than `retry_at`.
  struct Failure {
    std::string error;
    std::chrono::steady_clock::time_point retry_at;
  };

  [[nodiscard]] Status Collect(RoleContext& ctx);
  /// `open`: the key's slots of `task` that await a verdict.
  [[nodiscard]] Status HandleAssigned(RoleContext& ctx, const proto::Task& task, const std::vector<std::uint32_t>& open);
  [[nodiscard]] Status SaveVerdict(RoleContext& ctx, const proto::Task& task, std::uint32_t slot,
                                   const std::string& report, const SegmentsVerdict& verdict);
  [[nodiscard]] Status PostVerdict(RoleContext& ctx, const proto::Task& task, std::uint32_t slot,
                                   const proto::VerdictTx& tx);
  void StartCheck(RoleContext& ctx, const proto::Task& task, std::vector<std::uint32_t> slots);
  [[nodiscard]] Status PlayDisputes(RoleContext& ctx, const proto::Task& task);
  std::string ReportPath(const RoleContext& ctx, const proto::Task& task, std::uint32_t slot) const;
  std::string VerdictPath(const RoleContext& ctx, const proto::Task& task, std::uint32_t slot) const;

  VerifierOptions options_;
  DataCache data_;
  std::unique_ptr<kernels::Backend> backend_;          // checks (worker thread)
  std::unique_ptr<kernels::Backend> dispute_backend_;  // dispute answers (poll thread)
  proto::Params params_;
  bool have_params_ = false;
  TaskScan scan_;
  std::optional<Running> running_;
  std::map<std::string, Failure> failures_;                     // by raw task id
  std::map<std::string, std::map<std::uint32_t, std::string>> reasons_;  // raw task id -> slot -> verdict reason
  std::set<std::string> assigned_;                              // raw task ids logged as assigned
  std::map<std::string, std::unique_ptr<DisputeDuty>> disputes_;  // by raw task id
};

}  // namespace polnode::node

#endif  // POLNODE_ROLES_VERIFIER_ROLE_H_
