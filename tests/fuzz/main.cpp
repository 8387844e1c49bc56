// kiln_fuzz --seed S --count N [--ops a,b] [--paths p,q] [--jobs J] [--max-shrinks K]
//           [--scheduler Kiln|rules] [--program FILE] [--verbose]
// Runs N random programs from seed S down every execution path, prints a one-line summary
// and a minimized C++ reproducer for each distinct failure; exits 1 on any failure.
// --program FILE runs (and shrinks) one program in the text form of program.h instead.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cpp_printer.h"
#include "fuzzer.h"
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
               " [--shrink-runs R] [--scheduler NAME] [--program FILE] [--print-programs] [--verbose]\n";
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  FuzzOptions o;
  std::string program_file;
  bool print_programs = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--seed") o.seed = std::stoull(value());
    else if (a == "--count") o.count = std::stoi(value());
    else if (a == "--ops") o.gen.ops = split_list(value());
    else if (a == "--paths") {
      for (const std::string& p : split_list(value())) o.run.paths.insert(p);
    } else if (a == "--jobs") o.jobs = std::stoi(value());
    else if (a == "--max-shrinks") o.max_shrinks = std::stoi(value());
    else if (a == "--shrink-runs") o.shrink_runs = std::stoi(value());
    else if (a == "--scheduler") o.run.scheduler = value();
    else if (a == "--program") program_file = value();
    else if (a == "--print-programs") print_programs = true;
    else if (a == "--verbose") o.verbose = true;
    else usage("unknown argument " + a);
  }
  for (const std::string& op : o.gen.ops)
    if (std::find(all_ops().begin(), all_ops().end(), op) == all_ops().end()) usage("unknown op " + op);
  for (const std::string& p : o.run.paths)
    if (std::find(all_paths().begin(), all_paths().end(), p) == all_paths().end()) usage("unknown path " + p);

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
