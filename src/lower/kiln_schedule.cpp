#include "lower/kiln_schedule.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <optional>
#include <sstream>

#include "autoscheduler/autoscheduler.h"
#include "core/error.h"
#include "core/log.h"
#include "lower/batch_fusion.h"
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

// Whether every RDom extent of an accumulator's update is a constant.
bool constant_reduction(const Halide::Func& acc) {
  for (const Halide::Internal::ReductionVariable& rv : acc.function().update(0).schedule().rvars()) {
    if (!Halide::Internal::as_const_int(rv.extent)) return false;
  }
  return true;
}

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

// A conv2d accumulator whose reduction (channels in x window) is of known size; one of a
// dynamic size keeps the rules' tile.
bool is_sized_conv_accumulator(const StageInfo& s) { return is_conv_accumulator(s) && constant_reduction(s.func); }

// A matmul accumulator whose sizes, k included, are all known (a dynamic one keeps the
// rules' tasks).
bool is_sized_matmul_accumulator(const StageInfo& s) {
  return s.extents.size() >= 2 && s.func.name().rfind("matmul_acc", 0) == 0 && s.func.has_update_definition() &&
         std::find(s.extents.begin(), s.extents.end(), 0) == s.extents.end() && constant_reduction(s.func);
}

// What prepare_kiln_schedule decided.
struct Prepared {
  autoschedule::FixedFuncs fixed;
  std::string fingerprint;                        // the tuning database's key
  std::optional<autoschedule::TuningEntry> entry;  // the database's entry for it, when read and fitting
  std::string db;                                 // the database's path, or "none"
  // The sizes chosen within the rules' loops (conv2d tiles, matmul tasks), by key, and
  // their runner-ups.
  autoschedule::Knobs contractions;
  std::vector<autoschedule::Alternative> alternatives;
  // The matmul accumulators run a task per batch element (MatmulTasks::per_batch), in
  // stage order: after the search, apply_batch_fusion moves their batched operands in.
  std::vector<std::string> per_batch;
};

// Whether every conv tile and matmul task knob of `knobs` names a stage of `lowered` of
// its kind (by key) and fits; else why not.
std::string rules_knobs_misfit(const autoschedule::Knobs& knobs, const LoweredGraph& lowered,
                               const std::map<std::string, std::string>& key_of, const autoschedule::MachineModel& m) {
  auto names = [&](const std::string& key, bool (*kind)(const StageInfo&)) {
    for (const StageInfo& s : lowered.stages) {
      auto k = key_of.find(s.func.name());
      if (kind(s) && k != key_of.end() && k->second == key) return true;
    }
    return false;
  };
  for (const auto& [key, t] : knobs.conv_tiles) {
    if (!names(key, is_conv_accumulator)) return "it names the conv2d '" + key + "', which this pipeline lacks";
    if (!autoschedule::conv_tile_fits(t, m)) {
      return key + "'s tile (" + std::to_string(t.vectors) + " vectors x " + std::to_string(t.channels) +
             " channels) does not fit " + std::to_string(m.registers) + " vector registers";
    }
  }
  for (const auto& [key, t] : knobs.matmul_tasks) {
    if (!names(key, is_sized_matmul_accumulator)) {
      return "it names the matmul '" + key + "', which this pipeline lacks (or whose sizes are not all static)";
    }
    if (!autoschedule::matmul_tasks_valid(t)) {
      return key + "'s tasks (" + std::to_string(t.band) + " row tiles x " + std::to_string(t.column_tiles) +
             " column tiles) are not valid: at least 1 row tile, and 1 or more column tiles or 0 for all";
    }
    if (!t.pack_b) {
      for (const StageInfo& s : lowered.stages) {
        auto k = key_of.find(s.func.name());
        if (k != key_of.end() && k->second == key && !matmul_reads_b_in_place(s.func)) {
          return key + " reads b in place (\"pack_b\": false), but its b is not an input or a constant stored with "
                       "its columns innermost: pack it (\"pack_b\": true)";
        }
      }
    }
  }
  return "";
}

