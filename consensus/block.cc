#include "polnode/consensus/block.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>

#include "polnode/block.pb.h"
#include "polnode/consensus/encoding.h"
#include "polnode/consensus/merkle.h"
#include "polnode/consensus/vrf.h"

namespace polnode::consensus {
namespace {

std::span<const std::uint8_t> AsBytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

template <std::size_t N>
Status CopyFixed(std::string_view field, const std::string& wire, std::array<std::uint8_t, N>& out) {
  if (wire.size() != N) {
    return Status::Corruption("block " + std::string(field) + " must be " + std::to_string(N) + " bytes, got " +
                              std::to_string(wire.size()));
  }
  std::copy(wire.begin(), wire.end(), out.begin());
  return Status::Ok();
}

// Fixed-size fields are always written, all-zero ones included (a bytes field is "default" only
// when empty), so their presence on the wire never depends on their value.
template <std::size_t N>
void SetFixed(std::string* out, const std::array<std::uint8_t, N>& v) {
  out->assign(reinterpret_cast<const char*>(v.data()), v.size());
}

bool SerializeDeterministic(const proto::Block& message, std::string* out) {
  out->clear();
  google::protobuf::io::StringOutputStream stream(out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  return message.SerializeToCodedStream(&coded) && !coded.HadError();
}

bool IsIdentifierChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '/';
}

}  // namespace

Hash256 TxId(std::string_view encoded_envelope) { return Sha256(encoded_envelope); }

Hash256 ComputeTxRoot(std::span<const std::string> encoded_txs) {
  std::vector<Hash256> ids;
  ids.reserve(encoded_txs.size());
  for (const std::string& tx : encoded_txs) ids.push_back(TxId(tx));
  return MerkleRoot(ids);
}

Hash256 BlockHash(const BlockHeader& header) {
  HashWriter w;
  w.String(kBlockDomain);
  w.String(header.chain_id);
  w.U64(header.height);
  w.Fixed(header.prev_hash);
  w.Fixed(header.tx_root);
  w.Fixed(header.state_root);
  w.I64(header.time_unix_ms);
  w.Fixed(header.producer);
  w.Fixed(header.randomness);
  w.Fixed(header.randomness_proof);
  return w.Finalize();
}

Hash256 BeaconInput(std::string_view chain_id, std::uint64_t height, const Hash256& prev_randomness) {
  HashWriter w;
  w.String("polnode/beacon-input/v1");
  w.String(chain_id);
  w.U64(height);
  w.Fixed(prev_randomness);
  return w.Finalize();
}

Status SetBlockRandomness(const SecretKey& key, BlockHeader& header, const Hash256& prev_randomness) {
  const Hash256 alpha = BeaconInput(header.chain_id, header.height, prev_randomness);
  POLNODE_ASSIGN_OR_RETURN(header.randomness_proof, VrfProve(key, alpha));
  POLNODE_ASSIGN_OR_RETURN(header.randomness, VrfVerify(key.PublicKey(), alpha, header.randomness_proof));
  return Status::Ok();
}

Status VerifyBlockRandomness(const BlockHeader& header, const Hash256& prev_randomness) {
  Result<XOnlyPublicKey> producer = XOnlyPublicKey::FromBytes(header.producer);
  if (!producer.ok()) return Status::Corruption("block " + std::to_string(header.height) + ": invalid producer key");
  Result<Hash256> beta = VrfVerify(*producer, BeaconInput(header.chain_id, header.height, prev_randomness),
                                   header.randomness_proof);
  if (!beta.ok() || *beta != header.randomness) {
    return Status::Corruption("block " + std::to_string(header.height) +
                              ": its randomness is not the producer's VRF output on the beacon input");
  }
  return Status::Ok();
}

Status SignBlockHeader(const SecretKey& key, BlockHeader& header) {
  header.producer = key.PublicKey().bytes();
  const Hash256 hash = BlockHash(header);
  POLNODE_ASSIGN_OR_RETURN(header.signature, SignSchnorr(key, hash));
  return Status::Ok();
}

Status VerifyBlockSignature(const BlockHeader& header) {
  POLNODE_ASSIGN_OR_RETURN(XOnlyPublicKey producer, XOnlyPublicKey::FromBytes(header.producer));
  if (!VerifySchnorr(producer, BlockHash(header), header.signature)) {
    return Status::Corruption("block " + std::to_string(header.height) +
                              ": the producer signature does not match the header");
  }
  return Status::Ok();
}

Status CheckBlockContents(const Block& block) {
  const BlockHeader& h = block.header;
  if (h.chain_id.empty() || h.chain_id.size() > 64 || !std::all_of(h.chain_id.begin(), h.chain_id.end(), IsIdentifierChar)) {
    return Status::Corruption("block " + std::to_string(h.height) + ": malformed chain id");
  }
  if (ComputeTxRoot(block.txs) != h.tx_root) {
    return Status::Corruption("block " + std::to_string(h.height) + ": tx_root does not match its transactions");
  }
  if (h.height == 0 && (!block.txs.empty() || h.prev_hash != Hash256{})) {
    return Status::Corruption("genesis block must have no transactions and a zero prev_hash");
  }
  return Status::Ok();
}

Result<std::string> EncodeBlock(const Block& block) {
  proto::Block message;
  proto::BlockHeader* h = message.mutable_header();
  h->set_chain_id(block.header.chain_id);
  h->set_height(block.header.height);
  SetFixed(h->mutable_prev_hash(), block.header.prev_hash);
  SetFixed(h->mutable_tx_root(), block.header.tx_root);
  SetFixed(h->mutable_state_root(), block.header.state_root);
  h->set_time_unix_ms(block.header.time_unix_ms);
  SetFixed(h->mutable_producer(), block.header.producer);
  SetFixed(h->mutable_signature(), block.header.signature);
  SetFixed(h->mutable_randomness(), block.header.randomness);
  SetFixed(h->mutable_randomness_proof(), block.header.randomness_proof);
  for (const std::string& tx : block.txs) message.add_txs(tx);
  std::string out;
  if (!SerializeDeterministic(message, &out)) return Status::Internal("protobuf failed to serialize a Block");
  return out;
}

Result<Block> DecodeBlock(std::span<const std::uint8_t> bytes) {
  if (bytes.size() > kMaxBlockBytes) {
    return Status::ResourceExhausted("encoded block of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " +
                                     std::to_string(kMaxBlockBytes));
  }
  proto::Block message;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return Status::Corruption("not a protobuf Block message");
  }
  if (!message.GetReflection()->GetUnknownFields(message).empty() ||
      !message.header().GetReflection()->GetUnknownFields(message.header()).empty()) {
    return Status::Corruption("block has unknown fields");
  }
  if (static_cast<std::size_t>(message.txs_size()) > kMaxBlockTxs) {
    return Status::ResourceExhausted("block has " + std::to_string(message.txs_size()) + " transactions, more than " +
                                     std::to_string(kMaxBlockTxs));
  }
  Block block;
  const proto::BlockHeader& h = message.header();
  block.header.chain_id = h.chain_id();
  block.header.height = h.height();
  POLNODE_RETURN_IF_ERROR(CopyFixed("prev_hash", h.prev_hash(), block.header.prev_hash));
  POLNODE_RETURN_IF_ERROR(CopyFixed("tx_root", h.tx_root(), block.header.tx_root));
  POLNODE_RETURN_IF_ERROR(CopyFixed("state_root", h.state_root(), block.header.state_root));
  block.header.time_unix_ms = h.time_unix_ms();
  POLNODE_RETURN_IF_ERROR(CopyFixed("producer", h.producer(), block.header.producer));
  POLNODE_RETURN_IF_ERROR(CopyFixed("signature", h.signature(), block.header.signature));
  POLNODE_RETURN_IF_ERROR(CopyFixed("randomness", h.randomness(), block.header.randomness));
  POLNODE_RETURN_IF_ERROR(CopyFixed("randomness_proof", h.randomness_proof(), block.header.randomness_proof));
  block.txs.assign(message.txs().begin(), message.txs().end());
  // Canonical form: re-encoding must reproduce the input, so a block has one byte form.
  POLNODE_ASSIGN_OR_RETURN(std::string canonical, EncodeBlock(block));
  if (!std::equal(canonical.begin(), canonical.end(), bytes.begin(), bytes.end(),
                  [](char a, std::uint8_t b) { return static_cast<std::uint8_t>(a) == b; })) {
    return Status::Corruption("block is not in canonical protobuf form");
  }
  return block;
}

Result<Block> DecodeBlock(std::string_view bytes) { return DecodeBlock(AsBytes(bytes)); }

}  // namespace polnode::consensus
