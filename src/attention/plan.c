#include "attention/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

/* Register tiles of the unfused kernels: each invocation owns TILE x TILE outputs and a 64-wide
 * workgroup is an 8 x 8 grid of invocations (see the .comp headers). */
#define VKA_TILE 4u
#define VKA_GROUP_SIDE 8u
#define VKA_BLOCK (VKA_TILE * VKA_GROUP_SIDE)
#define VKA_SOFTMAX_WG 64u
#define VKA_AVERAGE_WG 64u

static uint32_t ceil_div(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }

int vka_fold_groups(uint64_t total, const uint32_t max[3], uint32_t out[3])
{
    uint64_t x = total < max[0] ? total : max[0];
    if (x == 0) return 0;
    uint64_t rest = (total + x - 1) / x;
    uint64_t y = rest < max[1] ? rest : max[1];
    uint64_t z = (rest + y - 1) / y;
    if (z > max[2]) return 0;
    out[0] = (uint32_t)x, out[1] = (uint32_t)y, out[2] = (uint32_t)z;
    return 1;
}

typedef struct builder {
    const vka_problem *p;
    const vka_plan_limits *limits;
    vka_plan *plan;
    vkattn_error *error;
} builder;

static vkattn_status push_step(builder *b, const vka_step *step, uint64_t groups)
{
    vka_plan *plan = b->plan;
    if (plan->step_count == plan->step_capacity) {
        uint32_t capacity = plan->step_capacity ? plan->step_capacity * 2 : 32;
        vka_step *steps = realloc(plan->steps, capacity * sizeof *steps);
        if (!steps) return vka_error_set(b->error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the plan");
        plan->steps = steps;
        plan->step_capacity = capacity;
    }
    vka_step s = *step;
    if (s.kind == VKA_STEP_DISPATCH && !vka_fold_groups(groups, b->limits->max_group_count, s.groups))
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "stage %s needs %llu workgroups, more than this device's maxComputeWorkGroupCount allows",
                             vkattn_stage_name(s.stage), (unsigned long long)groups);
    plan->steps[plan->step_count++] = s;
    return VKATTN_OK;
}

/* Checks that a buffer bound whole fits the storage-buffer range. */
static vkattn_status check_range(builder *b, const char *what, uint64_t bytes)
{
    if (bytes <= b->limits->max_storage_buffer_range) return VKATTN_OK;
    return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                         "%s needs %llu bytes, more than this device's maxStorageBufferRange (%llu bytes)", what,
                         (unsigned long long)bytes, (unsigned long long)b->limits->max_storage_buffer_range);
}

static vkattn_status reserve_workspace(builder *b, vka_role role, const char *what, uint64_t bytes)
{
    vkattn_status status = check_range(b, what, bytes);
    if (status == VKATTN_OK && bytes > b->plan->workspace_bytes[role]) b->plan->workspace_bytes[role] = bytes;
    return status;
}

/* C(M,N) = A(M,K) · W(N,K)^T + bias: one matmul step. */
typedef struct matmul_args {
    vkattn_stage stage;
    vka_role a, w, bias, c;
    uint32_t M, N, K;
    uint32_t a_offset, lda, w_offset, bias_offset, c_offset, ldc;
    int barrier_before;
} matmul_args;

static vkattn_status add_matmul(builder *b, const matmul_args *m)
{
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = m->stage, .kernel = VKA_KERNEL_MATMUL};
    s.spec[VKA_SPEC_TILE_A] = VKA_TILE;
    s.spec[VKA_SPEC_TILE_B] = VKA_TILE;
    s.bindings[0] = m->a, s.bindings[1] = m->w, s.bindings[2] = m->bias, s.bindings[3] = m->c;
    s.binding_count = 4;
    uint32_t tiles_m = ceil_div(m->M, VKA_BLOCK), tiles_n = ceil_div(m->N, VKA_BLOCK);
    uint64_t groups = (uint64_t)tiles_m * tiles_n;
    s.push.matmul = (vka_matmul_push){
        .M = m->M, .N = m->N, .K = m->K,
        .a_offset = m->a_offset, .lda = m->lda,
        .b_offset = m->w_offset, .ldb = m->K,
        .bias_offset = m->bias_offset,
        .c_offset = m->c_offset, .ldc = m->ldc,
        .has_bias = m->bias != VKA_ROLE_NONE,
        .group_count = (uint32_t)groups, .tiles_n = tiles_n,
    };
    s.barrier_before = m->barrier_before;
    return push_step(b, &s, groups);
}

