#!/usr/bin/env bash
# The GPU day (docs/PERFORMANCE.md, "On a GPU"): on a machine with a GPU, builds vkattn, runs the GPU
# tests on that GPU first (a wrong kernel is not worth timing), then the prefill and decode sweeps,
# then torch's scaled_dot_product_attention and matmul at the same shapes where torch with CUDA is
# installed; every figure as JSON in OUT_DIR (default gpu-bench/), with the device's info.
#   tools/gpu-bench.sh [OUT_DIR]
# Environment: VKATTN_DEVICE picks the device (default: vkattn's own choice, a discrete GPU first);
# VKATTN_GLSLANG_COOPMAT / VKATTN_SPIRV_VAL name a cooperative-matrix capable glslang and spirv-val
# (tools/fetch-mesa26.sh unpacks trixie's) so the coopmat kernels are built; GPU_BENCH_BUILD=DIR runs
# a build made elsewhere (a GPU machine without glslang: tools/gpu-pack.sh packs one, its run.sh
# runs this script there); GPU_BENCH_SKIP_TESTS=1 skips the tests; GPU_BENCH_QUICK=1
# (a short lease) runs only the matrix kernels' tests, then torch (all its shapes), vkattn at the
# targets' shapes (L = S = 4096, 8192 keys, f16) and the sweeps. GPU_BENCH_STEP_TIMEOUT (seconds,
# default 150) bounds each program run, GPU_BENCH_ALLOW_CPU=1 lets it time a CPU device.
# A failing or timed-out step is named and the rest still runs: the exit status is non-zero when
# any failed, and the last lines list them. Everything goes to OUT_DIR (each step's output with
# its errors in its .txt) and, after every step, to OUT_DIR.tar.gz beside it: a lease that ends
# mid-run still returns what was measured (give OUT_DIR under the device tool's $OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-gpu-bench}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# a folder of an earlier run would lend its figures to a step that fails now (compares, summaries)
if [ -n "$(ls -A "$out")" ]; then echo "gpu-bench: $out is not empty: give a new folder" >&2; exit 2; fi
build=${GPU_BENCH_BUILD:-build-gpu}
quick=${GPU_BENCH_QUICK:-0}
step_timeout=${GPU_BENCH_STEP_TIMEOUT:-150}
failures=()
start=$SECONDS
# the archive of everything so far, rewritten after each step (a few MB of text at most)
archive() { tar -czf "$out.tar.gz.part" -C "$(dirname "$out")" "$(basename "$out")" 2>/dev/null &&
  mv "$out.tar.gz.part" "$out.tar.gz" || true; }
