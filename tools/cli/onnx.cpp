// kiln run / kiln graph / kiln onnx-support: ONNX models from the command line.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/npy.h"
#include "core/error.h"
#include "kiln.h"
#include "onnx/conformance.h"
#include "onnx/onnx.h"

namespace kiln::cli {

namespace fs = std::filesystem;

namespace {

struct RunArgs {
  std::string model, output_dir = ".", target = "host";
  std::vector<std::string> inputs;
};

// A seeded random tensor for an input the user did not give.
Tensor random_input(const TensorMeta& m, uint64_t seed) {
  if (m.dtype == DType::Bool) return lt(rand(m.shape, seed), 0.5);
  if (m.dtype == DType::I32 || m.dtype == DType::I64) return cast(floor(rand(m.shape, seed, 0, 10)), m.dtype);
  return cast(randn(m.shape, seed), m.dtype);
}

std::string file_name(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_';
  return s.empty() || s[0] == '.' ? "_" + s : s;
}

int run(const RunArgs& a) {
  const onnx::Model m = onnx::load(a.model);
  std::map<std::string, std::string> given;
  for (const std::string& kv : a.inputs) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) throw Error("run: --input takes name=file.npy, not '" + kv + "'");
    given[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [name, file] : given) {
    if (std::find(m.input_names.begin(), m.input_names.end(), name) == m.input_names.end()) {
      std::string names;
      for (const std::string& n : m.input_names) names += (names.empty() ? "" : ", ") + n;
      throw Error("run: the model has no input '" + name + "'; its inputs are " + names);
    }
  }
  std::vector<Tensor> inputs;
  for (size_t k = 0; k < m.input_names.size(); ++k) {
    const std::string& name = m.input_names[k];
    const TensorMeta& want = m.inputs[k];
    auto it = given.find(name);
    if (it == given.end()) {
      inputs.push_back(random_input(want, k));
      std::fprintf(stderr, "input '%s': not given, seeded random %s (seed %zu)\n", name.c_str(), want.str().c_str(), k);
      continue;
    }
    Tensor t = read_npy(it->second);
    if (t.dtype() != want.dtype || t.shape().rank() != want.shape.rank()) {
      throw Error("run: input '" + name + "' (" + it->second + ") is " + t.meta().str() + "; the model takes " +
                  want.str() + " (named dims may take any size)");
    }
    for (int d = 0; d < want.shape.rank(); ++d) {
      bool named = false;
      for (const auto& nd : m.named_dims) named = named || (nd.first == std::pair<int, int>{int(k), d});
      if (!named && t.shape()[d].size != want.shape[d].size) {
        throw Error("run: input '" + name + "' (" + it->second + ") is " + t.meta().str() + "; the model takes " +
                    want.str());
      }
    }
    inputs.push_back(t);
  }
  CompileOptions o = m.compile_options();
  o.target = a.target;
  if (a.target.find("cuda") != std::string::npos) {
    for (Tensor& t : inputs) t = t.to(Device::cuda());
  }
  const std::vector<Tensor> out = compile(m.fn, o)(inputs);
  fs::create_directories(a.output_dir);
  for (size_t k = 0; k < out.size(); ++k) {
    const std::string path = (fs::path(a.output_dir) / (file_name(m.output_names[k]) + ".npy")).string();
    write_npy(path, out[k]);
    std::printf("%s: %s -> %s\n", m.output_names[k].c_str(), out[k].meta().str().c_str(), path.c_str());
  }
  return 0;
}

int graph(const std::string& model, const std::string& dot) {
  const onnx::Model m = onnx::load(model);
  std::printf("%s", m.graph.str().c_str());
  if (!dot.empty()) {
    std::FILE* f = std::fopen(dot.c_str(), "w");
    if (!f) throw Error("graph: cannot write '" + dot + "'");
    std::fputs(m.graph.to_dot(fs::path(model).stem().string()).c_str(), f);
    std::fclose(f);
  }
  return 0;
}

struct SupportArgs {
  std::string data = std::string(onnx::kDebianTestData) + "/node";
  std::string filter;
  bool compiled = false, all = false;
};

int support(const SupportArgs& a) {
  std::vector<std::string> dirs = onnx::case_dirs(a.data);
  if (dirs.empty()) {
    throw Error("onnx-support: no ONNX test cases under '" + a.data + "' (Debian: apt install libonnx-testdata)");
  }
  std::regex re;
  try {
    re = std::regex(a.filter.empty() ? ".*" : a.filter);
  } catch (const std::regex_error& e) {
    throw Error("onnx-support: --filter '" + a.filter + "' is not a regular expression: " + e.what());
  }
  size_t pass = 0, total = 0, failed = 0;
  for (const std::string& dir : dirs) {
    const std::string name = fs::path(dir).filename().string();
    if (!std::regex_search(name, re)) continue;
    ++total;
    const onnx::CaseResult r = onnx::run_case(dir, a.compiled ? onnx::CaseMode::Compiled : onnx::CaseMode::Reference);
    if (r.status == onnx::CaseResult::Pass) {
      ++pass;
      if (a.all) std::printf("%-60s pass\n", name.c_str());
    } else {
      failed += r.status == onnx::CaseResult::Fail;
      std::string why = r.detail.substr(0, 200);
      for (char& c : why) c = c == '\n' ? ' ' : c;
      std::printf("%-60s %s: %s\n", name.c_str(), r.status == onnx::CaseResult::Fail ? "FAIL" : "unsupported", why.c_str());
    }
    std::fflush(stdout);
  }
  if (total == 0) throw Error("onnx-support: --filter '" + a.filter + "' matches none of the " + std::to_string(dirs.size()) + " cases");
  const std::string set = fs::path(a.data).filename().string();
  std::printf("%s tests: %zu of %zu pass (%.1f%%)\n", set.empty() ? "the" : set.c_str(), pass, total,
              100.0 * double(pass) / double(total));
  return failed ? 1 : 0;
}

}  // namespace

