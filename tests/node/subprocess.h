// Runs a real child process for end-to-end tests: argv in, exit code and captured output out.
#ifndef POLNODE_TESTS_NODE_SUBPROCESS_H_
#define POLNODE_TESTS_NODE_SUBPROCESS_H_

#include <string>
#include <vector>

namespace polnode::testing {

struct ProcessResult {
  int exit_code = -1;  // the child's exit status, or 128 + signal number if it was killed
  std::string out;     // everything it wrote to stdout
  std::string err;     // everything it wrote to stderr
};

/// Runs argv[0] (a path) with the given arguments in `cwd` (empty: inherit), stdin from
/// /dev/null, and waits for it. Aborts the test binary if the process cannot be started.
ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& cwd = "");

/// Path of the polnode binary built alongside the tests.
std::string PolnodeBinary();

/// A fresh empty directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace polnode::testing

#endif  // POLNODE_TESTS_NODE_SUBPROCESS_H_
