// End to end: the real polnode binary proves a task (on a tiny IDX data set written here),
// verifies the proof (accept, exit 0), rejects it after a blob is tampered with (exit 1), reports
// unreadable input (exit 2), resumes an interrupted proof, and profiles it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "polnode/consensus/hex.h"
#include "polnode/solver/proof_manifest.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/status_matchers.h"
#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"
#include "polnode/testing/tiny_task.h"

namespace polnode::testing {
namespace {

class PolCliTest : public ::testing::Test {
 protected:
  PolCliTest() {
    const solver::ImageDataset data = solver::testing::TinyDataset();
    std::filesystem::create_directory(dir_.File("data"));
    EXPECT_TRUE(IsOk(WriteIdxDataset(dir_.File("data"), data)));
    solver::TaskSpec task = solver::testing::TinyTask(data);
    task.data_location = dir_.File("data");
    std::ofstream(dir_.File("task.toml")) << solver::testing::TinyTaskToml(task);
  }

  ProcessResult Polnode(std::vector<std::string> args) {
    args.insert(args.begin(), PolnodeBinary());
    return RunProcess(args, dir_.path());
  }

  ProcessResult Verify(const std::string& proof, const std::string& beacon_text) {
    return Polnode({"verify", "--proof", proof, "--task", "task.toml", "--segments", "8", "--beacon",
                    consensus::ToHex(consensus::Sha256(beacon_text))});
  }

