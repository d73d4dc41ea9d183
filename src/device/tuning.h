/* Kernel tuning: the one place that knows which kernel shapes suit which kind of device.
 * Operator code asks for the context's tuning and never tests vendors or drivers itself. */
#ifndef VKA_TUNING_H
#define VKA_TUNING_H

#include <stddef.h>
#include <stdint.h>

#include "vkattn.h"

typedef struct vka_tuning {
    const char *name;
    const char *why;             /* one line for `vkattn info` and the docs */
    /* matmul.comp register tile (rows x columns per invocation) and workgroup size */
    uint32_t matmul_tile_m, matmul_tile_n, matmul_wg;
    /* matmuls of fewer rows than matmul_tile_m (decoding): columns per invocation, workgroup size */
    uint32_t matmul_skinny_tile_n, matmul_skinny_wg;
    /* attn_scores.comp: queries x keys per invocation */
    uint32_t scores_tile_q, scores_tile_k, scores_wg;
    /* attn_pv.comp: queries x texels of the head dim per invocation */
    uint32_t pv_tile_q, pv_tile_d, pv_wg;
    /* attn_fused.comp: keys per block; queries per invocation = clamp(fused_q_dims / D, 1, max) */
    uint32_t fused_tile_k, fused_q_dims, fused_max_tile_q, fused_wg;
    /* 1: attn_fused_shared (attn_fused.comp's SHARED_KV build) where its K/V block fits the
     * device's shared memory: a workgroup of fused_wg invocations shares consecutive query tiles
     * of one head and stages each block's K and V rows in shared memory; 0: every invocation
     * fetches every K and V texel itself (lavapipe's choice: its texel fetches are its fast loads) */
    uint32_t fused_shared;
    /* attn_paged.comp: its workgroup size; split-KV gives each sequence's keys more parts until
     * the dispatch has about paged_target invocations (paged_per_unit per compute unit where the
     * device reports its units), parts of at least paged_min_part keys */
    uint32_t paged_wg, paged_target, paged_per_unit, paged_min_part;
    /* attn_paged's LANES build, the GPU-shaped one (0 = this tuning keeps the scalar build): a
     * workgroup of paged_lanes invocations per (part, sequence, K/V head, row tile), paged_lanes_group
     * of them per key (fewer where they do not divide the head's texels), parts enough for about
     * paged_lanes_per_unit workgroups per compute unit (paged_target / paged_lanes in all where the
     * device does not say). Taken where the limits allow subgroup sums and shuffles.
     * paged_lanes_prefetch (1): the next block's K and V rows fetched during this one's work (a
     * block format's as words, dequantized at use). paged_lanes_storage 1: the cache's K and V rows
     * read from storage buffers (attn_paged_lanes_storage, attn_paged_quant_lanes_storage), 0:
     * through texel fetches.
     * paged_lanes_q_shared 1: the row tile's queries staged in shared memory once (where they fit),
     * 0: each block fetches its query texels again. */
    uint32_t paged_lanes, paged_lanes_group, paged_lanes_per_unit, paged_lanes_prefetch, paged_lanes_storage,
        paged_lanes_q_shared;
    /* attn_merge.comp (in workgroups of fused_wg): invocations per texel of a row, each combining
     * every merge_lanes-th key part (0 or 1: one invocation walks all of them) */
    uint32_t merge_lanes;
    /* softmax.comp workgroup size (a power of two) */
    uint32_t softmax_wg;
    /* matmul_cm.comp, the cooperative-matrix GEMM (0 = this tuning does not use it), in units of
     * the device's matrix shape MAT_M x MAT_N x MAT_K: each of a workgroup's 2 x cm_subgroups_n
     * subgroups holds cm_frags_m x cm_frags_n accumulators, and a block of the reduction is
     * cm_ksteps matrix steps. So the workgroup's tile of C is (2 cm_frags_m MAT_M) x
     * (cm_subgroups_n cm_frags_n MAT_N), with 2 x 2 subgroups 128 x 128 with
     * 4 x 4 accumulators of 16 x 16 x 16; with matrices of fewer than 16 rows each subgroup holds
     * cm_frags_narrow x cm_frags_narrow (0: as the others). Matmuls of fewer than cm_min_rows rows
     * (decoding steps) take matmul_vec or matmul.comp's skinny tiles instead. cm_prefetch 1: the
     * next block's texels are fetched into registers while this block multiplies (software
     * pipelining), 0: each block is fetched as it is staged (kept to compare the two on a GPU). */
    uint32_t cm_frags_m, cm_frags_n, cm_frags_narrow, cm_ksteps, cm_min_rows, cm_prefetch;
    /* matmul_cm's subgroups across the tile of C (1, 2, 4 or 8): 2 x cm_subgroups_n subgroups
     * per workgroup, so the tile is (2 cm_frags_m MAT_M) x (cm_subgroups_n cm_frags_n MAT_N); 4 with
     * cm_frags_n = 2 is the same 128 x 128 tile in 8 subgroups of half the accumulators each */
    uint32_t cm_subgroups_n;
    /* matmul_cm's staged blocks in shared memory (1 or 2): with 2 the next block is staged into
     * the other while this one multiplies, one workgroup barrier per block instead of two (its
     * loads are fetched a block ahead whatever cm_prefetch says) */
    uint32_t cm_stages;
    /* matmul_cm's loads where A and B both hold fp16 and their rows start on multiples of 8
     * elements: 1, 8 values in one 16-byte load; 0, 4 in an 8-byte load (attn_cm's own:
     * cm_attn_wide_loads) */
    uint32_t cm_wide_loads;
    /* matmul_sm (matmul.comp's SHARED_TILES build), the shared-memory tiled scalar GEMM (0 = this
     * tuning does not use it): a workgroup owns a sm_tile_m x sm_tile_n tile of C, each
     * invocation 4 x 4 outputs of it (so sm_tile_m * sm_tile_n / 16 invocations), staging A's
     * and B's rows in fp32 per block of sm_tile_k reduction elements (a multiple of 4). Matmuls of
     * fewer than sm_tile_m rows take matmul.comp's tiles instead (at most 8: matmul_vec, where the
     * tuning and device have it). */
    uint32_t sm_tile_m, sm_tile_n, sm_tile_k;
    /* matmul_sm's and matmul_cm's tiles of C visited in groups of this many rows of tiles (down a
     * group's rows, then its next column: the workgroups that run at once share a few rows of A
     * and columns of W in the cache instead of each wave sweeping all of W); 0 or 1: row by row */
    uint32_t sm_group_rows, cm_group_rows;
    /* 1: matmul_cm stores each accumulator whole into C (the driver's own store, the bias added on
     * its elements) where every tile is whole and C's layout allows (VKA_MATMUL_DIRECT:
     * src/plan/matmul.c), instead of through shared memory and one computed address per element;
     * 0: always through shared memory */
    uint32_t cm_direct;
    /* matmul_vec (matmul.comp's MATVEC build), the matrix-vector product of decoding steps (0 =
     * this tuning does not use it): matmuls of at most 8 rows, a workgroup of vec_wg invocations
     * per vec_tile_n columns (and all the rows, rounded up to a power of two) striding the
     * reduction together, summed by subgroup arithmetic. vec_storage 1: where the reduction and
     * the rows start on whole 8-element texels, the MATVEC_STORAGE build (matmul_vec_storage),
     * which reads A and W from storage buffers 16 bytes at a time, instead of texel fetches. */
    uint32_t vec_tile_n, vec_wg, vec_storage;
    /* The subgroup size the cooperative-matrix kernels require: this one where the device can
     * give it (subgroup_size_min..max), 0 = the device's smallest (Intel's matrix engines work on
     * 8 or 16 lanes). Read from the "coopmat" row by tunings without cm_* fields. */
    uint32_t cm_subgroup;
    /* attn_cm.comp, the cooperative-matrix fused attention (0 = this tuning does not use it): a
     * workgroup of cm_attn_subgroups subgroups owns cm_attn_subgroups x MAT_M query rows (a
     * subgroup MAT_M of them) and visits its keys in blocks of cm_attn_key_frags x MAT_N (at most
     * 64); cm_attn_row_lanes invocations share each row's softmax (a power of two; more where the
     * subgroup has more lanes than the matrices rows, fewer where it does not divide the subgroup
     * or the block). Heads of at most cm_attn_prefetch dims fetch the next block's K and V into
     * registers during this block's matrix work (software pipelining; 0: never; larger heads need
     * their registers for the accumulators). attn_cm needs subgroup shuffles: without them
     * attn_fused runs. */
    uint32_t cm_attn_subgroups, cm_attn_key_frags, cm_attn_row_lanes, cm_attn_prefetch;
    /* Head dims of at least cm_attn_wide_d take blocks of cm_attn_key_frags matrices, smaller ones
     * of one (0: every head dim): a smaller head's tile of one matrix may need few enough
     * registers for two workgroups to share a compute unit */
    uint32_t cm_attn_wide_d;
    /* attn_cm's K/V blocks staged in shared memory at once (1 or 2; 0 = 1): with 2 the next block
     * is staged into the other during this one's work, one workgroup barrier per block instead of
     * two, where the tile fits (else one) */
    uint32_t cm_attn_stages;
    /* 1: attn_cm's softmax works on the score matrices' own elements in registers where the
     * device's accumulator layout allows (device/matrix_rows.h: read once per context), instead of
     * storing the scores to shared memory and reading them back per row (0, and on any other
     * layout); the rows' rescale factors reach O the same way */
    uint32_t cm_attn_reg_softmax;
    /* 1: with that softmax, P goes into P·V's A matrices from the score matrices' own elements,
     * where the device puts an A matrix's elements at places its accumulator's hold in the same
     * invocation (device/matrix_rows.h: a KHR accumulator cannot become an A operand, but its
     * elements can be copied so); 0, and on any other layout: stored to shared memory and loaded
     * back as A matrices */
    uint32_t cm_attn_reg_p;
    /* attn_cm's Q, K and V loads where all three hold fp16 and their rows start on multiples of 8
     * elements: 1, 8 values in one 16-byte load; 0, 4 in an 8-byte load */
    uint32_t cm_attn_wide_loads;
    /* attn_cm's MAT_M-row matrices of query rows per subgroup (1 or 2; 0 = 1): with 2 a workgroup of
     * cm_attn_subgroups subgroups owns twice the rows, and each K and V matrix a subgroup loads
     * from shared memory feeds two multiply-adds (FlashAttention-2's warps own 32 or more rows);
     * it costs the subgroup twice the registers for Q and O. attn_cm2 keeps 1. */
    uint32_t cm_attn_row_frags;
} vka_tuning;

