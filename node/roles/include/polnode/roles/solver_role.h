// `polnode solver`: the miner's daemon (docs/protocol.md). Each pass over the ledger it
//   - keeps its solver stake bonded (enough for one claim);
//   - when idle, claims the first open task whose document it can fetch, check against the
//     ledger's binding (task_binding.h) and train with its backend and data, committing to a
//     fresh secret kept in its home (0600);
//   - once the forced-error seed is drawn, trains the claimed task with proof of learning in a
//     worker thread (solver::Prove, resumable: a restarted solver continues from its last
//     checkpoint and produces the identical proof); when its secret says the round is forced, it
//     falsifies the forced checkpoints as it trains (solver/forced_round.h; a tolerant task's honest
//     values are kept in DIR/tasks/<task hex>/forced-honest, never served) and writes the result
//     proof (the forced checkpoints restored) beside the committed one;
//   - serves every proof it holds over HTTP (proof_http.h) and commits the trained proof's root,
//     with the Merkle proof that its checkpoint 0 is the task's initial state;
//   - publishes on the ledger the checkpoints that unavailable verdicts need (TASK_PUBLISHING);
//   - disputes every reject verdict against its proof (an undisputed reject leaves the proof
//     unproven), reveals its secret (and, in a forced round, the result root with the checkpoints
//     the ledger needs: ForcedRevealTx) and defends its proof in every dispute game
//     (dispute_duty.h).
// `--cheat step=S,node=N|NAME[,output=O][,bit=B]` makes it a cheating solver for the devnet and tests:
// it trains (and later answers disputes) with solver::TamperingBackend. It bluffs like a cheater
// hoping for a careless verifier: it disputes reject verdicts too, and the game against an honest
// verifier pinpoints its step and operator at the referee.
#ifndef POLNODE_ROLES_SOLVER_ROLE_H_
#define POLNODE_ROLES_SOLVER_ROLE_H_

#include <atomic>
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "polnode/kernels/backend.h"
#include "polnode/roles/dispute_duty.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/rpc/file_store.h"
#include "polnode/rpc/proof_http.h"
#include "polnode/solver/dataset.h"
#include "polnode/solver/forced_round.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/tampering_backend.h"
#include "polnode/solver/task_spec.h"

namespace polnode::node {

/// A cheat: which value to corrupt. The node is named (e.g. "fc2.matmul") or numbered.
struct CheatSpec {
  solver::TamperSpec tamper;  // tamper.node is used when node_name is empty
  std::string node_name;
};

struct SolverOptions {
  std::string backend = "cpu";
  int threads = 1;
  std::uint64_t stake = 0;  // 0: params.min_stake_solver
  std::optional<CheatSpec> cheat;
  std::uint64_t max_tasks = 0;  // stop claiming after this many claims (0: no limit)
  Clock::Duration commit_interval = solver::kDefaultCommitInterval;  // solver::ProveOptions'
};

/// Parses "step=S,node=N|NAME[,output=O][,bit=B]"; kInvalidArgument naming the bad part.
[[nodiscard]] Result<CheatSpec> ParseCheatSpec(std::string_view text);
/// The tamper of `cheat` on the step graph of `document` over `data`: kInvalidArgument when the
/// named node, the output or the step does not exist.
[[nodiscard]] Result<solver::TamperSpec> ResolveCheat(const CheatSpec& cheat, const solver::TaskSpec& document,
                                                      const solver::ImageDataset& data);

/// The transactions that publish checkpoint `checkpoint` of the proof in `proof_dir` for task
/// `task_id` on the ledger (contracts/publication.h): a header naming every state tensor with its
/// hash and the checkpoint's Merkle proof, then the tensors' elements in chunks of
/// payload::kPublishChunkElements, in that order. Errors: the proof directory's, kOutOfRange for a
/// checkpoint the proof lacks.
[[nodiscard]] Result<std::vector<proto::PublishTx>> PublishTxs(const std::string& proof_dir, std::string_view task_id,
                                                               std::uint64_t checkpoint);

/// The RevealTx of a forced round of `task` (status TASK_REVEALING, with its verdicts and
/// challenges) whose solver committed the proof in `committed_dir` and wrote the result proof in
/// `result_dir` (solver::WriteResultProof): the secret, the result root and one RevealedLeaf for
/// each of contracts::RevealCheckpoints(task), ascending, with both hashes and both Merkle proofs;
/// for a tolerant task also one PerturbationProof per shown forced checkpoint (a leaf whose two
/// hashes differ), ascending: the tensor names, the first tensor's dims, the other tensors'
/// hashes, the drawn block (consensus::DrawPerturbation) of the first tensor in both states and
/// its siblings in the first tensor's block tree, which is what the ledger checks the
/// perturbation with. Errors: the proof directories', kCorruption when the two proofs differ in
/// length, or (tolerant) when their states at a forced checkpoint differ anywhere but in the drawn
/// block of the first tensor, kOutOfRange for a checkpoint the proofs lack.
[[nodiscard]] Result<proto::RevealTx> ForcedRevealTx(const proto::Task& task, std::string_view secret,
                                                     const std::string& committed_dir, const std::string& result_dir);

class SolverRole final : public Role {
 public:
  explicit SolverRole(SolverOptions options);
  ~SolverRole() override;

