#include "attention/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"

const char *vka_role_name(vka_role role)
{
    static const char *const names[VKA_ROLE_COUNT] = {
        "none",    "query",   "key",     "value",  "key_padding_mask", "valid_lens", "attn_mask",
        "output",  "weights", "lse",     "w_in",   "w_k",              "w_v",        "b_in",
        "w_out",   "b_out",   "extra_k", "extra_v", "qkv",             "k_proj",     "v_proj",
        "scores",  "ctx",
    };
    return (unsigned)role < VKA_ROLE_COUNT ? names[role] : "unknown";
}

static uint32_t ceil_div(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }
static uint64_t ceil_div64(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

int vka_fold_groups(uint64_t total, const uint32_t max[3], uint32_t out[3])
{
    uint64_t x = total < max[0] ? total : max[0];
    if (x == 0) return 0;
    uint64_t rest = ceil_div64(total, x);
    uint64_t y = rest < max[1] ? rest : max[1];
    uint64_t z = ceil_div64(rest, y);
    if (z > max[2]) return 0;
    out[0] = (uint32_t)x, out[1] = (uint32_t)y, out[2] = (uint32_t)z;
    return 1;
}

/* The path a request resolves to (AUTO: fused unless attention weights are wanted). */
static vkattn_path vka_plan_resolve_path(const vka_problem *p)
{
    if (p->path != VKATTN_PATH_AUTO) return p->path;
    return p->weights != VKA_WEIGHTS_NONE ? VKATTN_PATH_UNFUSED : VKATTN_PATH_FUSED;
}

typedef struct builder {
    const vka_problem *p;
    const vka_plan_limits *limits;
    const vka_profile *profile;
    vka_plan *plan;
    vkattn_error *error;
} builder;

static vkattn_status grow(builder *b, void **array, uint32_t *capacity, uint32_t count, size_t size)
{
    if (count < *capacity) return VKATTN_OK;
    uint32_t n = *capacity ? *capacity * 2 : 32;
    void *bigger = vka_realloc(b->limits->faults, *array, n * size);
    if (!bigger) return vka_error_set(b->error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the plan");
    *array = bigger;
    *capacity = n;
    return VKATTN_OK;
}

static uint64_t role_bytes(const builder *b, vka_role role, uint64_t elems)
{
    return elems * vkattn_dtype_size(b->plan->role_dtype[role]);
}

/* Adds a step; dispatches get their workgroups folded into the device's grid. */
static vkattn_status push_step(builder *b, const vka_step *step, uint64_t invocations, uint32_t wg)
{
    vka_plan *plan = b->plan;
    vkattn_status status = grow(b, (void **)&plan->steps, &plan->step_capacity, plan->step_count, sizeof *plan->steps);
    if (status != VKATTN_OK) return status;
    vka_step s = *step;
    if (s.kind == VKA_STEP_DISPATCH) {
        uint64_t groups = ceil_div64(invocations, wg);
        if (groups > UINT32_MAX || !vka_fold_groups(groups, b->limits->max_group_count, s.groups))
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "stage %s needs %llu workgroups, more than this device's maxComputeWorkGroupCount allows",
                                 vkattn_stage_name(s.stage), (unsigned long long)groups);
    }
    plan->steps[plan->step_count++] = s;
    return VKATTN_OK;
}

/* A buffer bound whole must fit the storage-buffer range; one read through a texel view must
 * also have at most maxTexelBufferElements texels. */
static vkattn_status check_binding(builder *b, const char *what, uint64_t bytes, uint64_t texels)
{
    if (bytes > b->limits->max_storage_buffer_range)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "%s needs %llu bytes, more than this device's maxStorageBufferRange (%llu bytes)", what,
                             (unsigned long long)bytes, (unsigned long long)b->limits->max_storage_buffer_range);
    if (texels > b->limits->max_texel_elements)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "%s has %llu texels, more than this device's maxTexelBufferElements (%llu)", what,
                             (unsigned long long)texels, (unsigned long long)b->limits->max_texel_elements);
    return VKATTN_OK;
}

static vkattn_status reserve_workspace(builder *b, vka_role role, const char *what, uint64_t elems)
{
    uint64_t bytes = role_bytes(b, role, elems);
    vkattn_status status = check_binding(b, what, bytes, elems);
    if (status == VKATTN_OK && bytes > b->plan->workspace_bytes[role]) b->plan->workspace_bytes[role] = bytes;
    return status;
}

