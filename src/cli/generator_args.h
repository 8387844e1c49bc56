// Command-line arguments shared by the commands that take one kernel-library generator
// (`kiln autoschedule`, `kiln tune`): the generator with its parameters, written as in
// kiln_add_kernel_library ("unary:op=gelu:dtype=f16"), and a CPU target.
#pragma once

#include <Halide.h>

#include <string>

#include "kernel_spec.h"

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

}  // namespace kiln::cli