  TempDir dir_;
};

TEST_F(PolCliTest, TrainPrintsTheSameStateHashOnEveryThreadCountAndItsTermsAsWritten) {
  const auto train = [&](const std::string& threads) {
    return Polnode({"train", "--data", "data", "--model", "mlp:16-8-3", "--steps", "4", "--batch", "4", "--backend", "cpu",
                    "--threads", threads, "--json"});
  };
  ProcessResult one = train("1");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ProcessResult two = train("2");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  const auto field = [](const std::string& json, const std::string& key) {
    const std::size_t at = json.find("\"" + key + "\":");
    if (at == std::string::npos) return std::string();
    const std::size_t start = at + key.size() + 3;
    return json.substr(start, json.find_first_of(",}", start) - start);
  };
  EXPECT_EQ(field(one.out, "state_hash").size(), 66u) << one.out;  // 64 hex in quotes
  EXPECT_EQ(field(one.out, "state_hash"), field(two.out, "state_hash"));
  // The float learning rate is printed as the decimal it was given, not the double it widens to.
  EXPECT_EQ(field(one.out, "lr"), "0.05") << one.out;
}

// `polnode train` and `polnode prove` run one stepper with one table of defaults: an Adam task
// file that names no rate proves to the final state `train --optimizer adam` reaches with the
// same model, data, batch, steps and seed, and both train at Adam's default rate.
TEST_F(PolCliTest, TrainAndProveOfAnAdamTaskWithoutARateReachTheSameState) {
  const solver::TaskSpec tiny = solver::testing::TinyTask(solver::testing::TinyDataset());
  std::ofstream(dir_.File("adam.toml")) << "model = \"" << tiny.model << "\"\ndata = \"" << dir_.File("data")
                                        << "\"\ndataset_hash = \"" << consensus::ToHex(tiny.dataset_hash)
                                        << "\"\noptimizer = \"adam\"\nbatch = " << tiny.batch << "\nsteps = " << tiny.steps
                                        << "\ncheckpoint_interval = " << tiny.steps << "\nseed = " << tiny.seed << "\n";
  ASSERT_EQ(Polnode({"keygen", "--out", "solver.key"}).exit_code, 0);
  ProcessResult prove = Polnode({"prove", "--task", "adam.toml", "--out", "proof", "--key", "solver.key"});
  ASSERT_EQ(prove.exit_code, 0) << prove.err;
  const std::string wire = ReadFileText(dir_.File("proof/manifest.pb"));
  Result<solver::ProofManifest> manifest =
      solver::DecodeManifest({reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()});
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();

  ProcessResult train = Polnode({"train", "--data", "data", "--model", tiny.model, "--steps", std::to_string(tiny.steps),
                                 "--batch", std::to_string(tiny.batch), "--seed", std::to_string(tiny.seed),
                                 "--optimizer", "adam", "--json"});
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_NE(train.out.find("\"lr\":0.001"), std::string::npos) << train.out;
  EXPECT_NE(train.out.find("\"state_hash\":\"" + consensus::ToHex(manifest->checkpoint_hashes.back()) + "\""),
            std::string::npos)
      << train.out;
}

TEST_F(PolCliTest, EvaluateUsesAProofsFinalStateAsAModelAndRefusesAnotherModelsState) {
  ASSERT_EQ(Polnode({"keygen", "--out", "solver.key"}).exit_code, 0);
  ProcessResult prove = Polnode({"prove", "--task", "task.toml", "--out", "proof", "--key", "solver.key"});
  ASSERT_EQ(prove.exit_code, 0) << prove.err;
  // Progress goes to stderr: one line per durable checkpoint, the last at the final step, and the
  // step, loss, speed and time left (every --log-every steps off a terminal, and at the last step;
  // the two kinds come from two threads, so their order is not fixed).
  const solver::TaskSpec task = solver::testing::TinyTask(solver::testing::TinyDataset());
  const std::string steps = std::to_string(task.steps);
  EXPECT_NE(prove.err.find("polnode prove: checkpoint at step " + steps + " of " + steps + " saved\n"), std::string::npos)
      << prove.err;
  const std::size_t progress = prove.err.find("step " + steps + "/" + steps + " epoch ");
  ASSERT_NE(progress, std::string::npos) << prove.err;
  EXPECT_NE(prove.err.find(" steps/s ", progress), std::string::npos) << prove.err;
  EXPECT_NE(prove.err.find(" eta 0s\n", progress), std::string::npos) << prove.err;
  const std::string wire = ReadFileText(dir_.File("proof/manifest.pb"));
  Result<solver::ProofManifest> manifest =
      solver::DecodeManifest({reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()});
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  const std::string final_state = "proof/blobs/" + consensus::ToHex(manifest->checkpoint_blobs.back());

  ProcessResult eval = Polnode({"evaluate", "--task", "task.toml", "--model", final_state, "--predict", "3", "--json"});
  ASSERT_EQ(eval.exit_code, 0) << eval.err;
  // The state hash is the proof's last checkpoint, and every test sample is counted.
  EXPECT_NE(eval.out.find("\"state_hash\":\"" + consensus::ToHex(manifest->checkpoint_hashes.back()) + "\""),
            std::string::npos)
      << eval.out;
  const solver::ImageDataset data = solver::testing::TinyDataset();
  EXPECT_NE(eval.out.find("\"test_total\":" + std::to_string(data.test.count) + ","), std::string::npos) << eval.out;
  std::size_t shown = 0;
  for (std::size_t at = eval.out.find("\"predicted\":"); at != std::string::npos;
       at = eval.out.find("\"predicted\":", at + 1)) {
    ++shown;
  }
  EXPECT_EQ(shown, 3u) << eval.out;
  // The same bits on another backend.
  ProcessResult reference = Polnode({"evaluate", "--task", "task.toml", "--model", final_state, "--predict", "3",
                                     "--json", "--backend", "reference"});
  EXPECT_EQ(reference.out, eval.out);

  // A state of another model is refused by name, not evaluated.
  solver::TaskSpec other = solver::testing::TinyTask(data);
  other.data_location = dir_.File("data");
  other.model = "mlp:16-4-3";
  std::ofstream(dir_.File("other.toml")) << solver::testing::TinyTaskToml(other);
  ProcessResult wrong = Polnode({"evaluate", "--task", "other.toml", "--model", final_state});
  EXPECT_EQ(wrong.exit_code, 2) << wrong.out << wrong.err;
  EXPECT_NE(wrong.err.find("is not a state of mlp:16-4-3"), std::string::npos) << wrong.err;
}

TEST_F(PolCliTest, ProveVerifyAcceptThenTamperedBlobIsRejected) {
  ASSERT_EQ(Polnode({"keygen", "--out", "solver.key"}).exit_code, 0);
  ProcessResult prove = Polnode({"prove", "--task", "task.toml", "--out", "proof", "--key", "solver.key", "--json"});
  ASSERT_EQ(prove.exit_code, 0) << prove.err;
  EXPECT_NE(prove.out.find("\"signed\":true"), std::string::npos) << prove.out;

  ProcessResult ok = Verify("proof", "b1");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("\"accept\":true"), std::string::npos) << ok.out;
  // Without --task the proof's own copy of the task is used.
  ProcessResult own = Polnode({"verify", "--proof", "proof", "--segments", "1", "--beacon", std::string(64, 'a')});
  EXPECT_EQ(own.exit_code, 0) << own.err;
  // Asking for fewer segments than the task's Q (segments = 2), or none, replays the task's Q.
  EXPECT_NE(own.out.find("\"drawn_segments\":2"), std::string::npos) << own.out;
  EXPECT_NE(own.out.find("\"final_segment_ok\":true"), std::string::npos) << own.out;
  ProcessResult dflt = Polnode({"verify", "--proof", "proof", "--beacon", std::string(64, 'a')});
  EXPECT_EQ(dflt.exit_code, 0) << dflt.err;
  EXPECT_NE(dflt.out.find("\"drawn_segments\":2"), std::string::npos) << dflt.out;

