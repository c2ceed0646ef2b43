// Data and model files over HTTP (DESIGN.md section 4, issue 13 item 3): the submitter serves the
// files of its tasks' data sets and models by content hash, and solvers, verifiers and
// whistleblowers fetch them into their FileStore (file_store.h) before loading anything.
//
//   GET {base}/v1/files/{sha256 hex}   a registered file, or a file manifest, by its SHA-256
//
// A task document names a served set as data_location (or model_location)
// "{base}/v1/files/{manifest hex}". Only registered hashes are served: the route never turns a
// request into a path, so no request can reach any other file.
#ifndef POLNODE_RPC_FILE_HTTP_H_
#define POLNODE_RPC_FILE_HTTP_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/rpc/fetch_policy.h"
#include "polnode/rpc/file_store.h"
#include "polnode/rpc/http_types.h"
#include "polnode/solver/task_spec.h"

namespace polnode::node {

/// The submitter's side: serves the file sets registered with it. Thread-safe.
class FileServer {
 public:
  /// Hashes the local files at `paths` (each served under its file name, which must be plain and
  /// distinct: file_store.h IsPlainFileName), registers them and their manifest, and returns the
  /// manifest's hash. HashLocalFile's and EncodeFileManifest's errors pass through.
  [[nodiscard]] Result<consensus::Hash256> AddSet(const std::vector<std::string>& paths);

  /// Answers GET and HEAD of the route above (405 with Allow for other methods, 400 for a name
  /// that is not 64 lowercase hex, 404 for a hash not registered, 500 when a registered file no
  /// longer has the size it was registered with); nullopt for any other path.
  std::optional<HttpResponse> Handle(const HttpRequest& request) const;

 private:
  struct Served {
    std::string path;    // a registered file on disk...
    std::uint64_t size = 0;
    std::string inline_bytes;  // ...or a manifest, held in memory
  };
  mutable std::mutex mu_;
  std::map<std::string, Served> files_;  // hash hex -> what is served under it
};

/// "{base_url}/v1/files/{manifest hex}", the location a task document gives a served set.
std::string FileSetUri(const std::string& base_url, const consensus::Hash256& manifest_hash);

/// Whether a data or model location names a remote set (an http:// or https:// URI) rather than
/// a local path.
bool IsRemoteLocation(std::string_view location);

/// Fetches the set at `uri` (a FileSetUri) under `policy` into `store` and returns its local
/// location: the set's one file's path when it holds one file (a text corpus, a model), else its
/// directory. The manifest is checked against the hash in the URI (at most kMaxFileManifestBytes)
/// before it is decoded, and every file against its manifest entry as it streams in
/// (FileStore::Fetch); whatever the store already holds is not fetched again. kInvalidArgument
/// for a URI that is not "{base}/v1/files/{64 hex}"; FetchGetStreaming's, FileStore's and
/// DecodeFileManifest's errors pass through, naming the URI.
[[nodiscard]] Result<std::string> FetchFileSet(const FetchPolicy& policy, FileStore& store, const std::string& uri);

/// Replaces `document`'s data_location and model_location, where they are remote, by the local
/// locations FetchFileSet returns. The task's own checks (dataset hash, the onnx: model's hash)
/// still run on what is then loaded from them.
[[nodiscard]] Status ResolveTaskFiles(const FetchPolicy& policy, FileStore& store, solver::TaskSpec& document);

}  // namespace polnode::node

#endif  // POLNODE_RPC_FILE_HTTP_H_
