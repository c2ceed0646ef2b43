// `polnode devnet`: the whole protocol on one machine, as real processes over loopback HTTP. It
// creates a chain whose genesis funds every role, starts the ledger, two solvers (one honest, one
// that cheats at one operator of one step), two verifiers (one honest, one lazy that accepts
// without replaying), a whistleblower and a submitter with Fashion-MNIST tasks, waits until every
// task is settled and the submitter has fetched the accepted models, audits every dispute game
// (contracts/dispute_audit.h) and reports outcomes, accuracies, disputes with their pinpointed
// operator, balance changes, where time went and where the logs are. The devnet makes the blocks
// (its ledger runs with --manual-blocks), each once every role has caught up with the last, so
// the outcomes do not depend on how fast the machine is.
#ifndef POLNODE_DEVNET_DEVNET_H_
#define POLNODE_DEVNET_DEVNET_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "polnode/base/clock.h"
#include "polnode/base/status.h"

namespace polnode::node {

struct DevnetOptions {
  std::string home;  // created; must not hold a previous devnet
  int tasks = 2;
  std::string model = "mlp:784-64-10";
  std::string data = "fashion-mnist";
  std::int64_t steps = 300;
  std::int64_t checkpoint_interval = 50;
  std::int64_t batch = 64;
  std::int64_t segments = 2;
  /// The cheating solver's tamper ("step=S,node=N|NAME"); empty: the first weight matrix's
  /// optimizer update (a change that lives on in the state) in the middle of the final segment,
  /// which every verifier replays, so the cheat is always caught.
  std::string cheat;
  std::uint64_t forced_error_rate = 0;
  /// The least time between blocks. The devnet makes each block itself, once every role has
  /// caught up with the last one (devnet.cc PaceBlocks), so blocks may come further apart.
  std::int64_t block_interval_ms = 100;
  std::uint64_t payment = 100'000;
  std::chrono::seconds timeout{900};
  /// Kill (SIGKILL) the honest solver while it trains and the honest verifier while it verifies,
  /// restart both, and still reach settlement.
  bool restart_roles = false;
  /// When > 0: once a task is being verified, kill (SIGKILL) the ledger, keep it down this long and
  /// start it again on the same address; every role must ride the outage out.
  std::chrono::seconds ledger_outage{0};
  /// 0: every process serves on a free port the system picks. Else the ledger serves on
  /// 127.0.0.1:base_port and the six role daemons on the next six ports, in the order solver-honest,
  /// solver-cheat, verifier-honest, verifier-lazy, whistleblower, submitter (for firewalls and
  /// dashboards that need fixed addresses).
  std::uint16_t base_port = 0;
  /// > 0: no embedded ledger; instead this many CometBFT validators (validator_network.h), each with
  /// its own `polnode abci --http` application, on loopback. The roles are spread over the
  /// validators' HTTP APIs (role i uses validator i mod N). CometBFT makes the blocks on its own
  /// timer, so the windows are wider in blocks (ValidatorWindows) instead of the blocks paced.
  int validators = 0;
  /// With validators: once a task is in flight, SIGKILL the last validator (CometBFT node and
  /// application), keep it down while the others make kKilledValidatorBlocks blocks, restart it
  /// and time its catch-up.
  bool kill_validator = false;
  /// The CometBFT binary (the version scripts/install-deps.sh pins).
  std::string cometbft = "/opt/polnode-cometbft/v0.38.26/bin/cometbft";
  /// Bring your own model and data (issue 13): the tasks name an ONNX file (the image model's
  /// seed-initialised weights, exported by polnode) as "onnx:<sha256>" and a copy of the data set
  /// in the submitter's own directory, and the submitter serves both (--serve-files), so every
  /// other role fetches them over HTTP, checked by hash, instead of reading a built-in location.
  bool own_model_and_data = false;
};

struct DevnetGame {
  std::string challenger, defender, winner;  // role names
  std::string challenger_kind;               // "verifier" (a disputed reject) or "whistleblower"
  std::string result;                        // contracts.proto GameResult name
  std::string phase, ruling;
  std::uint64_t moves = 0, segment = 0, step = 0, leaf = 0;
  std::string leaf_kind, node_name, node_op;  // the pinpointed operator, if the referee ran one
  std::string onnx_origin;  // --own-model-and-data: where node_name comes from in the ONNX file
  bool by_referee = false;
  bool audit_matches = false;
};

struct DevnetTask {
  std::string id_hex, solver, status, outcome;
  double accuracy = -1;  // of the delivered model; < 0 when none was delivered
  std::vector<DevnetGame> games;
  std::map<std::string, double> seconds_in_status;  // TASK_CLAIMED etc. -> wall seconds
};

struct DevnetAccount {
  std::string name, pubkey_hex;
  std::int64_t genesis = 0, balance = 0, staked = 0;  // staked: bonded + unbonding at the end
  std::int64_t change() const { return balance + staked - genesis; }
};

struct DevnetReport {
  std::string home, ledger_url;
  std::vector<DevnetTask> tasks;
  std::vector<DevnetAccount> accounts;
  std::map<std::string, std::string> logs;  // role name -> log file
  double wall_seconds = 0;
  double training_seconds = 0;   // solvers' training time (their metrics)
  double verifying_seconds = 0;  // verifiers' and the whistleblower's replay time (their metrics)
  double disputing_seconds = 0;  // wall time tasks spent with a dispute game running
  double ledger_down_seconds = 0;  // with a ledger outage: from the kill until it served again
  bool all_settled = false;
  bool audits_match = false;
  // With validators: their APIs, where they agree at the end, and the killed one's outage.
  std::vector<std::string> validator_urls;
  std::vector<std::string> validator_homes;  // node homes over each validator's store (dispute replay --home)
  bool validators_agree = false;
  std::uint64_t agreed_height = 0;
  std::string agreed_state_root;           // hex: every validator's state root (app hash) at agreed_height
  std::string validators_difference;       // what differed, when !validators_agree
  std::uint64_t validator_killed_at = 0;   // the network's height when the validator was killed
  std::uint64_t validator_missed_blocks = 0;  // blocks the others made while it was down
  double validator_catch_up_seconds = 0;   // from its restart until it had every block made meanwhile
};

/// Runs the devnet to the end (or options.timeout) and returns its report. `progress` receives one
/// line per phase (for the terminal). Errors: set-up failures (home, data, processes) and timeouts,
/// with the log directory named. `clock` times the devnet's waits and paces its blocks.
[[nodiscard]] Result<DevnetReport> RunDevnet(const DevnetOptions& options, std::ostream& progress,
                                             Clock& clock = SystemClock());

}  // namespace polnode::node

#endif  // POLNODE_DEVNET_DEVNET_H_
