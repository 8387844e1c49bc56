// `kiln autoschedule` and `kiln tune` on kernel-library generators and models: the schedule file
// autoschedule wrote at build time compiles (it is included here) and schedules the
// generator's pipeline to the default schedule's results; tune with a tiny budget writes
// a database entry that the Kiln plugin (and so autoschedule and bench-kernels) applies; bad arguments are kiln::Errors
// saying what was wrong and what would be right.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <sys/wait.h>
#include <unistd.h>

#include "../core/log_capture.h"
#include "autoschedule.h"
#include "cli/line_pipe.h"
#include "fingerprint.h"
#include "kernel_spec.h"
#include "kiln.h"
#include "lower/default_schedule.h"
#include "temp_dir.h"
#include "tuning_db.h"

// Written by `kiln autoschedule <gen> --function apply_schedule_cli_<gen>` at build time.
#include "kiln_cli_matmul.schedule.h"
#include "kiln_cli_softmax.schedule.h"
// `kiln autoschedule gpt_block --function apply_schedule_cli_gpt_block`, the model's.
#include "kiln_cli_model_gpt_block.schedule.h"
#include "models/models.h"

namespace as = kiln::autoschedule;
namespace kk = kiln::kernels;

namespace {

// Runs the generator's pipeline, scheduled by `schedule`, on seeded inputs at its
// estimate sizes.
Halide::Buffer<float> run_generator(const std::string& generator,
                                    const std::function<void(kk::DirectKernel&)>& schedule) {
  kk::DirectKernel k = kk::build_direct(kk::make_spec(generator));
  schedule(k);
  std::vector<kiln::Tensor> inputs;
  for (size_t i = 0; i < k.spec.inputs.size(); ++i) {
    inputs.push_back(kiln::rand(kiln::Shape(k.spec.inputs[i].estimate), i + 1, -1, 1));
    k.params[i].set(Halide::Buffer<>(Halide::Runtime::Buffer<>(inputs[i].buffer())));
  }
  const std::vector<int64_t> s = kk::output_at_estimates(k.spec).shape.sizes();
  Halide::Buffer<float> out(std::vector<int>(s.rbegin(), s.rend()));
  k.lowered.pipeline().realize(out, Halide::get_host_target());
  return out;
}

double max_rel_diff(const Halide::Buffer<float>& a, const Halide::Buffer<float>& b) {
  double worst = 0;
  a.for_each_element([&](const int* pos) {
    worst = std::max(worst, std::abs(double(a(pos)) - b(pos)) / std::max(1.0, std::abs(double(b(pos)))));
  });
  return worst;
}

struct CommandRun {
  int status;
  std::string output;  // stdout and stderr
};

// `kiln args` with `env` ("NAME=value ...") set for it.
CommandRun run_kiln_with(const std::string& env, const std::string& args) {
  CommandRun r{0, ""};
  FILE* p = popen((env + " " + std::string(KILN_CLI) + " " + args + " 2>&1").c_str(), "r");
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
  r.status = WEXITSTATUS(pclose(p));
  return r;
}

CommandRun run_kiln(const std::string& args) { return run_kiln_with("", args); }

}  // namespace

TEST(KilnAutoscheduleCommand, WrittenScheduleFilesCompileAndScheduleTheirGenerator) {
  const Halide::Target host = Halide::get_host_target();
  const std::vector<std::pair<std::string, void (*)(Halide::Pipeline, Halide::Target)>> files = {
      {"softmax", apply_schedule_cli_softmax}, {"matmul", apply_schedule_cli_matmul}};
  for (const auto& [gen, apply] : files) {
    const auto with_file = run_generator(gen, [&](kk::DirectKernel& k) { apply(k.lowered.pipeline(), host); });
    const auto with_default =
        run_generator(gen, [&](kk::DirectKernel& k) { kiln::apply_default_schedule(k.lowered, host); });
    // Matmul sums 1024 products in another order under register tiles: rounding only.
    EXPECT_LE(max_rel_diff(with_file, with_default), 1e-4) << gen;
  }
}

