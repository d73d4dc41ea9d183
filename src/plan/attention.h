/* Attention over projected Q, K and V (attention.c): the fused path and the unfused one. */
#ifndef VKA_PLAN_ATTENTION_H
#define VKA_PLAN_ATTENTION_H

#include "plan/build.h"

/* The fused path (key parts, chunks, merge) and the unfused one (score chunks,
 * softmax, averaged weights, P·V key ranges). */
vkattn_status vka_plan_fused(vka_builder *b, const vka_qkv_layout *l);
vkattn_status vka_plan_unfused(vka_builder *b, const vka_qkv_layout *l);
/* The most keys one attn_fused or attn_paged invocation may visit within the loop budget; `stage`:
 * attn_fused_shared's staging trips per block (vka_fused_stage_trips), else 0. */
vkattn_status vka_fused_max_keys(vka_builder *b, uint32_t DV, uint32_t tile_k, uint64_t stage, uint64_t *out);
/* The most key parts attn_merge combines within the builder's loop budget. */
uint64_t vka_merge_max_parts(const vka_builder *b);
/* The bytes key parts' states (attn_fused's and attn_paged's, for attn_merge) may take: the
 * limits' state budget within one binding's range. */
uint64_t vka_state_budget(const vka_builder *b);
/* Pushes attn_merge's step over `texels` texels of rows (its push constants set): in workgroups of
 * the tuning's fused_wg, each texel's parts split over the tuning's merge_lanes invocations. */
vkattn_status vka_push_merge(vka_builder *b, const vka_step *merge, uint64_t texels);
/* The per-head constants (ALiBi slopes, sinks) of the variants, or the placeholder without them. */
vkattn_status vka_bind_head_terms(vka_builder *b, vka_bind *out);
/* Texel width of the attention kernels' Q/K/V reads: whole vec4s when the head dim allows. */
uint32_t vka_attention_vec(const vka_problem *p);

/* The shared memory attn_cm.comp takes for tile_q query rows, blocks of tile_k keys, head dim D,
 * Q staged q_dims dims at a time, `stages` blocks staged at once; reg_frag: the REG_SOFTMAX build's
 * accumulator elements (MAT_M x MAT_N; it keeps no scores in shared memory), else 0; p_frag: the
 * REG_P build's A matrix elements (MAT_M x MAT_K; it keeps no P rows), else 0; mapped: the build
 * maps its key blocks first (VKA_FUSED_MAP). */
uint64_t vka_fused_cm_shared_bytes(uint32_t tile_q, uint32_t tile_k, uint32_t D, uint32_t q_dims, uint32_t stages,
                                   uint32_t reg_frag, uint32_t p_frag, int mapped);
/* The loop trips of one attn_cm workgroup over `blocks` key blocks (mapped: with an attn_mask). */
uint64_t vka_fused_cm_loop_trips(uint64_t blocks, int mapped);

/* The loop trips of one attn_fused invocation over `keys` keys (attn_paged runs the same loops);
 * `stage` as for vka_fused_max_keys. */
uint64_t vka_fused_loop_trips(uint32_t DV, uint32_t tile_k, uint64_t keys, int load, uint64_t stage);
/* attn_fused_shared: the shared memory of a block of tile_k keys' K and V rows (DV texels each)
 * and, masked (a layer with an attn_mask), a texel of its workgroup's votes;
 * the texels each of wg invocations stages per block (a loop the
 * kernel unrolls, counted all the same: a driver that kept it would run its trips). */
uint64_t vka_fused_shared_bytes(uint32_t tile_k, uint32_t DV, int masked);
uint64_t vka_fused_stage_trips(uint32_t tile_k, uint32_t DV, uint32_t wg);

#endif
