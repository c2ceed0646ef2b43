// A scratch directory for a test or a fixture: fresh, empty, and removed with its contents when the
// object goes away.
#ifndef POLNODE_TESTING_TEMP_DIR_H_
#define POLNODE_TESTING_TEMP_DIR_H_

#include <string>
#include <string_view>

namespace polnode::testing {

class TempDir {
 public:
  /// Creates <system temp dir>/polnode-<tag>-XXXXXX. Aborts when it cannot: a test without its
  /// directory would only fail later and further from the cause.
  explicit TempDir(std::string_view tag = "test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  /// The path of `name` inside the directory.
  std::string File(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_TEMP_DIR_H_
