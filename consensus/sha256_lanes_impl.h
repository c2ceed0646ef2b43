// The multi-buffer SHA-256 (sha256_lanes.h) written once over a vector type V, included by the
// translation unit of each instruction-set level (sha256_lanes_avx2.cc, sha256_lanes_avx512.cc),
// which supplies V and is compiled with that level's flags. Everything here has internal linkage,
// so that no function compiled with one level's instructions can stand in for another level's
// copy at link time; the code uses raw pointers and intrinsics only, no library inline functions
// that the linker could merge with a copy compiled without the flags.
//
// V provides, on vectors `T` of V::kLanes 32-bit lanes: Load / Store (aligned), Set1, Add, Shr<n>,
// Ror<n> (rotate right), Xor3, Ch(e, f, g) = (e & f) ^ (~e & g), Maj, Gather(base, starts, offset)
// (lane l reads the bits of base[starts[l] + offset], `starts` a vector of indices), LoadFloats
// (unaligned, the bits of kLanes floats), CanonicalNan (every NaN lane replaced by
// kCanonicalNanBits), LeafWord(prev, cur) (the high byte of prev above the low three bytes of cur,
// byte-reversed; see FloatBlockSource), ShiftIn(v, x) (x, then v's lanes 0 .. kLanes - 2) and
// Transpose(m) (of kLanes vectors in place: m[i] lane l becomes m[l] lane i).
//
// The work is split in two stages per 64-byte SHA-256 block: a source writes the 16 message
// words of every lane interleaved, lane l's word j at words[j * kLanes + l], so that each word of
// all lanes is one aligned load; then one compression advances every lane. Padding and the length
// are written by the driver (HashLanes), so a source only supplies the message's own words.
// Kernels run kGroups (1 or 2) such sets side by side, their rounds alternating (see
// sha256_lane_kernels.h).
#ifndef POLNODE_CONSENSUS_SHA256_LANES_IMPL_H_
#define POLNODE_CONSENSUS_SHA256_LANES_IMPL_H_

#include <cstddef>
#include <cstdint>

#include "polnode/consensus/pinpoint.h"

