// The hand-written schedules of schedules/cpu and schedules/cuda, by generator and target.
#pragma once

#include <Halide.h>

#include <string>

namespace kiln::kernels {

// Applies the schedule file of `generator` for `target` (schedules/cuda/ when the target
// has a GPU feature, else schedules/cpu/); a generator without one is a user error that
// lists the generators that have one.
void apply_manual_schedule(const std::string& generator, const Halide::Pipeline& pipeline,
                           const Halide::Target& target);
bool has_manual_schedule(const std::string& generator, const Halide::Target& target);

}  // namespace kiln::kernels
