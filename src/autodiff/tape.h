// The record reverse mode runs over: while a Tape is active on a thread, every op applied
// through apply_op() is appended to it with its input and output tensors, whether the op
// ran eagerly or was traced into a graph. Replaying the entries backwards with each op's
// VJP rule (ops written with ops) gives gradients that are themselves eager tensors or
// traced graph values, so a gradient function can be compiled like any other.
#pragma once

#include <string>
#include <vector>

#include "core/tensor.h"
#include "ops/op.h"

namespace kiln {

struct TapeEntry {
  std::string op;
  std::vector<Tensor> inputs;
  Attrs attrs;
  Tensor output;
};

class Tape {
 public:
  Tape();  // active on this thread until destroyed (tapes nest: all active tapes record)
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  const std::vector<TapeEntry>& entries() const { return entries_; }

  // Whether a tape is active on this thread.
  static bool any_active();
  // Appends to every tape active on this thread; a no-op when there is none.
  static void record(const std::string& op, const std::vector<Tensor>& inputs, const Attrs& attrs,
                     const Tensor& output);

 private:
  std::vector<TapeEntry> entries_;
};

}  // namespace kiln
