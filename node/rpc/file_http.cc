#include "polnode/rpc/file_http.h"

#include <algorithm>

#include "polnode/base/file_util.h"
#include "polnode/consensus/hex.h"
#include "polnode/rpc/http_client.h"

namespace polnode::node {
namespace {

constexpr std::string_view kPrefix = "/v1/files/";

// A whole exchange has one deadline; a file of several hundred MiB from a busy submitter gets a
// minute plus a second per MiB.
std::chrono::milliseconds FileTimeout(std::uint64_t size) {
  return std::chrono::seconds(60) + std::chrono::seconds(size >> 20);
}

bool IsLowerHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace

Result<consensus::Hash256> FileServer::AddSet(const std::vector<std::string>& paths) {
  std::vector<FileEntry> entries;
  std::map<std::string, Served> served;
  for (const std::string& path : paths) {
    POLNODE_ASSIGN_OR_RETURN(FileEntry entry, HashLocalFile(path));
    served[consensus::ToHex(entry.hash)] = Served{path, entry.size, {}};
    entries.push_back(std::move(entry));
  }
  POLNODE_ASSIGN_OR_RETURN(std::string manifest, EncodeFileManifest(std::move(entries)));
  const consensus::Hash256 hash = consensus::Sha256(manifest);
  served[consensus::ToHex(hash)] = Served{"", manifest.size(), std::move(manifest)};
  std::lock_guard<std::mutex> lock(mu_);
  files_.merge(served);
  return hash;
}

std::optional<HttpResponse> FileServer::Handle(const HttpRequest& request) const {
  const std::string_view target = std::string_view(request.target).substr(0, request.target.find('?'));
  if (!target.starts_with(kPrefix)) return std::nullopt;
  if (request.method != "GET" && request.method != "HEAD") {
    HttpResponse r = JsonErrorResponse(405, "files are read-only");
    r.allow = "GET, HEAD";
    return r;
  }
  const std::string_view name = target.substr(kPrefix.size());
  if (!IsLowerHex64(name)) return JsonErrorResponse(400, "a file is named by its SHA-256: 64 lowercase hex");
  Served served;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = files_.find(std::string(name));
    if (it == files_.end()) return JsonErrorResponse(404, "no file " + std::string(name));
    served = it->second;
  }
  HttpResponse r;
  r.content_type = "application/octet-stream";
  if (served.path.empty()) {
    r.body = std::move(served.inline_bytes);
    return r;
  }
  Result<std::vector<std::uint8_t>> bytes = ReadWholeFile(served.path, served.size);
  if (!bytes.ok() || bytes->size() != served.size) {
    return JsonErrorResponse(500, "file " + std::string(name) + " changed on disk since it was registered");
  }
  r.body.assign(bytes->begin(), bytes->end());
  return r;
}

std::string FileSetUri(const std::string& base_url, const consensus::Hash256& manifest_hash) {
  return base_url + std::string(kPrefix) + consensus::ToHex(manifest_hash);
}

bool IsRemoteLocation(std::string_view location) {
  return location.starts_with("http://") || location.starts_with("https://");
}

Result<std::string> FetchFileSet(const FetchPolicy& policy, FileStore& store, const std::string& uri) {
  const std::size_t at = uri.rfind(kPrefix);
  if (at == std::string::npos || !IsLowerHex64(std::string_view(uri).substr(at + kPrefix.size()))) {
    return Status::InvalidArgument("file set location " + uri + " is not '{base}/v1/files/{64 lowercase hex}'");
  }
  const std::string base = uri.substr(0, at);
  consensus::Hash256 manifest_hash{};
  POLNODE_RETURN_IF_ERROR(consensus::HexToFixed(std::string_view(uri).substr(at + kPrefix.size()), manifest_hash));

  std::string manifest;
  if (store.Contains(manifest_hash)) {
    POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(store.ObjectPath(manifest_hash), kMaxFileManifestBytes));
    manifest.assign(bytes.begin(), bytes.end());
  } else {
    POLNODE_ASSIGN_OR_RETURN(manifest, FetchGet(policy, uri, kMaxFileManifestBytes, FileTimeout(0)));
    if (consensus::Sha256(manifest) != manifest_hash) {
      return Status::Corruption("the file manifest served at " + uri + " hashes to " +
                                consensus::ToHex(consensus::Sha256(manifest)) + ", not the location's hash");
    }
  }
  Result<std::vector<FileEntry>> files = DecodeFileManifest(manifest);
  if (!files.ok()) return files.status().WithContext(uri);
  // Stored only once it decodes: a manifest in the store is always a usable one.
  POLNODE_RETURN_IF_ERROR(store.Put(manifest).status());
  for (const FileEntry& f : *files) {
    POLNODE_RETURN_IF_ERROR(store.Fetch(policy, FileSetUri(base, f.hash), f.hash, f.size, FileTimeout(f.size)));
  }
  POLNODE_ASSIGN_OR_RETURN(std::string dir, store.MakeSet(manifest_hash, *files));
  return files->size() == 1 ? dir + "/" + files->front().name : dir;
}

Status ResolveTaskFiles(const FetchPolicy& policy, FileStore& store, solver::TaskSpec& document) {
  for (std::string* location : {&document.data_location, &document.model_location}) {
    if (!IsRemoteLocation(*location)) continue;
    Result<std::string> local = FetchFileSet(policy, store, *location);
    if (!local.ok()) {
      return local.status().WithContext(location == &document.data_location ? "data set" : "model file");
    }
    *location = std::move(*local);
  }
  return Status::Ok();
}

}  // namespace polnode::node
