// End to end: scripts/gpu-bundle.sh packs this build's GPU check for a machine that cannot build
// polnode; the bundled polnode, run on the bundled libraries alone, trains on the bundled
// Fashion-MNIST slice to the same state hash as the build's own binary. Compiled only where a GPU
// backend is (without one the build has no GPU check to pack).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "polnode/testing/subprocess.h"
#include "polnode/testing/temp_dir.h"

#if defined(POLNODE_HAVE_CUDA) || defined(POLNODE_HAVE_HIP)

namespace polnode::testing {
namespace {

// The value of "key":"..." in a flat JSON object.
std::string JsonString(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  auto start = json.find(needle);
  if (start == std::string::npos) return "";
  start += needle.size();
  return json.substr(start, json.find('"', start) - start);
}

ProcessResult Bundle(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/bin/bash", std::string(POLNODE_SOURCE_DIR) + "/scripts/gpu-bundle.sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv);
}

std::vector<std::string> TrainArgs(const std::string& data) {
  return {"train", "--model", "mlp:784-16-10", "--data", data, "--steps", "3", "--batch", "8", "--seed", "5", "--json"};
}

TEST(GpuBundleTest, TheBundledPolnodeTrainsOnItsOwnLibrariesAndDataToTheBuildsHash) {
  TempDir dir("gpu-bundle");
  const ProcessResult packed = Bundle({"--build", POLNODE_BINARY_DIR, "--images", "100", "--dir", dir.path()});
  ASSERT_EQ(packed.exit_code, 0) << packed.out << packed.err;
  const std::string top = dir.File("polnode-gpu");
  for (const char* path : {"run.sh", "scripts/gpu-check.sh", "bench/gpu_bench.sh", "build/kernels/polnode_gpu_check",
                           "build/tests/polnode_kernels_tests", "build/node/polnode", "build/bench/step_profile",
                           "data/fashion-mnist/train-images-idx3-ubyte", "data/fashion-mnist/t10k-labels-idx1-ubyte"}) {
    EXPECT_TRUE(std::filesystem::exists(top + "/" + path)) << path;
  }
  // 100 training images of 28 x 28 after a 16-byte header; 20 test labels after an 8-byte one.
  EXPECT_EQ(std::filesystem::file_size(top + "/data/fashion-mnist/train-images-idx3-ubyte"), 16u + 100u * 784u);
  EXPECT_EQ(std::filesystem::file_size(top + "/data/fashion-mnist/t10k-labels-idx1-ubyte"), 8u + 20u);

  // Nothing of this machine's environment but the C library: the bundle's libraries only.
  std::vector<std::string> bundled = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin", "LD_LIBRARY_PATH=" + top + "/lib",
                                      top + "/build/node/polnode"};
  const std::vector<std::string> train = TrainArgs(top + "/data/fashion-mnist");
  bundled.insert(bundled.end(), train.begin(), train.end());
  const ProcessResult theirs = RunProcess(bundled);
  ASSERT_EQ(theirs.exit_code, 0) << theirs.err;
  std::vector<std::string> own = {PolnodeBinary()};
  own.insert(own.end(), train.begin(), train.end());
  const ProcessResult ours = RunProcess(own);
  ASSERT_EQ(ours.exit_code, 0) << ours.err;
  const std::string hash = JsonString(theirs.out, "state_hash");
  EXPECT_EQ(hash.size(), 64u) << theirs.out;
  EXPECT_EQ(hash, JsonString(ours.out, "state_hash"));

  const ProcessResult wrong_mode = RunProcess({top + "/run.sh", "train"});
  EXPECT_EQ(wrong_mode.exit_code, 2);
  EXPECT_NE(wrong_mode.err.find("check [gpu-check.sh options] or bench [REPEATS]"), std::string::npos) << wrong_mode.err;
}

TEST(GpuBundleTest, RefusesUnclearRequestsAndWritesNothing) {
  TempDir dir("gpu-bundle");
  const ProcessResult neither = Bundle({"--build", POLNODE_BINARY_DIR});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.err.find("exactly one of --out"), std::string::npos) << neither.err;
  const ProcessResult both = Bundle({"--build", POLNODE_BINARY_DIR, "--out", dir.File("b.tar.xz"), "--dir", dir.path()});
  EXPECT_EQ(both.exit_code, 2);
  const ProcessResult images = Bundle({"--build", POLNODE_BINARY_DIR, "--images", "3", "--dir", dir.path()});
  EXPECT_EQ(images.exit_code, 2);
  EXPECT_NE(images.err.find("--images must be"), std::string::npos) << images.err;
  const ProcessResult no_build = Bundle({"--build", dir.File("nowhere"), "--dir", dir.path()});
  EXPECT_EQ(no_build.exit_code, 1);
  EXPECT_NE(no_build.err.find("no " + dir.File("nowhere") + "/kernels/polnode_gpu_check"), std::string::npos)
      << no_build.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace polnode::testing

#endif  // POLNODE_HAVE_CUDA || POLNODE_HAVE_HIP
