/* The plan's core: roles, the loop model, bindings and windows, workspace, steps, and the build
 * entry point. The projections are planned in plan_matmul.c, attention in plan_attention.c. */
#include "attention/plan_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"
#include "io/quant.h"

const char *vka_role_name(vka_role role)
{
    static const char *const names[VKA_ROLE_COUNT] = {
        [VKA_ROLE_NONE] = "none",
        [VKA_ROLE_QUERY] = "query",
        [VKA_ROLE_KEY] = "key",
        [VKA_ROLE_VALUE] = "value",
        [VKA_ROLE_KEY_PADDING_MASK] = "key_padding_mask",
        [VKA_ROLE_VALID_LENS] = "valid_lens",
        [VKA_ROLE_ATTN_MASK] = "attn_mask",
        [VKA_ROLE_OUTPUT] = "output",
        [VKA_ROLE_WEIGHTS] = "weights",
        [VKA_ROLE_LSE] = "lse",
        [VKA_ROLE_CACHE_K] = "cache_k",
        [VKA_ROLE_CACHE_V] = "cache_v",
        [VKA_ROLE_CACHE_META] = "cache_meta",
        [VKA_ROLE_W_IN] = "w_in",
        [VKA_ROLE_W_K] = "w_k",
        [VKA_ROLE_W_V] = "w_v",
        [VKA_ROLE_B_IN] = "b_in",
        [VKA_ROLE_W_OUT] = "w_out",
        [VKA_ROLE_B_OUT] = "b_out",
        [VKA_ROLE_EXTRA_K] = "extra_k",
        [VKA_ROLE_EXTRA_V] = "extra_v",
        [VKA_ROLE_ROPE_FREQ] = "rope_freq",
        [VKA_ROLE_HEAD_TERMS] = "head_terms",
        [VKA_ROLE_QKV] = "qkv",
        [VKA_ROLE_K_PROJ] = "k_proj",
        [VKA_ROLE_V_PROJ] = "v_proj",
        [VKA_ROLE_SCORES] = "scores",
        [VKA_ROLE_CTX] = "ctx",
        [VKA_ROLE_CTX_ACC] = "ctx_acc",
        [VKA_ROLE_SOFTMAX_STATS] = "softmax_stats",
        [VKA_ROLE_STATE_O] = "state_o",
        [VKA_ROLE_STATE_LSE] = "state_lse",
    };
    return (unsigned)role < VKA_ROLE_COUNT ? names[role] : "unknown";
}

/* What a role is, for messages. */
static const char *role_what(vka_role role)
{
    switch (role) {
    case VKA_ROLE_W_IN: return "in_proj_weight (or q_proj_weight)";
    case VKA_ROLE_W_K: return "k_proj_weight";
    case VKA_ROLE_W_V: return "v_proj_weight";
    case VKA_ROLE_W_OUT: return "out_proj.weight";
    case VKA_ROLE_WEIGHTS: return "the attention weights";
    case VKA_ROLE_LSE: return "the log-sum-exp";
    case VKA_ROLE_QKV: return "the projected query (workspace)";
    case VKA_ROLE_K_PROJ: return "the projected key (workspace)";
    case VKA_ROLE_V_PROJ: return "the projected value (workspace)";
    case VKA_ROLE_SCORES: return "the score buffer (workspace)";
    case VKA_ROLE_CTX: return "the attention output before out_proj (workspace)";
    default: return vka_role_name(role);
    }
}


int vka_fold_groups(uint64_t total, const uint32_t max[3], uint32_t out[3])
{
    uint64_t x = total < max[0] ? total : max[0];
    if (x == 0) return 0;
    uint64_t rest = vka_ceil_div(total, x);
    uint64_t y = rest < max[1] ? rest : max[1];
    uint64_t z = vka_ceil_div(rest, y);
    if (z > max[2]) return 0;
    out[0] = (uint32_t)x, out[1] = (uint32_t)y, out[2] = (uint32_t)z;
    return 1;
}

/* ---------------------------------------------------------------------------------------------- */
/* The loop model: what each kernel's header says its loops cost per invocation.                  */
/* ---------------------------------------------------------------------------------------------- */

static uint32_t log2_u32(uint32_t x)
{
    uint32_t n = 0;
    while (x > 1) x >>= 1, n++;
    return n;
}

/* attn_fused.comp over `keys` keys per invocation: blocks of TILE_B (one more where the real keys
 * end and the extra ones begin), three DV loops per block, a DV loop to clear, one to load a
 * carried state, one to store. */
static uint64_t fused_trips(uint32_t DV, uint32_t tile_k, uint64_t keys, int load)
{
    uint64_t blocks = vka_ceil_div(keys, tile_k) + 1;
    return vka_loop(DV) * (2 + (load != 0)) + vka_loop(blocks) + blocks * 3 * vka_loop(DV);
}

