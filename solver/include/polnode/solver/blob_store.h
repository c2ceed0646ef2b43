// Content-addressed blobs on disk (DESIGN.md section 5): a blob's name is the lowercase hex
// SHA-256 of its bytes. Every read is re-hashed, so the store never serves bytes that do not hash
// to their name, and every write is atomic (temporary file, fsync, rename), so a crash leaves a
// blob complete or absent.
#ifndef POLNODE_SOLVER_BLOB_STORE_H_
#define POLNODE_SOLVER_BLOB_STORE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/file_util.h"
#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"

namespace polnode::solver {

/// Largest blob the store reads (a checkpoint of a model far beyond the examples).
inline constexpr std::uint64_t kMaxBlobBytes = std::uint64_t{4} << 30;

/// A directory of blobs named by their SHA-256. Thread-compatible: concurrent Puts of different
/// blobs are safe (each uses its own temporary file).
class BlobStore {
 public:
  /// Uses `dir`, which Open creates if needed.
  static Result<BlobStore> Open(std::string dir);
  /// Uses `dir`, which must exist: kNotFound otherwise. Nothing is created (a proof directory a
  /// verifier only reads stays as it was).
  static Result<BlobStore> OpenExisting(std::string dir);

  /// Stores `bytes` under their hash and returns it. Idempotent: storing the same bytes twice
  /// rewrites the same name.
  Result<consensus::Hash256> Put(std::span<const std::uint8_t> bytes);
  /// The bytes named `hash`. kNotFound when absent; kResourceExhausted when the file is larger
  /// than `max_bytes` (checked before anything is read: a caller that knows how large the blob
  /// must be passes that); kCorruption when the file's bytes do not hash to `hash` (a damaged or
  /// forged blob).
  Result<std::vector<std::uint8_t>> Get(const consensus::Hash256& hash, std::uint64_t max_bytes = kMaxBlobBytes) const;
  /// Whether a file named `hash` exists (its bytes are checked only by Get).
  bool Contains(const consensus::Hash256& hash) const;
  /// The file path of blob `hash`.
  std::string PathOf(const consensus::Hash256& hash) const;
  const std::string& dir() const { return dir_; }

 private:
  explicit BlobStore(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace polnode::solver

#endif  // POLNODE_SOLVER_BLOB_STORE_H_
