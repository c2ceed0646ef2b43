// Target gpt_spec: ParseModelSpec on "gpt:" followed by arbitrary bytes (a task's model text comes
// from a hostile submitter). Properties: never crashes or over-allocates; failures are
// kInvalidArgument; an accepted spec has heads dividing width and sizes within the limits, and
// WithGptVocab gives it 2 + 10 * layers + 3 parameters of the announced shapes.
#include <string>
#include <string_view>
#include <vector>

#include "fuzz.h"
#include "polnode/solver/model_spec.h"

namespace polnode::fuzz {
namespace {

void Run(FuzzInput input) {
  const std::string text = "gpt:" + std::string(reinterpret_cast<const char*>(input.data()), input.size());
  Result<solver::ModelSpec> m = solver::ParseModelSpec(text);
  if (!m.ok()) {
    POLNODE_FUZZ_CHECK(m.status().code() == StatusCode::kInvalidArgument,
                       "ParseModelSpec failed with a code other than kInvalidArgument");
    return;
  }
  POLNODE_FUZZ_CHECK(m->gpt.has_value(), "a gpt: spec parsed without its GPT sizes");
  const solver::GptConfig& g = *m->gpt;
  POLNODE_FUZZ_CHECK(g.layers >= 1 && g.heads >= 1 && g.width >= 1 && g.context >= 1,
                     "an accepted spec has a size below 1");
  POLNODE_FUZZ_CHECK(g.width % g.heads == 0, "an accepted spec has heads that do not divide width");
  POLNODE_FUZZ_CHECK(g.heads * g.context * g.context <= (std::int64_t{1} << 24),
                     "an accepted spec's attention scores exceed the activation limit");
  // Parameters only for small models: a fuzzer run must not allocate gigabytes.
  if (g.layers * 16 * g.width * g.width > (std::int64_t{1} << 22)) return;
  Result<solver::ModelSpec> fitted = solver::WithGptVocab(*m, 3);
  if (g.vocab != 0 && g.vocab < 3) {
    POLNODE_FUZZ_CHECK(!fitted.ok(), "a vocab smaller than the data's was accepted");
    return;
  }
  POLNODE_FUZZ_CHECK(fitted.ok(), "an accepted spec does not take a vocabulary of 3");
  POLNODE_FUZZ_CHECK(fitted->params.size() == static_cast<std::size_t>(2 + 10 * g.layers + 3),
                     "a fitted GPT has the wrong number of parameters");
  POLNODE_FUZZ_CHECK(fitted->params[1].shape == kernels::Shape{g.context * g.width},
                     "wpe does not have context * width elements");
}

std::vector<Seed> Seeds() {
  const auto seed = [](std::string name, std::string_view body) {
    return Seed{std::move(name), std::vector<std::uint8_t>(body.begin(), body.end())};
  };
  return {
      seed("valid-small", "layers=1,heads=2,width=16,context=8"),
      seed("valid-vocab", "context=64,width=128,heads=4,layers=4,vocab=65"),
      seed("heads-not-dividing", "layers=1,heads=3,width=16,context=8"),
      seed("repeated-key", "layers=1,layers=1,heads=2,width=16,context=8"),
      seed("zero", "layers=0,heads=2,width=16,context=8"),
      seed("empty", ""),
  };
}

}  // namespace

POLNODE_REGISTER_FUZZ_TARGET(gpt_spec, Run, Seeds);

}  // namespace polnode::fuzz