/* Where the projected Q, K and V live after the input projections. */
typedef struct qkv_layout {
    vka_role q, k, v;
    uint32_t q_offset, q_stride, k_offset, k_stride, v_offset, v_stride;
} qkv_layout;

static vkattn_status add_input_projections(builder *b, qkv_layout *out)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    const uint32_t E = c->E;
    const uint64_t f = sizeof(float);
    vka_role bias = c->bias ? VKA_ROLE_B_IN : VKA_ROLE_NONE;
    vkattn_status status;

    uint64_t fused_bytes = (uint64_t)p->B * p->L * 3 * E * f;
    b->plan->fused_qkv = p->self_attention && fused_bytes <= b->limits->max_storage_buffer_range;
    if (b->plan->fused_qkv) {
        VKA_TRY(reserve_workspace(b, VKA_ROLE_QKV, "the fused Q/K/V projection", fused_bytes));
        matmul_args m = {VKATTN_STAGE_QKV_PROJECTION, VKA_ROLE_QUERY, VKA_ROLE_W_IN, bias, VKA_ROLE_QKV,
                         p->B * p->L, 3 * E, E, 0, E, 0, 0, 0, 3 * E, 0};
        VKA_TRY(add_matmul(b, &m));
        *out = (qkv_layout){VKA_ROLE_QKV, VKA_ROLE_QKV, VKA_ROLE_QKV, 0, 3 * E, E, 3 * E, 2 * E, 3 * E};
        return VKATTN_OK;
    }

    VKA_TRY(reserve_workspace(b, VKA_ROLE_QKV, "the Q projection", (uint64_t)p->B * p->L * E * f));
    VKA_TRY(reserve_workspace(b, VKA_ROLE_K_PROJ, "the K projection", (uint64_t)p->B * p->S * E * f));
    VKA_TRY(reserve_workspace(b, VKA_ROLE_V_PROJ, "the V projection", (uint64_t)p->B * p->S * E * f));
    /* Packed weights: W_Q, W_K, W_V are row blocks of one (3E,E) matrix. */
    int packed = c->packed_in_proj;
    matmul_args q = {VKATTN_STAGE_QKV_PROJECTION, VKA_ROLE_QUERY, VKA_ROLE_W_IN, bias, VKA_ROLE_QKV,
                     p->B * p->L, E, E, 0, E, 0, 0, 0, E, 0};
    matmul_args k = {VKATTN_STAGE_QKV_PROJECTION, VKA_ROLE_KEY, packed ? VKA_ROLE_W_IN : VKA_ROLE_W_K, bias,
                     VKA_ROLE_K_PROJ, p->B * p->S, E, c->kdim, 0, c->kdim, packed ? E * E : 0, E, 0, E, 0};
    matmul_args v = {VKATTN_STAGE_QKV_PROJECTION, VKA_ROLE_VALUE, packed ? VKA_ROLE_W_IN : VKA_ROLE_W_V, bias,
                     VKA_ROLE_V_PROJ, p->B * p->S, E, c->vdim, 0, c->vdim, packed ? 2 * E * E : 0, 2 * E, 0, E, 0};
    VKA_TRY(add_matmul(b, &q));
    VKA_TRY(add_matmul(b, &k));
    VKA_TRY(add_matmul(b, &v));
    *out = (qkv_layout){VKA_ROLE_QKV, VKA_ROLE_K_PROJ, VKA_ROLE_V_PROJ, 0, E, 0, E, 0, E};
    return VKATTN_OK;
fail:
    return status;
}

