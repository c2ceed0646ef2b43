#include "polnode/base/file_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

namespace polnode {
namespace {

Status OsError(const std::string& what, const std::string& path, int err) {
  return Status::IOError(what + " " + path + ": " + std::strerror(err));
}

}  // namespace

Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return OsError("opening directory", dir, errno);
  const int sync_err = ::fsync(fd) != 0 ? errno : 0;
  ::close(fd);  // read-only descriptor: a close error cannot lose data
  if (sync_err != 0) return OsError("syncing directory", dir, sync_err);
  return Status::Ok();
}

Result<StagedFile> StagedFile::Create(std::string temp_path) {
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return OsError("creating", temp_path, errno);
  return StagedFile(std::move(temp_path), fd);
}

std::string StagedFile::TempPathBeside(const std::string& path) {
  static std::atomic<std::uint64_t> counter{0};
  return path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

StagedFile::StagedFile(StagedFile&& other) noexcept
    : temp_path_(std::move(other.temp_path_)), fd_(std::exchange(other.fd_, -1)) {}

StagedFile& StagedFile::operator=(StagedFile&& other) noexcept {
  if (this != &other) {
    Discard();
    temp_path_ = std::move(other.temp_path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

StagedFile::~StagedFile() { Discard(); }

void StagedFile::Discard() {
  if (fd_ < 0) return;
  ::close(fd_);  // the bytes are being thrown away: a close error loses nothing wanted
  ::unlink(temp_path_.c_str());
  fd_ = -1;
}

Status StagedFile::WriteAt(std::uint64_t offset, std::span<const std::uint8_t> bytes) const {
  if (fd_ < 0) return Status::FailedPrecondition("writing " + temp_path_ + " after it was committed");
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return OsError("writing", temp_path_, errno);
    }
    done += static_cast<std::size_t>(n);
  }
  return Status::Ok();
}

Status StagedFile::StartWriteback() const {
  if (fd_ < 0) return Status::FailedPrecondition("writing back " + temp_path_ + " after it was committed");
#if defined(__linux__)
  if (::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE) != 0) return OsError("writing back", temp_path_, errno);
#endif
  return Status::Ok();
}

Status StagedFile::Commit(const std::string& path) {
  POLNODE_RETURN_IF_ERROR(Publish(path));
  // The rename is only durable once the directory holding the new entry is synced; until then a
  // power loss can leave the old name (or none) even though the call reported success.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return SyncDirectory(dir.empty() ? std::string(".") : dir);
}

Status StagedFile::Publish(const std::string& path) {
  if (fd_ < 0) return Status::FailedPrecondition("committing " + temp_path_ + " twice");
  // fsync before rename: otherwise a crash can leave the new name pointing at missing data.
  // The descriptor is closed whatever fsync returns, so a failed sync never leaks it.
  const int sync_err = ::fsync(fd_) != 0 ? errno : 0;
  const int close_err = ::close(fd_) != 0 ? errno : 0;
  fd_ = -1;
  if (sync_err != 0 || close_err != 0) {
    ::unlink(temp_path_.c_str());
    return OsError(sync_err != 0 ? "syncing" : "closing", temp_path_, sync_err != 0 ? sync_err : close_err);
  }
  if (::rename(temp_path_.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp_path_.c_str());
    return OsError("renaming onto", path, err);
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::span<const std::uint8_t> bytes) {
  POLNODE_ASSIGN_OR_RETURN(StagedFile file, StagedFile::Create(StagedFile::TempPathBeside(path)));
  POLNODE_RETURN_IF_ERROR(file.WriteAt(0, bytes));
  return file.Commit(path);
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