step() { archive; printf '\n== [%ss] %s\n' "$((SECONDS - start))" "$*"; }
# failed WHAT [FILE]: names a failed step now and at the end (and in a summary FILE)
failed() {
  failures+=("$1")
  echo "(failed: $1)"
  if [ -n "${2:-}" ]; then echo "(failed: $1)" >>"$2"; fi
}
# logged FILE CMD...: CMD within the step time limit, its output and errors into OUT_DIR/FILE and
# on the console; its status (124: timed out)
logged() {
  local file=$1
  shift
  timeout -k 10 "$step_timeout" "$@" 2>&1 | tee "$out/$file"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "gpu-bench: timed out after $step_timeout s" | tee -a "$out/$file"; fi
  return "$rc"
}
# quiet FILE CMD...: the same with the output into FILE only
quiet() {
  local file=$1
  shift
  local rc=0
  timeout -k 10 "$step_timeout" "$@" >"$out/$file" 2>&1 || rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "gpu-bench: timed out after $step_timeout s" >>"$out/$file"; fi
  return "$rc"
}
# llama.cpp's flash attention at the same shapes (tools/gpu_bench_ggml.c; gpu-pack.sh builds it and
# its run.sh names it and ggml's Vulkan backend in GPU_BENCH_GGML and GPU_BENCH_GGML_BACKEND): as
# ggml picks it (on NVIDIA its VK_NV_cooperative_matrix2 kernels, workgroup-scope matrices that
# vkattn does not use), then with those off (GGML_VK_DISABLE_COOPMAT2=1: its KHR cooperative-matrix
# kernels, the extension vkattn's attn_cm uses). ggml's device line says which ("matrix cores: ").
# (Called as `ggml_figures || ...`, where set -e does not reach inside: each run's status is kept.)
ggml_figures() {
  if [ -n "${GPU_BENCH_GGML:-}" ]; then
    local rc=0
    step "llama.cpp's flash attention (ggml's Vulkan backend) at the same shapes"
    timeout -k 10 "$step_timeout" "$GPU_BENCH_GGML" "$GPU_BENCH_GGML_BACKEND" "$out/ggml.json" 2>&1 |
      { grep -v '^ggml_vulkan: [^0-9]' || true; } | tee "$out/ggml.txt" || rc=1
    step "llama.cpp's flash attention without VK_NV_cooperative_matrix2 (GGML_VK_DISABLE_COOPMAT2=1)"
    GGML_VK_DISABLE_COOPMAT2=1 timeout -k 10 "$step_timeout" "$GPU_BENCH_GGML" "$GPU_BENCH_GGML_BACKEND" "$out/ggml_khr.json" 2>&1 |
      { grep -v '^ggml_vulkan: [^0-9]' || true; } | tee "$out/ggml_khr.txt" || rc=1
    return $rc
  else
    step "GPU_BENCH_GGML not set (tools/gpu-pack.sh builds it): no llama.cpp figures"
  fi
}
torch_figures() {
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    step "torch: scaled_dot_product_attention and matmul at the same shapes"
    # (the machine's own libraries, unbuffered: a run cut short keeps what it printed)
    logged torch.txt env -u LD_LIBRARY_PATH PYTHONUNBUFFERED=1 python3 tools/gpu_bench_torch.py "$out/torch.json"
  else
    step "torch with CUDA is not installed: no torch figures"
  fi
}
# the full run's shapes, or (quick) the targets' only
if [ "$quick" = 1 ]; then
  prefill_args=(--dtype f16 --len 4096) cm2_args=(--len 4096) proj_dtypes=f16
  decode_args=(--len 8192 --dtype f16)
else
  # shellcheck disable=SC2054 # the CLI's lists are comma-separated words
  prefill_args=(--dtype f32,f16) cm2_args=() proj_dtypes=f32,f16
  # shellcheck disable=SC2054
  decode_args=(--len 1024,4096,8192,32768 --dtype f16,q8_0)
fi

if [ -z "${GPU_BENCH_BUILD:-}" ]; then
  step "build ($build/)"
  coopmat=()
  [ -n "${VKATTN_GLSLANG_COOPMAT:-}" ] && coopmat+=(-DVKATTN_GLSLANG_COOPMAT="$VKATTN_GLSLANG_COOPMAT")
  [ -n "${VKATTN_SPIRV_VAL:-}" ] && coopmat+=(-DVKATTN_SPIRV_VAL="$VKATTN_SPIRV_VAL")
  # VKATTN_TEST_DEVICE empty: the tests run on the device VKATTN_DEVICE names, or the default one
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DVKATTN_TEST_DEVICE="${VKATTN_DEVICE:-}" \
    ${coopmat[@]+"${coopmat[@]}"} >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
fi
vk=$build/vkattn
step "the device"
if ! logged info.txt "$vk" info; then
  echo "gpu-bench: vkattn info failed (info.txt): no device to measure" >&2
  archive
  exit 1
fi
# the machine as the driver's tools see it (SXM or PCIe, clocks, the Vulkan driver), where they are here
command -v nvidia-smi >/dev/null && { timeout 30 nvidia-smi -q >"$out/nvidia-smi.txt" 2>&1 || true; }
command -v vulkaninfo >/dev/null && { timeout 30 vulkaninfo --summary >"$out/vulkaninfo.txt" 2>&1 || true; }
git rev-parse HEAD >"$out/commit.txt" 2>/dev/null || true
# lavapipe (a CPU) would take hours over these shapes: a loader that fell back to it is refused
default_device=$(grep -E '^\* [0-9]+:' "$out/info.txt" || true)
if [[ $default_device == *CPU* ]] && [ "${GPU_BENCH_ALLOW_CPU:-0}" != 1 ]; then
  echo "gpu-bench: the default device is a CPU (is the GPU's Vulkan driver found? VK_DRIVER_FILES, VKATTN_DEVICE;" \
       "GPU_BENCH_ALLOW_CPU=1 runs anyway)" >&2
  archive
  exit 1
