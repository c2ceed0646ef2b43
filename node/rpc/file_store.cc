#include "polnode/rpc/file_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/rpc/http_client.h"

namespace polnode::node {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHeader = "polnode.files.v1\n";

Status OsError(const std::string& what, const std::string& path, int err) {
  return Status::IOError(what + " " + path + ": " + std::strerror(err));
}

bool IsLowerHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

bool IsPlainFileName(std::string_view name) {
  if (name.empty() || name.size() > 128 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
  });
}

Result<std::string> EncodeFileManifest(std::vector<FileEntry> files) {
  if (files.empty()) return Status::InvalidArgument("a file manifest needs at least one file");
  if (files.size() > kMaxManifestFiles) {
    return Status::InvalidArgument("a file manifest holds at most " + std::to_string(kMaxManifestFiles) + " files");
  }
  std::sort(files.begin(), files.end(), [](const FileEntry& a, const FileEntry& b) { return a.name < b.name; });
  std::string text(kHeader);
  for (std::size_t i = 0; i < files.size(); ++i) {
    const FileEntry& f = files[i];
    if (!IsPlainFileName(f.name)) return Status::InvalidArgument("file name '" + f.name + "' is not a plain file name");
    if (i > 0 && files[i - 1].name == f.name) return Status::InvalidArgument("file name '" + f.name + "' appears twice");
    if (f.size > kMaxDeclaredFileBytes) return Status::InvalidArgument("file " + f.name + " is larger than 4 GiB");
    text += consensus::ToHex(f.hash) + " " + std::to_string(f.size) + " " + f.name + "\n";
  }
  return text;
}

Result<std::vector<FileEntry>> DecodeFileManifest(std::string_view text) {
  if (text.size() > kMaxFileManifestBytes) return Status::Corruption("file manifest larger than 16 KiB");
  if (!text.starts_with(kHeader)) return Status::Corruption("file manifest does not start with 'polnode.files.v1'");
  text.remove_prefix(kHeader.size());
  std::vector<FileEntry> files;
  for (int line = 2; !text.empty(); ++line) {
    const auto bad = [line](const std::string& why) {
      return Status::Corruption("file manifest line " + std::to_string(line) + ": " + why);
    };
    const std::size_t end = text.find('\n');
    if (end == std::string_view::npos) return bad("no final newline");
    std::string_view row = text.substr(0, end);
    text.remove_prefix(end + 1);
    if (files.size() == kMaxManifestFiles) return bad("more than " + std::to_string(kMaxManifestFiles) + " files");
    const std::size_t s1 = row.find(' ');
    const std::size_t s2 = s1 == std::string_view::npos ? s1 : row.find(' ', s1 + 1);
    if (s2 == std::string_view::npos) return bad("not '<sha256> <size> <name>'");
    const std::string_view hex = row.substr(0, s1);
    const std::string_view size = row.substr(s1 + 1, s2 - s1 - 1);
    const std::string_view name = row.substr(s2 + 1);
    FileEntry f;
    if (!IsLowerHex64(hex) || !consensus::HexToFixed(hex, f.hash).ok()) return bad("the hash is not 64 lowercase hex");
    const auto [ptr, ec] = std::from_chars(size.data(), size.data() + size.size(), f.size);
    if (size.empty() || ec != std::errc() || ptr != size.data() + size.size() || (size.size() > 1 && size[0] == '0') ||
        f.size > kMaxDeclaredFileBytes) {
      return bad("the size is not a decimal number of at most 4 GiB");
    }
    if (!IsPlainFileName(name)) return bad("'" + std::string(name.substr(0, 200)) + "' is not a plain file name");
    if (!files.empty() && !(files.back().name < name)) return bad("names are not sorted and distinct");
    f.name = std::string(name);
    files.push_back(std::move(f));
  }
  if (files.empty()) return Status::Corruption("file manifest names no file");
  return files;
}

Result<FileEntry> HashLocalFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return Status::NotFound("no file " + path);
    return Status::IOError("cannot open " + path);
  }
  consensus::Sha256Hasher hasher;
  FileEntry entry;
  entry.name = fs::path(path).filename().string();
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    hasher.Update(std::string_view(buffer.data(), n));
    entry.size += n;
  }
  if (in.bad()) return Status::IOError("reading " + path);
  entry.hash = hasher.Finalize();
  return entry;
}

Result<FileStore> FileStore::Open(const std::string& dir) {
  std::error_code ec;
  for (const char* sub : {"objects", "sets", "tmp"}) {
    fs::create_directories(fs::path(dir) / sub, ec);
    if (ec) return Status::IOError("cannot create " + (fs::path(dir) / sub).string() + ": " + ec.message());
  }
  // Whatever is in tmp/ is a fetch or set that a killed process left half done: never used, so a
  // restarted fetch starts over from nothing.
  fs::remove_all(fs::path(dir) / "tmp", ec);
  if (!ec) fs::create_directories(fs::path(dir) / "tmp", ec);
  if (ec) return Status::IOError("cannot empty " + dir + "/tmp: " + ec.message());
  return FileStore(dir);
}

