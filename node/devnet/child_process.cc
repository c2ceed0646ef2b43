#include "polnode/devnet/child_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace polnode::node {
namespace {

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

Result<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  if (argv.empty()) return Status::InvalidArgument("no program to start");
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) return Status::IOError("cannot open " + log_path + ": " + std::strerror(errno));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log);
    return Status::IOError(std::string("fork failed: ") + std::strerror(errno));
  }
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec. Signals blocked by the parent (a role
    // daemon blocks SIGINT/SIGTERM for sigwait) must not stay blocked in the child.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int null_in = ::open("/dev/null", O_RDONLY);
    if (null_in >= 0) ::dup2(null_in, 0);
    ::dup2(log, 1);
    ::dup2(log, 2);
    ::execv(args[0], args.data());
    _exit(127);
  }
  ::close(log);
  return ChildProcess(pid, log_path);
}

ChildProcess::ChildProcess(ChildProcess&& other) noexcept
    : pid_(other.pid_), log_path_(std::move(other.log_path_)), exit_code_(other.exit_code_) {
  other.pid_ = -1;
}

ChildProcess& ChildProcess::operator=(ChildProcess&& other) noexcept {
  if (this != &other) {
    if (pid_ > 0 && !exit_code_) Stop(std::chrono::seconds(2));
    pid_ = other.pid_;
    log_path_ = std::move(other.log_path_);
    exit_code_ = other.exit_code_;
    other.pid_ = -1;
  }
  return *this;
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exit_code_) Stop(std::chrono::seconds(2));
}

void ChildProcess::Signal(int signal) const {
  if (pid_ > 0 && !exit_code_) ::kill(pid_, signal);
}

bool ChildProcess::Exited() {
  if (exit_code_) return true;
  if (pid_ <= 0) return true;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) exit_code_ = DecodeWaitStatus(status);
  return exit_code_.has_value();
}

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds timeout, Clock& clock) {
  const Clock::TimePoint deadline = clock.Now() + timeout;
  while (!Exited()) {
    if (clock.Now() >= deadline) return std::nullopt;
    clock.SleepFor(std::chrono::milliseconds(20));
  }
  return exit_code_;
}

int ChildProcess::Stop(std::chrono::milliseconds grace) {
  if (Exited()) return *exit_code_;
  Signal(SIGTERM);
  if (std::optional<int> code = Wait(grace)) return *code;
  Signal(SIGKILL);
  return Wait(std::chrono::seconds(30)).value_or(-1);
}

Result<std::string> SelfExecutable() {
  std::string path(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) return Status::IOError(std::string("cannot read /proc/self/exe: ") + std::strerror(errno));
  path.resize(static_cast<std::size_t>(n));
  return path;
}

std::uintmax_t LogSize(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

Result<std::string> WaitForLogLine(ChildProcess& process, std::uintmax_t from, std::string_view prefix,
                                   std::chrono::milliseconds timeout, Clock& clock) {
  const Clock::TimePoint deadline = clock.Now() + timeout;
  std::string last;
  while (true) {
    // Exited() is read before the log, so a line written just before the exit is still seen.
    const bool exited = process.Exited();
    std::ifstream in(process.log_path());
    in.seekg(static_cast<std::streamoff>(from));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind(prefix, 0) == 0) return line;
      last = line;
    }
    const std::string where = process.log_path() + " (last line: " + last + ")";
    if (exited) return Status::FailedPrecondition("exited before writing its startup line; see " + where);
    if (clock.Now() >= deadline) {
      return Status::Unavailable("no line starting with '" + std::string(prefix) + "' in " + where);
    }
    clock.SleepFor(std::chrono::milliseconds(50));
  }
}

}  // namespace polnode::node
