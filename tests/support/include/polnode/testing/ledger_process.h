// Long-running child processes for end-to-end tests: a daemon started in the background (a role,
// a devnet) and a real `polnode ledger` in its own home, stopped with SIGTERM or SIGKILL.
#ifndef POLNODE_TESTING_LEDGER_PROCESS_H_
#define POLNODE_TESTING_LEDGER_PROCESS_H_

#include <sys/types.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "polnode/rpc/http_client.h"
#include "polnode/testing/data_files.h"
#include "polnode/testing/subprocess.h"

namespace polnode::testing {

/// A child process running in the background; SIGKILLed and reaped at destruction if still running.
class DaemonProcess {
 public:
  DaemonProcess() = default;
  ~DaemonProcess();
  DaemonProcess(const DaemonProcess&) = delete;
  DaemonProcess& operator=(const DaemonProcess&) = delete;

  /// Starts argv[0] (a path) with stdin from /dev/null, stdout to `out_path` (truncated) and stderr
  /// appended to `err_path`. Fails (the child is not running) if one is still running or it cannot
  /// be spawned.
  ::testing::AssertionResult Start(const std::vector<std::string>& argv, const std::string& out_path,
                                   const std::string& err_path);
  /// Whether it is still running; reaps it (keeping its exit code) once it has exited.
  bool Running();
  /// Waits up to `timeout` for it to exit; its exit code (128 + signal if a signal ended it), or
  /// nullopt if it is still running.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  /// SIGTERM, then waits for it; its exit code (-1 if it was not running).
  int Terminate();
  /// SIGKILL, then reaps it.
  void Kill9();
  /// The exit code of the last run, once reaped.
  std::optional<int> exit_code() const { return exit_code_; }

 private:
  void Reaped(int wait_status);

  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

/// A `polnode ledger` child process in `home` (made by `polnode init`) on a loopback port: the
/// first Start lets the OS choose it (--listen 127.0.0.1:0, read back from the --json startup
/// line), later Starts reuse it, so URLs handed to other processes stay valid across restarts.
/// stdout goes to HOME/ledger.out, stderr (the block log) to HOME/ledger.log.
///
/// With `manual_blocks` it runs with --manual-blocks and makes a block only when the test asks
/// (ProduceBlocks, RunCommitting): deadlines counted in blocks pass when the test says, however
/// fast the machine is. Without, it makes blocks on its config's timer (for tests of that timer
/// and of crashes at random moments).
class LedgerProcess {
 public:
  explicit LedgerProcess(std::string home, bool manual_blocks = false)
      : home_(std::move(home)), manual_blocks_(manual_blocks) {}

  /// Starts it and waits (up to `timeout`) until GET /v1/status answers 200; on failure the
  /// message carries the ledger's log.
  ::testing::AssertionResult Start(std::chrono::milliseconds timeout = std::chrono::seconds(60));
  /// SIGTERM; the exit code (128 + signal if it died of one; -1 if not running).
  int Terminate() { return process_.Terminate(); }
  /// SIGKILL, as a crash.
  void Kill9() { process_.Kill9(); }

  node::HttpEndpoint endpoint() const { return node::HttpEndpoint{"127.0.0.1", port_}; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& home() const { return home_; }
  /// Its stderr so far (block production and errors).
  std::string Log() const { return ReadFileText(home_ + "/ledger.log"); }

  /// Manual blocks only: makes `count` blocks now (POST /v1/test/produce-block); the new height
  /// goes to `height` when given.
  ::testing::AssertionResult ProduceBlocks(int count = 1, std::uint64_t* height = nullptr) const;
  /// The transactions waiting in its mempool (GET /v1/status); fails the test when it does not answer.
  std::uint64_t MempoolSize() const;
  /// Manual blocks only: runs argv to its end (RunProcess) while making a block whenever a
  /// transaction waits in the mempool, so a command that waits for its transactions to commit
  /// (`polnode tx ... --wait`) sees each commit in the first block after it arrived.
  ProcessResult RunCommitting(const std::vector<std::string>& argv) const;

 private:
  std::string home_;
  bool manual_blocks_ = false;
  std::uint16_t port_ = 0;
  DaemonProcess process_;
};

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_LEDGER_PROCESS_H_
