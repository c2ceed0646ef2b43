// Signed transaction envelopes: the signing digest's exact definition, signatures that fail after
// any field changes, the field rules, and a decoder that accepts only canonical protobuf bytes.
#include "polnode/consensus/tx_envelope.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <functional>
#include <string>
#include <vector>

#include "consensus_test_util.h"
#include "polnode/consensus/encoding.h"

namespace polnode::consensus {
namespace {

using testing::Unhex;

SecretKey TestKey(std::uint8_t fill) {
  std::array<std::uint8_t, 32> bytes{};
  bytes.fill(fill);
  Result<SecretKey> key = SecretKey::FromBytes(bytes);
  EXPECT_TRUE(key.ok());
  return *key;
}

TxEnvelope Unsigned() {
  TxEnvelope e;
  e.chain_id = "polnode-devnet-1";
  e.nonce = 7;
  e.payload_type = "task/submit";
  e.payload = std::string("\x00\x01payload\xff", 10);
  return e;
}

TxEnvelope Signed(const SecretKey& key) {
  Result<TxEnvelope> e = SignEnvelope(key, Unsigned());
  EXPECT_TRUE(e.ok()) << e.status().ToString();
  return e.ok() ? *e : TxEnvelope{};
}

// --- protobuf wire helpers, to build inputs the encoder would never produce ---------------------

void AppendVarint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void AppendBytesField(std::string& out, int field, std::string_view value) {
  AppendVarint(out, static_cast<std::uint64_t>(field) << 3 | 2);
  AppendVarint(out, value.size());
  out.append(value);
}

void AppendVarintField(std::string& out, int field, std::uint64_t value) {
  AppendVarint(out, static_cast<std::uint64_t>(field) << 3 | 0);
  AppendVarint(out, value);
}

std::string AsString(std::span<const std::uint8_t> bytes) { return std::string(bytes.begin(), bytes.end()); }

// Hand-encodes the fields of `e` in the given field order (proto field numbers 1..6).
std::string WireInOrder(const TxEnvelope& e, const std::vector<int>& order) {
  std::string out;
  for (int field : order) {
    switch (field) {
      case 1: AppendBytesField(out, 1, e.chain_id); break;
      case 2: AppendVarintField(out, 2, e.nonce); break;
      case 3: AppendBytesField(out, 3, AsString(e.signer_pubkey)); break;
      case 4: AppendBytesField(out, 4, e.payload_type); break;
      case 5: AppendBytesField(out, 5, e.payload); break;
      case 6: AppendBytesField(out, 6, AsString(e.signature)); break;
      default: ADD_FAILURE() << "no field " << field;
    }
  }
  return out;
}

TEST(TxEnvelopeTest, DigestFollowsTheWrittenDefinition) {
  const TxEnvelope e = Signed(TestKey(3));
  BufferWriter w;
  w.String("polnode/tx/v1");
  w.String(e.chain_id);
  w.U64(e.nonce);
  w.Fixed(e.signer_pubkey);
  w.String(e.payload_type);
  w.String(e.payload);
  EXPECT_EQ(EnvelopeSigningDigest(e), Sha256(w.bytes()));
  // The signature is not part of the digest.
  TxEnvelope resigned = e;
  resigned.signature.fill(0);
  EXPECT_EQ(EnvelopeSigningDigest(resigned), EnvelopeSigningDigest(e));
}

TEST(TxEnvelopeTest, SignSetsSignerAndVerifies) {
  const SecretKey key = TestKey(3);
  const TxEnvelope e = Signed(key);
  EXPECT_EQ(e.signer_pubkey, key.PublicKey().bytes());
  EXPECT_TRUE(VerifyEnvelope(e).ok());
  // Deterministic with fixed aux randomness.
  const std::array<std::uint8_t, 32> aux{};
  Result<TxEnvelope> a = SignEnvelope(key, Unsigned(), aux);
  Result<TxEnvelope> b = SignEnvelope(key, Unsigned(), aux);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_TRUE(VerifyEnvelope(*a).ok());
}

TEST(TxEnvelopeTest, ChangingAnyFieldBreaksTheSignature) {
  const TxEnvelope e = Signed(TestKey(3));
  const std::vector<std::pair<std::string, std::function<void(TxEnvelope&)>>> changes = {
      {"chain id", [](TxEnvelope& t) { t.chain_id = "polnode-devnet-2"; }},
      {"nonce", [](TxEnvelope& t) { t.nonce += 1; }},
      {"nonce high bit", [](TxEnvelope& t) { t.nonce ^= std::uint64_t{1} << 63; }},
      {"signer (another valid key)", [](TxEnvelope& t) { t.signer_pubkey = TestKey(4).PublicKey().bytes(); }},
      {"payload type", [](TxEnvelope& t) { t.payload_type = "task/cancel"; }},
      {"payload byte", [](TxEnvelope& t) { t.payload[0] ^= 1; }},
      {"payload extended", [](TxEnvelope& t) { t.payload.push_back('\0'); }},
      {"payload emptied", [](TxEnvelope& t) { t.payload.clear(); }},
  };
  for (const auto& [name, change] : changes) {
    TxEnvelope changed = e;
    change(changed);
    Status s = VerifyEnvelope(changed);
    EXPECT_EQ(s.code(), StatusCode::kCorruption) << name << ": " << s.ToString();
    // The same change made on the wire is caught after decoding.
    Result<std::string> wire = EncodeEnvelope(changed);
    ASSERT_TRUE(wire.ok()) << name;
    Result<TxEnvelope> decoded = DecodeEnvelope(*wire);
    ASSERT_TRUE(decoded.ok()) << name;
    EXPECT_FALSE(VerifyEnvelope(*decoded).ok()) << name;
  }
  for (std::size_t i = 0; i < e.signature.size(); ++i) {
    TxEnvelope changed = e;
    changed.signature[i] ^= 0x80;
    EXPECT_EQ(VerifyEnvelope(changed).code(), StatusCode::kCorruption) << "signature byte " << i;
  }
}

TEST(TxEnvelopeTest, InvalidSignerKeyIsInvalidArgument) {
  TxEnvelope e = Signed(TestKey(3));
  // Not the x coordinate of any curve point (BIP-340 test vector 5).
  const std::vector<std::uint8_t> off_curve = Unhex("EEFDEA4CDB677750A420FEE807EACF21EB9898AE79B9768766E4FAA04A2D4A34");
  ASSERT_EQ(off_curve.size(), e.signer_pubkey.size());
  std::copy(off_curve.begin(), off_curve.end(), e.signer_pubkey.begin());
  EXPECT_EQ(VerifyEnvelope(e).code(), StatusCode::kInvalidArgument);
}

TEST(TxEnvelopeTest, FieldRules) {
  const SecretKey key = TestKey(3);
  const std::vector<std::pair<std::string, std::function<void(TxEnvelope&)>>> bad = {
      {"empty chain id", [](TxEnvelope& t) { t.chain_id.clear(); }},
      {"chain id of 65 bytes", [](TxEnvelope& t) { t.chain_id.assign(65, 'a'); }},
      {"space in chain id", [](TxEnvelope& t) { t.chain_id = "polnode devnet"; }},
      {"non-ASCII chain id", [](TxEnvelope& t) { t.chain_id = "polnode\xc3\xa9"; }},
      {"NUL in payload type", [](TxEnvelope& t) { t.payload_type = std::string("task\0x", 6); }},
      {"empty payload type", [](TxEnvelope& t) { t.payload_type.clear(); }},
      {"oversized payload", [](TxEnvelope& t) { t.payload.assign(kMaxPayloadBytes + 1, 'x'); }},
  };
  for (const auto& [name, change] : bad) {
    TxEnvelope e = Unsigned();
    change(e);
    EXPECT_EQ(CheckEnvelopeFields(e).code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(SignEnvelope(key, e).status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(EncodeEnvelope(e).status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_EQ(VerifyEnvelope(e).code(), StatusCode::kInvalidArgument) << name;
  }
  TxEnvelope edge = Unsigned();
  edge.chain_id.assign(64, 'z');
  edge.payload_type = "A-z_0.9/x";
  edge.payload.assign(kMaxPayloadBytes, '\xab');
  Result<TxEnvelope> signed_edge = SignEnvelope(key, edge);
  ASSERT_TRUE(signed_edge.ok()) << signed_edge.status().ToString();
  Result<std::string> wire = EncodeEnvelope(*signed_edge);
  ASSERT_TRUE(wire.ok());
  EXPECT_LE(wire->size(), kMaxEnvelopeBytes);
  Result<TxEnvelope> back = DecodeEnvelope(*wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_TRUE(VerifyEnvelope(*back).ok());
}

TEST(TxEnvelopeTest, EncodeDecodeRoundTrip) {
  const TxEnvelope e = Signed(TestKey(3));
  Result<std::string> wire = EncodeEnvelope(e);
  ASSERT_TRUE(wire.ok());
  EXPECT_EQ(*wire, WireInOrder(e, {1, 2, 3, 4, 5, 6}));
  Result<TxEnvelope> back = DecodeEnvelope(*wire);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, e);
  EXPECT_TRUE(VerifyEnvelope(*back).ok());

  // Nonce 0 and an empty payload are omitted from the wire (proto3 defaults) and still round-trip.
  TxEnvelope zero = Unsigned();
  zero.nonce = 0;
  zero.payload.clear();
  Result<TxEnvelope> signed_zero = SignEnvelope(TestKey(3), zero);
  ASSERT_TRUE(signed_zero.ok());
  Result<std::string> zero_wire = EncodeEnvelope(*signed_zero);
  ASSERT_TRUE(zero_wire.ok());
  EXPECT_EQ(*zero_wire, WireInOrder(*signed_zero, {1, 3, 4, 6}));
  Result<TxEnvelope> zero_back = DecodeEnvelope(*zero_wire);
  ASSERT_TRUE(zero_back.ok());
  EXPECT_EQ(*zero_back, *signed_zero);

  // The largest nonce takes a 10-byte varint whose last byte carries one bit.
  TxEnvelope top = Unsigned();
  top.nonce = ~std::uint64_t{0};
  Result<TxEnvelope> signed_top = SignEnvelope(TestKey(3), top);
  ASSERT_TRUE(signed_top.ok());
  Result<std::string> top_wire = EncodeEnvelope(*signed_top);
  ASSERT_TRUE(top_wire.ok());
  Result<TxEnvelope> top_back = DecodeEnvelope(*top_wire);
  ASSERT_TRUE(top_back.ok()) << top_back.status().ToString();
  EXPECT_EQ(*top_back, *signed_top);
}

TEST(TxEnvelopeTest, DecodeRejectsWrongSizes) {
  const TxEnvelope e = Signed(TestKey(3));
  const std::string pubkey = AsString(e.signer_pubkey);
  const std::string sig = AsString(e.signature);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"pubkey 31 bytes", pubkey.substr(1)},
      {"pubkey 33 bytes", pubkey + "x"},
      {"pubkey missing", ""},
  };
  for (const auto& [name, bad_pubkey] : cases) {
    std::string wire;
    AppendBytesField(wire, 1, e.chain_id);
    AppendVarintField(wire, 2, e.nonce);
    if (!bad_pubkey.empty()) AppendBytesField(wire, 3, bad_pubkey);
    AppendBytesField(wire, 4, e.payload_type);
    AppendBytesField(wire, 5, e.payload);
    AppendBytesField(wire, 6, sig);
    EXPECT_EQ(DecodeEnvelope(wire).status().code(), StatusCode::kInvalidArgument) << name;
  }
  for (std::string bad_sig : {sig.substr(1), sig + "x", std::string()}) {
    std::string wire = WireInOrder(e, {1, 2, 3, 4, 5});
    if (!bad_sig.empty()) AppendBytesField(wire, 6, bad_sig);
    EXPECT_EQ(DecodeEnvelope(wire).status().code(), StatusCode::kInvalidArgument) << bad_sig.size();
  }
}

TEST(TxEnvelopeTest, DecodeAcceptsOnlyCanonicalBytes) {
  const TxEnvelope e = Signed(TestKey(3));
  const std::string canonical = WireInOrder(e, {1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(DecodeEnvelope(canonical).ok());

  // Fields out of order.
  EXPECT_EQ(DecodeEnvelope(WireInOrder(e, {2, 1, 3, 4, 5, 6})).status().code(), StatusCode::kCorruption);
  EXPECT_EQ(DecodeEnvelope(WireInOrder(e, {1, 2, 3, 4, 6, 5})).status().code(), StatusCode::kCorruption);
  // A field repeated (protobuf keeps the last; the bytes are not canonical).
  EXPECT_EQ(DecodeEnvelope(WireInOrder(e, {1, 1, 2, 3, 4, 5, 6})).status().code(), StatusCode::kCorruption);
  // A default value written out.
  TxEnvelope zero_nonce = e;
  zero_nonce.nonce = 0;
  EXPECT_EQ(DecodeEnvelope(WireInOrder(zero_nonce, {1, 2, 3, 4, 5, 6})).status().code(), StatusCode::kCorruption);
  // A varint in more bytes than needed: nonce 7 as 0x87 0x00.
  std::string long_varint;
  AppendBytesField(long_varint, 1, e.chain_id);
  long_varint += std::string("\x10\x87\x00", 3);
  long_varint += WireInOrder(e, {3, 4, 5, 6});
  EXPECT_EQ(DecodeEnvelope(long_varint).status().code(), StatusCode::kCorruption);
  // A length in more bytes than needed: the chain id's as 0x80 | n, 0x00.
  std::string long_length("\x0a", 1);
  long_length += static_cast<char>(0x80 | e.chain_id.size());
  long_length += std::string(1, '\0') + e.chain_id + WireInOrder(e, {2, 3, 4, 5, 6});
  EXPECT_EQ(DecodeEnvelope(long_length).status().code(), StatusCode::kCorruption);
  // An empty payload written out (proto3 omits it).
  TxEnvelope empty_payload = e;
  empty_payload.payload.clear();
  EXPECT_EQ(DecodeEnvelope(WireInOrder(empty_payload, {1, 2, 3, 4, 5, 6})).status().code(), StatusCode::kCorruption);
  // The nonce as a length-delimited field: protobuf keeps it as an unknown field.
  std::string nonce_as_bytes = WireInOrder(e, {1});
  AppendBytesField(nonce_as_bytes, 2, "\x07");
  nonce_as_bytes += WireInOrder(e, {3, 4, 5, 6});
  EXPECT_EQ(DecodeEnvelope(nonce_as_bytes).status().code(), StatusCode::kCorruption);
  // Unknown fields, at the end or in the middle.
  std::string unknown_end = canonical;
  AppendVarintField(unknown_end, 99, 1);
  EXPECT_EQ(DecodeEnvelope(unknown_end).status().code(), StatusCode::kCorruption);
  std::string unknown_middle = WireInOrder(e, {1, 2});
  AppendBytesField(unknown_middle, 7, "x");
  unknown_middle += WireInOrder(e, {3, 4, 5, 6});
  EXPECT_EQ(DecodeEnvelope(unknown_middle).status().code(), StatusCode::kCorruption);
}

TEST(TxEnvelopeTest, DecodeRejectsGarbageAndOversizedInput) {
  EXPECT_EQ(DecodeEnvelope(std::string("\xff\xff\xff", 3)).status().code(), StatusCode::kCorruption);
  // A length-delimited field whose length runs past the end.
  EXPECT_EQ(DecodeEnvelope(std::string("\x0a\x10polnode", 9)).status().code(), StatusCode::kCorruption);
  // Empty input parses as an all-default message, which breaks the field rules.
  EXPECT_EQ(DecodeEnvelope(std::string()).status().code(), StatusCode::kInvalidArgument);
  const std::string huge(kMaxEnvelopeBytes + 1, '\0');
  EXPECT_EQ(DecodeEnvelope(huge).status().code(), StatusCode::kResourceExhausted);
}

TEST(TxEnvelopeTest, EveryWireByteFlipIsRejectedOrBreaksTheSignature) {
  const TxEnvelope e = Signed(TestKey(3));
  const std::string wire = *EncodeEnvelope(e);
  for (std::size_t pos = 0; pos < wire.size(); ++pos) {
    for (unsigned char mask : {0x01, 0x80, 0xff}) {
      std::string mutated = wire;
      mutated[pos] = static_cast<char>(mutated[pos] ^ mask);
      Result<TxEnvelope> decoded = DecodeEnvelope(mutated);
      if (!decoded.ok()) continue;
      EXPECT_FALSE(VerifyEnvelope(*decoded).ok()) << "byte " << pos << " mask " << +mask;
    }
  }
}

}  // namespace
}  // namespace polnode::consensus
