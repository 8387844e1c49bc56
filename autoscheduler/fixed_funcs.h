// What kiln's rules placed before the Kiln search (src/lower/default_schedule.h), in the
// search's terms (autoscheduler/search.h): by Func name, the search plans the rest around
// them. Inline and OwnLoops Funcs keep the schedules they have; a Stored Func is computed
// at root (a value a contraction reads) and the search writes its loops, as for a
// pointwise Func it stored itself (CPU targets only).
#pragma once

#include <map>
#include <string>

namespace kiln::autoschedule {

enum class Fixed { Inline, OwnLoops, Stored };
using FixedFuncs = std::map<std::string, Fixed>;

}  // namespace kiln::autoschedule