void add_onnx(CLI::App& kiln, int* status) {
  auto r = std::make_shared<RunArgs>();
  CLI::App* c = kiln.add_subcommand("run", "run an ONNX model on .npy inputs and write its outputs as .npy files");
  c->add_option("model", r->model, "the .onnx file")->required();
  c->add_option("--input", r->inputs, "an input as name=file.npy (repeat; inputs not given are seeded random)");
  c->add_option("--output-dir", r->output_dir, "where each output goes, as <output name>.npy (default .)");
  c->add_option("--target", r->target, "host (default) or host-cuda")->type_name("host|host-cuda");
  c->callback([r, status] { *status = run(*r); });

  auto g = std::make_shared<std::pair<std::string, std::string>>();
  CLI::App* gc = kiln.add_subcommand("graph", "print the kiln graph an ONNX model imports to");
  gc->add_option("model", g->first, "the .onnx file")->required();
  gc->add_option("--dot", g->second, "also write it as Graphviz to FILE")->type_name("FILE");
  gc->callback([g, status] { *status = graph(g->first, g->second); });

  auto s = std::make_shared<SupportArgs>();
  CLI::App* sc = kiln.add_subcommand("onnx-support",
                                     "run ONNX's node tests: which pass, and why the others are not supported");
  sc->add_option("--data", s->data, "a folder of ONNX test cases (default: Debian's libonnx-testdata node tests)");
  sc->add_option("--filter", s->filter, "only the cases whose name matches this regex");
  sc->add_flag("--compiled", s->compiled, "run them compiled (default: kiln's f64 reference interpreter on the import)");
  sc->add_flag("--all", s->all, "list the passing cases too");
  sc->footer("Exit status 1 when a case of a supported operator fails (a wrong value, or an error that is not 'unsupported').\n");
  sc->callback([s, status] { *status = support(*s); });
}

}  // namespace kiln::cli