// A model's schedule file, included back, schedules the model compiled again through
// scheduled_backend, to eager's results, in a process whose Funcs have other "$n"
// suffixes (the file finds its Funcs by key); one that does not fit is a kiln::Error.
TEST(KilnAutoscheduleCommand, AModelsScheduleFileSchedulesTheModelCompiledAgain) {
  const kiln::models::Model m = kiln::models::make_model("gpt_block");
  const std::string file = kiln::as_test::read_text(KILN_CLI_SCHEDULE_DIR "/kiln_cli_model_gpt_block.schedule.h");
  EXPECT_NE(file.find("kiln::pipeline_func(pipeline, \"layer_norm_sum#2\")"), std::string::npos) << file;
  EXPECT_EQ(file.find("get_func("), std::string::npos) << file;
  // Its predicted time says what it leaves out: the contractions in the rules' loops.
  EXPECT_NE(file.find("in the rules' loops (contractions, their packing) are not priced"), std::string::npos) << file;
  kiln::compile(m.forward)(m.inputs);  // Funcs of the same names first: other suffixes below
  int applied = 0;
  kiln::CompileOptions o;
  o.backend = kiln::scheduled_backend("host", [&](Halide::Pipeline p, Halide::Target t) {
    ++applied;
    apply_schedule_cli_gpt_block(p, t);
  });
  auto f = kiln::compile(m.forward, o);
  const kiln::Tensor got = f(m.inputs)[0], want = m.forward(m.inputs)[0];
  EXPECT_EQ(applied, 1);
  EXPECT_TRUE(kiln::allclose(got, want, 1e-4, 1e-5)) << kiln::max_abs_diff(got, want);

  kiln::CompileOptions stale;
  stale.backend = kiln::scheduled_backend("host", [](Halide::Pipeline p, Halide::Target) {
    p.get_func(100000).compute_root();
  });
  auto g = kiln::compile(m.forward, stale);
  try {
    g(m.inputs);
    ADD_FAILURE() << "a schedule for another pipeline was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("the schedule does not fit this graph's pipeline"), std::string::npos)
        << e.what();
  }
  kiln::CompileOptions other;
  other.backend = kiln::scheduled_backend("host", [](Halide::Pipeline p, Halide::Target) {
    kiln::pipeline_func(p, "conv2d_acc#3").compute_root();
  });
  try {
    kiln::compile(m.forward, other)(m.inputs);
    ADD_FAILURE() << "a schedule naming a Func the model lacks was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("this pipeline has no Func 'conv2d_acc#3'"), std::string::npos) << e.what();
  }
}

// The file holds the sizes within the rules' loops too (gpt_block's matmul tasks), as
// JSON that scheduled_backend takes back: a hand edit of one matmul's tasks is what the
// compile uses, with eager's results; a malformed text or a Func the model lacks is a
// kiln::Error saying so.
TEST(KilnAutoscheduleCommand, AModelsScheduleFileHoldsItsContractionsSizes) {
  const kiln::models::Model m = kiln::models::make_model("gpt_block");
  const std::string sizes = apply_schedule_cli_gpt_block_contractions;
  EXPECT_NE(sizes.find("\"matmul_tasks\": {"), std::string::npos) << sizes;
  EXPECT_NE(sizes.find("\"matmul_acc#2\": {"), std::string::npos) << sizes;
  const kiln::Tensor want = m.forward(m.inputs)[0];
  auto run = [&](const std::string& text, std::string* log) {
    kiln::CompileOptions o;
    o.backend = kiln::scheduled_backend("host", apply_schedule_cli_gpt_block, text);
    kiln::Tensor got;
    *log = kiln::testing::logged("schedule", [&] { got = kiln::compile(m.forward, o)(m.inputs)[0]; });
    return got;
  };
  std::string log;
  kiln::Tensor got = run(sizes, &log);
  EXPECT_TRUE(kiln::allclose(got, want, 1e-4, 1e-5)) << kiln::max_abs_diff(got, want);
  // Planned for 2 cores (tests/autoscheduler/CMakeLists.txt): attention's 8 heads, and
  // the 2 sequences of the linear layers, run a task each, with their batched operands.
  EXPECT_NE(sizes.find("\"per_batch\": true"), std::string::npos) << sizes;
  EXPECT_NE(log.find(": a task per batch element, its batched operands computed in it (knob)"), std::string::npos)
      << log;
  const std::string edited = R"({"matmul_tasks": {"matmul_acc#2": {"band": 3, "column_tiles": 1}}})";
  got = run(edited, &log);
  EXPECT_TRUE(kiln::allclose(got, want, 1e-4, 1e-5)) << kiln::max_abs_diff(got, want);
  EXPECT_NE(log.find(": tasks of 3 row tiles x 1 column tiles (knob)"), std::string::npos) << log;

  try {
    kiln::scheduled_backend("host", apply_schedule_cli_gpt_block, R"({"tiles": {}})");
    ADD_FAILURE() << "a text with a key other than the contractions' was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'tiles' is not a contraction's size"), std::string::npos) << e.what();
  }
  try {
    // Attention's P @ V: V is a view of the QKV projection, which only packing can read.
    run(R"({"matmul_tasks": {"matmul_acc#2": {"band": 3, "column_tiles": 1, "pack_b": false}}})", &log);
    ADD_FAILURE() << "b read in place through a view was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("matmul_acc#2 reads b in place (\"pack_b\": false), but its b is not an input"),
              std::string::npos)
        << e.what();
  }
  try {
    run(R"({"matmul_tasks": {"matmul_acc#99": {"band": 1, "column_tiles": 0}}})", &log);
    ADD_FAILURE() << "a matmul the model lacks was accepted";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("names the matmul 'matmul_acc#99', which this pipeline lacks"), std::string::npos)
        << e.what();
  }
}

