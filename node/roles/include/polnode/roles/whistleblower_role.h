// `polnode whistleblower`: the daemon that audits verifiers (DESIGN.md section 5,
// docs/protocol.md). Each pass over the ledger it
//   - keeps its whistleblower stake bonded (by default enough for two challenges at once);
//   - for every task whose verifiers are assigned (TASK_VERIFYING or TASK_PUBLISHING, so the work
//     is done before the challenge window opens, or TASK_CHALLENGE) and of which it is neither
//     solver, submitter nor verifier, picks the verifier slots it audits, deterministically
//     (SelectedForCheck: a --check-share of them), and re-does their work on a worker thread: one
//     replay of the union of their segments, the segments a challenge by its key would cover
//     (ChallengeSegmentsOf: drawn from the beacon and its key, plus the final one) and the final
//     one (verification_job.h);
//   - in TASK_CHALLENGE, logs how each audited slot's verdict compares with its own for that
//     slot's segments, and challenges the proof itself (DisputeTx without a verifier, as duty
//     "challenge-<task hex>") when its replay shows one of its covered segments wrong, naming
//     every covered segment that failed and committing to what each replay found there (beacon.h
//     SegmentDigest, as a verifier's reject): it is paid the solver's lock and the locks of the
//     verifiers that accepted the disproven segment, or, in a forced round where it named exactly
//     the covered segments ending at forced checkpoints with their honest ends, a jackpot share;
//   - plays the game its challenge starts (dispute_duty.h) as the challenger;
//   - when a task it challenged settles, logs the outcome and how its holdings (balance plus
//     whistleblower stake) moved since just before its challenge. The holdings before the
//     challenge are kept in DIR/watch/<task hex> (challenge_watch.h), so this survives restarts.
#ifndef POLNODE_ROLES_WHISTLEBLOWER_ROLE_H_
#define POLNODE_ROLES_WHISTLEBLOWER_ROLE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/kernels/backend.h"
#include "polnode/roles/dispute_duty.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/roles/verification_job.h"

namespace polnode::node {

struct WhistleblowerOptions {
  double check_share = 1.0;  // in [0, 1]: the share of verdicts audited
  std::uint64_t stake = 0;   // free whistleblower stake to keep; 0: 2 x params.min_stake_whistleblower
  std::string backend = "cpu";
  int threads = 1;
  DataCache::Loader loader;  // a task document's data (solver::LoadTaskData in the daemon)
};

/// Whether whistleblower `self` audits the verdict of verifier slot `slot` (its index in the task's
/// verifier list) of task `task_id` (raw bytes each): SHA-256(task id, slot, self) read as a
/// fraction in [0, 1) is below `share`. Everyone can recompute it, no one can steer it (not the
/// verifier by its choice of key either), and different whistleblowers audit different verdicts.
bool SelectedForCheck(std::string_view task_id, std::uint32_t slot, std::string_view self, double share);

class WhistleblowerRole final : public Role {
 public:
  explicit WhistleblowerRole(WhistleblowerOptions options);
  ~WhistleblowerRole() override;  // waits for a running check

  [[nodiscard]] Status Poll(RoleContext& ctx) override;
  void Stop() override;

 private:
  // What the whistleblower knows about one task it audits.
  struct TaskAudit {
    std::vector<std::uint32_t> slots;    // the audited verifier slots, ascending
    std::optional<ProofCheck> check;     // once the replay is done
    std::string error;                   // the last failed attempt's error
    std::chrono::steady_clock::time_point retry_at;
    std::set<std::uint32_t> compared;    // slots whose verdict was compared ("checked" logged)
    int published_seen = 0;              // the task's published checkpoints when the check started
    std::vector<std::uint64_t> suspects;  // the segments its replay found wrong
  };
  struct Running {
    std::string task_id;  // raw
    std::unique_ptr<BackgroundCheck> check;
  };

  void Collect(RoleContext& ctx);
  [[nodiscard]] Status AuditTask(RoleContext& ctx, const proto::Task& task);
  [[nodiscard]] Status Compare(RoleContext& ctx, const proto::Task& task, TaskAudit& audit);
  [[nodiscard]] Status Challenge(RoleContext& ctx, const proto::Task& task, const SegmentsVerdict& mine);
  static bool Challenged(const RoleContext& ctx, const proto::Task& task);
  [[nodiscard]] Status PlayDisputes(RoleContext& ctx, const proto::Task& task);
  [[nodiscard]] Status ReportSettled(RoleContext& ctx, const proto::Task& task);
  std::string WatchPath(const RoleContext& ctx, const std::string& task_id) const;

  WhistleblowerOptions options_;
  DataCache data_;
  std::unique_ptr<kernels::Backend> backend_;          // checks (worker thread)
  std::unique_ptr<kernels::Backend> dispute_backend_;  // dispute answers (poll thread)
  proto::Params params_;
  bool have_params_ = false;
  std::uint64_t free_stake_ = 0;  // this pass: free stake no challenge has claimed yet
  std::uint64_t promised_ = 0;    // this pass: the locks of challenges still in the mempool
  TaskScan scan_;
  std::optional<Running> running_;
  std::map<std::string, TaskAudit> audits_;                       // by raw task id
  std::map<std::string, std::uint64_t> pending_challenges_;       // challenge duty -> lock, not yet in a block
  std::map<std::string, std::unique_ptr<DisputeDuty>> disputes_;  // by raw task id
};

}  // namespace polnode::node

#endif  // POLNODE_ROLES_WHISTLEBLOWER_ROLE_H_