static uint32_t mask_flags(const vka_problem *p)
{
    uint32_t f = 0;
    if (p->causal) f |= VKA_MASK_CAUSAL;
    if (p->key_padding_mask) f |= VKA_MASK_KEY_PADDING;
    if (p->valid_lens == VKA_VALID_LENS_PER_BATCH) f |= VKA_MASK_VALID_LENS_PER_BATCH;
    if (p->valid_lens == VKA_VALID_LENS_PER_QUERY) f |= VKA_MASK_VALID_LENS_PER_QUERY;
    if (p->attn_mask == VKA_ATTN_MASK_BOOL) f |= VKA_MASK_ATTN_BOOL;
    if (p->attn_mask == VKA_ATTN_MASK_FLOAT) f |= VKA_MASK_ATTN_FLOAT;
    if (p->attn_mask_per_head) f |= VKA_MASK_ATTN_PER_HEAD;
    return f;
}

/* One chunk of score rows: heads [bh_begin, +bh_count), queries [i_begin, +i_count). */
typedef struct chunk {
    uint32_t bh_begin, bh_count, i_begin, i_count;
} chunk;

static vkattn_status add_chunk(builder *b, const qkv_layout *qkv, vka_role probs, const chunk *ch)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    vkattn_status status;

    vka_step scores = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_SCORES, .kernel = VKA_KERNEL_SCORES,
                       .barrier_before = 1};
    scores.spec[VKA_SPEC_TILE_A] = VKA_TILE;
    scores.spec[VKA_SPEC_TILE_B] = VKA_TILE;
    vka_role roles[] = {qkv->q,
                        qkv->k,
                        c->extra_keys ? VKA_ROLE_EXTRA_K : VKA_ROLE_NONE,
                        probs,
                        p->key_padding_mask ? VKA_ROLE_KEY_PADDING_MASK : VKA_ROLE_NONE,
                        p->valid_lens ? VKA_ROLE_VALID_LENS : VKA_ROLE_NONE,
                        p->attn_mask ? VKA_ROLE_ATTN_MASK : VKA_ROLE_NONE};
    memcpy(scores.bindings, roles, sizeof roles);
    scores.binding_count = 7;
    uint32_t tiles_i = ceil_div(ch->i_count, VKA_BLOCK), tiles_j = ceil_div(p->S_ext, VKA_BLOCK);
    uint64_t groups = (uint64_t)ch->bh_count * tiles_i * tiles_j;
    scores.push.scores = (vka_scores_push){
        .L = p->L, .S = p->S, .S_ext = p->S_ext, .D = c->D, .H = c->H,
        .q_offset = qkv->q_offset, .q_stride = qkv->q_stride,
        .k_offset = qkv->k_offset, .k_stride = qkv->k_stride,
        .extra_stride = c->E,
        .bh_begin = ch->bh_begin, .bh_count = ch->bh_count, .i_begin = ch->i_begin, .i_count = ch->i_count,
        .scale = 1.0f / sqrtf((float)c->D),
        .mask_flags = mask_flags(p), .mask_heads = c->H,
        .group_count = (uint32_t)groups, .tiles_j = tiles_j, .tiles_i = tiles_i,
    };
    VKA_TRY(push_step(b, &scores, groups));

    uint32_t rows = ch->bh_count * ch->i_count;
    vka_step softmax = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_SOFTMAX, .kernel = VKA_KERNEL_SOFTMAX,
                        .barrier_before = 1, .binding_count = 1};
    softmax.spec[VKA_SPEC_WG_SIZE] = VKA_SOFTMAX_WG;
    softmax.bindings[0] = probs;
    softmax.push.softmax = (vka_softmax_push){.rows = rows, .S_ext = p->S_ext, .group_count = rows};
    VKA_TRY(push_step(b, &softmax, rows));

    if (p->weights == VKA_WEIGHTS_AVERAGED) {
        uint32_t b_begin = ch->bh_begin / c->H, b_end = (ch->bh_begin + ch->bh_count - 1) / c->H;
        uint64_t items = (uint64_t)(b_end - b_begin + 1) * ch->i_count * p->S_ext;
        vka_step avg = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_AVERAGE_HEADS, .kernel = VKA_KERNEL_AVERAGE_HEADS,
                        .barrier_before = 1, .binding_count = 2};
        avg.spec[VKA_SPEC_WG_SIZE] = VKA_AVERAGE_WG;
        avg.bindings[0] = probs, avg.bindings[1] = VKA_ROLE_WEIGHTS;
        uint64_t avg_groups = (items + VKA_AVERAGE_WG - 1) / VKA_AVERAGE_WG;
        avg.push.average = (vka_average_push){
            .H = c->H, .L = p->L, .S_ext = p->S_ext,
            .bh_begin = ch->bh_begin, .bh_count = ch->bh_count, .i_begin = ch->i_begin, .i_count = ch->i_count,
            .b_begin = b_begin, .b_count = b_end - b_begin + 1,
            .inv_heads = 1.0f / (float)c->H, .group_count = (uint32_t)avg_groups,
        };
        VKA_TRY(push_step(b, &avg, avg_groups));
    }

    vka_step pv = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_PV, .kernel = VKA_KERNEL_PV, .barrier_before = 1,
                   .binding_count = 4};
    pv.spec[VKA_SPEC_TILE_A] = VKA_TILE;
    pv.spec[VKA_SPEC_TILE_B] = VKA_TILE;
    pv.bindings[0] = probs, pv.bindings[1] = qkv->v, pv.bindings[2] = c->extra_keys ? VKA_ROLE_EXTRA_V : VKA_ROLE_NONE, pv.bindings[3] = VKA_ROLE_CTX;
    uint32_t tiles_d = ceil_div(c->D, VKA_BLOCK);
    uint64_t pv_groups = (uint64_t)ch->bh_count * tiles_i * tiles_d;
    pv.push.pv = (vka_pv_push){
        .L = p->L, .S = p->S, .S_ext = p->S_ext, .D = c->D, .H = c->H,
        .v_offset = qkv->v_offset, .v_stride = qkv->v_stride,
        .extra_stride = c->E, .ctx_stride = c->E,
        .bh_begin = ch->bh_begin, .bh_count = ch->bh_count, .i_begin = ch->i_begin, .i_count = ch->i_count,
        .group_count = (uint32_t)pv_groups, .tiles_d = tiles_d, .tiles_i = tiles_i,
    };
    VKA_TRY(push_step(b, &pv, pv_groups));
    b->plan->chunks++;
    return VKATTN_OK;
