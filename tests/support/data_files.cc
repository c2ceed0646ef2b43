#include "polnode/testing/data_files.h"

#include <zlib.h>

#include <fstream>
#include <iterator>

namespace polnode::testing {

std::string ReadFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::vector<std::uint8_t> IdxBytes(const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& payload) {
  std::vector<std::uint8_t> out = {0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<std::uint8_t>(d >> shift));
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Status WritePlainFile(const std::string& path, std::span<const std::uint8_t> bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Status::IOError("cannot write " + path);
  return Status::Ok();
}

Status WriteGzipFile(const std::string& path, std::span<const std::uint8_t> bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  if (f == nullptr) return Status::IOError("cannot create " + path);
  const bool written = gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size());
  if (gzclose(f) != Z_OK || !written) return Status::IOError("cannot write " + path);
  return Status::Ok();
}

Status WriteIdxDataset(const std::string& dir, const solver::ImageDataset& data) {
  for (const auto& [name, split] : {std::pair<const char*, const solver::ImageSplit*>{"train", &data.train},
                                    std::pair<const char*, const solver::ImageSplit*>{"t10k", &data.test}}) {
    const auto count = static_cast<std::uint32_t>(split->count);
    const auto rows = static_cast<std::uint32_t>(split->rows);
    const auto cols = static_cast<std::uint32_t>(split->cols);
    POLNODE_RETURN_IF_ERROR(WritePlainFile(dir + "/" + name + "-images-idx3-ubyte",
                                           IdxBytes({count, rows, cols}, split->pixels)));
    POLNODE_RETURN_IF_ERROR(WritePlainFile(dir + "/" + name + "-labels-idx1-ubyte", IdxBytes({count}, split->labels)));
  }
  return Status::Ok();
}

}  // namespace polnode::testing
