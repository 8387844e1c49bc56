#include <regex>

#include "core/scoped_env.h"
#include "lower/default_schedule.h"
#include "lower/kernel.h"
#include "lower/scheduler.h"
#include "lower/target.h"
#include "ops/op_test_util.h"

using namespace kiln;
using namespace kiln::testing;

namespace {

TEST(Matmul, MatchesReferenceWithBatchBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {Shape{1, 1}, Shape{1, 1}},       {Shape{3, 5}, Shape{5, 7}},        {Shape{17, 33}, Shape{33, 9}},
      {Shape{2, 4, 6}, Shape{2, 6, 3}}, {Shape{2, 1, 4, 6}, Shape{3, 6, 5}}, {Shape{4, 6}, Shape{2, 6, 3}},
      {Shape{64, 128}, Shape{128, 96}}};
  uint64_t seed = 11;
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::I32}) {
    for (const auto& [sa, sb] : cases) {
      Tensor a = random_with_edges(sa, dt, seed++, -2, 2), b = random_with_edges(sb, dt, seed++, -2, 2);
      expect_matches_reference("matmul", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
                               {a, b}, {}, std::string(dtype_name(dt)) + sa.str() + sb.str(), kF32ReductionTolerance);
    }
  }
}

TEST(Matmul, LinearAndErrors) {
  Tensor x = rand({5, 8}, 1), w = rand({3, 8}, 2), b = rand({3}, 3);
  Tensor y = linear(x, w, b);
  Tensor ref = get_op("matmul").reference({x, transpose(w, 0, 1)}, {}, TensorMeta{DType::F32, Shape{5, 3}});
  EXPECT_TRUE(allclose(y, ref + b, 1e-5, 1e-5));
  try {
    matmul(zeros({2, 3}), zeros({4, 5}));
    FAIL();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("matmul"), std::string::npos) << m;
    EXPECT_NE(m.find("K=3"), std::string::npos) << m;
    EXPECT_NE(m.find("K=4"), std::string::npos) << m;
  }
  EXPECT_THROW(matmul(zeros({4}), zeros({3, 2})), Error);  // a vector of the wrong length
  EXPECT_THROW(matmul(zeros({2, 2, 3}), zeros({3, 3, 2})), Error);  // batch 2 vs 3
  EXPECT_THROW(linear(x, rand({8})), Error);
}

TEST(Matmul, CompiledMlpFusesAndMatchesEager) {
  Tensor x = rand({16, 32}, 1, -1, 1), w1 = rand({64, 32}, 2, -0.2, 0.2), b1 = rand({64}, 3);
  Tensor w2 = rand({10, 64}, 4, -0.2, 0.2), b2 = rand({10}, 5);
  auto mlp = [&](const Tensor& t) { return log_softmax(linear(gelu(linear(t, w1, b1)), w2, b2), -1); };
  Tensor eager = mlp(x);
  Tensor compiled = compile(mlp)(x);
  EXPECT_TRUE(allclose(compiled, eager, 1e-5, 1e-5)) << max_abs_diff(compiled, eager);
  Graph g = trace([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{mlp(in[0])}; }, {x});
  Tensor ref = interpret(g, {x}, InterpretMode::Reference)[0];
  EXPECT_TRUE(allclose(compiled, ref, 1e-4, 1e-5)) << max_abs_diff(compiled, ref);
}

