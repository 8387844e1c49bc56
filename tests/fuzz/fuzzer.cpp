#include "fuzzer.h"

#include <poll.h>

#include <map>
#include <memory>
#include <ostream>
#include <set>

#include "cpp_printer.h"
#include "worker.h"

namespace kiln::fuzz {

uint64_t program_seed(uint64_t seed, int index) { return seed * 1000003ull + uint64_t(index); }

std::string FuzzReport::summary() const {
  return std::to_string(total) + " programs: " + std::to_string(crashed) + " crashed, " + std::to_string(wrong) +
         " wrong, " + std::to_string(refused) + " refused, " + std::to_string(threw) + " threw, " +
         std::to_string(passed) + " passed";
}

namespace {

// The failure a program is reported (and shrunk) by: the most severe one.
const Failure& primary(const Outcome& o) {
  static const std::vector<std::string> order = {"crash", "refused", "exception", "wrong"};
  for (const std::string& cls : order)
    for (const Failure& f : o.failures)
      if (f.cls == cls) return f;
  return o.failures.front();
}

// Two minimized failures are the same bug when they fail the same way in programs of the
// same ops.
std::string dedup_key(const Program& p, const Failure& f) {
  std::set<std::string> ops;
  for (const OpSpec& op : p.ops) ops.insert(op.op);
  std::string k = f.signature();
  for (const std::string& o : ops) k += " " + o;
  return k;
}

}  // namespace

FuzzReport fuzz(const FuzzOptions& options, std::ostream& log) {
  std::vector<Program> programs;
  for (int i = 0; i < options.count; ++i) programs.push_back(generate(program_seed(options.seed, i), options.gen));
  return fuzz(programs, options, log);
}

FuzzReport fuzz(const std::vector<Program>& programs, const FuzzOptions& options, std::ostream& log) {
  FuzzReport report;

  // Run every program, `jobs` at a time; outcomes are stored by index.
  std::vector<Outcome> outcomes(programs.size());
  {
    std::vector<std::unique_ptr<Worker>> workers;
    for (int j = 0; j < std::max(1, options.jobs); ++j)
      workers.push_back(std::make_unique<Worker>(options.run, options.timeout_s));
    std::vector<int> running(workers.size(), -1);
    size_t next = 0, done = 0;
    while (done < programs.size()) {
      for (size_t w = 0; w < workers.size(); ++w)
        if (running[w] < 0 && next < programs.size()) {
          running[w] = int(next);
          workers[w]->submit(programs[next++]);
        }
      std::vector<pollfd> fds;
      std::vector<size_t> which;
      for (size_t w = 0; w < workers.size(); ++w)
        if (running[w] >= 0) {
          fds.push_back({workers[w]->fd(), POLLIN, 0});
          which.push_back(w);
        }
      ::poll(fds.data(), fds.size(), 1000);
      for (size_t k = 0; k < fds.size(); ++k) {
        size_t w = which[k];
        std::optional<Outcome> o;
        if (fds[k].revents) o = workers[w]->on_readable();
        if (!o) o = workers[w]->check_timeout();
        if (!o) continue;
        int i = running[w];
        running[w] = -1;
        outcomes[size_t(i)] = *o;
        ++done;
        if (options.verbose) {
          log << "program " << i << ": " << (o->passed() ? "passed" : primary(*o).signature()) << "\n";
          if (!o->passed()) log << to_text(programs[size_t(i)]);
        }
      }
    }
  }

  report.total = int(programs.size());
  Worker shrink_worker(options.run, options.timeout_s);
  std::set<std::string> seen;
  int shrinks = 0;
  for (size_t i = 0; i < programs.size(); ++i) {
    const Outcome& o = outcomes[i];
    if (o.passed()) {
      ++report.passed;
      continue;
    }
    const Failure& f = primary(o);
    if (f.cls == "crash") ++report.crashed;
    else if (f.cls == "refused") ++report.refused;
    else if (f.cls == "exception") ++report.threw;
    else ++report.wrong;

    Finding finding;
    finding.index = int(i);
    finding.original = programs[i];
    finding.minimized = programs[i];
    finding.failure = f;
    // Shrinking runs only the failing path (the oracles always run).
    const bool golden = programs[i].torch.present;  // its data would not fit a smaller program
    if (!golden && shrinks < options.max_shrinks && !seen.count(dedup_key(programs[i], f) + "#raw")) {
      ++shrinks;
      seen.insert(dedup_key(programs[i], f) + "#raw");
      RunOptions one = options.run;
      one.paths.clear();
      if (f.path != "reference" && f.path != "grad-reference") one.paths.insert(f.path);
      else if (f.path == "grad-reference") one.paths.insert("grad-eager");
      else one.paths.insert("eager");
      auto run = [&](const Program& c) { return shrink_worker.run(c, &one); };
      ShrinkResult r = shrink(programs[i], f, run, options.shrink_runs);
      finding.minimized = r.program;
      finding.failure = r.failure;
      finding.shrunk = true;
      if (options.verbose) log << "program " << i << ": shrunk in " << r.runs << " runs\n";
    }
    std::string key = dedup_key(finding.minimized, finding.failure);
    if (seen.count(key)) continue;
    seen.insert(key);
    finding.cpp = to_cpp(finding.minimized, finding.failure);
    report.findings.push_back(std::move(finding));
  }
  return report;
}

}  // namespace kiln::fuzz
