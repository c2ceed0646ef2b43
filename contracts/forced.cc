#include "polnode/contracts/forced.h"

#include <algorithm>
#include <set>
#include <string>

#include "keys.h"
#include "polnode/contracts/beacon.h"
#include "verification.h"

namespace polnode::contracts {
namespace {

// Where forced checkpoint `k` sits among the shown forced checkpoints (Task.forced_checkpoints,
// ascending), or -1 when `k` is not one of them.
int ForcedIndex(const proto::Task& task, std::uint64_t k) {
  const auto& forced = task.forced_checkpoints();
  const auto it = std::lower_bound(forced.begin(), forced.end(), k);
  if (it == forced.end() || *it != k) return -1;
  return static_cast<int>(it - forced.begin());
}

// What a right digest of the segment ending at forced checkpoint `k` commits to: the honest hash
// there (exact mode) or the hash of the perturbed indices (tolerant mode); nullptr when `k` is not
// among the shown forced checkpoints.
const std::string* DigestEndAt(const proto::Task& task, std::uint64_t k) {
  const int index = ForcedIndex(task, k);
  if (index < 0) return nullptr;
  const auto& ends = task.spec().tolerant() ? task.perturbed_index_hashes() : task.honest_hashes();
  return index < ends.size() ? &ends.Get(index) : nullptr;
}

// Whether `failed` (with `digests`, by `party`) names exactly those of `covered` whose end is a
// forced checkpoint, each with the digest of what a replay finds there.
bool NamesExactlyTheForced(const proto::Task& task, const std::vector<std::uint64_t>& covered,
                           const google::protobuf::RepeatedField<std::uint64_t>& failed,
                           const google::protobuf::RepeatedPtrField<std::string>& digests, std::string_view party) {
  std::vector<std::uint64_t> expected;
  for (std::uint64_t s : covered) {
    if (ForcedIndex(task, s + 1) >= 0) expected.push_back(s);
  }
  if (!std::equal(expected.begin(), expected.end(), failed.begin(), failed.end())) return false;
  if (digests.size() != failed.size()) return false;
  for (int j = 0; j < failed.size(); ++j) {
    const std::string* end = DigestEndAt(task, failed[j] + 1);
    if (end == nullptr || digests[j] != ToBytes(SegmentDigest(party, failed[j], *end))) return false;
  }
  return true;
}

}  // namespace

std::vector<std::uint64_t> RevealCheckpoints(const proto::Task& task) {
  const std::uint64_t segments = SegmentCount(task.spec());
  std::set<std::uint64_t> shown{segments};
  for (const proto::VerifierSlot& slot : task.verifiers()) {
    if (slot.absent() || (slot.verdict() != proto::VERDICT_ACCEPT && slot.verdict() != proto::VERDICT_REJECT)) continue;
    for (std::uint64_t s : slot.segments()) shown.insert(s + 1);
  }
  for (const proto::Challenge& challenge : task.challenges()) {
    for (std::uint64_t s : challenge.segments()) shown.insert(s + 1);
    for (std::uint64_t s : challenge.failed_segments()) shown.insert(s + 1);
  }
  return {shown.begin(), shown.end()};
}

bool VerdictRight(const proto::Task& task, const proto::VerifierSlot& slot) {
  if (slot.absent()) return false;
  const std::vector<std::uint64_t> covered = CoveredSegments(task, slot);
  switch (slot.verdict()) {
    case proto::VERDICT_ACCEPT:
      return std::none_of(covered.begin(), covered.end(),
                          [&](std::uint64_t s) { return ForcedIndex(task, s + 1) >= 0; });
    case proto::VERDICT_REJECT:
      return NamesExactlyTheForced(task, covered, slot.failed_segments(), slot.segment_digests(), slot.verifier());
    default:
      return false;
  }
}

bool ChallengeCaught(const proto::Task& task, const proto::Challenge& challenge) {
  // A challenge names at least one segment (ExecuteDispute); an empty one caught nothing.
  if (challenge.failed_segments().empty()) return false;
  const std::vector<std::uint64_t> covered(challenge.segments().begin(), challenge.segments().end());
  return NamesExactlyTheForced(task, covered, challenge.failed_segments(), challenge.segment_digests(),
                               challenge.challenger());
}

}  // namespace polnode::contracts
