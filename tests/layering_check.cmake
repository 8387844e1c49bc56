# The include graph's layers (cmake -DROOT=<source dir> -P layering_check.cmake):
#   autoscheduler/ includes only itself, Halide and kiln's core (core/error.h, core/log.h...);
#   src/ (libkiln) never includes tools/, apps/, models/ or generators/;
#   outside autoscheduler/ and its tests, the autoscheduler is reached only through
#   autoscheduler/autoscheduler.h (and fixed_funcs.h, the shared vocabulary).
# Every violation is listed; any fails the test.
set(_internal analysis autoschedule cost_model fingerprint gpu_cost_model json machine_model
    pool_calibration schedule_writer search search_state tuner tuning_db)
set(_violations "")

function(_scan dir pattern why)
  file(GLOB_RECURSE _files ${ROOT}/${dir}/*.h ${ROOT}/${dir}/*.cpp)
  foreach(_f IN LISTS _files)
    file(STRINGS ${_f} _lines REGEX "^#include \"")
    foreach(_l IN LISTS _lines)
      if(_l MATCHES "${pattern}")
        file(RELATIVE_PATH _rel ${ROOT} ${_f})
        list(APPEND _violations "${_rel}: ${_l} (${why})")
      endif()
    endforeach()
  endforeach()
  set(_violations "${_violations}" PARENT_SCOPE)
endfunction()

_scan(autoscheduler "^#include \"(lower|runtime|graph|ops|autodiff|cli|models|generators)/"
      "the autoscheduler depends on Halide and kiln's core only")
_scan(src "^#include \"(cli|tools|apps|models|generators)/|^#include \"(models|kernel_spec|op_generator)\\.h\""
      "libkiln never includes the tools, apps, models or generators")
string(JOIN "|" _names ${_internal})
foreach(_dir src tools apps models generators)
  _scan(${_dir} "^#include \"(autoscheduler/)?(${_names})\\.h\""
        "include autoscheduler/autoscheduler.h, the autoscheduler's public header")
endforeach()

if(_violations)
  list(JOIN _violations "\n  " _text)
  message(FATAL_ERROR "include layering violated:\n  ${_text}")
endif()
message(STATUS "include layering holds")
