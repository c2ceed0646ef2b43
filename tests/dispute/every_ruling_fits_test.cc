// Issue 14, finding 5, "every ruling fits": for every operator output of the README's default MLP
// (mlp:784-256-128-10, batch 128), a wide MLP (mlp:784-1024-1024-10), the devnet's MLP
// (mlp:784-64-10, batch 64), a devnet-scale CNN (cnn:c8-p-c16-p-f64-10, batch 128) and the
// tests/dispute CNN, a real dispute game is played through the ledger's referee: a lying verifier
// corrupts one element of that output, and the game must pinpoint the operator and the block
// holding the element, bisect the block's chain where one ruling could not carry it, and rule for
// the honest solver, with every move within the 1 MiB transaction payload. Beside the games, the
// largest ruling any block of any operator could need (every block, every box the chain bisection
// can end at) is computed from the descriptors alone and must fit the budget. The nanoGPT CPU
// configuration (issue 12: 4 layers, 4 heads, width 128, context 64, batch 12, vocabulary 65) gets
// the same worst case over every block of its about 200 operators, and one game per operator kind,
// on the kind's largest output (the games of every output would take minutes on a CI core).
//
// The report (stdout, "[every-ruling-fits]") gives per model the largest referee move and largest
// single move of the games, the most work one ruling took (multiply-adds on the reference kernel)
// and the slowest ruling's block time (printed only, never asserted), and the worst case over
// every box.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "polnode/testing/tiny_gpt.h"
#include "polnode/testing/tiny_task.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts/dispute_audit.h"
#include "polnode/contracts/ruling.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/task_steps.h"
#include "real_match.h"

