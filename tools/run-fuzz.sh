#!/usr/bin/env bash
# A short, bounded libFuzzer run of every parser of outside data (tests/fuzz/): builds the fuzz
# targets with clang in build-fuzz/, runs each for VKATTN_FUZZ_SECONDS (default 20) seconds, as
# many at once as there are processors, from a temporary copy of its committed seed corpus and
# regression inputs (so the committed corpus does not grow), prints per target the executions,
# the corpus size and the crashes found, and exits non-zero if any target crashed, hung, leaked or
# ran out of memory. Crash inputs are kept in build-fuzz/artifacts/<target>/; minimise one with
# `build-fuzz/vkattn_fuzz_<target> -minimize_crash=1 -runs=10000 FILE`, and once the bug is fixed
# add it to tests/fuzz/regressions/<target>/.
#
# usage: tools/run-fuzz.sh [TARGET...]     TARGET: npy, safetensors, model_config, bench_json, tuning (default: all)
# env:   VKATTN_FUZZ_SECONDS  seconds per target (default 20)
#        CC                   the clang to build with (default clang)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${VKATTN_FUZZ_SECONDS:-20}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(npy safetensors model_config tuning bench_json)
build=$root/build-fuzz
start=$SECONDS

case $seconds in ''|*[!0-9]*) echo "run-fuzz: VKATTN_FUZZ_SECONDS must be a whole number of seconds" >&2; exit 2 ;; esac
for t in "${targets[@]}"; do
  [ -f "tests/fuzz/fuzz_$t.c" ] || { echo "run-fuzz: no fuzz target '$t' (tests/fuzz/fuzz_$t.c)" >&2; exit 2; }
done

# The fuzz targets are built from tests/fuzz on its own: only the parsers' sources, no Vulkan.
# A build-fuzz/ configured from another source tree (e.g. the top level) is started afresh.
if [ -f "$build/CMakeCache.txt" ] &&
   ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$root/tests/fuzz" "$build/CMakeCache.txt"; then
  echo "run-fuzz: $build was configured from another source tree; reconfiguring it"
  rm -rf "$build"
fi
generator=()
command -v ninja >/dev/null && [ ! -f "$build/CMakeCache.txt" ] && generator=(-G Ninja)
# Build output goes to a log, shown only when the build fails.
mkdir -p "$build"
if ! { cmake -S tests/fuzz -B "$build" ${generator[@]+"${generator[@]}"} -DCMAKE_C_COMPILER="${CC:-clang}" \
         -DVKATTN_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug &&
       cmake --build "$build" -j "$(getconf _NPROCESSORS_ONLN)" --target "${targets[@]/#/vkattn_fuzz_}"; } \
     >"$build/build.log" 2>&1; then
  echo "run-fuzz: building the fuzz targets failed; the end of $build/build.log:" >&2
  tail -40 "$build/build.log" >&2
  exit 1
fi
echo "run-fuzz: built in $((SECONDS - start)) s; ${seconds} s per target"

work=$(mktemp -d "${TMPDIR:-/tmp}/vkattn-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
jobs=$(getconf _NPROCESSORS_ONLN)
fuzz_one() {
  local t=$1 corpus=$work/$1 artifacts=$build/artifacts/$1 log=$build/logs/$1.log rc=0
  mkdir -p "$corpus" "$artifacts" "$build/logs"
  # Seeds and regression inputs; dotfiles (.gitkeep) are not inputs.
  find "tests/fuzz/corpus/$t" "tests/fuzz/regressions/$t" -maxdepth 1 -type f ! -name '.*' \
    -exec cp {} "$corpus" \; 2>/dev/null || true
  find "$corpus" -type f | wc -l >"$work/$t.seeds"
  find "$artifacts" -type f | wc -l >"$work/$t.before"
  touch "$work/$t.started"
  # -close_fd_mask=2: the targets' own stderr (bench_compare's messages) is dropped; libFuzzer and
  # the sanitizers still report on the original stderr, which goes to the log.
  "$build/vkattn_fuzz_$t" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=2048 -close_fd_mask=2 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || rc=$?
  echo "$rc" >"$work/$t.rc"
}
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
  fuzz_one "$t" &
  running=$((running + 1))
done
wait

failed=()
printf '%-12s %12s %10s %22s %8s\n' target execs exec/s "corpus (seeds -> end)" crashes
for t in "${targets[@]}"; do
  corpus=$work/$t
  artifacts=$build/artifacts/$t
  log=$build/logs/$t.log
  rc=$(cat "$work/$t.rc" 2>/dev/null || echo 1)
  seeds=$(cat "$work/$t.seeds")
  before=$(cat "$work/$t.before")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  files=$(find "$corpus" -type f | wc -l)
  # (|| true: a target that crashes on a seed logs no corpus line, and the row must still print)
  size=$({ grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' "$log" || true; } | tail -1 | sed 's|corp: [0-9]*/||')
  crashes=$(( $(find "$artifacts" -type f | wc -l) - before ))
  [ "$rc" -eq 0 ] || [ $crashes -gt 0 ] || crashes=1 # a failure that left no input still counts
  printf '%-12s %12s %10s %22s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$seeds -> $files files, ${size:-?}" "$crashes"
  if [ "$rc" -ne 0 ]; then
    failed+=("$t")
    echo "---- vkattn_fuzz_$t failed (exit $rc); the end of $log:"
    grep -v '^#[0-9]' "$log" | tail -40
    echo "---- inputs: $(find "$artifacts" -type f -newer "$work/$t.started" | tr '\n' ' ')"
  fi
done
echo "run-fuzz: done in $((SECONDS - start)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
