#include <ostream>

#include "commands.h"
#include "file_util.h"
#include "json.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256.h"
#include "polnode/consensus/tx_envelope.h"
#include "tx_json.h"

namespace polnode::node {
namespace {

constexpr const char* kName = "polnode verify";

// Exit 0: valid; 1: the file is not a validly signed envelope; 2: it could not be read at all.
int VerifyTxFile(const FlagSet& flags, Io& io) {
  Result<std::string> wire = ReadFile(flags.Get("tx"), consensus::kMaxEnvelopeBytes);
  if (!wire.ok()) return ReportError(io, kName, wire.status()), kExitUsage;
  std::string tx_id = consensus::HashToHex(consensus::Sha256(*wire));
  Result<consensus::TxEnvelope> tx = consensus::DecodeEnvelope(*wire);
  Status verdict = tx.ok() ? consensus::VerifyEnvelope(*tx) : tx.status();
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject().Field("valid", verdict.ok()).Field("tx_id", tx_id);
    if (!verdict.ok()) w.Field("reason", verdict.ToString());
    if (tx.ok()) WriteTxFields(w, *tx);
    w.EndObject();
    io.out << w.str() << "\n";
  } else if (verdict.ok()) {
    io.out << "valid signature by " << consensus::BytesToHex(tx->signer_pubkey) << "\n"
           << "tx id " << tx_id << ", chain " << tx->chain_id << ", nonce " << tx->nonce << ", "
           << tx->payload_type << " payload of " << tx->payload.size() << " bytes\n";
  }
  if (!verdict.ok()) {
    io.err << kName << ": " << flags.Get("tx") << " is not a validly signed transaction: " << verdict.ToString() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int RunVerifyCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(kName,
                "Check a signed transaction envelope (from 'polnode sign'): decode it strictly and "
                "verify its BIP-340 signature. Exit code 0: valid; 1: invalid; 2: unreadable.");
  flags.Value("tx", "FILE", "signed envelope (protobuf wire form)", "", true);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  return VerifyTxFile(flags, io);
}

}  // namespace polnode::node
