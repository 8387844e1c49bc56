#include "lower/kiln_schedule.h"

#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>

#include "autoscheduler/analysis.h"
#include "autoscheduler/autoschedule.h"
#include "autoscheduler/fingerprint.h"
#include "autoscheduler/machine_model.h"
#include "autoscheduler/search.h"
#include "autoscheduler/tuning_db.h"
#include "core/error.h"
#include "core/log.h"
#include "lower/default_schedule.h"

namespace kiln {

// Halide numbers dims innermost first, kiln outermost first; every dim starts at 0.
Halide::Region estimate_region(const std::vector<int64_t>& kiln_sizes) {
  Halide::Region r;
  for (auto it = kiln_sizes.rbegin(); it != kiln_sizes.rend(); ++it) r.push_back({0, int(*it)});
  return r;
}

namespace {

void set_estimates(LoweredGraph& lowered, const SizeEstimates& sizes) {
  KILN_CHECK(sizes.inputs.size() == lowered.inputs.size() && sizes.outputs.size() == lowered.outputs.size(),
             "size estimates for ", sizes.inputs.size(), " inputs and ", sizes.outputs.size(),
             " outputs, but the pipeline has ", lowered.inputs.size(), " and ", lowered.outputs.size());
  for (size_t i = 0; i < lowered.inputs.size(); ++i) lowered.inputs[i].set_estimates(estimate_region(sizes.inputs[i]));
  for (size_t i = 0; i < lowered.outputs.size(); ++i) lowered.outputs[i].set_estimates(estimate_region(sizes.outputs[i]));
}

}  // namespace

Halide::Func pipeline_func(const Halide::Pipeline& pipeline, const std::string& key) {
  for (const auto& [name, k] : autoschedule::func_keys(pipeline)) {
    if (k != key) continue;
    for (const Halide::Func& out : pipeline.outputs()) {
      if (out.name() == name) return out;
      for (const auto& [callee, function] : Halide::Internal::find_transitive_calls(out.function())) {
        if (callee == name) return Halide::Func(function);
      }
    }
  }
  user_error("schedule file: this pipeline has no Func '", key,
             "'; the file was written for another model, other sizes or another version of kiln; write it again "
             "with `kiln autoschedule <model>`");
}

namespace {

// Reduction steps of a contraction accumulator: the product of its update's RDom extents.
double reduction_steps(const Halide::Func& acc) {
  double steps = 1;
  for (const Halide::Internal::ReductionVariable& rv : acc.function().update(0).schedule().rvars()) {
    const std::optional<int64_t> e = Halide::Internal::as_const_int(rv.extent);
    KILN_CHECK(e, acc.name(), "'s reduction has an extent that is not a constant");
    steps *= double(*e);
  }
  return steps;
}

bool is_conv_accumulator(const StageInfo& s) {
  return s.extents.size() == 4 && s.func.name().rfind("conv2d_acc", 0) == 0 && s.func.has_update_definition();
}

// What prepare_kiln_schedule decided.
struct Prepared {
  autoschedule::FixedFuncs fixed;
  std::string fingerprint;                        // the tuning database's key
  std::optional<autoschedule::TuningEntry> entry;  // the database's entry for it, when read and fitting
  std::string db;                                 // the database's path, or "none"
  std::vector<autoschedule::Alternative> conv_alternatives;
};

// Whether every conv tile of `knobs` names a conv2d accumulator of `lowered` (by key) and
// fits the register file; else why not.
std::string conv_tiles_misfit(const autoschedule::Knobs& knobs, const LoweredGraph& lowered,
                              const std::map<std::string, std::string>& key_of, const autoschedule::MachineModel& m) {
  for (const auto& [key, t] : knobs.conv_tiles) {
    bool found = false;
    for (const StageInfo& s : lowered.stages) {
      auto k = key_of.find(s.func.name());
      found = found || (is_conv_accumulator(s) && k != key_of.end() && k->second == key);
    }
    if (!found) return "it names the conv2d '" + key + "', which this pipeline lacks";
    if (!autoschedule::conv_tile_fits(t, m)) {
      return key + "'s tile (" + std::to_string(t.vectors) + " vectors x " + std::to_string(t.channels) +
             " channels) does not fit " + std::to_string(m.registers) + " vector registers";
    }
  }
  return "";
}

Prepared prepare(LoweredGraph& lowered, const Halide::Target& target, const SizeEstimates& sizes,
                 const KilnScheduleOptions& options, const autoschedule::MachineModel& machine) {
  Prepared p;
  set_estimates(lowered, sizes);
  // The key before anything is scheduled: a conv2d's tile, which the entry may hold,
  // must not change it.
  p.fingerprint = autoschedule::pipeline_fingerprint(lowered.pipeline());
  p.db = options.db == "none" ? options.db : autoschedule::tuning_db_path(options.db);
  const std::map<std::string, std::string> key_of = autoschedule::func_keys(lowered.pipeline());
  if (!options.knobs && p.db != "none") p.entry = autoschedule::find_tuned_entry(p.fingerprint, target, machine, p.db);
  if (p.entry && !target.has_gpu_feature()) {
    if (const std::string why = conv_tiles_misfit(p.entry->knobs, lowered, key_of, machine); !why.empty()) {
      std::cerr << "Warning: kiln tuning database " << p.db << ": the entry for " << p.entry->generator << " ("
                << p.fingerprint << ") does not fit the pipeline: " << why << "; using the cost model\n";
      p.entry.reset();
    }
  }
  const autoschedule::Knobs* knobs = options.knobs ? options.knobs : p.entry ? &p.entry->knobs : nullptr;
  // Contractions keep the rules' loops and packed operands (on a GPU: matmuls, whose
  // operands the rules store contiguously); the search places everything else around
  // them (reductions per row of their consumers, pointwise chains inlined or stored, loop
  // shapes of the outputs; on a GPU conv2d too). On a CPU each conv2d's register tile
  // within those loops is a knob, else the cost model's: the rules' two vectors of
  // columns would compute mostly padding on a narrow row.
  if (target.has_gpu_feature()) {
    p.fixed = apply_default_gpu_matmul_schedule(lowered, target);
    return p;
  }
  if (options.knobs) {
    if (const std::string why = conv_tiles_misfit(*options.knobs, lowered, key_of, machine); !why.empty()) {
      user_error("tuning knobs: ", why);
    }
  }
  p.fixed = apply_default_cpu_contraction_schedule(lowered, target, [&](const StageInfo& conv, int lanes) {
    if (!is_conv_accumulator(conv)) return CpuConvTile{};
    const std::string& key = key_of.at(conv.func.name());
    const std::vector<int64_t>& e = conv.extents;  // ow, o, oh, n
    const std::string what = conv.func.name() + " (" + std::to_string(e[0]) + " columns, " + std::to_string(e[1]) + " channels)";
    if (knobs && knobs->conv_tiles.count(key)) {
      const autoschedule::ConvTile t = knobs->conv_tiles.at(key);
      log("schedule", "Kiln: " + what + ": register tiles of " + std::to_string(t.vectors * lanes) + " columns x " +
                          std::to_string(t.channels) + " channels (knob)");
      return CpuConvTile{t.vectors, t.channels};
    }
    std::string why;
    std::vector<std::pair<autoschedule::ConvTile, double>> runner_ups;
    const autoschedule::ConvTile t = autoschedule::choose_conv_tile(
        double(e[0]), double(e[1]), double(e[2]) * double(std::max<int64_t>(1, e[3])), reduction_steps(conv.func), lanes,
        conv.func.type().bytes(), machine, &why, &runner_ups);
    log("schedule", "Kiln: " + what + ": register tiles of " + why);
    for (const auto& [other, extra_s] : runner_ups) {
      autoschedule::Knobs change;
      change.conv_tiles[key] = other;
      p.conv_alternatives.push_back({conv.func.name(), change, extra_s});
    }
    return CpuConvTile{t.vectors, t.channels};
  });
  return p;
}

}  // namespace

std::map<std::string, bool> prepare_kiln_schedule(LoweredGraph& lowered, const Halide::Target& target,
                                               const SizeEstimates& sizes, const KilnScheduleOptions& options) {
  return prepare(lowered, target, sizes, options, autoschedule::machine_model(target)).fixed;
}

std::map<std::string, bool> prepare_kiln_schedule_for_tuning(LoweredGraph& lowered, const Halide::Target& target,
                                                          const SizeEstimates& sizes, std::string* fingerprint,
                                                          std::vector<autoschedule::Alternative>* conv_alternatives) {
  KilnScheduleOptions options;
  options.db = "none";
  Prepared p = prepare(lowered, target, sizes, options, autoschedule::machine_model(target));
  *fingerprint = p.fingerprint;
  *conv_alternatives = std::move(p.conv_alternatives);
  return p.fixed;
}

namespace {

// `source` with each `pipeline.get_func(i)` (the search's, in the order of `keys`) made
// `kiln::pipeline_func(pipeline, "<key>")`, which finds the same Func in any process.
std::string funcs_by_key(const std::string& source, const std::vector<std::string>& keys) {
  const std::string call = "pipeline.get_func(";
  std::string out;
  size_t at = 0;
  for (size_t hit; (hit = source.find(call, at)) != std::string::npos;) {
    const size_t close = source.find(')', hit);
    const size_t index = std::stoul(source.substr(hit + call.size(), close - hit - call.size()));
    KILN_CHECK(index < keys.size(), "schedule source names Func ", index, " of ", keys.size());
    out += source.substr(at, hit - at) + "kiln::pipeline_func(pipeline, \"" + keys[index] + "\")";
    at = close + 1;
  }
  return out + source.substr(at);
}

}  // namespace

KilnSchedule apply_kiln_schedule(LoweredGraph& lowered, const Halide::Target& target, const SizeEstimates& sizes,
                                 const KilnScheduleOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const autoschedule::MachineModel machine = autoschedule::machine_model(target);
  log("schedule", "Kiln: machine " + machine.str());
  const Prepared prepared = prepare(lowered, target, sizes, options, machine);
  const autoschedule::FixedFuncs& fixed = prepared.fixed;
  const std::vector<std::string> keys = autoschedule::keys_by_index(lowered.pipeline());  // as the search numbers them
  KilnSchedule out;
  const std::map<std::string, std::string> key_of = autoschedule::func_keys(lowered.pipeline());
  for (const auto& [name, inlined] : fixed) {
    // A fixed Func the outputs no longer reach (a GPU operand read through its wrapper)
    // keeps its stable name.
    auto k = key_of.find(name);
    out.fixed.push_back(k != key_of.end() ? k->second : autoschedule::stable_name(name));
  }
  const autoschedule::Knobs* knobs = options.knobs;
  std::optional<autoschedule::ScheduleOutcome> tuned;
  if (prepared.entry) {
    tuned = autoschedule::apply_found_entry(*prepared.entry, lowered.pipeline(), target, machine, prepared.db, &fixed);
  }
  if (tuned) {
    out.source = tuned->source;
    out.predicted_s = tuned->predicted_s;
    out.tuned = true;
  } else {
    autoschedule::SearchResult r;
    try {
      r = autoschedule::schedule_pipeline(lowered.pipeline(), target, machine, knobs, &fixed);
    } catch (const Halide::CompileError& e) {
      // The search only emits directives it knows Halide accepts; a rejection is kiln's bug.
      KILN_INTERNAL_ERROR("the Kiln scheduler made a schedule that Halide rejects: ", e.what());
    }
    // Estimates come from real inputs, so a warning here means a Func the analysis could
    // not size: worth seeing, not worth failing for.
    for (const std::string& w : r.warnings) log("schedule", "Kiln: " + w);
    out.source = r.source;
    out.predicted_s = r.predicted_s;
  }
  out.source = funcs_by_key(out.source, keys);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream o;
  o << "Kiln: predicted " << out.predicted_s * 1e3 << " ms, searched in " << ms << " ms";
  log("schedule", o.str());
  return out;
}

}  // namespace kiln
