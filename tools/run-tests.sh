#!/usr/bin/env bash
# The whole test suite on a fresh machine (what CI runs):
#   1. install what is missing, build, run every test (GPU tests on lavapipe under the Khronos
#      validation layer, failing on any message);
#   2. the same suite built with AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on);
#   3. a short libFuzzer run over every parser of outside data (tools/run-fuzz.sh), if present.
# Set VKATTN_SKIP_SANITIZERS=1 or VKATTN_SKIP_FUZZ=1 to leave a phase out locally.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
jobs=$(nproc)
cache="$PWD/build/mesa_shader_cache"
phase() { printf '\n== %s\n' "$*"; }

start=$SECONDS
phase "build and test (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DVKATTN_SHADER_CACHE_DIR="$cache" >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"
main_s=$((SECONDS - start))

san_s=0
if [ "${VKATTN_SKIP_SANITIZERS:-0}" != 1 ]; then
  t=$SECONDS
  phase "AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DVKATTN_SANITIZE=ON \
        -DVKATTN_SHADER_CACHE_DIR="$cache" >/dev/null
  cmake --build build-asan -j "$jobs"
  ctest --test-dir build-asan --output-on-failure -j "$jobs"
  san_s=$((SECONDS - t))
fi

fuzz_s=0
if [ "${VKATTN_SKIP_FUZZ:-0}" != 1 ] && [ -f tools/run-fuzz.sh ]; then
  t=$SECONDS
  phase "short fuzz run (build-fuzz/)"
  bash tools/run-fuzz.sh
  fuzz_s=$((SECONDS - t))
fi

printf '\nrun-tests: all passed in %d s (tests %d s, sanitizers %d s, fuzzing %d s)\n' \
  $((SECONDS - start)) "$main_s" "$san_s" "$fuzz_s"
