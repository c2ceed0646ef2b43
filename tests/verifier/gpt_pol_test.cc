// Proof of learning on a GPT task (issue 12): the real prover trains the tiny GPT task on a text
// corpus written by the test, verifiers on other backends and thread counts accept it, a proof
// whose training was corrupted in one attention operator is rejected, and the pinpoint game's
// step tree locates that operator.
#include <gtest/gtest.h>

#include <string>

#include "pol_fixture.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/prover.h"
#include "polnode/solver/tampering_backend.h"
#include "polnode/solver/task_binding.h"
#include "polnode/testing/game_descent.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_gpt.h"
#include "polnode/verifier/pinpoint.h"

namespace polnode::verifier {
namespace {

class GptPolTest : public ::testing::Test {
 protected:
  GptPolTest()
      : data_(solver::testing::TinyTextDataset()), task_(solver::testing::TinyGptTask(data_)) {}

  // Proves the task into `dir` on `backend` and returns the signed manifest.
  solver::ProofManifest ProveOn(kernels::Backend& backend, const polnode::testing::TempDir& dir) {
    const consensus::SecretKey key = testing::ForgerKey();
    solver::ProveOptions options;
    options.out_dir = dir.path();
    options.key = &key;
    Result<solver::ProveResult> r = solver::Prove(task_, data_, backend, options);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->manifest : solver::ProofManifest{};
  }

  Verdict VerifyOn(const char* backend_name, int threads, const solver::ProofManifest& manifest,
                   const polnode::testing::TempDir& dir, std::uint8_t beacon) {
    auto backend = kernels::MakeBackend(backend_name, threads);
    EXPECT_TRUE(backend.ok());
    Result<solver::BlobStore> store = solver::BlobStore::Open(dir.File("blobs"));
    EXPECT_TRUE(store.ok());
    VerifyOptions options;
    options.beacon.fill(beacon);
    Result<Verdict> v = VerifyProof(task_, data_, manifest, *store, **backend, options);
    EXPECT_TRUE(v.ok()) << v.status().ToString();
    return v.ok() ? *v : Verdict{};
  }

  // The index of the node called `name` in the task's step graph.
  int NodeIndex(const std::string& name) {
    Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task_, data_);
    EXPECT_TRUE(stepper.ok());
    for (const solver::StepNode& n : stepper->graph().nodes) {
      if (n.name == name) return n.index;
    }
    ADD_FAILURE() << "no node " << name;
    return 0;
  }

  solver::ImageDataset data_;
  solver::TaskSpec task_;
};

TEST_F(GptPolTest, HonestProofIsAcceptedOnEveryBackendAndThreadCount) {
  polnode::testing::TempDir dir("gpt-prove");
  auto prover = kernels::MakeBackend("cpu", 2);
  ASSERT_TRUE(prover.ok());
  const solver::ProofManifest manifest = ProveOn(**prover, dir);
  ASSERT_EQ(manifest.checkpoint_hashes.size(), 5u);
  ASSERT_EQ(manifest.loss_bits.size(), 24u);
  int verified = 0;
  for (const auto& [name, threads] :
       std::vector<std::pair<const char*, int>>{{"reference", 1}, {"cpu", 1}, {"cpu", 2}}) {
    for (std::uint8_t beacon : {1, 2, 3}) {
      const Verdict v = VerifyOn(name, threads, manifest, dir, beacon);
      EXPECT_TRUE(v.accept) << name << " " << threads << ": " << v.reason;
      EXPECT_TRUE(v.initial_state_ok);
      EXPECT_TRUE(v.final_segment_ok);
      ++verified;
    }
  }
  EXPECT_EQ(verified, 9);
  // The ledger's binding of the task: graph root and batch root from the GPT's step graph.
  solver::TaskTerms terms;
  terms.payment = 1000;
  Result<proto::TaskSpec> spec = solver::LedgerSpecFor(task_, data_, terms);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->model_spec(), task_.model);
  EXPECT_TRUE(solver::CheckSpecBinding(*spec, task_, data_).ok());
  // Another corpus is another task's data.
  const solver::ImageDataset other = solver::testing::TinyTextDataset(4100);
  EXPECT_EQ(solver::LedgerSpecFor(task_, other, terms).status().code(),
            StatusCode::kFailedPrecondition);
}

TEST_F(GptPolTest, ProofCorruptedInTheAttentionSoftmaxIsRejected) {
  const int target = NodeIndex("h0.attn.softmax");
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task_, data_);
  ASSERT_TRUE(stepper.ok());
  auto inner = kernels::MakeBackend("cpu", 1);
  ASSERT_TRUE(inner.ok());
  // Step 20 lies in the final segment (steps 18..23), which every verification replays.
  solver::TamperingBackend cheat(**inner, stepper->graph().nodes.size(),
                                 solver::TamperSpec{20, target, 0, 22, 9, -1});
  polnode::testing::TempDir dir("gpt-cheat");
  const solver::ProofManifest manifest = ProveOn(cheat, dir);
  EXPECT_EQ(cheat.tamper_count(), 1);
  const Verdict v = VerifyOn("reference", 1, manifest, dir, 5);
  EXPECT_FALSE(v.accept);
  EXPECT_FALSE(v.final_segment_ok);
}

using polnode::testing::Descend;

TEST_F(GptPolTest, PinpointGameLocatesATamperedAttentionOperator) {
  auto reference = kernels::MakeReferenceBackend();
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task_, data_);
  ASSERT_TRUE(stepper.ok());
  solver::TrainState start = stepper->Initial();
  for (int s = 0; s < 6; ++s) ASSERT_TRUE(stepper->Step(start, *reference).ok());
  for (const char* name : {"h0.attn.softmax", "h0.attn.scores", "h0.attn.mix.grad_b",
                           "h0.ln1.grad", "wte.embedding.grad"}) {
    const int target = NodeIndex(name);
    ResponderOptions cheat;
    // Element 9: row 1, column 1 of the first head's T x T matrices, which the causal mask keeps
    // (a tamper above the diagonal would never be read).
    cheat.tamper = solver::TamperSpec{6 + 1, target, 0, 22, 9, -1};
    Result<PinpointResponder> honest = PinpointResponder::Create(task_, data_, *reference, start);
    Result<PinpointResponder> cheater =
        PinpointResponder::Create(task_, data_, *reference, start, cheat);
    ASSERT_TRUE(honest.ok()) << honest.status().ToString();
    ASSERT_TRUE(cheater.ok()) << cheater.status().ToString();
    EXPECT_EQ(honest->graph_root(), cheater->graph_root());
    EXPECT_EQ(*honest->StateHashAt(1), *cheater->StateHashAt(1)) << name;
    EXPECT_NE(*honest->StateHashAt(2), *cheater->StateHashAt(2)) << name;
    Result<StepLeaves> h = honest->LeavesOfStep(1), c = cheater->LeavesOfStep(1);
    ASSERT_TRUE(h.ok() && c.ok());
    EXPECT_EQ(Descend(h->tree, c->tree), honest->layout().first_output_leaf(target)) << name;
  }
}

}  // namespace
}  // namespace polnode::verifier
