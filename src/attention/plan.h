/*
 * The plan: a pure function from (problem shapes, device limits, kernel tuning) to the list of
 * steps a forward records and the workspace they need. No Vulkan objects here, so the plan is
 * tested on the CPU (tests/test_plan.c) and the recording code only walks the list.
 *
 *   query ─┬─ matmul ─► Q ┐   one Q/K/V matmul for self-attention; the extra keys (bias_k,
 *   key  ──┼─ matmul ─► K ├─ zero key) are copied in after each batch item's S projected keys
 *   value ─┴─ matmul ─► V ┘
 *            fused path:    attn_fused [per key part, merged by log-sum-exp: attn_merge] ──► ctx
 *            unfused path:  per chunk of score rows: scores ─► softmax ─► [average] ─► P·V ─► ctx
 *   output ◄── matmul (W_O) ◄── ctx
 *
 * The fused path is the default; the unfused path runs when attention weights are requested (its
 * probability buffer is the weights tensor itself, or a chunked score buffer that fits
 * maxStorageBufferRange). The fused workspace grows with B·L·E, never with L·S.
 *
 * Two device limits shape every step:
 *  - the loop budget (lavapipe ends any invocation's loops after 65535 trips in total, silently):
 *    vka_step_loop_trips() models each kernel's trips from its parameters, and the plan cuts work
 *    so that every step stays within the budget: matmul reductions into parts, fused keys into
 *    parts (side by side, merged by log-sum-exp) and chunks (in turn, the softmax state carried
 *    between them), unfused softmax rows and P·V sums into key ranges;
 *  - maxStorageBufferRange: a buffer larger than the range is bound through windows (offset and
 *    range of the binding), and matmuls are cut into row blocks whose windows fit.
 */
#ifndef VKA_PLAN_H
#define VKA_PLAN_H

#include "abi.h"
#include "attention/config.h"
#include "device/tuning.h"
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
    VKA_ROLE_LSE,
    /* a cached forward's KV cache: its pools (the cache's dtype) and the forward's sequence table */
    VKA_ROLE_CACHE_K,
    VKA_ROLE_CACHE_V,
    VKA_ROLE_CACHE_META, /* uint32 words, see "The paged KV cache" in abi.h */
    /* layer weights (storage dtype; biases fp32) */
    VKA_ROLE_W_IN,    /* (I + 2 I_kv, E) when packed, else W_Q (I, E) (I_kv = inner_kv) */
    VKA_ROLE_W_K,     /* (I_kv, kdim), only when not packed */
    VKA_ROLE_W_V,     /* (I_kv, vdim), only when not packed */
    VKA_ROLE_B_IN,    /* (I + 2 I_kv) */
    VKA_ROLE_W_OUT,   /* (E,E) */
    VKA_ROLE_B_OUT,   /* (E) */
    VKA_ROLE_EXTRA_K, /* (I_kv / D, extra_keys, D): bias_k and/or the zero key per K/V head */
    VKA_ROLE_EXTRA_V,
    VKA_ROLE_ROPE_FREQ, /* (rope_dim / 2) fp32: RoPE's inv_freq table */
    VKA_ROLE_HEAD_TERMS, /* (H', 2) fp32: each computed head's ALiBi slope and sink logit */
    /* workspace, owned by the layer and sized by the plan */
    VKA_ROLE_QKV,    /* (B, H' + 2 H_kv', S', D) one matmul, or Q alone (B, H', L, D) */
    VKA_ROLE_K_PROJ, /* (B, H_kv', S', D): S projected keys then the extra keys, per K/V head */
    VKA_ROLE_V_PROJ, /* (B, H_kv', S', D) */
    VKA_ROLE_SCORES, /* chunk rows × S' (fp32) */
    VKA_ROLE_CTX,    /* (B·L, E), heads concatenated */
    VKA_ROLE_CTX_ACC,       /* (B·L, E) fp32: P·V sums of long rows, key range by key range */
    VKA_ROLE_SOFTMAX_STATS, /* (rows, chunks, 3) fp32: per-chunk max, sum, NaN flag of long rows */
    VKA_ROLE_STATE_O,       /* (parts, rows, D) fp32: softmax states of the fused key parts */
    VKA_ROLE_STATE_LSE,     /* (parts, rows) fp32 */
    VKA_ROLE_COUNT
} vka_role;

#define VKA_FIRST_LAYER_ROLE VKA_ROLE_W_IN
#define VKA_FIRST_WORKSPACE_ROLE VKA_ROLE_QKV

const char *vka_role_name(vka_role role);

typedef enum vka_step_kind {
    VKA_STEP_DISPATCH,
    VKA_STEP_ZERO, /* fill bind[0] with zeros (vkCmdFillBuffer) */
    VKA_STEP_COPY  /* copy plan->copies[copy_first .. +copy_count) from bind[0] to bind[1] */
} vka_step_kind;

