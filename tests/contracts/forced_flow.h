// Forced-round task flows for the contracts tests: every round forced, and a search over secrets
// for the forced checkpoints a test is about, so each test is deterministic and checks what it says.
#ifndef POLNODE_TESTS_CONTRACTS_FORCED_FLOW_H_
#define POLNODE_TESTS_CONTRACTS_FORCED_FLOW_H_

#include <functional>
#include <memory>

#include "polnode/testing/task_flow.h"

namespace polnode::contracts::testing {

/// TestParams with forced_error_rate 1: every round is forced.
proto::Params ForcedParams();

/// Runs fresh forced rounds to verifying, with secrets 1, 2, ... (and a committed proof varied with
/// it, which moves the slots), until one has its two slots held by different keys and `want`
/// holds; nullptr (and a test failure) when none of 255 does. `tolerant` posts a tolerant-mode
/// spec with forced_delta 2^-10 (TaskFlow then commits real perturbed states); `prepare`, when
/// given, changes each flow before it runs (e.g. the solver's committed_delta).
std::unique_ptr<TaskFlow> ForcedFlow(const std::function<bool(const TaskFlow&)>& want,
                                     const proto::Params& params = ForcedParams(), bool tolerant = false,
                                     const std::function<void(TaskFlow&)>& prepare = nullptr);

}  // namespace polnode::contracts::testing

#endif  // POLNODE_TESTS_CONTRACTS_FORCED_FLOW_H_
