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
 *  - maxStorageBufferRange: a buffer larger than the range is bound through slices (offset and
 *    range of the binding), and matmuls are cut into row blocks whose slices fit.
 */
#ifndef VKA_PLAN_H
#define VKA_PLAN_H

#include "plan/steps.h"

/* Builds the plan for `p` into `plan` (its arrays are reused across calls; start from a zeroed
 * plan and release with vka_plan_free). Errors: VKATTN_ERROR_DEVICE_LIMIT when a buffer the forward
 * must bind exceeds a device limit, VKATTN_ERROR_INVALID_ARGUMENT for a path that cannot serve the
 * request (weights on the fused path, log-sum-exp on the unfused one), out of host memory. */
vkattn_status vka_plan_build(const vka_problem *p, const vka_plan_limits *limits, vka_plan *plan,
                             vkattn_error *error);

/* The device facts a plan is built with, from a device's description and the context's tuning:
 * ranges, workgroup counts and sizes, shared memory, compute units, loop budget, and where
 * cooperative matrices are usable (device->cooperative_matrix_usable) their shape and subgroup
 * size (vka_matrix_shape_for, vka_matrix_subgroup_for); the workspace budgets. The fields
 * vkattn_device_info does not carry (texel elements, offset alignments) and the fault injector are
 * the caller's to add: the context takes them from the device, the plan tests from made-up profiles. */
vka_plan_limits vka_plan_limits_of(const vkattn_device_info *device, const vka_tuning *tuning);

#endif
