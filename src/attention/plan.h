/*
 * The plan: a pure function from (problem shapes, device limits) to the list of kernel dispatches a
 * forward records and the workspace they need. No Vulkan objects here, so the plan is tested on
 * the CPU (tests/test_plan.c) and the recording code only walks the list.
 *
 * Unfused forward, as planned:
 *
 *   query ─┬─ matmul ─► Q ┐            one fused QKV matmul when self-attention
 *   key  ──┼─ matmul ─► K ├─► per chunk of score rows:  scores ─► softmax ─► (average) ─► P·V ─► ctx
 *   value ─┴─ matmul ─► V ┘                                                                     │
 *                                                                     output ◄── matmul ◄───────┘
 *
 * The score buffer P holds B·H·L·S' floats at most; when that exceeds the device's
 * maxStorageBufferRange (or the workspace budget) the rows are processed in chunks that reuse one
 * smaller buffer. When per-head weights are requested, P is the caller's weights tensor itself.
 */
#ifndef VKA_PLAN_H
#define VKA_PLAN_H

#include "abi.h"
#include "attention/config.h"
#include "pipeline/kernels.h"

/* Every buffer a step can bind, resolved to a real buffer when recording. */
typedef enum vka_role {
    VKA_ROLE_NONE = 0, /* a small placeholder: the slot is not read */
    /* caller tensors */
    VKA_ROLE_QUERY,
    VKA_ROLE_KEY,   /* the query tensor for self-attention */
    VKA_ROLE_VALUE, /* the key tensor when value was not given */
    VKA_ROLE_KEY_PADDING_MASK,
    VKA_ROLE_VALID_LENS,
    VKA_ROLE_ATTN_MASK,
    VKA_ROLE_OUTPUT,
    VKA_ROLE_WEIGHTS,
    /* layer weights */
    VKA_ROLE_W_IN,    /* (3E,E) when packed, else W_Q (E,E) */
    VKA_ROLE_W_K,     /* (E,kdim), only when not packed */
    VKA_ROLE_W_V,     /* (E,vdim), only when not packed */
    VKA_ROLE_B_IN,    /* (3E) */
    VKA_ROLE_W_OUT,   /* (E,E) */
    VKA_ROLE_B_OUT,   /* (E) */
    VKA_ROLE_EXTRA_K, /* (extra_keys, E): bias_k and/or the zero key */
    VKA_ROLE_EXTRA_V,
    /* workspace, owned by the layer and sized by the plan */
    VKA_ROLE_QKV,    /* (B·L, 3E) fused, or Q alone (B·L, E) */
    VKA_ROLE_K_PROJ, /* (B·S, E) */
    VKA_ROLE_V_PROJ, /* (B·S, E) */
    VKA_ROLE_SCORES, /* chunk rows × S' */
    VKA_ROLE_CTX,    /* (B·L, E), heads concatenated */
    VKA_ROLE_COUNT
} vka_role;

#define VKA_FIRST_WORKSPACE_ROLE VKA_ROLE_QKV

typedef enum vka_step_kind {
    VKA_STEP_DISPATCH,
    VKA_STEP_ZERO /* fill bindings[0] with zeros (vkCmdFillBuffer) */
} vka_step_kind;

typedef struct vka_step {
    vka_step_kind kind;
    vkattn_stage stage;
    vka_kernel kernel;
    uint32_t spec[VKA_MAX_SPEC];
    vka_role bindings[VKA_MAX_BINDINGS];
    uint32_t binding_count;
    union {
        vka_matmul_push matmul;
        vka_scores_push scores;
        vka_softmax_push softmax;
        vka_pv_push pv;
        vka_average_push average;
    } push;
    uint32_t groups[3];
    int barrier_before; /* wait for every earlier step's writes before this one */
} vka_step;

/* The device facts the plan depends on. */
typedef struct vka_plan_limits {
    uint64_t max_storage_buffer_range; /* every bound buffer must fit it */
    uint32_t max_group_count[3];
    uint64_t scores_budget_bytes;      /* the most the score buffer may take (0 = the range) */
} vka_plan_limits;

typedef struct vka_plan {
    vkattn_path path;                         /* the path that will run */
    vka_step *steps;
    uint32_t step_count, step_capacity;
    uint64_t workspace_bytes[VKA_ROLE_COUNT]; /* non-zero for the workspace roles used */
    uint32_t chunks;                          /* score-row chunks */
    int fused_qkv;                            /* one matmul makes Q, K and V */
} vka_plan;

/* Builds the plan for `p` into `plan` (its step array is reused across calls; start from a zeroed
 * plan and release with vka_plan_free). Errors: VKATTN_ERROR_DEVICE_LIMIT when a tensor the
 * forward must bind whole exceeds the storage-buffer range, VKATTN_ERROR_OUT_OF_HOST_MEMORY. */
vkattn_status vka_plan_build(const vka_problem *p, const vka_plan_limits *limits, vka_plan *plan,
                             vkattn_error *error);
void vka_plan_free(vka_plan *plan);

/* Total workspace bytes of a plan. */
uint64_t vka_plan_workspace_total(const vka_plan *plan);

/* Splits `total` workgroups into a grid within `max`; 0 if it cannot fit. */
int vka_fold_groups(uint64_t total, const uint32_t max[3], uint32_t out[3]);

#endif
