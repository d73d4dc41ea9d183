#!/usr/bin/env bash
# The whole test suite on a fresh machine (what CI runs):
#   1. install what is missing, build, run every test (GPU tests on lavapipe under the Khronos
#      validation layer, failing on any message), the failure-injection walks (label `faults`, and
#      `external`'s record walk) at every 10th point from the 6th (tests/fault_sample.h);
#   2. GPU tests again on a second driver, Mesa 25 lavapipe from bookworm-backports, fetched into
#      build/mesa25 without installing it (tools/fetch-mesa25.sh; needs deb.debian.org), with
#      128-bit vectors (subgroups of 4): the rows labelled `driver`, every kernel and path once
#      (its compiler is several times slower cold, so not all);
#   2b. GPU tests on Mesa 26 lavapipe (cooperative matrix), from trixie-backports with trixie's glslang,
#      fetched into build/mesa26 before the build (tools/fetch-mesa26.sh; needs deb.debian.org) so
#      that build/ has the cooperative-matrix kernels: the rows labelled `coopmat`, run through
#      build/mesa26/run (trixie's loader and glibc; VKATTN_TEST_LAUNCHER); on Mesa 22 and 25 they
#      only check that the coopmat tuning is refused and report themselves skipped;
#   3. the suite built with AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer on), with
#      the walks' other half (every 10th point from the 1st, where leaks and memory errors on error
#      paths show; every 5th point is walked in the two phases together) and without the
#      `numerics` rows (accuracy, run in 1), the `covered` ones (whose host lines the rest runs)
#      and the `bench` smoke runs;
#   4. a short libFuzzer run over every parser of outside data (tools/run-fuzz.sh), if present.
# `ctest --test-dir build` alone runs everything.
# Set VKATTN_SKIP_MESA25=1, VKATTN_SKIP_MESA26=1, VKATTN_SKIP_SANITIZERS=1 or VKATTN_SKIP_FUZZ=1 to leave
# a phase out locally (without Mesa 26, build/ has no cooperative-matrix kernels).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh
jobs=$(nproc)
cache="$PWD/build/mesa_shader_cache"
phase() { printf '\n== %s\n' "$*"; }

start=$SECONDS
# Mesa 25 is fetched beside everything before its phase (the network and dpkg -x: seconds of
# waiting, little CPU); its phase waits for it and fails if it failed. (If an earlier phase fails,
# the fetch is left to finish: it only writes build/mesa25.)
mesa25_fetch=
if [ "${VKATTN_SKIP_MESA25:-0}" != 1 ]; then
  mkdir -p build
  bash tools/fetch-mesa25.sh build/mesa25 >build/fetch-mesa25.log 2>&1 &
  mesa25_fetch=$!
fi
coopmat=(-DVKATTN_GLSLANG_COOPMAT= -DVKATTN_SPIRV_VAL=)
if [ "${VKATTN_SKIP_MESA26:-0}" != 1 ]; then
  bash tools/fetch-mesa26.sh build/mesa26   # fails loudly when the mirror is unreachable
  coopmat=(-DVKATTN_GLSLANG_COOPMAT="$PWD/build/mesa26/glslangValidator" -DVKATTN_SPIRV_VAL="$PWD/build/mesa26/spirv-val")
fi
phase "build and test (build/)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DVKATTN_SHADER_CACHE_DIR="$cache" "${coopmat[@]}" \
      -DVKATTN_TEST_LAUNCHER= >/dev/null
cmake --build build -j "$jobs"
VKATTN_FAULT_STRIDE=10 VKATTN_FAULT_FIRST=6 ctest --test-dir build --output-on-failure -j "$jobs"
main_s=$((SECONDS - start))

