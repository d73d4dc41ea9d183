/* The kernel-tuning table. Each row says what it is tuned for and why; `vkattn info` prints the
 * tuning a device gets. Figures behind the lavapipe row: ../../docs/PERFORMANCE.md. */
#include "tuning.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The gpu row's shapes of the kernels every GPU class shares; the cooperative-matrix rows run
 * their other kernels this way too. Decoding: attn_paged has an invocation per (row tile, key
 * part), so a batch-1 step over 8192 keys has 32 row tiles at D = 128 (Llama-3-8B) and needs parts
 * of 16 keys (one block) and workgroups of one 32-lane subgroup to give two workgroups per unit on
 * 132 units. Its projections (one row) are matrix-vector products (matmul_vec): 128 invocations
 * stream vec_tile_n rows of W (4 in gpu and intel, so a 4096-wide layer has 1024 workgroups or
 * more; 1 in coopmat, measured below the table; on an H200 the skinny
 * matmul's 24 workgroups read W at about 70 GB/s, matmul_vec at 1.3-1.5 TB/s). Projections of 64
 * rows or more with fp32 operands (every one in "gpu"; in the cooperative-matrix classes those of
 * fp32 layers) take matmul_sm: 64 x 64 outputs per workgroup of 256 (4 x 4 each), blocks of 16,
 * the classic SGEMM tile (8.5 KiB of shared memory; on an H200 27 TFLOP/s, matmul.comp 2).
 * attn_paged_lanes (a workgroup of 32 per row tile, 4 lanes per key) gets parts for 8 workgroups
 * per compute unit: on an H100 (2026-11-26, E = 4096, H_kv = 8, f16 cache) its step took 0.063 ms
 * at 8192 keys and 0.119 at 32768 with 8, against 0.088 and 0.163 with 16, 0.060 and 0.139 with 4,
 * 0.079 and 0.231 with 2 (fewer parts: longer runs of keys per workgroup and a shorter merge; more:
 * more loads in flight); 2 lanes per key 0.076 and 0.194 at 4 per unit. Those times fit about
 * 1.2 us per serial key block, 0.1 us per part and 42 us besides: the merge walked a row's parts in
 * one invocation (128 parts at 8 per unit). It now gives each texel up to 16 invocations that walk
 * every 16th part and meet in shared memory; each block of attn_paged_lanes fetches the next
 * block's rows before this one's work (up to D = 128), reads the cache from storage buffers (an
 * fp16 one 8 halves per 16-byte load) and stages the row tile's queries in shared memory once,
 * where each block fetched them again; matmul_vec reads 16-byte words of storage buffers where
 * the rows allow (vec_storage). On an H100 (2026-11-27, the same layer, f16 cache; fastest
 * repeats) the step's attention took 0.043 ms at 8192 keys (787-798 GB/s; torch's SDPA on the
 * same cache 0.037) and 0.087 at 32768 (SDPA 0.071), against 0.060 and 0.107 with merge_lanes=1,
 * 0.048 and 0.094 with 4, 0.043 and 0.088 with 32; with a part's keys read in one workgroup
 * (split 1) 1.15 ms at 8192 against 1.94 without the prefetch, 1.46 with texel fetches, 2.10
 * with the queries fetched per block, 1.96 as the kernel was; 4, 16 and 32 parts per unit
 * 0.045, 0.050 and 0.061; 2 lanes per key 0.050. matmul_vec_storage and matmul_vec took the
 * same time (texel fetches were not the limit: 48 us for the Q/K/V projection's 50 MB). A
 * q8_0 cache's words from storage buffers: 0.063 ms at 8192 keys against 0.061 through texel
 * fetches (0.160 both at 32768; split 1 2.05 against 1.93 ms), left so for one layout of the
 * block formats' loads across the GPU classes; its prefetch 1.2-1.4x (2.8x with a part's keys in
 * one workgroup). */
