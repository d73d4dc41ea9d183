# vkattn used from outside (run.sh): installed and found with find_package or pkg-config, and
# built as a subproject. Build steps are `cpu`; running the programs (a forward each) is `gpu`.
# Fixtures order them under ctest -j; `ctest -R consumer_package_run` brings its build steps too.
#   consumer_install            (cpu) cmake --install into build/tests/consumer/prefix, checked
#   consumer_package_build      (cpu) find_package(vkattn 0.6) consumer against that prefix (this
#                               version's ABI: VKATTN_SOVERSION), which refuses other ABIs
#   consumer_pkg_config_build   (cpu) cc with pkg-config --cflags --libs [--static] vkattn
#   consumer_subdirectory_build (cpu) add_subdirectory(vkattn): builds the library again (COST)
#   consumer_*_run              (gpu) the programs each of those built
# Not in sanitizer builds: the libraries there need the sanitizer runtime in every program, and
# what these tests check (files, flags, link lines) does not depend on it.
if(VKATTN_SANITIZE)
  message(STATUS "vkattn: sanitizer build; consumer_* tests left out")
  return()
endif()

set(consumer_dir "${CMAKE_CURRENT_BINARY_DIR}/consumer")
set(consumer_run "${CMAKE_CURRENT_SOURCE_DIR}/consumer/run.sh")
set(consumer_prefix "${consumer_dir}/prefix")
set(consumer_steps subdirectory)

if(VKATTN_INSTALL)
  if(VKATTN_BUILD_CLI)
    set(cli 1)
  else()
    set(cli 0)
  endif()
  vkattn_add_test(consumer_install ${consumer_run} cpu install ${CMAKE_BINARY_DIR} "$<CONFIG>" ${consumer_prefix}
                  ${CMAKE_INSTALL_LIBDIR} ${CMAKE_INSTALL_INCLUDEDIR} ${CMAKE_INSTALL_BINDIR} ${cli}
                  ${PROJECT_VERSION} ${VKATTN_SOVERSION})
  set_tests_properties(consumer_install PROPERTIES FIXTURES_SETUP vkattn_installed)
  vkattn_add_test(consumer_package_build ${consumer_run} cpu package ${PROJECT_SOURCE_DIR} ${consumer_prefix}
                  ${consumer_dir}/package ${CMAKE_C_COMPILER} ${CMAKE_GENERATOR} ${PROJECT_VERSION}
                  ${VKATTN_SOVERSION})
  list(APPEND consumer_steps package)
  find_program(VKATTN_PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf)
  if(VKATTN_PKG_CONFIG_EXECUTABLE)
    vkattn_add_test(consumer_pkg_config_build ${consumer_run} cpu pkg-config ${consumer_prefix}
                    ${consumer_dir}/pkg-config ${CMAKE_C_COMPILER} ${VKATTN_PKG_CONFIG_EXECUTABLE})
    list(APPEND consumer_steps pkg-config)
  else()
    message(STATUS "vkattn: no pkg-config; consumer_pkg_config_* tests left out")
  endif()
else()
  message(STATUS "vkattn: VKATTN_INSTALL is off; only the add_subdirectory consumer is tested")
endif()
vkattn_add_test(consumer_subdirectory_build ${consumer_run} cpu subdirectory ${PROJECT_SOURCE_DIR}
                ${consumer_dir}/subdirectory ${CMAKE_C_COMPILER} ${CMAKE_GENERATOR} COST 40)

foreach(step IN LISTS consumer_steps)
  string(REPLACE "-" "_" name ${step})
  if(NOT step STREQUAL "subdirectory")
    set_tests_properties(consumer_${name}_build PROPERTIES FIXTURES_REQUIRED vkattn_installed)
  endif()
  set_tests_properties(consumer_${name}_build PROPERTIES FIXTURES_SETUP consumer_${name})
  vkattn_add_test(consumer_${name}_run ${consumer_run} gpu run ${consumer_dir}/${step})
  set_tests_properties(consumer_${name}_run PROPERTIES FIXTURES_REQUIRED consumer_${name})
endforeach()
