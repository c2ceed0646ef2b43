#include <ostream>

#include "polnode/base/file_util.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/consensus/sha256.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/tx_json.h"

namespace polnode::node {

int RunSignCommand(const std::vector<std::string>& args, Io& io) {
  constexpr const char* kName = "polnode sign";
  FlagSet flags(kName,
                "Sign a transaction file with a key file (BIP-340 Schnorr) and write the signed "
                "envelope in its wire form (protobuf), ready for 'polnode verify' or POST /v1/tx.\n"
                "The transaction file is JSON: {\"chain_id\": \"...\", \"nonce\": N, \"payload_type\": "
                "\"...\", \"payload_hex\": \"...\"}.");
  flags.Value("key", "FILE", "key file from 'polnode keygen'", "", true);
  flags.Value("tx", "FILE", "unsigned transaction (JSON)", "", true);
  flags.Value("out", "FILE", "where to write the signed envelope", "", true);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;

  Result<consensus::SecretKey> key = consensus::ReadKeyFile(flags.Get("key"));
  if (!key.ok()) return ReportError(io, kName, key.status());
  Result<std::vector<std::uint8_t>> text = ReadWholeFile(flags.Get("tx"), consensus::kMaxEnvelopeBytes * 3);
  if (!text.ok()) return ReportError(io, kName, text.status());
  Result<consensus::TxEnvelope> tx =
      ParseUnsignedTxJson(std::string_view(reinterpret_cast<const char*>(text->data()), text->size()));
  if (!tx.ok()) return ReportError(io, kName, tx.status().WithContext(flags.Get("tx")));
  Result<consensus::TxEnvelope> signed_tx = consensus::SignEnvelope(*key, std::move(tx).value());
  if (!signed_tx.ok()) return ReportError(io, kName, signed_tx.status());
  Result<std::string> wire = consensus::EncodeEnvelope(*signed_tx);
  if (!wire.ok()) return ReportError(io, kName, wire.status());
  if (Status s = WriteFileAtomically(flags.Get("out"), *wire); !s.ok()) return ReportError(io, kName, s);

  std::string tx_id = consensus::ToHex(consensus::Sha256(*wire));
  std::string signer = consensus::ToHex(signed_tx->signer_pubkey);
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject().Field("tx_id", tx_id).Field("signer", signer).Field("out", flags.Get("out"))
        .Field("bytes", static_cast<std::uint64_t>(wire->size())).EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << "signed by " << signer << "\ntx id " << tx_id << "\nwrote " << flags.Get("out") << " ("
           << wire->size() << " bytes)\n";
  }
  return kExitOk;
}

}  // namespace polnode::node
