// The autoscheduler's one door for the rest of kiln: libkiln's lowering (src/lower), its
// compiler (src/runtime) and the tools (tools/) include this header and no other file of
// autoscheduler/ but fixed_funcs.h, the vocabulary both sides share (and installed, as
// lower/kiln_schedule.h names it). tests/layering_check.cmake enforces it; only the
// autoscheduler's own tests reach further in. Nothing includes search_state.h, the search's
// working state, from outside the search.
//
//   entry points      autoschedule.h   autoschedule, apply_tuned_entry, schedule_header
//   the search        search.h         schedule_pipeline, the knobs (Knobs, MatmulTasks,
//                                      ConvTile), the contraction choices the rules reuse
//   analysis          analysis.h       analyze (PipelineInfo), func_keys
//   tuning database   tuning_db.h      TuningDb, tuning_db_path, the knobs' text form
//   tuning            tuner.h          timing candidates on the machine (kiln tune)
//   fingerprints      fingerprint.h    pipeline_fingerprint
//   machine           machine_model.h  machine_model, the overrides
//                     pool_calibration.h  the thread pool's measured costs (kiln machine)
//   JSON errors       json.h           json::ParseError from the knobs' text form
#pragma once

#include "analysis.h"
#include "autoschedule.h"
#include "fingerprint.h"
#include "fixed_funcs.h"
#include "json.h"
#include "machine_model.h"
#include "pool_calibration.h"
#include "search.h"
#include "tuning_db.h"
#include "tuner.h"
