#include "polnode/base/dir_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <utility>

namespace polnode {
namespace {

// The pid the holder wrote into the lock file, or "" when it cannot be read.
std::string HolderPid(int fd) {
  char buffer[32] = {};
  const ssize_t n = pread(fd, buffer, sizeof(buffer) - 1, 0);
  if (n <= 0) return "";
  std::string pid(buffer, static_cast<std::size_t>(n));
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid;
}

}  // namespace

Result<DirLock> DirLock::Acquire(const std::string& dir, std::string_view what) {
  std::string path = dir + "/polnode.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IOError("cannot open " + path + ": " + std::strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    const std::string holder = HolderPid(fd);
    close(fd);
    if (err == EWOULDBLOCK) {
      return Status::FailedPrecondition(std::string(what) + " " + dir + " is in use by another polnode process" +
                                        (holder.empty() ? "" : " (pid " + holder + ")") +
                                        ": run one process per home, or give this one its own --home (lock: " +
                                        path + ")");
    }
    return Status::IOError("cannot lock " + path + ": " + std::strerror(err));
  }
  // The pid is only a hint for the message above; the flock is the lock.
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    const int err = errno;
    close(fd);
    return Status::IOError("cannot write " + path + ": " + std::strerror(err));
  }
  return DirLock(std::move(path), fd);
}

DirLock::DirLock(DirLock&& other) noexcept : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

DirLock& DirLock::operator=(DirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

DirLock::~DirLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor releases the flock
}

}  // namespace polnode