#define GPU_KERNELS                                                                                 \
    .matmul_tile_m = 4, .matmul_tile_n = 4, .matmul_wg = 64, .matmul_skinny_tile_n = 4,             \
    .matmul_skinny_wg = 64, .scores_tile_q = 4, .scores_tile_k = 4, .scores_wg = 64, .pv_tile_q = 4,\
    .pv_tile_d = 2, .pv_wg = 64, .fused_tile_k = 16, .fused_q_dims = 128, .fused_max_tile_q = 4,    \
    .fused_wg = 64, .paged_wg = 32, .paged_target = 16384, .paged_per_unit = 128,                   \
    .paged_min_part = 16, .softmax_wg = 256, .vec_wg = 128, .vec_storage = 1,                       \
    .sm_tile_m = 64, .sm_tile_n = 64, .sm_tile_k = 16, .sm_group_rows = 8, .paged_lanes = 32,       \
    .paged_lanes_group = 4,                                                                         \
    .paged_lanes_per_unit = 8, .paged_lanes_prefetch = 1, .paged_lanes_storage = 1,                 \
    .paged_lanes_q_shared = 1, .merge_lanes = 16

static const vka_tuning tunings[] = {
    {
        .name = "lavapipe",
        .why = "CPU rasterizer: texel fetches are the fast load path, shared memory is not faster than "
               "global memory, register blocking is what counts",
        /* 16x16 outputs per invocation: ~32 products per texel fetch (30-45 GFLOP/s of ~51 peak). */
        .matmul_tile_m = 16, .matmul_tile_n = 16, .matmul_wg = 64,
        .matmul_skinny_tile_n = 4, .matmul_skinny_wg = 8,
        .scores_tile_q = 8, .scores_tile_k = 8, .scores_wg = 64,
        .pv_tile_q = 8, .pv_tile_d = 4, .pv_wg = 64,
        /* 8 queries x 16 keys at D = 64: ~37 GFLOP/s; larger D gets fewer queries (register spills). */
        .fused_tile_k = 16, .fused_q_dims = 512, .fused_max_tile_q = 8, .fused_wg = 64,
        /* decoding has few rows: small workgroups (one SIMD batch of 8 lanes) spread over the
         * worker threads; 64 invocations keep a few cores busy */
        .paged_wg = 8, .paged_target = 64, .paged_per_unit = 32, .paged_min_part = 256,
        .softmax_wg = 64,
    },
    {
        .name = "gpu",
        .why = "desktop GPUs without cooperative matrices (RDNA2, older NVIDIA, Apple through MoltenVK): many "
               "light threads hide latency, small per-thread tiles keep registers free; the projections on the "
               "shared-memory tiled GEMM (matmul_sm), the other kernels with GPU-sized tiles and workgroups "
               "(untuned: no GPU was available)",
        GPU_KERNELS, .vec_tile_n = 4,
        /* the fused attention's K and V staged in shared memory for a workgroup's 64 query tiles
         * (attn_fused_shared), not fetched by every invocation: a texel fetch per four FMAs held an
         * fp32 attention to 4.9 TFLOP/s on an H200 (untuned: not yet measured, tools/gpu-bench.sh) */
        .fused_shared = 1,
    },
    {
        .name = "coopmat",
        .why = "desktop GPUs with matrix cores of 16 x 16 matrices (VK_KHR_cooperative_matrix: NVIDIA since Turing, "
               "AMD RDNA3): the projections as shared-memory tiled GEMMs and the fused attention with fp16 operands "
               "and fp32 sums in 32-lane subgroups, the other kernels as gpu but decoding's matrix-vector products one "
               "column a workgroup (measured on an NVIDIA H200 and H100s)",
        GPU_KERNELS, /* the other kernels as gpu, but: */
        /* decoding's projections one output column per workgroup of 128: on an H100 (2026-11-27,
         * E = 4096, f16, 8192 keys, alternated) the output projection took 25-26 us so against
         * 28-29 with 4 columns, the Q/K/V projection 47 against 48 (W streamed at 1.3 and 1.07 TB/s) */
        .vec_tile_n = 1,
        /* 2 x 8 subgroups of 4 x 2 accumulators, 2 steps per block: with 16 x 16 x 16 matrices 128 x
         * 256 outputs per workgroup of 512, blocks of 32 (46 KiB of shared memory with one staged
         * block; two where the device holds them, 76 KiB), 32 x 128 with lavapipe's 8 x 8 x 8 (2 x 2
         * each, blocks of 16: the oracle's LLVM compile grows with the unrolled body). On an H100
         * (2026-11-26, E = 4096, L = 4096, fp16, Q/K/V projection, fastest repeats, alternated):
         * 2.12 ms so (194 TFLOP/s; the output projection 0.73), against 3.05 (0.98) in 2 x 4
         * subgroups of 4 x 2 with two staged blocks, the tile before (48 KiB, 168 registers: one
         * workgroup of 8 subgroups a unit; 16 subgroups of 128 registers keep twice the loads in
         * flight: in an experiment build fetching and staging alone took 2.9 of its 3.05 ms, the
         * multiplies alone 1.4); 256 x 128 in 16 subgroups 2.37, 128 x 128 in 16 2.81-2.85.
         * Before: 3.40-3.45 in 2 x 2
         * subgroups of 4 x 4 with one staged block, 3.36-3.46 in 2 x 4 with blocks of 64, 4.6 in
         * 2 x 4 with one block, 5.7-5.8 in 2 x 2 with two. Up to 8 rows (decoding) take matmul_vec,
         * as ggml keeps them on matrix-vector kernels. Subgroups of 32: NVIDIA's only size, and
         * RDNA3's wave32. */
        .cm_frags_m = 4, .cm_frags_n = 2, .cm_frags_narrow = 2, .cm_ksteps = 2, .cm_min_rows = 9, .cm_subgroup = 32,
        .cm_subgroups_n = 8, .cm_stages = 2,
        /* software pipelining (one staged block; two always fetch ahead): on an H100 the Q/K/V
         * projection at L = 4096 took 2.70 ms with it, 3.19 without (fastest repeats) */
        .cm_prefetch = 1,
        /* matmul_cm's fp16 operands in 16-byte loads of 8 values (half the load and staging
         * instructions of 8-byte ones): on an H100 (2026-11-27, L = 4096, fp16, alternated, fastest
         * repeats) the output projection took 0.673-0.689 ms so, 0.720-0.725 with 4 per load (the
         * Q/K/V projection reads fp32 queries: 2.08-2.13 either way) */
        .cm_wide_loads = 1,
        /* tiles in groups of 8 rows: the Q/K/V projection at L = 4096 (32 x 48 tiles of 128 x 256)
         * ran row by row, so each wave of 132 workgroups (about 3 rows) read all 100 MB of W past
         * the H100's 50 MB L2; in groups of 8 a wave spans 8 rows of A (8 MB) and 17 columns of W
         * (35 MB). On an H100 (2026-11-27) no different: 2.09 ms against 2.11 row by row, 2.10 in
         * groups of 16 (the L2 was not the limit); kept, a wave's reuse at no cost */
        .cm_group_rows = 8,
        /* each accumulator stored whole into C where the tiles and C's layout allow: the
         * epilogue's per-element address (two runtime divisions) and trip through shared memory
         * were about a tenth of a tile's instructions at K = 4096 by count, with nothing to
         * overlap them (one workgroup a unit). Not yet measured on a GPU (2026-11-27) */
        .cm_direct = 1,
        /* Attention: 8 subgroups of MAT_M query rows, keys in blocks of two MAT_N matrices from D =
         * 128 on, of one below: 128 rows x 32 keys with 16 x 16 x 16 at D = 128 (46 KiB of shared
         * memory; at D = 256 it does not fit and 128 x 16 runs, 33.5 KiB), 64 x 16 with lavapipe's
         * 8 x 8 x 8. Before the whole-block softmax (below), measured on an H100 (2026-11-26,
         * L = S = 4096, fp16, attention alone, fastest of the repeats; docs/PERFORMANCE.md):
         * at D = 128 64 x 32 took 6.4 ms, 64 x 16 3.8, 128 x 32 3.6-3.7, 128 x 16 3.9; at D = 64
         * (B = 4, H = 16, L = 2048) 128 x 16 1.06 ms against 1.5 for the others; at D = 256 only 128 x 16 of the
         * 128-row tiles fits 48 KiB (3.0 ms; 64 x 32: 6.0). Two invocations per row in the
         * softmax: a 32-lane subgroup's 16 rows keep every lane busy, and lavapipe's 8 lanes run
         * the shuffles too (two passes of 4 rows). With whole blocks' softmax skipping the mask
         * tests (2026-11-26, the third GPU day, same machine, alternated twice): at D = 128
         * 128 x 32 took 2.54 ms against 2.90 for 128 x 16 (causal 1.34 against 1.51; 4 lanes per
         * row: 2.57 and 3.06); at D = 64 128 x 16 stays (0.87 ms; 128 x 32 with 4 lanes 1.03:
         * D = 64's 128 x 16 needs 128 registers, two workgroups a unit, 128 x 32 more), so 32-key
         * blocks from D = 128 on; at D = 256 128 x 32 does not fit (128 x 16: 2.47 ms). */
        .cm_attn_subgroups = 8, .cm_attn_key_frags = 2, .cm_attn_wide_d = 128, .cm_attn_row_lanes = 2,
        /* the next K/V block in flight during this one's work up to D = 128 (at D = 128 and 128 x
         * 16, 32 bytes of fp16 per invocation; D = 256's accumulators need the registers): on an H100
         * attention took 3.9 ms with it at 128 x 16 and 4.3 without, 6.4 and 7.2 at 64 x 32 */
        .cm_attn_prefetch = 128,
        /* two staged K/V blocks (one barrier per block instead of two) where they fit, before
         * longer blocks (src/plan/attention.c): at 128 x 32 and D = 128 since the softmax in
         * registers keeps no scores in shared memory (46 KiB), at D = 256 128 x 16 (41 KiB; 128 x 32
         * would need 78). On an H100 (2026-11-27, the fifth GPU day, three alternated rounds,
         * fastest repeats; ms, causal) D = 128 2.154 (1.156) against 2.259 (1.194) with one; D = 64
         * 0.710 (0.394) against 0.719 (0.403); D = 256 128 x 16 2.122 (1.120) against 2.245 (1.165)
         * with one and 2.256 (1.192) at 128 x 32 with one */
        .cm_attn_stages = 2,
        /* the softmax on the scores' matrix elements where the accumulator layout allows (no
         * scores or factors through shared memory, where the third GPU day's breakdown had the
         * softmax at 0.82 ms of 2.90 and O's rescale at 0.32). NVIDIA's Vulkan driver (580.159.04,
         * H100, 16 x 16 x 16) puts a row in 4 lanes, 4 elements each, two rows a lane
         * (element e's row class (e / 4) % 2). With cm_attn_wide_loads=0 (below), 2026-11-27:
         * 2.20 ms against 2.57 through shared memory at D = 128, 0.689 against 0.852 at D = 64 */
        .cm_attn_reg_softmax = 1,
        /* P into P·V's A matrices from the score matrices' elements, not through shared memory (as
         * FlashAttention-2 keeps P in registers: PTX's mma.m16n8k16 accumulator and A fragment hold
         * the same places per lane), where the device's layouts allow: no P store, subgroup
         * barrier and A loads per block, and no P rows in shared memory (so 64-key blocks fit 48
         * KiB at D = 128 with one staged block). Not yet measured on a GPU (2026-11-27) */
        .cm_attn_reg_p = 1,
        /* attn_cm's Q, K and V in 8-byte loads of 4 fp16 values: on an H100 (2026-11-27, L = S =
         * 4096, D = 128, alternated twice, fastest repeats) attention took 2.20 ms so (causal
         * 1.18) against 2.62-2.68 (1.38-1.40) with 16-byte loads of 8 (their two stores interleaved
         * against bank conflicts: 2.82 on the fifth day, so not interleaved); the softmax in registers
         * gained only with the narrow loads (the shared-memory softmax: 2.57 and 2.54). At D = 64
         * (B = 4, H = 16, L = 2048) 0.689 against 0.739 (the shared-memory softmax 0.852), at
         * D = 256 2.53 against 2.59 */
        .cm_attn_wide_loads = 0,
        /* the scalar fused attention (fp32 layers, a failed self-test) keeps attn_fused's texel
         * fetches: attn_fused_shared is for GPUs without matrix cores (gpu, intel), measured first
         * there (tools/gpu-bench.sh); here each test's fp32 comparison would compile it on Mesa 26
         * lavapipe too, 1-2 s of LLVM a build */
        .fused_shared = 0,
    },
    {
        .name = "intel",
        .why = "GPUs whose matrix engines take narrow matrices (8 rows) in small subgroups (8 or 16 lanes; Intel "
               "Arc and Xe2): more accumulators per subgroup for the same tile of C, the device's smallest "
               "subgroup, the other kernels as gpu (untuned: no GPU was available)",
        GPU_KERNELS, .vec_tile_n = 4, .fused_shared = 1, /* the other kernels as gpu */
        /* 4 x 4 accumulators of 8 x 8 x 16 (Arc A770): 64 x 64 outputs per workgroup, blocks of 32
         * (untuned); ggml also takes the smallest subgroup for Intel's matmuls */
        .cm_frags_m = 4, .cm_frags_n = 4, .cm_frags_narrow = 4, .cm_ksteps = 2, .cm_min_rows = 9, .cm_subgroup = 0,
        .cm_subgroups_n = 2, .cm_stages = 1, .cm_prefetch = 1, .cm_wide_loads = 1, .cm_group_rows = 8, .cm_direct = 1,
        /* attention keeps attn_fused: attn_cm has run with 8 x 8 x 8 and 16 x 16 x 16 shapes in
         * 32-lane subgroups only (lavapipe, an H200), not with Intel's 8 x 8 x 16 */
    },
    {
        .name = "mobile",
        .why = "mobile GPUs (Mali's 16-lane or Adreno's 64/128-lane subgroups, 32 KiB of shared memory): few "
               "registers per lane, so one query and 8 keys per fused invocation, the projections on matmul_sm "
               "with 32 x 32 tiles in workgroups of 64 (untuned: no GPU was available)",
        .matmul_tile_m = 4, .matmul_tile_n = 4, .matmul_wg = 64,
        .matmul_skinny_tile_n = 4, .matmul_skinny_wg = 64,
        .scores_tile_q = 4, .scores_tile_k = 4, .scores_wg = 64,
        .pv_tile_q = 2, .pv_tile_d = 2, .pv_wg = 64,
        .fused_tile_k = 8, .fused_q_dims = 64, .fused_max_tile_q = 2, .fused_wg = 64,
        /* attn_fused's texel fetches, not its shared-memory build: Mali's shared memory is the
         * cache its loads go through (untuned) */
        .fused_shared = 0,
        /* a handful of cores: parts of 64 keys or more, two workgroups of 64 per core */
        .paged_wg = 64, .paged_target = 4096, .paged_per_unit = 128, .paged_min_part = 64,
        .merge_lanes = 16, .softmax_wg = 128,
        /* 32 x 32 outputs per workgroup of 64 (4.5 KiB of shared memory, blocks of 16) */
        .sm_tile_m = 32, .sm_tile_n = 32, .sm_tile_k = 16, .sm_group_rows = 8,
        /* decoding's matrix-vector products: 4 columns per workgroup of 64, 16-byte loads */
        .vec_tile_n = 4, .vec_wg = 64, .vec_storage = 1,
    },
};