// The CPU schedule packs matmul's right operand into column panels at root, reading
// through transposes and pointwise chains, and reads a transposed input as the left
// operand in place: results must not depend on which operand is a view or computed, at
// sizes that are not multiples of a panel or a register tile.
TEST(Matmul, CompiledTransposedAndComputedOperandsMatchReference) {
  Tensor a = rand({37, 29}, 21, -1, 1), b = rand({29, 45}, 22, -1, 1);
  Tensor at = transpose(a, 0, 1), bt = transpose(b, 0, 1);
  Tensor ref = get_op("matmul").reference({a, b}, {}, TensorMeta{DType::F32, Shape{37, 45}});
  const std::vector<std::pair<std::string, TensorFn>> cases = {
      {"a^T^T @ b^T^T", [](const std::vector<Tensor>& in) {
         return std::vector<Tensor>{matmul(transpose(in[0], 0, 1), transpose(in[1], 0, 1))};
       }},
      {"a @ (b*1)^T^T", [](const std::vector<Tensor>& in) {
         return std::vector<Tensor>{matmul(transpose(in[0], 0, 1), transpose(in[1] * 1.0, 0, 1))};
       }},
  };
  for (const auto& [what, fn] : cases) {
    SCOPED_TRACE(what);
    Tensor c = compile(fn)({at, bt})[0];
    EXPECT_TRUE(allclose(c, ref, 1e-5, 1e-5)) << max_abs_diff(c, ref);
  }
  // A computed right operand is packed once; a computed left operand is materialized.
  auto gelu_both = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{matmul(gelu(in[0]), gelu(in[1]))};
  };
  Tensor g = compile(gelu_both)({a, b})[0];
  Tensor gref = get_op("matmul").reference({gelu(a), gelu(b)}, {}, TensorMeta{DType::F32, Shape{37, 45}});
  EXPECT_TRUE(allclose(g, gref, 1e-5, 1e-5)) << max_abs_diff(g, gref);
  // A 2-D right operand shared by every batch of a 3-D left operand is packed once.
  Tensor x = rand({3, 7, 29}, 23, -1, 1);
  Tensor bx = compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{matmul(in[0], transpose(in[1], 0, 1))}; })({x, bt})[0];
  Tensor bref = get_op("matmul").reference({x, b}, {}, TensorMeta{DType::F32, Shape{3, 7, 45}});
  EXPECT_TRUE(allclose(bx, bref, 1e-5, 1e-5)) << max_abs_diff(bx, bref);
}

// The GPU's register-tiled matmul: edges smaller than a block and than a thread's tile,
// batches (a shared 2-D right operand and a broadcast batch), f16 inputs, and a fused
// epilogue, against the reference.
TEST(Matmul, MatchesReferenceOnTheGpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; CUDA code generation is covered without one";
  const std::vector<std::pair<Shape, Shape>> cases = {
      {Shape{1, 1}, Shape{1, 1}},         {Shape{37, 29}, Shape{29, 45}},       {Shape{130, 64}, Shape{64, 200}},
      {Shape{3, 7, 29}, Shape{29, 45}}, {Shape{2, 1, 9, 6}, Shape{3, 6, 131}}, {Shape{256, 512}, Shape{512, 128}}};
  uint64_t seed = 41;
  for (DType dt : {DType::F32, DType::F16}) {
    for (const auto& [sa, sb] : cases) {
      Tensor a = random_with_edges(sa, dt, seed++, -2, 2), b = random_with_edges(sb, dt, seed++, -2, 2);
      expect_matches_reference_on_gpu("matmul", [](const std::vector<Tensor>& in) { return matmul(in[0], in[1]); },
                                      {a, b}, {}, std::string(dtype_name(dt)) + sa.str() + sb.str(),
                                      Tolerance{1e-4, 1e-3});  // f32 sums of 512 products near 50
    }
  }
  Tensor x = rand({70, 96}, 51, -1, 1), w = rand({96, 130}, 52, -1, 1), bias = rand({130}, 53, -1, 1);
  auto mlp = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu(matmul(in[0], in[1]) + in[2])}; };
  CompileOptions o;
  o.target = "host-cuda";
  Tensor y = compile(mlp, o)({x.to(Device::cuda()), w.to(Device::cuda()), bias.to(Device::cuda())})[0].to_host();
  Tensor ref = gelu(get_op("matmul").reference({x, w}, {}, TensorMeta{DType::F32, Shape{70, 130}}) + bias);
  EXPECT_TRUE(allclose(y, ref, 1e-4, 1e-4)) << max_abs_diff(y, ref);
}

// A pointwise epilogue that several ops read is stored in place of the product (each
// register tile of it computes the matmul), and its readers (a reduction, another matmul's
// packed operand, an output) read it back; 128 columns take the tiled path, 72 the
// stored product.
TEST(Matmul, CompiledEpilogueWithSeveralReadersMatchesReference) {
  for (int64_t n : {128, 72}) {
    SCOPED_TRACE("columns " + std::to_string(n));
    Tensor a = rand({50, 40}, 31, -1, 1), b = rand({40, n}, 32, -1, 1), c = rand({n, 16}, 33, -1, 1);
    auto fn = [](const std::vector<Tensor>& in) {
      Tensor y = tanh(matmul(in[0], in[1]) * 0.5 + 1.0);
      return std::vector<Tensor>{sum(y, {0}), matmul(y, in[2]), y * 3.0};
    };
    std::vector<Tensor> got = compile(fn)({a, b, c});
    Tensor y = tanh(get_op("matmul").reference({a, b}, {}, TensorMeta{DType::F32, Shape{50, n}}) * 0.5 + 1.0);
    Tensor yc = get_op("matmul").reference({y, c}, {}, TensorMeta{DType::F32, Shape{50, 16}});
    EXPECT_TRUE(allclose(got[0], sum(y, {0}), 1e-4, 1e-4)) << max_abs_diff(got[0], sum(y, {0}));
    EXPECT_TRUE(allclose(got[1], yc, 1e-4, 1e-4)) << max_abs_diff(got[1], yc);
    EXPECT_TRUE(allclose(got[2], y * 3.0, 1e-5, 1e-5)) << max_abs_diff(got[2], y * 3.0);
  }
}

