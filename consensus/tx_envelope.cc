#include "polnode/consensus/tx_envelope.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "polnode/consensus/encoding.h"
#include "polnode/tx.pb.h"

namespace polnode::consensus {
namespace {

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '/';
}

Status CheckIdentifier(std::string_view field, std::string_view value) {
  if (value.empty() || value.size() > kMaxIdentifierBytes) {
    return Status::InvalidArgument(std::string(field) + " must be 1 to " + std::to_string(kMaxIdentifierBytes) +
                                   " bytes, got " + std::to_string(value.size()));
  }
  if (!std::all_of(value.begin(), value.end(), IsIdentifierChar)) {
    return Status::InvalidArgument(std::string(field) +
                                   " may only contain ASCII letters, digits and the characters . _ - /");
  }
  return Status::Ok();
}

std::span<const std::uint8_t> AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Serializes with deterministic ordering, so the canonical-form check in DecodeEnvelope stays
// meaningful even if a map field is ever added to the message.
bool SerializeDeterministic(const proto::TxEnvelope& message, std::string* out) {
  out->clear();
  google::protobuf::io::StringOutputStream stream(out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  return message.SerializeToCodedStream(&coded) && !coded.HadError();
}

template <std::size_t N>
Status CopyFixed(std::string_view field, const std::string& wire, std::array<std::uint8_t, N>& out) {
  if (wire.size() != N) {
    return Status::InvalidArgument(std::string(field) + " must be " + std::to_string(N) + " bytes, got " +
                                   std::to_string(wire.size()));
  }
  std::copy(wire.begin(), wire.end(), out.begin());
  return Status::Ok();
}

// Reads a varint as protobuf's serializer writes it: at most 10 bytes, no zero high byte after
// the first, no bits beyond 64. False for anything else, including truncation.
bool ReadMinimalVarint(const std::uint8_t*& p, const std::uint8_t* end, std::uint64_t& value) {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const std::uint8_t byte = *p++;
    v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      if ((byte == 0 && shift != 0) || (shift == 63 && byte > 1)) return false;
      value = v;
      return true;
    }
  }
  return false;
}

// The envelope `bytes` encode when they are exactly the canonical form of an envelope whose
// fields pass CheckEnvelopeFields, read without protobuf; nullopt for anything else, however
// slight (DecodeEnvelope then takes the protobuf path, which names the fault). Canonical proto3:
// fields 1-6 in number order, each at most once, a field absent exactly when it holds its
// default (empty bytes, nonce 0), one-byte tags, minimal varints. What this accepts, protobuf
// parses to the same fields and serializes back to the same bytes (the tx_envelope fuzz target
// checks the round trip), so both paths give one verdict; this one skips building, serializing
// and destroying a message: a fifth of admission's cost outside the signature check.
std::optional<TxEnvelope> ReadCanonicalEnvelope(std::span<const std::uint8_t> bytes) {
  constexpr std::uint32_t kNonceField = 2;
  constexpr std::uint32_t kLastField = 6;
  constexpr std::uint32_t kVarintType = 0;
  constexpr std::uint32_t kBytesType = 2;
  TxEnvelope envelope;
  std::string_view signer, signature;
  const std::uint8_t* p = bytes.data();
  const std::uint8_t* const end = p + bytes.size();
  std::uint32_t last_field = 0;
  while (p < end) {
    const std::uint8_t tag = *p++;
    const std::uint32_t field = tag >> 3;
    const std::uint32_t wire_type = tag & 7;
    if (tag >= 0x80 || field <= last_field || field > kLastField) return std::nullopt;
    last_field = field;
    std::uint64_t value = 0;
    if (!ReadMinimalVarint(p, end, value) || value == 0) return std::nullopt;
    if (field == kNonceField) {
      if (wire_type != kVarintType) return std::nullopt;
      envelope.nonce = value;
      continue;
    }
    if (wire_type != kBytesType || value > static_cast<std::uint64_t>(end - p)) return std::nullopt;
    const std::string_view content(reinterpret_cast<const char*>(p), static_cast<std::size_t>(value));
    p += value;
    switch (field) {
      case 1: envelope.chain_id.assign(content); break;
      case 3: signer = content; break;
      case 4: envelope.payload_type.assign(content); break;
      case 5: envelope.payload.assign(content); break;
      default: signature = content; break;
    }
  }
  if (signer.size() != envelope.signer_pubkey.size() || signature.size() != envelope.signature.size()) {
    return std::nullopt;
  }
  std::copy(signer.begin(), signer.end(), envelope.signer_pubkey.begin());
  std::copy(signature.begin(), signature.end(), envelope.signature.begin());
  if (!CheckEnvelopeFields(envelope).ok()) return std::nullopt;
  return envelope;
}

}  // namespace

Status CheckEnvelopeFields(const TxEnvelope& envelope) {
  POLNODE_RETURN_IF_ERROR(CheckIdentifier("chain_id", envelope.chain_id));
  POLNODE_RETURN_IF_ERROR(CheckIdentifier("payload_type", envelope.payload_type));
  if (envelope.payload.size() > kMaxPayloadBytes) {
    return Status::InvalidArgument("payload of " + std::to_string(envelope.payload.size()) +
                                   " bytes exceeds the limit of " + std::to_string(kMaxPayloadBytes));
  }
  return Status::Ok();
}