enum { LAVAPIPE, GPU, COOPMAT, INTEL, MOBILE, TUNINGS };
_Static_assert(sizeof tunings / sizeof tunings[0] == TUNINGS, "one enum value per row of the table");

vkattn_matrix_shape vka_matrix_shape_for(const vkattn_device_info *device)
{
    vkattn_matrix_shape best = {0};
    for (uint32_t i = 0; i < device->cooperative_matrix_shape_count && i < VKATTN_MAX_MATRIX_SHAPES; i++) {
        vkattn_matrix_shape s = device->cooperative_matrix_shapes[i];
        if ((uint64_t)s.m * s.n * s.k > (uint64_t)best.m * best.n * best.k) best = s;
    }
    return best;
}

uint32_t vka_matrix_subgroup_for(const vka_tuning *t, const vkattn_device_info *device)
{
    uint32_t want = (t->cm_frags_m ? t : &tunings[COOPMAT])->cm_subgroup;
    uint32_t lo = device->subgroup_size_min ? device->subgroup_size_min : device->subgroup_size;
    uint32_t hi = device->subgroup_size_max ? device->subgroup_size_max : device->subgroup_size;
    if (want == 0) return lo;
    return want >= lo && want <= hi ? want : device->subgroup_size;
}

/* The class of a device, from its properties; vendor ids are no part of it (they only gate known
 * driver bugs). In order:
 *  - a CPU implementation (lavapipe, SwiftShader): "lavapipe";
 *  - cooperative matrices usable, of at least 16 x 16, in subgroups that may be 32 wide: "coopmat"
 *    (NVIDIA, AMD RDNA3);
 *  - cooperative matrices usable otherwise (narrower matrices, or subgroups that cannot be 32):
 *    "intel" (Arc's 8 x 8 x 16 in subgroups of 8 to 32, Xe2's 8 x 16 x 16);
 *  - an integrated GPU with at most 32 KiB of shared memory whose subgroups cannot be 32 wide:
 *    "mobile" (Mali's 16 lanes, Adreno's 64 or 128; Apple's GPUs through MoltenVK have 32-lane
 *    SIMD groups and desktop-sized register files, and take "gpu");
 *  - any other GPU: "gpu". */