namespace polnode::dispute_testing {
namespace {

using contracts::testing::Raw;

// 256 training images of 28 x 28 in 10 classes (and 16 test images): enough for batches of 128.
solver::ImageDataset Synthetic28() {
  solver::ImageDataset d;
  auto fill = [](solver::ImageSplit& s, std::int64_t count, std::uint32_t salt) {
    s.count = count;
    s.rows = 28;
    s.cols = 28;
    s.pixels.resize(static_cast<std::size_t>(count * 784));
    s.labels.resize(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      const std::uint8_t label = static_cast<std::uint8_t>(i % 10);
      s.labels[static_cast<std::size_t>(i)] = label;
      for (std::int64_t p = 0; p < 784; ++p) {
        const std::uint32_t noise = (static_cast<std::uint32_t>(i * 784 + p) * 2654435761u + salt) >> 24;
        const std::uint32_t signal = (p % 10 == label) ? 160u : 0u;
        s.pixels[static_cast<std::size_t>(i * 784 + p)] = static_cast<std::uint8_t>(std::min(255u, signal + noise / 3));
      }
    }
  };
  fill(d.train, 256, 5);
  fill(d.test, 16, 9);
  d.num_classes = 10;
  return d;
}

enum class Data { kSynthetic28, kTiny, kText65 };

struct ModelCase {
  const char* name;
  const char* model;
  solver::OptimizerKind optimizer;
  std::int64_t batch;
  Data data;  // the tests/dispute CNN reads the 4 x 4 TinyDataset, a GPT text
  bool game_per_kind = false;  // one game per operator kind (its largest output), not per output
};

const ModelCase kModels[] = {
    {"mlp-784-256-128-10", "mlp:784-256-128-10", solver::OptimizerKind::kSgd, 128, Data::kSynthetic28},
    {"mlp-784-1024-1024-10", "mlp:784-1024-1024-10", solver::OptimizerKind::kSgd, 128, Data::kSynthetic28},
    {"devnet-mlp-784-64-10", "mlp:784-64-10", solver::OptimizerKind::kSgd, 64, Data::kSynthetic28},
    {"cnn-c8-p-c16-p-f64-10", "cnn:c8-p-c16-p-f64-10", solver::OptimizerKind::kAdam, 128, Data::kSynthetic28},
    {"dispute-cnn-i1x4x4-c2-p-f5-3", "cnn:i1x4x4-c2-p-f5-3", solver::OptimizerKind::kAdam, 8, Data::kTiny},
    {"nanogpt-cpu-l4-h4-w128-t64", solver::testing::kNanoGptCpuSpec, solver::OptimizerKind::kAdam, 12, Data::kText65,
     true},
};

void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

// One step, one segment: every game is about step 0.
solver::TaskSpec OneStepTask(const ModelCase& c, const solver::ImageDataset& data) {
  solver::TaskSpec t = solver::testing::TinyTask(data);
  // A GPT takes AdamW's weight decay and the text data's hash from the tests' GPT task.
  if (c.data == Data::kText65) t = solver::testing::TinyGptTask(data);
  t.model = c.model;
  t.optimizer.kind = c.optimizer;
  t.optimizer.lr = c.optimizer == solver::OptimizerKind::kSgd ? 0.05f : 0.001f;
  t.batch = c.batch;
  t.steps = 1;
  t.checkpoint_interval = 1;
  t.segments_per_check = 1;
  return t;
}

// Every node output of step 0 from the task's initial state, honestly computed.
std::vector<std::vector<kernels::Tensor>> StepOutputs(const solver::TaskSpec& task, const solver::ImageDataset& data,
                                                      kernels::Backend& backend) {
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task, data);
  EXPECT_TRUE(stepper.ok());
  std::vector<std::vector<kernels::Tensor>> outputs(stepper->graph().nodes.size());
  solver::NodeObserver observer = [&](const solver::StepNode& node, std::span<const kernels::Tensor* const> outs) {
    for (const kernels::Tensor* t : outs) outputs[static_cast<std::size_t>(node.index)].push_back(*t);
    return Status::Ok();
  };
  solver::TrainState state = stepper->Initial();
  EXPECT_TRUE(stepper->Step(state, backend, &observer).ok());
  return outputs;
}

// The element of an output the lie corrupts: about two thirds in (so the descent leaves block 0),
// or for a pooling output's tap indices one holding 2 or 3, which bit 22 swaps (the lying party's
// own replay must stay valid: an index of 1.5 would fail its next operator).
std::int64_t TamperElement(const solver::StepNode& node, const kernels::Tensor& honest, int output) {
  if (node.op == kernels::Op::kMaxPool2x2 && output == 1) {
    for (std::int64_t e = honest.numel() * 2 / 3; e < honest.numel(); ++e) {
      if (honest.data()[e] == 2.0f || honest.data()[e] == 3.0f) return e;
    }
    for (std::int64_t e = 0; e < honest.numel(); ++e) {
      if (honest.data()[e] == 2.0f || honest.data()[e] == 3.0f) return e;
    }
    ADD_FAILURE() << "no tap index 2 or 3 in " << node.name;
  }
  return honest.numel() * 2 / 3;
}

struct ModelReport {
  int nodes = 0, games = 0, chained_games = 0, tile_blocks = 0, boxes = 0;
  std::size_t referee_bytes = 0, move_bytes = 0;
  std::uint64_t game_work = 0, worst_bytes = 0, worst_work = 0;
  double referee_ms = 0;
  std::string largest_referee, most_work, worst_box;
};

class EveryRulingFits : public ::testing::TestWithParam<ModelCase> {};

TEST_P(EveryRulingFits, EveryOperatorOutputIsRefereedWithinTheLimits) {
  const ModelCase& c = GetParam();
  Result<solver::ImageDataset> text = solver::testing::Text65Dataset();
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const solver::ImageDataset data = c.data == Data::kTiny     ? solver::testing::TinyDataset()
                                    : c.data == Data::kText65 ? *text
                                                              : Synthetic28();
  const solver::TaskSpec task = OneStepTask(c, data);
  const solver::StepGraph graph = GraphOf(task, data);
  Result<std::vector<proto::PinpointDescriptor>> descriptors = solver::PinpointDescriptors(graph);
  ASSERT_TRUE(descriptors.ok());
  const solver::StepLeafLayout layout(graph);
  Result<std::unique_ptr<kernels::Backend>> made = kernels::MakeBackend("cpu", 2);
  ASSERT_TRUE(made.ok());
  std::unique_ptr<kernels::Backend> cpu = std::move(*made);
  ModelReport report;

  // 1. The worst case over every block of every output and every box the chain bisection can end
  // at, from the descriptors alone, under the ledger's budget for 1 MiB transactions.
  const contracts::RulingBudget budget = contracts::RulingBudgetOf(contracts::testing::TestParams());
  EXPECT_EQ(budget.bytes + contracts::kRulingReserveBytes, consensus::kMaxPayloadBytes);
  for (const solver::StepNode& node : graph.nodes) {
    const proto::PinpointNode& descriptor = (*descriptors)[static_cast<std::size_t>(node.index)].node();
    for (int o = 0; o < static_cast<int>(node.output_shapes.size()); ++o) {
      Result<kernels::TileKernel> kernel = contracts::TileKernelOf(descriptor, static_cast<std::uint32_t>(o), 0);
      ASSERT_TRUE(kernel.ok()) << node.name << ": " << kernel.status().ToString();
      for (std::uint64_t b = 0; b < kernel->grid().block_count(); ++b) {
        ++report.tile_blocks;
        for (const contracts::TileBox& box : contracts::TerminalBoxes(*kernel, descriptor, b, budget)) {
          ++report.boxes;
          const contracts::RulingCost cost = contracts::CostOf(*kernel, descriptor, box);
          EXPECT_TRUE(cost.Fits(budget)) << node.name << " output " << o << " block " << b << " units [" << box.lo
                                         << ", " << box.hi << "): " << cost.bytes << " bytes, " << cost.work << " work";
          if (cost.bytes > report.worst_bytes) {
            report.worst_bytes = cost.bytes;
            report.worst_box = node.name + " block " + std::to_string(b);
          }
          report.worst_work = std::max(report.worst_work, cost.work);
        }
      }
    }
  }

  // 2. One game per operator output, through the ledger, over one shared honest proof: the lying
  // verifier rejects it and corrupts that output; the solver defends.
  const Proof proof = ProveTask(task, data, std::nullopt, cpu.get());
  ASSERT_TRUE(FailedSegments(task, data, proof, cpu.get()).empty());
  const std::vector<std::vector<kernels::Tensor>> honest = StepOutputs(task, data, *cpu);
  const int last = static_cast<int>(graph.nodes.size()) - 1;
  // Per operator kind, its largest output (the first of that size), for a model played per kind.
  std::map<kernels::Op, std::pair<int, int>> largest;
  for (const solver::StepNode& node : graph.nodes) {
    for (int o = 0; o < static_cast<int>(node.output_shapes.size()); ++o) {
      const auto it = largest.find(node.op);
      const std::int64_t size = kernels::NumElements(node.output_shapes[static_cast<std::size_t>(o)]);
      if (it == largest.end() ||
          size > kernels::NumElements(graph.nodes[static_cast<std::size_t>(it->second.first)]
                                          .output_shapes[static_cast<std::size_t>(it->second.second)])) {
        largest[node.op] = {node.index, o};
      }
    }
  }
  for (const solver::StepNode& node : graph.nodes) {
    ++report.nodes;
    for (int o = 0; o < static_cast<int>(node.output_shapes.size()); ++o) {
      if (c.game_per_kind && largest[node.op] != std::pair<int, int>{node.index, o}) continue;
      SCOPED_TRACE(node.name + " output " + std::to_string(o));
      const kernels::Tensor& value = honest[static_cast<std::size_t>(node.index)][static_cast<std::size_t>(o)];
      MatchOptions options;
      options.scenario = Scenario::kLazyVerifierRejectedHonest;
      options.task = task;
      options.backend = "cpu";
      options.proof = &proof;
      options.tamper = solver::TamperSpec{0, node.index, o, 22, TamperElement(node, value, o),
                                          node.index == last ? -1 : last};
      // Daemons that restart between polls resume inside the output and along its chain.
      options.restart_players = node.op == kernels::Op::kConv2d3x3GradWeight && node.name.starts_with("conv1");
      RealMatch match(data, options);
      match.Setup();
      if (::testing::Test::HasFatalFailure()) return;
      match.Play();
      if (::testing::Test::HasFatalFailure()) return;
      ++report.games;
      const proto::DisputeGame game = match.Game();
      const MatchStats& stats = match.stats();
      // Pinpointed: the operator's output, the block holding the corrupted element; the referee
      // ruled for the honest solver.
      EXPECT_EQ(game.leaf(), layout.first_output_leaf(node.index) + static_cast<std::uint64_t>(o));
      const BlockGrid grid = BlockGrid::Of(value.shape());
      EXPECT_EQ(game.tile(), grid.BlockOf(options.tamper.element));
      EXPECT_TRUE(game.ruling().starts_with("leaf ")) << game.ruling();
      EXPECT_EQ(game.winner(), Raw(match.honest())) << game.ruling();
      EXPECT_FALSE(game.challenger_won());
      EXPECT_EQ(match.LedgerTask().outcome(), proto::OUTCOME_ACCEPTED);
      EXPECT_LE(stats.max_move_bytes, consensus::kMaxPayloadBytes);
      Result<contracts::GameAudit> audit = contracts::AuditGame(match.flow().chain.params(), match.LedgerTask(), game);
      ASSERT_TRUE(audit.ok()) << audit.status().ToString();
      EXPECT_TRUE(audit->differences.empty()) << audit->differences.front();
      // The ruling's box and its cost.
      const proto::PinpointNode& descriptor = (*descriptors)[static_cast<std::size_t>(node.index)].node();
      Result<kernels::TileKernel> kernel = contracts::TileKernelOf(descriptor, static_cast<std::uint32_t>(o), 0);
      ASSERT_TRUE(kernel.ok());
      const contracts::RulingCost cost = contracts::CostOf(*kernel, descriptor, {game.tile(), game.chain_lo(), game.chain_hi()});
      EXPECT_TRUE(cost.Fits(budget));
      if (stats.chain_rounds > 0) ++report.chained_games;
      if (stats.referee_bytes > report.referee_bytes) {
        report.referee_bytes = stats.referee_bytes;
        report.largest_referee = node.name;
      }
      report.move_bytes = std::max(report.move_bytes, stats.max_move_bytes);
      if (cost.work > report.game_work) {
        report.game_work = cost.work;
        report.most_work = node.name;
      }
      report.referee_ms = std::max(report.referee_ms, stats.referee_ms);
      std::cout << "[every-ruling-fits] " << c.name << " " << node.name << " output " << o << ": block " << game.tile()
                << " of " << grid.block_count() << ", " << stats.tile_rounds << " tile and " << stats.chain_rounds
                << " chain rounds, units [" << game.chain_lo() << ", " << game.chain_hi() << ") of " << game.chain_units()
                << ", referee move " << stats.referee_bytes << " bytes, work " << cost.work << ", ruling block "
                << std::fixed << std::setprecision(1) << stats.referee_ms << " ms\n";
    }
  }
  std::cout << "[every-ruling-fits] " << c.name << " (batch " << c.batch << "): " << report.nodes << " operators, "
            << report.games << " games (" << report.chained_games << " with chain rounds), largest referee move "
            << report.referee_bytes << " bytes (" << report.largest_referee << "), largest move " << report.move_bytes
            << " bytes, most work per ruling " << report.game_work << " multiply-adds (" << report.most_work
            << "), slowest ruling block " << std::fixed << std::setprecision(1) << report.referee_ms
            << " ms; worst case over " << report.tile_blocks << " blocks / " << report.boxes << " boxes: "
            << report.worst_bytes << " evidence bytes (" << report.worst_box << "), " << report.worst_work
            << " work; budget " << budget.bytes << " bytes, " << budget.work << " work\n";
  RecordProperty("largest_referee_move_bytes", static_cast<int>(report.referee_bytes));
  RecordProperty("largest_move_bytes", static_cast<int>(report.move_bytes));
  RecordProperty("most_work_per_ruling", static_cast<int>(report.game_work));
  RecordProperty("worst_case_evidence_bytes", static_cast<int>(report.worst_bytes));
  RecordProperty("worst_case_work", static_cast<int>(report.worst_work));
}

INSTANTIATE_TEST_SUITE_P(Models, EveryRulingFits, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<ModelCase>& p) {
                           std::string name = p.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The devnet's game (README): mlp:784-64-10, 300 steps of batch 64, k = 50, the cheating solver
// corrupting the first weight update at step 274. Its moves: the opening, 6 step rounds, 6 graph
// rounds, 4 rounds into the 13 blocks of fc1.w's update, and the referee's block.
TEST(EveryRulingFitsDevnet, TheDevnetsCheatIsPinpointedToABlockOfItsWeightUpdate) {
  const solver::ImageDataset data = Synthetic28();
  MatchOptions options;
  options.scenario = Scenario::kCheatingSolverDisputesReject;
  options.task = solver::testing::TinyTask(data);
  options.task.model = "mlp:784-64-10";
  options.task.batch = 64;
  options.task.steps = 300;
  options.task.checkpoint_interval = 50;
  options.task.optimizer.lr = 0.05f;
  options.task.seed = 1000;
  options.backend = "cpu";
  const solver::StepGraph graph = GraphOf(options.task, data);
  options.tamper = solver::TamperSpec{274, NodeIndex(graph, "fc1.w.sgd"), 0, 22};
  RealMatch match(data, options);
  match.Setup();
  if (::testing::Test::HasFatalFailure()) return;
  match.Play();
  if (::testing::Test::HasFatalFailure()) return;
  match.Report("devnet cheat");
  const proto::DisputeGame game = match.Game();
  EXPECT_EQ(game.first_step() + game.lo(), 274u);
  EXPECT_EQ(game.tile(), 0u);
  EXPECT_EQ(game.tile_depth(), 4u);
  EXPECT_EQ(game.winner(), Raw(match.honest())) << game.ruling();
  EXPECT_EQ(game.moves_size(), 34);
}

}  // namespace
}  // namespace polnode::dispute_testing
