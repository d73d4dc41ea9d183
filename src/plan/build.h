/* Inside the plan: the builder state and the helpers (build.c) every schedule (matmul.c,
 * attention.c, paged.c) builds its steps with: steps and copies, bindings and slices, workspace,
 * the loop budget. Nothing outside src/plan/ includes this. */
#ifndef VKA_PLAN_BUILD_H
#define VKA_PLAN_BUILD_H

#include "plan/steps.h"

typedef struct vka_builder {
    const vka_problem *p;
    const vka_plan_limits *limits;
    const vka_tuning *tuning;
    vka_plan *plan;
    vkattn_error *error;
    uint64_t budget; /* loop trips per invocation, UINT64_MAX when unlimited */
} vka_builder;

/* Where the projected Q, K and V live, in elements: Q row (b, h, i) at
 * q_offset + b*q_batch + h*q_head + i*q_row, K and V rows (b, k, j) of K/V head k = h / group at
 * k_offset (v_offset) + b*kv_batch + k*kv_head + j*kv_row. Each head's rows are contiguous (D
 * elements apart). */
typedef struct vka_qkv_layout {
    vka_role q, k, v;
    uint64_t q_offset, q_batch, q_head, q_row;
    uint64_t k_offset, v_offset, kv_batch, kv_head, kv_row;
} vka_qkv_layout;

/* Adds a step (a dispatch's workgroups folded into the device's grid; its loop trips checked
 * against the budget). */
vkattn_status vka_push_step(vka_builder *b, const vka_step *step, uint64_t invocations, uint32_t wg);
/* Appends a copy region for the next VKA_STEP_COPY step. */
vkattn_status vka_push_copy(vka_builder *b, const vka_copy *copy);
/* Appends a VKA_STEP_WRITE step writing `count` 32-bit words to the start of `role`. */
vkattn_status vka_push_write(vka_builder *b, vkattn_stage stage, vka_role role, const void *words, uint32_t count);

/* Whether bytes seen through `view` of a role fit one binding. */
int vka_fits_binding(const vka_builder *b, vka_role role, uint8_t view, uint64_t bytes);
/* Binds a role's whole tensor, which must fit one binding (VKA_ROLE_NONE binds the placeholder). */
vkattn_status vka_bind_whole(vka_builder *b, vka_bind *out, vka_role role, uint8_t view);
/* Binds elements [first, first + count) of a role: the whole tensor when it fits one binding, else
 * a slice from an aligned offset. *shift gets the elements from the slice's start to `first`. */
vkattn_status vka_bind_elems(vka_builder *b, vka_bind *out, vka_role role, uint8_t view, uint64_t first,
                             uint64_t count, uint64_t *shift);
/* The same as a storage buffer read in vectors of `width` elements (4: a vec4, or 4 halves as a
 * uvec2; 8: matmul_vec_storage's): the slice starts on a multiple of `width` elements, so that
 * *shift is one too where `first` is. */
vkattn_status vka_bind_vectors(vka_builder *b, vka_bind *out, vka_role role, uint32_t width, uint64_t first,
                               uint64_t count, uint64_t *shift);
/* The push-constant offset, in texels of `vec` elements and modulo 2^32, that makes a kernel's
 * `offset + absolute index` land inside a slice: the slice holds element `first` `shift`
 * elements after its start, and `layout_offset + index(first)` is `first`. */
uint32_t vka_slice_offset(uint64_t layout_offset, uint64_t first, uint64_t shift, uint32_t vec);
/* Bytes per element of a role's buffer. */
uint64_t vka_elem_bytes(const vka_builder *b, vka_role role);

/* Makes a workspace role at least `elems` elements. */
vkattn_status vka_reserve_workspace(vka_builder *b, vka_role role, uint64_t elems);
/* What is left of the loop budget once `fixed` trips are spent (UINT64_MAX when unlimited). */
uint64_t vka_budget_left(const vka_builder *b, uint64_t fixed);

#endif
