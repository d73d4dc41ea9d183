/* A cached forward's steps over a paged KV cache (paged.c). */
#ifndef VKA_PLAN_PAGED_H
#define VKA_PLAN_PAGED_H

#include "plan/build.h"

/* Refuses a cached forward whose new tokens do not fit at once (DEVICE_LIMIT), its message naming
 * the most that do: a prompt comes in chunks of that many then, a cached forward each. */
vkattn_status vka_plan_new_tokens(vka_builder *b);
/* A cached forward's append of the new K/V rows to the pools, and its attention over
 * the paged cache (key parts side by side, merged). */
vkattn_status vka_plan_kv_append(vka_builder *b, const vka_qkv_layout *l);
vkattn_status vka_plan_paged(vka_builder *b, const vka_qkv_layout *l);

/* The shared memory of attn_paged's lanes builds: a block's scores of `keys` keys for `tile_a`
 * rows, and texels of rows: with `q_shared` the rows' queries (tile_a x DV texels), with `sets`
 * (V in 16-byte loads by sets of lanes; 0 = not) the sets' sums (sets x tile_a x DV), in one
 * array (the larger; a placeholder texel for neither). */
uint64_t vka_paged_lanes_shared_bytes(uint32_t tile_a, uint32_t DV, uint32_t keys, int q_shared, uint32_t sets);

#endif
