# Installs the kiln build KILN_BUILD_DIR into WORK_DIR/prefix, then configures, builds and
# runs SOURCE_DIR (an outside project: find_package(kiln)) against that prefix, and runs
# the installed `kiln` command. Run by CTest (tests/install/CMakeLists.txt).
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if (NOT rc EQUAL 0)
    message(FATAL_ERROR "install test: `${ARGN}` failed (${rc}):\n${out}")
  endif ()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${prefix})
run(${CMAKE_COMMAND} --install ${KILN_BUILD_DIR} --prefix ${prefix})

# No Halide_DIR here: the package config knows which Halide kiln was built with.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/outside)
message(STATUS "${last_output}")
run(${prefix}/bin/kiln help)
message(STATUS "the installed kiln command runs")