fi

if [ "${GPU_BENCH_SKIP_TESTS:-0}" != 1 ] && [ "$quick" = 1 ]; then
  step "the matrix kernels' tests on this device (quick: their kernel cases and grids only)"
  # matmul_scalar_small: matmul_vec_storage's kernel cases, which no GPU has run yet
  VKATTN_TEST_PIN_DRIVERS=1 ctest --test-dir "$build" \
    -R '^(matmul_cm|attn_cm_khr_(dims|a|b)|attn_cm2|kv_cache_decode_gpu_tuning|matmul_scalar_small|gpu_vs_cpu_gpu_class_(dims|masks))$' \
    --timeout 300 -j 2 --output-on-failure 2>&1 | tee "$out/tests.log" || failed "tests (tests.log)"
elif [ "${GPU_BENCH_SKIP_TESTS:-0}" != 1 ]; then
  step "GPU tests on this device (correctness first)"
  # the fault walks, the CPU-only rows and the consumer builds add nothing here; numerics rows are
  # the accuracy grid. NVIDIA's driver is pinned: reloaded 30 times in a process, it fails.
  # (-E: the consumer builds, which ctest would add back as fixtures)
  VKATTN_TEST_PIN_DRIVERS=1 ctest --test-dir "$build" -L gpu -LE 'faults|bench|cpu' -E '^consumer_' -j "$(nproc)" \
    --timeout 300 --output-on-failure 2>&1 | tee "$out/tests.log" || failed "tests (tests.log)"
fi
# a test that skipped itself (exit 77) found the device without what it needs: worth knowing first
if [ -f "$out/tests.log" ] && grep -qE '\*\*\*(Skipped|Not Run)|\(Skipped\)' "$out/tests.log"; then
  failed "tests skipped on this device (tests.log)"
fi

if [ "$quick" = 1 ]; then
  torch_figures || failed "torch (torch.txt)"
  ggml_figures || failed "ggml (ggml.txt, ggml_khr.txt)"
fi
step "pipeline statistics (registers, shared memory: VKATTN_PIPELINE_STATS=1), fp16 prefill at 1024 and a decode step"
{ VKATTN_PIPELINE_STATS=1 timeout -k 10 "$step_timeout" "$vk" bench --preset gpu --len 1024 --dtype f16 --no-peak \
    --min-time 0.01 2>&1 >/dev/null
  VKATTN_PIPELINE_STATS=1 timeout -k 10 "$step_timeout" "$vk" bench --preset decode --embed 4096 --heads 32 --kv-heads 8 --len 1024 --dtype f16 \
    --no-peak --min-time 0.01 2>&1 >/dev/null; } | grep '^vkattn: ' | sort -u | tee "$out/pipeline_stats.txt" || true
step "prefill: vkattn bench --preset gpu ${prefill_args[*]}"
logged prefill.txt "$vk" bench --preset gpu "${prefill_args[@]}" --json "$out/prefill.json" || failed "prefill (prefill.txt)"
step "head dims 64 (B = 4, E = 1024, H = 16, L = S = 2048) and 256 (E = 4096, H = 16, L = S = 4096), f16"
logged prefill_d64.txt "$vk" bench --preset gpu --batch 4 --embed 1024 --heads 16 --len 2048 --dtype f16 --no-peak \
  --json "$out/prefill_d64.json" || failed "prefill D = 64 (prefill_d64.txt)"