static uint64_t softmax_trips(const vka_softmax_push *pc, uint32_t wg, uint32_t mode)
{
    uint64_t n = vka_ceil_div(pc->chunk_len, wg), tree = vka_loop(log2_u32(wg));
    switch (mode) {
    case VKA_SOFTMAX_STATS: return 2 * vka_loop(n) + 2 * tree;
    case VKA_SOFTMAX_NORMALIZE: return vka_loop(pc->chunks) + vka_loop(n);
    default: return 3 * vka_loop(n) + 2 * tree;
    }
}

uint64_t vka_step_loop_trips(const vka_step *s)
{
    if (s->kind != VKA_STEP_DISPATCH) return 0;
    switch (s->kernel) {
    case VKA_KERNEL_MATMUL: return vka_loop(s->push.matmul.K);
    case VKA_KERNEL_SCORES: return vka_loop(s->spec[VKA_SPEC_DV]);
    case VKA_KERNEL_SOFTMAX: return softmax_trips(&s->push.softmax, s->spec[VKA_SPEC_WG_SIZE], s->spec[VKA_SPEC_FLAGS]);
    case VKA_KERNEL_PV: return vka_loop(s->push.pv.j_count);
    case VKA_KERNEL_FUSED: {
        const vka_fused_push *f = &s->push.fused;
        uint64_t keys = vka_min64(f->chunk_len, f->split_len);
        return fused_trips(s->spec[VKA_SPEC_DV], s->spec[VKA_SPEC_TILE_B], keys,
                           (s->spec[VKA_SPEC_FLAGS] & VKA_FUSED_LOAD) != 0);
    }
    case VKA_KERNEL_MERGE: return 2 * vka_loop(s->push.merge.splits);
    case VKA_KERNEL_AVERAGE_HEADS: return vka_loop(s->push.average.H);
    case VKA_KERNEL_PAGED: /* attn_fused's loops without the carried state's load */
    case VKA_KERNEL_PAGED_QUANT: /* the same loops, dequantizing as it fetches */
        return fused_trips(s->spec[VKA_SPEC_DV], s->spec[VKA_SPEC_TILE_B], s->push.paged.split_len, 0);
    case VKA_KERNEL_ROPE:
    case VKA_KERNEL_APPEND:
    case VKA_KERNEL_APPEND_QUANT: return 0; /* no loops (the quantizing build's are unrolled) */
    default: return 0; /* the peak microkernels are not planned */
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Building                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

static vkattn_status grow(vka_builder *b, void **array, uint32_t *capacity, uint32_t count, size_t size)
{
    if (count < *capacity) return VKATTN_OK;
    uint32_t n = *capacity ? *capacity * 2 : 32;
    void *bigger = vka_realloc(b->limits->faults, *array, n * size);
    if (!bigger) return vka_error_set(b->error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the plan");
    *array = bigger;
    *capacity = n;
    return VKATTN_OK;
}

uint64_t vka_elem_bytes(const vka_builder *b, vka_role role) { return vkattn_dtype_size(b->plan->role_dtype[role]); }

/* Adds a step: dispatches get their workgroups folded into the device's grid, and must keep to
 * the loop budget (the plan sized them to; this makes a planning mistake an error, never a
 * silently truncated loop). */
vkattn_status vka_push_step(vka_builder *b, const vka_step *step, uint64_t invocations, uint32_t wg)
{
    vka_plan *plan = b->plan;
    vkattn_status status = grow(b, (void **)&plan->steps, &plan->step_capacity, plan->step_count, sizeof *plan->steps);
    if (status != VKATTN_OK) return status;
    vka_step s = *step;
    if (s.kind == VKA_STEP_DISPATCH) {
        uint64_t groups = vka_ceil_div(invocations, wg);
        if (groups > UINT32_MAX || !vka_fold_groups(groups, b->limits->max_group_count, s.groups))
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "stage %s needs %llu workgroups, more than this device's maxComputeWorkGroupCount allows",
                                 vkattn_stage_name(s.stage), (unsigned long long)groups);
        uint64_t trips = vka_step_loop_trips(&s);
        if (trips > b->budget)
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "internal: stage %s would run %llu loop trips per invocation, over the loop budget %llu",
                                 vkattn_stage_name(s.stage), (unsigned long long)trips, (unsigned long long)b->budget);
    }
    plan->steps[plan->step_count++] = s;
    return VKATTN_OK;
}

vkattn_status vka_push_copy(vka_builder *b, const vka_copy *copy)
{
    vka_plan *plan = b->plan;
    vkattn_status status = grow(b, (void **)&plan->copies, &plan->copy_capacity, plan->copy_count, sizeof *plan->copies);
    if (status == VKATTN_OK) plan->copies[plan->copy_count++] = *copy;
    return status;
}

static uint64_t texel_bytes(const vka_builder *b, vka_role role, uint8_t view)
{
    if (view != VKA_VIEW_BUFFER && vka_dtype_is_block(b->plan->role_dtype[role])) return 4; /* uint words */
    return view == VKA_VIEW_BUFFER ? 1 : vka_elem_bytes(b, role) * view;
}

int vka_fits_binding(const vka_builder *b, vka_role role, uint8_t view, uint64_t bytes)
{
    if (bytes > b->limits->max_storage_buffer_range) return 0;
    return view == VKA_VIEW_BUFFER || bytes / texel_bytes(b, role, view) <= b->limits->max_texel_elements;
}

static vkattn_status too_big(vka_builder *b, vka_role role, uint64_t bytes)
{
    return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                         "%s needs %llu bytes, more than this device's maxStorageBufferRange (%llu bytes) for one binding",
                         role_what(role), (unsigned long long)bytes,
                         (unsigned long long)b->limits->max_storage_buffer_range);
}

