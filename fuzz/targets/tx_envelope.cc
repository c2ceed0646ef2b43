// Target tx_envelope: DecodeEnvelope + VerifyEnvelope on arbitrary bytes.
// Properties: never crashes; an accepted input re-encodes to exactly the same bytes (the decoder
// accepts only canonical encodings); verification fails only with the documented codes.
#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "fuzz.h"
#include "polnode/consensus/tx_envelope.h"

namespace polnode::fuzz {
namespace {

using consensus::TxEnvelope;

void Run(FuzzInput input) {
  Result<TxEnvelope> decoded = consensus::DecodeEnvelope(input);
  if (!decoded.ok()) {
    const StatusCode code = decoded.status().code();
    POLNODE_FUZZ_CHECK(code == StatusCode::kCorruption || code == StatusCode::kInvalidArgument ||
                           code == StatusCode::kResourceExhausted,
                       "DecodeEnvelope failed with an undocumented status code");
    return;
  }
  Result<std::string> encoded = consensus::EncodeEnvelope(*decoded);
  POLNODE_FUZZ_CHECK(encoded.ok(), "a decoded envelope does not re-encode");
  POLNODE_FUZZ_CHECK(std::equal(encoded->begin(), encoded->end(), input.begin(), input.end(),
                                [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; }),
                     "re-encoding a decoded envelope changed its bytes");
  const Status verified = consensus::VerifyEnvelope(*decoded);
  POLNODE_FUZZ_CHECK(verified.ok() || verified.code() == StatusCode::kCorruption ||
                         verified.code() == StatusCode::kInvalidArgument,
                     "VerifyEnvelope failed with an undocumented status code");
}

// Seeds are signed with a fixed key and fixed aux randomness, so regenerating them gives the
// same bytes. The key is public test material, never used outside tests.
consensus::SecretKey SeedKey() {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(0x11);
  return *consensus::SecretKey::FromBytes(bytes);
}

std::vector<std::uint8_t> Wire(const TxEnvelope& envelope) {
  const std::string wire = *consensus::EncodeEnvelope(envelope);
  return {wire.begin(), wire.end()};
}

TxEnvelope SignedSeed(std::string chain_id, std::uint64_t nonce, std::string payload_type, std::string payload) {
  TxEnvelope e;
  e.chain_id = std::move(chain_id);
  e.nonce = nonce;
  e.payload_type = std::move(payload_type);
  e.payload = std::move(payload);
  const std::array<std::uint8_t, 32> aux{};
  return *consensus::SignEnvelope(SeedKey(), e, aux);
}

std::vector<Seed> Seeds() {
  const TxEnvelope basic = SignedSeed("polnode-devnet-1", 7, "task/submit", std::string("\x00\x01payload\xff", 10));
  const TxEnvelope defaults = SignedSeed("c", 0, "t", "");
  const TxEnvelope wide = SignedSeed(std::string(64, 'z'), ~std::uint64_t{0}, "A-z_0.9/x", std::string(300, '\x5a'));
  std::vector<std::uint8_t> valid = Wire(basic);

  std::vector<Seed> seeds = {
      {"valid-basic", valid},
      {"valid-defaults-omitted", Wire(defaults)},
      {"valid-wide-fields", Wire(wide)},
  };
  TxEnvelope bad_sig = basic;
  bad_sig.signature[5] ^= 0x01;
  seeds.push_back({"bad-signature", Wire(bad_sig)});
  TxEnvelope other_nonce = basic;
  other_nonce.nonce = 8;
  seeds.push_back({"signature-for-other-nonce", Wire(other_nonce)});
  seeds.push_back({"truncated", std::vector<std::uint8_t>(valid.begin(), valid.begin() + 40)});
  std::vector<std::uint8_t> unknown_field = valid;
  unknown_field.insert(unknown_field.end(), {0xf8, 0x06, 0x01});  // field 99, varint 1
  seeds.push_back({"unknown-field", unknown_field});
  // The nonce field (2 bytes after the 18-byte chain_id field) moved in front of chain_id: every
  // field is valid and the signature matches, but the bytes are not canonical.
  std::vector<std::uint8_t> reordered(valid.begin() + 18, valid.begin() + 20);
  reordered.insert(reordered.end(), valid.begin(), valid.begin() + 18);
  reordered.insert(reordered.end(), valid.begin() + 20, valid.end());
  seeds.push_back({"fields-out-of-order", reordered});
  return seeds;
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(tx_envelope, Run, Seeds);

}  // namespace polnode::fuzz
