// `polnode ledger`: runs the embedded ledger (block producer + HTTP API) of a node home, and
// `polnode ledger verify-chain`: re-executes a stored chain from genesis and checks it.

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <ostream>

#include "flag_groups.h"
#include "polnode/base/clock.h"
#include "polnode/base/dir_lock.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/ledger/block_producer.h"
#include "polnode/ledger/chain_verifier.h"
#include "polnode/ledger/ledger.h"
#include "polnode/roles/role_runtime.h"
#include "polnode/roles/stop_signals.h"
#include "polnode/rpc/http_server.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_api.h"
#include "polnode/rpc/node_home.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode ledger";
constexpr std::string_view kVerifyCommand = "polnode ledger verify-chain";

LedgerOptions LedgerOptionsFor(const NodeHome& home) {
  LedgerOptions o;
  o.data_dir = home.DataDir();
  o.sync_writes = home.config.sync_writes;
  o.max_txs_per_block = static_cast<std::size_t>(home.config.max_txs_per_block);
  o.max_tx_bytes = static_cast<std::size_t>(home.config.max_tx_bytes);
  o.mempool_max_txs = static_cast<std::size_t>(home.config.mempool_max_txs);
  return o;
}

// Logs production on `log`: every block with transactions, every 100th empty one, and every failure.
void LogBlock(EventLog& log, const Result<ProducedBlock>& produced) {
  if (!produced.ok()) {
    log.Event("block_failed", {{"error", produced.status().ToString()}});
    return;
  }
  if (produced->tx_count == 0 && produced->height % 100 != 0) return;
  log.Event("block", {{"height", std::to_string(produced->height)},
                      {"hash", consensus::ToHex(produced->hash)},
                      {"txs", std::to_string(produced->tx_count)},
                      {"failed", std::to_string(produced->failed_txs)},
                      {"ms", std::to_string(produced->elapsed_us / 1000)}});
}

// The test-only endpoint of --manual-blocks.
constexpr std::string_view kProduceBlockPath = "/v1/test/produce-block";
constexpr int kMaxBlocksPerRequest = 10'000;

// POST /v1/test/produce-block[?count=N]: makes N (default 1) blocks now, one after another, each
// `interval` later on `clock` than the one before, and answers {"height": the new tip, "txs": the
// transactions they hold}. 400 for a bad count, 500 (and no further block) when production fails.
HttpResponse ProduceBlocksNow(const HttpRequest& request, Ledger& ledger, ManualClock& clock,
                              std::chrono::milliseconds interval, EventLog& log) {
  if (request.method != "POST") {
    HttpResponse r = JsonErrorResponse(405, std::string(kProduceBlockPath) + " takes POST");
    r.allow = "POST";
    return r;
  }
  int count = 1;
  if (const std::size_t q = request.target.find('?'); q != std::string::npos) {
    const std::string query = request.target.substr(q + 1);
    char* end = nullptr;
    const long n = query.rfind("count=", 0) == 0 ? std::strtol(query.c_str() + 6, &end, 10) : 0;
    if (end == nullptr || *end != '\0' || n < 1 || n > kMaxBlocksPerRequest) {
      return JsonErrorResponse(400, "the query must be count=N with N in 1.." + std::to_string(kMaxBlocksPerRequest));
    }
    count = static_cast<int>(n);
  }
  std::size_t txs = 0;
  for (int i = 0; i < count; ++i) {
    clock.Advance(interval);
    Result<ProducedBlock> produced = ledger.ProduceBlock(clock.UnixMillis());
    LogBlock(log, produced);
    if (!produced.ok()) return JsonErrorResponse(500, produced.status().ToString());
    txs += produced->tx_count;
  }
  JsonWriter w;
  w.BeginObject().Field("height", ledger.GetStatus().height).Field("txs", static_cast<std::uint64_t>(txs)).EndObject();
  HttpResponse r;
  r.body = w.str();
  return r;
}

