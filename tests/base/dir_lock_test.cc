#include "polnode/base/dir_lock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>

namespace polnode {
namespace {

class DirLockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "polnode-dirlock-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
};

TEST_F(DirLockTest, SecondHolderIsRefusedWithThePidAndTheFirstReleaseFreesIt) {
  Result<DirLock> first = DirLock::Acquire(dir_, "role home");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->path(), dir_ + "/polnode.lock");

  Result<DirLock> second = DirLock::Acquire(dir_, "role home");
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  const std::string message = second.status().ToString();
  EXPECT_NE(message.find("role home " + dir_ + " is in use by another polnode process (pid " +
                         std::to_string(getpid()) + ")"),
            std::string::npos)
      << message;

  // Moving the lock keeps it held; destroying the holder releases it.
  DirLock moved = std::move(*first);
  EXPECT_FALSE(DirLock::Acquire(dir_, "role home").ok());
  { DirLock gone = std::move(moved); }
  EXPECT_TRUE(DirLock::Acquire(dir_, "role home").ok());
}

TEST_F(DirLockTest, AnotherProcessIsRefusedWhileHeldAndGetsItOnceTheHolderExits) {
  Result<DirLock> acquired = DirLock::Acquire(dir_, "ledger home");
  ASSERT_TRUE(acquired.ok()) << acquired.status().ToString();
  std::optional<DirLock> held(std::move(*acquired));
  // The child's exit code says whether it could lock: 0 locked, 1 refused, 2 another error.
  const auto child_tries = [&] {
    const pid_t pid = fork();
    if (pid == 0) {
      Result<DirLock> lock = DirLock::Acquire(dir_, "ledger home");
      _exit(lock.ok() ? 0 : lock.status().code() == StatusCode::kFailedPrecondition ? 1 : 2);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(child_tries(), 1);
  held.reset();
  EXPECT_EQ(child_tries(), 0);
}

TEST_F(DirLockTest, MissingDirectoryIsAnIoError) {
  Result<DirLock> lock = DirLock::Acquire(dir_ + "/absent", "role home");
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), StatusCode::kIOError);
}

}  // namespace
}  // namespace polnode
