#include "polnode/testing/ledger_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "polnode/base/clock.h"
#include "polnode/testing/eventually.h"
#include "polnode/testing/subprocess.h"

extern char** environ;

namespace polnode::testing {

using namespace std::chrono_literals;

// ---- DaemonProcess --------------------------------------------------------------------------

DaemonProcess::~DaemonProcess() { Kill9(); }

::testing::AssertionResult DaemonProcess::Start(const std::vector<std::string>& argv, const std::string& out_path,
                                               const std::string& err_path) {
  if (Running()) return ::testing::AssertionFailure() << argv[0] << ": the previous child is still running";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return ::testing::AssertionFailure() << "cannot start " << argv[0] << ": " << std::strerror(rc);
  pid_ = pid;
  exit_code_.reset();
  return ::testing::AssertionSuccess();
}

void DaemonProcess::Reaped(int wait_status) {
  exit_code_ = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
  pid_ = -1;
}

bool DaemonProcess::Running() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    Reaped(status);
    return false;
  }
  return true;
}

std::optional<int> DaemonProcess::Wait(std::chrono::milliseconds timeout) {
  if (!Eventually([&] { return !Running(); }, timeout)) return std::nullopt;
  return exit_code_;
}

int DaemonProcess::Terminate() {
  if (!Running()) return -1;
  ::kill(pid_, SIGTERM);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  Reaped(status);
  return *exit_code_;
}

void DaemonProcess::Kill9() {
  if (!Running()) return;  // never kill(-1, ...): pid_ is only ever a child of ours here
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  Reaped(status);
}

// ---- LedgerProcess --------------------------------------------------------------------------

namespace {

// The port in the ledger's --json startup line {"chain_id":...,"listen":"HOST:PORT",...}; 0 until
// the line is complete.
std::uint16_t PortFromStartupLine(const std::string& out) {
  const std::size_t newline = out.find('\n');
  if (newline == std::string::npos) return 0;
  const std::string key = "\"listen\":\"";
  const std::size_t at = out.find(key);
  if (at == std::string::npos || at > newline) return 0;
  const std::size_t end = out.find('"', at + key.size());
  const std::size_t colon = out.rfind(':', end);
  if (end == std::string::npos || colon == std::string::npos || colon < at + key.size()) return 0;
  return static_cast<std::uint16_t>(std::stoul(out.substr(colon + 1, end - colon - 1)));
}

}  // namespace

::testing::AssertionResult LedgerProcess::Start(std::chrono::milliseconds timeout) {
  const std::string listen = "127.0.0.1:" + std::to_string(port_);
  const std::string out_path = home_ + "/ledger.out";
  std::vector<std::string> argv = {PolnodeBinary(), "ledger", "--home", home_, "--listen", listen, "--json"};
  if (manual_blocks_) argv.push_back("--manual-blocks");
  ::testing::AssertionResult started = process_.Start(argv, out_path, home_ + "/ledger.log");
  if (!started) return started;
  std::uint16_t bound = 0;
  bool serving = false;
  Eventually(
      [&] {
        if (bound == 0) bound = PortFromStartupLine(ReadFileText(out_path));
        if (bound != 0) {
          port_ = bound;
          auto r = node::HttpCall(endpoint(), "GET", "/v1/status", {}, {}, 1s);
          serving = r.ok() && r->status == 200;
        }
        return serving || !process_.Running();
      },
      timeout);
  if (serving) return ::testing::AssertionSuccess();
  if (!process_.Running()) {
    return ::testing::AssertionFailure() << "polnode ledger exited with " << process_.exit_code().value_or(-1)
                                         << "; its log:\n" << Log();
  }
  return ::testing::AssertionFailure() << "polnode ledger did not answer within " << timeout.count()
                                       << " ms; its log:\n" << Log();
}

::testing::AssertionResult LedgerProcess::ProduceBlocks(int count, std::uint64_t* height) const {
  if (!manual_blocks_) return ::testing::AssertionFailure() << "this ledger makes its blocks on a timer";
  auto r = node::HttpCall(endpoint(), "POST", "/v1/test/produce-block?count=" + std::to_string(count), {}, {}, 60s);
  if (!r.ok()) return ::testing::AssertionFailure() << "produce-block: " << r.status().ToString();
  if (r->status != 200) return ::testing::AssertionFailure() << "produce-block answered " << r->status << ": " << r->body;
  const std::string key = "\"height\":";
  const std::size_t at = r->body.find(key);
  if (at == std::string::npos) return ::testing::AssertionFailure() << "no height in " << r->body;
  if (height != nullptr) *height = std::stoull(r->body.substr(at + key.size()));
  return ::testing::AssertionSuccess();
}

std::uint64_t LedgerProcess::MempoolSize() const {
  auto r = node::HttpCall(endpoint(), "GET", "/v1/status");
  EXPECT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  const std::string key = "\"mempool_size\":";
  const std::size_t at = r.ok() ? r->body.find(key) : std::string::npos;
  return at == std::string::npos ? 0 : std::stoull(r->body.substr(at + key.size()));
}

ProcessResult LedgerProcess::RunCommitting(const std::vector<std::string>& argv) const {
  // Each run's output files are new, so runs never read each other's.
  static std::atomic<int> runs{0};
  const std::string base = home_ + "/committing-" + std::to_string(runs++);
  ProcessResult result;
  DaemonProcess child;
  if (::testing::AssertionResult started = child.Start(argv, base + ".out", base + ".err"); !started) {
    ADD_FAILURE() << started.message();
    return result;
  }
  // The child's speed decides only how many of these rounds there are: every transaction it
  // sends commits in the next block, whichever round sees it.
  while (child.Running()) {
    if (MempoolSize() > 0) {
      EXPECT_TRUE(ProduceBlocks(1));
    } else {
      SystemClock().SleepFor(5ms);
    }
  }
  result.exit_code = child.exit_code().value_or(-1);
  result.out = ReadFileText(base + ".out");
  result.err = ReadFileText(base + ".err");
  return result;
}

}  // namespace polnode::testing
