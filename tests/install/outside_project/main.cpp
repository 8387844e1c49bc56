// Uses an installed kiln: a model of kiln::Tensor ops, and a registered model of
// kiln::models, run eagerly and through kiln::compile, checked against each other; and the kernel libraries this project built
// with kiln_add_kernel_library (outside_kernels_*, outside_kiln_*), checked against
// kiln's eager ops.
#include <cstdio>

#include "kiln.h"
#include "models/models.h"
#include "outside_kernels_matmul.h"
#include "outside_kernels_softmax.h"
#include "outside_kiln_softmax.h"
#include "outside_mine_outside_gelu_mul.h"
#include "outside_mine_outside_gelu_mul_f16.h"
#include "outside_mine_outside_gelu_mul_f16.function_info.h"
#include "outside_mine_kiln_outside_gelu_mul.h"

using namespace kiln;

// The library documents each kernel's signature: names, kinds, ranks and types.
constexpr auto kGeluMulF16 = outside_mine_outside_gelu_mul_f16_argument_info();
static_assert(kGeluMulF16.size() == 3 && kGeluMulF16[0].dimensions == 2 && kGeluMulF16[2].kind ==
              ::HalideFunctionInfo::OutputBuffer && kGeluMulF16[0].type.bits == 16,
              "outside_gelu_mul:dtype=f16 takes two 2-D f16 buffers and writes one");

Tensor model(const Tensor& x, const Tensor& w) { return softmax(relu(matmul(x, w)) * 2.0 + sin(x), -1); }

// Prints one comparison; false on a mismatch or a kernel error.
bool check(const char* name, int rc, const Tensor& got, const Tensor& expected, double rtol, double atol) {
  if (rc != 0) {
    std::printf("outside_project: %s: the kernel returned %d\n", name, rc);
    return false;
  }
  const bool ok = allclose(got, expected, rtol, atol);
  std::printf("outside_project: %s: %s (max abs diff %g)\n", name, ok ? "OK" : "MISMATCH",
              max_abs_diff(got, expected));
  return ok;
}

int main() {
  bool ok = true;

  Tensor x = rand({8, 16}, 1, -1.0, 1.0);
  Tensor w = randn({16, 16}, 2);
  Tensor eager = model(x, w);
  auto compiled = compile(model);
  ok &= check("compile", 0, compiled(x, w), eager, 1e-5, 1e-6);

  // Odd sizes, so the manual schedules' tiles and vectors have tails.
  Tensor s = randn({37, 203}, 3);
  Tensor s_expected = softmax(s, -1);
  Tensor s_out = zeros(s_expected.shape(), s_expected.dtype());
  int rc = outside_kernels_softmax(s.buffer().raw_buffer(), s_out.buffer().raw_buffer());
  ok &= check("outside_kernels_softmax", rc, s_out, s_expected, 1e-4, 1e-5);

  Tensor s_kiln = zeros(s_expected.shape(), s_expected.dtype());
  rc = outside_kiln_softmax(s.buffer().raw_buffer(), s_kiln.buffer().raw_buffer());
  ok &= check("outside_kiln_softmax", rc, s_kiln, s_expected, 1e-4, 1e-5);

  Tensor a = randn({67, 45}, 4), b = randn({45, 59}, 5);
  Tensor m_expected = matmul(a, b);
  Tensor m_out = zeros(m_expected.shape(), m_expected.dtype());
  rc = outside_kernels_matmul(a.buffer().raw_buffer(), b.buffer().raw_buffer(), m_out.buffer().raw_buffer());
  ok &= check("outside_kernels_matmul", rc, m_out, m_expected, 1e-4, 1e-5);

  // This project's own generator, against kiln's eager ops: hand-scheduled (f32, f16)
  // and by Kiln.
  Tensor ga = randn({33, 70}, 6), gb = randn({33, 70}, 7);
  Tensor g_expected = gelu(ga) * gb;
  Tensor g_out = zeros(g_expected.shape(), g_expected.dtype());
  rc = outside_mine_outside_gelu_mul(ga.buffer().raw_buffer(), gb.buffer().raw_buffer(), g_out.buffer().raw_buffer());
  ok &= check("outside_mine_outside_gelu_mul", rc, g_out, g_expected, 1e-5, 1e-6);
  Tensor g_kiln = zeros(g_expected.shape(), g_expected.dtype());
  rc = outside_mine_kiln_outside_gelu_mul(ga.buffer().raw_buffer(), gb.buffer().raw_buffer(), g_kiln.buffer().raw_buffer());
  ok &= check("outside_mine_kiln_outside_gelu_mul", rc, g_kiln, g_expected, 1e-5, 1e-6);
  Tensor ha = cast(ga, DType::F16), hb = cast(gb, DType::F16);
  Tensor h_expected = gelu(ha) * hb;
  Tensor h_out = zeros(h_expected.shape(), DType::F16);
  rc = outside_mine_outside_gelu_mul_f16(ha.buffer().raw_buffer(), hb.buffer().raw_buffer(), h_out.buffer().raw_buffer());
  ok &= check("outside_mine_outside_gelu_mul_f16", rc, cast(h_out, DType::F32), cast(h_expected, DType::F32), 1e-2, 1e-2);

  // A registered model (kiln::models), eager against compiled.
  models::Model mlp = models::make_model("mlp");
  const std::vector<Tensor> mlp_eager = mlp.forward(mlp.inputs);
  const std::vector<Tensor> mlp_compiled = compile(mlp.forward)(mlp.inputs);
  ok &= check("models::mlp", 0, mlp_compiled[0], mlp_eager[0], 1e-4, 1e-5);

  std::printf("outside_project: %s\n", ok ? "OK" : "MISMATCH");
  return ok ? 0 : 1;
}
