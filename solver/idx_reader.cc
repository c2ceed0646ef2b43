// IDX files (the MNIST family's format), optionally gzip-compressed, read with zlib.
#include <zlib.h>

#include <cstring>
#include <string>
#include <vector>

#include "polnode/base/file_util.h"
#include "polnode/solver/dataset.h"

namespace polnode::solver {
namespace {

// Refuse to inflate beyond this, so a crafted file cannot exhaust memory (Fashion-MNIST's largest
// file decompresses to 47 MB).
constexpr std::size_t kMaxDecodedBytes = std::size_t{1} << 31;

bool IsGzip(const std::vector<std::uint8_t>& bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

// Inflates every gzip member of `in` (concatenated members are valid gzip). Corruption for a
// damaged or truncated stream and for trailing bytes that are not another member.
Result<std::vector<std::uint8_t>> Gunzip(const std::string& path,
                                         const std::vector<std::uint8_t>& in) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
    return Status::Internal(path + ": zlib inflateInit2 failed");
  }
  std::vector<std::uint8_t> out;
  std::uint8_t chunk[1 << 16];
  zs.next_in = const_cast<Bytef*>(in.data());  // zlib's API is not const-correct; it only reads
  zs.avail_in = static_cast<uInt>(in.size());
  Status status;
  while (true) {
    zs.next_out = chunk;
    zs.avail_out = sizeof chunk;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out.insert(out.end(), chunk, chunk + (sizeof chunk - zs.avail_out));
    if (out.size() > kMaxDecodedBytes) {
      status = Status::ResourceExhausted(path + ": decompresses to more than " +
                                         std::to_string(kMaxDecodedBytes) + " bytes");
      break;
    }
    if (rc == Z_STREAM_END) {
      if (zs.avail_in == 0) break;
      if (zs.avail_in >= 2 && zs.next_in[0] == 0x1f && zs.next_in[1] == 0x8b) {
        inflateReset(&zs);
        continue;
      }
      status = Status::Corruption(path + ": " + std::to_string(zs.avail_in) +
                                  " bytes of garbage after the gzip stream");
      break;
    }
    if (rc == Z_OK) continue;
    if (rc == Z_BUF_ERROR && zs.avail_in == 0) {
      status = Status::Corruption(path + ": gzip stream is truncated");
      break;
    }
    status = Status::Corruption(
        path + ": gzip stream is corrupt (" +
        (zs.msg != nullptr ? std::string(zs.msg) : "zlib error " + std::to_string(rc)) + ")");
    break;
  }
  inflateEnd(&zs);
  if (!status.ok()) return status;
  return out;
}

std::uint32_t ReadBigEndian32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

}  // namespace

Result<std::vector<std::uint8_t>> ReadFileGunzipped(const std::string& path,
                                                    std::uint64_t max_bytes) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(path, max_bytes));
  if (!IsGzip(bytes)) return bytes;
  POLNODE_ASSIGN_OR_RETURN(bytes, Gunzip(path, bytes));
  if (bytes.size() > max_bytes) {
    return Status::ResourceExhausted(path + ": decompresses to more than " +
                                     std::to_string(max_bytes) + " bytes");
  }
  return bytes;
}

Result<IdxArray> ReadIdxFile(const std::string& path, int expected_rank) {
  POLNODE_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, ReadWholeFile(path, kMaxDecodedBytes));
  if (IsGzip(bytes)) {
    POLNODE_ASSIGN_OR_RETURN(bytes, Gunzip(path, bytes));
  }
  if (bytes.size() < 4) {
    return Status::Corruption(path + ": " + std::to_string(bytes.size()) +
                              " bytes, too short for an IDX header");
  }
  if (bytes[0] != 0 || bytes[1] != 0) {
    return Status::Corruption(path + ": not an IDX file (magic must start with two zero bytes)");
  }
  if (bytes[2] != 0x08) {
    return Status::Corruption(path + ": IDX element type code " + std::to_string(bytes[2]) +
                              " is not 8 (unsigned byte)");
  }
  if (bytes[3] != expected_rank) {
    return Status::Corruption(path + ": IDX file has " + std::to_string(bytes[3]) +
                              " dimensions, expected " + std::to_string(expected_rank));
  }
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(expected_rank);
  if (bytes.size() < header) {
    return Status::Corruption(path + ": IDX header is truncated");
  }
  const std::size_t payload = bytes.size() - header;
  IdxArray array;
  std::size_t product = 1;
  for (int d = 0; d < expected_rank; ++d) {
    const std::uint32_t dim = ReadBigEndian32(&bytes[4 + 4 * static_cast<std::size_t>(d)]);
    if (dim == 0)
      return Status::Corruption(path + ": IDX dimension " + std::to_string(d) + " is 0");
    // Checked before multiplying so the product never overflows.
    if (product > payload / dim) {
      return Status::Corruption(path + ": IDX dimensions promise more data than the file holds (" +
                                std::to_string(payload) + " bytes)");
    }
    product *= dim;
    array.dims.push_back(dim);
  }
  if (product != payload) {
    return Status::Corruption(path + ": IDX dimensions need " + std::to_string(product) +
                              " bytes of data, the file holds " + std::to_string(payload));
  }
  array.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return array;
}

Result<ImageSplit> ReadIdxSplit(const std::string& images_path, const std::string& labels_path) {
  POLNODE_ASSIGN_OR_RETURN(IdxArray images, ReadIdxFile(images_path, 3));
  POLNODE_ASSIGN_OR_RETURN(IdxArray labels, ReadIdxFile(labels_path, 1));
  if (images.dims[0] != labels.dims[0]) {
    return Status::Corruption(images_path + " holds " + std::to_string(images.dims[0]) +
                              " images but " + labels_path + " holds " +
                              std::to_string(labels.dims[0]) + " labels");
  }
  ImageSplit split;
  split.count = images.dims[0];
  split.rows = images.dims[1];
  split.cols = images.dims[2];
  split.pixels = std::move(images.data);
  split.labels = std::move(labels.data);
  return split;
}

}  // namespace polnode::solver