fail:
    return status;
}

/* Splits the B·H·L score rows into chunks whose P block fits `budget` bytes and records them. */
static vkattn_status add_attention(builder *b, const qkv_layout *qkv)
{
    const vka_problem *p = b->p;
    const uint32_t BH = p->B * p->cfg.H;
    const uint64_t row_bytes = (uint64_t)p->S_ext * sizeof(float);
    vkattn_status status;

    if (p->weights == VKA_WEIGHTS_PER_HEAD) {
        /* The caller's (B,H,L,S') weights tensor is the probability buffer: one chunk. */
        VKA_TRY(check_range(b, "the per-head attention weights", (uint64_t)BH * p->L * row_bytes));
        chunk all = {0, BH, 0, p->L};
        return add_chunk(b, qkv, VKA_ROLE_WEIGHTS, &all);
    }
    if (p->weights == VKA_WEIGHTS_AVERAGED) {
        VKA_TRY(check_range(b, "the averaged attention weights", (uint64_t)p->B * p->L * row_bytes));
        vka_step zero = {.kind = VKA_STEP_ZERO, .stage = VKATTN_STAGE_AVERAGE_HEADS, .binding_count = 1};
        zero.bindings[0] = VKA_ROLE_WEIGHTS;
        VKA_TRY(push_step(b, &zero, 0));
    }

    uint64_t budget = b->limits->max_storage_buffer_range;
    if (b->limits->scores_budget_bytes && b->limits->scores_budget_bytes < budget)
        budget = b->limits->scores_budget_bytes;
    if (row_bytes > budget)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "one row of %u scores (%llu bytes) exceeds the score buffer limit of %llu bytes",
                             p->S_ext, (unsigned long long)row_bytes, (unsigned long long)budget);
    uint64_t head_bytes = (uint64_t)p->L * row_bytes;
    if (head_bytes <= budget) {
        uint64_t heads = budget / head_bytes;
        uint32_t per = heads < BH ? (uint32_t)heads : BH;
        VKA_TRY(reserve_workspace(b, VKA_ROLE_SCORES, "the score buffer", per * head_bytes));
        for (uint32_t bh = 0; bh < BH; bh += per) {
            chunk ch = {bh, BH - bh < per ? BH - bh : per, 0, p->L};
            VKA_TRY(add_chunk(b, qkv, VKA_ROLE_SCORES, &ch));
        }
    } else {
        uint32_t rows = (uint32_t)(budget / row_bytes);
        VKA_TRY(reserve_workspace(b, VKA_ROLE_SCORES, "the score buffer", rows * row_bytes));
        for (uint32_t bh = 0; bh < BH; bh++) {
            for (uint32_t i = 0; i < p->L; i += rows) {
                chunk ch = {bh, 1, i, p->L - i < rows ? p->L - i : rows};
                VKA_TRY(add_chunk(b, qkv, VKA_ROLE_SCORES, &ch));
            }
        }
    }
    return VKATTN_OK;
