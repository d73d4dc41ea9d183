/* The kernel-tuning table. Each row says what it is tuned for and why; `vkattn info` prints the
 * tuning a device gets. Figures behind the lavapipe row: ../../docs/PERFORMANCE.md. */
#include "tuning.h"

#include <string.h>

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
        .why = "GPUs: many light threads hide latency; small per-thread tiles keep registers free "
               "(untuned: no GPU was available when these were chosen)",
        .matmul_tile_m = 4, .matmul_tile_n = 4, .matmul_wg = 64,
        .matmul_skinny_tile_n = 4, .matmul_skinny_wg = 64,
        .scores_tile_q = 4, .scores_tile_k = 4, .scores_wg = 64,
        .pv_tile_q = 4, .pv_tile_d = 2, .pv_wg = 64,
        .fused_tile_k = 16, .fused_q_dims = 128, .fused_max_tile_q = 4, .fused_wg = 64,
        /* untuned: two workgroups of 64 per unit */
        .paged_wg = 64, .paged_target = 16384, .paged_per_unit = 128, .paged_min_part = 128,
        .softmax_wg = 256,
    },
    {
        .name = "coopmat",
        .why = "matrix cores (VK_KHR_cooperative_matrix): the projections as shared-memory tiled GEMMs "
               "and the fused attention with fp16 operands and fp32 sums, the other kernels as gpu "
               "(untuned: no GPU was available)",
        .matmul_tile_m = 4, .matmul_tile_n = 4, .matmul_wg = 64,
        .matmul_skinny_tile_n = 4, .matmul_skinny_wg = 64,
        .scores_tile_q = 4, .scores_tile_k = 4, .scores_wg = 64,
        .pv_tile_q = 4, .pv_tile_d = 2, .pv_wg = 64,
        .fused_tile_k = 16, .fused_q_dims = 128, .fused_max_tile_q = 4, .fused_wg = 64,
        .paged_wg = 64, .paged_target = 16384, .paged_per_unit = 128, .paged_min_part = 128,
        .softmax_wg = 256,
        /* 2 x 2 accumulators per subgroup, 2 steps per block: with 16 x 16 x 16 matrices 64 x 64
         * outputs per workgroup and blocks of 32 (ggml's medium coopmat tile; larger is the next
         * step on a real GPU), 32 x 32 and blocks of 16 with lavapipe's 8 x 8 x 8 (which keeps its
         * LLVM compile short). Up to 8 rows (decoding) stay on the skinny matmul, as ggml keeps
         * them on matrix-vector kernels. */
        .cm_frags_m = 2, .cm_frags_n = 2, .cm_ksteps = 2, .cm_min_rows = 9,
        /* Attention: 4 subgroups of MAT_M query rows, keys in blocks of 2 MAT_N: 32 rows x 16 keys
         * with 8 x 8 x 8 (about 21 KiB of shared memory at D = 256, within lavapipe's 32 KiB),
         * 64 x 32 with 16 x 16 x 16 (47 KiB at D = 256; a device with less shared memory keeps
         * attn_fused there). A real GPU wants more keys per block (FA2: 64-128); untuned. */
        .cm_attn_subgroups = 4, .cm_attn_key_frags = 2,
    },
};

const vka_tuning *vka_tuning_for(const vkattn_device_info *device, const char *name)
{
    if (name) {
        for (size_t i = 0; i < sizeof tunings / sizeof tunings[0]; i++)
            if (strcmp(tunings[i].name, name) == 0) return &tunings[i];
        return NULL;
    }
    /* lavapipe, and any other CPU implementation (SwiftShader), behave alike. */
    if (device->type == VKATTN_DEVICE_CPU || strstr(device->driver_name, "llvmpipe")) return &tunings[0];
    return &tunings[1];
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
