#include "forced_flow.h"

#include <gtest/gtest.h>

namespace polnode::contracts::testing {

proto::Params ForcedParams() {
  proto::Params params = TestParams();
  params.set_forced_error_rate(1);
  return params;
}

std::unique_ptr<TaskFlow> ForcedFlow(const std::function<bool(const TaskFlow&)>& want, const proto::Params& params,
                                     bool tolerant, const std::function<void(TaskFlow&)>& prepare) {
  for (int n = 1; n < 256; ++n) {
    auto flow = std::make_unique<TaskFlow>(params);
    std::vector<Hash256> leaves(11);
    for (std::size_t i = 0; i < leaves.size(); ++i) leaves[i].fill(static_cast<std::uint8_t>(0x40 + i));
    leaves[0].fill(0xD5);  // the spec's initial state
    leaves[5][0] = static_cast<std::uint8_t>(n);
    flow->SetCheckpoints(leaves);
    flow->secret = Bytes32(static_cast<std::uint8_t>(n));
    if (tolerant) {
      flow->spec = TaskSubmission(10'000).spec();
      flow->spec->set_tolerant(true);
      flow->spec->set_forced_delta(0x1p-10f);
      flow->tolerant_states = true;
      flow->tolerant_variant = static_cast<std::uint32_t>(n);
    }
    if (prepare) prepare(*flow);
    flow->RunToVerifying(10'000);
    if (flow->task().verifiers_size() == 2 && flow->KeyOfSlot(0) != flow->KeyOfSlot(1) && want(*flow)) return flow;
  }
  ADD_FAILURE() << "no secret gives the wanted forced checkpoints";
  return nullptr;
}

}  // namespace polnode::contracts::testing
