#include "polnode/consensus/encoding.h"

#include <algorithm>
#include <array>
#include <bit>
#include <string>
#include <utility>

namespace polnode::consensus {
namespace {

template <std::size_t N>
std::array<std::uint8_t, N> ToLittleEndian(std::uint64_t v) {
  std::array<std::uint8_t, N> out{};
  for (std::size_t i = 0; i < N; ++i) {
    out[i] = static_cast<std::uint8_t>(v >> (8 * i));
  }
  return out;
}

}  // namespace

void Writer::U8(std::uint8_t v) { Append(ToLittleEndian<1>(v)); }
void Writer::U16(std::uint16_t v) { Append(ToLittleEndian<2>(v)); }
void Writer::U32(std::uint32_t v) { Append(ToLittleEndian<4>(v)); }
void Writer::U64(std::uint64_t v) { Append(ToLittleEndian<8>(v)); }
void Writer::I64(std::int64_t v) { U64(static_cast<std::uint64_t>(v)); }
void Writer::Bool(bool v) { U8(v ? 1 : 0); }
void Writer::F32(float v) { U32(std::bit_cast<std::uint32_t>(v)); }
void Writer::F64(double v) { U64(std::bit_cast<std::uint64_t>(v)); }
void Writer::Fixed(std::span<const std::uint8_t> bytes) { Append(bytes); }

void Writer::Bytes(std::span<const std::uint8_t> bytes) {
  U64(bytes.size());
  Append(bytes);
}

void Writer::String(std::string_view s) {
  Bytes(std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()));
}

void BufferWriter::Append(std::span<const std::uint8_t> bytes) {
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

std::vector<std::uint8_t> BufferWriter::Take() {
  std::vector<std::uint8_t> out = std::move(buffer_);
  buffer_.clear();
  return out;
}

Result<std::span<const std::uint8_t>> Reader::Take(std::size_t n) {
  if (n > remaining()) {
    return Status::Corruption("truncated encoding: need " + std::to_string(n) + " bytes at offset " +
                              std::to_string(pos_) + ", " + std::to_string(remaining()) + " left");
  }
  std::span<const std::uint8_t> out = data_.subspan(pos_, n);
  pos_ += n;
  return out;
}

Result<std::uint64_t> Reader::LittleEndian(std::size_t width) {
  POLNODE_ASSIGN_OR_RETURN(std::span<const std::uint8_t> bytes, Take(width));
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i) {
    v |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
  }
  return v;
}

Result<std::uint8_t> Reader::U8() {
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t v, LittleEndian(1));
  return static_cast<std::uint8_t>(v);
}

Result<std::uint16_t> Reader::U16() {
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t v, LittleEndian(2));
  return static_cast<std::uint16_t>(v);
}

Result<std::uint32_t> Reader::U32() {
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t v, LittleEndian(4));
  return static_cast<std::uint32_t>(v);
}

Result<std::uint64_t> Reader::U64() { return LittleEndian(8); }

Result<std::int64_t> Reader::I64() {
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t v, LittleEndian(8));
  return static_cast<std::int64_t>(v);
}

Result<bool> Reader::Bool() {
  if (remaining() >= 1 && data_[pos_] > 1) {
    return Status::Corruption("bool at offset " + std::to_string(pos_) + " is neither 0 nor 1");
  }
  POLNODE_ASSIGN_OR_RETURN(std::uint8_t v, U8());
  return v == 1;
}

Result<float> Reader::F32() {
  POLNODE_ASSIGN_OR_RETURN(std::uint32_t bits, U32());
  return std::bit_cast<float>(bits);
}

Result<double> Reader::F64() {
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t bits, U64());
  return std::bit_cast<double>(bits);
}

Status Reader::Fixed(std::span<std::uint8_t> out) {
  POLNODE_ASSIGN_OR_RETURN(std::span<const std::uint8_t> bytes, Take(out.size()));
  std::copy(bytes.begin(), bytes.end(), out.begin());
  return Status::Ok();
}

Result<std::vector<std::uint8_t>> Reader::Bytes(std::size_t max_len) {
  const std::size_t start = pos_;
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t len, U64());
  if (len > max_len) {
    pos_ = start;
    return Status::ResourceExhausted("byte string of " + std::to_string(len) + " bytes exceeds the limit of " +
                                     std::to_string(max_len));
  }
  Result<std::span<const std::uint8_t>> bytes = Take(static_cast<std::size_t>(len));
  if (!bytes.ok()) {
    pos_ = start;
    return bytes.status();
  }
  return std::vector<std::uint8_t>(bytes->begin(), bytes->end());
}

Result<std::string> Reader::String(std::size_t max_len) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, Bytes(max_len));
  return std::string(bytes.begin(), bytes.end());
}

Status Reader::ExpectEnd() const {
  if (remaining() != 0) {
    return Status::Corruption(std::to_string(remaining()) + " unexpected trailing bytes after offset " +
                              std::to_string(pos_));
  }
  return Status::Ok();
}

}  // namespace polnode::consensus
