# kiln_add_kernel_library(<name>
#     GENERATORS <generator>[:<param>=<value>...]...
#     [TARGETS host host-cuda ...]          # default: host
#     [SCHEDULE manual|default|Kiln|Mullapudi2016|Adams2019|Li2018|Anderson2021]  # default: manual
#     [FROM <generator executable target>])  # default: ${KILN_GENERATOR_TARGET}
#
# Builds each generator of kiln's kernel library for each target with Halide's
# add_halide_library: one static library and header per (generator, target), whose
# function is <name>_<generator>[_<param value>...][_cuda], e.g.
#
#   kiln_add_kernel_library(nn GENERATORS matmul unary:op=gelu TARGETS host host-cuda)
#
# gives nn_matmul, nn_unary_gelu, nn_matmul_cuda and nn_unary_gelu_cuda (headers
# nn_matmul.h, ...; each with <function>.function_info.h, its arguments' names, types and
# ranks), an INTERFACE target <name> linking them all, and <name>_kernels.md in the build
# folder listing them. `host-cuda` means
# host-cuda-cuda_capability_80 and needs no GPU to build; any other Halide target string
# is passed through (its functions get no suffix unless it has `cuda`).
#
# Inside kiln's build the generators are the target kiln_generators; a project using an
# installed kiln gets kiln::generators.
#
# A project's own generators (kiln ops, its own schedule files) go into an executable of
# its own:
#
#   kiln_add_generator(my_generators SOURCES gelu_mul_generator.cpp)
#   kiln_add_kernel_library(mine GENERATORS my_gelu_mul:dtype=f16 FROM my_generators
#                           TARGETS host host-cuda SCHEDULE manual)
#
# With FROM another executable, GENERATORS names its generators as they are registered
# (HALIDE_REGISTER_GENERATOR), and functions are <name>_<generator>[...].
include_guard(GLOBAL)

if (NOT TARGET Halide::Mullapudi2016)
  include(${CMAKE_CURRENT_LIST_DIR}/HalideAutoschedulers.cmake)
endif ()

set(KILN_KERNEL_GENERATORS seed unary binary reduce softmax layer_norm matmul batch_matmul conv2d pool2d
    CACHE INTERNAL "kiln's kernel-library generators")
set(KILN_KERNEL_SCHEDULES manual default Kiln Mullapudi2016 Adams2019 Li2018 Anderson2021
    CACHE INTERNAL "schedules kiln_add_kernel_library knows")
if (NOT DEFINED KILN_GENERATOR_TARGET)
  set(KILN_GENERATOR_TARGET kiln_generators)
endif ()