/* The tuning for a device: by explicit name ("lavapipe", "gpu", "coopmat", "intel", "mobile")
 * when `name` is non-NULL, else its class from the device's properties (vka_tuning_class).
 * NULL if `name` matches no tuning. Whether the device can run a named one: vka_tuning_refusal
 * and the context's cooperative-matrix check. */
const vka_tuning *vka_tuning_for(const vkattn_device_info *device, const char *name);

/* The names of every tuning, ", "-separated ("lavapipe, gpu, ..."), for messages. */
const char *vka_tuning_names(void);

/* A tuning from a tuning string: "NAME" or "NAME:FIELD=VALUE,FIELD=VALUE..." (NAME as in
 * vka_tuning_for, empty for the device's class; FIELD a field of vka_tuning that the table in
 * tuning.c lists, within its range), the GPU day's way to try kernel shapes without a rebuild. `*named`: a NAME was given.
 * 0, or 1 with the reason in `why` (*out then unspecified). */
int vka_tuning_parse(const vkattn_device_info *device, const char *text, vka_tuning *out, int *named, char *why,
                     size_t size);

/* The fields where `t` differs from the tuning of its name, as "FIELD=VALUE,..." into `text`
 * (truncated to `size`); their count. */
size_t vka_tuning_changes(const vka_tuning *t, const vkattn_device_info *device, char *text, size_t size);