TEST(KilnTuneCommand, ATinyBudgetWritesAnEntryThatThePluginUses) {
  kiln::as_test::TempDir dir;
  const std::string db_path = dir.file("db.json");
  const CommandRun r = run_kiln("tune softmax --budget-s 1 --candidates 3 --reps 3 --db " + db_path);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("cost model's choice"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("saved to " + db_path), std::string::npos) << r.output;

  const as::TuningDb db = as::TuningDb::load(db_path);
  ASSERT_EQ(db.entries().size(), 1u);
  const as::TuningEntry& e = db.entries()[0];
  EXPECT_EQ(e.generator, "kiln_softmax");
  EXPECT_GT(e.measured_ms, 0);
  EXPECT_GT(e.predicted_ms, 0);
  EXPECT_FALSE(e.knobs.empty());
  EXPECT_NE(e.schedule.find("compute_root"), std::string::npos);

  // The plugin, on the same generator's pipeline built in this process, applies it...
  Halide::load_plugin(KILN_AUTOSCHEDULE_PLUGIN);
  kk::DirectKernel k = kk::build_direct(kk::make_spec("softmax"));
  EXPECT_EQ(as::pipeline_fingerprint(k.lowered.pipeline()), e.fingerprint);
  const std::string source =
      k.lowered.pipeline().apply_autoscheduler(Halide::get_host_target(), {"Kiln", {{"db", db_path}}}).schedule_source;
  EXPECT_NE(source.find("tuned entry " + e.fingerprint), std::string::npos) << source;
  EXPECT_NE(source.find(e.schedule), std::string::npos) << source;
  // ... and so does `kiln autoschedule`, saying so.
  const CommandRun a = run_kiln("autoschedule softmax --db " + db_path + " -o " + dir.file("s.h"));
  EXPECT_NE(a.output.find("(tuned entry, measured"), std::string::npos) << a.output;
  // ... and `kiln bench-kernels` gets a Kiln-tuned row, beside the cost model's Kiln row,
  // only where the database has an entry.
  const std::string bench = "bench-kernels --filter '^kiln_softmax$' --reps 1 --max-seconds 0 --db ";
  const CommandRun with = run_kiln(bench + db_path);
  EXPECT_EQ(with.status, 0) << with.output;
  EXPECT_NE(with.output.find("\"impl\": \"Kiln-tuned\""), std::string::npos) << with.output;
  EXPECT_NE(with.output.find("\"impl\": \"Kiln\""), std::string::npos) << with.output;
  const CommandRun without = run_kiln(bench + dir.file("empty.json"));
  EXPECT_EQ(without.status, 0) << without.output;
  EXPECT_EQ(without.output.find("Kiln-tuned"), std::string::npos) << without.output;
  EXPECT_NE(without.output.find("\"impl\": \"Kiln\""), std::string::npos) << without.output;
}