# attn_cm at D = 64 under other tunings, each against the default (16-key blocks, two staged, P
# made in registers where the device's layouts allow: `--trace` says): P through shared memory
# (shared_p: the kernel before session 19); 32-key blocks (cm_attn_wide_d=64, two staged); 64-key
# blocks (two staged, 38.5 KiB: they fit with P in registers, 56 KiB with P's rows): fewer, longer
# blocks where attn_cm's time is mostly per block; 4 subgroups of two 16-row matrices (rows32: the
# same 128-row tile, each K and V matrix loaded from shared memory once for 32 rows, as
# FlashAttention-2's warps own 32 or more rows). None measured yet.
for t in shared_p:coopmat:cm_attn_reg_p=0 keys32:coopmat:cm_attn_wide_d=64 \
  keys64:coopmat:cm_attn_wide_d=64,cm_attn_key_frags=4 rows32:coopmat:cm_attn_subgroups=4,cm_attn_row_frags=2; do
  name=${t%%:*} tuning=${t#*:}
  printf -- '-- VKATTN_TUNING=%s\n' "$tuning"
  if quiet "prefill_d64_$name.txt" env VKATTN_TUNING="$tuning" "$vk" bench --preset gpu --batch 4 --embed 1024 --heads 16 \
    --len 2048 --dtype f16 --no-peak --trace --json "$out/prefill_d64_$name.json"; then
    grep -E '^ +[0-9]+ fused +attn' "$out/prefill_d64_$name.txt" | sed 's/.*on cooperative matrices //' | cut -c1-400 |
      sort -u || true
    "$vk" bench --compare "$out/prefill_d64_$name.json" "$out/prefill_d64.json" | grep -E 'fused|geometric' || true
  else
    failed "prefill D = 64 under $tuning (prefill_d64_$name.txt)"
  fi
done
logged prefill_d256.txt "$vk" bench --preset gpu --embed 4096 --heads 16 --len 4096 --dtype f16 --no-peak \
  --json "$out/prefill_d256.json" || failed "prefill D = 256 (prefill_d256.txt)"
# D = 256 in 32-key blocks, one staged (the default, 16-key blocks with two, took 2.122 ms against 2.256 on the fifth day)
if quiet prefill_d256_one_stage.txt env VKATTN_TUNING=coopmat:cm_attn_stages=1 "$vk" bench --preset gpu --embed 4096 \
  --heads 16 --len 4096 --dtype f16 --no-peak --json "$out/prefill_d256_one_stage.json"; then
  "$vk" bench --compare "$out/prefill_d256_one_stage.json" "$out/prefill_d256.json" | grep -E 'fused|geometric' || true
else
  failed "prefill D = 256, one stage (prefill_d256_one_stage.txt)"
fi
step "attn_cm under an attn_mask: the causal mask as a float mask against is_causal (f16, L = S = 4096, D = 128)"
# Since session 22 attn_cm maps a mask's key blocks first and visits the open ones only, so a float
# causal mask should cost about what causal does, plus one read of the mask (L x S floats per head's
# workgroups). Not measured on a GPU yet.
if quiet prefill_float_causal.txt "$vk" bench --preset gpu --dtype f16 --len 4096 --mask causal,float-causal --no-peak \
  --trace --json "$out/prefill_float_causal.json"; then
  { grep -E '^ +[0-9]+ fused +attn' "$out/prefill_float_causal.txt" | cut -c1-300 | awk '!seen[$0]++' | head -4
    grep -E -A4 ' (causal|float-causal) +fused ' "$out/prefill_float_causal.txt"; } || true
else
  failed "float causal mask (prefill_float_causal.txt)"
fi
step "the scalar fused attention (GPUs without matrix cores, fp32 layers): attn_fused_shared against attn_fused's texel fetches (gpu class, f32, E = 4096, H = 32, L = S = 2048)"
# attn_fused_shared stages each block's K and V in shared memory for a workgroup's 64 query rows;
# attn_fused (fused_shared=0) has every invocation fetch every K and V texel (texture-bound on a
# GPU: about 5 TFLOP/s on an H200, docs/PERFORMANCE.md). Not measured yet (2026-11-28). Also the
# causal mask as a float attn_mask, whose hidden blocks both builds skip (session 21).
for t in gpu:fused_shared=0 gpu; do
  n=${t//[:=,]/_}
  if quiet "scalar_$n.txt" env VKATTN_TUNING="$t" "$vk" bench --preset gpu --embed 4096 --heads 32 --len 2048 --dtype f32 \
    --mask none,causal,float-causal --no-peak --trace --json "$out/scalar_$n.json"; then
    printf -- '-- VKATTN_TUNING=%s\n' "$t"
    grep -E '^ +[0-9]+ fused +attn_fused|^  step times' "$out/scalar_$n.txt" | cut -c1-300 | awk '!seen[$0]++' || true
  else
    failed "scalar attention under $t (scalar_$n.txt)"
  fi
done
if [ -f "$out/scalar_gpu_fused_shared_0.json" ] && [ -f "$out/scalar_gpu.json" ]; then # > 1: attn_fused_shared is faster
  "$vk" bench --compare "$out/scalar_gpu_fused_shared_0.json" "$out/scalar_gpu.json" | grep -E 'fused|geometric' || true
fi
step "prefill on attn_cm2 (VKATTN_COOPMAT2=1: where the device has VK_NV_cooperative_matrix2; else as above)"
# --trace: each configuration's plan names the attention kernel that ran (attn_cm2, attn_cm, attn_fused)
quiet prefill_cm2.txt env VKATTN_COOPMAT2=1 "$vk" bench --preset gpu --dtype f16 ${cm2_args[@]+"${cm2_args[@]}"} --trace \
  --json "$out/prefill_cm2.json" || failed "attn_cm2 prefill (prefill_cm2.txt)"
grep -E 'GFLOP|attn_cm2|attn_cm |attn_fused' "$out/prefill_cm2.txt" | head -40 || true
step "tile sweep: the prefill at L = S = 4096 (f16) under tuning strings (docs/PERFORMANCE.md)"
# Each run names its tuning; the QKV projection column is matmul_cm's figure, attention attn_cm's
# (attn_cm2's with VKATTN_COOPMAT2=1). An attn_cm tile that does not fit gives way to a smaller one, a matmul_cm tile to
# fewer subgroups across, then to the next kernel: --trace shows what ran. GPU_BENCH_SWEEP="T1 T2 ..." replaces the list.
# The fifth day's defaults against the kernels as they were, and the tiles still in question
# (the ones the H100 days settled are left out: 16-byte loads in attn_cm, 2.62-2.68 ms against
# 2.20; the softmax through shared memory, 2.57; matmul_cm's 8-byte loads, 0.732 against 0.684.
# GPU_BENCH_SWEEP takes any list):
# cm_attn_reg_p=0,cm_direct=0: P through shared memory, as every GPU day ran attn_cm (the default
# since session 19 makes P's A matrices from the score matrices' elements where the layouts
# allow, the probe says so in `--trace`: no P store, subgroup barrier and A loads a block), and
# matmul_cm's epilogue through shared memory, an address per element (the default since session
# 19 stores each accumulator whole into C where the tiles and C's layout allow): the projections'
# columns and the attention's of this row against the default's are the two changes' figures;
# cm_attn_stages=1: attn_cm's one staged K/V block (2.259 ms against 2.154 with two on the fifth day);
# cm_attn_wide_d=512: 16-key blocks with two stages at D = 128 too (at D = 256 the default since the
# fifth day: 2.122 ms against 2.256 for 32-key blocks with one);
# cm_attn_key_frags=4,cm_attn_stages=1: 64-key blocks with one stage (37 KiB with P in registers;
# with P through shared memory 48 keys, 42.5 KiB), never measured: if attn_cm's time is mostly per
# block (the fifth day's 64-row tiles took 1.64x as long), fewer, longer blocks may pay even
# without the second stage;
# cm_attn_row_frags=2: two 16-row matrices a subgroup, each K and V matrix loaded from shared memory
# once for both (the default's 16 rows a subgroup load a block's K and V once per 16 rows: twice
# the shared-memory reads of FlashAttention-2's 32-row warps), never measured: with 4 subgroups the
# default's 128 x 32 tile (46 KiB; Q and O in twice the registers: pipeline_stats.txt says whether
# it spills), with 16-key blocks (fewer registers), with 8 subgroups 256 x 16 (two staged, 33 KiB).
sweep=${GPU_BENCH_SWEEP:-"coopmat coopmat:cm_attn_reg_p=0,cm_direct=0 coopmat:cm_attn_stages=1 coopmat:cm_attn_wide_d=512
  coopmat:cm_attn_key_frags=4,cm_attn_stages=1 coopmat:cm_attn_subgroups=4,cm_attn_row_frags=2
  coopmat:cm_attn_subgroups=4,cm_attn_row_frags=2,cm_attn_wide_d=512 coopmat:cm_attn_row_frags=2"}
# GPU_BENCH_ROUNDS=N runs the list N times, alternating (shared machines drift: the fastest repeat
# of alternated rounds agreed to 1-3% on an H100 where medians jumped 3x); sweep_summary.txt then has
# each tuning's fastest stage times over the rounds.
rounds=${GPU_BENCH_ROUNDS:-1}
for round in $(seq "$rounds"); do
  n=0
  for t in $sweep; do
    n=$((n + 1))
    printf '\n-- VKATTN_TUNING=%s (round %s)\n' "$t" "$round" | tee -a "$out/sweep.txt"
    # round 1 also keeps the driver's statistics of the attention pipelines (registers, spills)
    timeout -k 10 "$step_timeout" env VKATTN_PIPELINE_STATS=$((round == 1)) VKATTN_TUNING="$t" "$vk" bench --preset gpu \
      --len 4096 --dtype f16 --min-time 0.3 --trace --json "$out/sweep_${n}_r$round.json" >"$out/sweep_${n}_r$round.txt" \
      2>"$out/sweep_${n}_r$round.err" ||
      failed "sweep $t, round $round (sweep_${n}_r$round.txt and .err)" "$out/sweep.txt"
    grep -v '^vkattn: pipeline ' "$out/sweep_${n}_r$round.err" >&2 || true
    grep -E '^vkattn: pipeline attn_cm' "$out/sweep_${n}_r$round.err" | sort -u | cut -c1-400 | tee -a "$out/sweep.txt" || true
    # the steps that ran (kernels, tiles), then each configuration's time and its stages' shares
    grep -E '^ +[0-9]+ +(qkv_projection|fused|merge|out_projection) +[a-z_0-9]+ |^ +1 +4096 |^ +(qkv_projection|fused|merge|out_projection) +[0-9.]+%|^  step times' \
      "$out/sweep_${n}_r$round.txt" | cut -c1-400 | awk '!seen[$0]++' | tee -a "$out/sweep.txt" || true
  done
done
# shellcheck disable=SC2086 # the list's words are the tunings
python3 - "$out" "$rounds" $sweep <<'PY' | tee "$out/sweep_summary.txt" || echo "(no summary: python3 failed)"
import json, sys
out, rounds, tunings = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
stages = ("qkv_projection", "fused", "out_projection")
print("fastest ms over %d round(s), L = S = 4096, f16 (none | causal)" % rounds)
print("%-58s %17s %17s %17s" % ("tuning", *stages))
for n, t in enumerate(tunings, 1):
    best = {}
    for r in range(1, rounds + 1):
        try:
            results = json.load(open("%s/sweep_%d_r%d.json" % (out, n, r)))["results"]
        except (OSError, ValueError, KeyError):
            continue
        for res in results:
            for st in res["stages"]:
                if st.get("ms_min") is None:  # a non-finite time is null in the JSON
                    continue
                key = (st["stage"], res["mask"])
                best[key] = min(best.get(key, float("inf")), st["ms_min"])
    cell = lambda s: "%7.3f | %7.3f" % (best.get((s, "none"), float("nan")), best.get((s, "causal"), float("nan")))
    print("%-58s %s" % (t, " ".join(cell(s) for s in stages)))
PY
if [ "$quick" != 1 ]; then # (quick: the prefill's QKV projection column is the projections' figure)
  step "projections: vkattn bench --preset projections"
  logged projections.txt "$vk" bench --preset projections --dtype "$proj_dtypes" --json "$out/projections.json" ||
    failed "projections (projections.txt)"
fi
step "decode: vkattn bench --preset decode (E=4096 H=32 H_kv=8) ${decode_args[*]}"
logged decode.txt "$vk" bench --preset decode --embed 4096 --heads 32 --kv-heads 8 "${decode_args[@]}" \
  --json "$out/decode.json" || failed "decode (decode.txt)"
step "decode sweep: 8192 and 32768 keys (f16) under tuning strings (attn_merge's lanes per texel, attn_paged_lanes' prefetch and loads, parts per compute unit, lanes per key)"
# fewer parts read longer runs of keys per workgroup and merge less; more keep more loads in flight;
# merge_lanes=1 is the merge as it was on the third GPU day (one invocation walks a row's parts),
# paged_lanes_prefetch=0 attn_paged_lanes as it was (each block's rows fetched at its start),
# paged_lanes_storage=0 its K and V rows through texel fetches (the kernel attn_paged_lanes) instead
# of storage buffers (attn_paged_lanes_storage), paged_lanes_q_shared=0 its queries fetched again by
# each block instead of staged in shared memory once, and both: the kernel as it was.
# GPU_BENCH_DECODE_SWEEP="T1 T2 ..." replaces the list.
dsweep=${GPU_BENCH_DECODE_SWEEP:-"coopmat coopmat:merge_lanes=1 coopmat:merge_lanes=4 coopmat:merge_lanes=32
  coopmat:paged_lanes_prefetch=0 coopmat:paged_lanes_storage=0 coopmat:paged_lanes_q_shared=0
  coopmat:paged_lanes_storage=0,paged_lanes_q_shared=0 coopmat:paged_lanes_per_unit=4 coopmat:paged_lanes_per_unit=16
  coopmat:paged_lanes_per_unit=32 coopmat:paged_lanes_group=2"}
n=0
for t in $dsweep; do
  n=$((n + 1))
  printf '\n-- VKATTN_TUNING=%s\n' "$t" | tee -a "$out/decode_sweep.txt"
  quiet "decode_sweep_$n.txt" env VKATTN_TUNING="$t" "$vk" bench --preset decode --embed 4096 --heads 32 --kv-heads 8 \
    --len 8192,32768 --dtype f16 --min-time 0.3 --trace --json "$out/decode_sweep_$n.json" ||
    failed "decode sweep $t (decode_sweep_$n.txt)" "$out/decode_sweep.txt"
  # the attention steps that ran (kernel, parts, lanes, prefetch), each step's fastest time (the
  # attention's parts and their merge apart: how much of a step is the merge), then its rows
  grep -E '^-- decoding step|^ +[0-9]+ fused +attn_|^  step times' "$out/decode_sweep_$n.txt" | cut -c1-220 |
    tee -a "$out/decode_sweep.txt" || true
  grep -E '^ +[0-9]+ f16' "$out/decode_sweep_$n.txt" | cut -c1-170 | tee -a "$out/decode_sweep.txt" || true # its rows
  # against the first string, point by point (old/new > 1: this string is faster)
  if [ "$n" -gt 1 ] && [ -f "$out/decode_sweep_1.json" ] && [ -f "$out/decode_sweep_$n.json" ]; then
    "$vk" bench --compare "$out/decode_sweep_1.json" "$out/decode_sweep_$n.json" | grep -E '^decode_|attention' |
      tee -a "$out/decode_sweep.txt" || true
  fi
done
step "decode's projections: matmul_vec's shapes at 8192 keys (f16), each against the default"
# a decoding step's Q/K/V and output projections stream the weights once (50 and 34 MB at E = 4096):
# columns per workgroup (vec_tile_n) and invocations (vec_wg) set the loads in flight and the grid;
# vec_storage=0 reads them through texel fetches (matmul_vec, the second GPU day's 40-45% of the
# copy bandwidth) instead of 16-byte storage-buffer loads (matmul_vec_storage).
# GPU_BENCH_VEC_SWEEP="T1 T2 ..." replaces the list.
vsweep=${GPU_BENCH_VEC_SWEEP:-"coopmat coopmat:vec_storage=0 coopmat:vec_tile_n=4 coopmat:vec_tile_n=2
  coopmat:vec_tile_n=8 coopmat:vec_wg=64 coopmat:vec_wg=256 coopmat:vec_tile_n=8,vec_wg=256
  coopmat:vec_storage=0,vec_tile_n=8,vec_wg=256"}
n=0
for t in $vsweep; do
  n=$((n + 1))
  printf '\n-- VKATTN_TUNING=%s\n' "$t" | tee -a "$out/decode_vec.txt"
  quiet "decode_vec_$n.txt" env VKATTN_TUNING="$t" "$vk" bench --preset decode --embed 4096 --heads 32 --kv-heads 8 \
    --len 8192 --dtype f16 --min-time 0.3 --trace --json "$out/decode_vec_$n.json" ||
    failed "decode projections $t (decode_vec_$n.txt)" "$out/decode_vec.txt"
  grep -E '^ +[0-9]+ +(qkv|out)_projection +matmul' "$out/decode_vec_$n.txt" | awk '!seen[$0]++' | cut -c1-240 |
    tee -a "$out/decode_vec.txt" || true
  if [ "$n" -gt 1 ] && [ -f "$out/decode_vec_1.json" ] && [ -f "$out/decode_vec_$n.json" ]; then
    "$vk" bench --compare "$out/decode_vec_1.json" "$out/decode_vec_$n.json" | grep -E '^decode_|projection' |
      tee -a "$out/decode_vec.txt" || true
  fi
done
step "decode, q8_0 cache: attn_paged_quant_lanes fetching the next block's words ahead, against not; its words from storage buffers, against texel fetches"
# (file names without '=' or ':', which the device tool does not bring back)
for t in coopmat coopmat:paged_lanes_prefetch=0 coopmat:paged_lanes_storage=0; do
  n=${t//[:=,]/_}
  printf '\n-- VKATTN_TUNING=%s\n' "$t" | tee -a "$out/decode_quant.txt"
  quiet "decode_quant_$n.txt" env VKATTN_TUNING="$t" "$vk" bench --preset decode --embed 4096 --heads 32 --kv-heads 8 \
    --len 8192,32768 --dtype q8_0 --min-time 0.3 --trace --json "$out/decode_quant_$n.json" ||
    failed "q8_0 decode $t (decode_quant_$n.txt)" "$out/decode_quant.txt"
  cat "$out/decode_quant_$n.txt" >>"$out/decode_quant.txt"
done
if [ -f "$out/decode_quant_coopmat.json" ] && [ -f "$out/decode_quant_coopmat_paged_lanes_prefetch_0.json" ]; then
  "$vk" bench --compare "$out/decode_quant_coopmat_paged_lanes_prefetch_0.json" "$out/decode_quant_coopmat.json" |
    grep -E '^decode_|attention|geometric' | tee -a "$out/decode_quant.txt" || true # > 1: the prefetch is faster
fi
if [ -f "$out/decode_quant_coopmat.json" ] && [ -f "$out/decode_quant_coopmat_paged_lanes_storage_0.json" ]; then
  "$vk" bench --compare "$out/decode_quant_coopmat_paged_lanes_storage_0.json" "$out/decode_quant_coopmat.json" |
    grep -E '^decode_|attention|geometric' | tee -a "$out/decode_quant.txt" || true # > 1: storage buffers are faster
fi
if [ "$quick" != 1 ]; then
  step "a decoder's loop: an 8-layer stack, one submission per token against a blocking forward per layer"
  logged stack.txt "$vk" bench --preset decode --embed 4096 --heads 32 --kv-heads 8 --len 1024,8192 --dtype f16 --stack 8 \
    --json "$out/stack.json" || failed "stack (stack.txt)"
  torch_figures || failed "torch (torch.txt)"
  ggml_figures || failed "ggml (ggml.txt, ggml_khr.txt)"
fi
step "done in $((SECONDS - start)) s: $out (and $out.tar.gz)"
ls -l "$out"
archive
if [ ${#failures[@]} -gt 0 ]; then
  printf 'gpu-bench: %d step(s) failed:\n' "${#failures[@]}"
  printf '  %s\n' "${failures[@]}"
  exit 1
fi
