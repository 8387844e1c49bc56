// Writes the AOT weights loader that `kiln aot` generates (weights_header_text,
// src/lower/aot_files.cpp) for a small made-up model "fuzzmodel" (an input, three weights
// of different dtypes and ranks, an output) into <dir>/fuzzmodel_weights.h, with a
// <dir>/fuzzmodel.h standing in for the header Halide writes. fuzz_aot_weights.c fuzzes
// that loader. Usage: kiln_fuzz_gen_weights_header <dir>
#include <cstdio>
#include <string>
#include <vector>

#include "lower/aot_files.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <output folder>\n", argv[0]);
    return 1;
  }
  using kiln::AotArgument;
  using kiln::DType;
  using kiln::Shape;
  const std::vector<AotArgument> args = {
      {AotArgument::Kind::Input, "x", "_x_buffer", {DType::F32, Shape{4, 3}}},
      {AotArgument::Kind::Weight, "w0", "_w0_buffer", {DType::F32, Shape{3, 5}}},
      {AotArgument::Kind::Weight, "w1", "_w1_buffer", {DType::I64, Shape{7}}},
      {AotArgument::Kind::Weight, "w2", "_w2_buffer", {DType::F16, Shape{2, 3, 4}}},
      {AotArgument::Kind::Output, "y", "_y_buffer", {DType::F32, Shape{4, 5}}},
  };
  const std::string dir = argv[1];
  kiln::write_text_file(dir + "/fuzzmodel_weights.h", kiln::weights_header_text("fuzzmodel", args));
  kiln::write_text_file(dir + "/fuzzmodel.h",
                        "/* Stands in for the header Halide writes for fuzzmodel (gen_weights_header.cpp). */\n"
                        "#ifndef FUZZMODEL_H\n#define FUZZMODEL_H\n#include \"HalideRuntime.h\"\n"
                        "int fuzzmodel(struct halide_buffer_t *_x_buffer, struct halide_buffer_t *_w0_buffer,\n"
                        "              struct halide_buffer_t *_w1_buffer, struct halide_buffer_t *_w2_buffer,\n"
                        "              struct halide_buffer_t *_y_buffer);\n#endif\n");
  return 0;
}