// A matmul computed per register tile of its epilogue keeps each tile's accumulator at one
// tile's constant size, so it lives on the stack (and in registers), even where the
// host's last row tile is guarded (a batch of 50 rows is not whole tiles of 6). Halide
// could not bound that size when the tasks span the batch, and every tile was a heap
// allocation: 4-5% of a gpt_block on 2 cores.
TEST(Matmul, EachRegisterTileAccumulatesOnTheStack) {
  Tensor a = rand({2, 50, 40}, 41, -1, 1), b = rand({40, 128}, 42, -1, 1), bias = rand({128}, 43);
  Graph g = trace([](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu(matmul(in[0], in[1]) + in[2])}; },
                  {a, b, bias});
  const std::regex acc_alloc(R"(allocate (matmul_acc\S*)\[([^\]]*)\])");
  const std::regex constant_size(R"(float32( \* \d+)+)");
  for (const std::string scheduler : {"rules", "Kiln"}) {
    SCOPED_TRACE(scheduler);
    Kernel kernel(g, parse_target("host"), make_schedule_fn(scheduler, g, {a, b, bias}));
    const std::string stmt = kernel.lowered_stmt();
    int accumulators = 0;
    for (auto it = std::sregex_iterator(stmt.begin(), stmt.end(), acc_alloc); it != std::sregex_iterator(); ++it) {
      ++accumulators;
      EXPECT_TRUE(std::regex_match((*it)[2].str(), constant_size)) << (*it)[0].str();
    }
    EXPECT_GT(accumulators, 0) << stmt;
    Tensor want = gelu(get_op("matmul").reference({a, b}, {}, TensorMeta{DType::F32, Shape{2, 50, 128}}) + bias);
    Tensor got = kernel.run({a, b, bias})[0];
    EXPECT_TRUE(allclose(got, want, 1e-4, 1e-5)) << max_abs_diff(got, want);
  }
}

// a @ b compiled under the rules and under Kiln: each lowered statement goes to `check`,
// and each result is checked against the reference.
// With `b_transposed`, the product is a @ b^T (b's last two dims swapped: a view).
void check_compiled_matmul(const Tensor& a, const Tensor& b, const std::function<void(const std::string&)>& check,
                           bool b_transposed = false) {
  Graph g = trace(
      [b_transposed](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{matmul(in[0], b_transposed ? transpose(in[1], -1, -2) : in[1])};
      },
      {a, b});
  const Tensor want = interpret(g, {a, b}, InterpretMode::Reference)[0];
  for (const std::string scheduler : {"rules", "Kiln"}) {
    SCOPED_TRACE(scheduler);
    Kernel kernel(g, parse_target("host"), make_schedule_fn(scheduler, g, {a, b}));
    check(scheduler + "\n" + kernel.lowered_stmt());
    const Tensor got = kernel.run({a, b})[0];
    EXPECT_TRUE(allclose(got, want, 1e-4, 1e-5)) << max_abs_diff(got, want);
  }
}

