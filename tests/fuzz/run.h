// Runs one program down every execution path and judges each against the reference.
//
// Paths (names used by --paths and in reports):
//   eager              the program's ops run one by one
//   compiled           kiln::compile(program), called twice (the calls must agree bit for bit)
//   grad-eager         kiln::grad(loss) eagerly
//   grad-compiled      kiln::compile(kiln::grad(loss))
//   backward-eager     requires_grad() leaves, loss.backward()
//   backward-compiled  kiln::compile(program) on requires_grad() leaves, loss.backward()
// The oracles always run: "reference" (trace, then the reference interpreter) and, with
// any gradient path, "grad-reference" (trace kiln::grad(loss), then the same). The loss
// is the sum over the program's float outputs of sum(output * w) with fixed random w, and
// gradients are taken w.r.t. every float data input.
//
// Failure classes:
//   crash      the process died (a signal) or hung in a path (set by worker.cpp)
//   refused    kiln rejected the PyTorch-valid program while tracing it (kiln::Error)
//   exception  a path threw although kiln traced the program
//   wrong      a path's dtype/shape differs from PyTorch's, or its values from the reference
// A program with PyTorch's results (a golden file, program.h) also judges those, as the
// path "pytorch", against the reference, and uses the file's loss weights. `--paths
// pytorch` runs the oracles and that check alone.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "kiln.h"
#include "program.h"

namespace kiln::fuzz {

const std::vector<std::string>& all_paths();

struct Failure {
  std::string cls;     // crash, refused, exception, wrong
  std::string path;    // the path that failed
  std::string kind;    // wrong: "meta" or "value"; crash: "signal" or "hang"; else ""
  std::string detail;  // for people
  // What shrinking keeps constant: the class, the path and the kind.
  std::string signature() const { return cls + ":" + path + (kind.empty() ? "" : ":" + kind); }
};

struct Outcome {
  std::vector<Failure> failures;  // empty: passed
  bool passed() const { return failures.empty(); }
};

struct RunOptions {
  std::set<std::string> paths;  // empty: all
  std::string scheduler;        // CompileOptions::scheduler
};

using Progress = std::function<void(const std::string& path)>;
// The loss's weight for float output number k (of any path) when the program gives none.
Tensor loss_weight(const Tensor& output, size_t k);

// Called in a worker process (it may crash). `progress` is told each path before it runs.
Outcome run_program(const Program& p, const RunOptions& options, const Progress& progress);

// Outcome <-> text, for the worker pipe: one line per failure, fields separated by tabs.
std::string to_text(const Outcome& o);
Outcome outcome_from_text(const std::string& text);

}  // namespace kiln::fuzz
