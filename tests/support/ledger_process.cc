#include "polnode/testing/ledger_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

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
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(20ms);
  }
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
  ::testing::AssertionResult started =
      process_.Start({PolnodeBinary(), "ledger", "--home", home_, "--listen", listen, "--json"}, out_path,
                     home_ + "/ledger.log");
  if (!started) return started;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::uint16_t bound = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (bound == 0) bound = PortFromStartupLine(ReadFileText(out_path));
    if (bound != 0) {
      port_ = bound;
      auto r = node::HttpCall(endpoint(), "GET", "/v1/status", {}, {}, 1s);
      if (r.ok() && r->status == 200) return ::testing::AssertionSuccess();
    }
    if (!process_.Running()) {
      return ::testing::AssertionFailure() << "polnode ledger exited with " << process_.exit_code().value_or(-1)
                                           << "; its log:\n" << Log();
    }
    std::this_thread::sleep_for(20ms);
  }
  return ::testing::AssertionFailure() << "polnode ledger did not answer within " << timeout.count()
                                       << " ms; its log:\n" << Log();
}

}  // namespace polnode::testing