/* C(M,N) = A(M,K) · W(N,K)^T + bias, all offsets in elements; `vec` says whether A and W are read
 * four elements per texel (then K, lda and the offsets are multiples of 4). */
typedef struct matmul_args {
    vkattn_stage stage;
    vka_role a, w, bias, c;
    uint32_t M, N, K;
    uint32_t a_offset, lda, w_offset, bias_offset, c_offset, ldc;
    uint32_t rows_per_batch, batch_stride; /* C row m -> (m / rows_per_batch) * batch_stride + m % rows_per_batch */
    int barrier_before;
} matmul_args;

static vkattn_status add_matmul(builder *b, const matmul_args *m)
{
    const vka_profile *pr = b->profile;
    uint32_t vec = m->K % 4 == 0 && m->lda % 4 == 0 && m->a_offset % 4 == 0 && m->w_offset % 4 == 0 ? 4 : 1;
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = m->stage, .kernel = VKA_KERNEL_MATMUL,
                  .f16_out = b->plan->role_dtype[m->c] == VKATTN_DTYPE_F16, .barrier_before = m->barrier_before};
    s.spec[VKA_SPEC_WG_SIZE] = pr->matmul_wg;
    s.spec[VKA_SPEC_TILE_A] = pr->matmul_tile_m;
    s.spec[VKA_SPEC_TILE_B] = pr->matmul_tile_n;
    s.spec[VKA_SPEC_VEC] = vec;
    vka_role roles[4] = {m->a, m->w, m->bias, m->c};
    uint8_t views[4] = {(uint8_t)vec, (uint8_t)vec, VKA_VIEW_SCALAR, VKA_VIEW_BUFFER};
    memcpy(s.bindings, roles, sizeof roles);
    memcpy(s.views, views, sizeof views);
    s.binding_count = 4;
    uint32_t tiles_m = ceil_div(m->M, pr->matmul_tile_m), tiles_n = ceil_div(m->N, pr->matmul_tile_n);
    uint64_t tiles = (uint64_t)tiles_m * tiles_n;
    s.push.matmul = (vka_matmul_push){
        .M = m->M, .N = m->N, .K = m->K / vec,
        .a_offset = m->a_offset / vec, .lda = m->lda / vec,
        .b_offset = m->w_offset / vec, .ldb = m->K / vec,
        .bias_offset = m->bias_offset,
        .c_offset = m->c_offset, .ldc = m->ldc,
        .rows_per_batch = m->rows_per_batch, .batch_stride = m->batch_stride,
        .has_bias = m->bias != VKA_ROLE_NONE,
        .tiles_n = tiles_n,
    };
    return push_step(b, &s, tiles, pr->matmul_wg);
}

/* Where the projected Q, K and V live (offsets and strides in elements). */
typedef struct qkv_layout {
    vka_role q, k, v;
    uint32_t q_offset, q_stride, q_rows;
    uint32_t k_offset, k_stride, v_offset, v_stride, kv_rows;
} qkv_layout;

/* Puts the extra keys and values after each batch item's S projected ones: one copy step for
 * K and one for V, each with a region per batch item (per row when K and V share the fused QKV
 * buffer). The barrier before each copy is needed: validation (rightly) counts a dispatch's
 * storage writes as covering its whole buffer. */
static vkattn_status add_extra_key_copies(builder *b, const qkv_layout *l)
{
    const vka_problem *p = b->p;
    const uint32_t I = p->cfg.inner, extra = p->cfg.extra_keys;
    if (extra == 0) return VKATTN_OK;
    for (int kv = 0; kv < 2; kv++) {
        vka_plan *plan = b->plan;
        uint32_t offset = kv ? l->v_offset : l->k_offset, stride = kv ? l->v_stride : l->k_stride;
        uint32_t rows_per_region = stride == I ? extra : 1; /* contiguous rows when K or V is alone */
        vka_step s = {.kind = VKA_STEP_COPY, .stage = VKATTN_STAGE_QKV_PROJECTION, .binding_count = 2,
                      .copy_first = plan->copy_count, .barrier_before = 1};
        s.bindings[0] = kv ? VKA_ROLE_EXTRA_V : VKA_ROLE_EXTRA_K;
        s.bindings[1] = kv ? l->v : l->k;
        for (uint32_t batch = 0; batch < p->B; batch++) {
            for (uint32_t e = 0; e < extra; e += rows_per_region) {
                vkattn_status status =
                    grow(b, (void **)&plan->copies, &plan->copy_capacity, plan->copy_count, sizeof *plan->copies);
                if (status != VKATTN_OK) return status;
                uint64_t row = (uint64_t)batch * l->kv_rows + p->S + e;
                plan->copies[plan->copy_count++] =
                    (vka_copy){(uint64_t)e * I, offset + row * stride, (uint64_t)I * rows_per_region};
                s.copy_count++;
            }
        }
        vkattn_status status = push_step(b, &s, 0, 1);
        if (status != VKATTN_OK) return status;
    }
    return VKATTN_OK;
}

