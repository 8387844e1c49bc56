// Models written with kiln's public C++ API only, registered by name so every tool
// (kiln models, kiln bench, tests) can pick one: seed, mlp, gpt_block.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln.h"

namespace kiln::apps {

struct Model {
  std::string name;
  std::string description;
  // Seeded example inputs of the configured size.
  std::vector<Tensor> inputs;
  // The forward pass; weights (seeded) are captured, so they become graph constants.
  std::function<std::vector<Tensor>(const std::vector<Tensor>&)> forward;
};

struct MlpConfig {
  int64_t batch = 64, in = 256, hidden = 512, classes = 10;
};
struct GptBlockConfig {
  int64_t batch = 2, seq = 64, dim = 128, heads = 4;
};

Model make_seed(int64_t n = 1 << 16);
Model make_mlp(const MlpConfig& c = {});
Model make_gpt_block(const GptBlockConfig& c = {});

std::vector<std::string> model_names();
// The model of that name at its default size; throws kiln::Error listing the names.
Model make_model(const std::string& name);

}  // namespace kiln::apps
