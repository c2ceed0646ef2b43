#include "polnode/base/local_archive.h"

#include <algorithm>

namespace polnode {

void FailLocalLoad(std::string why) { throw cereal::Exception(why); }

namespace local_archive_internal {

std::array<char, kLocalKindBytes> KindBytes(std::string_view kind) {
  std::array<char, kLocalKindBytes> out{};
  std::copy_n(kind.begin(), std::min(kind.size(), out.size()), out.begin());
  return out;
}

Status CheckEnvelope(const std::array<char, kLocalKindBytes>& kind, std::uint32_t version,
                     const LocalFormat& format, std::string_view file) {
  if (kind != KindBytes(format.kind)) {
    return Status::FailedPrecondition(std::string(file) + " is not a " + std::string(format.kind) +
                                      " file; it is left as it is");
  }
  if (version == 0 || version > format.version) {
    return Status::FailedPrecondition(std::string(file) + " has " + std::string(format.kind) + " format version " +
                                      std::to_string(version) + ", this polnode reads versions 1 to " +
                                      std::to_string(format.version) +
                                      " (written by a newer polnode?); it is left as it is");
  }
  return Status::Ok();
}

}  // namespace local_archive_internal
}  // namespace polnode
