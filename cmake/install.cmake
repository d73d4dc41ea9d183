# `cmake --install`: the public headers, libvkattn.so.<version> with its links libvkattn.so.<soversion>
# (libvkattn.so.0.6) and libvkattn.so, libvkattn.a, the CLI (when built), the CMake package (vkattnConfig.cmake, its
# version file and vkattnTargets.cmake) and vkattn.pc. Every installed file is relocatable: the
# package and the .pc find the prefix from their own place, so `cmake --install build --prefix DIR`
# may name any DIR. On by default only at top level (VKATTN_INSTALL): a parent project that
# add_subdirectory()s vkattn installs nothing of it unless it asks.
#
#   find_package(vkattn 0.6 REQUIRED)   imported targets vkattn::vkattn_shared, vkattn::vkattn_static,
#                                       and vkattn::vkattn: the shared one, or the static one when
#                                       VKATTN_USE_STATIC_LIBS is true at find_package() time
#   pkg-config vkattn                   -lvkattn; --static adds the archive's own needs

include(CMakePackageConfigHelpers)

set(config_dir "${CMAKE_INSTALL_LIBDIR}/cmake/vkattn")

install(FILES include/vkattn.h include/vkattn_vulkan.h DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")
install(TARGETS vkattn_shared vkattn_static
  EXPORT vkattnTargets
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
if(VKATTN_BUILD_CLI)
  install(TARGETS vkattn_cli RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
endif()

install(EXPORT vkattnTargets NAMESPACE vkattn:: DESTINATION "${config_dir}")
configure_package_config_file(cmake/vkattnConfig.cmake.in "${PROJECT_BINARY_DIR}/vkattnConfig.cmake"
                              INSTALL_DESTINATION "${config_dir}" NO_SET_AND_CHECK_MACRO)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/vkattnConfigVersion.cmake"
                                 COMPATIBILITY ${VKATTN_PACKAGE_COMPATIBILITY})
install(FILES "${PROJECT_BINARY_DIR}/vkattnConfig.cmake" "${PROJECT_BINARY_DIR}/vkattnConfigVersion.cmake"
        DESTINATION "${config_dir}")

# vkattn.pc: its prefix is found from the file's own directory (${pcfiledir}, known to pkg-config
# and pkgconf), as the CMake package finds its own. Libs.private: what libvkattn.a leaves to the
# program (the .so resolves these itself): the thread library where libc lacks it, dlopen (the
# Vulkan loader is opened at run time, never linked), libm.
set(pc_dir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
foreach(dir IN ITEMS LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    message(FATAL_ERROR "vkattn: CMAKE_INSTALL_${dir} must be relative to the prefix for a relocatable install")
  endif()
endforeach()
file(RELATIVE_PATH pc_to_prefix "/prefix/${pc_dir}" "/prefix")
string(REGEX REPLACE "/$" "" pc_to_prefix "${pc_to_prefix}")
set(pc_libs_private "${CMAKE_THREAD_LIBS_INIT}")
foreach(lib IN LISTS CMAKE_DL_LIBS ITEMS m)
  string(APPEND pc_libs_private " -l${lib}")
endforeach()
string(STRIP "${pc_libs_private}" pc_libs_private)
configure_file(cmake/vkattn.pc.in "${PROJECT_BINARY_DIR}/vkattn.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/vkattn.pc" DESTINATION "${pc_dir}")
