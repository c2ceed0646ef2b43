// The ledger's referee on the nanoGPT CPU configuration (issue 12, item 5: goal <= 50 ms for the
// largest operator move). The GPT of 4 layers, 4 heads, width 128, context 64, batch 12 and a
// vocabulary of 65 (nanoGPT's shakespeare_char shapes, on tests/support's synthetic 65-symbol
// Text65Dataset) is described as the ledger sees it (pinpoint descriptors); every block of every
// operator output, and every box the chain bisection can end at under the 1 MiB payload's budget,
// is priced from the descriptors alone (contracts/ruling.h). Per operator kind, the box with the
// most work (the most bytes on a tie), and over all kinds the box with the most evidence bytes,
// are then ruled by the real referee (contracts::RefereeTile) on an honest party's evidence
// (verifier::PinpointResponder::TileEvidence) against a game record descended to that box, and the
// ruling is checked against the honest value.
//
// Usage: referee_bench [--cpu N] [--repeats R]
// The process pins itself to CPU N (default 0) with sched_setaffinity; each ruling is timed R
// times (default 9) and the median is reported beside the minimum.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "polnode/consensus/pinpoint.h"
#include "polnode/consensus/tx_envelope.h"
#include "polnode/contracts/referee.h"
#include "polnode/contracts/ruling.h"
#include "polnode/kernels/backend.h"
#include "polnode/solver/pinpoint_graph.h"
#include "polnode/solver/task_steps.h"
#include "polnode/testing/tiny_gpt.h"
#include "polnode/verifier/pinpoint.h"

namespace {

namespace contracts = polnode::contracts;
namespace kernels = polnode::kernels;
namespace proto = polnode::proto;
namespace solver = polnode::solver;
namespace verifier = polnode::verifier;
using polnode::Result;
using Clock = std::chrono::steady_clock;

struct Options {
  int cpu = 0;
  int repeats = 9;
};

bool ParseArgs(int argc, char** argv, Options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--cpu") {
      o.cpu = std::atoi(argv[i + 1]);
    } else if (flag == "--repeats") {
      o.repeats = std::atoi(argv[i + 1]);
    } else {
      return false;
    }
  }
  return argc % 2 == 1 && o.repeats > 0 && o.cpu >= 0;
}

bool PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof set, &set) == 0;
}

// nanoGPT's CPU configuration on the 65-symbol text, one step: the tests' GPT task (AdamW with
// weight decay) at nanoGPT's batch and learning rate.
solver::TaskSpec NanoGptTask(const solver::ImageDataset& data) {
  solver::TaskSpec t = solver::testing::TinyGptTask(data);
  t.model = solver::testing::kNanoGptCpuSpec;
  t.optimizer.lr = 1e-3f;
  t.batch = 12;
  t.steps = 1;
  t.checkpoint_interval = 1;
  t.segments_per_check = 1;
  return t;
}

// One box of one operator output, with its cost.
struct Candidate {
  int node = -1;
  int output = 0;
  contracts::TileBox box;
  contracts::RulingCost cost;
};

// The game record the referee reads, descended to `box` of leaf `leaf` of step 0: the step tree's
// transcript (both parties' children equal, as after an honest descent), the node's descriptor.
proto::DisputeGame GameAt(const polnode::consensus::GameTree& tree, std::uint64_t leaf,
                          const proto::PinpointDescriptor& descriptor, int output, const contracts::TileBox& box,
                          const polnode::consensus::Hash256* lo_hash) {
  proto::DisputeGame game;
  game.set_phase(proto::GAME_REFEREE);
  game.set_first_step(0);
  game.set_lo(0);
  game.set_hi(1);
  game.set_depth(tree.depth());
  game.set_leaf(leaf);
  for (std::uint32_t level = tree.depth(); level > 0; --level) {
    const std::uint64_t index = leaf >> level;
    const auto left = *tree.Node(level - 1, 2 * index);
    const auto right = *tree.Node(level - 1, 2 * index + 1);
    proto::GraphRound& round = *game.add_graph_rounds();
    round.set_challenger_left(std::string(left.begin(), left.end()));
    round.set_challenger_right(std::string(right.begin(), right.end()));
    round.set_defender_left(round.challenger_left());
    round.set_defender_right(round.challenger_right());
    round.set_went_left(((leaf >> (level - 1)) & 1) == 0);
  }
  game.set_node_descriptor(solver::DescriptorBytes(descriptor));
  game.set_output(static_cast<std::uint32_t>(output));
  game.set_tile(box.tile);
  game.set_chain_lo(box.lo);
  game.set_chain_hi(box.hi);
  if (lo_hash != nullptr) game.set_chain_lo_hash(std::string(lo_hash->begin(), lo_hash->end()));
  return game;
}

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  std::size_t evidence_bytes = 0;
  bool agrees = false;
};

