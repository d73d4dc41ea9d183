#!/usr/bin/env bash
# vkattn used from outside, the three ways an application gets it (tests/consumer/CMakeLists.txt
# registers one ctest test per step; README "Install and link"):
#
#   run.sh install BUILD CONFIG PREFIX LIBDIR INCLUDEDIR BINDIR CLI(0|1) VERSION SOVERSION
#       cmake --install BUILD into a staging directory, checks the file list, the SONAME
#       (libvkattn.so.SOVERSION: 0.6 while the major version is 0, CMakeLists.txt) and that
#       no installed text file names the build or source tree, then moves it to PREFIX: the
#       consumers below use it where it was not installed, so it must be relocatable
#   run.sh package SOURCE PREFIX WORK CC GENERATOR VERSION SOVERSION
#       tests/consumer built with find_package(vkattn SOVERSION REQUIRED) against PREFIX
#   run.sh pkg-config PREFIX WORK CC PKG_CONFIG
#       main.c compiled by hand with `pkg-config --cflags --libs vkattn`, and with --static
#       against the archive (a copy of PREFIX without libvkattn.so); tools/examples/llama_decode.c
#       too, as its README builds it
#   run.sh subdirectory SOURCE WORK CC GENERATOR
#       tests/consumer built with add_subdirectory(SOURCE): its CMakeLists.txt checks that vkattn
#       changes nothing of the parent and builds only its library
#   run.sh run WORK
#       runs the programs a build step listed in WORK/programs.txt (each does a GPU forward)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
step=$1
shift
jobs=2