// Each runner-up of a size chosen for `func` (knob `key` of kind `field`), as a candidate's
// one change.
template <class T>
void add_runner_ups(const std::string& func, const std::string& key, const std::vector<std::pair<T, double>>& runner_ups,
                    std::map<std::string, T> autoschedule::Knobs::*field, std::vector<autoschedule::Alternative>* out) {
  for (const auto& [other, extra_s] : runner_ups) {
    autoschedule::Knobs change;
    (change.*field)[key] = other;
    out->push_back({func, change, extra_s});
  }
}

Prepared prepare(LoweredGraph& lowered, const Halide::Target& target, const SizeEstimates& sizes,
                 const KilnScheduleOptions& options, const autoschedule::MachineModel& machine) {
  Prepared p;
  set_estimates(lowered, sizes);
  // The key before anything is scheduled: a conv2d's tile or a matmul's tasks, which the
  // entry may hold, must not change it.
  p.fingerprint = autoschedule::pipeline_fingerprint(lowered.pipeline());
  p.db = options.db == "none" ? options.db : autoschedule::tuning_db_path(options.db);
  const std::map<std::string, std::string> key_of = autoschedule::func_keys(lowered.pipeline());
  if (!options.knobs && p.db != "none") p.entry = autoschedule::find_tuned_entry(p.fingerprint, target, machine, p.db);
  if (p.entry && !target.has_gpu_feature()) {
    if (const std::string why = rules_knobs_misfit(p.entry->knobs, lowered, key_of, machine); !why.empty()) {
      std::cerr << "Warning: kiln tuning database " << p.db << ": the entry for " << p.entry->generator << " ("
                << p.fingerprint << ") does not fit the pipeline: " << why << "; using the cost model\n";
      p.entry.reset();
    }
  }
  const autoschedule::Knobs* knobs = options.knobs ? options.knobs : p.entry ? &p.entry->knobs : nullptr;
  // Contractions keep the rules' loops and packed operands (on a GPU: matmuls, whose
  // operands the rules store contiguously); the search places everything else around
  // them (reductions per row of their consumers, pointwise chains inlined or stored, loop
  // shapes of the outputs; on a GPU conv2d too). On a CPU each conv2d's register tile and
  // each matmul's tasks within those loops are knobs, else the cost model's: the rules'
  // two vectors of columns would compute mostly padding on a narrow row, and their bands
  // of 8 row tiles leave cores idle on small batches.
  if (target.has_gpu_feature()) {
    p.fixed = apply_default_gpu_matmul_schedule(lowered, target);
    return p;
  }
  if (options.knobs) {
    if (const std::string why = rules_knobs_misfit(*options.knobs, lowered, key_of, machine); !why.empty()) {
      user_error("the contractions' sizes given do not fit this pipeline: ", why);
    }
  }
  CpuContractionChoices choices;
  choices.conv_tile = [&](const StageInfo& conv, int lanes) {
    // A stage the outputs do not read (an empty slice of it, say) keeps the rules' tile.
    if (!is_conv_accumulator(conv) || !key_of.count(conv.func.name())) return CpuConvTile{};
    const std::string& key = key_of.at(conv.func.name());
    const std::vector<int64_t>& e = conv.extents;  // ow, o, oh, n
    const std::string what = conv.func.name() + " (" + std::to_string(e[0]) + " columns, " + std::to_string(e[1]) + " channels)";
    if (knobs && knobs->conv_tiles.count(key)) {
      const autoschedule::ConvTile t = knobs->conv_tiles.at(key);
      log("schedule", "Kiln: " + what + ": register tiles of " + std::to_string(t.vectors * lanes) + " columns x " +
                          std::to_string(t.channels) + " channels (knob)");
      p.contractions.conv_tiles[key] = t;
      return CpuConvTile{t.vectors, t.channels};
    }
    if (!is_sized_conv_accumulator(conv)) return CpuConvTile{};
    std::string why;
    std::vector<std::pair<autoschedule::ConvTile, double>> runner_ups;
    const autoschedule::ConvTile t = autoschedule::choose_conv_tile(
        double(e[0]), double(e[1]), double(e[2]) * double(std::max<int64_t>(1, e[3])), reduction_steps(conv.func), lanes,
        conv.func.type().bytes(), machine, &why, &runner_ups);
    log("schedule", "Kiln: " + what + ": register tiles of " + why);
    add_runner_ups(conv.func.name(), key, runner_ups, &autoschedule::Knobs::conv_tiles, &p.alternatives);
    p.contractions.conv_tiles[key] = t;
    return CpuConvTile{t.vectors, t.channels};
  };
  choices.matmul_tasks = [&](const StageInfo& matmul, int lanes, CpuMatmulTile tile) {
    if (!is_sized_matmul_accumulator(matmul) || !key_of.count(matmul.func.name())) return CpuMatmulTasks{};
    const std::string& key = key_of.at(matmul.func.name());
    const std::vector<int64_t>& e = matmul.extents;  // n, m, batch...
    autoschedule::ContractionShape shape;
    shape.n = double(e[0]);
    shape.m = double(e[1]);
    for (size_t d = 2; d < e.size(); ++d) shape.batch *= double(e[d]);
    shape.k = reduction_steps(matmul.func);
    shape.bytes = matmul.func.type().bytes();
    std::ostringstream what;
    what << matmul.func.name() << " (" << e[1] << " x " << e[0] << ", k " << shape.k << ", batch " << shape.batch << ")";
    // A task per batch element: every row tile and column tile of one.
    const int row_tiles = int((e[1] + tile.rows - 1) / tile.rows);
    auto chosen = [&](const autoschedule::MatmulTasks& t) {
      p.contractions.matmul_tasks[key] = t;
      if (t.per_batch) p.per_batch.push_back(matmul.func.name());
      return t.per_batch ? CpuMatmulTasks{row_tiles, 0, t.pack_b} : CpuMatmulTasks{t.band, t.column_tiles, t.pack_b};
    };
    if (knobs && knobs->matmul_tasks.count(key)) {
      const autoschedule::MatmulTasks t = knobs->matmul_tasks.at(key);
      log("schedule", "Kiln: " + what.str() + ": " + autoschedule::Knobs{.matmul_tasks = {{key, t}}}.str() + " (knob)");
      return chosen(t);
    }
    std::string why;
    std::vector<std::pair<autoschedule::MatmulTasks, double>> runner_ups;
    autoschedule::MatmulTasks t =
        autoschedule::choose_matmul_tasks(shape, tile.rows, tile.vectors, lanes, machine, &why, &runner_ups);
    // b read in place where it can be and stays in L2 (half of it, per batch element):
    // packing a small b costs a pass over it per call, a large one read in place streams
    // from L3 with a stride (docs/autoscheduler.md gives the measurements). With few rows
    // (8 row tiles or fewer: batch 1 to about 32) the product reads b about once anyway, and
    // packing it triples the traffic: on the 2-core VM a [1, 768] x [768, 3072] product
    // took 0.73 ms packed, 0.17 in place (PyTorch 0.18); LLaMA's [7, 4096] x [4096, 4096]
    // 8.2 ms against 3.1 (PyTorch 2.8). At 20 row tiles in place lost (M = 100: 3.4 ms
    // against 2.0).
    const bool few_rows = row_tiles <= 8;
    const bool in_place = matmul_reads_b_in_place(matmul.func) &&
                          (few_rows || shape.k * shape.n * shape.bytes <= machine.l2 / 2.0);
    if (few_rows && in_place) why += "; few rows";
    if (in_place) why += "; b read in place";
    for (auto& [other, extra] : runner_ups) other.pack_b = !in_place;
    if (matmul_reads_b_in_place(matmul.func)) {
      autoschedule::MatmulTasks flipped = t;
      flipped.pack_b = in_place;
      runner_ups.push_back({flipped, 0.0});
    }
    t.pack_b = !in_place;
    // Batches that fill the cores run a task each, computing their batched operands in
    // it (src/lower/batch_fusion.h): one parallel loop instead of one per operand, and each
    // batch element's data in one core's cache. The tasks chosen within the rules' loops are
    // the runner-up, and the other way round.
    const autoschedule::MatmulTasks fused{row_tiles, 0, true, t.pack_b};
    if (shape.batch > 1 && batch_tasks_fill_cores(shape.batch, machine)) {
      log("schedule", "Kiln: " + what.str() + ": a task per batch element (" + std::to_string(int64_t(shape.batch)) +
                          " tasks on " + std::to_string(machine.cores) + " cores), its batched operands computed in it; "
                          "else " + why);
      runner_ups.insert(runner_ups.begin(), {t, 0.0});
      add_runner_ups(matmul.func.name(), key, runner_ups, &autoschedule::Knobs::matmul_tasks, &p.alternatives);
      return chosen(fused);
    }
    log("schedule", "Kiln: " + what.str() + ": " + why);
    if (shape.batch > 1) runner_ups.push_back({fused, 0.0});
    add_runner_ups(matmul.func.name(), key, runner_ups, &autoschedule::Knobs::matmul_tasks, &p.alternatives);
    return chosen(t);
  };
  // The values stored for contractions to read are the search's to loop (rows in tasks
  // of a band it prices, a knob), as for the pointwise Funcs it stores itself.
  choices.stored_loops_to_caller = true;
  p.fixed = apply_default_cpu_contraction_schedule(lowered, target, choices);
  return p;
}

}  // namespace