/* The bytes a binding from `start` to `end` covers: whole texels, and whole 16-byte words for
 * buffers (kernels read bytes and halves as 32-bit words, and vec4 stores span 16 bytes); never
 * past the buffer, whose size vkattn rounds up to 16 bytes. */
static uint64_t binding_range(const vka_builder *b, vka_role role, uint64_t start, uint64_t end, uint64_t texel)
{
    uint64_t unit = texel > 1 ? texel : 16, allocated = (b->plan->role_bytes[role] + 15) / 16 * 16;
    uint64_t range = (end - start + unit - 1) / unit * unit;
    return start + range <= allocated ? range : (allocated - start) / texel * texel;
}

vkattn_status vka_bind_whole(vka_builder *b, vka_bind *out, vka_role role, uint8_t view)
{
    *out = (vka_bind){.role = role, .view = view};
    if (role == VKA_ROLE_NONE) return VKATTN_OK;
    uint64_t bytes = b->plan->role_bytes[role], texel = texel_bytes(b, role, view);
    if (!vka_fits_binding(b, role, view, bytes)) return too_big(b, role, bytes);
    out->range = binding_range(b, role, 0, bytes, texel);
    return VKATTN_OK;
}

vkattn_status vka_bind_elems(vka_builder *b, vka_bind *out, vka_role role, uint8_t view, uint64_t first,
                             uint64_t count, uint64_t *shift)
{
    uint64_t esize = vka_elem_bytes(b, role), texel = texel_bytes(b, role, view);
    if (vka_fits_binding(b, role, view, b->plan->role_bytes[role])) {
        *shift = first;
        return vka_bind_whole(b, out, role, view);
    }
    uint64_t align = view == VKA_VIEW_BUFFER ? b->limits->storage_offset_alignment : b->limits->texel_offset_alignment;
    if (align < texel) align = texel; /* both powers of two: the window starts on a whole texel */
    uint64_t start = first * esize / align * align, end = (first + count) * esize;
    uint64_t range = binding_range(b, role, start, end, texel);
    if (!vka_fits_binding(b, role, view, range)) return too_big(b, role, range);
    *out = (vka_bind){.role = role, .view = view, .offset = start, .range = range};
    *shift = (first * esize - start) / esize;
    return VKATTN_OK;
}

uint32_t vka_window_offset(uint64_t layout_offset, uint64_t first, uint64_t shift, uint32_t vec)
{
    int64_t elems = (int64_t)(layout_offset + shift) - (int64_t)first;
    return (uint32_t)(elems / (int64_t)vec); /* exact: every term is a multiple of vec */
}

vkattn_status vka_reserve_workspace(vka_builder *b, vka_role role, uint64_t elems)
{
    uint64_t bytes = elems * vka_elem_bytes(b, role);
    if (b->limits->max_buffer_bytes && bytes > b->limits->max_buffer_bytes)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "the %s workspace needs %llu bytes, more than this device can allocate (%llu)",
                             vka_role_name(role), (unsigned long long)bytes,
                             (unsigned long long)b->limits->max_buffer_bytes);
    if (bytes > b->plan->workspace_bytes[role]) b->plan->workspace_bytes[role] = bytes;
    if (bytes > b->plan->role_bytes[role]) b->plan->role_bytes[role] = bytes;
    return VKATTN_OK;
}

uint64_t vka_budget_left(const vka_builder *b, uint64_t fixed)
{
    return b->budget == UINT64_MAX ? UINT64_MAX : b->budget > fixed ? b->budget - fixed : 0;
}