static vkattn_status add_input_projections(builder *b, qkv_layout *out)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    /* E: the query's features; I: the projected width (all heads, or the active ones). */
    const uint32_t E = c->E, I = c->inner, B = p->B, L = p->L, S = p->S, S_ext = p->S_ext;
    vka_role bias = c->bias ? VKA_ROLE_B_IN : VKA_ROLE_NONE;
    vkattn_status status;

    uint64_t fused_elems = (uint64_t)B * S_ext * 3 * I;
    b->plan->fused_qkv =
        p->self_attention && role_bytes(b, VKA_ROLE_QKV, fused_elems) <= b->limits->max_storage_buffer_range;
    if (b->plan->fused_qkv) {
        VKA_TRY(reserve_workspace(b, VKA_ROLE_QKV, "the fused Q/K/V projection", fused_elems));
        matmul_args m = {VKATTN_STAGE_QKV_PROJECTION, VKA_ROLE_QUERY, VKA_ROLE_W_IN, bias, VKA_ROLE_QKV,
                         B * L, 3 * I, E, 0, E, 0, 0, 0, 3 * I, L, S_ext, 0};
        VKA_TRY(add_matmul(b, &m));
        *out = (qkv_layout){VKA_ROLE_QKV, VKA_ROLE_QKV, VKA_ROLE_QKV, 0, 3 * I, S_ext, I, 3 * I, 2 * I, 3 * I, S_ext};
    } else {
        VKA_TRY(reserve_workspace(b, VKA_ROLE_QKV, "the Q projection", (uint64_t)B * L * I));
        VKA_TRY(reserve_workspace(b, VKA_ROLE_K_PROJ, "the K projection", (uint64_t)B * S_ext * I));
        VKA_TRY(reserve_workspace(b, VKA_ROLE_V_PROJ, "the V projection", (uint64_t)B * S_ext * I));
        /* Packed weights: W_Q, W_K, W_V are row blocks of one (3I,E) matrix. */
        int packed = c->packed_in_proj;
        matmul_args q = {VKATTN_STAGE_QKV_PROJECTION, VKA_ROLE_QUERY, VKA_ROLE_W_IN, bias, VKA_ROLE_QKV,
                         B * L, I, E, 0, E, 0, 0, 0, I, L, L, 0};
        matmul_args k = {VKATTN_STAGE_QKV_PROJECTION, VKA_ROLE_KEY, packed ? VKA_ROLE_W_IN : VKA_ROLE_W_K, bias,
                         VKA_ROLE_K_PROJ, B * S, I, c->kdim, 0, c->kdim, packed ? I * E : 0, I, 0, I, S, S_ext, 0};
        matmul_args v = {VKATTN_STAGE_QKV_PROJECTION, VKA_ROLE_VALUE, packed ? VKA_ROLE_W_IN : VKA_ROLE_W_V, bias,
                         VKA_ROLE_V_PROJ, B * S, I, c->vdim, 0, c->vdim, packed ? 2 * I * E : 0, 2 * I, 0, I, S, S_ext, 0};
        VKA_TRY(add_matmul(b, &q));
        VKA_TRY(add_matmul(b, &k));
        VKA_TRY(add_matmul(b, &v));
        *out = (qkv_layout){VKA_ROLE_QKV, VKA_ROLE_K_PROJ, VKA_ROLE_V_PROJ, 0, I, L, 0, I, 0, I, S_ext};
    }
    return add_extra_key_copies(b, out);
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