// Every command plans Kiln for one machine: with KILN_MACHINE naming other cores than this
// machine has, `kiln bench-kernels` finds the entry that `kiln tune` saved under it (it
// once passed Kiln this machine's core count, which overrode KILN_MACHINE's).
TEST(KilnTuneCommand, BenchKernelsPlansForTheMachineThatKilnTuneDid) {
  kiln::as_test::TempDir dir;
  const std::string db_path = dir.file("db.json");
  const std::string machine = "KILN_MACHINE=cores=" + std::to_string(std::thread::hardware_concurrency() + 3);
  const CommandRun tune = run_kiln_with(machine, "tune binary --budget-s 1 --candidates 2 --reps 2 --db " + db_path);
  ASSERT_EQ(tune.status, 0) << tune.output;
  const CommandRun bench = run_kiln_with(
      machine, "bench-kernels --filter '^kiln_binary$' --schedules Kiln-tuned --reps 1 --max-seconds 0 --db " + db_path);
  EXPECT_EQ(bench.status, 0) << bench.output;
  EXPECT_NE(bench.output.find("\"impl\": \"Kiln-tuned\""), std::string::npos) << bench.output;
}

// A model's forward pass tuned in one process is found by its compiles in others (the
// database key is the pipeline as the Kiln scheduler receives it, contractions fixed, so
// it holds across processes and trace names): `kiln autoschedule <model>` says it used
// the tuned entry, and `kiln models`, compiling with the Kiln scheduler, logs it and still
// matches eager and the f64 reference.
TEST(KilnTuneCommand, AModelsTunedEntryIsWhatItsCompilesUse) {
  kiln::as_test::TempDir dir;
  const std::string db_path = dir.file("db.json");
  const CommandRun r = run_kiln("tune gpt_block --budget-s 2 --candidates 3 --reps 2 --db " + db_path);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("gpt_block: best"), std::string::npos) << r.output;
  const as::TuningDb db = as::TuningDb::load(db_path);
  ASSERT_EQ(db.entries().size(), 1u);
  const as::TuningEntry& e = db.entries()[0];
  EXPECT_EQ(e.generator, "gpt_block");
  EXPECT_GT(e.measured_ms, 0);
  EXPECT_FALSE(e.knobs.empty());

  const CommandRun tuned = run_kiln("autoschedule gpt_block --db " + db_path + " -o " + dir.file("t.h"));
  ASSERT_EQ(tuned.status, 0) << tuned.output;
  EXPECT_NE(tuned.output.find("(tuned entry)"), std::string::npos) << tuned.output;
  const std::string file = kiln::as_test::read_text(dir.file("t.h"));
  EXPECT_NE(file.find("tuned entry " + e.fingerprint), std::string::npos) << file;
  EXPECT_NE(file.find("inline void apply_schedule_gpt_block_cpu("), std::string::npos) << file;
  EXPECT_NE(file.find("loops kept: "), std::string::npos) << file;
  const CommandRun model = run_kiln("autoschedule gpt_block --db none -o " + dir.file("m.h"));
  EXPECT_NE(model.output.find("(cost model)"), std::string::npos) << model.output;

  const CommandRun compiled = run_kiln_with("KILN_TUNING_DB=" + db_path + " KILN_LOG=schedule",
                                            "models --filter gpt_block --reps 1");
  EXPECT_EQ(compiled.status, 0) << compiled.output;  // 1 where compiled and eager or reference disagree
  EXPECT_NE(compiled.output.find("using the tuned entry for gpt_block (" + e.fingerprint), std::string::npos)
      << compiled.output;
  const CommandRun none = run_kiln_with("KILN_TUNING_DB=none KILN_LOG=schedule", "models --filter gpt_block --reps 1");
  EXPECT_EQ(none.status, 0) << none.output;
  EXPECT_EQ(none.output.find("using the tuned entry"), std::string::npos) << none.output;
}

