// Property test: random sequences of transactions (fixed seeds, so failures reproduce) keep the
// total supply constant after every block (checked by Chain::Block), keep every stake record
// consistent, never fail a block, and replay to the identical state.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "checkpoint_fixture.h"
#include "polnode/testing/chain_harness.h"
#include "polnode/contracts/beacon.h"
#include "polnode/contracts/forced.h"
#include "polnode/contracts/payloads.h"
#include "polnode/contracts/supply.h"
#include "polnode/testing/chain_harness.h"

namespace polnode::contracts::testing {
namespace {

constexpr int kActors = 8;
constexpr int kBlocks = 300;

std::string SecretOf(std::uint8_t actor) { return Bytes32(static_cast<std::uint8_t>(0x80 + actor)); }

std::string ToRaw(const Hash256& hash) { return std::string(hash.begin(), hash.end()); }

class RandomTraffic {
 public:
  RandomTraffic(Chain& chain, std::uint64_t seed) : chain_(chain), rng_(seed), checkpoints_(10, 100, 8, 3) {}

  // One random transaction: half the time the step a recent task waits for (so tasks reach
  // every outcome), otherwise any kind of transaction from anyone (mostly noise and failures).
  VerifiedTx Next() {
    const std::uint8_t actor = static_cast<std::uint8_t>(Pick(kActors) + 1);
    const std::string task_id = RandomTaskId();
    if (Pick(2) == 0) return Progress(task_id, actor);
    return Noise(task_id, actor);
  }

 private:
  VerifiedTx Progress(const std::string& task_id, std::uint8_t actor) {
    switch (chain_.Task(task_id).status()) {
      case proto::TASK_OPEN:
        return Build(5, task_id, actor);
      case proto::TASK_CLAIMED:
        return Build(6, task_id, actor);
      case proto::TASK_VERIFYING:
        return Build(7, task_id, actor);
      case proto::TASK_CHALLENGE:  // disputes are rare, or few tasks would ever settle
        return Build(Pick(4) == 0 ? 8 : 0, task_id, actor);
      case proto::TASK_REVEALING:
        return RevealFor(task_id, Key(actor));
      case proto::TASK_PUBLISHING:  // sometimes the solver gives up
        return Pick(4) == 0 ? Noise(task_id, actor) : PublishFor(task_id, Key(actor));
      default:  // closed or disputed: sometimes a new task, else anything
        return Pick(5) == 0 ? Build(4, task_id, actor) : Noise(task_id, actor);
    }
  }

  VerifiedTx Noise(const std::string& task_id, std::uint8_t actor) { return Build(Pick(11), task_id, actor); }

