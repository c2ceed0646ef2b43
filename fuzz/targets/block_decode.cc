// Target block_decode: DecodeBlock + CheckBlockContents + VerifyBlockSignature on arbitrary bytes.
// Properties: never crashes; a decoded block re-encodes to exactly the input (one byte form per
// block); the checks fail only with their documented codes.
#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "fuzz.h"
#include "polnode/consensus/block.h"

namespace polnode::fuzz {
namespace {

using consensus::Block;

void Run(FuzzInput input) {
  Result<Block> decoded = consensus::DecodeBlock(input);
  if (!decoded.ok()) {
    const StatusCode code = decoded.status().code();
    POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kResourceExhausted,
                       "DecodeBlock failed with an undocumented status code");
    return;
  }
  Result<std::string> encoded = consensus::EncodeBlock(*decoded);
  POLNODE_FUZZ_CHECK(encoded.ok(), "a decoded block does not re-encode");
  POLNODE_FUZZ_CHECK(std::equal(encoded->begin(), encoded->end(), input.begin(), input.end(),
                                [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; }),
                     "re-encoding a decoded block changed its bytes");
  const Status contents = consensus::CheckBlockContents(*decoded);
  POLNODE_FUZZ_CHECK(contents.ok() || contents.code() == StatusCode::kCorruption,
                     "CheckBlockContents failed with an undocumented status code");
  const Status signature = consensus::VerifyBlockSignature(decoded->header);
  POLNODE_FUZZ_CHECK(signature.ok() || signature.code() == StatusCode::kCorruption ||
                         signature.code() == StatusCode::kInvalidArgument,
                     "VerifyBlockSignature failed with an undocumented status code");
}

// Seeds are signed with a fixed public test key and fixed aux randomness, so they are the same
// bytes on every run.
Block SignedSeed(std::uint64_t height, std::vector<std::string> txs) {
  std::array<std::uint8_t, 32> secret{};
  secret.fill(0x22);
  const consensus::SecretKey key = *consensus::SecretKey::FromBytes(secret);
  Block b;
  b.header.chain_id = "polnode-fuzz";
  b.header.height = height;
  if (height > 0) b.header.prev_hash = consensus::Sha256("parent");
  b.txs = std::move(txs);
  b.header.tx_root = consensus::ComputeTxRoot(b.txs);
  b.header.state_root = consensus::Sha256("state");
  b.header.time_unix_ms = 1700000000000;
  b.header.producer = key.PublicKey().bytes();
  const std::array<std::uint8_t, 32> aux{};
  b.header.signature = *consensus::SignSchnorr(key, consensus::BlockHash(b.header), aux);
  return b;
}

std::vector<std::uint8_t> Wire(const Block& b) {
  const std::string wire = *consensus::EncodeBlock(b);
  return {wire.begin(), wire.end()};
}

std::vector<Seed> Seeds() {
  const Block genesis = SignedSeed(0, {});
  const Block with_txs = SignedSeed(5, {"tx-a", std::string(40, '\x01'), ""});
  std::vector<std::uint8_t> valid = Wire(with_txs);
  std::vector<Seed> seeds = {{"valid-genesis", Wire(genesis)}, {"valid-with-txs", valid}};
  Block bad_sig = with_txs;
  bad_sig.header.signature[9] ^= 0x01;
  seeds.push_back({"bad-signature", Wire(bad_sig)});
  Block bad_root = with_txs;
  bad_root.txs.pop_back();
  seeds.push_back({"tx-root-mismatch", Wire(bad_root)});
  seeds.push_back({"truncated", std::vector<std::uint8_t>(valid.begin(), valid.begin() + 50)});
  std::vector<std::uint8_t> unknown_field = valid;
  unknown_field.insert(unknown_field.end(), {0xf8, 0x06, 0x01});  // field 99, varint 1
  seeds.push_back({"unknown-field", unknown_field});
  seeds.push_back({"empty", {}});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(block_decode, Run, Seeds);

}  // namespace polnode::fuzz
