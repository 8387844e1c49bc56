// CompileOptions::scheduler = "Kiln": kiln's autoscheduler schedules compiled graphs. Its
// results must equal the default rules' and eager mode's on every registered model and on
// the ops whose loop nests it changes most (contractions with epilogues, row reductions,
// convolution), including sizes other than those it planned for.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <regex>

#include "core/log_capture.h"
#include "core/scoped_env.h"
#include "lower/kernel.h"
#include "lower/scheduler.h"
#include "lower/target.h"
#include "kiln.h"
#include "models/models.h"

using namespace kiln;

namespace {

using kiln::testing::logged;
using kiln::testing::ScopedEnv;

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

CompileOptions with_scheduler(const std::string& scheduler) {
  CompileOptions o;
  o.scheduler = scheduler;
  return o;
}

// Compiles `fn` with each scheduler and checks every output of the Kiln-scheduled
// version against the default rules and against eager mode. The log check makes sure the
// autoscheduler did schedule it (a silently ignored option would pass the comparisons).
// `schedule_log`, when given, gets the Kiln compile's schedule log.
// What Kiln's compile must agree with: eager, and the rules' compile.
struct References {
  std::vector<Tensor> eager, rules;
};
References references_of(const TensorFn& fn, const std::vector<Tensor>& inputs) {
  return {fn(inputs), compile(fn, with_scheduler("rules"))(inputs)};
}

void expect_kiln_matches(const TensorFn& fn, const std::vector<Tensor>& inputs, const References& want,
                         double rtol = 1e-4, double atol = 1e-5, std::string* schedule_log = nullptr) {
  std::vector<Tensor> with_kiln;
  const std::string log = logged("schedule", [&] { with_kiln = compile(fn, with_scheduler("Kiln"))(inputs); });
  EXPECT_TRUE(mentions(log, "Kiln: predicted")) << log;
  if (schedule_log) *schedule_log += log;
  ASSERT_EQ(with_kiln.size(), want.eager.size());
  ASSERT_EQ(want.rules.size(), want.eager.size());
  for (size_t k = 0; k < want.eager.size(); ++k) {
    SCOPED_TRACE("output " + std::to_string(k));
    ASSERT_EQ(with_kiln[k].meta(), want.eager[k].meta());
    EXPECT_TRUE(allclose(with_kiln[k], want.rules[k], rtol, atol)) << max_abs_diff(with_kiln[k], want.rules[k]);
    EXPECT_TRUE(allclose(with_kiln[k], want.eager[k], rtol, atol)) << max_abs_diff(with_kiln[k], want.eager[k]);
  }
}

void expect_kiln_matches(const TensorFn& fn, const std::vector<Tensor>& inputs, double rtol = 1e-4,
                         double atol = 1e-5, std::string* schedule_log = nullptr) {
  expect_kiln_matches(fn, inputs, references_of(fn, inputs), rtol, atol, schedule_log);
}

// Small configurations of the registered models, so the test runs in seconds.
std::map<std::string, models::Model> small_models() {
  std::map<std::string, models::Model> m;
  m.emplace("seed", models::make_seed(1000));
  m.emplace("mlp", models::make_mlp({8, 32, 48, 5}));
  m.emplace("gpt_block", models::make_gpt_block({2, 16, 32, 4}));
  m.emplace("resnet18", models::make_resnet18({2, 16, 3, 8, 5}));
  return m;
}

TEST(KilnScheduler, EveryRegisteredModelMatchesDefaultAndEager) {
  const std::map<std::string, models::Model> models = small_models();
  for (const std::string& name : models::model_names()) {
    SCOPED_TRACE(name);
    auto it = models.find(name);
    ASSERT_NE(it, models.end()) << "model " << name << " is registered but has no small configuration here";
    expect_kiln_matches(it->second.forward, it->second.inputs);
  }
}

// The cost model's choices change with the machine it plans for. Whatever machine that is,
// the schedule must compile and match here. A 16-core plan once stored the bias add
// between a matmul and the gelu whose tiles compute it, and Halide rejected it; hidden
// layers of 128 columns (whole register tiles) make such epilogue hosts.
TEST(KilnScheduler, EveryRegisteredModelMatchesWhenPlannedForOtherMachines) {
  std::map<std::string, models::Model> models = small_models();
  models.erase("mlp");
  models.erase("gpt_block");
  models.emplace("mlp", models::make_mlp({16, 64, 128, 5}));
  models.emplace("gpt_block", models::make_gpt_block({2, 16, 64, 4}));
  // The references are the same on every machine: computed once.
  std::map<std::string, References> want;
  for (const auto& [name, m] : models) want.emplace(name, references_of(m.forward, m.inputs));
  // (A 1-core plan is the simplest, and the 2-core VM's own is checked above.)
  for (const char* machine : {"cores=16", "cores=64,vector_bits=256,lock_us=1"}) {
    SCOPED_TRACE(machine);
    ScopedEnv env("KILN_MACHINE", std::string(machine));
    for (const auto& [name, m] : models) {
      SCOPED_TRACE(name);
      expect_kiln_matches(m.forward, m.inputs, want.at(name));
    }
  }
}

// A Func stored at root is a stage of its own, with tasks the thread pool hands out; one
// inlined adds its arithmetic to tasks that run anyway. On 16 and 64 cores, where handing
// out tasks costs most, the seed's cheap pointwise Funcs stay inlined.
TEST(KilnScheduler, CheapPointwiseFuncsStayInlinedOnManyCores) {
  const models::Model seed = models::make_seed(1 << 20);
  for (const char* machine : {"cores=16", "cores=64,lock_us=1"}) {
    SCOPED_TRACE(machine);
    ScopedEnv env("KILN_MACHINE", std::string(machine));
    const std::string log = logged("fusion", [&] { compile(seed.forward, with_scheduler("Kiln"))(seed.inputs); });
    EXPECT_TRUE(mentions(log, ": inlined (1 evaluations per point")) << log;
    EXPECT_FALSE(mentions(log, "computed at root")) << log;
  }
}

TEST(KilnScheduler, MatmulBiasGeluMatches) {
  // Odd sizes: register tiles do not divide them, so edge tiles are exercised.
  expect_kiln_matches([](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu(matmul(in[0], in[1]) + in[2])}; },
                      {randn({37, 53}, 1), randn({53, 45}, 2), randn({45}, 3)});
  expect_kiln_matches([](const std::vector<Tensor>& in) { return std::vector<Tensor>{gelu(matmul(in[0], in[1]) + in[2], "tanh")}; },
                      {randn({3, 64, 96}, 4), randn({96, 128}, 5), randn({128}, 6)});
}

