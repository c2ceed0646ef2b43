// The signed transaction envelope: who signs (BIP-340 x-only key), for which chain, with which
// nonce, which kind of payload, and the payload itself. The wire form is the protobuf message
// polnode.proto.TxEnvelope (proto/polnode/tx.proto); this header is the consensus view of it.
//
// Signing digest (version 1), exact to the byte, in the encoding of encoding.h:
//
//   digest = SHA-256( String("polnode/tx/v1") || String(chain_id) || U64(nonce)
//                     || Fixed(signer_pubkey, 32) || String(payload_type) || String(payload) )
//
// The signature is BIP-340 Schnorr over these 32 digest bytes. The digest covers every field but
// the signature itself, so changing any of them voids the signature; the domain string keeps a
// transaction signature from being valid as any other polnode signature.
//
// Field rules (checked by CheckEnvelopeFields, and so by Encode/Decode/Sign/Verify):
//   chain_id, payload_type   1..64 bytes of ASCII letters, digits, '.', '_', '-', '/'
//   payload                  0..kMaxPayloadBytes bytes, any content
//   signer_pubkey, signature exactly 32 and 64 bytes (fixed by the types here; Decode rejects
//                            other lengths on the wire)
#ifndef POLNODE_CONSENSUS_TX_ENVELOPE_H_
#define POLNODE_CONSENSUS_TX_ENVELOPE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "polnode/base/status.h"
#include "polnode/consensus/keys.h"
#include "polnode/consensus/sha256.h"

namespace polnode::consensus {

/// The domain string that starts every transaction signing digest.
inline constexpr std::string_view kTxDomain = "polnode/tx/v1";

/// Largest payload, in bytes. Bulk data (checkpoints, tensors) travels as content-addressed
/// blobs named by hash; a transaction carries hashes and small parameters, and this bound keeps
/// a single transaction from filling a block or exhausting a node's memory while decoding.
inline constexpr std::size_t kMaxPayloadBytes = std::size_t{1} << 20;

/// Longest chain_id and payload_type, in bytes.
inline constexpr std::size_t kMaxIdentifierBytes = 64;

/// Largest encoded envelope accepted by DecodeEnvelope: the payload plus room for every other
/// field at its maximum size and protobuf's tags and lengths. Checked before parsing.
inline constexpr std::size_t kMaxEnvelopeBytes = kMaxPayloadBytes + 1024;

struct TxEnvelope {
  std::string chain_id;
  std::uint64_t nonce = 0;
  std::array<std::uint8_t, 32> signer_pubkey{};  // raw bytes; VerifyEnvelope checks it is a key
  std::string payload_type;
  std::string payload;  // arbitrary bytes
  SchnorrSignature signature{};

  friend bool operator==(const TxEnvelope&, const TxEnvelope&) = default;
};

/// Checks the field rules above (not the key or the signature). kInvalidArgument naming the
/// first field that breaks them.
[[nodiscard]] Status CheckEnvelopeFields(const TxEnvelope& envelope);

/// The signing digest defined above. Ignores `signature`. Defined for any field contents (it does
/// not check the field rules).
Hash256 EnvelopeSigningDigest(const TxEnvelope& envelope);

/// Returns `envelope` with signer_pubkey set to key's public key and signature set to a BIP-340
/// signature of its digest, using fresh aux randomness. The incoming signer_pubkey and signature
/// are ignored. kInvalidArgument if the other fields break the rules; signing errors as
/// SignSchnorr reports them.
Result<TxEnvelope> SignEnvelope(const SecretKey& key, TxEnvelope envelope);

/// As above with the given aux randomness, for reproducible output (tests, fixed seed corpora).
Result<TxEnvelope> SignEnvelope(const SecretKey& key, TxEnvelope envelope, std::span<const std::uint8_t, 32> aux_rand);

/// Ok iff the fields follow the rules, signer_pubkey is a valid x-only key and signature is its
/// valid signature of the digest. kInvalidArgument for a rule violation or an invalid key;
/// kCorruption when the signature does not match (the envelope was altered, or signed by another
/// key). Does not check the nonce or chain_id against ledger state: that is the ledger's job.
[[nodiscard]] Status VerifyEnvelope(const TxEnvelope& envelope);

/// As above, parsing signer_pubkey through `keys` (keys.h): the same verdict, without the square
/// root when the signer was seen before.
[[nodiscard]] Status VerifyEnvelope(const TxEnvelope& envelope, XOnlyKeyCache& keys);

/// The canonical protobuf bytes of `envelope`; kInvalidArgument if its fields break the rules.
/// DecodeEnvelope(EncodeEnvelope(e)) == e for every e this accepts.
Result<std::string> EncodeEnvelope(const TxEnvelope& envelope);

/// Parses protobuf bytes. Accepts only what EncodeEnvelope produces, so an accepted input is
/// byte-identical to EncodeEnvelope of the result. Errors:
///   kResourceExhausted  more than kMaxEnvelopeBytes (checked before parsing)
///   kCorruption         not a TxEnvelope message, unknown fields, or a non-canonical encoding
///                       (fields out of order, repeated, default values written, long varints)
///   kInvalidArgument    a field breaks the rules, or signer_pubkey/signature has the wrong size
/// Does not verify the signature: call VerifyEnvelope.
Result<TxEnvelope> DecodeEnvelope(std::span<const std::uint8_t> bytes);

/// As above, over the bytes of a string.
Result<TxEnvelope> DecodeEnvelope(std::string_view bytes);

}  // namespace polnode::consensus

#endif  // POLNODE_CONSENSUS_TX_ENVELOPE_H_
