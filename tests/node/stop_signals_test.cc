// StopSignals in a forked child (a process of its own, single-threaded when forked, so a signal
// sent to it touches nothing else): a stop signal that arrives while every thread is busy is held
// for the thread that waits for it, instead of killing the process through a thread that was
// started without the mask. The daemons depend on this: their backends start worker threads
// before the poll loop first waits.
#include "polnode/roles/stop_signals.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace polnode::node {
namespace {

using namespace std::chrono_literals;

// Runs `child` in a forked process and returns its wait status; `child`'s result is the exit code.
// The child writes one byte to `ready` when the parent may send signals.
template <typename F>
int RunInChild(F child, bool send_sigterm) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    ::_exit(child(ready[1]));
  }
  ::close(ready[1]);
  char byte = 0;
  const bool got_ready = ::read(ready[0], &byte, 1) == 1;
  ::close(ready[0]);
  if (got_ready && send_sigterm) ::kill(pid, SIGTERM);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

TEST(StopSignalsTest, ASignalThatArrivesWhileEveryThreadIsBusyWaitsForTheWaitingThread) {
  const int status = RunInChild(
      [](int ready) {
        StopSignals stop;
        std::atomic<bool> done{false};
        std::thread worker([&done] {
          while (!done) std::this_thread::sleep_for(1ms);
        });
        if (::write(ready, "r", 1) != 1) return 3;
        // The signal arrives while neither thread waits for it: StopSignals blocks it in every
        // thread, so it stays pending. Waiting until it is (instead of sleeping long enough, as
        // far as one can guess) makes that order certain on a machine of any speed.
        sigset_t pending;
        for (int polls = 0;; ++polls) {
          if (::sigpending(&pending) != 0 || polls == 10'000) return 4;
          if (::sigismember(&pending, SIGTERM) == 1) break;
          std::this_thread::sleep_for(1ms);
        }
        const int signal_number = stop.WaitFor(10s);
        done = true;
        worker.join();
        return signal_number == SIGTERM ? 0 : 1;
      },
      /*send_sigterm=*/true);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "WaitFor did not return SIGTERM";
}

TEST(StopSignalsTest, WaitForWithoutASignalReturnsZeroAfterTheTimeout) {
  const int status = RunInChild(
      [](int ready) {
        StopSignals stop;
        if (::write(ready, "r", 1) != 1) return 3;
        const auto started = std::chrono::steady_clock::now();
        const int signal_number = stop.WaitFor(50ms);
        const auto waited = std::chrono::steady_clock::now() - started;
        if (signal_number != 0) return 1;
        return waited >= 50ms ? 0 : 2;
      },
      /*send_sigterm=*/false);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a signal was reported, 2: returned before the timeout";
}

}  // namespace
}  // namespace polnode::node