/* Why `device` cannot run tuning `t`'s kernels (a workgroup larger than the device allows), as
 * one line into `why`; 0 when it can. Cooperative matrices are the context's check (they also
 * depend on the build and the switches). */
int vka_tuning_refusal(const vka_tuning *t, const vkattn_device_info *device, char *why, size_t size);

/* The cooperative-matrix shape vkattn's kernels use on a device: of the fp16 -> fp32 shapes it
 * lists, the one with the most products per step (M x N x K), the driver's first on a tie; all
 * 0 where it lists none. The driver's order says nothing about speed (NVIDIA lists 16x8 shapes
 * beside 16x16x16). */
vkattn_matrix_shape vka_matrix_shape_for(const vkattn_device_info *device);

/* The subgroup size the cooperative-matrix kernels require under tuning `t` on `device` (see
 * cm_subgroup): always within the device's subgroup_size_min..max. */
uint32_t vka_matrix_subgroup_for(const vka_tuning *t, const vkattn_device_info *device);

/* The loop trips one shader invocation may run on this device before the driver ends its loops
 * early, without an error (0 = no such limit known). lavapipe's compiler (gallivm) ends them
 * after 65535 trips in total per invocation, counted across all its loops. This is a fact of the
 * driver, not of a kernel tuning: a forced tuning does not change it. */
uint32_t vka_device_loop_budget(const vkattn_device_info *device);

/* Queries per fused invocation for head dim D under a tuning. */
uint32_t vka_tuning_fused_tile_q(const vka_tuning *p, uint32_t D);

#endif