# kiln_add_generator(<target> SOURCES <file>... [LINK_LIBRARIES <lib>...])
# A Halide generator executable whose generators are kiln specs (kiln::kernels):
# each source registers a spec (kiln::kernels::register_generator, with its schedule
# files' functions) and a kiln::kernels::OpGenerator (HALIDE_REGISTER_GENERATOR).
function(kiln_add_generator name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES;LINK_LIBRARIES")
  if (ARG_UNPARSED_ARGUMENTS OR NOT ARG_SOURCES)
    message(FATAL_ERROR "kiln_add_generator(${name}): it takes SOURCES <file>... [LINK_LIBRARIES <lib>...]")
  endif ()
  add_halide_generator(${name} SOURCES ${ARG_SOURCES} LINK_LIBRARIES kiln::kernels ${ARG_LINK_LIBRARIES})
  set_property(TARGET ${name} PROPERTY CXX_STANDARD 20)
endfunction ()

function(kiln_add_kernel_library name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "SCHEDULE;FROM" "GENERATORS;TARGETS")
  if (ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "kiln_add_kernel_library(${name}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}; "
                        "it takes GENERATORS, TARGETS, SCHEDULE and FROM")
  endif ()
  if (NOT ARG_GENERATORS)
    string(REPLACE ";" " " _all "${KILN_KERNEL_GENERATORS}")
    message(FATAL_ERROR "kiln_add_kernel_library(${name}): GENERATORS is empty; the generators are: ${_all}")
  endif ()
  if (NOT ARG_TARGETS)
    set(ARG_TARGETS host)
  endif ()
  if (NOT ARG_SCHEDULE)
    set(ARG_SCHEDULE manual)
  endif ()
  if (NOT ARG_FROM)
    set(ARG_FROM ${KILN_GENERATOR_TARGET})
  endif ()
  if (NOT ARG_SCHEDULE IN_LIST KILN_KERNEL_SCHEDULES)
    string(REPLACE ";" " " _all "${KILN_KERNEL_SCHEDULES}")
    message(FATAL_ERROR "kiln_add_kernel_library(${name}): unknown SCHEDULE '${ARG_SCHEDULE}'; "
                        "the schedules are: ${_all}")
  endif ()
  if (NOT TARGET ${ARG_FROM})
    message(FATAL_ERROR "kiln_add_kernel_library(${name}): the generator executable '${ARG_FROM}' is not a "
                        "target; set KILN_GENERATOR_TARGET or pass FROM <target>")
  endif ()

  add_library(${name} INTERFACE)
  set(_doc "")
  # One Halide runtime per target for the whole library, rather than one per kernel.
  set(_targets "")
  foreach (_target IN LISTS ARG_TARGETS)
    if (_target STREQUAL "host-cuda")
      set(_target host-cuda-cuda_capability_80)
    elseif (NOT _target STREQUAL "host" AND NOT _target MATCHES "-")
      message(FATAL_ERROR "kiln_add_kernel_library(${name}): unknown target '${_target}'; use host, "
                          "host-cuda or a full Halide target string (x86-64-linux-avx2, ...)")
    endif ()
    list(APPEND _targets ${_target})
    string(MAKE_C_IDENTIFIER "${name}_runtime_${_target}" _rt)
    add_halide_runtime(${_rt} TARGETS ${_target})
    set(_runtime_${_target} ${_rt})
  endforeach ()
  foreach (_entry IN LISTS ARG_GENERATORS)
    # "unary:op=gelu:dtype=f16" -> generator unary, params op=gelu dtype=f16
    string(REPLACE ":" ";" _parts "${_entry}")
    list(POP_FRONT _parts _gen)
    if (ARG_FROM STREQUAL KILN_GENERATOR_TARGET OR ARG_FROM STREQUAL "kiln_generators")
      if (NOT _gen IN_LIST KILN_KERNEL_GENERATORS)
        string(REPLACE ";" " " _all "${KILN_KERNEL_GENERATORS}")
        message(FATAL_ERROR "kiln_add_kernel_library(${name}): unknown generator '${_gen}'; "
                            "the generators are: ${_all} (a generator of your own: FROM <kiln_add_generator target>)")
      endif ()
      set(_registered kiln_${_gen})
    else ()
      if (NOT _gen MATCHES "^[A-Za-z_][A-Za-z0-9_]*$")
        message(FATAL_ERROR "kiln_add_kernel_library(${name}): '${_gen}' is not a generator name")
      endif ()
      set(_registered ${_gen})
    endif ()
    set(_suffix "")
    foreach (_p IN LISTS _parts)
      if (NOT _p MATCHES "^[a-z_]+=[A-Za-z0-9_]+$")
        message(FATAL_ERROR "kiln_add_kernel_library(${name}): '${_entry}': parameters are written "
                            "<generator>:<name>=<value>, not '${_p}'")
      endif ()
      string(REGEX REPLACE "^.*=" "" _value "${_p}")
      string(APPEND _suffix "_${_value}")
    endforeach ()

    foreach (_target IN LISTS _targets)
      set(_gpu OFF)
      set(_fn ${name}_${_gen}${_suffix})
      if (_target MATCHES "cuda")
        set(_gpu ON)
        string(APPEND _fn _cuda)
      endif ()
      # Some autoschedulers are for the CPU (Adams2019) or the GPU (Anderson2021) only.
      if ((_gpu AND ARG_SCHEDULE STREQUAL "Adams2019") OR (NOT _gpu AND ARG_SCHEDULE STREQUAL "Anderson2021"))
        message(FATAL_ERROR "kiln_add_kernel_library(${name}): ${ARG_SCHEDULE} does not schedule for "
                            "${_target}; Adams2019 is CPU-only and Anderson2021 GPU-only "
                            "(Kiln, Mullapudi2016, Li2018, manual and default do both)")
      endif ()
      set(_sched_args PARAMS ${_parts})
      if (ARG_SCHEDULE STREQUAL "manual" OR ARG_SCHEDULE STREQUAL "default")
        list(APPEND _sched_args schedule=${ARG_SCHEDULE})
      else ()
        list(APPEND _sched_args AUTOSCHEDULER Halide::${ARG_SCHEDULE})
      endif ()
      add_halide_library(${_fn} FROM ${ARG_FROM}
        GENERATOR ${_registered}
        FUNCTION_NAME ${_fn}
        TARGETS ${_target}
        USE_RUNTIME ${_runtime_${_target}}
        FUNCTION_INFO_HEADER _info
        ${_sched_args})
      target_link_libraries(${name} INTERFACE ${_fn})
      cmake_path(GET _info FILENAME _info_name)
      string(REPLACE ";" " " _params "${_parts}")
      string(APPEND _doc "| `${_fn}` | `${_registered}` | ${_params} | `${_target}` | `${_fn}.h`, `${_info_name}` |\n")
    endforeach ()
  endforeach ()
  # What the library holds, for its users: <build>/<name>_kernels.md.
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/${name}_kernels.md
"# Kernel library `${name}` (schedule: ${ARG_SCHEDULE})

Each function is `int <function>(halide_buffer_t *<input>..., halide_buffer_t *out)` and
returns 0 or a `halide_error_code_t`. Buffers are dense and zero-based, in Halide's order
(dimension 0 is the innermost: a kiln tensor of shape [rows, cols] is a buffer of
dim(0) = cols, dim(1) = rows). `<function>.function_info.h` lists each argument's name,
kind, type and rank as constexpr data (`<function>_metadata()` at run time).

| function | generator | parameters | target | headers |
|---|---|---|---|---|
${_doc}")
endfunction ()
