// The prover's progress file (progress.bin in a proof directory, prover.h): which checkpoints are
// already on disk, so an interrupted run resumes instead of starting over. A local file (no other
// node reads it and no hash covers it), so it is a versioned cereal archive (base/local_archive.h)
// of kind "pol-progress":
//   version 1: Fixed task id, size n, n x (state hash, blob content hash), size m, m x loss bits.
// Files of the hand-written encoding before it (String "polnode/pol-progress/v2", Fixed task id,
// U64 n, n x (Fixed, Fixed), U64 m, m x U32, in consensus/encoding.h's canonical encoding) are
// still read, so a run interrupted under an older polnode resumes; they are never written.
#ifndef POLNODE_SOLVER_PROVE_PROGRESS_H_
#define POLNODE_SOLVER_PROVE_PROGRESS_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "polnode/base/local_archive.h"
#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/solver/task_spec.h"

namespace polnode::solver {

inline constexpr LocalFormat kProgressFormat{"pol-progress", 1};

/// What a resumed run starts from: the checkpoints already on disk (state hash and blob content
/// hash of each) and the losses of the steps before the last one.
struct ProveProgress {
  consensus::Hash256 task_id{};
  std::vector<consensus::Hash256> hashes;
  std::vector<consensus::Hash256> blobs;  // same length as hashes
  std::vector<std::uint32_t> loss_bits;

  bool operator==(const ProveProgress&) const = default;

  template <class Archive>
  void save(Archive& ar) const;
  template <class Archive>
  void load(Archive& ar, std::uint32_t version);
};

/// The bytes of `progress` in the newest format.
std::vector<std::uint8_t> EncodeProgress(const ProveProgress& progress);

/// Decodes a progress file of any version (the legacy encoding included); `file` names it in
/// errors. Checks only the file's own structure (hashes and blobs of one length); CheckProgress
/// checks it against a task. Errors as DecodeLocal's: kFailedPrecondition for a newer version or
/// another kind of file, kCorruption for a truncated or damaged one.
Result<ProveProgress> DecodeProgress(std::span<const std::uint8_t> bytes, std::string_view file);

/// Whether `progress` can resume `task`: kFailedPrecondition when it belongs to another task,
/// kCorruption when its checkpoint or loss counts do not fit the task's schedule. `file` names the
/// file in errors.
[[nodiscard]] Status CheckProgress(const ProveProgress& progress, const TaskSpec& task, std::string_view file);

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_PROVE_PROGRESS_H_