autoschedule::FixedFuncs prepare_kiln_schedule(LoweredGraph& lowered, const Halide::Target& target,
                                               const SizeEstimates& sizes, const KilnScheduleOptions& options,
                                               std::vector<std::string>* per_batch) {
  Prepared p = prepare(lowered, target, sizes, options, autoschedule::machine_model(target));
  if (per_batch) *per_batch = p.per_batch;
  return p.fixed;
}

std::string fuse_batches(LoweredGraph& lowered, const std::vector<std::string>& per_batch) {
  const std::map<std::string, std::string> key_of = autoschedule::func_keys(lowered.pipeline());
  std::string moved;
  for (const std::string& acc : per_batch) {
    std::string why;
    const std::string members = apply_batch_fusion(lowered.pipeline(), acc, &why);
    if (members.empty()) {
      log("schedule", "Kiln: " + acc + ": a task per batch element, nothing moved into it: " + why);
    } else {
      moved += "    // " + key_of.at(acc) + ": a task per batch element, which computes " + members + "\n";
    }
  }
  return moved;
}

autoschedule::FixedFuncs prepare_kiln_schedule_for_tuning(LoweredGraph& lowered, const Halide::Target& target,
                                                          const SizeEstimates& sizes, std::string* fingerprint,
                                                          std::vector<autoschedule::Alternative>* rules_alternatives) {
  KilnScheduleOptions options;
  options.db = "none";
  Prepared p = prepare(lowered, target, sizes, options, autoschedule::machine_model(target));
  *fingerprint = p.fingerprint;
  *rules_alternatives = std::move(p.alternatives);
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
  for (const auto& [name, how] : fixed) {
    if (how == autoschedule::Fixed::Stored) continue;  // its loops are in the source
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
  // Applied again by kiln::scheduled_backend from the contractions' sizes: said, not
  // written out.
  const std::string moved = fuse_batches(lowered, prepared.per_batch);
  if (!moved.empty()) {
    out.source += "    // The contractions' \"per_batch\" matmuls (kiln::scheduled_backend moves their batched\n"
                  "    // operands into their tasks after this function):\n" + moved;
  }
  out.contractions = autoschedule::contraction_knobs_to_text(prepared.contractions);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream o;
  o << "Kiln: predicted " << out.predicted_s * 1e3 << " ms, searched in " << ms << " ms";
  log("schedule", o.str());
  return out;
}

}  // namespace kiln
