// Per-batch fusion on the CPU: a batched matmul (attention's P @ V, one problem per batch
// and head) runs one parallel task per batch element, and the batched values it reads are
// computed inside that task instead of in parallel loops of their own: its packed b, a
// stored operand (attention's probabilities, with the row reductions computed per row of
// them), and behind that another batched matmul (Q @ K^T) with its packed b and stored
// operand. One parallel loop instead of five, and a head's Q, K, V, scores and
// probabilities stay in the cache of the core that computes them (docs/autoscheduler.md
// gives the measurements).
//
// The Kiln scheduler decides it per matmul (autoschedule::MatmulTasks::per_batch, a knob):
// prepare_kiln_schedule gives the matmul one task per batch element in the rules' loops,
// and after the search has placed everything else apply_batch_fusion moves the group into
// those tasks.
#pragma once

#include <Halide.h>

#include <map>
#include <string>

namespace kiln {

namespace autoschedule {
struct MachineModel;  // autoscheduler/machine_model.h (not installed)
}

// Whether `batch` equal tasks keep `machine`'s cores busy: at least one per core, and the
// last round of tasks at most 1/8 short of the cores.
bool batch_tasks_fill_cores(double batch, const autoschedule::MachineModel& machine);

// Moves the batched values that the matmul accumulator `acc` reads (and their own, as
// above) into the parallel tasks of the Func that computes its tiles, which must have
// one task per batch element: compute_at that task loop, their own parallel loops made
// serial. Returns the keys of the Funcs moved, or "" where nothing moves: no batched
// producer, or one that something outside the group also reads (`why` says).
std::string apply_batch_fusion(const Halide::Pipeline& pipeline, const std::string& acc, std::string* why);

}  // namespace kiln