namespace polnode::consensus {
namespace {

constexpr std::uint32_t kSha256RoundConstants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t kSha256InitialState[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

// One round; the caller rotates the roles of the eight working variables instead of moving them.
// The sums are ordered for a short dependency chain: e's next value waits on Sigma1(e) and Ch(e,
// f, g) only (d, h and k + w are older), and vector adds here take two cycles, so an extra add
// off the chain is cheaper than one more on it.
template <typename V>
inline __attribute__((always_inline)) void Round(typename V::T a, typename V::T b, typename V::T c, typename V::T& d,
                                                 typename V::T e, typename V::T f, typename V::T g, typename V::T& h,
                                                 typename V::T k_plus_w) {
  const typename V::T hkw = V::Add(h, k_plus_w);
  const typename V::T ch = V::Ch(e, f, g);
  const typename V::T sigma1 = V::Xor3(V::template Ror<6>(e), V::template Ror<11>(e), V::template Ror<25>(e));
  const typename V::T t2 = V::Add(V::Xor3(V::template Ror<2>(a), V::template Ror<13>(a), V::template Ror<22>(a)),
                                  V::Maj(a, b, c));
  d = V::Add(V::Add(V::Add(d, hkw), ch), sigma1);  // d + t1
  h = V::Add(V::Add(V::Add(hkw, ch), sigma1), t2);  // t1 + t2
}

// Sixteen rounds from round `base` on of each of kGroups independent sets of lanes, with w[g][i]
// the message schedule's word base + i of set g. The sets' rounds alternate, so that one set's
// round runs while another's waits on its dependency chain.
template <typename V, int kGroups>
inline __attribute__((always_inline)) void SixteenRounds(typename V::T s[kGroups][8],
                                                         const typename V::T w[kGroups][16], int base) {
  const std::uint32_t* k = kSha256RoundConstants + base;
#pragma GCC unroll 2
  for (int i = 0; i < 16; i += 8) {
#pragma GCC unroll 8
    for (int r = 0; r < 8; ++r) {
#pragma GCC unroll 4
      for (int g = 0; g < kGroups; ++g) {
        // Round r of eight: the working variables' roles have rotated r times.
        typename V::T* v = s[g];
        Round<V>(v[(8 - r) & 7], v[(9 - r) & 7], v[(10 - r) & 7], v[(11 - r) & 7], v[(12 - r) & 7], v[(13 - r) & 7],
                 v[(14 - r) & 7], v[(15 - r) & 7], V::Add(V::Set1(k[i + r]), w[g][i + r]));
      }
    }
  }
}

// The next 16 words of the message schedule in place: w[i] becomes word i + 16.
template <typename V>
inline __attribute__((always_inline)) void NextSchedule(typename V::T w[16]) {
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    const typename V::T w15 = w[(i + 1) & 15];
    const typename V::T w2 = w[(i + 14) & 15];
    const typename V::T s0 = V::Xor3(V::template Ror<7>(w15), V::template Ror<18>(w15), V::template Shr<3>(w15));
    const typename V::T s1 = V::Xor3(V::template Ror<17>(w2), V::template Ror<19>(w2), V::template Shr<10>(w2));
    w[i] = V::Add(V::Add(w[i], s0), V::Add(w[(i + 9) & 15], s1));
  }
}

// One SHA-256 compression of every lane of kGroups sets over their interleaved blocks
// words[g].
template <typename V, int kGroups>
void Compress(typename V::T state[kGroups][8], std::uint32_t* const words[kGroups]) {
  typename V::T w[kGroups][16];
  typename V::T s[kGroups][8];
  for (int g = 0; g < kGroups; ++g) {
    for (int i = 0; i < 16; ++i) w[g][i] = V::Load(words[g] + i * V::kLanes);
    for (int i = 0; i < 8; ++i) s[g][i] = state[g][i];
  }
  SixteenRounds<V, kGroups>(s, w, 0);
  for (int base = 16; base < 64; base += 16) {
    for (int g = 0; g < kGroups; ++g) NextSchedule<V>(w[g]);
    SixteenRounds<V, kGroups>(s, w, base);
  }
  for (int g = 0; g < kGroups; ++g) {
    for (int i = 0; i < 8; ++i) state[g][i] = V::Add(state[g][i], s[g][i]);
  }
}

// SHA-256 of kGroups x V::kLanes messages of `length` bytes each, in kGroups sets of V::kLanes
// lanes: `sources[g].Fill(words, first, count)` writes message words first .. first + count - 1
// of set g (big-endian, the 0x80 that ends the message included) interleaved to `words`, and is
// called for words 0, 1, ... in order; the zero words and the bit length after them are written
// here. The digest of set g's lane l goes to digests[32 (g V::kLanes + l) ..).
template <typename V, int kGroups, typename Source>
void HashLanes(Source* sources, std::uint64_t length, std::uint8_t* digests) {
  constexpr int kLanes = V::kLanes;
  // Words that hold a message byte or the 0x80 after them; the rest of the padded message is
  // zero words and, in the last two, the length in bits. length + 9 bytes need at least that many.
  const std::uint64_t message_words = (length + 1 + 3) / 4;
  const std::uint64_t blocks = (length + 9 + 63) / 64;
  alignas(64) std::uint32_t block_words[kGroups][16 * kLanes];
  std::uint32_t* words[kGroups];
  typename V::T state[kGroups][8];
  for (int g = 0; g < kGroups; ++g) {
    words[g] = block_words[g];
    for (int i = 0; i < 8; ++i) state[g][i] = V::Set1(kSha256InitialState[i]);
  }
  for (std::uint64_t block = 0; block < blocks; ++block) {
    const std::uint64_t first = block * 16;
    std::uint64_t filled = 0;
    if (message_words > first) filled = message_words - first < 16 ? message_words - first : 16;
    for (int g = 0; g < kGroups; ++g) {
      if (filled > 0) sources[g].Fill(words[g], first, static_cast<int>(filled));
      for (std::uint64_t i = filled; i < 16; ++i) V::Store(words[g] + i * kLanes, V::Set1(0));
      if (block + 1 == blocks) {
        V::Store(words[g] + 14 * kLanes, V::Set1(static_cast<std::uint32_t>((length * 8) >> 32)));
        V::Store(words[g] + 15 * kLanes, V::Set1(static_cast<std::uint32_t>(length * 8)));
      }
    }
    Compress<V, kGroups>(state, words);
  }
  alignas(64) std::uint32_t lanes[8 * kLanes];
  for (int g = 0; g < kGroups; ++g) {
    for (int i = 0; i < 8; ++i) V::Store(lanes + i * kLanes, state[g][i]);
    for (int l = 0; l < kLanes; ++l) {
      for (int i = 0; i < 8; ++i) {
        const std::uint32_t x = lanes[i * kLanes + l];
        std::uint8_t* out = digests + 32 * (g * kLanes + l) + 4 * i;
        out[0] = static_cast<std::uint8_t>(x >> 24);
        out[1] = static_cast<std::uint8_t>(x >> 16);
        out[2] = static_cast<std::uint8_t>(x >> 8);
        out[3] = static_cast<std::uint8_t>(x);
      }
    }
  }
}

// Byte messages read word by word: the general case, which sha256_lanes.h offers for any
// messages of one length.
template <int kLanes>
struct ByteSource {
  const std::uint8_t* const* messages;
  std::uint64_t length;

