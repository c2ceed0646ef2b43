// Which AMD GPUs a HIP build can run on, found without calling HIP (issue 19 item 6).
//
// A HIP build carries code objects for the targets it was compiled for (POLNODE_HIP_ARCHITECTURES,
// gfx90a and gfx1030 by default). On a machine whose GPU is another target, ROCm's runtime does not
// return an error at the first HIP call: it prints "hipErrorNoBinaryForGpu" and aborts the process.
// So the HIP backend reads the GPUs' targets from the amdgpu driver's KFD topology in sysfs first
// and reports a mismatch as kUnavailable, like any other GPU it cannot use.
#ifndef POLNODE_KERNELS_GPU_AMD_TARGETS_H_
#define POLNODE_KERNELS_GPU_AMD_TARGETS_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"

namespace polnode::kernels::amd {

/// Where the amdgpu driver lists its topology nodes (one directory per CPU or GPU node).
inline constexpr std::string_view kKfdNodesDir = "/sys/class/kfd/kfd/topology/nodes";

/// The target name of a KFD gfx_target_version (major * 10000 + minor * 100 + stepping, minor and
/// stepping written as one hex digit each): 90010 -> "gfx90a", 100300 -> "gfx1030", 90402 ->
/// "gfx942". Empty for 0 (a CPU node) and for a minor or stepping above 15 (no such target).
std::string TargetName(std::uint32_t gfx_target_version);

/// The targets of the GPUs under `nodes_dir` (kKfdNodesDir in production): each numbered node's
/// `properties` file's gfx_target_version line, nodes in ascending number, CPU nodes left out.
/// kNotFound when `nodes_dir` does not exist (no amdgpu driver); kCorruption naming the file when
/// a GPU node's properties cannot be read or parsed.
Result<std::vector<std::string>> GpuTargets(const std::string& nodes_dir);

/// Ok when every GPU in `present` is among `compiled` (a compiled "gfx90a:xnack-" covers "gfx90a":
/// feature suffixes are ignored) and there is at least one GPU; otherwise kUnavailable with a
/// sentence naming the GPUs, the targets of this build and how to rebuild for them. Every GPU
/// counts: ROCm aborts when any visible GPU lacks a code object.
[[nodiscard]] Status CheckTargets(std::span<const std::string> present, std::span<const std::string> compiled);

/// The targets in a space-separated list ("gfx90a gfx1030"), as the build passes them.
std::vector<std::string> SplitTargets(std::string_view list);

}  // namespace polnode::kernels::amd

#endif  // POLNODE_KERNELS_GPU_AMD_TARGETS_H_
