// The whistleblower's watch on a task it challenges (home/watch/<task hex>, whistleblower_role.h):
// its holdings (balance plus whistleblower stake) just before the challenge, so that when the task
// settles, even after a restart, it can log what its disputes earned or cost. A local file read by
// no other node, so it is a versioned cereal archive (base/local_archive.h) of kind
// "challenge-watch":
//   version 1: uint64 holdings before the challenge.
// Watches of the text form before it ("<decimal holdings>\n") are still read; they are never written.
#ifndef POLNODE_ROLES_CHALLENGE_WATCH_H_
#define POLNODE_ROLES_CHALLENGE_WATCH_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/local_archive.h"
#include "polnode/base/status.h"

namespace polnode::node {

inline constexpr LocalFormat kChallengeWatchFormat{"challenge-watch", 1};
/// No watch is larger (the archive is 29 bytes, the text form at most 21).
inline constexpr std::uint64_t kMaxChallengeWatchBytes = 64;

struct ChallengeWatch {
  std::uint64_t holdings_before = 0;

  bool operator==(const ChallengeWatch&) const = default;

  template <class Archive>
  void save(Archive& ar) const;
  template <class Archive>
  void load(Archive& ar, std::uint32_t version);
};

/// The bytes of `watch` in the newest format.
std::vector<std::uint8_t> EncodeChallengeWatch(const ChallengeWatch& watch);

/// Decodes a watch of any version, the text form included; `file` names it in errors.
/// kFailedPrecondition for a newer version or another kind of file; kCorruption for a truncated
/// or damaged one.
Result<ChallengeWatch> DecodeChallengeWatch(std::span<const std::uint8_t> bytes, std::string_view file);

/// Reads the watch at `path`: std::nullopt when there is none, DecodeChallengeWatch's errors (which
/// name the file) when it cannot be read. It never changes the file, so the caller can leave an
/// unreadable one for the operator.
Result<std::optional<ChallengeWatch>> LoadChallengeWatch(const std::string& path);

}  // namespace polnode::node

#endif  // POLNODE_ROLES_CHALLENGE_WATCH_H_
