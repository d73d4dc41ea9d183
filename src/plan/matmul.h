/* The projections (matmul.c), and RoPE on their output. */
#ifndef VKA_PLAN_MATMUL_H
#define VKA_PLAN_MATMUL_H

#include "plan/build.h"

/* The Q/K/V projections into the head-major workspaces (and the extra keys after
 * each head's real ones), and the output projection. */
vkattn_status vka_plan_input_projections(vka_builder *b, vka_qkv_layout *out);
vkattn_status vka_plan_output_projection(vka_builder *b);
/* Rotary position embedding in place on the projected Q and K (nothing when the layer has none). */
vkattn_status vka_plan_rope(vka_builder *b, const vka_qkv_layout *l);
/* The shared memory matmul_cm.comp takes for a tile of C (tile_m x tile_n, blocks of tile_k) with
 * matrices of shape `ms` in 2 x subgroups_n subgroups, `stages` blocks staged: what the plan checks
 * against the device's. */
uint64_t vka_matmul_cm_shared_bytes(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k, vkattn_matrix_shape ms,
                                    uint32_t subgroups_n, uint32_t stages);

/* matmul_cm.comp's tile for a matmul of M rows, or all zeros where matmul.comp runs it: under a
 * tuning with cm_* fields, with limits that give a matrix shape (the context may run matmul_cm), for
 * at least cm_min_rows rows. The tile is the tuning's accumulators times the matrix shape (2 x
 * cm_subgroups_n subgroups of limits->subgroup_size), a block whole matrix steps (and whole texels of 4); it fits
 * the device's shared memory (in cm_stages staged blocks, else one) and workgroup size, else half
 * the subgroups across try again, down to 2. Where the device says how many compute units it has
 * and N (C's columns) is given, a tile that leaves fewer than two workgroups per unit (a short
 * prompt: Llama-3-8B's 512 rows made 96 workgroups for an H100's 132 SMs) narrows the same way
 * while it can. The context's self-test uses it too (N 0: the widest tile), so that it runs the
 * pipeline the plans of long prompts will. */
typedef struct vka_matmul_cm_tile {
    uint32_t tile_m, tile_n, tile_k, wg; /* wg 0: no cooperative-matrix tile */
    uint32_t subgroups_n;                /* matmul_cm: subgroups across the tile (2 rows of them) */
    uint32_t stages;                     /* matmul_cm: blocks staged in shared memory (1 or 2) */
} vka_matmul_cm_tile;
vka_matmul_cm_tile vka_matmul_cm_tile_for(const vka_tuning *t, const vka_plan_limits *limits, uint32_t M, uint32_t N);
/* matmul_cm's pipelining flags for a tile under a tuning (VKA_MATMUL_PREFETCH, TWO_STAGES): what
 * the plan's steps and the context's self-test both build. */
uint32_t vka_matmul_cm_flags(const vka_tuning *t, const vka_matmul_cm_tile *tile);

/* matmul_sm's tile (matmul.comp's SHARED_TILES build) for a matmul of M rows, in the same struct
 * (wg 0: none): under a tuning with sm_* fields, for at least sm_tile_m rows, where the staged
 * tiles fit the device's shared memory and the workgroup its size. */
vka_matmul_cm_tile vka_matmul_sm_tile_for(const vka_tuning *t, const vka_plan_limits *limits, uint32_t M);
/* The shared memory matmul_sm takes: fp32 k-major tiles of A and B, each row padded by 4. */
uint64_t vka_matmul_sm_shared_bytes(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k);

/* matmul_vec's tile (matmul.comp's MATVEC build) for a matmul of M rows, in the same struct (wg 0:
 * none; tile_k unused): under a tuning with vec_* fields, where the limits allow subgroup sums,
 * for at most 8 rows (tile_m: M rounded up to a power of two) and vec_tile_n columns, a workgroup
 * of vec_wg within the device's size. */
vka_matmul_cm_tile vka_matmul_vec_tile_for(const vka_tuning *t, const vka_plan_limits *limits, uint32_t M);

#endif
