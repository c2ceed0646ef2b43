#include "file_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace polnode::node {
namespace {

std::string OsError(std::string_view what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

}  // namespace

Result<std::string> ReadFile(const std::string& path, std::size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::NotFound("no file at " + path);
    return Status::IOError(OsError("cannot open", path));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument(path + " is not a regular file");
  }
  if (static_cast<std::size_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return Status::ResourceExhausted(path + " is " + std::to_string(st.st_size) + " bytes; the limit is " +
                                     std::to_string(max_bytes));
  }
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Status::IOError(OsError("cannot read", path));
      ::close(fd);
      return s;
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return out;
}

Status WriteFileAtomic(const std::string& path, std::string_view bytes, unsigned mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return Status::IOError(OsError("cannot create", tmp));
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = Status::IOError(OsError("cannot write", tmp));
      ::close(fd);
      ::unlink(tmp.c_str());
      return s;
    }
    done += static_cast<std::size_t>(n);
  }
  bool flushed = ::fsync(fd) == 0;
  flushed = ::close(fd) == 0 && flushed;
  if (!flushed) {
    Status s = Status::IOError(OsError("cannot flush", tmp));
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status s = Status::IOError(OsError("cannot rename onto", path));
    ::unlink(tmp.c_str());
    return s;
  }
  return Status::Ok();
}

}  // namespace polnode::node