bool FileStore::Contains(const consensus::Hash256& hash) const {
  std::error_code ec;
  return fs::is_regular_file(ObjectPath(hash), ec);
}

std::string FileStore::ObjectPath(const consensus::Hash256& hash) const {
  return dir_ + "/objects/" + consensus::ToHex(hash);
}

std::string FileStore::TempPath(std::string_view what) const {
  static std::atomic<std::uint64_t> counter{0};
  return dir_ + "/tmp/" + std::string(what) + "." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
}

Status FileStore::Fetch(const FetchPolicy& policy, const std::string& uri, const consensus::Hash256& hash,
                        std::uint64_t size, std::chrono::milliseconds timeout) {
  if (Contains(hash)) return Status::Ok();
  const std::string hex = consensus::ToHex(hash);
  if (size > policy.max_bytes()) {
    return Status::ResourceExhausted("file " + hex + " is declared " + std::to_string(size) + " bytes, more than the " +
                                     std::to_string(policy.max_bytes()) + " the fetch policy allows (fetch.max_bytes)");
  }
  POLNODE_ASSIGN_OR_RETURN(StagedFile temp, StagedFile::Create(TempPath(hex)));
  consensus::Sha256Hasher hasher;
  std::uint64_t received = 0;
  // The limit passed on is one byte over the declared size, so a longer body is caught here by
  // name rather than only as a generic over-limit answer.
  const std::uint64_t limit = size + 1;
  POLNODE_RETURN_IF_ERROR(
      FetchGetStreaming(policy, uri, limit, timeout, [&](std::string_view piece) -> Status {
        received += piece.size();
        if (received > size) {
          return Status::ResourceExhausted("GET " + uri + ": more than the " + std::to_string(size) +
                                           " bytes the task declares for file " + hex);
        }
        hasher.Update(piece);
        return temp.WriteAt(received - piece.size(),
                            std::span(reinterpret_cast<const std::uint8_t*>(piece.data()), piece.size()));
      }).WithContext("file " + hex));
  if (received != size) {
    return Status::Corruption("GET " + uri + ": " + std::to_string(received) + " bytes, not the " + std::to_string(size) +
                              " the task declares for file " + hex);
  }
  if (const consensus::Hash256 got = hasher.Finalize(); got != hash) {
    return Status::Corruption("GET " + uri + ": the bytes hash to " + consensus::ToHex(got) + ", not " + hex);
  }
  return temp.Commit(ObjectPath(hash));
}

Result<consensus::Hash256> FileStore::Put(std::string_view bytes) {
  const consensus::Hash256 hash = consensus::Sha256(bytes);
  if (Contains(hash)) return hash;
  POLNODE_ASSIGN_OR_RETURN(StagedFile temp, StagedFile::Create(TempPath(consensus::ToHex(hash))));
  POLNODE_RETURN_IF_ERROR(temp.WriteAt(0, std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size())));
  POLNODE_RETURN_IF_ERROR(temp.Commit(ObjectPath(hash)));
  return hash;
}

Result<std::string> FileStore::MakeSet(const consensus::Hash256& manifest_hash, const std::vector<FileEntry>& files) {
  const std::string target = dir_ + "/sets/" + consensus::ToHex(manifest_hash);
  std::error_code ec;
  if (fs::is_directory(target, ec)) return target;
  const std::string building = TempPath("set-" + consensus::ToHex(manifest_hash));
  fs::create_directory(building, ec);
  if (ec) return Status::IOError("cannot create " + building + ": " + ec.message());
  const auto drop = [&building](Status s) {
    std::error_code ignored;
    fs::remove_all(building, ignored);
    return s;
  };
  for (const FileEntry& f : files) {
    if (!IsPlainFileName(f.name)) return drop(Status::InvalidArgument("file name '" + f.name + "' is not plain"));
    if (!Contains(f.hash)) {
      return drop(Status::FailedPrecondition("file " + f.name + " (" + consensus::ToHex(f.hash) + ") is not in the store"));
    }
    fs::create_hard_link(ObjectPath(f.hash), fs::path(building) / f.name, ec);
    if (ec) return drop(Status::IOError("cannot link " + f.name + " into " + building + ": " + ec.message()));
  }
  if (Status s = SyncDirectory(building); !s.ok()) return drop(s);
  // Renamed whole: a set directory that exists is complete. Another thread may have made it first.
  if (::rename(building.c_str(), target.c_str()) != 0) {
    const int err = errno;
    const bool made_by_another = fs::is_directory(target, ec);
    if (Status s = drop(made_by_another ? Status::Ok() : OsError("renaming onto", target, err)); !s.ok()) return s;
    return target;
  }
  POLNODE_RETURN_IF_ERROR(SyncDirectory(dir_ + "/sets"));
  return target;
}

}  // namespace polnode::node
