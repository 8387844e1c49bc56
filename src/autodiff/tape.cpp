#include "autodiff/tape.h"

#include <algorithm>

namespace kiln {

namespace {
thread_local std::vector<Tape*> active_tapes;
}  // namespace

Tape::Tape() { active_tapes.push_back(this); }

Tape::~Tape() { active_tapes.erase(std::find(active_tapes.begin(), active_tapes.end(), this)); }

bool Tape::any_active() { return !active_tapes.empty(); }

void Tape::record(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                  const Tensor& output) {
  for (Tape* t : active_tapes) t->entries_.push_back({op, inputs, attrs, output});
}

}  // namespace kiln