// A product narrower than the register tile gets a tile no wider than its columns, with
// the rows that fill the same registers: attention's 32 head dims in a 64-column tile
// computed every product twice (gpt_block under Kiln: 0.373 to 0.355 ms on 2 cores).
TEST(Matmul, ANarrowProductsTileIsNoWiderThanItsColumns) {
  const Halide::Target avx512("x86-64-linux-avx2-avx512-avx512_skylake"), avx2("x86-64-linux-avx2");
  auto tile = [](const Halide::Target& t, int64_t columns) {
    const CpuMatmulTile c = cpu_matmul_tile(t, Halide::Float(32), columns);
    return std::make_pair(c.vectors, c.rows);
  };
  EXPECT_EQ(tile(avx512, 0), std::make_pair(4, 6));  // dynamic columns: the widest
  EXPECT_EQ(tile(avx512, 1000), std::make_pair(4, 6));
  EXPECT_EQ(tile(avx512, 64), std::make_pair(4, 6));
  EXPECT_EQ(tile(avx512, 48), std::make_pair(3, 8));
  EXPECT_EQ(tile(avx512, 32), std::make_pair(2, 12));
  EXPECT_EQ(tile(avx512, 5), std::make_pair(1, 12));
  EXPECT_EQ(tile(avx2, 64), std::make_pair(2, 6));
  EXPECT_EQ(tile(avx2, 8), std::make_pair(1, 12));

  // Compiled: the accumulator of a [.., 40, 32] product is one tile of at most 32 columns,
  // under both schedulers, and the result is right (rows are not whole tiles of 12).
  const std::regex acc_alloc(R"(allocate matmul_acc\S*\[float32 \* (\d+) \* (\d+))");
  check_compiled_matmul(rand({3, 40, 24}, 61, -1, 1), rand({3, 24, 32}, 62, -1, 1), [&](const std::string& stmt) {
    std::smatch m;
    ASSERT_TRUE(std::regex_search(stmt, m, acc_alloc)) << stmt;
    EXPECT_LE(std::stoi(m[1].str()), 32) << m[0].str();
  });
}

// The right operand's packing runs in tasks of 32 KB at least: a panel of 16 columns
// over a k of 64 is 4 KB, and 4 KB tasks cost more at the thread pool's lock than their
// copy (attention's K and V). Here 8 heads of 32 columns over k 64, b transposed (which
// Kiln packs too, to read its columns as vectors): 16 panels, 2 tasks.
// (Planned for 16 cores, where 8 heads leave cores idle: on 2 Kiln packs each head's panels
// in that head's task instead, KilnScheduler.AttentionRunsATaskPerHead...)
TEST(Matmul, PackingRunsInTasksOfThirtyTwoKilobytes) {
  kiln::testing::ScopedEnv machine("KILN_MACHINE", std::string("cores=16"));
  const std::regex pack_loop(R"(halide_do_par_for\(\(halide_task_t\)\S*matmul_b_panel\S*, 0, (\d+),)");
  check_compiled_matmul(
      rand({8, 48, 64}, 71, -1, 1), rand({8, 32, 64}, 72, -1, 1),
      [&](const std::string& stmt) {
        std::smatch m;
        ASSERT_TRUE(std::regex_search(stmt, m, pack_loop)) << stmt;
        EXPECT_EQ(m[1].str(), "2") << m[0].str();
      },
      /*b_transposed=*/true);
}

// Kiln reads an input b in place where it fits half of L2: packing it costs a pass over it
// per call (15% of the apps/ MLP on 2 cores). A larger b, or a transposed one, is packed;
// the rules always pack. Results match the reference either way.
TEST(Matmul, KilnReadsASmallInputBInPlace) {
  kiln::testing::ScopedEnv machine("KILN_MACHINE", std::string("cores=2,l2=2097152"));
  const std::regex packed(R"(allocate matmul_b_panel)");
  auto packs = [&](const std::string& stmt) { return std::regex_search(stmt, packed); };
  auto is_rules = [](const std::string& stmt) { return stmt.rfind("rules\n", 0) == 0; };
  // b: 256 x 512 floats, 512 KB.
  check_compiled_matmul(rand({64, 256}, 91, -1, 1), rand({256, 512}, 92, -1, 1), [&](const std::string& stmt) {
    EXPECT_EQ(packs(stmt), is_rules(stmt)) << stmt;
  });
  // b: 1024 x 1024 floats, 4 MB.
  check_compiled_matmul(rand({64, 1024}, 93, -1, 1), rand({1024, 1024}, 94, -1, 1), [&](const std::string& stmt) {
    EXPECT_TRUE(packs(stmt)) << stmt;
  });
  // b transposed.
  check_compiled_matmul(
      rand({64, 256}, 95, -1, 1), rand({512, 256}, 96, -1, 1),
      [&](const std::string& stmt) { EXPECT_TRUE(packs(stmt)) << stmt; }, /*b_transposed=*/true);
}

