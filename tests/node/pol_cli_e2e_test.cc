// End to end: the real polnode binary proves a task (on a tiny IDX data set written here),
// verifies the proof (accept, exit 0), rejects it after a blob is tampered with (exit 1), reports
// unreadable input (exit 2), resumes an interrupted proof, and profiles it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "../solver/proof_test_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/solver/proof_manifest.h"
#include "subprocess.h"

namespace polnode::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteIdx(const std::string& path, const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& data) {
  std::string bytes = {0, 0, 8, static_cast<char>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<char>((d >> shift) & 0xff));
  }
  bytes.append(data.begin(), data.end());
  std::ofstream(path, std::ios::binary) << bytes;
}

class PolCliTest : public ::testing::Test {
 protected:
  PolCliTest() {
    const solver::ImageDataset data = solver::testing::TinyDataset();
    std::filesystem::create_directory(dir_.File("data"));
    const auto split = [&](const std::string& name, const solver::ImageSplit& s) {
      const auto n = static_cast<std::uint32_t>(s.count);
      WriteIdx(dir_.File("data/" + name + "-images-idx3-ubyte"), {n, 4, 4}, s.pixels);
      WriteIdx(dir_.File("data/" + name + "-labels-idx1-ubyte"), {n}, s.labels);
    };
    split("train", data.train);
    split("t10k", data.test);
    std::ofstream(dir_.File("task.toml"))
        << "model = \"mlp:16-8-3\"\ndata = \"" << dir_.File("data") << "\"\ndataset_hash = \""
        << consensus::ToHex(solver::DatasetContentHash(data))
        << "\"\nlr = 0.1\nbatch = 8\nsteps = 40\ncheckpoint_interval = 5\nseed = 42\nsegments = 2\n";
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

  // --solver-pubkey: the signer must be that key.
  ProcessResult keygen = Polnode({"keygen", "--out", "other.key", "--json"});
  ASSERT_EQ(keygen.exit_code, 0) << keygen.err;
  const std::size_t at = keygen.out.find("\"public_key\":\"");
  ASSERT_NE(at, std::string::npos) << keygen.out;
  const std::string other_pubkey = keygen.out.substr(at + 14, 64);
  ProcessResult wrong = Polnode({"verify", "--proof", "proof", "--beacon", std::string(64, 'a'), "--solver-pubkey", other_pubkey});
  EXPECT_EQ(wrong.exit_code, 1) << wrong.out << wrong.err;
  EXPECT_NE(wrong.out.find("\"accept\":false"), std::string::npos) << wrong.out;
  EXPECT_EQ(Polnode({"verify", "--proof", "proof", "--beacon", std::string(64, 'a'), "--solver-pubkey", "zz"}).exit_code, 2);

  // The same proof with its signature stripped is rejected (exit 1), not accepted as anonymous.
  ASSERT_EQ(Polnode({"prove", "--task", "task.toml", "--out", "stripped", "--key", "solver.key"}).exit_code, 0);
  const std::string wire = ReadAll(dir_.File("stripped/manifest.pb"));
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
    std::string bytes = ReadAll(entry.path().string());
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
  EXPECT_EQ(ReadAll(dir_.File("resumed/manifest.pb")), ReadAll(dir_.File("clean/manifest.pb")));

  ProcessResult profile = Polnode({"profile", "--task", "task.toml", "--proof", "clean", "--json"});
  ASSERT_EQ(profile.exit_code, 0) << profile.err;
  EXPECT_NE(profile.out.find("\"thresholds\":{\"l1\":0,\"l2\":0,\"linf\":0,\"cosine\":0}"), std::string::npos)
      << profile.out;
}

}  // namespace
}  // namespace polnode::testing
