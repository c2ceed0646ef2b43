#include "polnode/consensus/key_file.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <string_view>
#include <system_error>
#include <utility>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"

namespace polnode::consensus {
namespace {

constexpr std::size_t kHexChars = 64;

Status ErrnoStatus(int err, const std::string& what) {
  std::string msg = what + ": " + std::generic_category().message(err);
  switch (err) {
    case ENOENT: return Status::NotFound(std::move(msg));
    case EACCES:
    case EPERM: return Status::PermissionDenied(std::move(msg));
    default: return Status::IOError(std::move(msg));
  }
}

// Closes the descriptor on every path out of a function.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;

  int get() const { return fd_; }
  /// Closes now and reports the result: for a written file, close can be where an error shows.
  int Close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

Status WriteAll(int fd, std::span<const char> data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot write " + path);
    }
    data = data.subspan(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

std::string DirectoryOf(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Writes the key to `tmp`, which must not exist yet.
Status WriteTemporary(const std::string& tmp, const SecretKey& key) {
  ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (fd.get() < 0) return ErrnoStatus(errno, "cannot create " + tmp);
  // The umask can only remove bits from 0600; set the mode exactly anyway so it never depends on it.
  if (::fchmod(fd.get(), 0600) != 0) return ErrnoStatus(errno, "cannot set mode 0600 on " + tmp);
  // Reserve the final size before building the text: a push_back that reallocated would free a
  // heap copy of the secret hex that the cleanse below never reaches.
  std::string text;
  text.reserve(2 * key.bytes().size() + 1);
  {
    std::string hex = ToHex(key.bytes());
    text.append(hex);
    OPENSSL_cleanse(hex.data(), hex.size());
  }
  text.push_back('\n');
  Status written = WriteAll(fd.get(), text, tmp);
  OPENSSL_cleanse(text.data(), text.size());
  POLNODE_RETURN_IF_ERROR(written);
  if (::fsync(fd.get()) != 0) return ErrnoStatus(errno, "cannot sync " + tmp);
  if (fd.Close() != 0) return ErrnoStatus(errno, "cannot close " + tmp);
  return Status::Ok();
}

std::string ModeText(mode_t mode) {
  std::array<char, 8> buf{};
  std::snprintf(buf.data(), buf.size(), "%04o", static_cast<unsigned>(mode & 07777));
  return buf.data();
}

}  // namespace

Status WriteKeyFile(const std::string& path, const SecretKey& key) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    return Status::AlreadyExists("a file already exists at " + path + "; a key file is never overwritten");
  }
  std::array<std::uint8_t, 8> nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    return Status::Unavailable("OpenSSL's random generator failed");
  }
  const std::string tmp = path + ".tmp-" + ToHex(nonce);
  Status written = WriteTemporary(tmp, key);
  if (!written.ok()) {
    ::unlink(tmp.c_str());
    return written;
  }
  // link() fails with EEXIST instead of replacing, unlike rename(): a key that appeared at `path`
  // since the check above (another keygen racing this one) is kept, not clobbered.
  if (::link(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    if (err == EEXIST) {
      return Status::AlreadyExists("a file already exists at " + path + "; a key file is never overwritten");
    }
    return ErrnoStatus(err, "cannot create " + path);
  }
  if (::unlink(tmp.c_str()) != 0) return ErrnoStatus(errno, "cannot remove temporary file " + tmp);
  return SyncDirectory(DirectoryOf(path));
}

Result<SecretKey> ReadKeyFile(const std::string& path) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (fd.get() < 0) {
    if (errno == ENOENT) return Status::NotFound("no key file at " + path);
    return ErrnoStatus(errno, "cannot open key file " + path);
  }
  // fstat on the open descriptor, not stat on the path: the checked file is the one read.
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, "cannot inspect key file " + path);
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(path + " is not a regular file");
  if ((st.st_mode & 077) != 0) {
    return Status::PermissionDenied("key file " + path + " has mode " + ModeText(st.st_mode) +
                                    ", so other users can access it; run `chmod 600 " + path +
                                    "` and try again");
  }
  // One byte more than the longest valid file, so an overlong file is detected, not truncated.
  std::array<char, kHexChars + 2> buf{};
  std::size_t len = 0;
  while (len < buf.size()) {
    ssize_t n = ::read(fd.get(), buf.data() + len, buf.size() - len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot read key file " + path);
    }
    if (n == 0) break;
    len += static_cast<std::size_t>(n);
  }
  if (len == kHexChars + 1 && buf[kHexChars] == '\n') len = kHexChars;
  std::array<std::uint8_t, 32> secret{};
  Status parsed = len == kHexChars ? HexToFixed(std::string_view(buf.data(), kHexChars), secret)
                                   : Status::Corruption("wrong length");
  OPENSSL_cleanse(buf.data(), buf.size());
  if (!parsed.ok()) {
    return Status::Corruption("key file " + path + " does not hold 64 hex characters and a newline");
  }
  Result<SecretKey> key = SecretKey::FromBytes(secret);
  OPENSSL_cleanse(secret.data(), secret.size());
  if (!key.ok()) return Status::Corruption("key file " + path + " does not hold a valid secp256k1 secret key");
  return key;
}

}  // namespace polnode::consensus
