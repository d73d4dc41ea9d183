/* A cached forward's steps over a paged KV cache (paged.c). */
#ifndef VKA_PLAN_PAGED_H
#define VKA_PLAN_PAGED_H

#include "plan/build.h"

/* A cached forward's append of the new K/V rows to the pools, and its attention over
 * the paged cache (key parts side by side, merged). */
vkattn_status vka_plan_kv_append(vka_builder *b, const vka_qkv_layout *l);
vkattn_status vka_plan_paged(vka_builder *b, const vka_qkv_layout *l);

#endif