  void Fill(std::uint32_t* words, std::uint64_t first, int count) const {
    for (int k = 0; k < count; ++k) {
      const std::uint64_t at = (first + static_cast<std::uint64_t>(k)) * 4;
      for (int l = 0; l < kLanes; ++l) {
        std::uint32_t word = 0;
        for (std::uint64_t i = at; i < at + 4; ++i) {
          const std::uint32_t byte = i < length ? messages[l][i] : (i == length ? 0x80u : 0u);
          word = (word << 8) | byte;
        }
        words[k * kLanes + l] = word;
      }
    }
  }
};

// The bits of the float at p, a NaN read as kCanonicalNanBits.
inline std::uint32_t CanonicalBits(const float* p) {
  std::uint32_t bits;
  __builtin_memcpy(&bits, p, sizeof bits);
  return (bits & 0x7FFFFFFFu) > 0x7F800000u ? kCanonicalNanBits : bits;
}

// A block leaf's message, 0x00 || the block's floats as little-endian bits, read straight from the
// tensor. The prefix byte shifts every float across two big-endian message words: word j is the
// high byte of float j - 1 (0 for the prefix) above the low three bytes of float j, reversed. The
// word after the last float takes 0x80 as its "float" (the padding byte after the message).
//
// Where a block's rows are a multiple of kLanes floats wide (the full 64-wide blocks), kLanes
// words of a lane come from one row: each lane's floats are two unaligned vector loads (float j
// and float j - 1 on), made into words in place, and the kLanes x kLanes words are transposed
// into the interleaved layout. Elsewhere (narrow edge blocks, the word after the last float) each
// word of all lanes is one gather, keeping float j - 1 from the word before.
template <typename V>
struct FloatBlockSource {
  static constexpr int kLanes = V::kLanes;
  const float* lane_starts[kLanes];  // lane l's block starts here
  typename V::T starts;              // the same as indices into `data`, for gathers
  const float* data;
  std::uint64_t cols;
  std::uint64_t stride;
  std::uint64_t rows;
  std::uint64_t floats;              // rows * cols
  bool rows_fill_vectors;            // cols % kLanes == 0: the transposing path applies
  std::uint64_t row_offset = 0;      // where float j's row starts, relative to the block's start
  std::uint64_t col = 0;             // float j's column in the block
  typename V::T previous;            // float j - 1 of every lane, NaNs canonical, if !previous_stale
  bool previous_stale = false;       // the transposing path does not keep `previous`
  std::uint64_t previous_offset = 0; // float j - 1's offset from the block's start, for j >= 1