TEST(KilnScheduler, SoftmaxMatches) {
  expect_kiln_matches([](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; },
                      {randn({33, 70}, 7)});
  expect_kiln_matches([](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], 0)}; },
                      {randn({65, 17}, 8)});
}

TEST(KilnScheduler, LayerNormMatches) {
  expect_kiln_matches(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{layer_norm(in[0], {96}, in[1], in[2])}; },
      {randn({19, 96}, 9), randn({96}, 10), randn({96}, 11)});
}

TEST(KilnScheduler, Conv2dMatches) {
  expect_kiln_matches(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{relu(conv2d(in[0], in[1], in[2], {1}, {1}))}; },
      {randn({2, 5, 11, 13}, 12), randn({7, 5, 3, 3}, 13), randn({7}, 14)});
  expect_kiln_matches(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv2d(in[0], in[1], {}, {2}, {0})}; },
      {randn({1, 16, 17, 17}, 15), randn({32, 16, 3, 3}, 16)});
}

// Rows narrower than the rules' two vectors of columns (a late resnet stage: 4 and 8
// columns): Kiln sizes the register tiles of the rules' loops itself, one vector of
// columns x more channels, rounded up past both edges (O = 20 is no multiple of the
// channels), and the results stay the rules' and eager mode's.
TEST(KilnScheduler, NarrowConvolutionsGetTheirOwnRegisterTiles) {
  std::string log;
  expect_kiln_matches(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{relu(conv2d(in[0], in[1], in[2], {1}, {1}))}; },
      {randn({2, 24, 8, 8}, 17), randn({20, 24, 3, 3}, 18), randn({20}, 19)}, 1e-4, 1e-5, &log);
  expect_kiln_matches(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{conv2d(in[0], in[1], {}, {2}, {1})}; },
      {randn({1, 32, 8, 8}, 20), randn({48, 32, 3, 3}, 21)}, 1e-4, 1e-5, &log);
  const int vw = Halide::get_host_target().natural_vector_size<float>();
  EXPECT_TRUE(mentions(log, "(8 columns, 20 channels): register tiles of " + std::to_string(vw) + " columns x ")) << log;
  EXPECT_TRUE(mentions(log, "(4 columns, 48 channels): register tiles of " + std::to_string(vw) + " columns x ")) << log;
}

