// The committed seed corpora of the fuzz targets (fuzz/corpus/<target>/<name>), read by the tests
// that check each seed still means what its name says.
#ifndef POLNODE_TESTING_FUZZ_SEEDS_H_
#define POLNODE_TESTING_FUZZ_SEEDS_H_

#include <string>
#include <string_view>

namespace polnode::testing {

/// The bytes of seed `name` of fuzz target `target` in this source tree. A seed that cannot be
/// read fails the calling test (ADD_FAILURE, naming the path) and gives no bytes, so a missing
/// corpus is never mistaken for an empty input.
std::string FuzzSeed(std::string_view target, std::string_view name);

}  // namespace polnode::testing

#endif  // POLNODE_TESTING_FUZZ_SEEDS_H_
