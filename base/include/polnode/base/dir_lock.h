// One process per directory: a daemon's home (a role's keys, journals and proofs, or a ledger's
// chain store) must never be written by two processes at once. Two solvers on one home once
// claimed and trained the same task into the same folder; two ledgers on one home met RocksDB's
// raw lock error. DirLock takes an advisory flock(2) on DIR/polnode.lock for the life of the
// process that holds it, and names the holder when it cannot.
#ifndef POLNODE_BASE_DIR_LOCK_H_
#define POLNODE_BASE_DIR_LOCK_H_

#include <string>
#include <string_view>

#include "polnode/base/status.h"

namespace polnode {

class DirLock {
 public:
  /// Locks `dir` (which must exist) for this process. kFailedPrecondition when another process
  /// (or another DirLock in this one) holds it, with a message naming `what` the directory is, the
  /// holder's pid and the lock file; kIOError when the lock file cannot be opened. The lock is
  /// released when the DirLock is destroyed or the process exits, however it exits.
  [[nodiscard]] static Result<DirLock> Acquire(const std::string& dir, std::string_view what);

  DirLock(DirLock&& other) noexcept;
  DirLock& operator=(DirLock&& other) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock();

  /// The lock file, DIR/polnode.lock.
  const std::string& path() const { return path_; }

 private:
  DirLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;  // the open lock file holding the flock; -1 once moved from
};

}  // namespace polnode

#endif  // POLNODE_BASE_DIR_LOCK_H_
