// The HIP backend's check of the machine's AMD GPUs against the build's targets, before the first
// HIP call (ROCm aborts there otherwise): target names from KFD versions, a fake sysfs topology
// with CPU and GPU nodes, and the verdicts.
#include "gpu/amd_targets.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "polnode/testing/temp_dir.h"

namespace polnode::kernels::amd {
namespace {

TEST(AmdTargetsTest, NamesTargetsFromKfdVersions) {
  EXPECT_EQ(TargetName(90010), "gfx90a");
  EXPECT_EQ(TargetName(100300), "gfx1030");
  EXPECT_EQ(TargetName(90402), "gfx942");
  EXPECT_EQ(TargetName(110000), "gfx1100");
  EXPECT_EQ(TargetName(90008), "gfx908");
  EXPECT_EQ(TargetName(0), "");
  EXPECT_EQ(TargetName(91600), "");  // minor 16: no such target
}

// One node directory with a properties file in KFD's "key value" form.
void WriteNode(const polnode::testing::TempDir& dir, const std::string& node, std::uint32_t version) {
  std::filesystem::create_directories(dir.File(node));
  std::ofstream(dir.File(node + "/properties")) << "cpu_cores_count 0\nsimd_count 440\n"
                                                << "gfx_target_version " << version << "\nvendor_id 4098\n";
}

TEST(AmdTargetsTest, ReadsTheGpuNodesInOrderAndSkipsCpuNodes) {
  polnode::testing::TempDir dir("kfd");
  WriteNode(dir, "0", 0);  // the CPU
  WriteNode(dir, "2", 100300);
  WriteNode(dir, "1", 90010);
  WriteNode(dir, "10", 90402);
  std::filesystem::create_directories(dir.File("not-a-node"));
  Result<std::vector<std::string>> targets = GpuTargets(dir.path());
  ASSERT_TRUE(targets.ok()) << targets.status().ToString();
  EXPECT_EQ(*targets, (std::vector<std::string>{"gfx90a", "gfx1030", "gfx942"}));
}

TEST(AmdTargetsTest, MissingDriverAndBrokenNodesAreClearErrors) {
  polnode::testing::TempDir dir("kfd");
  EXPECT_EQ(GpuTargets(dir.File("absent")).status().code(), StatusCode::kNotFound);
  std::filesystem::create_directories(dir.File("0"));
  std::ofstream(dir.File("0/properties")) << "simd_count 440\n";
  const Status no_version = GpuTargets(dir.path()).status();
  EXPECT_EQ(no_version.code(), StatusCode::kCorruption);
  EXPECT_NE(no_version.message().find("gfx_target_version"), std::string::npos) << no_version.ToString();
  std::ofstream(dir.File("0/properties")) << "gfx_target_version 12x\n";
  EXPECT_EQ(GpuTargets(dir.path()).status().code(), StatusCode::kCorruption);
}

TEST(AmdTargetsTest, EveryGpuMustBeAmongTheCompiledTargets) {
  const std::vector<std::string> compiled = SplitTargets("gfx90a:xnack- gfx1030");
  EXPECT_EQ(compiled, (std::vector<std::string>{"gfx90a:xnack-", "gfx1030"}));
  EXPECT_TRUE(CheckTargets(std::vector<std::string>{"gfx90a", "gfx1030"}, compiled).ok());

  const Status other = CheckTargets(std::vector<std::string>{"gfx90a", "gfx942"}, compiled);
  EXPECT_EQ(other.code(), StatusCode::kUnavailable);
  EXPECT_NE(other.message().find("gfx942"), std::string::npos) << other.ToString();
  EXPECT_NE(other.message().find("POLNODE_HIP_ARCHITECTURES"), std::string::npos) << other.ToString();

  EXPECT_EQ(CheckTargets({}, compiled).code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace polnode::kernels::amd
