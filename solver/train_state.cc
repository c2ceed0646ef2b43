#include "polnode/solver/train_state.h"

#include <bit>
#include <cstring>
#include <set>
#include <span>
#include <string_view>

#include "polnode/consensus/pinpoint.h"

namespace polnode::solver {
namespace {

// Floats are written with memcpy, which is the little-endian encoding only on a little-endian
// host; every platform polnode targets (x86-64, AArch64) is one.
static_assert(std::endian::native == std::endian::little,
              "the state encoding copies float bits as little-endian");

constexpr char kMagic[8] = {'P', 'L', 'N', 'S', 'T', 'A', 'T', 'E'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kMaxNameLength = 255;
constexpr std::uint32_t kMaxRank = 8;

// Appends bytes to a vector.
struct VectorSink {
  std::vector<std::uint8_t>& out;
  void Append(const void* p, std::size_t n) {
    // resize + memcpy rather than insert(): GCC 12 reports a false -Wstringop-overflow for the
    // inlined insert of small constant sizes.
    const std::size_t old = out.size();
    out.resize(old + n);
    if (n > 0) std::memcpy(out.data() + old, p, n);
  }
};

// Counts bytes: sizes the encoding before it is written.
struct SizeSink {
  std::size_t size = 0;
  void Append(const void*, std::size_t n) { size += n; }
};

// Collects the encoding as pieces: appends of at least kDirectBytes (tensor elements) as spans of
// the caller's storage, everything else copied into `scratch`, reserved up front (ScratchSize) so
// that the spans into it stay valid.
struct PieceSink {
  static constexpr std::size_t kDirectBytes = std::size_t{64} << 10;
  std::vector<std::uint8_t>& scratch;
  std::vector<std::span<const std::uint8_t>>& pieces;
  bool last_in_scratch = false;
  void Append(const void* p, std::size_t n) {
    if (n == 0) return;
    if (n >= kDirectBytes) {
      pieces.emplace_back(static_cast<const std::uint8_t*>(p), n);
      last_in_scratch = false;
      return;
    }
    const std::size_t old = scratch.size();
    scratch.resize(old + n);  // within the reserved capacity: no reallocation moves earlier pieces
    std::memcpy(scratch.data() + old, p, n);
    if (last_in_scratch) {
      pieces.back() = std::span<const std::uint8_t>(pieces.back().data(), pieces.back().size() + n);
    } else {
      pieces.emplace_back(scratch.data() + old, n);
      last_in_scratch = true;
    }
  }
};

// Counts the bytes PieceSink copies into its scratch buffer.
struct ScratchSize {
  std::size_t size = 0;
  void Append(const void*, std::size_t n) { size += n < PieceSink::kDirectBytes ? n : 0; }
};

template <typename Sink>
void PutU32(Sink& s, std::uint32_t v) {
  std::uint8_t b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
  s.Append(b, 4);
}

template <typename Sink>
void PutU64(Sink& s, std::uint64_t v) {
  std::uint8_t b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
  s.Append(b, 8);
}

template <typename Sink>
void PutTensorBody(Sink& s, const kernels::Tensor& t) {
  PutU32(s, static_cast<std::uint32_t>(t.rank()));
  for (std::int64_t d : t.shape()) PutU64(s, static_cast<std::uint64_t>(d));
  s.Append(t.data(), static_cast<std::size_t>(t.numel()) * sizeof(float));
}

template <typename Sink>
void EncodeTo(const TrainState& state, Sink& s) {
  s.Append(kMagic, sizeof kMagic);
  PutU32(s, kVersion);
  PutU64(s, static_cast<std::uint64_t>(state.step));
  PutU32(s, static_cast<std::uint32_t>(state.tensors.size()));
  for (const NamedTensor& nt : state.tensors) {
    PutU32(s, static_cast<std::uint32_t>(nt.name.size()));
    s.Append(nt.name.data(), nt.name.size());
    PutTensorBody(s, nt.tensor);
  }
}

// Reads from a byte span, failing with the offset and what was being read.
class Reader {
 public:
  explicit Reader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::size_t remaining() const { return bytes_.size() - pos_; }
  std::size_t pos() const { return pos_; }

  Status Need(std::size_t n, std::string_view what) const {
    if (remaining() < n) {
      return Status::Corruption("state encoding truncated at byte " + std::to_string(pos_) +
                                " while reading " + std::string(what));
    }
    return Status::Ok();
  }
  Result<std::uint32_t> U32(std::string_view what) {
    POLNODE_RETURN_IF_ERROR(Need(4, what));
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i)
      v |= std::uint32_t{bytes_[pos_ + static_cast<std::size_t>(i)]} << (8 * i);
    pos_ += 4;
    return v;
  }
  Result<std::uint64_t> U64(std::string_view what) {
    POLNODE_RETURN_IF_ERROR(Need(8, what));
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= std::uint64_t{bytes_[pos_ + static_cast<std::size_t>(i)]} << (8 * i);
    pos_ += 8;
    return v;
  }
  Result<std::span<const std::uint8_t>> Bytes(std::size_t n, std::string_view what) {
    POLNODE_RETURN_IF_ERROR(Need(n, what));
    std::span<const std::uint8_t> out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

bool ValidName(std::span<const std::uint8_t> name) {
  for (std::uint8_t c : name) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

Result<NamedTensor> DecodeTensor(Reader& r, std::uint32_t index) {
  const std::string where = "tensor " + std::to_string(index);
  POLNODE_ASSIGN_OR_RETURN(std::uint32_t name_len, r.U32(where + " name length"));
  if (name_len == 0 || name_len > kMaxNameLength) {
    return Status::Corruption(where + ": name length " + std::to_string(name_len) + " outside 1.." +
                              std::to_string(kMaxNameLength));
  }
  POLNODE_ASSIGN_OR_RETURN(auto name_bytes, r.Bytes(name_len, where + " name"));
  if (!ValidName(name_bytes)) {
    return Status::Corruption(where + ": name is not printable ASCII without spaces");
  }
  NamedTensor nt;
  nt.name.assign(name_bytes.begin(), name_bytes.end());
  const std::string named = where + " (" + nt.name + ")";
  POLNODE_ASSIGN_OR_RETURN(std::uint32_t rank, r.U32(named + " rank"));
  if (rank == 0 || rank > kMaxRank) {
    return Status::Corruption(named + ": rank " + std::to_string(rank) + " outside 1..8");
  }
  kernels::Shape shape;
  // Element count, bounded by what the remaining bytes can hold so it never overflows.
  const std::uint64_t max_elements = r.remaining() / sizeof(float);
  std::uint64_t elements = 1;
  for (std::uint32_t d = 0; d < rank; ++d) {
    POLNODE_ASSIGN_OR_RETURN(std::uint64_t dim, r.U64(named + " dimension"));
    if (dim > max_elements || (dim != 0 && elements > max_elements / dim)) {
      return Status::Corruption(named + ": dimensions exceed the " + std::to_string(r.remaining()) +
                                " bytes that remain");
    }
    elements *= dim;
    shape.push_back(static_cast<std::int64_t>(dim));
  }
  POLNODE_ASSIGN_OR_RETURN(auto data, r.Bytes(elements * sizeof(float), named + " elements"));
  nt.tensor = kernels::Tensor(shape);
  if (!data.empty()) std::memcpy(nt.tensor.data(), data.data(), data.size());
  return nt;
}

}  // namespace

const kernels::Tensor* TrainState::Find(std::string_view name) const {
  for (const NamedTensor& nt : tensors) {
    if (nt.name == name) return &nt.tensor;
  }
  return nullptr;
}

std::vector<std::uint8_t> EncodeState(const TrainState& state) {
  std::vector<std::uint8_t> out;
  EncodeStateInto(state, out);
  return out;
}

void EncodeStateInto(const TrainState& state, std::vector<std::uint8_t>& out) {
  SizeSink size;
  EncodeTo(state, size);
  out.clear();
  out.reserve(size.size);  // one allocation (none when `out` already holds as much), no regrowth copies
  VectorSink sink{out};
  EncodeTo(state, sink);
}

void EncodeStatePieces(const TrainState& state, std::vector<std::uint8_t>& scratch,
                       std::vector<std::span<const std::uint8_t>>& pieces) {
  ScratchSize size;
  EncodeTo(state, size);
  scratch.clear();
  scratch.reserve(size.size);
  pieces.clear();
  PieceSink sink{scratch, pieces};
  EncodeTo(state, sink);
}

Result<TrainState> DecodeState(std::span<const std::uint8_t> bytes) {
  Reader r(bytes);
  POLNODE_ASSIGN_OR_RETURN(auto magic, r.Bytes(sizeof kMagic, "magic"));
  if (std::memcmp(magic.data(), kMagic, sizeof kMagic) != 0) {
    return Status::Corruption("not a polnode training state (bad magic)");
  }
  POLNODE_ASSIGN_OR_RETURN(std::uint32_t version, r.U32("version"));
  if (version != kVersion) {
    return Status::Corruption("unsupported state encoding version " + std::to_string(version));
  }
  TrainState state;
  POLNODE_ASSIGN_OR_RETURN(std::uint64_t step, r.U64("step"));
  if (step > static_cast<std::uint64_t>(INT64_MAX)) {
    return Status::Corruption("step counter " + std::to_string(step) + " is negative as int64");
  }
  state.step = static_cast<std::int64_t>(step);
  POLNODE_ASSIGN_OR_RETURN(std::uint32_t count, r.U32("tensor count"));
  // Each tensor takes at least 4 + 1 + 4 + 8 bytes, so a huge count fails before allocating.
  if (count > r.remaining() / 17) {
    return Status::Corruption("tensor count " + std::to_string(count) + " exceeds what the " +
                              std::to_string(r.remaining()) + " remaining bytes can hold");
  }
  std::set<std::string, std::less<>> names;
  state.tensors.reserve(count);
  for (std::uint32_t i = 0; i < count; ++i) {
    POLNODE_ASSIGN_OR_RETURN(NamedTensor nt, DecodeTensor(r, i));
    if (!names.insert(nt.name).second) {
      return Status::Corruption("tensor name '" + nt.name + "' appears twice");
    }
    state.tensors.push_back(std::move(nt));
  }
  if (r.remaining() != 0) {
    return Status::Corruption(std::to_string(r.remaining()) +
                              " trailing bytes after the last tensor");
  }
  return state;
}

consensus::Hash256 TensorHash(const kernels::Tensor& tensor) {
  return consensus::TensorHashOf(tensor.shape(), tensor.values());
}

std::vector<consensus::Hash256> TensorHashes(const TrainState& state) {
  std::vector<consensus::Hash256> hashes;
  hashes.reserve(state.tensors.size());
  for (const NamedTensor& nt : state.tensors) hashes.push_back(TensorHash(nt.tensor));
  return hashes;
}

consensus::Hash256 StateHashFrom(const TrainState& state, std::span<const consensus::Hash256> tensor_hashes) {
  std::vector<std::string> names;
  names.reserve(state.tensors.size());
  for (const NamedTensor& nt : state.tensors) names.push_back(nt.name);
  return consensus::StateHashFromTensorHashes(static_cast<std::uint64_t>(state.step), names, tensor_hashes);
}

consensus::Hash256 StateHash(const TrainState& state) { return StateHashFrom(state, TensorHashes(state)); }

}  // namespace polnode::solver