  [[nodiscard]] Status Poll(RoleContext& ctx) override;
  std::optional<HttpResponse> Handle(const HttpRequest& request) override { return proofs_.Handle(request); }
  void Stop() override;

 private:
  // What the solver keeps about one task it claimed.
  struct Claimed {
    solver::TaskSpec document;
    std::string dir;                 // DIR/tasks/<task hex>
    std::string secret;              // 32 raw bytes
    std::unique_ptr<std::thread> worker;
    std::atomic<bool> done{false};
    Status result;                   // the training's outcome, once done
    std::optional<consensus::Hash256> result_root;  // the proof the reveal names (the committed one unless forced)
    std::optional<consensus::Hash256> committed_root;
    std::unique_ptr<DisputeDuty> disputes;
    bool settled_logged = false;
  };

  [[nodiscard]] Status HandleOwnTask(RoleContext& ctx, const proto::Task& task);
  [[nodiscard]] Status MaybeClaim(RoleContext& ctx, const proto::Task& task, std::uint64_t height);
  // Whether some verifier the ledger could draw for `task` (neither this solver nor its submitter)
  // has the free verifier stake the task's lock needs now.
  [[nodiscard]] Result<bool> AnyVerifierCouldTake(RoleContext& ctx, const proto::Task& task) const;
  [[nodiscard]] Result<Claimed*> Restore(RoleContext& ctx, const proto::Task& task);
  [[nodiscard]] Status CommitProof(RoleContext& ctx, const proto::Task& task, Claimed& claimed);
  // Sends the checkpoints the ledger asks for after unavailable verdicts (publication.h): a header
  // and its chunks per checkpoint, from the committed proof.
  [[nodiscard]] Status Publish(RoleContext& ctx, const proto::Task& task, Claimed& claimed);
  // The forced round `task` is for this claim's secret (its forced checkpoints), or nullopt when
  // the round is not forced or the seed is not drawn yet.
  std::optional<solver::ForcedRound> ForcedRoundOf(const proto::Task& task, const Claimed& claimed) const;
  // consensus::SerializeMerkleProof of `checkpoint` in the proof at `dir`.
  [[nodiscard]] static Result<std::string> CheckpointProof(const std::string& dir, std::uint64_t checkpoint);
  [[nodiscard]] Result<const solver::ImageDataset*> Data(const solver::TaskSpec& document);
  // Fetches the document's served data and model files into the home's file store and points its
  // locations at them (ResolveTaskFiles, file_http.h); local locations are left as they are.
  [[nodiscard]] Status ResolveFiles(RoleContext& ctx, solver::TaskSpec& document);
  void StartTraining(RoleContext& ctx, const proto::Task& task, Claimed& claimed);
  bool Busy() const;

  SolverOptions options_;
  std::unique_ptr<kernels::Backend> backend_;          // training (worker thread)
  std::unique_ptr<kernels::Backend> dispute_backend_;  // dispute answers (poll thread)
  std::mutex data_mu_;                                 // data_ is read by both threads
  ProofServer proofs_;
  std::optional<FileStore> files_;  // fetched data and model files (poll thread only)
  proto::Params params_;
  bool have_params_ = false;
  std::atomic<bool> cancel_{false};
  std::map<std::string, std::unique_ptr<Claimed>> claimed_;             // by raw task id
  std::map<std::string, std::unique_ptr<solver::ImageDataset>> data_;   // by data location
  std::map<std::string, std::string> refused_;                          // raw task id -> why not claimed
  std::set<std::string> waiting_for_verifiers_;  // raw task ids whose claim_deferred was logged
  std::uint64_t claims_ = 0;
};

}  // namespace polnode::node

#endif  // POLNODE_ROLES_SOLVER_ROLE_H_