  // Transaction kind `kind` (0 transfer .. 9 reveal) signed by `actor` or, for task steps, by the
  // participant the step needs (most of the time).
  VerifiedTx Build(std::uint64_t kind, const std::string& task_id, std::uint8_t actor) {
    const PubKey signer = Key(actor);
    switch (kind) {
      case 0: {
        proto::TransferTx msg;
        msg.set_to(Raw(Key(static_cast<std::uint8_t>(Pick(kActors) + 1))));
        msg.set_amount(1 + Pick(3'000));
        return chain_.Tx(signer, payload::kTransfer, msg);
      }
      case 1:
      case 2: {
        proto::StakeTx msg;
        msg.set_role(static_cast<proto::Role>(1 + Pick(3)));
        msg.set_amount(300 + Pick(1'200));
        return chain_.Tx(signer, payload::kStake, msg);
      }
      case 3: {
        proto::UnstakeTx msg;
        msg.set_role(static_cast<proto::Role>(1 + Pick(3)));
        msg.set_amount(1 + Pick(800));
        return chain_.Tx(signer, payload::kUnstake, msg);
      }
      case 4: {
        proto::SubmitTaskTx msg = TaskSubmission(100 + Pick(20'000));
        msg.mutable_spec()->set_initial_state_hash(ToRaw(checkpoints_.leaves()[0]));
        msg.mutable_spec()->set_claim_window(1 + Pick(8));
        msg.mutable_spec()->set_training_window(3 + Pick(8));
        return chain_.Tx(signer, payload::kSubmitTask, msg);
      }
      case 5: {
        proto::ClaimTaskTx msg;
        msg.set_task_id(task_id);
        msg.set_secret_commitment(ToRaw(SecretCommitment(SecretOf(actor))));
        return chain_.Tx(signer, payload::kClaimTask, msg);
      }
      case 6: {
        proto::CommitProofTx msg;
        msg.set_task_id(task_id);
        msg.set_proof_root(Pick(6) == 0 ? Bytes32(0xAA) : ToRaw(consensus::MerkleRoot(checkpoints_.leaves())));
        msg.set_proof_uri("http://solver/proof");
        const std::vector<std::uint8_t> initial =
            consensus::SerializeMerkleProof(*consensus::MerkleTree(checkpoints_.leaves()).Prove(0));
        msg.set_initial_proof(std::string(initial.begin(), initial.end()));
        return chain_.Tx(SolverOr(task_id, signer), payload::kCommitProof, msg);
      }
      case 7: {
        const auto [verifier, slot] = SlotOr(task_id, signer);
        proto::VerdictTx msg;
        msg.set_task_id(task_id);
        msg.set_slot(slot);
        // Mostly what a diligent verifier says (in a forced round: the covered segments that end
        // at forced checkpoints, with their honest digests), otherwise anything.
        const proto::Task task = chain_.Task(task_id);
        const std::vector<std::uint64_t> forced = ForcedOf(task);
        std::vector<std::uint64_t> failed;
        if (slot < static_cast<std::uint32_t>(task.verifiers_size())) {
          std::set<std::uint64_t> covered(task.verifiers(static_cast<int>(slot)).segments().begin(),
                                          task.verifiers(static_cast<int>(slot)).segments().end());
          covered.insert(9);  // the final segment
          for (std::uint64_t c : covered) {
            if (std::binary_search(forced.begin(), forced.end(), c + 1)) failed.push_back(c);
          }
        }
        const std::uint64_t verdict = Pick(9);
        if (verdict < 5) {
          msg.set_verdict(!failed.empty() ? proto::VERDICT_REJECT : proto::VERDICT_ACCEPT);
        } else {
          msg.set_verdict(verdict < 7 ? proto::VERDICT_ACCEPT : verdict < 8 ? proto::VERDICT_REJECT : proto::VERDICT_UNAVAILABLE);
          if (failed.empty() || Pick(2) == 0) failed = {9};
        }
        msg.set_report_hash(Bytes32(0xCC));
        if (msg.verdict() == proto::VERDICT_REJECT) {
          const std::vector<Hash256> honest = ResultLeaves(forced);
          for (std::uint64_t f : failed) {
            msg.add_failed_segments(f);
            msg.add_segment_digests(
                ToRaw(SegmentDigest(Raw(verifier), f, Pick(4) != 0 ? ToRaw(honest[f + 1]) : Bytes32(0x01))));
          }
        }
        return chain_.Tx(verifier, payload::kVerdict, msg);
      }
      case 8: {
        proto::DisputeTx msg;
        msg.set_task_id(task_id);
        if (Pick(2) == 0) {
          const auto [verifier, slot] = SlotOr(task_id, signer);
          msg.set_verifier(Raw(verifier));
          msg.set_slot(slot);
          return chain_.Tx(SolverOr(task_id, signer), payload::kDispute, msg);
        }
        // A whistleblower's challenge: the final segment, with the honest digest or another.
        msg.add_failed_segments(9);
        const std::vector<Hash256> honest = ResultLeaves(ForcedOf(chain_.Task(task_id)));
        msg.add_segment_digests(ToRaw(SegmentDigest(Raw(signer), 9, Pick(2) == 0 ? ToRaw(honest[10]) : Bytes32(0x02))));
        return chain_.Tx(signer, payload::kDispute, msg);
      }
      case 9:
        return PublishFor(task_id, signer);
      default:
        return RevealFor(task_id, signer);
    }
  }

  std::uint64_t Pick(std::uint64_t n) { return std::uniform_int_distribution<std::uint64_t>(0, n - 1)(rng_); }

  std::string RandomTaskId() {
    auto count = chain_.state().Get("meta/task_count");
    std::uint64_t tasks = 0;
    if (count.ok() && count->has_value()) {
      for (unsigned char c : **count) tasks = (tasks << 8) | c;
    }
    if (tasks == 0) return Bytes32(0);
    // Favour recent tasks: they are the ones still moving.
    const std::uint64_t back = std::min<std::uint64_t>(tasks, 4);
    return chain_.TaskIdAt(tasks - 1 - Pick(back));
  }

  PubKey ToKey(const std::string& raw) {
    PubKey key{};
    std::copy(raw.begin(), raw.end(), key.begin());
    return key;
  }

  PubKey SolverOr(const std::string& task_id, const PubKey& fallback) {
    const proto::Task task = chain_.Task(task_id);
    return task.solver().size() == 32 && Pick(5) != 0 ? ToKey(task.solver()) : fallback;
  }

  // A verifier slot of the task and the key that holds it (most of the time), else `fallback` with
  // any slot index.
  std::pair<PubKey, std::uint32_t> SlotOr(const std::string& task_id, const PubKey& fallback) {
    const proto::Task task = chain_.Task(task_id);
    if (task.verifiers_size() == 0 || Pick(5) == 0) return {fallback, static_cast<std::uint32_t>(Pick(4))};
    const std::uint32_t slot = static_cast<std::uint32_t>(Pick(static_cast<std::uint64_t>(task.verifiers_size())));
    return {ToKey(task.verifiers(static_cast<int>(slot)).verifier()), slot};
  }

  VerifiedTx RevealFor(const std::string& task_id, const PubKey& fallback) {
    const proto::Task task = chain_.Task(task_id);
    const PubKey solver = SolverOr(task_id, fallback);
    const std::string secret = SecretOf(solver[0]);
    const bool forced = IsForcedError(secret, task.forced_seed(), task_id, chain_.params().forced_error_rate());
    proto::RevealTx msg;
    msg.set_task_id(task_id);
    msg.set_secret(secret);
    if (!forced || Pick(10) == 0) {
      msg.set_result_root(Pick(10) == 0 ? Bytes32(0xBB) : task.proof_root());
      return chain_.Tx(solver, payload::kReveal, msg);
    }
    if (task.spec().checkpoint_interval() == 0) return chain_.Tx(solver, payload::kReveal, msg);  // no such task
    // The result proof at the checkpoints the ledger needs (sometimes one short).
    const std::vector<Hash256> result = ResultLeaves(ForcedOf(task, secret));
    const consensus::MerkleTree committed_tree(checkpoints_.leaves());
    const consensus::MerkleTree result_tree(result);
    msg.set_result_root(ToRaw(result_tree.root()));
    std::vector<std::uint64_t> shown = RevealCheckpoints(task);
    if (Pick(10) == 0) shown.pop_back();
    for (std::uint64_t k : shown) {
      proto::RevealedLeaf* leaf = msg.add_leaves();
      leaf->set_checkpoint(k);
      leaf->set_committed_hash(ToRaw(checkpoints_.leaves()[k]));
      leaf->set_result_hash(ToRaw(result[k]));
      const std::vector<std::uint8_t> committed_path = consensus::SerializeMerkleProof(*committed_tree.Prove(k));
      const std::vector<std::uint8_t> result_path = consensus::SerializeMerkleProof(*result_tree.Prove(k));
      leaf->set_committed_proof(std::string(committed_path.begin(), committed_path.end()));
      leaf->set_result_proof(std::string(result_path.begin(), result_path.end()));
    }
    return chain_.Tx(solver, payload::kReveal, msg);
  }

  // The forced checkpoints of `task` when its solver's secret (`secret`, else the one its solver
  // key has) makes the round forced; empty otherwise.
  std::vector<std::uint64_t> ForcedOf(const proto::Task& task, std::optional<std::string> secret = std::nullopt) {
    if (!secret) {
      if (task.solver().size() != 32) return {};
      secret = SecretOf(static_cast<std::uint8_t>(task.solver()[0]));
    }
    if (!IsForcedError(*secret, task.forced_seed(), task.id(), chain_.params().forced_error_rate())) return {};
    return ForcedCheckpoints(*secret, task.forced_seed(), task.id(), 10);
  }

  // The result proof: the committed one with each forced checkpoint k replaced by 32 bytes of 0x10 + k.
  std::vector<Hash256> ResultLeaves(const std::vector<std::uint64_t>& forced) {
    std::vector<Hash256> leaves = checkpoints_.leaves();
    for (std::uint64_t k : forced) leaves[k].fill(static_cast<std::uint8_t>(0x10 + k));
    return leaves;
  }

  // A header or a chunk of a checkpoint the task needs published (or of a random one).
  VerifiedTx PublishFor(const std::string& task_id, const PubKey& fallback) {
    const proto::Task task = chain_.Task(task_id);
    const std::uint64_t checkpoint =
        task.publish_required_size() > 0 && Pick(5) != 0
            ? task.publish_required(static_cast<int>(Pick(static_cast<std::uint64_t>(task.publish_required_size()))))
            : Pick(11);
    const PubKey solver = SolverOr(task_id, fallback);
    if (Pick(3) == 0) return chain_.Tx(solver, payload::kPublish, checkpoints_.Header(task_id, checkpoint));
    const std::vector<proto::PublishTx> chunks = checkpoints_.Chunks(task_id, checkpoint);
    return chain_.Tx(solver, payload::kPublish, chunks[Pick(chunks.size())]);
  }

  Chain& chain_;
  std::mt19937_64 rng_;
  CheckpointFixture checkpoints_;
};

std::vector<PubKey> Actors() {
  std::vector<PubKey> actors;
  for (int i = 1; i <= kActors; ++i) actors.push_back(Key(static_cast<std::uint8_t>(i)));
  return actors;
}

proto::Params PropertyParams() {
  proto::Params params = TestParams();
  params.set_forced_error_rate(3);
  params.set_verify_window(4);
  params.set_challenge_window(3);
  params.set_reveal_window(3);
  // Overdue slots, the fresh slots drawn beside them and short verifications are settlement paths too.
  params.set_max_verification_rounds(2);
  return params;
}

// Runs kBlocks random blocks; returns the final state and counts outcomes seen.
std::map<std::string, std::string, std::less<>> RunTraffic(std::uint64_t seed, std::map<StatusCode, int>& codes,
                                                           std::set<int>& outcomes) {
  Chain chain(PropertyParams(), Actors(), 50'000);
  // Everyone starts staked at three times the minimum of every role, so tasks can be claimed and
  // verified from the first block; the traffic then bonds and unbonds at random.
  std::vector<VerifiedTx> stakes;
  for (const PubKey& actor : Actors()) {
    for (proto::Role role : {proto::ROLE_SOLVER, proto::ROLE_VERIFIER, proto::ROLE_WHISTLEBLOWER}) {
      proto::StakeTx msg;
      msg.set_role(role);
      msg.set_amount(role == proto::ROLE_SOLVER ? 3'000 : role == proto::ROLE_VERIFIER ? 1'500 : 900);
      stakes.push_back(chain.Tx(actor, payload::kStake, msg));
    }
  }
  chain.Block(stakes);
  RandomTraffic traffic(chain, seed);
  std::mt19937_64 sizes(seed ^ 0x5eed);
  for (int block = 0; block < kBlocks; ++block) {
    std::vector<VerifiedTx> txs;
    const int count = static_cast<int>(sizes() % 7);
    for (int i = 0; i < count; ++i) txs.push_back(traffic.Next());
    BlockResult result = chain.Block(txs);
    EXPECT_EQ(result.tx_results.size(), txs.size()) << "block " << chain.height();
    for (const TxResult& r : result.tx_results) ++codes[r.code];
    Status consistent = chain.state().Scan("stake/", [](std::string_view, std::string_view value) {
      proto::StakeRecord stake;
      EXPECT_TRUE(stake.ParseFromString(std::string(value)));
      EXPECT_LE(stake.locked(), stake.bonded());
      return true;
    });
    EXPECT_TRUE(consistent.ok());
  }
  Status scanned = chain.state().Scan("task/", [&outcomes](std::string_view, std::string_view value) {
    proto::Task task;
    EXPECT_TRUE(task.ParseFromString(std::string(value)));
    if (task.status() == proto::TASK_SETTLED || task.status() == proto::TASK_CANCELLED) {
      EXPECT_EQ(task.escrow(), 0u);
    }
    outcomes.insert(task.outcome());
    return true;
  });
  EXPECT_TRUE(scanned.ok());
  return chain.state().pairs();
}

TEST(SupplyProperty, RandomTrafficConservesSupplyAndReplaysIdentically) {
  std::set<int> all_outcomes;
  for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::map<StatusCode, int> codes;
    std::set<int> outcomes;
    const auto first = RunTraffic(seed, codes, outcomes);
    std::map<StatusCode, int> replay_codes;
    std::set<int> replay_outcomes;
    EXPECT_EQ(RunTraffic(seed, replay_codes, replay_outcomes), first);
    // The traffic must exercise both successes and failures, and more than one way a task ends.
    EXPECT_GT(codes[StatusCode::kOk], 100);
    EXPECT_GT(codes.size(), 2u);
    EXPECT_GT(outcomes.size(), 5u);
    std::string seen;
    for (int outcome : outcomes) seen += proto::TaskOutcome_Name(static_cast<proto::TaskOutcome>(outcome)) + " ";
    RecordProperty("seed_" + std::to_string(seed) + "_outcomes", seen);
    RecordProperty("seed_" + std::to_string(seed) + "_ok_txs", codes[StatusCode::kOk]);
    all_outcomes.insert(outcomes.begin(), outcomes.end());
  }
  // Settlement paths with payouts and slashing are part of what conserves supply.
  for (proto::TaskOutcome outcome :
       {proto::OUTCOME_ACCEPTED, proto::OUTCOME_REJECTED, proto::OUTCOME_FORCED_ERROR, proto::OUTCOME_NO_REVEAL,
        proto::OUTCOME_NO_COMMIT, proto::OUTCOME_UNVERIFIED, proto::OUTCOME_UNAVAILABLE}) {
    EXPECT_TRUE(all_outcomes.count(outcome)) << proto::TaskOutcome_Name(outcome);
  }
}

}  // namespace
}  // namespace polnode::contracts::testing