// Rules on `c` with the real referee `repeats` times; checks the ruling against the honest value.
Result<Timing> Rule(verifier::PinpointResponder& responder, const polnode::consensus::GameTree& tree,
                    const solver::StepLeafLayout& layout, const std::vector<proto::PinpointDescriptor>& descriptors,
                    const Candidate& c, int repeats) {
  const std::uint64_t leaf = layout.first_output_leaf(c.node) + static_cast<std::uint64_t>(c.output);
  const auto lo = static_cast<std::int64_t>(c.box.lo), hi = static_cast<std::int64_t>(c.box.hi);
  std::optional<polnode::consensus::Hash256> lo_hash;
  if (lo > 0) {
    POLNODE_ASSIGN_OR_RETURN(lo_hash, responder.ChainStateHashAt(0, leaf, c.box.tile, lo));
  }
  POLNODE_ASSIGN_OR_RETURN(std::int64_t units, responder.ChainUnits(0, leaf));
  polnode::consensus::Hash256 want;
  if (hi == units) {
    POLNODE_ASSIGN_OR_RETURN(const polnode::consensus::TensorBlockTree* blocks, responder.OutputBlocks(0, leaf));
    POLNODE_ASSIGN_OR_RETURN(want, blocks->tree()->Node(0, c.box.tile));
  } else {
    POLNODE_ASSIGN_OR_RETURN(want, responder.ChainStateHashAt(0, leaf, c.box.tile, hi));
  }
  POLNODE_ASSIGN_OR_RETURN(proto::RefereeMove evidence, responder.TileEvidence(0, leaf, c.box.tile, lo, hi));
  const proto::DisputeGame game =
      GameAt(tree, leaf, descriptors[static_cast<std::size_t>(c.node)], c.output, c.box, lo_hash ? &*lo_hash : nullptr);
  const proto::TaskSpec spec;  // the tile ruling reads the game and the evidence alone
  Timing t;
  t.evidence_bytes = evidence.ByteSizeLong();
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    Result<polnode::consensus::Hash256> truth = contracts::RefereeTile(spec, game, evidence);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (!truth.ok()) return truth.status();
    t.agrees = *truth == want;
  }
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  t.min_ms = ms.front();
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, o)) {
    std::fprintf(stderr, "usage: referee_bench [--cpu N] [--repeats R]\n");
    return 2;
  }
  if (!PinToCpu(o.cpu)) {
    std::fprintf(stderr, "cannot pin to CPU %d\n", o.cpu);
    return 1;
  }
  Result<solver::ImageDataset> data = solver::testing::Text65Dataset();
  if (!data.ok()) {
    std::fprintf(stderr, "%s\n", data.status().ToString().c_str());
    return 1;
  }
  const solver::TaskSpec task = NanoGptTask(*data);
  Result<solver::TaskStepper> stepper = solver::TaskStepper::Create(task, *data);
  if (!stepper.ok()) {
    std::fprintf(stderr, "%s\n", stepper.status().ToString().c_str());
    return 1;
  }
  const solver::StepGraph& graph = stepper->graph();
  Result<std::vector<proto::PinpointDescriptor>> descriptors = solver::PinpointDescriptors(graph);
  if (!descriptors.ok()) {
    std::fprintf(stderr, "%s\n", descriptors.status().ToString().c_str());
    return 1;
  }
  const solver::StepLeafLayout layout(graph);
  proto::Params params;
  params.set_max_payload_bytes(polnode::consensus::kMaxPayloadBytes);
  const contracts::RulingBudget budget = contracts::RulingBudgetOf(params);

  // Every box of every block, priced from the descriptors.
  std::map<kernels::Op, Candidate> worst_work;
  Candidate worst_bytes;
  std::int64_t boxes = 0;
  for (const solver::StepNode& node : graph.nodes) {
    const proto::PinpointNode& d = (*descriptors)[static_cast<std::size_t>(node.index)].node();
    for (int out = 0; out < static_cast<int>(node.output_shapes.size()); ++out) {
      Result<kernels::TileKernel> kernel = contracts::TileKernelOf(d, static_cast<std::uint32_t>(out), 0);
      if (!kernel.ok()) {
        std::fprintf(stderr, "%s: %s\n", node.name.c_str(), kernel.status().ToString().c_str());
        return 1;
      }
      for (std::uint64_t b = 0; b < kernel->grid().block_count(); ++b) {
        for (const contracts::TileBox& box : contracts::TerminalBoxes(*kernel, d, b, budget)) {
          ++boxes;
          const Candidate c{node.index, out, box, contracts::CostOf(*kernel, d, box)};
          Candidate& w = worst_work[node.op];
          if (w.node < 0 || c.cost.work > w.cost.work || (c.cost.work == w.cost.work && c.cost.bytes > w.cost.bytes)) w = c;
          if (worst_bytes.node < 0 || c.cost.bytes > worst_bytes.cost.bytes) worst_bytes = c;
        }
      }
    }
  }

  Result<std::unique_ptr<kernels::Backend>> cpu = kernels::MakeBackend("cpu", 1);
  if (!cpu.ok()) {
    std::fprintf(stderr, "%s\n", cpu.status().ToString().c_str());
    return 1;
  }
  Result<verifier::PinpointResponder> responder =
      verifier::PinpointResponder::Create(task, *data, **cpu, stepper->Initial());
  if (!responder.ok()) {
    std::fprintf(stderr, "%s\n", responder.status().ToString().c_str());
    return 1;
  }
  Result<verifier::StepLeaves> leaves = responder->LeavesOfStep(0);
  if (!leaves.ok()) {
    std::fprintf(stderr, "%s\n", leaves.status().ToString().c_str());
    return 1;
  }
  std::printf("referee_bench: %s, batch %lld, %zu operators, %lld boxes; budget %llu bytes, %llu work; CPU %d, "
              "median of %d\n",
              task.model.c_str(), static_cast<long long>(task.batch), graph.nodes.size(), static_cast<long long>(boxes),
              static_cast<unsigned long long>(budget.bytes), static_cast<unsigned long long>(budget.work), o.cpu,
              o.repeats);
  std::printf("%-24s %-28s %6s %14s %10s %10s %10s %10s\n", "operator", "node (output)", "block", "units", "bytes",
              "work", "median ms", "min ms");
  std::vector<std::pair<std::string, Candidate>> rows;
  for (const auto& [op, c] : worst_work) rows.emplace_back(std::string(kernels::OpName(op)), c);
  rows.emplace_back("(most evidence bytes)", worst_bytes);
  double slowest = 0;
  bool all_agree = true;
  for (const auto& [label, c] : rows) {
    Result<Timing> t = Rule(*responder, leaves->tree, layout, *descriptors, c, o.repeats);
    const solver::StepNode& node = graph.nodes[static_cast<std::size_t>(c.node)];
    if (!t.ok()) {
      std::fprintf(stderr, "%s: %s\n", node.name.c_str(), t.status().ToString().c_str());
      return 1;
    }
    all_agree = all_agree && t->agrees;
    slowest = std::max(slowest, t->median_ms);
    const std::string where = node.name + " (" + std::to_string(c.output) + ")";
    const std::string units = "[" + std::to_string(c.box.lo) + ", " + std::to_string(c.box.hi) + ")";
    std::printf("%-24s %-28s %6llu %14s %10zu %10llu %10.2f %10.2f%s\n", label.c_str(), where.c_str(),
                static_cast<unsigned long long>(c.box.tile), units.c_str(), t->evidence_bytes,
                static_cast<unsigned long long>(c.cost.work), t->median_ms, t->min_ms,
                t->agrees ? "" : "  RULING DIFFERS FROM THE HONEST VALUE");
  }
  std::printf("slowest ruling (median): %.2f ms (goal <= 50 ms); every ruling %s the honest value\n", slowest,
              all_agree ? "matches" : "does NOT match");
  return all_agree ? 0 : 1;
}
