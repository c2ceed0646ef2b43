// Content-addressed blobs on disk (DESIGN.md section 5). A checkpoint blob (an EncodeState
// encoding) is named by the lowercase hex state hash of the state it encodes, so that writing a
// checkpoint hashes its state once and its bytes never; every other blob (and the checkpoints of
// proofs written before this naming) by the SHA-256 of its bytes. Every read is checked, so the
// store never serves bytes that do not have their name, and every write is atomic (temporary
// file, fsync, rename), so a crash leaves a blob complete or absent.
#ifndef POLNODE_SOLVER_BLOB_STORE_H_
#define POLNODE_SOLVER_BLOB_STORE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "polnode/base/file_util.h"
#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/solver/train_state.h"

namespace polnode::solver {

/// Largest blob the store reads (a checkpoint of a model far beyond the examples).
inline constexpr std::uint64_t kMaxBlobBytes = std::uint64_t{4} << 30;

/// Whether `bytes` may be blob `name`: they hash to it (SHA-256), or they decode as a state
/// (DecodeState) whose StateHash is `name`.
bool BlobHasName(const consensus::Hash256& name, std::span<const std::uint8_t> bytes);

/// A checkpoint read from the store, decoded once, with the state hash its check computed.
struct StoredState {
  TrainState state;
  consensus::Hash256 state_hash{};
};

/// A directory of blobs named as above. Thread-compatible: concurrent Puts of different
/// blobs are safe (each uses its own temporary file).
class BlobStore {
 public:
  /// Uses `dir`, which Open creates if needed.
  static Result<BlobStore> Open(std::string dir);
  /// Uses `dir`, which must exist: kNotFound otherwise. Nothing is created (a proof directory a
  /// verifier only reads stays as it was).
  static Result<BlobStore> OpenExisting(std::string dir);

  /// Stores `bytes` under their SHA-256 and returns it. Idempotent: storing the same bytes twice
  /// rewrites the same name.
  Result<consensus::Hash256> Put(std::span<const std::uint8_t> bytes);
  /// Stores `bytes` as blob `name`, which must be one BlobHasName accepts for them: the caller
  /// checked or computed it (a fetched blob, a checkpoint's state hash), so it is not checked
  /// again here, and a wrong one makes Get refuse the blob.
  [[nodiscard]] Status PutNamed(const consensus::Hash256& name, std::span<const std::uint8_t> bytes) const;
  /// A temporary file in the store's directory, for a blob written in pieces (several threads may
  /// write it at once) and named when Commit makes it a blob.
  [[nodiscard]] Result<StagedFile> Stage() const;
  /// Makes the staged file blob `name` (durably, replacing a blob of that name); `name` as for
  /// PutNamed.
  [[nodiscard]] Status Commit(StagedFile file, const consensus::Hash256& name) const;
  /// Commit for many files at once: each file is fsynced and renamed (StagedFile::Publish), and
  /// the directory synced once after the last rename. A caller that started each file's writeback
  /// when it was written (StagedFile::StartWriteback) finds most fsyncs with their bytes on the
  /// device already, the journal committed by the fsync before. All are durable blobs when it
  /// returns OK; on an error, the files before the failing one are blobs (not necessarily
  /// durable), the failing one is removed and the rest stay staged (removed when destroyed).
  /// Precondition: files.size() == names.size(); every name as for PutNamed.
  [[nodiscard]] Status CommitAll(std::span<StagedFile> files, std::span<const consensus::Hash256> names) const;
  /// The bytes named `hash`. kNotFound when absent; kResourceExhausted when the file is larger
  /// than `max_bytes` (checked before anything is read: a caller that knows how large the blob
  /// must be passes that); kCorruption when BlobHasName refuses the file's bytes (a damaged or
  /// forged blob).
  Result<std::vector<std::uint8_t>> Get(const consensus::Hash256& hash, std::uint64_t max_bytes = kMaxBlobBytes) const;
  /// The checkpoint named `hash`, decoded and hashed once (BlobHasName's check and the caller's
  /// state hash in one): Get's errors, and kCorruption when the bytes are not a state
  /// (DecodeState's message).
  Result<StoredState> GetState(const consensus::Hash256& hash, std::uint64_t max_bytes = kMaxBlobBytes) const;
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
