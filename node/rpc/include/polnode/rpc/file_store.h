// Data and model files named by content hash (DESIGN.md section 4, issue 13 item 3): the file
// manifest that names a set of files (a data set's IDX files, a text corpus, an ONNX model), and
// the content-addressed store a role daemon keeps them in.
//
// A manifest is text, one file per line, sorted by name:
//   "polnode.files.v1\n"
//   "<sha256 hex> <size in decimal> <name>\n" ...
// Its SHA-256 names the whole set; a task's data_location or model_location
// "{base}/v1/files/{manifest hex}" (file_http.h) points at it, so the task document fixes every
// file's hash and size before a byte is fetched. The data set's own hash (DatasetContentHash,
// dataset.h, part of the task id) is still checked on what the files decode to.
//
// Store layout under its directory:
//   objects/<hex>   one file per content hash, only ever written by a rename after its bytes were
//                   hashed and synced, so a name always holds exactly the bytes it names;
//   sets/<hex>/     a manifest's files under their names (hard links to objects), made in tmp/ and
//                   renamed into place whole;
//   tmp/            fetches and sets in progress; emptied when the store is opened, so a fetch
//                   killed half way restarts from nothing.
#ifndef POLNODE_RPC_FILE_STORE_H_
#define POLNODE_RPC_FILE_STORE_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/sha256.h"
#include "polnode/rpc/fetch_policy.h"

namespace polnode::node {

/// One file of a manifest.
struct FileEntry {
  std::string name;  // a plain file name: [A-Za-z0-9._-], 1..128 bytes, not starting with '.'
  consensus::Hash256 hash{};
  std::uint64_t size = 0;
};

/// Most files one manifest may name, and the largest manifest accepted.
inline constexpr std::size_t kMaxManifestFiles = 64;
inline constexpr std::size_t kMaxFileManifestBytes = 16 * 1024;
/// Largest single file a manifest may declare (a data set file or a model).
inline constexpr std::uint64_t kMaxDeclaredFileBytes = std::uint64_t{4} << 30;

/// Whether `name` is a plain file name as FileEntry requires (no '/', no "..", no hidden file).
bool IsPlainFileName(std::string_view name);

/// The manifest text of `files` (sorted by name here). kInvalidArgument for a name that is not
/// plain, a repeated name, an empty list, more than kMaxManifestFiles or a size over
/// kMaxDeclaredFileBytes.
[[nodiscard]] Result<std::string> EncodeFileManifest(std::vector<FileEntry> files);

/// Decodes untrusted manifest bytes strictly (exactly the form EncodeFileManifest writes: the
/// header, lowercase hex, sizes without leading zeros, names sorted and distinct and plain, at
/// most kMaxManifestFiles, at most kMaxFileManifestBytes). kCorruption naming the line otherwise.
[[nodiscard]] Result<std::vector<FileEntry>> DecodeFileManifest(std::string_view text);

/// SHA-256 and size of a local file, read in pieces. kNotFound / kIOError naming the path.
[[nodiscard]] Result<FileEntry> HashLocalFile(const std::string& path);

/// The content-addressed store described above. Thread-safe: concurrent fetches of the same hash
/// each write their own temporary file and the first rename wins.
class FileStore {
 public:
  /// Opens (creating) the store at `dir` and empties its tmp/. kIOError naming the path.
  [[nodiscard]] static Result<FileStore> Open(const std::string& dir);

  bool Contains(const consensus::Hash256& hash) const;
  /// Where the object `hash` is (or would be).
  std::string ObjectPath(const consensus::Hash256& hash) const;

  /// Makes sure the store holds `hash`, fetching `uri` under `policy` if it does not (a `size`
  /// over policy.max_bytes() is kResourceExhausted before anything is sent): the body is
  /// hashed and written to a temporary file as it streams in, refused as soon as it passes `size`
  /// bytes (kResourceExhausted), and renamed to its name only when it is exactly `size` bytes
  /// that hash to `hash` (else kCorruption); on any error the temporary file is removed and
  /// nothing is stored. FetchGetStreaming's errors (policy refusals, kUnavailable) pass through.
  [[nodiscard]] Status Fetch(const FetchPolicy& policy, const std::string& uri, const consensus::Hash256& hash,
                             std::uint64_t size, std::chrono::milliseconds timeout);

  /// Stores `bytes` under their hash (temp file, fsync, rename) and returns the hash.
  [[nodiscard]] Result<consensus::Hash256> Put(std::string_view bytes);

  /// The directory holding the files of manifest `manifest_hash` under their names, made once
  /// from objects the store holds (kFailedPrecondition naming a missing one).
  [[nodiscard]] Result<std::string> MakeSet(const consensus::Hash256& manifest_hash, const std::vector<FileEntry>& files);

  const std::string& dir() const { return dir_; }

 private:
  explicit FileStore(std::string dir) : dir_(std::move(dir)) {}
  std::string TempPath(std::string_view what) const;

  std::string dir_;
};

}  // namespace polnode::node

#endif  // POLNODE_RPC_FILE_STORE_H_
