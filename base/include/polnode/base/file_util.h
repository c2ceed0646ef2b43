// Whole-file reads with a size bound and crash-safe whole-file writes, shared by every layer that
// touches the disk outside RocksDB (blobs, proof progress, task files, key-less config files).
#ifndef POLNODE_BASE_FILE_UTIL_H_
#define POLNODE_BASE_FILE_UTIL_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"

namespace polnode {

/// A file written under a temporary name and renamed onto its final path once complete and
/// durable (the steps of WriteFileAtomically, apart): the bytes may be written from several
/// threads at once, and the final name may be chosen after they are written. Destroying one that
/// was not committed removes the temporary file. Move-only.
class StagedFile {
 public:
  /// Creates `temp_path` (which must not exist: it is created exclusively, mode 0644) for
  /// writing. kIOError with the OS reason when it cannot be created.
  [[nodiscard]] static Result<StagedFile> Create(std::string temp_path);
  /// A temporary path beside `path` ("<path>.tmp.<pid>.<n>"), unique per process and call.
  static std::string TempPathBeside(const std::string& path);

  StagedFile(StagedFile&& other) noexcept;
  StagedFile& operator=(StagedFile&& other) noexcept;
  StagedFile(const StagedFile&) = delete;
  StagedFile& operator=(const StagedFile&) = delete;
  ~StagedFile();

  /// Writes `bytes` at byte `offset` (pwrite: safe from several threads at once for disjoint
  /// ranges). kIOError with the OS reason; kFailedPrecondition after Commit.
  [[nodiscard]] Status WriteAt(std::uint64_t offset, std::span<const std::uint8_t> bytes) const;
  /// Starts writing the bytes written so far to the device without waiting for them (Linux's
  /// sync_file_range; elsewhere nothing): the calling thread does the work of handing the pages
  /// to the device, so that Commit's fsync, on whichever thread, mostly waits. Durability still
  /// comes only from Commit. kIOError with the OS reason; kFailedPrecondition after Commit.
  [[nodiscard]] Status StartWriteback() const;
  /// fsyncs and closes the file, renames it onto `path` (in the same file system: the temporary
  /// path's directory, normally) and fsyncs `path`'s directory, so both the bytes and the name
  /// survive a power loss. On failure the temporary file is removed and kIOError returned; either
  /// way the file is closed, and a second Commit is kFailedPrecondition.
  [[nodiscard]] Status Commit(const std::string& path);
  /// Commit without its directory sync: the bytes are durable when it returns OK, the name only
  /// once SyncDirectory of its directory has returned OK too. For many files into one directory, one
  /// directory sync after all of them serves every name. Failures as Commit's.
  [[nodiscard]] Status Publish(const std::string& path);
  const std::string& temp_path() const { return temp_path_; }

 private:
  StagedFile(std::string temp_path, int fd) : temp_path_(std::move(temp_path)), fd_(fd) {}
  void Discard();  // closes and unlinks an uncommitted file
  std::string temp_path_;
  int fd_ = -1;  // -1 once committed, discarded or moved from
};

/// fsyncs directory `dir`: a rename, link or new file in it is durable once this returns OK.
/// kIOError with the OS reason.
[[nodiscard]] Status SyncDirectory(const std::string& dir);

/// Writes `bytes` to `path` atomically: a temporary file in the same directory is written,
/// fsynced and renamed over `path`, and the directory is fsynced so the rename itself survives a
/// power loss. The new file has mode 0644. kIOError with the OS reason on failure (no temporary
/// file is left behind).
[[nodiscard]] Status WriteFileAtomically(const std::string& path, std::span<const std::uint8_t> bytes);
[[nodiscard]] Status WriteFileAtomically(const std::string& path, std::string_view bytes);

/// Reads a whole file of at most `max_bytes`. kNotFound when absent, kResourceExhausted when
/// larger, kIOError for other failures.
Result<std::vector<std::uint8_t>> ReadWholeFile(const std::string& path, std::uint64_t max_bytes);

}  // namespace polnode

#endif  // POLNODE_BASE_FILE_UTIL_H_