case $step in
install)
  build=$1 config=$2 prefix=$3 libdir=$4 includedir=$5 bindir=$6 cli=$7 version=$8 soversion=$9
  source=$(cd "$here/../.." && pwd)
  staging="$prefix.staging"
  rm -rf "$prefix" "$staging"
  cmake --install "$build" --config "$config" --prefix "$staging" >/dev/null
  config_lc=$(tr '[:upper:]' '[:lower:]' <<<"${config:-noconfig}")
  expected=(
    "$includedir/vkattn.h" "$includedir/vkattn_vulkan.h"
    "$libdir/libvkattn.so" "$libdir/libvkattn.so.$soversion" "$libdir/libvkattn.so.$version" "$libdir/libvkattn.a"
    "$libdir/cmake/vkattn/vkattnConfig.cmake" "$libdir/cmake/vkattn/vkattnConfigVersion.cmake"
    "$libdir/cmake/vkattn/vkattnTargets.cmake" "$libdir/cmake/vkattn/vkattnTargets-$config_lc.cmake"
    "$libdir/pkgconfig/vkattn.pc")
  [ "$cli" = 1 ] && expected+=("$bindir/vkattn")
  got=$(cd "$staging" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort)
  want=$(printf '%s\n' "${expected[@]}" | sort)
  if [ "$got" != "$want" ]; then
    echo "install: the installed files differ from the expected ones (< expected, > installed):" >&2
    diff <(echo "$want") <(echo "$got") >&2 || true
    exit 1
  fi
  [ "$(readlink "$staging/$libdir/libvkattn.so")" = "libvkattn.so.$soversion" ] || { echo "install: libvkattn.so -> $(readlink "$staging/$libdir/libvkattn.so")" >&2; exit 1; }
  [ "$(readlink "$staging/$libdir/libvkattn.so.$soversion")" = "libvkattn.so.$version" ] || { echo "install: bad libvkattn.so.$soversion link" >&2; exit 1; }
  soname=$(readelf -d "$staging/$libdir/libvkattn.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "libvkattn.so.$soversion" ] || { echo "install: SONAME '$soname', not libvkattn.so.$soversion" >&2; exit 1; }
  # the exported symbols carry the ABI's version node too
  syms=$(readelf --dyn-syms -W "$staging/$libdir/libvkattn.so.$version")
  if ! grep -qF "vkattn_version_string@@VKATTN_$soversion" <<<"$syms"; then
    echo "install: vkattn_version_string is not in version node VKATTN_$soversion" >&2; exit 1
  fi
  if readelf -d "$staging/$libdir/libvkattn.so.$version" | grep -Eq '\((RPATH|RUNPATH)\)'; then
    echo "install: libvkattn.so carries a run path" >&2; exit 1
  fi
  # Text files (headers, CMake package, .pc) must not point into the build or source tree, nor
  # into the staging directory itself.
  if grep -rIlF -e "$build" -e "$source" -e "$staging" "$staging"; then
    echo "install: the files above name the build, source or install directory" >&2; exit 1
  fi
  mv "$staging" "$prefix"
  (cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||' | sort)
  ;;

package)
  source=$1 prefix=$2 work=$3 cc=$4 generator=$5 version=$6 soversion=$7
  rm -rf "$work"
  cmake -S "$source/tests/consumer" -B "$work" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
        -DVKATTN_CONSUMER_MODE=package -DCMAKE_PREFIX_PATH="$prefix" -DVKATTN_CONSUMER_VERSION="$version" \
        -DVKATTN_CONSUMER_SOVERSION="$soversion" >/dev/null
  cmake --build "$work" -j "$jobs"
  # VKATTN_USE_STATIC_LIBS: vkattn::vkattn is the archive
  cmake -S "$source/tests/consumer" -B "$work/use-static" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
        -DVKATTN_CONSUMER_MODE=package -DCMAKE_PREFIX_PATH="$prefix" -DVKATTN_CONSUMER_VERSION="$version" \
        -DVKATTN_CONSUMER_SOVERSION="$soversion" -DVKATTN_USE_STATIC_LIBS=ON >/dev/null
  cmake --build "$work/use-static" -j "$jobs" --target vkattn_consumer_default
  echo "use-static/vkattn_consumer_default static" >>"$work/programs.txt"
  ;;

pkg-config)
  prefix=$1 work=$2 cc=$3 pkg_config=$4
  rm -rf "$work"
  mkdir -p "$work"
  pc=$(find "$prefix" -name vkattn.pc)
  export PKG_CONFIG_PATH
  PKG_CONFIG_PATH=$(dirname "$pc")
  "$pkg_config" --exists --print-errors 'vkattn >= 0.6' 'vkattn < 0.7'
  echo "pkg-config: vkattn $("$pkg_config" --modversion vkattn): $("$pkg_config" --cflags --libs vkattn)" \
       "| --static: $("$pkg_config" --static --libs vkattn)"
  libdir=$("$pkg_config" --variable=libdir vkattn)
  set -x
  # The shared library (a run path so that the program finds it where it was installed).
  # shellcheck disable=SC2046
  "$cc" -o "$work/vkattn_consumer_shared" "$here/main.c" $("$pkg_config" --cflags --libs vkattn) \
        -Wl,-rpath,"$libdir" -ldl
  # The archive, from a copy of the prefix without libvkattn.so (an install of the archive alone):
  # where both are, the linker takes libvkattn.so for -lvkattn. --static adds what the archive
  # leaves to the program (Libs.private).
  static_prefix="$work/static-prefix"
  cp -a "$prefix" "$static_prefix"
  find "$static_prefix" -name 'libvkattn.so*' -delete
  # shellcheck disable=SC2046
  "$cc" -o "$work/vkattn_consumer_static" "$here/main.c" \
        $(PKG_CONFIG_PATH="$static_prefix/${PKG_CONFIG_PATH#"$prefix"/}" "$pkg_config" --cflags --libs --static vkattn) -ldl
  # The decoding example as tools/examples/README.md builds it (built only: ctest llama_decode_* runs
  # the project's build of it), where cJSON's .pc is there (libcjson-dev).
  if "$pkg_config" --exists libcjson; then
    # shellcheck disable=SC2046
    "$cc" -std=c11 -O2 -o "$work/llama_decode" "$here/../../tools/examples/llama_decode.c" \
          $("$pkg_config" --cflags --libs vkattn libcjson) -lm -Wl,-rpath,"$libdir"
  fi
  { set +x; } 2>/dev/null
  if readelf -d "$work/vkattn_consumer_static" | grep -q 'libvkattn\.so'; then
    echo "pkg-config: the static program needs libvkattn.so" >&2; exit 1
  fi
  printf '%s\n' "vkattn_consumer_shared shared" "vkattn_consumer_static static" >"$work/programs.txt"
  ;;

subdirectory)
  source=$1 work=$2 cc=$3 generator=$4
  # The build is kept between runs (its build of vkattn is the slow part), the cache is not: the
  # configure-time checks compare the cache before and after add_subdirectory.
  rm -f "$work/CMakeCache.txt"
  cmake -S "$source/tests/consumer" -B "$work" -G "$generator" -DCMAKE_C_COMPILER="$cc" \
        -DVKATTN_CONSUMER_MODE=subdirectory -DVKATTN_SOURCE_DIR="$source" -DCMAKE_BUILD_TYPE=Debug
  cmake --build "$work" -j "$jobs"
  ;;

run)
  work=$1
  [ -s "$work/programs.txt" ] || { echo "run: no $work/programs.txt (build step failed?)" >&2; exit 1; }
  fail=0
  while read -r program kind; do
    "$work/$program" "$kind" || { echo "run: $program $kind failed" >&2; fail=1; }
  done <"$work/programs.txt"
  exit $fail
  ;;

*)
  echo "usage: run.sh install|package|pkg-config|subdirectory|run ..." >&2
  exit 2
  ;;
esac