Hash256 EnvelopeSigningDigest(const TxEnvelope& envelope) {
  HashWriter w;
  w.String(kTxDomain);
  w.String(envelope.chain_id);
  w.U64(envelope.nonce);
  w.Fixed(envelope.signer_pubkey);
  w.String(envelope.payload_type);
  w.String(envelope.payload);
  return w.Finalize();
}

Result<TxEnvelope> SignEnvelope(const SecretKey& key, TxEnvelope envelope,
                                std::span<const std::uint8_t, 32> aux_rand) {
  POLNODE_RETURN_IF_ERROR(CheckEnvelopeFields(envelope));
  envelope.signer_pubkey = key.PublicKey().bytes();
  const Hash256 digest = EnvelopeSigningDigest(envelope);
  POLNODE_ASSIGN_OR_RETURN(envelope.signature, SignSchnorr(key, digest, aux_rand));
  return envelope;
}

Result<TxEnvelope> SignEnvelope(const SecretKey& key, TxEnvelope envelope) {
  POLNODE_RETURN_IF_ERROR(CheckEnvelopeFields(envelope));
  envelope.signer_pubkey = key.PublicKey().bytes();
  const Hash256 digest = EnvelopeSigningDigest(envelope);
  POLNODE_ASSIGN_OR_RETURN(envelope.signature, SignSchnorr(key, digest));
  return envelope;
}

namespace {

// VerifyEnvelope once the signer's key is parsed (or failed to).
Status VerifyWithSigner(const TxEnvelope& envelope, const Result<XOnlyPublicKey>& signer) {
  if (!signer.ok()) return signer.status().WithContext("signer_pubkey");
  if (!VerifySchnorr(*signer, EnvelopeSigningDigest(envelope), envelope.signature)) {
    return Status::Corruption("the signature does not match the envelope's contents and signer");
  }
  return Status::Ok();
}

}  // namespace

Status VerifyEnvelope(const TxEnvelope& envelope) {
  POLNODE_RETURN_IF_ERROR(CheckEnvelopeFields(envelope));
  return VerifyWithSigner(envelope, XOnlyPublicKey::FromBytes(envelope.signer_pubkey));
}

Status VerifyEnvelope(const TxEnvelope& envelope, XOnlyKeyCache& keys) {
  POLNODE_RETURN_IF_ERROR(CheckEnvelopeFields(envelope));
  return VerifyWithSigner(envelope, keys.Parse(envelope.signer_pubkey));
}

Result<std::string> EncodeEnvelope(const TxEnvelope& envelope) {
  POLNODE_RETURN_IF_ERROR(CheckEnvelopeFields(envelope));
  proto::TxEnvelope message;
  message.set_chain_id(envelope.chain_id);
  message.set_nonce(envelope.nonce);
  message.set_signer_pubkey(envelope.signer_pubkey.data(), envelope.signer_pubkey.size());
  message.set_payload_type(envelope.payload_type);
  message.set_payload(envelope.payload);
  message.set_signature(envelope.signature.data(), envelope.signature.size());
  std::string out;
  if (!SerializeDeterministic(message, &out)) return Status::Internal("protobuf failed to serialize a TxEnvelope");
  return out;
}

Result<TxEnvelope> DecodeEnvelope(std::span<const std::uint8_t> bytes) {
  if (bytes.size() > kMaxEnvelopeBytes) {
    return Status::ResourceExhausted("encoded envelope of " + std::to_string(bytes.size()) +
                                     " bytes exceeds the limit of " + std::to_string(kMaxEnvelopeBytes));
  }
  if (std::optional<TxEnvelope> canonical = ReadCanonicalEnvelope(bytes)) return std::move(*canonical);
  proto::TxEnvelope message;
  // An empty span may carry a null pointer; protobuf gets a valid one either way.
  const void* data = bytes.empty() ? static_cast<const void*>("") : static_cast<const void*>(bytes.data());
  if (!message.ParseFromArray(data, static_cast<int>(bytes.size()))) {
    return Status::Corruption("not a protobuf TxEnvelope message");
  }
  if (!message.GetReflection()->GetUnknownFields(message).empty()) {
    return Status::Corruption("envelope has unknown fields");
  }
  // Canonical form: re-encoding must give back the input exactly. This is what makes the byte
  // form of a transaction unique (so hashes of it cannot be malleated by re-encoding). The
  // encoding is made before the strings move out of `message` (copying them cost an allocation
  // each) but compared last, so the errors come in the documented order.
  std::string canonical;
  const bool serialized = SerializeDeterministic(message, &canonical);
  TxEnvelope envelope;
  envelope.chain_id = std::move(*message.mutable_chain_id());
  envelope.nonce = message.nonce();
  POLNODE_RETURN_IF_ERROR(CopyFixed("signer_pubkey", message.signer_pubkey(), envelope.signer_pubkey));
  envelope.payload_type = std::move(*message.mutable_payload_type());
  envelope.payload = std::move(*message.mutable_payload());
  POLNODE_RETURN_IF_ERROR(CopyFixed("signature", message.signature(), envelope.signature));
  POLNODE_RETURN_IF_ERROR(CheckEnvelopeFields(envelope));
  if (!serialized) return Status::Internal("protobuf failed to serialize a TxEnvelope");
  if (!std::equal(canonical.begin(), canonical.end(), bytes.begin(), bytes.end(),
                  [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; })) {
    return Status::Corruption("envelope is not in canonical protobuf form");
  }
  return envelope;
}

Result<TxEnvelope> DecodeEnvelope(std::string_view bytes) { return DecodeEnvelope(AsBytes(bytes)); }

}  // namespace polnode::consensus
