// kiln autoschedule: the Kiln autoscheduler on one kernel-library generator (its tuning
// database entry when there is one, else the cost model), its schedule written as a
// schedule file in the schedules/ format, ready to be copied there and tuned by hand; or
// on one registered model's forward pass, the schedule kiln::compile gives it, written
// the same way, to be applied with kiln::scheduled_backend.
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "autoschedule.h"
#include "tuning_db.h"
#include "cli/commands.h"
#include "cli/generator_args.h"
#include "core/error.h"
#include "kernel_spec.h"
#include "lower/kernel.h"

namespace kiln::cli {

namespace {

struct Args {
  GeneratorArg generator;
  std::string model;     // or a registered model
  std::string target = "host";
  std::string out;       // default: <generator>.schedule.h
  std::string function;  // default: apply_schedule_<generator>_cpu (or _cuda)
  std::string db;        // --db PATH | none
  bool force = false;    // overwrite an existing -o file
};

const char* kOptions =
    "options: --target host|<Halide target>, -o FILE, --force (overwrite FILE), --function NAME, --db PATH|none, "
    "--model NAME (a model that shares a generator's name)";

bool is_c_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

Args parse(const std::vector<std::string>& args) {
  Args a;
  bool have_generator = false;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) user_error("autoschedule: ", args[i], " needs a value");
      return args[++i];
    };
    if (args[i] == "--target") a.target = value();
    else if (args[i] == "-o") a.out = value();
    else if (args[i] == "--force") a.force = true;
    else if (args[i] == "--function") {
      a.function = value();
      if (!is_c_identifier(a.function)) {
        user_error("autoschedule: --function '", a.function, "' is not a C++ identifier (letters, digits and _, "
                   "not starting with a digit)");
      }
    }
    else if (args[i] == "--db") a.db = value();
    else if (!args[i].empty() && args[i][0] == '-' && args[i] != "--model") {
      user_error("autoschedule: unknown option '", args[i], "'; ", kOptions);
    }
    else if (have_generator) user_error("autoschedule: one generator or model at a time, not '", args[i], "' too");
    else if (args[i] == "--model") a.model = value(), have_generator = true;
    else if (is_model_name(args[i])) a.model = args[i], have_generator = true;
    else a.generator = parse_generator_arg(args[i], "autoschedule"), have_generator = true;
    if (!a.generator.name.empty()) check_generator_or_model(a.generator.name, "autoschedule");
  }
  if (!have_generator) {
    user_error("autoschedule: no generator or model; usage: kiln autoschedule <generator>[:param=value...]|<model> ",
               kOptions);
  }
  return a;
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
  if (!s.tuned) body = "    // Kiln autoscheduler (cost model); predicted " + std::to_string(s.predicted_s * 1e3) + " ms\n" + body;
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
  return 0;
}

}  // namespace

int autoschedule(const std::vector<std::string>& argv) {
  const Args a = parse(argv);
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

}  // namespace kiln::cli