// A small batch (64 rows: 11 row tiles) makes two unequal tasks in the rules' bands of 8
// row tiles: Kiln divides the tiles into tasks itself, and the results stay the rules'
// and eager mode's (ragged rows and columns, a gelu epilogue hosting the tiles).
TEST(KilnScheduler, SmallBatchMatmulsGetTheirOwnTasks) {
  std::string log;
  expect_kiln_matches(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{matmul(gelu(matmul(in[0], in[1]) + in[2]), in[3])};
      },
      {randn({64, 48}, 22), rand({48, 256}, 23, -0.2, 0.2), randn({256}, 24), rand({256, 72}, 25, -0.1, 0.1)}, 1e-4,
      1e-5, &log);
  EXPECT_TRUE(mentions(log, "(64 x 256, k 48, batch 1): tasks of ")) << log;
  EXPECT_TRUE(mentions(log, "(the rules' 8 row tiles x all column tiles")) << log;
}

// Where the batch fills the cores, a batched matmul runs a task per batch element and
// computes the batched values it reads in it (src/lower/batch_fusion.h). Attention's 8
// heads on 2 cores: the probabilities (with their row max and sum), the scores and the
// packed K^T (V, an input, is read in place) run in the output's 8 tasks, one parallel
// loop in all (compiled attention on the 2-core Xeon: 0.415 to 0.326 ms). On 16 cores 8
// heads would leave half of them idle, and each stage keeps its own loop.
TEST(KilnScheduler, AttentionRunsATaskPerHeadWhereTheHeadsFillTheCores) {
  const Shape qkv{1, 8, 64, 32};
  Tensor q = rand(qkv, 81, -1, 1), k = rand(qkv, 82, -1, 1), v = rand(qkv, 83, -1, 1);
  auto attention = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{matmul(softmax(matmul(in[0], transpose(in[1], -1, -2)) * 0.25, -1), in[2])};
  };
  Graph g = trace(attention, {q, k, v});
  const Tensor want = interpret(g, {q, k, v}, InterpretMode::Reference)[0];
  const std::regex par_for(R"(halide_do_par_for\(\(halide_task_t\)\S*, 0, (\d+),)");
  for (const char* machine : {"cores=2", "cores=16"}) {
    SCOPED_TRACE(machine);
    ScopedEnv env("KILN_MACHINE", std::string(machine));
    std::string stmt;
    Tensor got;
    const std::string log = logged("schedule", [&] {
      Kernel kernel(g, parse_target("host"), make_schedule_fn("Kiln", g, {q, k, v}));
      stmt = kernel.lowered_stmt();
      got = kernel.run({q, k, v})[0];
    });
    std::vector<std::string> tasks;
    for (auto it = std::sregex_iterator(stmt.begin(), stmt.end(), par_for); it != std::sregex_iterator(); ++it) {
      tasks.push_back((*it)[1].str());
    }
    if (std::string(machine) == "cores=2") {
      EXPECT_EQ(tasks, std::vector<std::string>{"8"}) << stmt;
      // (Func names carry a counter when other graphs were lowered first: output_0$421.)
      EXPECT_TRUE(mentions(log, "per batch element, in the tasks of output_0")) << log;
      EXPECT_TRUE(mentions(log, "softmax")) << log;
    } else {
      EXPECT_GE(tasks.size(), 4u) << stmt;
      EXPECT_FALSE(mentions(log, "per batch element, in the tasks of")) << log;
    }
    EXPECT_TRUE(allclose(got, want, 1e-4, 1e-5)) << max_abs_diff(got, want);
  }
}

TEST(KilnScheduler, DynamicDimsServeSizesItDidNotPlanFor) {
  // Planned for the first call's sizes; the schedule must stay correct for smaller ones
  // (below one register tile) and larger ones.
  CompileOptions o = with_scheduler("Kiln");
  o.dynamic = true;
  auto fn = [](const Tensor& a, const Tensor& b) { return softmax(matmul(a, b), -1); };
  auto f = compile(fn, o);
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{48, 32, 64}, {3, 5, 7}, {100, 33, 130}}) {
    SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n));
    Tensor a = randn({m, k}, uint64_t(m)), b = randn({k, n}, uint64_t(n));
    Tensor c = f(a, b), e = fn(a, b);
    EXPECT_TRUE(allclose(c, e, 1e-4, 1e-5)) << max_abs_diff(c, e);
  }
  EXPECT_EQ(f.num_compilations(), 1);
}