static const vka_tuning *tuning_class(const vkattn_device_info *d)
{
    if (d->type == VKATTN_DEVICE_CPU || strstr(d->driver_name, "llvmpipe")) return &tunings[LAVAPIPE];
    uint32_t lo = d->subgroup_size_min ? d->subgroup_size_min : d->subgroup_size;
    uint32_t hi = d->subgroup_size_max ? d->subgroup_size_max : d->subgroup_size;
    int can_32 = lo <= 32 && 32 <= hi;
    if (d->cooperative_matrix_usable) {
        vkattn_matrix_shape s = vka_matrix_shape_for(d);
        return s.m >= 16 && s.n >= 16 && can_32 ? &tunings[COOPMAT] : &tunings[INTEL];
    }
    if (d->type == VKATTN_DEVICE_INTEGRATED_GPU && d->max_shared_memory_bytes <= 32768 && !can_32)
        return &tunings[MOBILE];
    return &tunings[GPU];
}

const vka_tuning *vka_tuning_for(const vkattn_device_info *device, const char *name)
{
    if (name) {
        for (size_t i = 0; i < TUNINGS; i++)
            if (strcmp(tunings[i].name, name) == 0) return &tunings[i];
        return NULL;
    }
    return tuning_class(device);
}

const char *vka_tuning_names(void) { return "lavapipe, gpu, coopmat, intel, mobile"; }

