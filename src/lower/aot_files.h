// The files compile_aot writes next to Halide's library and header: the weights file,
// its C99 loader and the README of the output folder.
#pragma once

#include <Halide.h>

#include <string>
#include <vector>

#include "lower/aot.h"

namespace kiln {

// Layout of <name>.weights, in host byte order: the magic "KILNWTS1", a uint64 count,
// count uint64 byte sizes, then each tensor's dense row-major data starting at an offset
// that is a multiple of 64 (zero padding between).
void write_weights_file(const std::string& path, const std::vector<Tensor>& weights);
// <name>_weights.h: <name>_weights_load / _free / <name>_run, static C99 functions.
std::string weights_header_text(const std::string& name, const std::vector<AotArgument>& args);
std::string aot_readme_text(const std::string& name, const Halide::Target& target,
                            const AotOptions& options, const AotArtifacts& a);
// The parameter names of `name` in the C header Halide wrote (it renames clashing Funcs,
// so they are read back rather than predicted).
std::vector<std::string> c_parameter_names(const std::string& header_path, const std::string& name);
void write_text_file(const std::string& path, const std::string& text);

}  // namespace kiln