TEST(KilnScheduler, MatmulsOfADynamicDepthKeepTheRulesSizes) {
  // Static outputs, a dynamic k: the cost model has no depth to price, so the rules'
  // sizes serve (this once raised an internal error; eager kernels meet it too).
  CompileOptions o = with_scheduler("Kiln");
  o.dynamic_dims = {{0, 1}, {1, 0}};
  auto mm = [](const Tensor& a, const Tensor& b) { return matmul(a, b); };
  auto f = compile(mm, o);
  for (int64_t k : {9, 40}) {
    Tensor a = randn({6, k}, uint64_t(k)), b = randn({k, 5}, uint64_t(k + 1));
    EXPECT_TRUE(allclose(f(a, b), mm(a, b), 1e-4, 1e-5)) << "k = " << k;
  }
  EXPECT_EQ(f.num_compilations(), 1);
}

TEST(KilnScheduler, ContractionsOnlyAnEmptySliceReads) {
  // The outputs read none of the contraction (kiln_fuzz: std::out_of_range from the plan).
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& a) {
    return std::vector<Tensor>{slice(conv2d(x, w, b, {2}, {1}), 2, 5, 5, 3),
                               slice(matmul(a, reshape(w, {1, 1})), 0, 1, 1, 1)};
  };
  Tensor x = randn({1, 1, 1, 1}, 1, DType::F16), w = randn({1, 1, 1, 1}, 2, DType::F16), b = randn({1}, 3, DType::F16);
  Tensor a = randn({3, 1}, 4, DType::F16);
  const std::vector<Tensor> got = compile(fn, with_scheduler("Kiln"))(x, w, b, a);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].meta().str(), "f16[1, 1, 0, 2]");
  EXPECT_EQ(got[1].meta().str(), "f16[0, 1]");
}

TEST(KilnScheduler, PlansEagerKernelsOnTheCpuForEverySize) {
  // An eager kernel is planned for its first call's sizes and serves every size of its
  // signature after: rows shorter than a vector, odd row counts, larger ones.
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return softmax(layer_norm(x, {x.shape().dims().back().size}, w, b) * 3.0, -1);
  };
  std::string log;
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{64, 96}, {3, 5}, {37, 301}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    Tensor x = randn({rows, cols}, uint64_t(rows)), w = randn({cols}, 2), b = randn({cols}, 3);
    Tensor got;
    log += logged("schedule", [&] { got = fn(x, w, b); });
    Tensor want = compile(fn, with_scheduler("rules"))(x, w, b);
    EXPECT_TRUE(allclose(got, want, 1e-5, 1e-6)) << max_abs_diff(got, want);
  }
  EXPECT_TRUE(mentions(log, "Kiln")) << log;
  // KILN_SCHEDULER picks eager kernels' scheduler too.
  ScopedEnv rules("KILN_SCHEDULER", "rules");
  Tensor x = randn({11, 13}, 4);
  const std::string rules_log = logged("schedule", [&] { kiln::log_softmax(x, -1); });
  EXPECT_FALSE(mentions(rules_log, "Kiln")) << rules_log;
}

TEST(KilnScheduler, GradientsMatchThroughTheCompiledBackward) {
  auto loss = [](const Tensor& x, const Tensor& w) { return sum(gelu(matmul(x, w))); };
  Tensor x = randn({12, 20}, 17), w = randn({20, 24}, 18);
  Tensor wk = w.detach().requires_grad(), we = w.detach().requires_grad();
  compile(loss, with_scheduler("Kiln"))(x, wk).backward();
  loss(x, we).backward();
  EXPECT_TRUE(allclose(wk.grad(), we.grad(), 1e-4, 1e-4)) << max_abs_diff(wk.grad(), we.grad());
}

TEST(KilnScheduler, UnknownSchedulerListsTheValidOnes) {
  try {
    compile([](const Tensor& x) { return x + 1.0; }, with_scheduler("Adams2019"));
    FAIL() << "an unknown scheduler was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(mentions(msg, "'Adams2019'")) << msg;
    EXPECT_TRUE(mentions(msg, "default, Kiln, rules")) << msg;
  }
}