/* The fields a tuning string may change: the GPU classes' tiles, each checked again by its planner
 * (shared memory, workgroup size, whole matrices: a shape that does not fit takes the next kernel).
 * The ranges keep the unrolled kernels compilable; `unit`: the value is a multiple of 4 (MUL4) or
 * a power of two (POW2, or 0 where the range has it). A field may be set only where the class runs
 * its kernel (`family`, the class's field that is 0 where it does not): a lone field of a kernel a
 * class lacks would leave the kernel's other fields 0. */
enum { ANY, MUL4, POW2 };
static const struct tuning_field {
    const char *name;
    size_t offset;
    uint32_t min, max, unit;
    size_t family;
    const char *kernel;
} fields[] = {
#define FIELD(f, lo, hi, unit, family, kernel) {#f, offsetof(vka_tuning, f), lo, hi, unit, offsetof(vka_tuning, family), kernel}
    FIELD(cm_frags_m, 1, 8, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_frags_n, 1, 8, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_frags_narrow, 0, 8, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_ksteps, 1, 8, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_min_rows, 1, 65536, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_subgroup, 0, 128, POW2, cm_frags_m, "matmul_cm"),
    FIELD(cm_prefetch, 0, 1, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_subgroups_n, 1, 8, POW2, cm_frags_m, "matmul_cm"),
    FIELD(cm_stages, 1, 2, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_wide_loads, 0, 1, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_group_rows, 0, 64, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_direct, 0, 1, ANY, cm_frags_m, "matmul_cm"),
    FIELD(cm_attn_subgroups, 1, 8, ANY, cm_attn_subgroups, "attn_cm"),
    FIELD(cm_attn_key_frags, 1, 8, ANY, cm_attn_subgroups, "attn_cm"),
    FIELD(cm_attn_row_lanes, 1, 64, POW2, cm_attn_subgroups, "attn_cm"),
    FIELD(cm_attn_prefetch, 0, 1024, ANY, cm_attn_subgroups, "attn_cm"),
    FIELD(cm_attn_stages, 1, 2, ANY, cm_attn_subgroups, "attn_cm"),
    FIELD(cm_attn_wide_d, 0, 1024, ANY, cm_attn_subgroups, "attn_cm"),
    FIELD(cm_attn_reg_softmax, 0, 1, ANY, cm_attn_subgroups, "attn_cm"),
    FIELD(cm_attn_reg_p, 0, 1, ANY, cm_attn_subgroups, "attn_cm"),
    FIELD(cm_attn_wide_loads, 0, 1, ANY, cm_attn_subgroups, "attn_cm"),
    FIELD(cm_attn_row_frags, 1, 2, ANY, cm_attn_subgroups, "attn_cm"),
    FIELD(sm_tile_m, 4, 128, MUL4, sm_tile_m, "matmul_sm"),
    FIELD(sm_tile_n, 4, 128, MUL4, sm_tile_m, "matmul_sm"),
    FIELD(sm_tile_k, 4, 64, MUL4, sm_tile_m, "matmul_sm"),
    FIELD(sm_group_rows, 0, 64, ANY, sm_tile_m, "matmul_sm"),
    FIELD(paged_lanes_group, 1, 4, POW2, paged_lanes, "attn_paged_lanes"),
    FIELD(paged_lanes_per_unit, 1, 4096, ANY, paged_lanes, "attn_paged_lanes"),
    FIELD(paged_lanes_prefetch, 0, 1, ANY, paged_lanes, "attn_paged_lanes"),
    FIELD(paged_lanes_storage, 0, 1, ANY, paged_lanes, "attn_paged_lanes"),
    FIELD(paged_lanes_q_shared, 0, 1, ANY, paged_lanes, "attn_paged_lanes"),
    FIELD(paged_per_unit, 1, 4096, ANY, paged_wg, "attn_paged"),
    FIELD(paged_min_part, 1, 65536, ANY, paged_wg, "attn_paged"),
    FIELD(fused_shared, 0, 1, ANY, fused_wg, "attn_fused"),
    FIELD(merge_lanes, 1, 64, POW2, fused_wg, "attn_merge"),
    FIELD(vec_tile_n, 1, 8, ANY, vec_wg, "matmul_vec"),
    FIELD(vec_wg, 32, 1024, POW2, vec_wg, "matmul_vec"),
    FIELD(vec_storage, 0, 1, ANY, vec_wg, "matmul_vec"),
#undef FIELD
};