/* Element types: caller tensors as given, weights and activations in the storage dtype, biases
 * and every softmax quantity in fp32. */
static void assign_dtypes(const vka_problem *p, vka_plan *plan)
{
    vkattn_dtype storage = p->cfg.storage;
    for (int r = 0; r < VKA_ROLE_COUNT; r++) plan->role_dtype[r] = VKATTN_DTYPE_F32;
    plan->role_dtype[VKA_ROLE_QUERY] = p->query_dtype;
    plan->role_dtype[VKA_ROLE_KEY] = p->key_dtype;
    plan->role_dtype[VKA_ROLE_VALUE] = p->value_dtype;
    plan->role_dtype[VKA_ROLE_OUTPUT] = p->output_dtype;
    plan->role_dtype[VKA_ROLE_KEY_PADDING_MASK] = VKATTN_DTYPE_BOOL;
    plan->role_dtype[VKA_ROLE_VALID_LENS] = VKATTN_DTYPE_I32;
    plan->role_dtype[VKA_ROLE_ATTN_MASK] =
        p->attn_mask == VKA_ATTN_MASK_BOOL ? VKATTN_DTYPE_BOOL : VKATTN_DTYPE_F32;
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
    const uint64_t I = c->inner, Ik = c->inner_kv, kv = (uint64_t)p->B * p->S;
    elems[VKA_ROLE_QUERY] = vka_problem_query_elems(p);
    elems[VKA_ROLE_KEY] = p->self_attention ? elems[VKA_ROLE_QUERY] : kv * c->kdim;
    elems[VKA_ROLE_VALUE] = p->self_attention ? elems[VKA_ROLE_QUERY] : kv * c->vdim;
    elems[VKA_ROLE_KEY_PADDING_MASK] = p->key_padding_mask ? kv : 0;
    elems[VKA_ROLE_VALID_LENS] = vka_problem_valid_lens_elems(p);
    elems[VKA_ROLE_ATTN_MASK] = vka_problem_attn_mask_elems(p);
    elems[VKA_ROLE_OUTPUT] = vka_problem_output_elems(p);
    elems[VKA_ROLE_WEIGHTS] = vka_problem_weights_elems(p);
    elems[VKA_ROLE_LSE] = p->lse ? (uint64_t)p->B * c->H * p->L : 0;
    elems[VKA_ROLE_W_IN] = (c->packed_in_proj ? I + 2 * Ik : I) * c->E;
    elems[VKA_ROLE_W_K] = c->packed_in_proj ? 0 : Ik * c->kdim;
    elems[VKA_ROLE_W_V] = c->packed_in_proj ? 0 : Ik * c->vdim;
    elems[VKA_ROLE_B_IN] = c->bias ? I + 2 * Ik : 0;
    elems[VKA_ROLE_W_OUT] = (uint64_t)c->E * I;
    elems[VKA_ROLE_B_OUT] = c->bias ? c->E : 0;
    elems[VKA_ROLE_EXTRA_K] = elems[VKA_ROLE_EXTRA_V] = (uint64_t)c->extra_keys * Ik;
    elems[VKA_ROLE_ROPE_FREQ] = c->rope_dim / 2;
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
    plan->chunks = 0;
    plan->key_parts = plan->key_chunks = plan->query_groups = 0;
    plan->qkv_one_matmul = 0;
    memset(plan->workspace_bytes, 0, sizeof plan->workspace_bytes);
    assign_dtypes(p, plan);
    assign_sizes(p, plan);
    plan->path = p->path != VKATTN_PATH_AUTO ? p->path
                 : p->weights != VKATTN_WEIGHTS_NONE ? VKATTN_PATH_UNFUSED
                                                  : VKATTN_PATH_FUSED;
    if (plan->path == VKATTN_PATH_FUSED && p->weights != VKATTN_WEIGHTS_NONE)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "attention weights need the unfused path (the fused kernel never forms them)");
    if (plan->path == VKATTN_PATH_UNFUSED && p->lse)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "the log-sum-exp output needs the fused path");
    if (plan->path != VKATTN_PATH_FUSED && plan->path != VKATTN_PATH_UNFUSED)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "the device plan serves the fused and unfused paths");

    vkattn_status status;
    vka_qkv_layout l;
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

void vka_plan_free(vka_plan *plan)
{
    free(plan->steps);
    free(plan->copies);
    memset(plan, 0, sizeof *plan);
}

uint64_t vka_plan_workspace_total(const vka_plan *plan)
{
    uint64_t total = 0;
    for (int r = VKA_FIRST_WORKSPACE_ROLE; r < VKA_ROLE_COUNT; r++) total += plan->workspace_bytes[r];
    return total;
}