  // --solver-pubkey: the signer must be that key. Without it the verdict names the signer, for
  // the caller to compare with the solver the ledger names.
  const auto pubkey_of = [&](const std::string& key_file) {
    ProcessResult keygen = Polnode({"keygen", "--out", key_file, "--json"});
    EXPECT_EQ(keygen.exit_code, 0) << keygen.err;
    const std::size_t at = keygen.out.find("\"pubkey\":\"");
    return at == std::string::npos ? std::string() : keygen.out.substr(at + 10, 64);
  };
  const std::string other_pubkey = pubkey_of("other.key");
  ASSERT_EQ(other_pubkey.size(), 64u);
  ProcessResult prove_other = Polnode({"prove", "--task", "task.toml", "--out", "proof-of-other", "--key", "other.key"});
  ASSERT_EQ(prove_other.exit_code, 0) << prove_other.err;
  ProcessResult named = Verify("proof-of-other", "b1");
  EXPECT_EQ(named.exit_code, 0) << named.err;
  EXPECT_NE(named.out.find("\"signer\":\"" + other_pubkey + "\""), std::string::npos) << named.out;
  ProcessResult wrong = Polnode({"verify", "--proof", "proof", "--beacon", std::string(64, 'a'), "--solver-pubkey", other_pubkey});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out << wrong.err;
  EXPECT_NE(wrong.out.find("\"accept\":false"), std::string::npos) << wrong.out;
  EXPECT_EQ(Polnode({"verify", "--proof", "proof", "--beacon", std::string(64, 'a'), "--solver-pubkey", "zz"}).exit_code, 2);

  // The same proof with its signature stripped is rejected (exit 1), not accepted as anonymous.
  ASSERT_EQ(Polnode({"prove", "--task", "task.toml", "--out", "stripped", "--key", "solver.key"}).exit_code, 0);
  const std::string wire = ReadFileText(dir_.File("stripped/manifest.pb"));
  Result<solver::ProofManifest> manifest =
      solver::DecodeManifest({reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()});
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  manifest->is_signed = false;
  std::ofstream(dir_.File("stripped/manifest.pb"), std::ios::binary | std::ios::trunc) << solver::EncodeManifest(*manifest);
  ProcessResult stripped = Polnode({"verify", "--proof", "stripped", "--beacon", std::string(64, 'a')});
  EXPECT_EQ(stripped.exit_code, 1) << stripped.out << stripped.err;
  EXPECT_NE(stripped.out.find("not signed"), std::string::npos) << stripped.out;