Status Serve(const FlagSet& flags, Io& io) {
  StopSignals stop;  // before RocksDB, the server and the producer start their threads

  POLNODE_ASSIGN_OR_RETURN(NodeHome home, LoadNodeHome(flags.Get("home")));
  // Before the chain store opens, so a second ledger on this home is told so, not RocksDB's lock error.
  POLNODE_ASSIGN_OR_RETURN(DirLock home_lock, DirLock::Acquire(flags.Get("home"), "ledger home"));
  if (flags.Given("listen")) home.config.listen = flags.Get("listen");
  if (flags.Given("block-interval-ms")) {
    POLNODE_ASSIGN_OR_RETURN(home.config.block_interval_ms, flags.GetInt("block-interval-ms", 1, 3600 * 1000));
  }
  POLNODE_ASSIGN_OR_RETURN(auto host_port, SplitHostPort(home.config.listen));
  POLNODE_ASSIGN_OR_RETURN(LogFormat log_format, ReadLogFormatFlag(flags));
  // Events go to stderr: stdout holds only the startup line, which scripts and tests read.
  EventLog log("ledger", SystemClock(), &std::cerr);
  log.set_format(log_format);
  POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey key, consensus::ReadKeyFile(home.KeyPath()));
  POLNODE_ASSIGN_OR_RETURN(std::unique_ptr<Ledger> ledger, Ledger::Open(LedgerOptionsFor(home), home.genesis, key));

  const bool manual_blocks = flags.GetBool("manual-blocks");
  const std::chrono::milliseconds interval(home.config.block_interval_ms);
  // With --manual-blocks the blocks' times come from a clock that moves one interval per block a
  // test asks for, starting at the real time: block times stay as far apart as the config says.
  ManualClock block_clock(SystemClock().UnixMillis());

  LedgerApi api(*ledger);
  HttpServerOptions server_options;
  server_options.host = host_port.first;
  server_options.port = host_port.second;
  server_options.threads = static_cast<int>(home.config.http_threads);
  server_options.limits.max_body_bytes = static_cast<std::size_t>(home.config.max_body_bytes);
  server_options.limits.read_timeout = std::chrono::milliseconds(home.config.read_timeout_ms);
  POLNODE_ASSIGN_OR_RETURN(
      std::unique_ptr<HttpServer> server,
      HttpServer::Start(
          server_options,
          [&](const HttpRequest& r) {
            const std::string_view path = std::string_view(r.target).substr(0, r.target.find('?'));
            if (manual_blocks && path == kProduceBlockPath) return ProduceBlocksNow(r, *ledger, block_clock, interval, log);
            return api.Handle(r);
          },
          [&api](int status) { api.CountResponse(status); }));
  BlockProducer producer(*ledger, SystemClock(), interval,
                         [&log](const Result<ProducedBlock>& produced) { LogBlock(log, produced); });
  if (!manual_blocks) producer.Start();

  const LedgerStatus status = ledger->GetStatus();
  if (flags.json() || log_format == LogFormat::kJson) {
    JsonWriter w;
    w.BeginObject();
    if (log_format == LogFormat::kJson) {
      w.Field("time", Iso8601Utc(SystemClock().UnixMillis())).Field("role", "ledger").Field("event", "started");
    }
    w.Field("chain_id", status.chain_id)
        .Field("height", status.height)
        .Field("listen", host_port.first + ":" + std::to_string(server->port()))
        .Field("producer", consensus::ToHex(status.producer))
        .Field("manual_blocks", manual_blocks)
        .EndObject();
    io.out << w.str() << std::endl;
  } else {
    io.out << "polnode ledger: chain " << status.chain_id << " at height " << status.height << ", API on http://"
           << host_port.first << ":" << server->port()
           << (manual_blocks ? std::string(" (blocks only on POST ") + std::string(kProduceBlockPath) + ")"
                             : " (block every " + std::to_string(home.config.block_interval_ms) + " ms)")
           << std::endl;
  }

  const int signal_number = stop.Wait();
  log.Event("stopping", {{"signal", std::to_string(signal_number)}});
  server->Stop();
  producer.Stop();
  return Status::Ok();
}

