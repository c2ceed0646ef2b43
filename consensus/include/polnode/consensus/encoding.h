// Canonical byte encoding: the one way polnode turns values into bytes before hashing or signing
// them (state hashes, transaction signing digests, Merkle proofs).
//
// Protobuf serialization is not used for this because it is not canonical (field order, varint
// widths and unknown fields may vary between encoders for the same message). This format has
// exactly one encoding per value:
//
//   U8/U16/U32/U64   fixed width, little-endian, no padding or alignment
//   I64              the two's-complement bits of the value as U64
//   Bool             one byte, 0x00 or 0x01 (a Reader rejects any other byte)
//   F32/F64          the IEEE-754 bit pattern as U32/U64. Bits, not values: +0.0 and -0.0 encode
//                    differently and every NaN keeps its payload, because hashes name exact bits
//   Fixed(bytes)     the bytes as they are, no length; for fields whose size the format fixes
//                    (hashes, public keys, signatures)
//   Bytes/String     U64 length, then the bytes; strings are raw bytes, no terminator and no
//                    character-set conversion
//
// The format carries no field tags or version: every user starts its encoding with a
// length-prefixed domain string (e.g. "polnode/tx/v1") that names what follows and its version.
#ifndef POLNODE_CONSENSUS_ENCODING_H_
#define POLNODE_CONSENSUS_ENCODING_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// Appends canonical encodings to a destination chosen by the subclass (a buffer or a hash), so
/// large values (model weights) can be hashed without first being copied into memory.
class Writer {
 public:
  virtual ~Writer() = default;

  void U8(std::uint8_t v);
  void U16(std::uint16_t v);
  void U32(std::uint32_t v);
  void U64(std::uint64_t v);
  void I64(std::int64_t v);
  void Bool(bool v);
  void F32(float v);
  void F64(double v);
  /// Raw bytes without a length prefix; only for sizes the format itself fixes.
  void Fixed(std::span<const std::uint8_t> bytes);
  /// U64 length, then the bytes.
  void Bytes(std::span<const std::uint8_t> bytes);
  /// Same encoding as Bytes over the string's chars.
  void String(std::string_view s);

 protected:
  /// Receives every encoded byte, in order.
  virtual void Append(std::span<const std::uint8_t> bytes) = 0;
};

/// A Writer that collects the encoding in memory.
class BufferWriter final : public Writer {
 public:
  /// The bytes written so far.
  std::span<const std::uint8_t> bytes() const { return buffer_; }
  /// Moves the bytes out; the writer is empty afterwards.
  std::vector<std::uint8_t> Take();

 protected:
  void Append(std::span<const std::uint8_t> bytes) override;

 private:
  std::vector<std::uint8_t> buffer_;
};

/// A Writer that feeds SHA-256 directly: Finalize() equals Sha256(BufferWriter's bytes).
class HashWriter final : public Writer {
 public:
  /// The digest of everything written; the writer restarts empty afterwards.
  Hash256 Finalize() { return hasher_.Finalize(); }

 protected:
  void Append(std::span<const std::uint8_t> bytes) override { hasher_.Update(bytes); }

 private:
  Sha256Hasher hasher_;
};

/// Reads the encoding back. Every read checks the remaining length first and returns
/// kCorruption on truncation, leaving the position where it was; nothing reads past the end.
/// The Reader does not own the bytes: they must outlive it.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> data) : data_(data) {}

  Result<std::uint8_t> U8();
  Result<std::uint16_t> U16();
  Result<std::uint32_t> U32();
  Result<std::uint64_t> U64();
  Result<std::int64_t> I64();
  /// kCorruption for any byte other than 0x00 or 0x01, so a bool has one encoding.
  Result<bool> Bool();
  Result<float> F32();
  Result<double> F64();
  /// Fills `out` completely (its size is the fixed size the format names).
  [[nodiscard]] Status Fixed(std::span<std::uint8_t> out);
  /// A length-prefixed byte string of at most `max_len` bytes. A longer declared length is
  /// kResourceExhausted (checked before anything is allocated), a truncated one kCorruption.
  Result<std::vector<std::uint8_t>> Bytes(std::size_t max_len);
  /// As Bytes, returned as a std::string.
  Result<std::string> String(std::size_t max_len);

  /// Bytes not yet read.
  std::size_t remaining() const { return data_.size() - pos_; }
  /// kCorruption unless every byte was read: trailing bytes would give a value two encodings.
  [[nodiscard]] Status ExpectEnd() const;

 private:
  // Takes `n` bytes or fails without moving.
  Result<std::span<const std::uint8_t>> Take(std::size_t n);
  Result<std::uint64_t> LittleEndian(std::size_t width);

  std::span<const std::uint8_t> data_;
  std::size_t pos_ = 0;
};

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_ENCODING_H_
