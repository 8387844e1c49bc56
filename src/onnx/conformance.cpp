#include "onnx/conformance.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

#include <onnx/onnx_pb.h>

#include "graph/interpreter.h"
#include "ops/api.h"
#include "onnx/onnx.h"

namespace kiln::onnx {

namespace fs = std::filesystem;

namespace {

// "" where `got` matches `want` at ONNX's tolerances, else what differs.
std::string compare(const Tensor& got, const Tensor& want, double rtol = 1e-3) {
  if (got.dtype() != want.dtype()) {
    return std::string("dtype ") + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  }
  if (got.shape() != want.shape()) return "shape " + got.shape().str() + ", expected " + want.shape().str();
  const std::vector<double> g = got.to_host().to_doubles(), w = want.to_doubles();
  const bool exact = !is_float(want.dtype());
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    const bool ok = exact ? g[i] == w[i] : (g[i] == w[i] || std::abs(g[i] - w[i]) <= 1e-7 + rtol * std::abs(w[i]));
    if (!ok) return "element " + std::to_string(i) + " is " + std::to_string(g[i]) + ", expected " + std::to_string(w[i]);
  }
  return "";
}

std::vector<Tensor> numbered(const fs::path& dir, const std::string& stem) {
  std::vector<Tensor> out;
  for (int k = 0;; ++k) {
    const fs::path p = dir / (stem + "_" + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    out.push_back(load_tensor(p.string()));
  }
  return out;
}

// The model's graph inputs, initializers left out, in order.
std::vector<std::string> input_names_of(const std::string& model) {
  std::ifstream f(model, std::ios::binary);
  ::onnx::ModelProto proto;
  if (!proto.ParseFromIstream(&f)) throw Error("'" + model + "' is not an ONNX model");
  std::set<std::string> weights;
  for (const auto& t : proto.graph().initializer()) weights.insert(t.name());
  std::vector<std::string> names;
  for (const auto& v : proto.graph().input()) {
    if (!weights.count(v.name())) names.push_back(v.name());
  }
  return names;
}

}  // namespace

std::vector<Tensor> dummy_inputs(const Model& m) {
  std::vector<Tensor> inputs;
  for (const TensorMeta& t : m.inputs) {
    const int64_t n = t.shape.numel();
    std::vector<double> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = double(float(double(i) / double(n)));
    inputs.push_back(cast(from_vector(v, t.shape, DType::F64), t.dtype));
  }
  return inputs;
}

CaseResult run_light_model(const std::string& model, double rtol) {
  try {
    const Model m = load(model);
    const std::vector<Tensor> inputs = dummy_inputs(m);
    const std::string stem = model.substr(0, model.size() - std::string(".onnx").size());
    const std::vector<Tensor> got = compile(m.fn, m.compile_options())(inputs);
    for (size_t k = 0; k < got.size(); ++k) {
      const std::string expected = stem + "_output_" + std::to_string(k) + ".pb";
      if (!fs::exists(expected)) continue;
      const std::string diff = compare(got[k], load_tensor(expected), rtol);
      if (!diff.empty()) return {CaseResult::Fail, "output " + std::to_string(k) + ": " + diff};
    }
    return {};
  } catch (const Unsupported& e) {
    return {CaseResult::Unsupported, e.what()};
  } catch (const std::exception& e) {
    return {CaseResult::Fail, e.what()};
  }
}

std::vector<std::string> case_dirs(const std::string& root) {
  std::vector<std::string> out;
  if (!fs::is_directory(root)) return out;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Whether the load failed only because an input's values shape the graph.
bool needs_constant_inputs(const Unsupported& e) {
  return std::string(e.what()).find("must be known when the model is traced") != std::string::npos;
}

CaseResult run_case(const std::string& dir, CaseMode mode) {
  try {
    const std::string model = (fs::path(dir) / "model.onnx").string();
    std::optional<Model> plain;
    try {
      plain = load(model);
    } catch (const Unsupported& e) {
      if (!needs_constant_inputs(e)) throw;
    }
    std::vector<fs::path> sets;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
    }
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) return {CaseResult::Fail, "no test_data_set_* folder"};
    for (const fs::path& set : sets) {
      std::vector<Tensor> inputs = numbered(set, "input");
      const std::vector<Tensor> want = numbered(set, "output");
      // A model whose integer inputs shape its graph (a Reshape's shape given as an input)
      // takes them as constants of this data set; so do short float vectors after the
      // first input (a Resize's scales and roi, a OneHot's depth).
      std::optional<Model> bound;
      if (!plain) {
        LoadOptions o;
        const std::vector<std::string> names = input_names_of(model);
        std::vector<Tensor> rest;
        for (size_t k = 0; k < inputs.size() && k < names.size(); ++k) {
          const bool shaping_floats = k > 0 && is_float(inputs[k].dtype()) && inputs[k].shape().rank() <= 1 &&
                                      inputs[k].numel() <= 16;
          if (inputs[k].dtype() == DType::I64 || inputs[k].dtype() == DType::I32 || inputs[k].dtype() == DType::Bool ||
              shaping_floats) {
            o.constant_inputs[names[k]] = inputs[k];
          } else {
            rest.push_back(inputs[k]);
          }
        }
        bound = load(model, o);
        inputs = rest;
      }
      const Model& m = plain ? *plain : *bound;
      std::vector<Tensor> got;
      if (mode == CaseMode::Reference) {
        got = interpret(trace(m.fn, inputs, m.compile_options()), inputs, InterpretMode::Reference);
      } else {
        got = compile(m.fn, m.compile_options())(inputs);
      }
      if (got.size() != want.size()) {
        return {CaseResult::Fail, std::to_string(got.size()) + " outputs, expected " + std::to_string(want.size())};
      }
      for (size_t k = 0; k < got.size(); ++k) {
        const std::string diff = compare(got[k], want[k]);
        if (!diff.empty()) {
          return {CaseResult::Fail, set.filename().string() + ", output " + std::to_string(k) + " ('" +
                                        m.output_names[k] + "'): " + diff};
        }
      }
    }
    return {};
  } catch (const Unsupported& e) {
    return {CaseResult::Unsupported, e.what()};
  } catch (const std::exception& e) {
    return {CaseResult::Fail, e.what()};
  }
}

}  // namespace kiln::onnx
