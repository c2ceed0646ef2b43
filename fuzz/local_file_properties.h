// Shared by the targets of local-file decoders (base/local_archive.h: the prover's progress, the
// duty journals, the whistleblower's watches, the submitter's facts): the properties each decoder
// keeps whatever bytes it reads, and the damaged seeds every such target starts from.
#ifndef POLNODE_FUZZ_LOCAL_FILE_PROPERTIES_H_
#define POLNODE_FUZZ_LOCAL_FILE_PROPERTIES_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "fuzz.h"
#include "polnode/base/local_archive.h"
#include "polnode/base/status.h"

namespace polnode::fuzz {

template <class T>
using LocalDecodeFn = Result<T> (*)(std::span<const std::uint8_t> bytes, std::string_view file);
template <class T>
using LocalEncodeFn = std::vector<std::uint8_t> (*)(const T& value);

/// Decodes `input`: a failure must be kCorruption or kFailedPrecondition (never a crash or an
/// allocation of whatever length the bytes claim); an accepted value must re-encode within
/// `max_bytes` to bytes that decode to an equal value. Returns the accepted value for the target's
/// own checks, std::nullopt when the input was refused.
template <class T>
std::optional<T> CheckLocalDecoder(FuzzInput input, LocalDecodeFn<T> decode, LocalEncodeFn<T> encode,
                                   std::uint64_t max_bytes = std::numeric_limits<std::uint64_t>::max()) {
  Result<T> decoded = decode(input, "local-file");
  if (!decoded.ok()) {
    const StatusCode code = decoded.status().code();
    POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kFailedPrecondition,
                       "the decoder failed with a code other than kCorruption or kFailedPrecondition");
    return std::nullopt;
  }
  const std::vector<std::uint8_t> bytes = encode(*decoded);
  POLNODE_FUZZ_CHECK(bytes.size() <= max_bytes, "the re-encoding of an accepted file exceeds its bound");
  Result<T> again = decode(bytes, "local-file");
  POLNODE_FUZZ_CHECK(again.ok(), "the re-encoding of an accepted file does not decode");
  POLNODE_FUZZ_CHECK(*again == *decoded, "an accepted value changed across a re-encoding");
  return std::move(*decoded);
}

/// The bytes of a text form that a format before the archive wrote, as a seed.
inline std::vector<std::uint8_t> TextBytes(std::string_view text) { return {text.begin(), text.end()}; }

/// The damaged forms of a valid archive `valid` that every local-file target seeds: "truncated"
/// (its last `cut` bytes gone) and "newer-version" (the envelope's version one past `valid`'s, the
/// newest its format reads).
inline std::vector<Seed> DamagedLocalSeeds(const std::vector<std::uint8_t>& valid, std::size_t cut) {
  std::vector<std::uint8_t> newer = valid;
  // The version's low byte, after cereal's endianness byte and the kind: one past the newest.
  newer[1 + kLocalKindBytes] = static_cast<std::uint8_t>(valid[1 + kLocalKindBytes] + 1);
  return {{"truncated", std::vector<std::uint8_t>(valid.begin(), valid.end() - static_cast<std::ptrdiff_t>(cut))},
          {"newer-version", std::move(newer)}};
}

}  // namespace polnode::fuzz

#endif  // POLNODE_FUZZ_LOCAL_FILE_PROPERTIES_H_
