#!/bin/sh
# The CLI's side of the cooperative-matrix path: `vkattn info` prints a `cooperative matrix:` line
# and a `cooperative matrix 2:` line (VK_NV_cooperative_matrix2's features);
# under VKATTN_TUNING=coopmat, `vkattn run --precision f16 --trace` shows the projections' matmul_cm
# and the fused attention's attn_cm (2 heads of 8 dims: whole 8x8x8 matrices) where the device has
# cooperative matrices, and no _cm kernel with VKATTN_COOPMAT=0 as well, nor with --precision f32 or
# the default precision of this f32 layer; `bench --dtype f16 --trace` plans the Q/K/V projection
# on its f16 query tensor with 16-byte loads; where it has none, the
# tuning is refused with a clear message and the test reports itself skipped (77).
#   usage: coopmat_cli.sh LAUNCHER VKATTN FIXTURES   (LAUNCHER: "" or build/mesa26/run)
set -u
launcher=$1 vkattn=$2 fixtures=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail() { echo "coopmat_cli: FAILED: $*"; exit 1; }
# shellcheck disable=SC2086  # an empty launcher is no word
run() { $launcher "$vkattn" "$@"; }
forward() {
  run run --weights "$fixtures/causal.safetensors" --heads 2 --query "$fixtures/causal.query.npy" \
      --out "$out/out.npy" --causal --trace "$@"
}

# VKATTN_PIPELINE_STATS=1, the tuning aid: a line of statistics per pipeline where the driver has
# VK_KHR_pipeline_executable_properties, else one note; the forward runs either way
VKATTN_PIPELINE_STATS=1 forward >"$out/stats" 2>&1 || fail "forward with VKATTN_PIPELINE_STATS=1: $(cat "$out/stats")"
grep -qE '^vkattn: (pipeline [a-z_0-9]+ spec [0-9,]+; .+|VKATTN_PIPELINE_STATS: .+ has no VK_KHR_pipeline_executable_properties; no statistics)$' "$out/stats" ||
  fail "VKATTN_PIPELINE_STATS=1 printed neither statistics nor the note: $(cat "$out/stats")"
grep -qE '^ +[0-9]+ fused ' "$out/stats" || fail "no plan with VKATTN_PIPELINE_STATS=1: $(cat "$out/stats")"

run info >"$out/info" 2>&1 || fail "vkattn info: $(cat "$out/info")"
line=$(grep -E '^ +cooperative matrix: ' "$out/info" | head -n1)
[ -n "$line" ] || fail "vkattn info has no 'cooperative matrix:' line: $(cat "$out/info")"
echo "info:$line"
# VK_NV_cooperative_matrix2's features (Mesa 26 lavapipe lists four), or none: none wherever the
# device has no KHR cooperative matrices, which the NV extension builds on
line2=$(grep -E '^ +cooperative matrix 2: +(none$|[a-z].*\(VK_NV_cooperative_matrix2; [^)]+\)$)' "$out/info" | head -n1)
[ -n "$line2" ] || fail "vkattn info has no well-formed 'cooperative matrix 2:' line: $(cat "$out/info")"
echo "info:$line2"
if echo "$line" | grep -qE 'cooperative matrix: +none'; then
  echo "$line2" | grep -qE ': +none$' || fail "matrix2 features without KHR cooperative matrices: $line2"
fi
if echo "$line" | grep -qE 'cooperative matrix: +[0-9]+x[0-9]+x[0-9]+' && ! echo "$line" | grep -q 'not used'; then
  VKATTN_TUNING=coopmat forward --precision f16 >"$out/cm" 2>&1 || fail "coopmat forward: $(cat "$out/cm")"
  grep -E '^ +[0-9]+ [a-z_]+ +[a-z_]*_cm ' "$out/cm" || fail "no _cm kernel in the coopmat plan: $(cat "$out/cm")"
  # attn_cm takes head dims of whole matrices: these 8 dims with 8x8x8 (lavapipe), not 16x16x16
  if echo "$line" | grep -qE '(^|[ ,])8x8x[0-9]+'; then
    grep -qE '^ +[0-9]+ fused +attn_cm2? ' "$out/cm" || fail "no attn_cm in the coopmat plan: $(cat "$out/cm")"
  fi
  VKATTN_TUNING=coopmat VKATTN_COOPMAT=0 forward --precision f16 >"$out/off" 2>&1 || fail "forward with VKATTN_COOPMAT=0: $(cat "$out/off")"
  ! grep -E '_cm ' "$out/off" || fail "a _cm kernel with VKATTN_COOPMAT=0"
  grep -qE 'out_projection +matmul ' "$out/off" || fail "no plain matmul with VKATTN_COOPMAT=0: $(cat "$out/off")"
  grep -qE '^ +[0-9]+ fused +attn_fused(_shared)? ' "$out/off" || fail "no attn_fused with VKATTN_COOPMAT=0: $(cat "$out/off")"
  VKATTN_TUNING=coopmat forward --precision f32 >"$out/f32" 2>&1 || fail "forward with --precision f32: $(cat "$out/f32")"
  ! grep -E '_cm ' "$out/f32" || fail "a _cm kernel with --precision f32"
  grep -qE '^ +[0-9]+ fused +attn_fused(_shared)? ' "$out/f32" || fail "no attn_fused with --precision f32: $(cat "$out/f32")"
  VKATTN_TUNING=coopmat forward >"$out/default" 2>&1 || fail "forward at the default precision: $(cat "$out/default")"
  ! grep -E '_cm ' "$out/default" || fail "a _cm kernel at the default precision of an f32 layer"
  # bench --dtype f16 times (and --trace explains) a forward on f16 tensors: the Q/K/V projection
  # reads the f16 query 8 values per 16-byte load, as the output projection reads the context
  VKATTN_TUNING=coopmat run bench --len 16 --embed 64 --heads 8 --dtype f16 --path fused --no-cpu --no-peak \
    --min-time 0 --trace >"$out/bench" 2>&1 || fail "bench --dtype f16: $(cat "$out/bench")"
  grep -qE '^ +1 qkv_projection +matmul_cm .*16-byte loads of 8' "$out/bench" ||
    fail "bench --dtype f16: the Q/K/V projection does not read f16 tensors 8 per load: $(cat "$out/bench")"
  echo "ok: the coopmat tuning runs matmul_cm and attn_cm at --precision f16; with VKATTN_COOPMAT=0, --precision f32 or the f32 layer's default it runs none"
  exit 0
fi
if VKATTN_TUNING=coopmat forward >"$out/refused" 2>&1; then
  # a device with cooperative matrices that vkattn does not use (a build without the kernels refuses)
  ! grep -E '_cm ' "$out/refused" || fail "a _cm kernel where info says they are not used"
else
  grep -q 'needs cooperative matrices' "$out/refused" || fail "unclear refusal: $(cat "$out/refused")"
  echo "refused: $(grep 'needs cooperative' "$out/refused")"
fi
echo "skipped: no cooperative matrices for vkattn here ($line)"
exit 77