mesa25_s=0
if [ "${VKATTN_SKIP_MESA25:-0}" != 1 ]; then
  t=$SECONDS
  phase "GPU tests again, on Mesa 25 lavapipe (build/mesa25)"
  # fetch-mesa25.sh fails loudly (apt's log) when the mirror is unreachable
  fetched=0; wait "$mesa25_fetch" || fetched=$?
  if [ "$fetched" -ne 0 ]; then
    cat build/fetch-mesa25.log >&2
    echo "run-tests: fetching Mesa 25 failed (exit $fetched)" >&2
    exit 1
  fi
  cat build/fetch-mesa25.log
  (
    # shellcheck source=/dev/null
    . build/mesa25/env.sh
    # 128-bit vectors: subgroups of 4, a second size beside Mesa 22's and 26's 8 (the kernels assume
    # at most 4 lanes meet), and this driver's compiles, the phase's time, about 2.5x shorter (it
    # writes out a branch per lane for each buffer load: half as many lanes, far less code)
    export LP_NATIVE_VECTOR_WIDTH=128
    info=$(build/vkattn info) || { echo "run-tests: vkattn info failed on Mesa 25" >&2; exit 1; }
    # a loader that ignored the private driver would rerun Mesa 22 and pass: check it first
    grep -q 'Mesa 25\.' <<<"$info" || { echo "run-tests: Mesa 25 lavapipe not in use" >&2; exit 1; }
    grep -qE 'subgroup size +4( |$)' <<<"$info" || { echo "run-tests: Mesa 25 lavapipe not at subgroup size 4" >&2; exit 1; }
    ctest --test-dir build -L driver --output-on-failure -j "$jobs"
  )
  mesa25_s=$((SECONDS - t))
fi

mesa26_s=0
if [ "${VKATTN_SKIP_MESA26:-0}" != 1 ]; then
  t=$SECONDS
  phase "GPU tests on Mesa 26 lavapipe (cooperative matrix) (build/mesa26)"
  run26=$PWD/build/mesa26/run
  info=$("$run26" build/vkattn info)
  # a loader that fell back to the system's driver would skip every coopmat test and pass
  grep -q 'Mesa 26\.' <<<"$info" || { echo "run-tests: Mesa 26 lavapipe not in use" >&2; exit 1; }
  grep -qE 'cooperative matrix: +[0-9]+x[0-9]+x[0-9]+ ' <<<"$info" && ! grep -q 'not used:' <<<"$info" \
    || { echo "run-tests: no usable cooperative matrix on Mesa 26: $(grep 'cooperative matrix' <<<"$info")" >&2; exit 1; }
  cmake -S . -B build -DVKATTN_TEST_LAUNCHER="$run26" >/dev/null
  ctest --test-dir build -L coopmat --output-on-failure -j "$jobs" --no-tests=error | tee build/mesa26/ctest.log
  rc=${PIPESTATUS[0]}
  cmake -S . -B build -DVKATTN_TEST_LAUNCHER= >/dev/null   # build/'s tests run directly again
  [ "$rc" -eq 0 ] || exit "$rc"
  # here every coopmat test must have run: one that skipped itself found no cooperative matrices
  if grep -q '(Skipped)' build/mesa26/ctest.log; then echo "run-tests: coopmat tests skipped on Mesa 26" >&2; exit 1; fi
  mesa26_s=$((SECONDS - t))
fi

san_s=0
if [ "${VKATTN_SKIP_SANITIZERS:-0}" != 1 ]; then
  t=$SECONDS
  phase "AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/)"
  # -O1 -g1 (line tables: the reports keep file and line), as AddressSanitizer's manual suggests:
  # alone it builds in 60 s where -O2 -g took 108 s (2026-11-29), and its tests take no longer
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
        -DVKATTN_SANITIZE=ON -DVKATTN_SHADER_CACHE_DIR="$cache" >/dev/null
  cmake --build build-asan -j "$jobs"
  VKATTN_FAULT_STRIDE=10 VKATTN_FAULT_FIRST=1 ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE 'numerics|covered|bench'
  san_s=$((SECONDS - t))
fi

fuzz_s=0
if [ "${VKATTN_SKIP_FUZZ:-0}" != 1 ] && [ -f tools/run-fuzz.sh ]; then
  t=$SECONDS
  phase "short fuzz run (build-fuzz/)"
  VKATTN_FUZZ_SECONDS=${VKATTN_FUZZ_SECONDS:-12} bash tools/run-fuzz.sh
  fuzz_s=$((SECONDS - t))
fi

printf '\nrun-tests: all passed in %d s (tests %d s, Mesa 25 %d s, Mesa 26 %d s, sanitizers %d s, fuzzing %d s)\n' \
  $((SECONDS - start)) "$main_s" "$mesa25_s" "$mesa26_s" "$san_s" "$fuzz_s"
