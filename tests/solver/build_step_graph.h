// The solver suite's way to get a step graph for a model spec, for the tests that inspect graphs.
#ifndef POLNODE_TESTS_SOLVER_BUILD_STEP_GRAPH_H_
#define POLNODE_TESTS_SOLVER_BUILD_STEP_GRAPH_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "polnode/solver/model_spec.h"
#include "polnode/solver/optimizer.h"
#include "polnode/solver/step_graph.h"

namespace polnode::solver {

/// The training-step graph of `spec` with a `kind` optimizer over batches of `batch`; fails the
/// test when the spec or the graph is refused.
inline StepGraph BuildOrDie(const std::string& spec, OptimizerKind kind, std::int64_t batch) {
  Result<ModelSpec> m = ParseModelSpec(spec);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  OptimizerConfig o;
  o.kind = kind;
  Result<StepGraph> g = BuildTrainStepGraph(*m, o, batch);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return *g;
}

}  // namespace polnode::solver

#endif  // POLNODE_TESTS_SOLVER_BUILD_STEP_GRAPH_H_
