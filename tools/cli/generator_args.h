// Command-line arguments shared by the commands that take one kernel-library generator
// or one registered model (`kiln autoschedule`, `kiln tune`): the generator with its
// parameters, written as in kiln_add_kernel_library ("unary:op=gelu:dtype=f16"), or the
// model, and a target.
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

#include "kernel_spec.h"
#include "lower/kiln_schedule.h"
#include "models/models.h"

namespace kiln::cli {

struct GeneratorArg {
  std::string name;  // as given: "unary" or "kiln_unary"
  kernels::Params params;
};

// "unary:op=gelu:dtype=f16" -> {unary, {op: gelu, dtype: f16}}. Malformed parameters are
// user errors naming `command`; the name and values are checked by make_spec.
GeneratorArg parse_generator_arg(const std::string& arg, const std::string& command);
// "host" (this machine's CPU) or a Halide target string; anything else is a user error.
Halide::Target parse_target(const std::string& s, const std::string& command);

// What `kiln autoschedule` and `kiln tune` work on: one generator (with its parameters) or
// one model, from the command line's positional arguments and --model.
struct GeneratorOrModel {
  GeneratorArg generator;
  std::string model;
};
// User errors name `command` and say what it takes (`usage`): none given, several, or a
// name that is neither a generator nor a model.
GeneratorOrModel generator_or_model(const std::vector<std::string>& positional, const std::string& model_option,
                                    const std::string& command, const std::string& usage);

// A user error where `name` ("unary", "kiln_unary") is neither a generator nor a model:
// both lists, so the message says what would be right.
void check_generator_or_model(const std::string& name, const std::string& command);

// Whether a bare name means a registered model (models/): one that is not also a
// generator's name ("seed" is both, and means the generator; `--model seed`, the model).
bool is_model_name(const std::string& name);

// A registered model's forward pass as kiln::compile builds it (and `kiln aot` exports
// it): traced on its seeded example inputs, with the sizes the Kiln scheduler plans for.
struct ModelPipeline {
  models::Model model;
  Graph graph;
  SizeEstimates sizes;
};
ModelPipeline model_pipeline(const std::string& name);  // an unknown name lists the models

}  // namespace kiln::cli