/* Texel width of the attention kernels' Q/K/V reads: whole vec4s when the head dim allows. */
static uint32_t attention_vec(const vka_problem *p) { return p->cfg.D % 4 == 0 ? 4 : 1; }

static vkattn_status add_fused(builder *b, const qkv_layout *l)
{
    const vka_problem *p = b->p;
    const vka_profile *pr = b->profile;
    const uint32_t vec = attention_vec(p), D = p->cfg.D, BH = p->B * p->cfg.H_active;
    /* The kernel derives the same q_blocks from L and TILE_A. */
    const uint32_t tile_q = vka_profile_fused_tile_q(pr, D), q_blocks = ceil_div(p->L, tile_q);
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_FUSED, .kernel = VKA_KERNEL_FUSED,
                  .f16_out = b->plan->role_dtype[VKA_ROLE_CTX] == VKATTN_DTYPE_F16, .barrier_before = 1};
    s.spec[VKA_SPEC_WG_SIZE] = pr->fused_wg;
    s.spec[VKA_SPEC_TILE_A] = tile_q;
    s.spec[VKA_SPEC_TILE_B] = pr->fused_tile_k;
    s.spec[VKA_SPEC_VEC] = vec;
    s.spec[VKA_SPEC_DV] = D / vec;
    s.spec[VKA_SPEC_ATTN_MASK] = p->attn_mask != VKA_ATTN_MASK_NONE;
    vka_role roles[8] = {l->q,
                         l->k,
                         l->v,
                         VKA_ROLE_CTX,
                         p->key_padding_mask ? VKA_ROLE_KEY_PADDING_MASK : VKA_ROLE_NONE,
                         p->valid_lens ? VKA_ROLE_VALID_LENS : VKA_ROLE_NONE,
                         p->attn_mask ? VKA_ROLE_ATTN_MASK : VKA_ROLE_NONE,
                         p->lse ? VKA_ROLE_LSE : VKA_ROLE_NONE};
    uint8_t views[8] = {(uint8_t)vec, (uint8_t)vec, (uint8_t)vec, 0, 0, 0, 0, 0};
    memcpy(s.bindings, roles, sizeof roles);
    memcpy(s.views, views, sizeof views);
    s.binding_count = 8;
    uint64_t invocations = (uint64_t)BH * q_blocks;
    s.push.fused = (vka_fused_push){
        .L = p->L, .S = p->S, .H = p->cfg.H_active, .BH = BH,
        .q_offset = l->q_offset / vec, .q_stride = l->q_stride / vec, .q_rows = l->q_rows,
        .k_offset = l->k_offset / vec, .k_stride = l->k_stride / vec,
        .v_offset = l->v_offset / vec, .v_stride = l->v_stride / vec, .kv_rows = l->kv_rows,
        .extra_keys = p->cfg.extra_keys, .ctx_stride = p->cfg.inner,
        .scale = 1.0f / sqrtf((float)D),
        .mask_flags = mask_flags(p), .mask_heads = p->cfg.H, .has_lse = p->lse != 0,
    };
    return push_step(b, &s, invocations, pr->fused_wg);
}

/* One chunk of score rows: heads [bh_begin, +bh_count), queries [i_begin, +i_count). */
typedef struct chunk {
    uint32_t bh_begin, bh_count, i_begin, i_count;
} chunk;

