/*
 * abi.h — the contract between the C host code and the GLSL kernels, written once.
 *
 * Included by both languages: GLSL compiles it with VKA_GLSL defined (and gets uint32_t from
 * GL_EXT_shader_explicit_arithmetic_types_int32); C compiles it as a normal header. Every push
 * constant struct holds only 4-byte scalars, so the C layout and GLSL's std430 layout agree; the C
 * side checks sizes with _Static_assert (src/pipeline/kernels.c).
 *
 * Conventions shared by every kernel:
 *  - all offsets and strides are in elements, not bytes (buffers are bound whole);
 *  - a dispatch is a 1-d list of workgroups folded into a 3-d grid to fit the device's
 *    maxComputeWorkGroupCount; kernels unfold it with vka_group_index() and return early for the
 *    padding: invocations past their own work (matmul, scores, P·V, fused), or whole workgroups
 *    at indices >= group_count where a workgroup shares barriers (softmax, average_heads).
 */
#ifndef VKA_ABI_H
#define VKA_ABI_H

#ifdef VKA_GLSL
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#define VKA_STRUCT(name) struct name
#define VKA_STRUCT_END(name) ;
#else
#include <stdint.h>
#define VKA_STRUCT(name) typedef struct name
#define VKA_STRUCT_END(name) name;
#endif

/* Specialization constant ids. */
#define VKA_SPEC_WG_SIZE 0 /* invocations per workgroup (local_size_x) */
#define VKA_SPEC_TILE_A 1  /* kernel-specific register tile, see each .comp */
#define VKA_SPEC_TILE_B 2
#define VKA_SPEC_VEC 3     /* floats per texel fetch: 4 (RGBA views) or 1 (R views) */
#define VKA_SPEC_DV 4      /* texels per head row: D / VEC */
#define VKA_SPEC_ATTN_MASK 5 /* 1: compile the per-score attn_mask code in (it is slow to compile) */

/* Mask flags of vka_scores_push.mask_flags (the fused kernel takes the same word). */
#define VKA_MASK_CAUSAL 1u
#define VKA_MASK_KEY_PADDING 2u
#define VKA_MASK_VALID_LENS_PER_BATCH 4u
#define VKA_MASK_VALID_LENS_PER_QUERY 8u
#define VKA_MASK_ATTN_BOOL 16u
#define VKA_MASK_ATTN_FLOAT 32u
#define VKA_MASK_ATTN_PER_HEAD 64u

/* Units: kernels read activations and weights through texel views (the view format carries the
 * storage dtype), so read offsets and strides are in texels of VEC floats; written buffers and
 * everything else are in elements. */

/* matmul.comp: C(M,N) = A(M,K) · B(N,K)^T + bias(N). A row m at a_offset + m * lda (texels),
 * B row n at b_offset + n * ldb (texels); C row m at c_offset + c_row(m) * ldc (elements) with
 * c_row(m) = (m / rows_per_batch) * batch_stride + m % rows_per_batch. */
VKA_STRUCT(vka_matmul_push) {
    uint32_t M, N, K;            /* K in texels */
    uint32_t a_offset, lda;
    uint32_t b_offset, ldb;
    uint32_t bias_offset;
    uint32_t c_offset, ldc;
    uint32_t rows_per_batch, batch_stride;
    uint32_t has_bias;
    uint32_t tiles_n;
} VKA_STRUCT_END(vka_matmul_push)

/* The chunk of score rows a scores/softmax/P·V/average dispatch covers: heads bh in
 * [bh_begin, bh_begin + bh_count) (bh = b*H + h), queries i in [i_begin, i_begin + i_count).
 * Score row r = (bh - bh_begin) * i_count + (i - i_begin) lives at r * S_ext in the P buffer.
 *
 * Q, K and V rows (texel offsets): Q row (b,i) at q_offset + (b*q_rows + i) * q_stride + h*DV;
 * K row (b,j) at k_offset + (b*kv_rows + j) * k_stride + h*DV for every j < S_ext (the extra
 * keys were copied after each batch item's S real ones); V likewise. */

/* attn_scores.comp: P[r, j] = scale * q_i · k_j + mask (masked = -inf; extra keys never masked). */
VKA_STRUCT(vka_scores_push) {
    uint32_t L, S, S_ext, H;
    uint32_t q_offset, q_stride, q_rows;
    uint32_t k_offset, k_stride, kv_rows;
    uint32_t bh_begin, bh_count, i_begin, i_count;
    float scale;
    uint32_t mask_flags;
    uint32_t mask_heads;         /* heads in a per-head attn_mask (its dim 0 is B * mask_heads) */
    uint32_t tiles_j, tiles_i;
} VKA_STRUCT_END(vka_scores_push)

/* attn_pv.comp: ctx[(b*L + i) * ctx_stride + h*D + d] = sum_j P[r, j] v_j[d] (ctx in elements;
 * D = DV * VEC, from the specialization constants). */
VKA_STRUCT(vka_pv_push) {
    uint32_t L, S_ext, H;
    uint32_t v_offset, v_stride, kv_rows;
    uint32_t ctx_stride;
    uint32_t bh_begin, bh_count, i_begin, i_count;
    uint32_t tiles_d, tiles_i;
} VKA_STRUCT_END(vka_pv_push)

/* attn_fused.comp: flash attention. One invocation owns TILE_A queries of one (b, h) and streams
 * the keys in blocks of TILE_B with an online softmax; nothing of size L x S is stored.
 * ctx row (b,i) at (b*L + i) * ctx_stride + h*D (elements, D = DV * VEC); lse[(b*H + h) * L + i]
 * is the row's log-sum-exp (natural log, of the scaled and masked scores) when has_lse. */
VKA_STRUCT(vka_fused_push) {
    uint32_t L, S, H, BH;
    uint32_t q_offset, q_stride, q_rows;
    uint32_t k_offset, k_stride;
    uint32_t v_offset, v_stride, kv_rows;
    uint32_t extra_keys;
    uint32_t ctx_stride;
    float scale;
    uint32_t mask_flags, mask_heads;
    uint32_t has_lse;
} VKA_STRUCT_END(vka_fused_push)

/* softmax.comp: each of `rows` rows of S_ext scores becomes probabilities, in place. */
VKA_STRUCT(vka_softmax_push) {
    uint32_t rows, S_ext;
    uint32_t group_count;
} VKA_STRUCT_END(vka_softmax_push)

/* average_heads.comp: W[(b*L + i) * S_ext + j] += inv_heads * sum of P rows of batch b's heads in
 * the chunk. */
VKA_STRUCT(vka_average_push) {
    uint32_t H, L, S_ext;
    uint32_t bh_begin, bh_count, i_begin, i_count;
    uint32_t b_begin, b_count;   /* batches the chunk touches */
    float inv_heads;
    uint32_t group_count;
} VKA_STRUCT_END(vka_average_push)

/* peak_fma.comp and peak_copy.comp: the microkernels behind vkattn_measure_peak. */
VKA_STRUCT(vka_peak_push) {
    uint32_t iterations; /* FMA loop trips */
    uint32_t count;      /* vec4 elements to copy */
    float multiplier, addend;
} VKA_STRUCT_END(vka_peak_push)

#ifdef VKA_GLSL
/* The linear workgroup index of a folded 3-d grid. */
uint vka_group_index()
{
    return gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
}

/* Byte `index` of a buffer of bytes read as uint words (bool masks): no 8-bit storage needed. */
#define VKA_LOAD_BYTE(words, index) (((words)[(index) >> 2] >> (((index) & 3u) * 8u)) & 0xFFu)
#endif

#endif
