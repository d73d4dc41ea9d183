/* The plan's driver: the element types and sizes of every role, the path, then the schedules in
 * order (projections, RoPE, then the KV cache's append and paged attention, or fused or unfused
 * attention, then the output projection). */
#include "plan/plan.h"

#include <string.h>

#include "common/error.h"
#include "format/dtype.h"
#include "plan/attention.h"
#include "plan/build.h"
#include "plan/matmul.h"
#include "plan/paged.h"

static void assign_dtypes(const vka_problem *p, vka_plan *plan)
{
    vkattn_dtype storage = p->cfg.storage;
    for (int r = 0; r < VKA_ROLE_COUNT; r++) plan->role_dtype[r] = VKATTN_DTYPE_F32;
    for (int a = 0; a < VKA_ARG_COUNT; a++) plan->role_dtype[vka_arg_get((vka_arg)a)->role] = vka_arg_dtype(p, (vka_arg)a);
    plan->role_dtype[VKA_ROLE_CACHE_K] = plan->role_dtype[VKA_ROLE_CACHE_V] = p->cache.dtype;
    plan->role_dtype[VKA_ROLE_CACHE_META] = VKATTN_DTYPE_I32;
    const vka_role stored[] = {VKA_ROLE_W_IN,    VKA_ROLE_W_K,    VKA_ROLE_W_V,   VKA_ROLE_W_OUT,
                               VKA_ROLE_EXTRA_K, VKA_ROLE_EXTRA_V, VKA_ROLE_QKV,  VKA_ROLE_K_PROJ,
                               VKA_ROLE_V_PROJ,  VKA_ROLE_CTX};
    for (size_t i = 0; i < sizeof stored / sizeof stored[0]; i++) plan->role_dtype[stored[i]] = storage;
}

/* Bytes of every caller tensor and layer weight (the workspaces get theirs as they are reserved). */
static void assign_sizes(const vka_problem *p, vka_plan *plan)
{
    const vka_layer_config *c = &p->cfg;
    uint64_t elems[VKA_ROLE_COUNT] = {0};
    const uint64_t I = c->inner, Ik = c->inner_kv;
    for (int a = 0; a < VKA_ARG_COUNT; a++) elems[vka_arg_get((vka_arg)a)->role] = vka_arg_elems(p, (vka_arg)a);
    elems[VKA_ROLE_W_IN] = (c->packed_in_proj ? I + 2 * Ik : I) * c->E;
    elems[VKA_ROLE_W_K] = c->packed_in_proj ? 0 : Ik * c->kdim;
    elems[VKA_ROLE_W_V] = c->packed_in_proj ? 0 : Ik * c->vdim;
    elems[VKA_ROLE_B_IN] = c->bias ? I + 2 * Ik : 0;
    elems[VKA_ROLE_W_OUT] = (uint64_t)c->E * I;
    elems[VKA_ROLE_B_OUT] = c->bias ? c->E : 0;
    elems[VKA_ROLE_EXTRA_K] = elems[VKA_ROLE_EXTRA_V] = (uint64_t)c->extra_keys * Ik;
    elems[VKA_ROLE_ROPE_FREQ] = c->rope_dim / 2;
    elems[VKA_ROLE_QK_NORM] = (uint64_t)vka_qk_norm_width(c, 0) + vka_qk_norm_width(c, 1);
    elems[VKA_ROLE_HEAD_TERMS] = c->alibi || c->sinks ? 2 * (uint64_t)c->H_active : 0;
    elems[VKA_ROLE_CACHE_META] = p->cache.meta_words;
    for (int r = 0; r < VKA_ROLE_COUNT; r++) plan->role_bytes[r] = elems[r] * vkattn_dtype_size(plan->role_dtype[r]);
    /* the pools as the cache allocated them (a block format has no size per element) */
    const uint64_t pool = (uint64_t)p->cache.num_blocks * p->cache.block_size * c->H_kv * c->D;
    plan->role_bytes[VKA_ROLE_CACHE_K] = plan->role_bytes[VKA_ROLE_CACHE_V] =
        p->cache.seqs ? vka_kv_pool_bytes(p->cache.dtype, pool) : 0;
}

