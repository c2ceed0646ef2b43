// The validator network of `polnode devnet --validators N`: N CometBFT nodes made by `cometbft
// testnet`, each driving its own `polnode abci` application, which also serves polnode's HTTP API
// (`--http`) for the role daemons. Everything listens on 127.0.0.1, on ports picked free when the
// network is made and kept across a restart (the roles were given the API addresses). CometBFT
// makes blocks on its own timer (empty blocks on), so the chain's deadlines advance with real time:
// the devnet widens its windows in blocks instead of pacing the blocks (see ValidatorWindows).
#ifndef POLNODE_DEVNET_VALIDATOR_NETWORK_H_
#define POLNODE_DEVNET_VALIDATOR_NETWORK_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polnode/devnet/child_process.h"
#include "polnode/base/clock.h"
#include "polnode/base/status.h"
#include "polnode/contracts.pb.h"

namespace polnode::node {

struct ValidatorNetworkOptions {
  std::string dir;        // created: dir/net (CometBFT homes), dir/app<i> (application homes)
  std::string log_dir;    // validator<i>-app.log, validator<i>-cometbft.log
  std::string polnode;    // the polnode binary
  std::string cometbft;   // the CometBFT binary (the version scripts/install-deps.sh pins)
  int validators = 4;
  std::string chain_id;
  std::string genesis_json;  // polnode's genesis.json text: CometBFT's app_state
  /// A node home (node_home.h) of this chain: its genesis.json and config.toml are copied into
  /// every application home, whose store is that home's data directory, so the commands that read
  /// a node home (`polnode dispute replay --home`) read a validator's chain.
  std::string node_home;
  /// CometBFT's timeout_commit: the pause after each block (the devnet's default leaves the roles'
  /// polls time to see each block; a benchmark may go faster).
  std::string timeout_commit = "500ms";
  /// CometBFT's timeout_propose: how long a round whose proposer is down (a killed validator)
  /// waits before the next proposer's round.
  std::string timeout_propose = "1s";
  /// CometBFT's timeout_prevote and timeout_precommit: a round without a proposal (its proposer
  /// down) waits them out after nil votes before the next round.
  std::string timeout_vote = "1s";
};

/// Where the validators agree after a run.
struct ValidatorAgreement {
  std::uint64_t height = 0;           // a height every validator has committed
  std::string state_root_hex;         // their common state root (app hash) at that height
  std::vector<std::uint64_t> tips;    // each validator's height when compared
  bool agree = false;                 // same state root at `height` and the same task outcomes
  std::string difference;             // what differed, when !agree
};

class ValidatorNetwork {
 public:
  /// Runs `cometbft testnet` and configures every node (ports, peers, fast timeouts, app_state);
  /// makes the application homes.
  /// kUnavailable when the CometBFT binary is missing; kIOError/kCorruption when its generated files
  /// do not have the expected shape.
  [[nodiscard]] static Result<std::unique_ptr<ValidatorNetwork>> Create(const ValidatorNetworkOptions& options, Clock& clock);
  ~ValidatorNetwork() { StopAll(); }

  /// Starts every application, then every CometBFT node, and waits (up to 120 s) until every
  /// validator's API reports block 1.
  [[nodiscard]] Status Start();

  /// polnode's HTTP API of validator `i` ("http://127.0.0.1:PORT").
  std::string api_url(int i) const;
  /// Validator `i`'s application home (a node home of the chain; see node_home above).
  const std::string& app_home(int i) const { return nodes_[static_cast<std::size_t>(i)].app_home; }
  int size() const { return static_cast<int>(nodes_.size()); }

  /// Validator `i`'s last committed height, from its API; kUnavailable while it is down.
  [[nodiscard]] Result<std::uint64_t> Height(int i) const;

  /// SIGKILL to validator `i`'s CometBFT node and application, and reaps both.
  void Kill(int i);
  /// Starts validator `i` again on its ports; returns once its API answers (its CometBFT then
  /// replays or fetches the blocks it missed).
  [[nodiscard]] Status Restart(int i);

  /// Waits (up to `timeout`) until every validator has committed the highest height any reports
  /// now, then compares their state roots at that height and their task records' statuses and
  /// outcomes.
  [[nodiscard]] Result<ValidatorAgreement> Agreement(std::chrono::seconds timeout);

  /// SIGTERM then SIGKILL to every process still running.
  void StopAll();

 private:
  struct Node {
    std::string comet_home, app_home;
    std::uint16_t rpc_port = 0, p2p_port = 0, app_port = 0, http_port = 0;
    std::optional<ChildProcess> app, comet;
  };
  ValidatorNetwork(ValidatorNetworkOptions options, Clock& clock) : o_(std::move(options)), clock_(clock) {}
  [[nodiscard]] Status StartApp(int i);
  [[nodiscard]] Status StartComet(int i);
  std::string AppLog(int i) const;
  std::string CometLog(int i) const;

  const ValidatorNetworkOptions o_;
  Clock& clock_;
  std::vector<Node> nodes_;
};

/// The protocol windows of a devnet on CometBFT, in blocks. Its blocks come every few hundred
/// milliseconds whatever the roles do (the embedded devnet waits for them instead), so each
/// window covers minutes of a loaded machine: a role that does its work finishes inside it.
void ValidatorWindows(proto::Params& params);

/// The submitter's claim and training windows (blocks) under ValidatorWindows.
inline constexpr std::uint64_t kValidatorClaimWindow = 1200;
inline constexpr std::uint64_t kValidatorTrainingWindow = 4800;

}  // namespace polnode::node

#endif  // POLNODE_DEVNET_VALIDATOR_NETWORK_H_
