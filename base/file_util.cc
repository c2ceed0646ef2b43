#include "polnode/base/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace polnode {
namespace {

Status OsError(const std::string& what, const std::string& path, int err) {
  return Status::IOError(what + " " + path + ": " + std::strerror(err));
}

// Unique per process and call, so concurrent writers never share a temporary file.
std::string TempPathFor(const std::string& path) {
  static std::atomic<std::uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

// Syncs the directory that holds `path`, making a rename into it durable.
Status SyncParentDirectory(const std::string& path) {
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const std::string target = dir.empty() ? std::string(".") : dir;
  const int fd = ::open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return OsError("opening directory", target, errno);
  const int sync_err = ::fsync(fd) != 0 ? errno : 0;
  ::close(fd);  // read-only descriptor: a close error cannot lose data
  if (sync_err != 0) return OsError("syncing directory", target, sync_err);
  return Status::Ok();
}

}  // namespace

Status WriteFileAtomically(const std::string& path, std::span<const std::uint8_t> bytes) {
  const std::string temp = TempPathFor(path);
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return OsError("creating", temp, errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return OsError("writing", temp, err);
    }
    done += static_cast<std::size_t>(n);
  }
  // fsync before rename: otherwise a crash can leave the new name pointing at missing data.
  // The descriptor is closed whatever fsync returns, so a failed sync never leaks it.
  const int sync_err = ::fsync(fd) != 0 ? errno : 0;
  const int close_err = ::close(fd) != 0 ? errno : 0;
  if (sync_err != 0 || close_err != 0) {
    ::unlink(temp.c_str());
    return OsError(sync_err != 0 ? "syncing" : "closing", temp, sync_err != 0 ? sync_err : close_err);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return OsError("renaming onto", path, err);
  }
  // The rename is only durable once the directory holding the new entry is synced; until then a
  // power loss can leave the old name (or none) even though the call reported success.
  return SyncParentDirectory(path);
}

Result<std::vector<std::uint8_t>> ReadWholeFile(const std::string& path, std::uint64_t max_bytes) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory) return Status::NotFound("no file " + path);
    return Status::IOError("reading " + path + ": " + ec.message());
  }
  if (size > max_bytes) return Status::ResourceExhausted(path + " is larger than " + std::to_string(max_bytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size));
  if (!in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)) ||
      in.peek() != std::ifstream::traits_type::eof()) {
    return Status::IOError("reading " + path + ": short read or file changed while reading");
  }
  return bytes;
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  return WriteFileAtomically(
      path, std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

}  // namespace polnode
