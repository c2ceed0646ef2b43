#include <array>
#include <cstdint>
#include <optional>
#include <ostream>

#include "flag_groups.h"
#include "polnode/base/file_util.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/sha256.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/kernels/backend.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/replay_json.h"
#include "polnode/rpc/tx_json.h"
#include "polnode/solver/pol_files.h"
#include "polnode/verifier/replay.h"

namespace polnode::node {
namespace {

constexpr const char* kName = "polnode verify";

// Exit 0: valid; 1: the file is not a validly signed envelope; 2: it could not be read at all.
int VerifyTxFile(const FlagSet& flags, Io& io) {
  Result<std::vector<std::uint8_t>> wire = ReadWholeFile(flags.Get("tx"), consensus::kMaxEnvelopeBytes);
  if (!wire.ok()) return ReportError(io, kName, wire.status()), kExitUsage;
  std::string tx_id = consensus::ToHex(consensus::Sha256(*wire));
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
    io.out << "valid signature by " << consensus::ToHex(tx->signer_pubkey) << "\n"
           << "tx id " << tx_id << ", chain " << tx->chain_id << ", nonce " << tx->nonce << ", "
           << tx->payload_type << " payload of " << tx->payload.size() << " bytes\n";
  }
  if (!verdict.ok()) {
    io.err << kName << ": " << flags.Get("tx") << " is not a validly signed transaction: " << verdict.ToString() << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

void WriteVerdictJson(std::ostream& out, const verifier::Verdict& v, const solver::ProofManifest& m,
                      const std::string& task_source) {
  JsonWriter w;
  w.BeginObject()
      .Field("accept", v.accept)
      .Field("reason", v.reason)
      .Field("document_hash", consensus::ToHex(m.task_id))
      .Field("task_source", task_source)
      .Field("merkle_root", consensus::ToHex(m.merkle_root))
      .Field("signed", v.is_signed)
      // Who signed it: without --solver-pubkey any valid signature passes, so the caller compares
      // this with the solver the ledger names.
      .Field("signer", m.is_signed ? consensus::ToHex(m.solver_pubkey) : std::string())
      .Field("manifest_ok", v.manifest_ok)
      .Field("initial_state_ok", v.initial_state_ok)
      .Field("drawn_segments", v.drawn)
      .Field("final_segment_ok", v.final_segment_ok)
      .Key("segments")
      .BeginArray();
  for (const verifier::SegmentEvidence& e : v.segments) WriteSegmentEvidence(w, e);
  w.EndArray().EndObject();
  out << w.str() << "\n";
}

// Exit 0: accepted; 1: rejected (the verdict says why); 2: the proof, task or data could not be
// read, or the flags are wrong.
int VerifyProofDir(const FlagSet& flags, Io& io) {
  const std::string dir = flags.Get("proof");
  Result<consensus::Hash256> beacon = consensus::HashFromHex(flags.Get("beacon"));
  if (!beacon.ok()) return ReportError(io, kName, beacon.status().WithContext("--beacon")), kExitUsage;
  // Without --segments the verifier replays the task's own Q (VerifyProof never replays fewer).
  Result<std::int64_t> q = flags.Given("segments") ? flags.GetInt("segments", 1, 1 << 20) : Result<std::int64_t>(1);
  if (!q.ok()) return ReportError(io, kName, q.status()), kExitUsage;
  std::optional<std::array<std::uint8_t, 32>> solver_pubkey;
  if (flags.Given("solver-pubkey")) {
    std::array<std::uint8_t, 32> key{};
    if (Status s = consensus::HexToFixed(flags.Get("solver-pubkey"), key); !s.ok()) {
      return ReportError(io, kName, s.WithContext("--solver-pubkey (64 hex characters)")), kExitUsage;
    }
    solver_pubkey = key;
  }
  Result<BackendChoice> backend = ReadBackendFlags(flags);
  if (!backend.ok()) return ReportError(io, kName, backend.status()), kExitUsage;
  // Without --task the proof's own copy is used: the verdict then shows its document hash, which the
  // caller must compare with the one committed on the ledger.
  const std::string task_path = flags.Given("task") ? flags.Get("task") : dir + "/task.pb";
  Result<solver::TaskSpec> task = solver::ReadTaskFile(task_path);
  if (!task.ok()) return ReportError(io, kName, task.status()), kExitUsage;
  Result<solver::ProofDir> proof = solver::OpenProofDir(dir);
  if (!proof.ok()) return ReportError(io, kName, proof.status()), kExitUsage;
  Result<solver::ImageDataset> data = solver::LoadTaskData(*task);
  if (!data.ok()) return ReportError(io, kName, data.status()), kExitUsage;
  verifier::VerifyOptions options;
  options.beacon = *beacon;
  options.segments = *q;
  options.solver_pubkey = solver_pubkey;
  Result<verifier::Verdict> verdict =
      verifier::VerifyProof(*task, *data, proof->manifest, proof->store, *backend->backend, options);
  if (!verdict.ok()) return ReportError(io, kName, verdict.status()), kExitUsage;
  WriteVerdictJson(io.out, *verdict, proof->manifest, task_path);
  if (!verdict->accept) {
    io.err << kName << ": proof " << dir << " rejected: " << verdict->reason << "\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int RunVerifyCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(kName,
                "Check a signed transaction envelope (--tx, from 'polnode sign'): decode it strictly "
                "and verify its BIP-340 signature; or check a proof of learning (--proof, from "
                "'polnode prove'): manifest and solver signature, initial state, and Q segments drawn from --beacon "
                "replayed, printing the verdict as JSON; the proof is held to --task, by default the proof's own "
                "DIR/task.pb. Exit code 0: valid/accepted; 1: "
                "invalid/rejected; 2: unreadable input or bad flags.");
  flags.Value("tx", "FILE", "signed envelope (protobuf wire form)");
  DeclareProofDirFlag(flags, false);
  flags.Value("beacon", "HEX", "32-byte randomness (64 hex) that draws the segments (with --proof)");
  flags.Value("segments", "Q",
              "segments to replay (with --proof); never fewer than the task's segments_per_check, "
              "which is the default");
  flags.Value("solver-pubkey", "HEX",
              "x-only solver public key (64 hex) the proof must be signed by (with --proof); "
              "without it any valid signature is accepted, but unsigned proofs never are");
  DeclareTaskFileFlag(flags, false);
  DeclareBackendFlags(flags);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (flags.Given("tx") == flags.Given("proof")) {
    io.err << kName << ": error: give exactly one of --tx FILE or --proof DIR\n";
    return kExitUsage;
  }
  if (flags.Given("tx")) return VerifyTxFile(flags, io);
  if (!flags.Given("beacon")) {
    io.err << kName << ": error: --proof needs --beacon HEX\n";
    return kExitUsage;
  }
  return VerifyProofDir(flags, io);
}

}  // namespace polnode::node
