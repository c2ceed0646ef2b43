// SHA-256 through OpenSSL's EVP interface. Every hash polnode names (state hashes, blob names,
// Merkle nodes, transaction ids, block hashes) is computed here.
#ifndef POLNODE_CONSENSUS_SHA256_H_
#define POLNODE_CONSENSUS_SHA256_H_

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "polnode/base/status.h"

namespace polnode::consensus {

/// A 32-byte digest. Compared and ordered bytewise.
using Hash256 = std::array<std::uint8_t, 32>;

/// SHA-256 of `data` in one call.
Hash256 Sha256(std::span<const std::uint8_t> data);
Hash256 Sha256(std::string_view data);

/// Parses 64 hex characters (either case). Anything else is kInvalidArgument. (Digests print with
/// ToHex, hex.h.)
Result<Hash256> HashFromHex(std::string_view hex);

/// Incremental SHA-256 for data that arrives in pieces (large tensors, streamed blobs).
/// Usage: Sha256Hasher h; h.Update(a); h.Update(b); Hash256 d = h.Finalize();
/// After Finalize the hasher is reset and may be reused.
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;

  void Update(std::span<const std::uint8_t> data);
  void Update(std::string_view data);
  Hash256 Finalize();

 private:
  struct Impl;
  // OpenSSL contexts are recycled per thread (one spare each): allocating and freeing one per
  // hasher cost more than hashing the 65 bytes of a state-tree node or a signing digest.
  static std::unique_ptr<Impl> TakeImpl();
  static void ReturnImpl(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_SHA256_H_