/* How a binding is viewed: as a buffer, or through a texel view of 1 or 4 elements per texel
 * (the element type comes from the role's dtype). */
enum { VKA_VIEW_BUFFER = 0, VKA_VIEW_SCALAR = 1, VKA_VIEW_VEC4 = 4 };

/* One binding of a step: which buffer, how it is viewed, and the bytes of it the kernel sees (the
 * whole tensor, or a window of a buffer larger than the device's range). Kernel offsets in the
 * push constants count from the window's start. */
typedef struct vka_bind {
    vka_role role;
    uint8_t view;
    uint64_t offset, range; /* bytes; range 0 for VKA_ROLE_NONE */
} vka_bind;

typedef struct vka_step {
    vka_step_kind kind;
    vkattn_stage stage;
    vka_kernel kernel;
    int f16_out; /* the kernel's fp16-output build */
    uint32_t spec[VKA_MAX_SPEC];
    vka_bind bind[VKA_MAX_BINDINGS]; /* indexed by the kernel's binding slots (abi.h) */
    uint32_t binding_count;
    union {
        vka_matmul_push matmul;
        vka_scores_push scores;
        vka_softmax_push softmax;
        vka_pv_push pv;
        vka_fused_push fused;
        vka_merge_push merge;
        vka_average_push average;
        vka_rope_push rope;
        vka_paged_push paged;
        vka_append_push append;
    } push;
    uint32_t groups[3];
    uint32_t copy_first, copy_count;
    int barrier_before; /* wait for every earlier step's writes before this one */
} vka_step;

/* One region of a VKA_STEP_COPY, in elements of the destination's dtype. */
typedef struct vka_copy {
    uint64_t src_offset, dst_offset, count;
} vka_copy;

/* The device facts the plan depends on. */
typedef struct vka_plan_limits {
    uint64_t max_storage_buffer_range; /* every binding must fit it */
    uint32_t max_group_count[3];
    uint64_t max_texel_elements;       /* maxTexelBufferElements */
    uint64_t texel_offset_alignment;   /* minTexelBufferOffsetAlignment (0 = 1) */
    uint64_t storage_offset_alignment; /* minStorageBufferOffsetAlignment (0 = 1) */
    uint64_t max_buffer_bytes;         /* the largest buffer the device can allocate (0 = no limit) */
    uint64_t scores_budget_bytes;      /* the most the score buffer may take (0 = the range) */
    uint64_t state_budget_bytes;       /* the most the fused key parts' states may take (0 = the range) */
    uint32_t loop_budget;              /* loop trips per invocation (0 = unlimited) */
    uint32_t compute_units;            /* SMs / CUs where the driver says, else 0 (split-KV sizing) */
    const vka_tuning *tuning;        /* kernel shapes for this device */
    struct vka_faults *faults;        /* test-only failure injection; NULL in pure tests */
} vka_plan_limits;

typedef struct vka_plan {
    vkattn_path path;                         /* the path that will run */
    vka_step *steps;
    uint32_t step_count, step_capacity;
    vka_copy *copies;
    uint32_t copy_count, copy_capacity;
    vkattn_dtype role_dtype[VKA_ROLE_COUNT];  /* element type of each role's buffer */
    uint64_t workspace_bytes[VKA_ROLE_COUNT]; /* non-zero for the workspace roles used */
    uint64_t role_bytes[VKA_ROLE_COUNT];      /* bytes of each role's tensor as the plan sees it */
    uint32_t chunks;                          /* score-row chunks (unfused) */
    uint32_t key_parts;                       /* fused: key parts run side by side (1 = unsplit) */
    uint32_t key_chunks;                      /* fused: chunks each part is visited in, in turn */
    uint32_t query_groups;                    /* paged: dispatches the new tokens are cut into */
    int qkv_one_matmul;                            /* one matmul makes Q, K and V */
} vka_plan;

/* Builds the plan for `p` into `plan` (its arrays are reused across calls; start from a zeroed
 * plan and release with vka_plan_free). Errors: VKATTN_ERROR_DEVICE_LIMIT when a buffer the forward
 * must bind exceeds a device limit, VKATTN_ERROR_INVALID_ARGUMENT for a path that cannot serve the
 * request (weights on the fused path, log-sum-exp on the unfused one), out of host memory. */
vkattn_status vka_plan_build(const vka_problem *p, const vka_plan_limits *limits, vka_plan *plan,
                             vkattn_error *error);
void vka_plan_free(vka_plan *plan);

/* Total workspace bytes of a plan. */
uint64_t vka_plan_workspace_total(const vka_plan *plan);

/* The loop trips one invocation of a dispatch step runs, by the model each kernel's header
 * describes (0 for copies and fills). The plan keeps this within limits->loop_budget. */
uint64_t vka_step_loop_trips(const vka_step *step);

/* Splits `total` workgroups into a grid within `max`; 0 if it cannot fit. */
int vka_fold_groups(uint64_t total, const uint32_t max[3], uint32_t out[3]);

#endif
