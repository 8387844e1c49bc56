# The Halide wheel ships its four autoscheduler plugins as shared libraries but its CMake
# package does not export them as targets; define Halide::<Name> imported module targets
# so that add_halide_library(... AUTOSCHEDULER Halide::Mullapudi2016) works as documented.
get_target_property(_kiln_libhalide Halide::Halide LOCATION)
get_filename_component(_kiln_halide_libdir "${_kiln_libhalide}" DIRECTORY)
foreach (_name IN ITEMS Mullapudi2016 Adams2019 Li2018 Anderson2021)
  string(TOLOWER "${_name}" _lower)
  set(_so "${_kiln_halide_libdir}/libautoschedule_${_lower}.so")
  if (NOT TARGET Halide::${_name} AND EXISTS "${_so}")
    add_library(Halide::${_name} MODULE IMPORTED GLOBAL)
    set_target_properties(Halide::${_name} PROPERTIES IMPORTED_LOCATION "${_so}")
  endif ()
endforeach ()
