// secp256k1 keys and BIP-340 Schnorr signatures through libsecp256k1 (0.2.0 API).
//
// Every account, block producer and solver signs with these. Public keys are BIP-340 x-only keys
// (32 bytes); signatures are 64 bytes. Messages may have any length (BIP-340 as amended in
// 2022-12); polnode itself signs 32-byte SHA-256 digests of canonical encodings (encoding.h).
//
// All operations share one libsecp256k1 context, created and randomized (side-channel blinding)
// on first use and never destroyed. It is only read afterwards, which libsecp256k1 allows from
// any number of threads at once, so every function here is thread-safe.
#ifndef POLNODE_CONSENSUS_KEYS_H_
#define POLNODE_CONSENSUS_KEYS_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "polnode/base/status.h"

namespace polnode::consensus {

/// A BIP-340 signature: 32-byte R.x || 32-byte s.
using SchnorrSignature = std::array<std::uint8_t, 64>;

/// A valid BIP-340 x-only public key (a curve point with even y, named by its x coordinate).
/// Holding one means it parsed: there is no invalid XOnlyPublicKey.
class XOnlyPublicKey {
 public:
  /// Parses 32 bytes. kInvalidArgument if they are not the x coordinate of a curve point
  /// (e.g. x >= the field size, or no y exists for x).
  static Result<XOnlyPublicKey> FromBytes(std::span<const std::uint8_t, 32> bytes);

  /// The 32-byte serialization.
  const std::array<std::uint8_t, 32>& bytes() const { return bytes_; }

  friend bool operator==(const XOnlyPublicKey& a, const XOnlyPublicKey& b) { return a.bytes_ == b.bytes_; }

 private:
  friend class SecretKey;  // derives its public key without a round trip through FromBytes
  friend class XOnlyKeyCache;  // hands out copies of keys it parsed before
  friend bool VerifySchnorr(const XOnlyPublicKey& key, std::span<const std::uint8_t> msg,
                            const SchnorrSignature& sig);
  XOnlyPublicKey() = default;

  std::array<std::uint8_t, 32> bytes_{};
  // libsecp256k1's parsed form of bytes_ (its opaque secp256k1_xonly_pubkey), kept so that
  // VerifySchnorr does not parse the key again: parsing takes a square root, about a tenth of
  // a verification, and every transaction's key was already parsed by FromBytes.
  std::array<std::uint8_t, 64> parsed_{};
};

/// A bounded cache of parsed x-only keys, for verifiers that see the same signers again and
/// again (the mempool: an account sends many transactions). Parsing a key takes a field square
/// root, several microseconds of a ~40 us admission; a hit is a copy. Only keys that parsed are
/// kept, and what is kept is a pure function of the 32 bytes (FromBytes' result), so a hit gives
/// exactly what FromBytes would: it never decides whether a signature is valid.
///
/// Two-way set-associative: each key may sit in one of two slots of a set (chosen by its bytes),
/// and a new key evicts the set's less recently used one. Memory is fixed at construction (about
/// 100 bytes a slot); someone who grinds keys to share a set only makes the next parse of an
/// evicted key a miss. Thread-safe: sets are guarded by striped locks, so verifiers on several
/// threads rarely wait for each other.
class XOnlyKeyCache {
 public:
  /// `slots` is rounded up to a power of two (at least 2: one set).
  explicit XOnlyKeyCache(std::size_t slots = 16384);
  XOnlyKeyCache(const XOnlyKeyCache&) = delete;
  XOnlyKeyCache& operator=(const XOnlyKeyCache&) = delete;

  /// XOnlyPublicKey::FromBytes(bytes), from the cache when these bytes parsed before.
  Result<XOnlyPublicKey> Parse(std::span<const std::uint8_t, 32> bytes);

  /// Parses answered from the cache so far (for tests and metrics).
  std::uint64_t hits() const;

 private:
  struct Slot {
    bool used = false;
    XOnlyPublicKey key;
  };
  static constexpr std::size_t kStripes = 64;
  std::vector<Slot> slots_;
  std::array<std::mutex, kStripes> stripes_;  // set s (slots 2s, 2s+1) is guarded by stripes_[s % kStripes]
  std::atomic<std::uint64_t> hits_{0};
};

/// A secp256k1 secret key: a scalar in [1, n-1]. Its bytes are wiped from memory when the object
/// (or any copy of it) is destroyed. Copies are allowed so a key can be kept in a Result; each
/// copy wipes itself.
class SecretKey {
 public:
  /// A fresh key from OpenSSL's CSPRNG (RAND_bytes). kUnavailable if the CSPRNG fails.
  static Result<SecretKey> Generate();

  /// A key from its 32-byte big-endian encoding. kInvalidArgument for 0 or a value >= the curve
  /// order n (such bytes are not a key).
  static Result<SecretKey> FromBytes(std::span<const std::uint8_t, 32> bytes);

  SecretKey(const SecretKey&) = default;
  SecretKey& operator=(const SecretKey& other);
  ~SecretKey();

  /// The x-only public key of this secret key.
  const XOnlyPublicKey& PublicKey() const { return public_key_; }

  /// The secret bytes, for writing a key file. Do not log or copy them elsewhere.
  std::span<const std::uint8_t, 32> bytes() const { return bytes_; }

 private:
  SecretKey() = default;

  std::array<std::uint8_t, 32> bytes_{};
  XOnlyPublicKey public_key_;
};

/// Signs `msg` (any length, including 0) per BIP-340 with the given 32 bytes of auxiliary
/// randomness. Deterministic: the same key, message and aux_rand give the same signature, which
/// is what the BIP-340 test vectors check. The signature is verified before it is returned
/// (BIP-340 recommends this against fault attacks); kInternal if that check fails.
Result<SchnorrSignature> SignSchnorr(const SecretKey& key, std::span<const std::uint8_t> msg,
                                     std::span<const std::uint8_t, 32> aux_rand);

/// As above with fresh aux_rand from the CSPRNG (BIP-340's recommended default signing).
/// kUnavailable if the CSPRNG fails.
Result<SchnorrSignature> SignSchnorr(const SecretKey& key, std::span<const std::uint8_t> msg);

/// True iff `sig` is a valid BIP-340 signature of `msg` (any length) under `key`.
[[nodiscard]] bool VerifySchnorr(const XOnlyPublicKey& key, std::span<const std::uint8_t> msg,
                                 const SchnorrSignature& sig);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_KEYS_H_
