// Ledger blocks: header fields, the header hash the producer signs, the transaction root, and the
// protobuf wire form (proto/polnode/block.proto).
//
// Header hash (version 2), exact to the byte, in the encoding of encoding.h:
//
//   hash = SHA-256( String("polnode/block/v2") || String(chain_id) || U64(height)
//                   || Fixed(prev_hash, 32) || Fixed(tx_root, 32) || Fixed(state_root, 32)
//                   || I64(time_unix_ms) || Fixed(producer, 32) || Fixed(randomness, 32)
//                   || Fixed(randomness_proof, 81) )
//
// The hash covers every header field but the signature. It is the block's id (the next block's
// prev_hash) and the message of the producer's BIP-340 signature. Leaving the signature out keeps
// the id independent of the signer's aux randomness, so the id is fixed once the contents are.
//
//   tx id    = SHA-256(canonical TxEnvelope bytes)   (tx_envelope.h makes those bytes unique)
//   tx_root  = MerkleRoot(tx ids in block order)     (merkle.h; commits to the count too)
//
// Genesis is height 0 with prev_hash all zero, no transactions, and the state root of the genesis
// state; it is signed like any other block.
//
// Randomness (DESIGN.md section 7): each block carries the producer's VRF output (vrf.h) on
//   BeaconInput = SHA-256( String("polnode/beacon-input/v1") || String(chain_id) || U64(height)
//                          || Fixed(randomness of block height-1, 32) )
// (32 zero bytes before genesis). The input names nothing the producer chooses, and a VRF has one
// output per key and input, so the producer cannot grind it: it can compute the sequence, but not
// steer it. What must stay unknown to the producer as well (a task's segment beacon) also mixes in
// a secret of a party of that task (contracts/beacon.h).
#ifndef POLNODE_CONSENSUS_BLOCK_H_
#define POLNODE_CONSENSUS_BLOCK_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// The domain string that starts every block header hash.
inline constexpr std::string_view kBlockDomain = "polnode/block/v2";

/// Largest encoded block DecodeBlock accepts, checked before parsing: 64 MiB holds a full block of
/// the largest transactions the mempool admits by default with room to spare.
inline constexpr std::size_t kMaxBlockBytes = std::size_t{64} << 20;

/// Most transactions DecodeBlock accepts in one block.
inline constexpr std::size_t kMaxBlockTxs = 100000;

struct BlockHeader {
  std::string chain_id;
  std::uint64_t height = 0;
  Hash256 prev_hash{};
  Hash256 tx_root{};
  Hash256 state_root{};
  std::int64_t time_unix_ms = 0;
  std::array<std::uint8_t, 32> producer{};  // x-only public key
  SchnorrSignature signature{};
  Hash256 randomness{};                          // the producer's VRF output (above)
  std::array<std::uint8_t, 81> randomness_proof{};  // its proof (vrf.h)

  friend bool operator==(const BlockHeader&, const BlockHeader&) = default;
};

struct Block {
  BlockHeader header;
  std::vector<std::string> txs;  // canonical TxEnvelope bytes, in execution order

  friend bool operator==(const Block&, const Block&) = default;
};

/// The id of a transaction: SHA-256 of its canonical envelope bytes.
Hash256 TxId(std::string_view encoded_envelope);

/// MerkleRoot over the ids of `encoded_txs`, in order.
Hash256 ComputeTxRoot(std::span<const std::string> encoded_txs);

/// The header hash defined above (ignores `signature`).
Hash256 BlockHash(const BlockHeader& header);

/// Sets header.producer to key's public key and header.signature to a signature of BlockHash.
/// Errors as SignSchnorr reports them.
[[nodiscard]] Status SignBlockHeader(const SecretKey& key, BlockHeader& header);

/// Ok iff header.producer is a valid x-only key and header.signature is its signature of
/// BlockHash(header). kInvalidArgument for an invalid key, kCorruption for a wrong signature.
[[nodiscard]] Status VerifyBlockSignature(const BlockHeader& header);

/// Checks what a block says about itself: tx_root matches its transactions, chain_id follows the
/// envelope identifier rules, the genesis block has no txs and a zero prev_hash. kCorruption
/// naming the first mismatch. Signature and state are checked separately.
[[nodiscard]] Status CheckBlockContents(const Block& block);

/// The VRF input of block `height` (above): `prev_randomness` is block height-1's randomness.
Hash256 BeaconInput(std::string_view chain_id, std::uint64_t height, const Hash256& prev_randomness);
/// Sets header.randomness and header.randomness_proof: `key`'s VRF on BeaconInput. Call before
/// SignBlockHeader (the signature covers both). Errors as VrfProve's.
[[nodiscard]] Status SetBlockRandomness(const SecretKey& key, BlockHeader& header, const Hash256& prev_randomness);
/// Ok iff header.randomness is the VRF output header.randomness_proof proves for header.producer
/// on BeaconInput(chain_id, height, prev_randomness). kCorruption otherwise.
[[nodiscard]] Status VerifyBlockRandomness(const BlockHeader& header, const Hash256& prev_randomness);

/// The canonical protobuf bytes of `block` (proto.Block).
[[nodiscard]] Result<std::string> EncodeBlock(const Block& block);

/// Parses protobuf bytes; accepts only what EncodeBlock produces. Errors:
///   kResourceExhausted  more than kMaxBlockBytes (checked before parsing) or kMaxBlockTxs txs
///   kCorruption         not a Block message, unknown fields, fixed-size fields of the wrong size,
///                       or a non-canonical encoding
/// Checks neither the signature nor the tx root (see VerifyBlockSignature, CheckBlockContents).
[[nodiscard]] Result<Block> DecodeBlock(std::span<const std::uint8_t> bytes);
[[nodiscard]] Result<Block> DecodeBlock(std::string_view bytes);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_BLOCK_H_
