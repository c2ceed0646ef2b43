// `polnode abci`: runs polnode as a CometBFT ABCI 2.0 application (node/ledger/abci_app.h): CometBFT
// orders the blocks, polnode's contracts execute them. One application serves one CometBFT node
// (its `proxy_app` address). With --http it also serves polnode's HTTP API (rpc/ledger_api.h) from
// the application's committed state, forwarding transaction posts to the local CometBFT's RPC, so
// the role daemons run against a validator exactly as against `polnode ledger`.

#include <filesystem>
#include <iostream>
#include <ostream>

#include "polnode/base/dir_lock.h"
#include "polnode/cli/commands.h"
#include "polnode/consensus/hex.h"
#include "polnode/consensus/key_file.h"
#include "polnode/rpc/abci_genesis.h"
#include "polnode/ledger/abci_app.h"
#include "polnode/ledger/abci_server.h"
#include "polnode/roles/stop_signals.h"
#include "polnode/ledger/node_config.h"
#include "polnode/rpc/http_client.h"
#include "polnode/rpc/http_server.h"
#include "polnode/rpc/json.h"
#include "polnode/rpc/ledger_api.h"
#include "polnode/rpc/ledger_api_backend.h"

namespace polnode::node {
namespace {

constexpr std::string_view kCommand = "polnode abci";

Status Serve(const FlagSet& flags, Io& io) {
  StopSignals stop;  // before RocksDB and the server start their threads
  const std::string home = flags.Get("home");
  std::error_code ec;
  std::filesystem::create_directories(home, ec);
  if (ec) return Status::IOError("cannot create " + home + ": " + ec.message());
  // Before the store opens, so a second application on this home is told so, not RocksDB's lock error.
  POLNODE_ASSIGN_OR_RETURN(DirLock home_lock, DirLock::Acquire(home, "ABCI application home"));
  AbciAppOptions options;
  options.data_dir = (std::filesystem::path(home) / "data").string();
  // The validator's VRF key for the beacon (abci_beacon.h), made on first start; its public key
  // (the startup line's vrf_pubkey) goes into the genesis beacon_keys under this validator's address.
  const std::string vrf_path = (std::filesystem::path(home) / "vrf.key").string();
  Result<consensus::SecretKey> vrf_key = consensus::ReadKeyFile(vrf_path);
  if (vrf_key.status().code() == StatusCode::kNotFound) {
    POLNODE_ASSIGN_OR_RETURN(consensus::SecretKey fresh, consensus::SecretKey::Generate());
    POLNODE_RETURN_IF_ERROR(consensus::WriteKeyFile(vrf_path, fresh));
    vrf_key = std::move(fresh);
  }
  if (!vrf_key.ok()) return vrf_key.status().WithContext(vrf_path);
  options.vrf_key = *vrf_key;
  const std::string vrf_pubkey = consensus::ToHex(vrf_key->PublicKey().bytes());
  POLNODE_ASSIGN_OR_RETURN(std::unique_ptr<AbciApp> app, AbciApp::Open(options, ParseAbciGenesisJson));
  POLNODE_ASSIGN_OR_RETURN(std::unique_ptr<AbciServer> server,
                           AbciServer::Start(flags.Get("listen"), [&app](const abci::Request& r) { return app->Handle(r); }));
  // The HTTP API, when asked for: its reads never wait on CometBFT, and a post holds no lock of the
  // application while CometBFT runs CheckTx on it over the mempool connection.
  std::unique_ptr<AbciLedgerBackend> backend;
  std::unique_ptr<LedgerApi> api;
  std::unique_ptr<HttpServer> http;
  if (flags.Given("http")) {
    POLNODE_ASSIGN_OR_RETURN(auto host_port, SplitHostPort(flags.Get("http")));
    POLNODE_ASSIGN_OR_RETURN(HttpEndpoint comet_rpc, ParseHttpUrl(flags.Get("comet-rpc")));
    backend = std::make_unique<AbciLedgerBackend>(*app, std::move(comet_rpc));
    api = std::make_unique<LedgerApi>(*backend);
    HttpServerOptions http_options;
    http_options.host = host_port.first;
    http_options.port = host_port.second;
    http_options.threads = 4;
    LedgerApi& routes = *api;
    POLNODE_ASSIGN_OR_RETURN(http, HttpServer::Start(
                                       http_options, [&routes](const HttpRequest& r) { return routes.Handle(r); },
                                       [&routes](int status) { routes.CountResponse(status); }));
  }
  if (flags.json()) {
    JsonWriter w;
    w.BeginObject()
        .Field("height", app->height())
        .Field("app_hash", consensus::ToHex(app->state_root()))
        .Field("vrf_pubkey", vrf_pubkey)
        .Field("port", static_cast<std::uint64_t>(server->port()));
    if (http) w.Field("http_port", static_cast<std::uint64_t>(http->port()));
    w.EndObject();
    io.out << w.str() << std::endl;
  } else {
    io.out << "polnode abci: at height " << app->height() << ", listening on " << flags.Get("listen")
           << " (port " << server->port() << "), VRF public key " << vrf_pubkey;
    if (http) io.out << ", HTTP API on port " << http->port();
    io.out << std::endl;
  }
  const int signal_number = stop.Wait();
  std::cerr << "polnode abci: stopping on signal " << signal_number << std::endl;
  if (http) http->Stop();
  server->Stop();
  return Status::Ok();
}

}  // namespace

int RunAbciCommand(const std::vector<std::string>& args, Io& io) {
  FlagSet flags(std::string(kCommand),
                "Run polnode as a CometBFT ABCI 2.0 application (CometBFT v0.38): CometBFT connects to --listen "
                "(its proxy_app), orders the transactions and polnode's contracts execute every block; genesis "
                "accounts and params come from the app_state of CometBFT's genesis.json (polnode's genesis.json "
                "format plus \"beacon_keys\": [{\"address\": CometBFT validator address, \"vrf_pubkey\": hex}, ...] for "
                "every validator, and consensus_params.abci.vote_extensions_enable_height must be 1: each block's "
                "randomness comes from the validators' VRFs through vote extensions). The VRF key is DIR/vrf.key, "
                "made on first start; the startup line shows its public key. Reads: CometBFT's abci_query with the ledger API's paths (/v1/accounts/{pubkey}, "
                "/v1/tasks/{id}, /v1/params, /v1/jackpot), answered as protobuf records; with --http also polnode's "
                "HTTP API (the routes of `polnode ledger`), which the role daemons use unchanged: reads from the "
                "committed state, POST /v1/tx forwarded to --comet-rpc's broadcast_tx_sync. Stops cleanly on "
                "SIGINT/SIGTERM; after a crash CometBFT replays the blocks it is missing.");
  flags.Value("home", "DIR", "the application's directory; its RocksDB store is DIR/data (created if missing)", "", true);
  flags.Value("listen", "ADDR", "tcp://IPV4:PORT or unix:///PATH (CometBFT's proxy_app)", "tcp://127.0.0.1:26658");
  flags.Value("http", "HOST:PORT", "also serve polnode's HTTP API here (port 0: any free port, reported in the startup line)", "");
  flags.Value("comet-rpc", "URL", "the local CometBFT node's RPC, where --http forwards transaction posts",
              "http://127.0.0.1:26657");
  if (auto exit = ParseOrExit(flags, args, io)) return *exit;
  if (Status s = Serve(flags, io); !s.ok()) return ReportError(io, kCommand, s);
  return kExitOk;
}

}  // namespace polnode::node