_Static_assert(sizeof fields / sizeof fields[0] <= 64, "vka_tuning_parse keeps a bit per field");
enum { FIELDS = sizeof fields / sizeof fields[0] };

/* What an unknown field `key` might have meant, into `text`: the fields whose names start with its
 * first word ("the cm_ fields: cm_frags_m, ..."), else the families (all of them would not fit an
 * error message). */
static void field_names(char *text, size_t size, const char *key, size_t key_len)
{
    const char *cut = memchr(key, '_', key_len);
    const size_t word = cut ? (size_t)(cut - key) + 1 : 0;
    int n = snprintf(text, size, "the %.*s fields: ", (int)word, key);
    size_t used = n > 0 ? (size_t)n : 0, listed = 0;
    for (size_t i = 0; word && i < FIELDS && used < size; i++) {
        if (strncmp(fields[i].name, key, word) != 0) continue;
        n = snprintf(text + used, size - used, "%s%s", listed++ ? ", " : "", fields[i].name);
        used += n > 0 ? (size_t)n : 0;
    }
    if (!listed)
        snprintf(text, size, "cm_*, sm_*, paged_*, merge_lanes, vec_*: vkattn.h lists them at vkattn_context_desc.tuning");
}

/* The uint32_t field of `t` at byte `offset` (a row of the table names its own and its family's). */
static uint32_t field_value(const vka_tuning *t, size_t offset)
{
    uint32_t v;
    memcpy(&v, (const char *)t + offset, sizeof v);
    return v;
}

