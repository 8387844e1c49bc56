# KILN_SANITIZE=ON: every C and C++ target of kiln's build (libkiln, the CLI, the
# generator executables, the Kiln autoscheduler plugin, the tests) is compiled and linked
# with AddressSanitizer and UndefinedBehaviorSanitizer (`make test-sanitize`,
# docs/testing.md). What is not compiled here is not instrumented: libHalide.so (and the
# LLVM inside it), Halide's own autoscheduler plugins, the code Halide generates (JIT
# kernels and the AOT kernel libraries) and the system's libgtest. The generators run at
# build time instrumented too, so the build itself needs ASAN_OPTIONS (detect_leaks=0:
# Halide keeps its LLVM state, JIT modules and registries until exit on purpose); the
# Makefile sets it for the build and for CTest.
include_guard(GLOBAL)

option(KILN_SANITIZE "Build kiln with -fsanitize=address,undefined (see docs/testing.md)" OFF)

if (KILN_SANITIZE)
  set(KILN_SANITIZE_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer)
  message(STATUS "kiln: KILN_SANITIZE=ON: ${KILN_SANITIZE_FLAGS}")
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${KILN_SANITIZE_FLAGS}>")
  add_link_options(${KILN_SANITIZE_FLAGS})
  # The optimized build with line tables, for readable stacks.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-g>")
endif ()