fail:
    return status;
}

/* The caller's tensors and the layer's weights are bound whole: each must fit the range. */
static vkattn_status check_bound_tensors(builder *b)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    const uint64_t f = sizeof(float);
    vkattn_status status;
    VKA_TRY(check_range(b, "query", vka_problem_query_elems(p) * f));
    VKA_TRY(check_range(b, "key", vka_problem_key_elems(p) * f));
    VKA_TRY(check_range(b, "value", vka_problem_value_elems(p) * f));
    VKA_TRY(check_range(b, "output", vka_problem_output_elems(p) * f));
    VKA_TRY(check_range(b, "attn_mask", vka_problem_attn_mask_elems(p) * f));
    VKA_TRY(check_range(b, "the attention output (ctx)", (uint64_t)p->B * p->L * c->E * f));
    VKA_TRY(reserve_workspace(b, VKA_ROLE_CTX, "the attention output (ctx)", (uint64_t)p->B * p->L * c->E * f));
    VKA_TRY(check_range(b, "in_proj_weight", (uint64_t)(c->packed_in_proj ? 3 : 1) * c->E * c->E * f));
    VKA_TRY(check_range(b, "k_proj_weight", (uint64_t)c->E * c->kdim * f));
    VKA_TRY(check_range(b, "v_proj_weight", (uint64_t)c->E * c->vdim * f));
fail:
    return status;
}

vkattn_status vka_plan_build(const vka_problem *p, const vka_plan_limits *limits, vka_plan *plan, vkattn_error *error)
{
    builder b = {p, limits, plan, error};
    plan->step_count = 0;
    plan->chunks = 0;
    plan->fused_qkv = 0;
    memset(plan->workspace_bytes, 0, sizeof plan->workspace_bytes);
    plan->path = VKATTN_PATH_UNFUSED;

    vkattn_status status;
    qkv_layout qkv;
    VKA_TRY(check_bound_tensors(&b));
    VKA_TRY(add_input_projections(&b, &qkv));
    VKA_TRY(add_attention(&b, &qkv));
    matmul_args out = {VKATTN_STAGE_OUT_PROJECTION, VKA_ROLE_CTX, VKA_ROLE_W_OUT,
                       p->cfg.bias ? VKA_ROLE_B_OUT : VKA_ROLE_NONE, VKA_ROLE_OUTPUT,
                       p->B * p->L, p->cfg.E, p->cfg.E, 0, p->cfg.E, 0, 0, 0, p->cfg.E, 1};
    VKA_TRY(add_matmul(&b, &out));
    return VKATTN_OK;
fail:
    return status;
}

void vka_plan_free(vka_plan *plan)
{
    free(plan->steps);
    memset(plan, 0, sizeof *plan);
}

uint64_t vka_plan_workspace_total(const vka_plan *plan)
{
    uint64_t total = 0;
    for (int r = VKA_FIRST_WORKSPACE_ROLE; r < VKA_ROLE_COUNT; r++) total += plan->workspace_bytes[r];
    return total;
}