  void Fill(std::uint32_t* words, std::uint64_t first, int count) {
    int k = 0;
    while (k < count) {
      const std::uint64_t j = first + static_cast<std::uint64_t>(k);
      if (rows_fill_vectors && count - k >= kLanes && j + kLanes <= floats) {
        FillFromRows(words + k * kLanes, j);
        previous_offset = row_offset + col + kLanes - 1;
        previous_stale = true;
        Advance(kLanes);
        k += kLanes;
        continue;
      }
      if (previous_stale) {
        previous = V::CanonicalNan(V::Gather(data, starts, static_cast<std::int32_t>(previous_offset)));
        previous_stale = false;
      }
      const typename V::T current =
          j < floats ? V::CanonicalNan(V::Gather(data, starts, static_cast<std::int32_t>(row_offset + col)))
                     : V::Set1(0x80);
      V::Store(words + k * kLanes, V::LeafWord(previous, current));
      previous = current;
      previous_offset = row_offset + col;
      Advance(1);
      ++k;
    }
  }

  // Words j .. j + kLanes - 1 of every lane, all in float j's row.
  void FillFromRows(std::uint32_t* words, std::uint64_t j) {
    // Lanes read rows `stride` floats apart in 16 places at once, which the hardware prefetchers
    // do not follow: at the start of a row, ask for every lane's next row, needed a few
    // compressions later (on Zen 5, one set of lanes: the 14.9 MB state in 3.6 ms instead of 5.1).
    if (col == 0 && row_offset + stride < rows * stride) {
      for (int l = 0; l < kLanes; ++l) {
        const float* next_row = lane_starts[l] + row_offset + stride;
        for (std::uint64_t c = 0; c < cols; c += 16) __builtin_prefetch(next_row + c);
      }
    }
    typename V::T lanes[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      const float* at = lane_starts[l] + row_offset + col;
      const typename V::T current = V::CanonicalNan(V::LoadFloats(at));
      typename V::T before;  // floats j - 1 .. j + kLanes - 2
      if (col != 0) {
        before = V::CanonicalNan(V::LoadFloats(at - 1));
      } else {
        const std::uint32_t last = j == 0 ? 0u : CanonicalBits(at - stride + cols - 1);
        before = V::ShiftIn(current, last);
      }
      lanes[l] = V::LeafWord(before, current);
    }
    V::Transpose(lanes);
    for (int i = 0; i < kLanes; ++i) V::Store(words + i * kLanes, lanes[i]);
  }

  void Advance(std::uint64_t n) {
    col += n;
    if (col == cols) {
      col = 0;
      row_offset += stride;
    }
  }
};

// The kernels of sha256_lane_kernels.h over kGroups x V::kLanes messages.
template <typename V, int kGroups>
void HashMessages(const std::uint8_t* const* messages, std::size_t length, std::uint8_t* digests) {
  ByteSource<V::kLanes> sources[kGroups];
  for (int g = 0; g < kGroups; ++g) sources[g] = {messages + g * V::kLanes, length};
  HashLanes<V, kGroups>(sources, length, digests);
}

template <typename V, int kGroups>
void HashBlockLeaves(const float* data, const std::int32_t* starts, std::size_t rows, std::size_t cols,
                     std::size_t stride, std::uint8_t* digests) {
  FloatBlockSource<V> sources[kGroups];
  for (int g = 0; g < kGroups; ++g) {
    FloatBlockSource<V>& source = sources[g];
    alignas(64) std::int32_t lane_starts[V::kLanes];
    for (int l = 0; l < V::kLanes; ++l) {
      lane_starts[l] = starts[g * V::kLanes + l];
      source.lane_starts[l] = data + lane_starts[l];
    }
    source.starts = V::Load(reinterpret_cast<const std::uint32_t*>(lane_starts));
    source.data = data;
    source.cols = cols;
    source.stride = stride;
    source.rows = rows;
    source.floats = rows * cols;
    source.rows_fill_vectors = cols % V::kLanes == 0;
    source.previous = V::Set1(0);
  }
  HashLanes<V, kGroups>(sources, 1 + 4 * rows * cols, digests);
}

}  // namespace
}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_SHA256_LANES_IMPL_H_
