// Hexadecimal text for bytes: key files, CLI output, test vectors. Output is always lowercase;
// input accepts either case.
#ifndef POLNODE_CONSENSUS_HEX_H_
#define POLNODE_CONSENSUS_HEX_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"

namespace polnode::consensus {

/// Lowercase hex, two characters per byte: the one way polnode prints bytes (digests, keys,
/// signatures, ids).
std::string ToHex(std::span<const std::uint8_t> bytes);
/// The same for raw bytes held in a string, as protobuf bytes fields and records hold keys and ids.
std::string ToHex(std::string_view raw);

/// Parses an even number of hex characters. An odd length or any non-hex character (whitespace
/// included) is kInvalidArgument.
Result<std::vector<std::uint8_t>> HexToBytes(std::string_view hex);

/// Parses exactly 2 * out.size() hex characters into `out`, which is left untouched on error.
/// Meant for secrets: no heap copy of the decoded bytes is made.
[[nodiscard]] Status HexToFixed(std::string_view hex, std::span<std::uint8_t> out);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_HEX_H_