static vkattn_status add_chunk(builder *b, const qkv_layout *l, vka_role probs, const chunk *ch)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    const vka_profile *pr = b->profile;
    const uint32_t vec = attention_vec(p), DV = c->D / vec;
    vkattn_status status;

    vka_step scores = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_SCORES, .kernel = VKA_KERNEL_SCORES,
                       .barrier_before = 1, .binding_count = 6};
    scores.spec[VKA_SPEC_WG_SIZE] = pr->scores_wg;
    scores.spec[VKA_SPEC_TILE_A] = pr->scores_tile_q;
    scores.spec[VKA_SPEC_TILE_B] = pr->scores_tile_k;
    scores.spec[VKA_SPEC_VEC] = vec;
    scores.spec[VKA_SPEC_DV] = DV;
    scores.spec[VKA_SPEC_ATTN_MASK] = p->attn_mask != VKA_ATTN_MASK_NONE;
    vka_role roles[6] = {l->q,
                         l->k,
                         probs,
                         p->key_padding_mask ? VKA_ROLE_KEY_PADDING_MASK : VKA_ROLE_NONE,
                         p->valid_lens ? VKA_ROLE_VALID_LENS : VKA_ROLE_NONE,
                         p->attn_mask ? VKA_ROLE_ATTN_MASK : VKA_ROLE_NONE};
    memcpy(scores.bindings, roles, sizeof roles);
    scores.views[0] = scores.views[1] = (uint8_t)vec;
    uint32_t tiles_i = ceil_div(ch->i_count, pr->scores_tile_q), tiles_j = ceil_div(p->S_ext, pr->scores_tile_k);
    uint64_t invocations = (uint64_t)ch->bh_count * tiles_i * tiles_j;
    scores.push.scores = (vka_scores_push){
        .L = p->L, .S = p->S, .S_ext = p->S_ext, .H = c->H_active,
        .q_offset = l->q_offset / vec, .q_stride = l->q_stride / vec, .q_rows = l->q_rows,
        .k_offset = l->k_offset / vec, .k_stride = l->k_stride / vec, .kv_rows = l->kv_rows,
        .bh_begin = ch->bh_begin, .bh_count = ch->bh_count, .i_begin = ch->i_begin, .i_count = ch->i_count,
        .scale = 1.0f / sqrtf((float)c->D),
        .mask_flags = mask_flags(p), .mask_heads = c->H,
        .tiles_j = tiles_j, .tiles_i = tiles_i,
    };
    VKA_TRY(push_step(b, &scores, invocations, pr->scores_wg));

    uint32_t rows = ch->bh_count * ch->i_count;
    vka_step softmax = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_SOFTMAX, .kernel = VKA_KERNEL_SOFTMAX,
                        .barrier_before = 1, .binding_count = 1};
    softmax.spec[VKA_SPEC_WG_SIZE] = pr->softmax_wg;
    softmax.bindings[0] = probs;
    softmax.push.softmax = (vka_softmax_push){.rows = rows, .S_ext = p->S_ext, .group_count = rows};
    VKA_TRY(push_step(b, &softmax, (uint64_t)rows * pr->softmax_wg, pr->softmax_wg));

    if (p->weights == VKA_WEIGHTS_AVERAGED) {
        const uint32_t wg = 64;
        uint32_t b_begin = ch->bh_begin / c->H_active, b_end = (ch->bh_begin + ch->bh_count - 1) / c->H_active;
        uint64_t items = (uint64_t)(b_end - b_begin + 1) * ch->i_count * p->S_ext;
        vka_step avg = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_AVERAGE_HEADS,
                        .kernel = VKA_KERNEL_AVERAGE_HEADS, .barrier_before = 1, .binding_count = 2};
        avg.spec[VKA_SPEC_WG_SIZE] = wg;
        avg.bindings[0] = probs, avg.bindings[1] = VKA_ROLE_WEIGHTS;
        avg.push.average = (vka_average_push){
            .H = c->H_active, .L = p->L, .S_ext = p->S_ext,
            .bh_begin = ch->bh_begin, .bh_count = ch->bh_count, .i_begin = ch->i_begin, .i_count = ch->i_count,
            .b_begin = b_begin, .b_count = b_end - b_begin + 1,
            .inv_heads = 1.0f / (float)c->H_active, .group_count = (uint32_t)ceil_div64(items, wg),
        };
        VKA_TRY(push_step(b, &avg, items, wg));
    }

    vka_step pv = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_PV, .kernel = VKA_KERNEL_PV,
                   .f16_out = b->plan->role_dtype[VKA_ROLE_CTX] == VKATTN_DTYPE_F16, .barrier_before = 1,
                   .binding_count = 3};
    pv.spec[VKA_SPEC_WG_SIZE] = pr->pv_wg;
    pv.spec[VKA_SPEC_TILE_A] = pr->pv_tile_q;
    pv.spec[VKA_SPEC_TILE_B] = pr->pv_tile_d;
    pv.spec[VKA_SPEC_VEC] = vec;
    pv.spec[VKA_SPEC_DV] = DV;
    pv.bindings[0] = probs, pv.bindings[1] = l->v, pv.bindings[2] = VKA_ROLE_CTX;
    pv.views[0] = VKA_VIEW_SCALAR, pv.views[1] = (uint8_t)vec;
    uint32_t pv_tiles_i = ceil_div(ch->i_count, pr->pv_tile_q), tiles_d = ceil_div(DV, pr->pv_tile_d);
    uint64_t pv_invocations = (uint64_t)ch->bh_count * pv_tiles_i * tiles_d;
    pv.push.pv = (vka_pv_push){
        .L = p->L, .S_ext = p->S_ext, .H = c->H_active,
        .v_offset = l->v_offset / vec, .v_stride = l->v_stride / vec, .kv_rows = l->kv_rows,
        .ctx_stride = c->inner,
        .bh_begin = ch->bh_begin, .bh_count = ch->bh_count, .i_begin = ch->i_begin, .i_count = ch->i_count,
        .tiles_d = tiles_d, .tiles_i = pv_tiles_i,
    };
    VKA_TRY(push_step(b, &pv, pv_invocations, pr->pv_wg));
    b->plan->chunks++;
    return VKATTN_OK;
