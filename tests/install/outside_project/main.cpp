// Uses an installed kiln: a model of kiln::Tensor ops run eagerly and through
// kiln::compile, checked against each other.
#include <cstdio>

#include "kiln.h"

using namespace kiln;

Tensor model(const Tensor& x, const Tensor& w) { return softmax(relu(matmul(x, w)) * 2.0 + sin(x), -1); }

int main() {
  Tensor x = rand({8, 16}, 1, -1.0, 1.0);
  Tensor w = randn({16, 16}, 2);
  Tensor eager = model(x, w);
  auto compiled = compile(model);
  Tensor out = compiled(x, w);
  const bool ok = allclose(out, eager, 1e-5, 1e-6);
  std::printf("outside_project: %s (max abs diff %g)\n", ok ? "OK" : "MISMATCH", max_abs_diff(out, eager));
  return ok ? 0 : 1;
}
