// Models written with kiln's public C++ API only, registered by name so every tool
// (kiln models, kiln bench, tests) can pick one: seed, mlp, gpt_block, resnet18.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln.h"

namespace kiln::models {

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
// ResNet-18 (basic blocks [2, 2, 2, 2]) in inference mode, sized for small images: a 3x3
// stem conv (CIFAR style, no max pool) and stages of width, 2, 4 and 8 x width channels
// (width 64 in the paper; small here for a 2-core CPU).
struct ResNetConfig {
  int64_t batch = 2, image = 32, channels = 3, width = 16, classes = 10;
};

Model make_seed(int64_t n = 1 << 16);
Model make_mlp(const MlpConfig& c = {});
Model make_gpt_block(const GptBlockConfig& c = {});
Model make_resnet18(const ResNetConfig& c = {});

std::vector<std::string> model_names();
// The model of that name at its default size; throws kiln::Error listing the names.
Model make_model(const std::string& name);

}  // namespace kiln::models
