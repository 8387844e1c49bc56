// kiln autoschedule: the Kiln autoscheduler on one kernel-library generator (its tuning
// database entry when there is one, else the cost model), its schedule written as a
// schedule file in the schedules/ format, ready to be copied there and tuned by hand; or
// on one registered model's forward pass, the schedule kiln::compile gives it, written
// the same way, to be applied with kiln::scheduled_backend.
#include <CLI/CLI.hpp>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "autoscheduler/autoscheduler.h"
#include "cli/commands.h"
#include "cli/generator_args.h"
#include "cli/options.h"
#include "core/error.h"
#include "kernel_spec.h"
#include "lower/kernel.h"

namespace kiln::cli {

namespace {

struct Args {
  std::vector<std::string> positional;  // the generator or model, as given
  std::string model_option;             // --model NAME
  GeneratorArg generator;
  std::string model;     // or a registered model
  std::string target = "host";
  std::string out;       // default: <generator>.schedule.h
  std::string function;  // default: apply_schedule_<generator>_cpu (or _cuda)
  std::string db;        // --db PATH | none
  bool force = false;    // overwrite an existing -o file
};

const char* kUsage = "kiln autoschedule <generator>[:param=value...]|<model>|--model NAME [options]";

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

std::string function_name(const Args& a, const std::string& name, const Halide::Target& target) {
  return a.function.empty() ? "apply_schedule_" + name + (target.has_gpu_feature() ? "_cuda" : "_cpu") : a.function;
}

// A schedule file is made to be edited by hand: an existing one is kept unless --force.
void write_file(const Args& a, const std::string& file, const std::string& text) {
  if (!a.force && std::filesystem::exists(file)) {
    user_error("autoschedule: ", file, " exists (it may hold hand edits); pass --force to overwrite it, or -o "
               "another file");
  }
  std::ofstream f(file);
  f << text;
  f.close();
  if (!f) user_error("autoschedule: cannot write ", file, "; pass -o FILE in a writable folder");
}

// A model's forward pass, lowered as kiln::compile lowers it, scheduled by the Kiln
// scheduler (its tuned entry where the database has one). Its contractions keep the rules'
// loops, which kiln::scheduled_backend gives them again before it calls the file's
// function; the sizes within those loops (conv2d's register tiles, matmul's tasks) are in
// the file as JSON text, `<function>_contractions`, for scheduled_backend to take back.
int autoschedule_model(const Args& a, const Halide::Target& target) {
  const ModelPipeline m = model_pipeline(a.model);
  KilnScheduleOptions options;
  options.db = a.db;
  KilnSchedule s;
  const auto start = std::chrono::steady_clock::now();
  lower_and_schedule(m.graph, target, [&](LoweredGraph& l, const Halide::Target& t) {
    s = apply_kiln_schedule(l, t, m.sizes, options);
  });
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::string fixed;
  for (const std::string& f : s.fixed) fixed += (fixed.empty() ? "" : ", ") + f;
  const std::string file = a.out.empty() ? m.model.name + ".schedule.h" : a.out;
  const std::string function = function_name(a, m.model.name, target);
  std::string body = s.source;
  // The prediction covers what the search scheduled: the contractions in the rules' loops
  // are not priced in it, and the line says so.
  const std::string leaves_out =
      s.fixed.empty() ? "" : " for the Funcs the search scheduled; the " + std::to_string(s.fixed.size()) +
                                 " in the rules' loops (contractions, their packing) are not priced";
  if (!s.tuned) {
    body = "    // Kiln autoscheduler (cost model); predicted " + std::to_string(s.predicted_s * 1e3) + " ms" + leaves_out +
           "\n" + body;
  }
  std::string text = autoschedule::schedule_header(
      function, body, target,
      "Schedule for model " + m.model.name + "'s forward pass (as kiln::compile lowers it) by the Kiln autoscheduler "
      "(kiln autoschedule);\n// apply it with kiln::scheduled_backend. Scheduled before it by kiln's rules "
      "(lower/default_schedule.h), loops kept: " + (fixed.empty() ? "(none)" : fixed));
  // Its Funcs are found by key (kiln::pipeline_func): get_func's order changes from process to process.
  const std::string halide = "#include \"Halide.h\"\n";
  text.replace(text.find(halide), halide.size(), halide + "#include \"lower/kiln_schedule.h\"  // kiln::pipeline_func\n");
  const std::string sizes =
      "\n// The sizes within the rules' loops, by Func key, applied before the function above:\n"
      "// conv2d register tiles (\"vectors\" of output columns x \"channels\") and matmul tasks\n"
      "// (\"band\" row tiles x \"column_tiles\", 0: all of them). Edit them here; pass this as\n"
      "// kiln::scheduled_backend's third argument (a Func left out gets the cost model's).\n"
      "inline const char* " + function + "_contractions = R\"json(" + s.contractions + ")json\";\n";
  const size_t endif = text.rfind("\n#endif");
  KILN_CHECK(endif != std::string::npos, "schedule_header wrote no include guard");
  text.insert(endif, sizes);
  write_file(a, file, text);
  std::cout << m.model.name << ": predicted " << s.predicted_s * 1e3 << " ms" << (s.tuned ? " (tuned entry)" : " (cost model)")
            << ", lowered and scheduled in " << ms << " ms; wrote " << file << " (" << function << ")\n";
  if (!leaves_out.empty()) std::cout << "  (predicted" << leaves_out << ")\n";
  return 0;
}

int autoschedule(Args a) {
  const GeneratorOrModel what = generator_or_model(a.positional, a.model_option, "autoschedule", kUsage);
  a.generator = what.generator;
  a.model = what.model;
  if (!a.function.empty() && !is_c_identifier(a.function)) {
    user_error("autoschedule: --function '", a.function, "' is not a C++ identifier (letters, digits and _, "
               "not starting with a digit)");
  }
  const Halide::Target target = parse_target(a.target, "autoschedule");
  if (a.db != "none") {
    std::cout << "autoschedule: "
              << autoschedule::describe(autoschedule::TuningDb::load(autoschedule::tuning_db_path(a.db))) << "\n";
  }
  if (!a.model.empty()) return autoschedule_model(a, target);
  kernels::DirectKernel k = kernels::build_direct(kernels::make_spec(a.generator.name, a.generator.params));
  std::map<std::string, std::string> params;
  if (!a.db.empty()) params["db"] = a.db;
  const autoschedule::ScheduleOutcome o = autoschedule::autoschedule(k.lowered.pipeline(), target, params);

  const std::string gen = k.spec.generator;  // "kiln_softmax"
  const std::string file = a.out.empty() ? gen.substr(5) + ".schedule.h" : a.out;
  const std::string function = function_name(a, gen, target);
  write_file(a, file, autoschedule::schedule_header(function, o.source, target,
                                                 "Schedule for " + gen + " by the Kiln autoscheduler (kiln autoschedule)"));
  std::cout << gen << ": predicted " << o.predicted_s * 1e3 << " ms"
            << (o.tuned ? " (tuned entry, measured " + std::to_string(o.measured_ms) + " ms)" : " (cost model)")
            << ", searched in " << o.search_ms << " ms; wrote " << file << " (" << function << ")\n";
  return 0;
}

}  // namespace

void add_autoschedule(CLI::App& kiln, int* status) {
  auto a = std::make_shared<Args>();
  CLI::App* c = kiln.add_subcommand(
      "autoschedule",
      "write the Kiln autoscheduler's schedule of a generator or model as a schedule file");
  c->footer("A generator gets its tuned entry when the tuning database has one, else the cost model's choice. A "
            "model (seed, mlp, gpt_block, resnet18) gets the schedule kiln::compile gives its forward pass, to be "
            "applied with kiln::scheduled_backend.\n");
  add_generator_or_model_options(c, &a->positional, &a->model_option);
  c->add_option("--target", a->target, "host (default) or a Halide target string")->type_name("host|<Halide target>");
  c->add_option("-o", a->out, "the schedule file (default: <name>.schedule.h)")->type_name("FILE");
  c->add_flag("--force", a->force, "overwrite FILE when it exists");
  c->add_option("--function", a->function, "the schedule function's name (default: apply_schedule_<name>_cpu|_cuda)")
      ->type_name("NAME");
  c->add_option("--db", a->db, "the tuning database, or none (default: $KILN_TUNING_DB, ./kiln_tuning.json, "
                               "~/.cache/kiln/tuning.json)")
      ->type_name("PATH|none");
  c->callback([a, status] { *status = autoschedule(*a); });
}

}  // namespace kiln::cli