Status VerifyChainCommand(const FlagSet& flags, Io& io) {
  POLNODE_ASSIGN_OR_RETURN(NodeHome home, LoadNodeHome(flags.Get("home")));
  // Read-only: verification works while the ledger is running and can never change the chain.
  POLNODE_ASSIGN_OR_RETURN(std::unique_ptr<consensus::ChainStore> stored,
                           consensus::ChainStore::Open(home.DataDir(), consensus::ChainStoreOptions{.read_only = true}));
  std::string scratch_template = (std::filesystem::temp_directory_path() / "polnode-verify-XXXXXX").string();
  if (mkdtemp(scratch_template.data()) == nullptr) return Status::IOError("cannot create a scratch directory in /tmp");
  const std::string scratch_dir = scratch_template + "/store";
  const Clock::TimePoint started = SystemClock().Now();
  Result<ChainReport> report = VerifyChain(*stored, home.genesis, scratch_dir);
  const double seconds = std::chrono::duration<double>(SystemClock().Now() - started).count();
  std::error_code ignored;
  std::filesystem::remove_all(scratch_template, ignored);
  if (!report.ok()) return report.status().WithContext("chain verification failed");
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject()
        .Field("ok", true)
        .Field("blocks", report->blocks)
        .Field("transactions", report->transactions)
        .Field("tip_hash", consensus::ToHex(report->tip_hash))
        .Field("state_root", consensus::ToHex(report->state_root))
        .Field("seconds", seconds)
        .EndObject();
    io.out << w.str() << "\n";
  } else {
    io.out << "chain ok: " << report->blocks << " blocks (heights 0.." << report->blocks - 1 << "), "
           << report->transactions << " transactions re-executed, every signature, tx root, prev hash and state root "
           << "checked\n  tip " << consensus::ToHex(report->tip_hash) << "\n  state root "
           << consensus::ToHex(report->state_root) << "\n";
  }
  return Status::Ok();
}

int RunVerifyChain(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kVerifyCommand),
                "Re-execute the node's chain from genesis.json in a scratch store and check every block: "
                "prev hash, tx root, producer signature, transaction signatures and the state root after "
                "execution. Exit code 1 names the first bad block.");
  DeclareNodeHomeFlag(flags, true);
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = VerifyChainCommand(flags, io); !s.ok()) return ReportError(io, kVerifyCommand, s);
  return kExitOk;
}

}  // namespace

int RunLedgerCommand(const std::vector<std::string>& args, Io& io) {
  if (!args.empty() && args[0] == "verify-chain") return RunVerifyChain({args.begin() + 1, args.end()}, io);
  FlagSet flags(std::string(kCommand),
                "Run the embedded ledger of a node home: produce a block every interval and serve the HTTP API "
                "(POST /v1/tx, GET /v1/status, /v1/blocks/{height}, /v1/txs/{id}, /v1/accounts/{pubkey}, "
                "/v1/tasks, /v1/tasks/{id}, /metrics). Stops cleanly on SIGINT/SIGTERM; after a crash it "
                "resumes at its last whole block. Subcommand: 'polnode ledger verify-chain --home DIR'.");
  DeclareNodeHomeFlag(flags, true);
  flags.Value("listen", "HOST:PORT", "override config.toml's ledger.listen");
  flags.Value("block-interval-ms", "N", "override config.toml's ledger.block_interval_ms");
  DeclareLogFormatFlag(flags);
  flags.Bool("manual-blocks",
             "for tests: make no block on a timer; each POST /v1/test/produce-block?count=N (N defaults to 1) "
             "makes N blocks at once, their times one interval apart. End-to-end tests drive block production "
             "with it instead of racing a timer; a production ledger never sets it");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Serve(flags, io); !s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