fail:
    return status;
}

/* Splits the B·H·L score rows into chunks whose probability block fits the budget. */
static vkattn_status add_unfused(builder *b, const qkv_layout *l)
{
    const vka_problem *p = b->p;
    const uint32_t BH = p->B * p->cfg.H_active;
    const uint64_t row = p->S_ext; /* floats per score row */
    vkattn_status status;

    if (p->weights == VKA_WEIGHTS_PER_HEAD) {
        /* The caller's (B,H,L,S') weights tensor is the probability buffer: one chunk. */
        uint64_t elems = (uint64_t)BH * p->L * row;
        VKA_TRY(check_binding(b, "the per-head attention weights", elems * 4, elems));
        chunk all = {0, BH, 0, p->L};
        return add_chunk(b, l, VKA_ROLE_WEIGHTS, &all);
    }
    if (p->weights == VKA_WEIGHTS_AVERAGED) {
        VKA_TRY(check_binding(b, "the averaged attention weights", (uint64_t)p->B * p->L * row * 4, 0));
        vka_step zero = {.kind = VKA_STEP_ZERO, .stage = VKATTN_STAGE_AVERAGE_HEADS, .binding_count = 1,
                         .barrier_before = 0};
        zero.bindings[0] = VKA_ROLE_WEIGHTS;
        VKA_TRY(push_step(b, &zero, 0, 1));
    }

    uint64_t budget = b->limits->max_storage_buffer_range;
    if (b->limits->scores_budget_bytes && b->limits->scores_budget_bytes < budget) budget = b->limits->scores_budget_bytes;
    if (b->limits->max_texel_elements * 4 < budget) budget = b->limits->max_texel_elements * 4;
    if (row * 4 > budget)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "one row of %u scores (%llu bytes) exceeds the score buffer limit of %llu bytes", p->S_ext,
                             (unsigned long long)(row * 4), (unsigned long long)budget);
    uint64_t head_bytes = (uint64_t)p->L * row * 4;
    if (head_bytes <= budget) {
        uint64_t heads = budget / head_bytes;
        uint32_t per = heads < BH ? (uint32_t)heads : BH;
        VKA_TRY(reserve_workspace(b, VKA_ROLE_SCORES, "the score buffer", (uint64_t)per * p->L * row));
        for (uint32_t bh = 0; bh < BH; bh += per) {
            chunk ch = {bh, BH - bh < per ? BH - bh : per, 0, p->L};
            VKA_TRY(add_chunk(b, l, VKA_ROLE_SCORES, &ch));
        }
    } else {
        uint32_t rows = (uint32_t)(budget / (row * 4));
        VKA_TRY(reserve_workspace(b, VKA_ROLE_SCORES, "the score buffer", (uint64_t)rows * row));
        for (uint32_t bh = 0; bh < BH; bh++) {
            for (uint32_t i = 0; i < p->L; i += rows) {
                chunk ch = {bh, 1, i, p->L - i < rows ? p->L - i : rows};
                VKA_TRY(add_chunk(b, l, VKA_ROLE_SCORES, &ch));
            }
        }
    }
    return VKATTN_OK;
