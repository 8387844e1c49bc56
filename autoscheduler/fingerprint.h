// A pipeline's identity for the tuning database: a hash of everything that decides what
// a schedule must do and how fast it can be. Two pipelines built the same way (by a
// generator, or in-process by `kiln tune` from the same KernelSpec) get the same
// fingerprint; any change to a Func's definitions, types, reduction domains, or to the
// estimates the search plans for, gives another, so a stale tuned entry is never applied.
// Compute it before scheduling: rfactor rewrites a Func's update definition.
#pragma once

#include <Halide.h>

#include <string>

namespace kiln::autoschedule {

// The canonical text that is hashed (readable, for debugging a mismatch): each Func in
// name order with its types, pure and update definitions, reduction domains and
// estimates, then each input buffer and scalar parameter with its type and estimates.
std::string pipeline_description(const Halide::Pipeline& pipeline);
// 16 hex digits: FNV-1a (64 bit) of pipeline_description.
std::string pipeline_fingerprint(const Halide::Pipeline& pipeline);

}  // namespace kiln::autoschedule