// A value stored for a contraction to read runs in parallel tasks of its rows, under the
// rules and under Kiln (which sizes the tasks): attention's probabilities,
// [1, heads, rows, columns], ran serially when the outermost dim alone was parallel.
// Kiln computes the softmax's max and sum per row of them, in the same tasks, where
// the rules give each its own parallel loop.
// (Planned for 16 cores, as above: 8 heads on 2 cores run a task each.)
TEST(Matmul, AStoredOperandRunsInTasksOfRows) {
  kiln::testing::ScopedEnv machine("KILN_MACHINE", std::string("cores=16"));
  // (The rules' tasks hold about 2^14 elements: 8 tasks of 128 rows of 128 here.)
  const Shape qkv{1, 8, 128, 16};
  Tensor q = rand(qkv, 51, -1, 1), k = rand(qkv, 52, -1, 1), v = rand(qkv, 53, -1, 1);
  auto attention = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{matmul(softmax(matmul(in[0], transpose(in[1], -1, -2)), -1), in[2])};
  };
  Graph g = trace(attention, {q, k, v});
  const Tensor want = interpret(g, {q, k, v}, InterpretMode::Reference)[0];
  const std::regex parallel_softmax(R"(par_for_softmax(_[0-9]+)?_s0_)");  // (a parallel loop of its pure stage)
  for (const std::string scheduler : {"rules", "Kiln"}) {
    SCOPED_TRACE(scheduler);
    Kernel kernel(g, parse_target("host"), make_schedule_fn(scheduler, g, {q, k, v}));
    const std::string stmt = kernel.lowered_stmt();
    EXPECT_TRUE(std::regex_search(stmt, parallel_softmax)) << stmt;
    if (scheduler == "Kiln") {
      // The parallel loop's function (Halide's closure) computes the sums.
      std::smatch task;
      ASSERT_TRUE(std::regex_search(stmt, task, std::regex(R"(internal func \S*par_for_softmax(_[0-9]+)?_s0_)")));
      const size_t begin = size_t(task.position(0)), end = stmt.find("\ninternal func", begin + 1);
      const std::string body = stmt.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
      EXPECT_NE(body.find("produce softmax_sum"), std::string::npos) << body;
      EXPECT_NE(body.find("produce softmax_max"), std::string::npos) << body;
    }
    const Tensor got = kernel.run({q, k, v})[0];
    EXPECT_TRUE(allclose(got, want, 1e-4, 1e-5)) << max_abs_diff(got, want);
  }
}

}  // namespace

namespace kiln {
namespace {

TEST(Matmul, OneDimensionalOperandsAreVectorsAsInTorch) {
  Tensor v = from_vector(std::vector<double>{1, 2, 3}, Shape({3}));
  Tensor m = from_vector(std::vector<double>{1, 0, 2, 1, 0, 3}, Shape({3, 2}));
  Tensor mt = from_vector(std::vector<double>{1, 2, 0, 0, 1, 3}, Shape({2, 3}));
  Tensor vm = matmul(v, m), mv = matmul(mt, v), dot = matmul(v, v);
  EXPECT_EQ(vm.sizes(), std::vector<int64_t>({2}));
  EXPECT_EQ(vm.to_doubles(), std::vector<double>({5, 11}));
  EXPECT_EQ(mv.sizes(), std::vector<int64_t>({2}));
  EXPECT_EQ(mv.to_doubles(), std::vector<double>({5, 11}));
  EXPECT_EQ(dot.rank(), 0);
  EXPECT_EQ(dot.item(), 14.0);
  Tensor batched = matmul(v, ones(Shape({4, 3, 2})));
  EXPECT_EQ(batched.sizes(), std::vector<int64_t>({4, 2}));
  auto f = compile([](const Tensor& a, const Tensor& b) { return matmul(a, b); });
  EXPECT_EQ(f(v, m).to_doubles(), vm.to_doubles());
  Tensor w = from_vector(std::vector<double>{1, 1, 1, 0, 0, 2}, Shape({2, 3}));
  EXPECT_EQ(linear(v, w, from_vector(std::vector<double>{10, 20}, Shape({2}))).to_doubles(), std::vector<double>({16, 26}));
  EXPECT_THROW(matmul(scalar_tensor(2.0), v), Error);
}

TEST(ShapeOps, SqueezingADimThatIsNotOneChangesNothing) {
  Tensor x = ones(Shape({2, 3}));
  EXPECT_EQ(squeeze(x, 1).sizes(), std::vector<int64_t>({2, 3}));
  EXPECT_EQ(squeeze(ones(Shape({2, 1})), 1).sizes(), std::vector<int64_t>({2}));
}

}  // namespace
}  // namespace kiln
