/* What a plan is: its steps (a kernel dispatch with its specialization constants, bindings and
 * push constants; a fill; copies) and the workspace they need, and what is known of each step: its
 * loop trips and its description, by the functions its kernel's row names (kernel_list.h). */
#ifndef VKA_STEPS_H
#define VKA_STEPS_H

#include "abi.h"
#include "common/text.h"
#include "device/matrix_rows.h"
#include "device/tuning.h"
#include "pipeline/kernels.h"
#include "problem/args.h"

typedef enum vka_step_kind {
    VKA_STEP_DISPATCH,
    VKA_STEP_ZERO, /* fill bind[0] with zeros (vkCmdFillBuffer) */
    VKA_STEP_COPY, /* copy plan->copies[copy_first .. +copy_count) from bind[0] to bind[1] */
    VKA_STEP_WRITE /* write plan->words[copy_first .. +copy_count) to the start of bind[0] (vkCmdUpdateBuffer:
                      the data travels in the command buffer) */
} vka_step_kind;

/* How a binding is viewed: as a buffer, or through a texel view of 1 or 4 elements per texel
 * (the element type comes from the role's dtype). */
enum { VKA_VIEW_BUFFER = 0, VKA_VIEW_SCALAR = 1, VKA_VIEW_VEC4 = 4 };

/* One binding of a step: which buffer, how it is viewed, and the bytes of it the kernel sees (the
 * whole tensor, or a slice of a buffer larger than the device's range). Kernel offsets in the
 * push constants count from the slice's start. */
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
    uint32_t copy_first, copy_count; /* COPY: regions of plan->copies; WRITE: words of plan->words */
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
    uint32_t compute_units;            /* SMs / CUs where the driver says, else 0 (split-KV sizing, vka_two_waves) */
    const vka_tuning *tuning;        /* kernel shapes for this device */
    vkattn_matrix_shape matrix_shape;  /* the cooperative-matrix shape the kernels use; all 0 where
                                          they may not run (no device support, build, or turned off) */
    uint32_t subgroup_size;            /* the subgroup size the cooperative-matrix kernels require */
    int no_fused_cm;                   /* attn_cm may not run (its self-test failed on this context) */
    int matrix2;                       /* VK_NV_cooperative_matrix2's reductions, conversions and
                                          per-element operations may be used (attn_cm2) */
    vka_matrix_rows matrix_rows;       /* the accumulators' row layout where known (attn_cm's softmax
                                          in registers; zeros: in shared memory) */
    int subgroup_sums;                 /* subgroupAdd and shuffles in compute shaders, subgroups of >= 4
                                          lanes: matmul_vec, attn_paged_lanes */
    uint32_t max_shared_bytes;         /* maxComputeSharedMemorySize */
    uint32_t max_workgroup_invocations; /* of a one-dimensional workgroup (vkattn's are) */
    uint32_t max_matrix_workgroup;     /* invocations of a cooperative-matrix workgroup, whose subgroup
                                          size is required: subgroup_size x maxComputeWorkgroupSubgroups
                                          (0: max_workgroup_invocations alone) */
    struct vka_faults *faults;        /* test-only failure injection; NULL in pure tests */
} vka_plan_limits;

/* The workgroups a dispatch should give the device at least, two per compute unit (a short
 * prompt's matrix tiles narrow towards it); 0 where the driver does not say how many it has. */
static inline uint64_t vka_two_waves(const vka_plan_limits *l) { return 2ull * l->compute_units; }

typedef struct vka_plan {
    vkattn_path path;                         /* the path that will run */
    vka_step *steps;
    uint32_t step_count, step_capacity;
    vka_copy *copies;
    uint32_t copy_count, copy_capacity;
    uint32_t *words; /* what WRITE steps write */
    uint32_t word_count, word_capacity;
    vkattn_dtype role_dtype[VKA_ROLE_COUNT];  /* element type of each role's buffer */
    uint64_t workspace_bytes[VKA_ROLE_COUNT]; /* non-zero for the workspace roles used */
    uint64_t role_bytes[VKA_ROLE_COUNT];      /* bytes of each role's tensor as the plan sees it */
    uint32_t chunks;                          /* score-row chunks (unfused) */
    uint32_t key_parts;                       /* fused: key parts run side by side (1 = unsplit) */
    uint32_t key_chunks;                      /* fused: chunks each part is visited in, in turn */
    uint32_t query_sets;                      /* paged: sets of new tokens, one dispatch each */
    int qkv_one_matmul;                            /* one matmul makes Q, K and V */
} vka_plan;

void vka_plan_free(vka_plan *plan);

/* Total workspace bytes of a plan. */
uint64_t vka_plan_workspace_total(const vka_plan *plan);

/* The loop trips one invocation of a dispatch step runs, by the model each kernel's header
 * describes (0 for copies and fills). The plan keeps this within limits->loop_budget. */
uint64_t vka_step_loop_trips(const vka_step *step);
/* What a dispatch step computes, from its push constants (a line of vka_plan_describe). */
void vka_step_describe(vka_text *t, const vka_step *step);
/* A step's name: its kernel's ("matmul_cm", "attn_merge"), or "fill", "copy", "write" for the
 * transfers (static storage; vka_plan_describe's kernel column, vkattn_step_time.kernel). */
const char *vka_step_name(const vka_step *step);

/* Splits `total` workgroups into a grid within `max`; 0 if it cannot fit. */
int vka_fold_groups(uint64_t total, const uint32_t max[3], uint32_t out[3]);

/* Small arithmetic every schedule uses. */
static inline uint64_t vka_ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }
static inline uint64_t vka_min64(uint64_t a, uint64_t b) { return a < b ? a : b; }
/* Whether a cooperative-matrix workgroup of `wg` invocations fits the device: its invocations and
 * its subgroups of the required size. */
/* Whether the device lists the fp16 M x N accumulator a kernel converts its fp32 sums to (P in
 * attn_cm's softmax in registers, an fp16 C in matmul_cm's whole stores): Vulkan allows the type
 * where a listed shape has it, which the fp16 A (M x K) or B (K x N) matrix is where N = K or
 * M = K (the device lists fp16 x fp16 -> fp32 shapes, physical.c). */
static inline int vka_matrix_f16_mn_listed(vkattn_matrix_shape ms) { return ms.n == ms.k || ms.m == ms.k; }
static inline int vka_matrix_workgroup_fits(const vka_plan_limits *l, uint32_t wg)
{
    return wg <= l->max_workgroup_invocations && (!l->max_matrix_workgroup || wg <= l->max_matrix_workgroup);
}
/* A rolled loop of t trips costs t + 1 against the budget (lavapipe counts the test that ends it). */
static inline uint64_t vka_loop(uint64_t trips) { return trips + 1; }

/* Each kernel's loop model and description (its row in kernel_list.h names them; they are defined
 * beside the kernel's step builder). */
#define VKA_KERNEL(id, spirv, source, defines, f16_out, push, slots, trips, describe)                             \
    uint64_t trips(const vka_step *step);                                                                        \
    void describe(vka_text *t, const vka_step *step);
#include "pipeline/kernel_list.h"
#undef VKA_KERNEL

#endif