int vka_tuning_parse(const vkattn_device_info *device, const char *text, vka_tuning *out, int *named, char *why,
                     size_t size)
{
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    char name[32];
    if (name_len >= sizeof name) {
        snprintf(why, size, "no tuning has a name that long (try %s)", vka_tuning_names());
        return 1;
    }
    memcpy(name, text, name_len);
    name[name_len] = 0;
    const vka_tuning *base = vka_tuning_for(device, name_len ? name : NULL);
    if (!base) {
        snprintf(why, size, "no tuning is named \"%s\" (try %s%s)", name, vka_tuning_names(),
                 strchr(name, '=') ? "; fields of the device's class alone: \":FIELD=VALUE\"" : "");
        return 1;
    }
    *out = *base;
    *named = name_len > 0;
    uint64_t changed = 0; /* bit i: fields[i] given */
    for (const char *at = colon ? colon + 1 : NULL; at;) {
        const char *end = strchr(at, ','), *eq = strchr(at, '=');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        size_t key_len = eq && eq < at + len ? (size_t)(eq - at) : len;
        size_t i = 0;
        while (i < FIELDS &&
               (strlen(fields[i].name) != key_len || strncmp(fields[i].name, at, key_len) != 0))
            i++;
        if (i == FIELDS) {
            char names[400];
            field_names(names, sizeof names, at, key_len);
            snprintf(why, size, "\"%.*s\" is no field a tuning string may set (FIELD=VALUE; %s)",
                     (int)(key_len < 40 ? key_len : 40), at, names);
            return 1;
        }
        const struct tuning_field *f = &fields[i];
        /* the value: digits only, up to the next comma */
        char value[24] = "";
        size_t value_len = key_len < len ? len - key_len - 1 : 0;
        if (value_len < sizeof value) memcpy(value, at + key_len + 1, value_len), value[value_len] = 0;
        char *stop = NULL;
        errno = 0;
        unsigned long long v = value[0] >= '0' && value[0] <= '9' ? strtoull(value, &stop, 10) : 0;
        int fits = f->unit == MUL4 ? v % 4 == 0 : f->unit == POW2 ? (v & (v - 1)) == 0 : 1;
        if (key_len == len || value_len >= sizeof value || !stop || *stop || errno || v < f->min || v > f->max ||
            !fits) {
            snprintf(why, size, "%s takes a whole number from %u to %u%s, not \"%.*s\"", f->name, f->min, f->max,
                     f->unit == MUL4 ? " (a multiple of 4)" : f->unit == POW2 ? " (a power of two)" : "",
                     (int)(value_len < 24 ? value_len : 24), key_len < len ? at + key_len + 1 : "");
            return 1;
        }
        if (field_value(base, f->family) == 0) {
            snprintf(why, size, "%s is a field of %s, which tuning \"%s\" does not run", f->name, f->kernel,
                     base->name);
            return 1;
        }
        if (changed & (1ull << i)) {
            snprintf(why, size, "%s is given twice", f->name);
            return 1;
        }
        changed |= 1ull << i;
        const uint32_t set = (uint32_t)v;
        memcpy((char *)out + f->offset, &set, sizeof set);
        at = end ? end + 1 : NULL;
    }
    return 0;
}

