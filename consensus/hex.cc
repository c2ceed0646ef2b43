#include "polnode/consensus/hex.h"

namespace polnode::consensus {
namespace {

int HexDigitValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Validates all of `hex` before writing anything, so `out` is untouched on error.
Status DecodeInto(std::string_view hex, std::span<std::uint8_t> out) {
  for (std::size_t i = 0; i < hex.size(); ++i) {
    if (HexDigitValue(hex[i]) < 0) {
      return Status::InvalidArgument("non-hex character at position " + std::to_string(i));
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::uint8_t>(HexDigitValue(hex[2 * i]) * 16 + HexDigitValue(hex[2 * i + 1]));
  }
  return Status::Ok();
}

}  // namespace

std::string ToHex(std::span<const std::uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (std::uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

std::string ToHex(std::string_view raw) {
  return ToHex(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(raw.data()), raw.size()));
}

Result<std::vector<std::uint8_t>> HexToBytes(std::string_view hex) {
  if (hex.size() % 2 != 0) {
    return Status::InvalidArgument("hex text has an odd number of characters (" + std::to_string(hex.size()) + ")");
  }
  std::vector<std::uint8_t> out(hex.size() / 2);
  POLNODE_RETURN_IF_ERROR(DecodeInto(hex, out));
  return out;
}

Status HexToFixed(std::string_view hex, std::span<std::uint8_t> out) {
  if (hex.size() != 2 * out.size()) {
    return Status::InvalidArgument("expected " + std::to_string(2 * out.size()) + " hex characters, got " +
                                   std::to_string(hex.size()));
  }
  return DecodeInto(hex, out);
}

}  // namespace polnode::consensus
