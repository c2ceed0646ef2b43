#include "polnode/roles/challenge_watch.h"

#include <charconv>

#include "polnode/base/file_util.h"

namespace polnode::node {
namespace {

// The text form before the archive: decimal digits and a newline, as the whistleblower wrote it.
// It cannot be mistaken for an archive, which starts with cereal's endianness byte (0 or 1),
// never a digit character.
Result<ChallengeWatch> DecodeText(std::string_view text) {
  if (text.empty() || text.back() != '\n') return Status::Corruption("the text watch does not end its line");
  text.remove_suffix(1);
  ChallengeWatch watch;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), watch.holdings_before);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Status::Corruption("the text watch does not hold an amount");
  }
  return watch;
}

bool StartsWithDigit(std::span<const std::uint8_t> bytes) {
  return !bytes.empty() && bytes[0] >= '0' && bytes[0] <= '9';
}

}  // namespace

template <class Archive>
void ChallengeWatch::save(Archive& ar) const {
  ar(holdings_before);
}

template <class Archive>
void ChallengeWatch::load(Archive& ar, std::uint32_t version) {
  // Version 1 is the only one so far; a later version adds its fields behind `version >= 2`.
  if (version != 1) FailLocalLoad("no reader for version " + std::to_string(version));
  ar(holdings_before);
}

std::vector<std::uint8_t> EncodeChallengeWatch(const ChallengeWatch& watch) {
  return EncodeLocal(kChallengeWatchFormat, watch);
}

Result<ChallengeWatch> DecodeChallengeWatch(std::span<const std::uint8_t> bytes, std::string_view file) {
  if (StartsWithDigit(bytes)) {
    Result<ChallengeWatch> text = DecodeText(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    if (!text.ok()) return Status::Corruption(std::string(file) + ": " + text.status().message() + "; it is left as it is");
    return text;
  }
  return DecodeLocal<ChallengeWatch>(bytes, kChallengeWatchFormat, file);
}

Result<std::optional<ChallengeWatch>> LoadChallengeWatch(const std::string& path) {
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(path, kMaxChallengeWatchBytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) return std::optional<ChallengeWatch>();
    return bytes.status();
  }
  POLNODE_ASSIGN_OR_RETURN(ChallengeWatch watch, DecodeChallengeWatch(*bytes, path));
  return std::optional<ChallengeWatch>(watch);
}

}  // namespace polnode::node