size_t vka_tuning_changes(const vka_tuning *t, const vkattn_device_info *device, char *text, size_t size)
{
    const vka_tuning *base = vka_tuning_for(device, t->name);
    size_t used = 0, count = 0;
    if (size) text[0] = 0;
    for (size_t i = 0; base && i < FIELDS; i++) {
        uint32_t v = field_value(t, fields[i].offset), was = field_value(base, fields[i].offset);
        if (v == was) continue;
        count++;
        if (used < size) {
            int n = snprintf(text + used, size - used, "%s%s=%u", used ? "," : "", fields[i].name, v);
            used += n > 0 ? (size_t)n : 0;
        }
    }
    return count;
}

int vka_tuning_refusal(const vka_tuning *t, const vkattn_device_info *device, char *why, size_t size)
{
    const struct {
        const char *kernel;
        uint32_t wg;
    } groups[] = {{"matmul", t->matmul_wg}, {"matmul (decoding)", t->matmul_skinny_wg}, {"attn_scores", t->scores_wg},
                  {"attn_pv", t->pv_wg}, {"attn_fused", t->fused_wg}, {"attn_paged", t->paged_wg},
                  {"softmax", t->softmax_wg}, {"matmul_vec", t->vec_wg}, {"attn_paged_lanes", t->paged_lanes}};
    /* (matmul_sm's workgroup, sm_tile_m x sm_tile_n / 16, is its planner's check: a tile larger
     * than the device allows takes matmul.comp, as a tuning string's may) */
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        if (!device->max_workgroup_invocations || groups[i].wg <= device->max_workgroup_invocations) continue;
        snprintf(why, size, "its %s workgroups of %u invocations exceed the device's %u", groups[i].kernel,
                 groups[i].wg, device->max_workgroup_invocations);
        return 1;
    }
    return 0;
}

uint32_t vka_device_loop_budget(const vkattn_device_info *device)
{
    /* LP_MAX_TGSI_LOOP_ITERATIONS in Mesa's gallivm, "shared between every loop". */
    if (strstr(device->driver_name, "llvmpipe") || strstr(device->name, "llvmpipe")) return 65535;
    return 0;
}

uint32_t vka_tuning_fused_tile_q(const vka_tuning *p, uint32_t D)
{
    uint32_t q = p->fused_q_dims / (D ? D : 1);
    if (q < 1) q = 1;
    if (q > p->fused_max_tile_q) q = p->fused_max_tile_q;
    return q;
}
