// kiln_fuzz --seed S --count N [--ops a,b] [--paths p,q] [--jobs J] [--max-shrinks K]
//           [--scheduler Kiln|rules] [--program FILE] [--verbose]
// Runs N random programs from seed S down every execution path, prints a one-line summary
// and a minimized C++ reproducer for each distinct failure; exits 1 on any failure.
// --program FILE runs (and shrinks) one program in the text form of program.h instead.
// Golden data (tests/fuzz/golden/README.md):
//   --export DIR   writes the N programs, with their loss weights, as DIR/<seed>_<i>.txt
//                  for make_golden.py to add PyTorch's results to
//   --golden DIR   runs every DIR/*.txt, judging PyTorch's results too
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cpp_printer.h"
#include "fuzzer.h"
#include "kiln.h"
#include "worker.h"

using namespace kiln::fuzz;

namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  std::string item;
  while (std::getline(is, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "kiln_fuzz: " << why
            << "\nusage: kiln_fuzz --seed S --count N [--ops a,b] [--paths p,q] [--jobs J] [--max-shrinks K]"
               " [--shrink-runs R] [--scheduler NAME] [--program FILE] [--print-programs] [--export DIR]"
               " [--golden DIR] [--verbose]\n";
  std::exit(2);
}

// Dropout in training draws from kiln's generator, which PyTorch cannot reproduce.
bool uses_kiln_randomness(const Program& p) {
  for (const OpSpec& op : p.ops)
    if (op.op == "dropout" && op.ints.size() > 1 && op.ints[1] && !op.reals.empty() && op.reals[0] > 0) return true;
  return false;
}

int export_programs(const FuzzOptions& o, const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  int written = 0;
  for (int i = 0; i < o.count; ++i) {
    Program p = generate(program_seed(o.seed, i), o.gen);
    if (uses_kiln_randomness(p)) continue;
    const std::vector<Meta> metas = infer(p);
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      const Meta& m = metas[size_t(p.outputs[k])];
      if (!kiln::is_float(m.dtype)) continue;
      kiln::Tensor w = loss_weight(kiln::zeros(kiln::Shape(m.shape), m.dtype), k);
      p.weights.push_back(InputSpec{m, w.to_doubles(), 0});
    }
    const fs::path file = fs::path(dir) / (std::to_string(o.seed) + "_" + std::to_string(i) + ".txt");
    std::ofstream out(file);
    out << to_text(p);
    if (!out) usage("cannot write " + file.string());
    ++written;
  }
  std::cout << "wrote " << written << " programs to " << dir << "\n";
  return 0;
}

int run_golden(FuzzOptions o, const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) usage("--golden: " + dir + " is not a directory");
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".txt") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Program> programs;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    try {
      programs.push_back(from_text(text.str()));
      infer(programs.back());
    } catch (const Invalid& e) {
      std::cerr << "kiln_fuzz: " << f.string() << ": " << e.what() << "\n";
      return 2;
    }
    if (!programs.back().torch.present) {
      std::cerr << "kiln_fuzz: " << f.string() << " has no PyTorch results; run make_golden.py on it\n";
      return 2;
    }
  }
  if (programs.empty()) usage("--golden: no .txt files in " + dir);
  FuzzReport r = fuzz(programs, o, std::cerr);
  std::cout << r.summary() << "\n";
  for (const Finding& f : r.findings)
    std::cout << "\n==== " << files[size_t(f.index)].string() << ": " << f.failure.signature() << "\n"
              << f.failure.detail << "\n";
  return r.total == r.passed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  FuzzOptions o;
  std::string program_file, export_dir, golden_dir;
  bool print_programs = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    auto number = [&](long lo) {
      const std::string v = value();
      size_t used = 0;
      long n = 0;
      try {
        n = std::stol(v, &used);
      } catch (const std::exception&) {
      }
      if (used != v.size() || n < lo) usage(a + " needs an integer >= " + std::to_string(lo) + ", not '" + v + "'");
      return n;
    };
    if (a == "--seed") o.seed = uint64_t(number(0));
    else if (a == "--count") o.count = int(number(1));
    else if (a == "--ops") o.gen.ops = split_list(value());
    else if (a == "--paths") {
      for (const std::string& p : split_list(value())) o.run.paths.insert(p);
    } else if (a == "--jobs") o.jobs = int(number(1));
    else if (a == "--max-shrinks") o.max_shrinks = int(number(0));
    else if (a == "--shrink-runs") o.shrink_runs = int(number(1));
    else if (a == "--scheduler") o.run.scheduler = value();
    else if (a == "--program") program_file = value();
    else if (a == "--print-programs") print_programs = true;
    else if (a == "--export") export_dir = value();
    else if (a == "--golden") golden_dir = value();
    else if (a == "--verbose") o.verbose = true;
    else usage("unknown argument " + a);
  }
  for (const std::string& op : o.gen.ops)
    if (std::find(all_ops().begin(), all_ops().end(), op) == all_ops().end()) usage("unknown op " + op);
  for (const std::string& p : o.run.paths)
    if (p != "pytorch" && std::find(all_paths().begin(), all_paths().end(), p) == all_paths().end())
      usage("unknown path " + p);

  if (!export_dir.empty()) return export_programs(o, export_dir);
  if (!golden_dir.empty()) return run_golden(o, golden_dir);
  if (print_programs) {
    for (int i = 0; i < o.count; ++i)
      std::cout << "# program " << i << "\n" << to_text(generate(program_seed(o.seed, i), o.gen));
    return 0;
  }
  if (!program_file.empty()) {
    std::ifstream in(program_file);
    std::stringstream text;
    text << in.rdbuf();
    Program p = from_text(text.str());
    infer(p);  // throws Invalid for a program PyTorch would reject
    Worker w(o.run, o.timeout_s);
    Outcome out = w.run(p);
    for (const Failure& f : out.failures) {
      std::cout << f.signature() << ": " << f.detail << "\n";
    }
    if (out.passed()) std::cout << "passed\n";
    if (!out.passed() && o.max_shrinks > 0) {
      const Failure& f = out.failures.front();
      RunOptions one = o.run;
      auto run = [&](const Program& c) { return w.run(c, &one); };
      ShrinkResult r = shrink(p, f, run, o.shrink_runs);
      std::cout << "\n" << to_cpp(r.program, r.failure);
    }
    return out.passed() ? 0 : 1;
  }

  FuzzReport r = fuzz(o, std::cerr);
  std::cout << r.summary() << "\n";
  for (const Finding& f : r.findings) {
    std::cout << "\n==== program " << f.index << " (seed " << o.seed << ", " << f.failure.signature()
              << (f.shrunk ? ", minimized" : ", not minimized") << ")\n"
              << f.cpp;
    if (o.verbose) std::cout << "---- program text\n" << to_text(f.minimized);
  }
  return r.total == r.passed ? 0 : 1;
}