  // Q = 8 draws every segment, so any tampered checkpoint is replayed.
  for (const auto& entry : std::filesystem::directory_iterator(dir_.File("proof/blobs"))) {
    std::string bytes = ReadFileText(entry.path().string());
    bytes[bytes.size() - 1] ^= 1;
    std::ofstream(entry.path(), std::ios::binary | std::ios::trunc) << bytes;
    break;
  }
  ProcessResult bad = Verify("proof", "b1");
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("\"accept\":false"), std::string::npos) << bad.out;
}

TEST_F(PolCliTest, ProveWithoutKeyIsAUsageError) {
  // Verifiers reject unsigned proofs, so prove refuses to start without a key.
  ProcessResult r = Polnode({"prove", "--task", "task.toml", "--out", "proof"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("key"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.File("proof/manifest.pb")));
}

TEST_F(PolCliTest, UnreadableInputIsExitTwo) {
  EXPECT_EQ(Verify("no-such-proof", "b").exit_code, 2);
  ASSERT_EQ(Polnode({"keygen", "--out", "solver.key"}).exit_code, 0);
  ASSERT_EQ(Polnode({"prove", "--task", "task.toml", "--out", "proof", "--key", "solver.key"}).exit_code, 0);
  std::ofstream(dir_.File("proof/manifest.pb"), std::ios::trunc) << "\xff\xff garbage";
  ProcessResult r = Verify("proof", "b");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("manifest"), std::string::npos) << r.err;
  EXPECT_EQ(Polnode({"verify", "--proof", "proof", "--tx", "x", "--beacon", std::string(64, 'a')}).exit_code, 2);
  EXPECT_EQ(Polnode({"verify", "--proof", "proof", "--beacon", "zz"}).exit_code, 2);
  std::ofstream(dir_.File("bad.toml")) << "model = \n";
  EXPECT_EQ(Polnode({"prove", "--task", "bad.toml", "--out", "p2", "--key", "solver.key"}).exit_code, 2);
}

TEST_F(PolCliTest, InterruptedProofResumesToTheSameManifestAndProfilesToZero) {
  ASSERT_EQ(Polnode({"keygen", "--out", "solver.key"}).exit_code, 0);
  ASSERT_EQ(Polnode({"prove", "--task", "task.toml", "--out", "clean", "--threads", "1", "--key", "solver.key"}).exit_code, 0);
  // A run interrupted after its last checkpoint but before the manifest (the in-process prover
  // tests cover interruptions between checkpoints): rerunning completes it from progress.bin,
  // on another thread count, to the same bytes.
  ASSERT_EQ(Polnode({"prove", "--task", "task.toml", "--out", "resumed", "--threads", "2", "--key", "solver.key"}).exit_code, 0);
  std::filesystem::remove(dir_.File("resumed/manifest.pb"));
  ProcessResult again = Polnode({"prove", "--task", "task.toml", "--out", "resumed", "--threads", "2", "--key", "solver.key", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("\"resumed_from_step\":40"), std::string::npos) << again.out;
  EXPECT_EQ(ReadFileText(dir_.File("resumed/manifest.pb")), ReadFileText(dir_.File("clean/manifest.pb")));

  // Profiling needs the task alone (a solver's proof cannot move the thresholds).
  ProcessResult profile = Polnode({"profile", "--task", "task.toml", "--json"});
  ASSERT_EQ(profile.exit_code, 0) << profile.err;
  EXPECT_NE(profile.out.find("\"thresholds\":{\"l1\":0,\"l2\":0,\"linf\":0,\"cosine\":0,\"loss\":0}"), std::string::npos)
      << profile.out;
}

}  // namespace
}  // namespace polnode::testing
