// Local files: what a node keeps for itself and no other node reads (the prover's progress file,
// the role daemons' duty journals). They are cereal portable-binary archives behind an envelope:
//   the kind of file (16 bytes, zero-padded), a uint32 format version, then the value.
// A reader refuses a file of another kind, of a version newer than its own, a truncated one, or
// one with trailing or inconsistent bytes, with an error that names the file; the caller then
// leaves the file as it is (it may be a newer polnode's, or evidence). Writers go through
// WriteFileAtomically, so a crash leaves the old file or the new one, never a torn one.
//
// Binary, not cereal's JSON archive: JSON is read and written in one place (node/rpc), and
// cereal's JSON archive builds on Debian's rapidjson 1.1.0, whose parse stack trips UBSan
// (node/rpc/CMakeLists.txt). Encodings that feed a hash or travel between nodes never use this:
// they stay protobuf or the canonical encoding of consensus/.
//
// A value type T provides
//   template <class Archive> void save(Archive& ar) const;                       // newest version
//   template <class Archive> void load(Archive& ar, std::uint32_t version);      // 1..newest
// and reads every vector and string through LoadBoundedSize, so a corrupted length is refused
// before anything is allocated (cereal's own vector and string loaders resize to whatever length
// the bytes claim).
#ifndef POLNODE_BASE_LOCAL_ARCHIVE_H_
#define POLNODE_BASE_LOCAL_ARCHIVE_H_

#include <array>
#include <cstdint>
#include <exception>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/cereal.hpp>
#include <cereal/types/array.hpp>

#include "polnode/base/file_util.h"
#include "polnode/base/status.h"

namespace polnode {

/// Names a kind of local file and the newest version of its format this build writes and reads.
struct LocalFormat {
  std::string_view kind;  // 1..16 bytes, e.g. "pol-progress"
  std::uint32_t version;  // >= 1
};

inline constexpr std::size_t kLocalKindBytes = 16;

/// Throws the error that DecodeLocal turns into kCorruption. For load functions only: cereal
/// reports failures by exception, and DecodeLocal is the one place that catches them.
[[noreturn]] void FailLocalLoad(std::string why);

/// Reads a length that an archive's save wrote with cereal::make_size_tag and fails the load when
/// it exceeds `max`.
template <class Archive>
std::size_t LoadBoundedSize(Archive& ar, std::size_t max) {
  cereal::size_type n = 0;
  ar(cereal::make_size_tag(n));
  if (n > max) FailLocalLoad("a length of " + std::to_string(n) + " exceeds its bound " + std::to_string(max));
  return static_cast<std::size_t>(n);
}

/// Saves a string as a size tag and its bytes; LoadString reads it back, refusing more than `max`.
template <class Archive>
void SaveString(Archive& ar, const std::string& s) {
  ar(cereal::make_size_tag(static_cast<cereal::size_type>(s.size())));
  ar(cereal::binary_data(s.data(), s.size()));
}
template <class Archive>
void LoadString(Archive& ar, std::string& s, std::size_t max) {
  s.resize(LoadBoundedSize(ar, max));
  ar(cereal::binary_data(s.data(), s.size()));
}

namespace local_archive_internal {

std::array<char, kLocalKindBytes> KindBytes(std::string_view kind);
// Checks the envelope's kind and version against `format`; the error names `file`.
Status CheckEnvelope(const std::array<char, kLocalKindBytes>& kind, std::uint32_t version,
                     const LocalFormat& format, std::string_view file);

}  // namespace local_archive_internal

/// The bytes of `value` in its newest format, envelope included.
template <class T>
std::vector<std::uint8_t> EncodeLocal(const LocalFormat& format, const T& value) {
  std::ostringstream out;
  {
    cereal::PortableBinaryOutputArchive ar(out);
    ar(local_archive_internal::KindBytes(format.kind), format.version);
    value.save(ar);
  }
  const std::string bytes = std::move(out).str();
  return std::vector<std::uint8_t>(bytes.begin(), bytes.end());
}

/// Decodes bytes written by EncodeLocal of this or an older version of `format`. `file` names the
/// file in errors. kFailedPrecondition for a newer version or another kind of file; kCorruption
/// for a truncated or damaged one (T's load errors included).
template <class T>
Result<T> DecodeLocal(std::span<const std::uint8_t> bytes, const LocalFormat& format, std::string_view file) {
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  try {
    cereal::PortableBinaryInputArchive ar(in);
    std::array<char, kLocalKindBytes> kind{};
    std::uint32_t version = 0;
    ar(kind, version);
    POLNODE_RETURN_IF_ERROR(local_archive_internal::CheckEnvelope(kind, version, format, file));
    T value;
    value.load(ar, version);
    if (in.peek() != std::istringstream::traits_type::eof()) {
      return Status::Corruption(std::string(file) + ": trailing bytes after the " + std::string(format.kind) + " record");
    }
    return value;
  } catch (const std::exception& e) {
    return Status::Corruption(std::string(file) + ": damaged or truncated " + std::string(format.kind) + " file (" +
                              e.what() + "); it is left as it is");
  }
}

/// Writes `value` to `path` atomically (WriteFileAtomically) in its newest format.
template <class T>
[[nodiscard]] Status SaveLocal(const std::string& path, const LocalFormat& format, const T& value) {
  return WriteFileAtomically(path, EncodeLocal(format, value));
}

/// Reads a file SaveLocal wrote: ReadWholeFile's errors (kNotFound when absent), then DecodeLocal's.
template <class T>
Result<T> LoadLocal(const std::string& path, const LocalFormat& format, std::uint64_t max_bytes) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(path, max_bytes));
  return DecodeLocal<T>(bytes, format, path);
}

}  // namespace polnode

#endif  // POLNODE_BASE_LOCAL_ARCHIVE_H_
