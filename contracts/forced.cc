#include "polnode/contracts/forced.h"

#include <algorithm>
#include <set>
#include <string>

#include "keys.h"
#include "polnode/contracts/beacon.h"
#include "verification.h"

namespace polnode::contracts {
namespace {

// The honest hash the reveal showed at forced checkpoint `k`, or nullptr when `k` is not among the
// shown forced checkpoints (Task.forced_checkpoints and honest_hashes are parallel).
const std::string* HonestHashAt(const proto::Task& task, std::uint64_t k) {
  const auto& forced = task.forced_checkpoints();
  const auto it = std::lower_bound(forced.begin(), forced.end(), k);
  if (it == forced.end() || *it != k) return nullptr;
  const int index = static_cast<int>(it - forced.begin());
  return index < task.honest_hashes_size() ? &task.honest_hashes(index) : nullptr;
}

// Whether `failed` (with `digests`, by `party`) names exactly those of `covered` whose end is a
// forced checkpoint, each (exact mode) with the digest of the honest hash there.
bool NamesExactlyTheForced(const proto::Task& task, const std::vector<std::uint64_t>& covered,
                           const google::protobuf::RepeatedField<std::uint64_t>& failed,
                           const google::protobuf::RepeatedPtrField<std::string>& digests, std::string_view party) {
  std::vector<std::uint64_t> expected;
  for (std::uint64_t s : covered) {
    if (HonestHashAt(task, s + 1) != nullptr) expected.push_back(s);
  }
  if (!std::equal(expected.begin(), expected.end(), failed.begin(), failed.end())) return false;
  if (task.spec().tolerant()) return true;
  if (digests.size() != failed.size()) return false;
  for (int j = 0; j < failed.size(); ++j) {
    const std::string* honest = HonestHashAt(task, failed[j] + 1);
    if (digests[j] != ToBytes(SegmentDigest(party, failed[j], *honest))) return false;
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
                          [&](std::uint64_t s) { return HonestHashAt(task, s + 1) != nullptr; });
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