fail:
    return status;
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
    const vka_role stored[] = {VKA_ROLE_W_IN,    VKA_ROLE_W_K,    VKA_ROLE_W_V,   VKA_ROLE_W_OUT,
                               VKA_ROLE_EXTRA_K, VKA_ROLE_EXTRA_V, VKA_ROLE_QKV,  VKA_ROLE_K_PROJ,
                               VKA_ROLE_V_PROJ,  VKA_ROLE_CTX};
    for (size_t i = 0; i < sizeof stored / sizeof stored[0]; i++) plan->role_dtype[stored[i]] = storage;
}

/* The caller's tensors and the layer's weights are bound whole: each must fit the range. */
static vkattn_status check_bound_tensors(builder *b)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    vkattn_status status;
    uint64_t q = vka_problem_query_elems(p), k = vka_problem_key_elems(p), v = vka_problem_value_elems(p);
    VKA_TRY(check_binding(b, "query", role_bytes(b, VKA_ROLE_QUERY, q), q));
    VKA_TRY(check_binding(b, "key", role_bytes(b, VKA_ROLE_KEY, k), k));
    VKA_TRY(check_binding(b, "value", role_bytes(b, VKA_ROLE_VALUE, v), v));
    VKA_TRY(check_binding(b, "output", role_bytes(b, VKA_ROLE_OUTPUT, vka_problem_output_elems(p)), 0));
    VKA_TRY(check_binding(b, "attn_mask", role_bytes(b, VKA_ROLE_ATTN_MASK, vka_problem_attn_mask_elems(p)), 0));
    VKA_TRY(check_binding(b, "the log-sum-exp", p->lse ? (uint64_t)p->B * c->H * p->L * 4 : 0, 0));
    VKA_TRY(reserve_workspace(b, VKA_ROLE_CTX, "the attention output (ctx)", (uint64_t)p->B * p->L * c->inner));
    uint64_t w_in = (uint64_t)(c->packed_in_proj ? 3 : 1) * c->inner * c->E;
    VKA_TRY(check_binding(b, "in_proj_weight", role_bytes(b, VKA_ROLE_W_IN, w_in), w_in));
    VKA_TRY(check_binding(b, "k_proj_weight", role_bytes(b, VKA_ROLE_W_K, (uint64_t)c->inner * c->kdim),
                          (uint64_t)c->inner * c->kdim));
    VKA_TRY(check_binding(b, "v_proj_weight", role_bytes(b, VKA_ROLE_W_V, (uint64_t)c->inner * c->vdim),
                          (uint64_t)c->inner * c->vdim));
fail:
    return status;
}

vkattn_status vka_plan_build(const vka_problem *p, const vka_plan_limits *limits, vka_plan *plan, vkattn_error *error)
{
    builder b = {p, limits, limits->profile, plan, error};
    plan->step_count = 0;
    plan->copy_count = 0;
    plan->chunks = 0;
    plan->fused_qkv = 0;
    memset(plan->workspace_bytes, 0, sizeof plan->workspace_bytes);
    assign_dtypes(p, plan);
    plan->path = vka_plan_resolve_path(p);
    if (plan->path == VKATTN_PATH_FUSED && p->weights != VKA_WEIGHTS_NONE)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "attention weights need the unfused path (the fused kernel never forms them)");
    if (plan->path == VKATTN_PATH_UNFUSED && p->lse)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "the log-sum-exp output needs the fused path");
    if (plan->path != VKATTN_PATH_FUSED && plan->path != VKATTN_PATH_UNFUSED)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "the device plan serves the fused and unfused paths");

    vkattn_status status;
    qkv_layout l;
    VKA_TRY(check_bound_tensors(&b));
    VKA_TRY(add_input_projections(&b, &l));
    if (plan->path == VKATTN_PATH_FUSED) VKA_TRY(add_fused(&b, &l));
    else VKA_TRY(add_unfused(&b, &l));
    const uint32_t BL = p->B * p->L;
    /* output (B·L, E) = ctx (B·L, I) · W_O (E, I)^T + b_O, W_O holding the active heads' columns */
    matmul_args out = {VKATTN_STAGE_OUT_PROJECTION, VKA_ROLE_CTX, VKA_ROLE_W_OUT,
                       p->cfg.bias ? VKA_ROLE_B_OUT : VKA_ROLE_NONE, VKA_ROLE_OUTPUT,
                       BL, p->cfg.E, p->cfg.inner, 0, p->cfg.inner, 0, 0, 0, p->cfg.E, BL, BL, 1};
    VKA_TRY(add_matmul(&b, &out));
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