// `kiln models --scheduler both` compiles each model with the rules and with Kiln, checks
// both against eager and the f64 reference, and reports each as its own JSON row (the
// compiled models bar of the autoscheduler is read from these) with the geomean of the
// two schedulers' times after the table.
TEST(KilnModelsCommand, BothSchedulersAreCheckedAndTimedSideBySide) {
  const CommandRun r = run_kiln_with("KILN_TUNING_DB=none", "models --filter '^(seed|mlp)$' --scheduler both --reps 2 --json");
  ASSERT_EQ(r.status, 0) << r.output;
  for (const std::string model : {"seed", "mlp"}) {
    for (const std::string impl : {"kiln-eager", "kiln-compiled-rules", "kiln-compiled-Kiln"}) {
      EXPECT_NE(r.output.find("{\"name\": \"model_" + model + "\", \"impl\": \"" + impl + "\", \"target\": \"cpu\", \"ms\": "),
                std::string::npos)
          << model << " " << impl << r.output;
    }
  }
  EXPECT_EQ(r.output.find("gpt_block"), std::string::npos) << r.output;  // filtered out
  EXPECT_EQ(r.output.find(" NO "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("geomean rules / Kiln over 2 models: "), std::string::npos) << r.output;
}

// bench-kernels starts every schedule of a generator, in --processes children each, then
// times them in interleaved rounds: each row's runs are the runs of all its processes'
// rounds; a schedule that does not compile in time is a row that says so, and the others
// are still timed.
TEST(KilnBenchKernelsCommand, SchedulesAreTimedInInterleavedRounds) {
  kiln::as_test::TempDir dir;
  const CommandRun r = run_kiln(
      "bench-kernels --filter '^kiln_reduce$' --reps 2 --rounds 3 --processes 2 --max-seconds 0 --db " +
      dir.file("none.json"));
  ASSERT_EQ(r.status, 0) << r.output;
  for (const std::string impl : {"manual", "default", "Kiln", "Mullapudi2016", "Adams2019", "Li2018"}) {
    EXPECT_NE(r.output.find("\"impl\": \"" + impl + "\", \"target\": \"cpu\", \"ms\": "), std::string::npos) << impl << r.output;
  }
  size_t rows = 0;
  for (size_t at = r.output.find("\"runs\": 12}"); at != std::string::npos; at = r.output.find("\"runs\": 12}", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 6u) << r.output;
  size_t spreads = 0;
  for (size_t at = r.output.find("(2 processes: "); at != std::string::npos; at = r.output.find("(2 processes: ", at + 1)) {
    ++spreads;
  }
  EXPECT_EQ(spreads, 6u) << r.output;
  // --schedules times a subset, in the table's order whatever the list's.
  const CommandRun some = run_kiln("bench-kernels --filter '^kiln_reduce$' --schedules Kiln,manual --reps 2 --rounds 1 "
                                   "--max-seconds 0 --db " + dir.file("none.json"));
  ASSERT_EQ(some.status, 0) << some.output;
  const size_t manual = some.output.find("\"impl\": \"manual\"");
  const size_t kiln = some.output.find("\"impl\": \"Kiln\"");
  EXPECT_NE(manual, std::string::npos) << some.output;
  EXPECT_NE(kiln, std::string::npos) << some.output;
  EXPECT_LT(manual, kiln) << some.output;
  for (const std::string impl : {"default", "Mullapudi2016", "Adams2019", "Li2018"}) {
    EXPECT_EQ(some.output.find("\"impl\": \"" + impl + "\""), std::string::npos) << impl << some.output;
  }
  const CommandRun late = run_kiln("bench-kernels --filter '^kiln_reduce$' --timeout 0.001");
  EXPECT_EQ(late.status, 0) << late.output;
  EXPECT_NE(late.output.find("Kiln           timed out after 0 s"), std::string::npos) << late.output;
  const CommandRun bad = run_kiln("bench-kernels --rounds 0");
  EXPECT_NE(bad.output.find("--rounds takes a whole number of at least 1, not '0'"), std::string::npos) << bad.output;
}

// bench-kernels waits on its children in launch order, each from its own launch: a child
// that said "ready" while the parent waited on a slow one (Adams2019 on conv2d) is read
// after that child's deadline has passed, and is not late. (Reading nothing once the
// deadline had passed timed out every child behind a slow one on a 16-core machine.)
TEST(KilnBenchKernelsCommand, ALineAlreadyInThePipeIsReadPastTheDeadline) {
  using kiln::cli::LineRead;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const auto past = std::chrono::steady_clock::now() - std::chrono::seconds(5);
  std::string pending, line;
  ASSERT_EQ(write(fds[1], "ready\nok 1.5", 12), 12);
  EXPECT_EQ(kiln::cli::read_line(fds[0], pending, past, &line), LineRead::line);
  EXPECT_EQ(line, "ready");
  // Half a line is not a line: past the deadline it times out, and keeps what it read.
  EXPECT_EQ(kiln::cli::read_line(fds[0], pending, past, &line), LineRead::timed_out);
  EXPECT_EQ(pending, "ok 1.5");
  ASSERT_EQ(write(fds[1], " 3\n", 3), 3);
  EXPECT_EQ(kiln::cli::read_line(fds[0], pending, std::chrono::steady_clock::now() + std::chrono::seconds(5), &line),
            LineRead::line);
  EXPECT_EQ(line, "ok 1.5 3");
  // A future deadline waits for it; a closed pipe is said at once.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(kiln::cli::read_line(fds[0], pending, start + std::chrono::milliseconds(50), &line), LineRead::timed_out);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  close(fds[1]);
  EXPECT_EQ(kiln::cli::read_line(fds[0], pending, start + std::chrono::seconds(60), &line), LineRead::closed);
  close(fds[0]);
}

TEST(KilnCommands, UserErrorsSayWhatWasWrongAndWhatWouldBeRight) {
  kiln::as_test::TempDir dir;
  const std::string corrupt = dir.file("corrupt.json");
  kiln::as_test::write_text(corrupt, "{\"format\": \"kiln-tuning-db\"");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tune nosuch", "'nosuch' is neither a kernel generator (kiln_seed, "},
      {"autoschedule nosuch", "nor a model (seed, mlp, gpt_block, resnet18)"},
      {"tune", "no generator or model; usage: kiln tune <generator>"},
      {"tune --model nosuch", "unknown model 'nosuch'"},
      {"tune resnet18 mlp", "one generator or model at a time, not 'mlp' too"},
      {"tune softmax --budget-s zero", "--budget-s takes a positive number, not 'zero'"},
      {"tune softmax --reps 2.5", "kiln tune: error: --reps takes a whole number of at least 1, not '2.5'"},
      {"bench-kernels --processes two", "kiln bench-kernels: error: --processes takes a whole number of at least 1, not 'two'"},
      {"bench-kernels --reps 3x", "kiln bench-kernels: error: --reps takes a whole number of at least 1, not '3x'"},
      {"bench-kernels --schedules Kiln,Adams",
       "--schedules names 'Adams', which is not a schedule for host; the schedules are: manual, default, Kiln, "
       "Kiln-tuned, Mullapudi2016, Adams2019, Li2018"},
      {"bench-kernels --target host-cuda --schedules Adams2019", "'Adams2019', which is not a schedule for host-cuda"},
      {"bench-kernels --max-seconds -1", "--max-seconds takes a number of seconds, 0 or more, not '-1'"},
      {"bench --reps abc", "kiln bench: error: --reps takes a whole number of at least 1, not 'abc'"},
      {"models --reps 0", "kiln models: error: --reps takes a whole number of at least 1, not '0'"},
      {"models --scheduler fast", "kiln models: error: --scheduler must be default, Kiln, rules, or both (the rules and Kiln), not 'fast'"},
      // A filter that selects nothing would print an empty table and succeed.
      {"models --filter nomatch", "kiln models: error: --filter 'nomatch' matches no model; the models are: seed, mlp"},
      {"bench --filter nomatch", "--filter 'nomatch' matches no workload; the workloads are: seed"},
      {"bench-kernels --filter nomatch", "--filter 'nomatch' matches no generator; the generators are: kiln_seed"},
      {"models --filter '(('", "--filter '((' is not a valid regular expression"},
      {"bench --scheduler Adams2019", "kiln bench: error: --scheduler must be default, Kiln, rules, or both"},
      {"tune softmax --frobnicate", "not expected: --frobnicate\n(kiln tune --help lists its options)"},
      {"tune softmax --target host-opencl", "plans CPU and CUDA targets, not"},
      {"tune softmax --target pdp11", "is not a target; use host or a Halide target string"},
      {"tune unary:op", "parameters are written <generator>:<name>=<value>"},
      {"tune unary:op=nope", "parameter op='nope' is not allowed; it takes one of: relu"},
      // std::stoll threw std::out_of_range past main for this.
      {"autoschedule layer_norm:cols=99999999999999999999 --db none",
       "parameter cols='99999999999999999999' is not allowed; it takes a non-negative integer below 2^31"},
      {"tune softmax --db " + corrupt, "the tuning database " + corrupt + " cannot be used"},
      {"autoschedule softmax --target host-opencl", "has another GPU API"},
      {"autoschedule softmax -o /no/such/folder/x.h --db none", "cannot write /no/such/folder/x.h"},
      {"autoschedule", "no generator or model; usage: kiln autoschedule"},
      {"autoschedule --model", "--model: 1 required NAME missing"},
      // A schedule file is edited by hand: kept unless --force.
      {"autoschedule softmax --db none -o " + corrupt, corrupt + " exists (it may hold hand edits); pass --force"},
      {"autoschedule softmax --function 9lives", "--function '9lives' is not a C++ identifier"},
      {"machine --calibrated", "kiln machine: error: The following argument was not expected: --calibrated"},
      {"aot", "kiln aot: error: model is required"},
      {"aot seed", "kiln aot: error: --output is required"},
      {"nosuch", "kiln: error: unknown command 'nosuch'; the commands are bench, bench-kernels, models, aot"},
      {"", "kiln: error: A subcommand is required"},
      {"machine --target pdp11", "is not a target; use host or a Halide target string"},
      // Halide throws std::invalid_argument or Halide::CompileError for these, which
      // terminated kiln (found by tests/fuzz_parsers).
      {"tune softmax --target vector_bits_xx", "is not a target"},
      {"machine --target vector_bits_xx", "is not a target"},
      {"autoschedule softmax --target arm-64-linux-avx --db none", "--target 'arm-64-linux-avx' is not a target"},
      {"aot seed --target vector_bits_xx -o " + dir.file("aot"), "unknown target 'vector_bits_xx'"},
      {"aot seed --target arm-64-linux-avx -o " + dir.file("aot"), "unknown target 'arm-64-linux-avx'"},
  };
  for (const auto& [args, message] : cases) {
    const CommandRun r = run_kiln(args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find("error: "), std::string::npos) << args << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << args << ": " << r.output;
  }
  EXPECT_EQ(kiln::as_test::read_text(corrupt), "{\"format\": \"kiln-tuning-db\"");  // untouched
}

// `kiln <command> --help` (or -h) prints that command's usage and succeeds, where an
// unknown option is an error; `kiln help` lists every command.
TEST(KilnCommands, HelpPrintsTheCommandsUsage) {
  for (const std::string cmd : {"bench", "bench-kernels", "models", "aot", "autoschedule", "tune", "machine"}) {
    for (const std::string flag : {"--help", "-h"}) {
      const CommandRun r = run_kiln(cmd + " " + flag);
      EXPECT_EQ(r.status, 0) << cmd << " " << flag << ": " << r.output;
      EXPECT_NE(r.output.find("Usage: kiln " + cmd + " [OPTIONS]"), std::string::npos) << r.output;
      EXPECT_EQ(r.output.find("error: "), std::string::npos) << r.output;
    }
  }
  EXPECT_NE(run_kiln("tune softmax --help").output.find("--budget-s S "), std::string::npos);
  EXPECT_NE(run_kiln("aot --help").output.find("--scheduler default|Kiln|rules"), std::string::npos);
  const CommandRun all = run_kiln("help");
  EXPECT_EQ(all.status, 0);
  for (const std::string cmd : {"bench ", "bench-kernels ", "models ", "aot ", "autoschedule ", "tune ", "machine "}) {
    EXPECT_NE(all.output.find("\n  " + cmd), std::string::npos) << cmd << ": " << all.output;
  }
}

// `kiln machine` prints the model the autoscheduler plans for, KILN_MACHINE applied; with
// --calibrate, what Halide's thread pool costs a task here and the lock_us that fits it.
TEST(KilnMachineCommand, PrintsTheModelAndCalibratesTheThreadPool) {
  const CommandRun r = run_kiln_with("KILN_MACHINE=cores=3,lock_us=0.7", "machine");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("cores=3 "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lock_us=0.7 "), std::string::npos) << r.output;
  const CommandRun c = run_kiln_with("KILN_MACHINE=cores=4", "machine --calibrate");
  EXPECT_EQ(c.status, 0) << c.output;
  // Stages of 2 and 4 empty tasks, and a positive fit.
  EXPECT_NE(c.output.find("\n             2   "), std::string::npos) << c.output;
  EXPECT_NE(c.output.find("\n             4   "), std::string::npos) << c.output;
  const size_t at = c.output.find("KILN_MACHINE=lock_us=");
  ASSERT_NE(at, std::string::npos) << c.output;
  const double lock_us = std::atof(c.output.c_str() + at + 21);
  EXPECT_GT(lock_us, 0.001) << c.output;
  EXPECT_LT(lock_us, 100) << c.output;
}

TEST(KilnTuneCommand, CudaTargetsNeedAGpuToTimeOn) {
  if (kiln::cuda_available()) GTEST_SKIP() << "a CUDA GPU is present: kiln tune --target host-cuda would tune on it";
  const CommandRun r = run_kiln("tune softmax --target host-cuda --db none.json");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("times its candidates on a CUDA GPU, and none was found here"), std::string::npos) << r.output;
}