// On a CUDA target Kiln's GPU search plans the whole pipeline.
TEST(KilnScheduler, SchedulesCudaTargetsOnTheGpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine; Kiln's CUDA schedules are compiled without one";
  CompileOptions o = with_scheduler("Kiln");
  o.target = "host-cuda";
  auto fn = [](const Tensor& x) { return softmax(x, -1); };
  Tensor x = randn({37, 300}, 23);
  Tensor out;
  const std::string log = logged("schedule", [&] { out = compile(fn, o)(x); });
  EXPECT_TRUE(mentions(log, "threads per row")) << log;
  EXPECT_TRUE(allclose(out, fn(x), 1e-5, 1e-6)) << max_abs_diff(out, fn(x));
}

TEST(KilnScheduler, EnvironmentChoosesTheScheduler) {
  auto fn = [](const Tensor& x) { return softmax(x, -1); };
  Tensor x = randn({9, 40}, 19);
  {
    ScopedEnv env("KILN_SCHEDULER", "rules");
    Tensor out;
    const std::string log = logged("schedule", [&] { out = compile(fn)(x); });
    EXPECT_FALSE(mentions(log, "Kiln: predicted")) << log;
    EXPECT_TRUE(allclose(out, fn(x), 1e-5, 1e-6));
    // The option still wins over the environment.
    EXPECT_TRUE(mentions(logged("schedule", [&] { compile(fn, with_scheduler("Kiln"))(x); }), "Kiln: predicted"));
  }
  {
    ScopedEnv env("KILN_SCHEDULER", "Kiln");
    EXPECT_FALSE(mentions(logged("schedule", [&] { compile(fn, with_scheduler("rules"))(x); }), "Kiln: predicted"));
    // A GPU target keeps the rules instead of failing.
    CompileOptions cuda;
    cuda.target = "host-cuda";
    EXPECT_NO_THROW(compile(fn, cuda));
  }
  {
    ScopedEnv env("KILN_SCHEDULER", "fast");
    try {
      compile(fn);
      FAIL() << "KILN_SCHEDULER=fast was accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(mentions(e.what(), "KILN_SCHEDULER")) << e.what();
      EXPECT_TRUE(mentions(e.what(), "default, Kiln, rules")) << e.what();
    }
  }
}

// Neither the option nor the environment: Kiln schedules compilations; "default" asked
// for by name is the same, on CPU and GPU targets.
TEST(KilnScheduler, IsTheDefault) {
  auto fn = [](const Tensor& x) { return softmax(x, -1); };
  Tensor x = randn({9, 40}, 19);
  ScopedEnv unset("KILN_SCHEDULER", std::nullopt);
  EXPECT_TRUE(mentions(logged("schedule", [&] { compile(fn)(x); }), "Kiln: predicted"));
  EXPECT_TRUE(mentions(logged("schedule", [&] { compile(fn, with_scheduler("default"))(x); }), "Kiln: predicted"));
  EXPECT_EQ(resolve_default_scheduler("default", /*gpu_target=*/true), "Kiln");
  EXPECT_EQ(resolve_default_scheduler("default", /*gpu_target=*/false), "Kiln");
  EXPECT_EQ(resolve_default_scheduler("rules", /*gpu_target=*/false), "rules");
  CompileOptions cuda = with_scheduler("default");
  cuda.target = "host-cuda";
  EXPECT_NO_THROW(compile(fn, cuda));
}

}  // namespace

namespace kiln {
namespace {

// The product of a@b is read by sin() in the forward's second matmul and by cos() in a
// backward matmul: moving it into the first one's per-batch tasks left the other reading
// a Func Halide then refused ("computed at an invalid location").
TEST(KilnScheduler, BatchFusionKeepsAValueThatAnotherLoopNestReads) {
  Tensor a = randn(Shape({2, 3, 5}), 1), b = randn(Shape({2, 5, 17}), 2), c = randn(Shape({2, 17, 33}), 3);
  auto loss = [](const Tensor& a, const Tensor& b, const Tensor& c) { return sum(matmul(sin(matmul(a, b)), c)); };
  std::vector<Tensor> want = grad(loss, {1, 2})({a, b, c});
  std::vector<Tensor> got = compile(grad(loss, {1, 2}))({a, b, c});
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) EXPECT_TRUE(allclose(got[i], want[i], 1e-4, 1e-4)) << max_abs_diff(got[i], want[i]);
}

}  // namespace
}  // namespace kiln