vkattn_status vka_plan_build(const vka_problem *p, const vka_plan_limits *limits, vka_plan *plan, vkattn_error *error)
{
    vka_builder b = {p, limits, limits->tuning, plan, error, limits->loop_budget ? limits->loop_budget : UINT64_MAX};
    plan->step_count = 0;
    plan->copy_count = 0;
    plan->word_count = 0;
    plan->chunks = 0;
    plan->key_parts = plan->key_chunks = plan->query_sets = 0;
    plan->qkv_one_matmul = 0;
    memset(plan->workspace_bytes, 0, sizeof plan->workspace_bytes);
    assign_dtypes(p, plan);
    assign_sizes(p, plan);
    plan->path = vka_resolve_path(p->path, p->weights);
    if (plan->path == VKATTN_PATH_FUSED && p->weights != VKATTN_WEIGHTS_NONE)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "attention weights need the unfused path (the fused kernel never forms them)");
    if (plan->path == VKATTN_PATH_UNFUSED && p->lse)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "the log-sum-exp output needs the fused path");
    if (plan->path != VKATTN_PATH_FUSED && plan->path != VKATTN_PATH_UNFUSED)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "the device plan serves the fused and unfused paths");

    vkattn_status status;
    vka_qkv_layout l;
    if (p->cache.seqs) VKA_TRY(vka_plan_new_tokens(&b));
    VKA_TRY(vka_reserve_workspace(&b, VKA_ROLE_CTX, (uint64_t)p->B * p->L * p->cfg.inner));
    VKA_TRY(vka_plan_input_projections(&b, &l));
    VKA_TRY(vka_plan_rope(&b, &l));
    if (p->cache.seqs) {
        VKA_TRY(vka_plan_kv_append(&b, &l));
        VKA_TRY(vka_plan_paged(&b, &l));
    } else if (plan->path == VKATTN_PATH_FUSED) VKA_TRY(vka_plan_fused(&b, &l));
    else VKA_TRY(vka_plan_unfused(&b, &l));
    VKA_TRY(vka_plan_output_projection(&b));
    return VKATTN_OK;
fail:
    return status;
}

vka_plan_limits vka_plan_limits_of(const vkattn_device_info *device, const vka_tuning *tuning)
{
    vka_plan_limits limits = {0};
    limits.max_storage_buffer_range = device->max_storage_buffer_range;
    /* A single buffer must also fit one allocation. */
    if (device->max_memory_allocation_size && device->max_memory_allocation_size < limits.max_storage_buffer_range)
        limits.max_storage_buffer_range = device->max_memory_allocation_size;
    for (int i = 0; i < 3; i++) limits.max_group_count[i] = device->max_workgroup_count[i];
    limits.max_buffer_bytes = device->max_memory_allocation_size;
    limits.loop_budget = device->loop_budget;
    limits.compute_units = device->compute_units;
    limits.tuning = tuning;
    if (device->cooperative_matrix_usable) {
        limits.matrix_shape = vka_matrix_shape_for(device);
        limits.subgroup_size = vka_matrix_subgroup_for(tuning, device);
    }
    limits.max_shared_bytes = device->max_shared_memory_bytes;
    limits.max_workgroup_invocations = device->max_workgroup_invocations;
    /* Keep the unfused score buffer moderate on devices with huge ranges: chunks cost a few
     * dispatches, a multi-GiB workspace costs memory the application may need. */
    limits.scores_budget_bytes = (uint64_t)512 << 20;
    /* The fused path's split-key states: enough for a long prefill's parts, far below the scores. */
    limits.state_budget_bytes = (uint64_t)64 << 20;
    return limits;
}
