# The library's objects (VKATTN_ALL_OBJECTS: vkattn_objects and the embedded shaders), linked three
# ways. Only vkattn_* is public: volk's ~580 global vk* function pointers and volk* functions, and
# vkattn's own vka_* functions, must not take the place of an application's (an application that
# links -lvulkan or its own volk calls those names too).
#
#   vkattn_shared    libvkattn.so.0.6.0 (SONAME libvkattn.so.0.6: VKATTN_SOVERSION, CMakeLists.txt):
#                    a version script exports vkattn_* (version node VKATTN_0.6) and makes
#                    everything else local.
#   vkattn_static    libvkattn.a: all objects partially linked (ld -r) into one object whose
#                    symbols other than vkattn_* are then made local (objcopy), so the archive
#                    defines no other global. Where ld -r or objcopy is missing (not a GNU/ELF
#                    toolchain), a plain archive of the objects, every symbol global
#                    (VKATTN_LOCALIZE_STATIC=OFF does the same).
#   vkattn_internal  a plain archive, every symbol global: for the tests, which call vka_* directly.
#
# vkattn::vkattn is the shared one when VKATTN_SHARED is on, else the static one.

set(VKATTN_PUBLIC_SYMBOLS "vkattn_*")
set(VKATTN_LIBS_PRIVATE Threads::Threads ${CMAKE_DL_LIBS} m)
set(public_include $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

# ---- shared
include(CheckLinkerFlag)
set(version_script "${PROJECT_BINARY_DIR}/vkattn.map")
file(CONFIGURE OUTPUT "${version_script}"
     CONTENT "VKATTN_${VKATTN_SOVERSION} {\n  global: ${VKATTN_PUBLIC_SYMBOLS};\n  local: *;\n};\n")
check_linker_flag(C "LINKER:--version-script=${version_script}" VKATTN_HAVE_VERSION_SCRIPT)

add_library(vkattn_shared SHARED ${VKATTN_ALL_OBJECTS})
target_include_directories(vkattn_shared PUBLIC ${public_include})
target_link_libraries(vkattn_shared PRIVATE ${VKATTN_LIBS_PRIVATE})
set_target_properties(vkattn_shared PROPERTIES
  OUTPUT_NAME vkattn
  VERSION ${PROJECT_VERSION}
  SOVERSION ${VKATTN_SOVERSION}
  LINKER_LANGUAGE C)
if(VKATTN_HAVE_VERSION_SCRIPT)
  target_link_options(vkattn_shared PRIVATE "LINKER:--version-script=${version_script}")
  set_property(TARGET vkattn_shared APPEND PROPERTY LINK_DEPENDS "${version_script}")
  # Every undefined symbol resolved by the libraries it names: consumers need nothing else.
  # (Not in sanitizer builds: clang links its sanitizer runtimes into executables only.)
  if(NOT VKATTN_SANITIZE)
    target_link_options(vkattn_shared PRIVATE "LINKER:--no-undefined")
  endif()
else()
  message(WARNING "vkattn: the linker takes no version script; libvkattn.so exports every symbol")
endif()
vkattn_target_options(vkattn_shared)

# ---- static
set(localize_default OFF)
if(CMAKE_LINKER AND CMAKE_OBJCOPY)
  set(localize_default ON)
endif()
option(VKATTN_LOCALIZE_STATIC "Make every symbol of libvkattn.a but vkattn_* local (needs ld -r and objcopy)"
       ${localize_default})

if(VKATTN_LOCALIZE_STATIC)
  set(combined "${CMAKE_CURRENT_BINARY_DIR}/vkattn_combined.o")
  set(public "${CMAKE_CURRENT_BINARY_DIR}/vkattn_public.o")
  add_custom_command(
    OUTPUT "${public}"
    COMMAND "${CMAKE_LINKER}" -r -o "${combined}" ${VKATTN_ALL_OBJECTS}
    COMMAND "${CMAKE_OBJCOPY}" --wildcard "--keep-global-symbol=${VKATTN_PUBLIC_SYMBOLS}" "${combined}" "${public}"
    DEPENDS vkattn_objects vkattn_shaders ${VKATTN_ALL_OBJECTS}
    COMMENT "Linking vkattn's objects into one, vkattn_* its only globals"
    COMMAND_EXPAND_LISTS
    VERBATIM)
  set_source_files_properties("${public}" PROPERTIES EXTERNAL_OBJECT ON GENERATED ON)
  add_library(vkattn_static STATIC "${public}")
else()
  add_library(vkattn_static STATIC ${VKATTN_ALL_OBJECTS})
endif()
target_include_directories(vkattn_static PUBLIC ${public_include})
target_link_libraries(vkattn_static INTERFACE ${VKATTN_LIBS_PRIVATE})
set_target_properties(vkattn_static PROPERTIES OUTPUT_NAME vkattn LINKER_LANGUAGE C)

# ---- internal (tests)
if(VKATTN_BUILD_TESTS)
  add_library(vkattn_internal STATIC ${VKATTN_ALL_OBJECTS})
  target_include_directories(vkattn_internal PUBLIC include)
  target_link_libraries(vkattn_internal PUBLIC ${VKATTN_LIBS_PRIVATE})
  set_target_properties(vkattn_internal PROPERTIES LINKER_LANGUAGE C)
endif()

add_library(vkattn::vkattn_shared ALIAS vkattn_shared)
add_library(vkattn::vkattn_static ALIAS vkattn_static)
if(VKATTN_SHARED)
  add_library(vkattn::vkattn ALIAS vkattn_shared)
else()
  add_library(vkattn::vkattn ALIAS vkattn_static)
endif()
