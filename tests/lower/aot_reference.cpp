// Writes each model's seeded example input and its eager output, for aot_c_test.c to
// compare the libraries `kiln aot` exported against. Usage: kiln_aot_reference DIR MODEL...
// File <DIR>/<MODEL>.ref: for the input, then the output, an int32 rank, rank int64 sizes
// (outermost first) and the f32 data.
#include <cstdio>
#include <fstream>

#include "kiln.h"
#include "models/models.h"

namespace {

void write_tensor(std::ofstream& f, const kiln::Tensor& t) {
  if (t.dtype() != kiln::DType::F32) kiln::user_error("aot_reference: only f32 tensors, got ", t.meta().str());
  kiln::Tensor h = t.to_host().clone();  // dense
  int32_t rank = h.rank();
  f.write(reinterpret_cast<const char*>(&rank), sizeof rank);
  for (int64_t s : h.sizes()) f.write(reinterpret_cast<const char*>(&s), sizeof s);
  f.write(static_cast<const char*>(h.data()), std::streamsize(h.numel() * sizeof(float)));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: kiln_aot_reference DIR MODEL...\n");
    return 2;
  }
  try {
    for (int i = 2; i < argc; ++i) {
      kiln::models::Model m = kiln::models::make_model(argv[i]);
      std::vector<kiln::Tensor> out = m.forward(m.inputs);
      std::ofstream f(std::string(argv[1]) + "/" + argv[i] + ".ref", std::ios::binary);
      write_tensor(f, m.inputs.at(0));
      write_tensor(f, out.at(0));
      if (!f.good()) kiln::user_error("aot_reference: cannot write into ", argv[1]);
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln_aot_reference: %s\n", e.what());
    return 1;
  }
  return 0;
}
