# `cmake --install <build> --prefix P` installs kiln as a CMake package:
#   P/lib/libkiln.a, P/include/kiln/** (so `#include "kiln.h"` works), P/bin/kiln,
#   P/lib/libkiln_onnx.a (ONNX import, kiln::onnx),
#   P/bin/kiln_generators (the kernel-library generators, schedules compiled in),
#   P/lib/libautoschedule_kiln.so (kiln's autoscheduler plugin),
#   P/lib/libkiln_models.a and P/include/kiln/models/ (the registered models),
#   P/lib/libkiln_kernel_specs.a and P/include/kiln/kernels/ (to write generators),
#   P/lib/cmake/kiln/ (kilnConfig.cmake, the exported targets kiln::kiln, kiln::models, kiln::kernels,
#   kiln::generators and kiln::Kiln, and the CMake functions: kiln_add_kernel_library,
#   Halide's autoscheduler targets).
# An outside project then needs only find_package(kiln REQUIRED). The config records the
# Halide SDK kiln was built against (Halide_DIR) and uses it unless the project sets its
# own Halide_DIR: libkiln.a must link the Halide it was compiled with.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

install(TARGETS kiln EXPORT kilnTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# ONNX import, as kiln::onnx: #include "onnx/onnx.h".
install(TARGETS kiln_onnx EXPORT kilnTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# (src/onnx/internal.h is the importer's own: it needs ONNX's protobuf headers.)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln FILES_MATCHING PATTERN "*.h"
        PATTERN "onnx/internal.h" EXCLUDE)
# The autoscheduler's types that kiln's scheduling headers name (the rest of autoscheduler/
# is internal to libkiln and its plugin).
install(FILES ${PROJECT_SOURCE_DIR}/autoscheduler/fixed_funcs.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/autoscheduler)
# Writing generators outside kiln: kiln::kernels (the specs, the registry, kiln's own
# generators' hand-written schedules) and its headers, #include "kernels/op_generator.h".
install(TARGETS kiln_kernel_specs EXPORT kilnTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/generators/kernel_spec.h ${PROJECT_SOURCE_DIR}/generators/op_generator.h
              ${PROJECT_SOURCE_DIR}/generators/schedule_funcs.h ${PROJECT_SOURCE_DIR}/generators/manual_schedules.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/kernels)
# The registered models, as kiln::models: #include "models/models.h".
install(TARGETS kiln_models EXPORT kilnTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/models/models.h ${PROJECT_SOURCE_DIR}/models/seed.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/models)
# The installed command finds libHalide.so where it was at build time.
get_target_property(_kiln_libhalide Halide::Halide LOCATION)
get_filename_component(_kiln_libhalide_dir "${_kiln_libhalide}" DIRECTORY)
set_target_properties(kiln_cli PROPERTIES INSTALL_RPATH "${_kiln_libhalide_dir}")
install(TARGETS kiln_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# kiln_add_kernel_library's generator executable and kiln's autoscheduler plugin, exported
# as kiln::generators and kiln::Kiln; both load the same libHalide.so as kiln_cli.
set_target_properties(kiln_generators PROPERTIES INSTALL_RPATH "${_kiln_libhalide_dir}" EXPORT_NAME generators)
set_target_properties(autoschedule_kiln PROPERTIES INSTALL_RPATH "${_kiln_libhalide_dir}" EXPORT_NAME Kiln)
install(TARGETS kiln_generators EXPORT kilnTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS autoschedule_kiln EXPORT kilnTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR})
set(KILN_HALIDE_DIR "${Halide_DIR}")
set(KILN_HALIDEHELPERS_DIR "${HalideHelpers_DIR}")
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kilnConfig.cmake INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kilnConfig.cmake ${PROJECT_BINARY_DIR}/kilnConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/HalideAutoschedulers.cmake
        DESTINATION ${KILN_INSTALL_CMAKEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/cmake/KilnKernelLibrary.cmake DESTINATION ${KILN_INSTALL_CMAKEDIR})
