/* Layer creation: resolve the description, keep a host copy of the weights, upload them in the
 * layout the kernels read, and create the per-layer command objects. */
#include "api/layer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format/half.h"
#include "api/tensor.h"
#include "problem/rope.h"

/* The layer's host copy (vkattn_layer_desc.host_weights): with COPY, the weights in one block in
 * canonical form (packed when kdim == vdim == E: W_Q, W_K, W_V as one (E_q + 2 E_kv, E) matrix,
 * E_q = H·D, E_kv = H_kv·D); with BORROW, the caller's pointers; with NONE, no projection
 * weights at all. The small per-head data (sinks, ALiBi slopes, q/k norm weights, the rope
 * lists) is always the layer's own. */
static vkattn_status copy_host_weights(vkattn_layer *layer, const vkattn_weights *w)
{
    const vka_layer_config *c = &layer->cfg;
    const vkattn_host_weights mode = layer->desc.host_weights;
    const size_t E = c->E, Eq = c->E_q, Ek = c->E_kv;
    const vkattn_rope_scaling *rs = &c->rope_scaling;
    const size_t pairs = c->rope_dim / 2;
    const size_t rope_lists = (rs->short_factor ? 2 * pairs : 0) + (rs->inv_freq ? pairs : 0);
    const size_t big = mode != VKATTN_HOST_WEIGHTS_COPY
                           ? 0
                           : Eq * E + Ek * c->kdim + Ek * c->vdim + (c->bias ? Eq + 2 * Ek + E : 0) + E * Eq +
                                 (c->bias_kv ? 2 * Ek : 0);
    size_t total = big + (c->sinks ? c->H : 0) + (c->alibi ? c->H : 0) + vka_qk_norm_width(c, 0) +
                   vka_qk_norm_width(c, 1) + rope_lists;
    float *block = vka_malloc(&layer->ctx->dev.faults, (total ? total : 1) * sizeof *block);
    if (!block) return vka_fail(&layer->ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the host weights");
    float *at = block;
    vkattn_weights *h = &layer->host;
    memset(h, 0, sizeof *h);
#define VKA_TAKE_(field, src, n)                                                                   \
    do {                                                                                           \
        memcpy(at, (src), (n) * sizeof(float));                                                    \
        h->field = at;                                                                             \
        at += (n);                                                                                 \
    } while (0)
    if (mode == VKATTN_HOST_WEIGHTS_BORROW) {
        *h = *w;
        h->sinks = h->q_norm_weight = h->k_norm_weight = NULL; /* the layer's own, below */
    } else if (mode == VKATTN_HOST_WEIGHTS_COPY) {
        if (c->packed_in_proj) {
            if (w->in_proj_weight) {
                VKA_TAKE_(in_proj_weight, w->in_proj_weight, Eq * E + 2 * Ek * E);
            } else {
                memcpy(at, w->q_proj_weight, Eq * E * sizeof(float));
                memcpy(at + Eq * E, w->k_proj_weight, Ek * E * sizeof(float));
                memcpy(at + Eq * E + Ek * E, w->v_proj_weight, Ek * E * sizeof(float));
                h->in_proj_weight = at;
                at += Eq * E + 2 * Ek * E;
            }
        } else {
            VKA_TAKE_(q_proj_weight, w->q_proj_weight, Eq * E);
            VKA_TAKE_(k_proj_weight, w->k_proj_weight, Ek * c->kdim);
            VKA_TAKE_(v_proj_weight, w->v_proj_weight, Ek * c->vdim);
        }
        if (c->bias) {
            VKA_TAKE_(in_proj_bias, w->in_proj_bias, Eq + 2 * Ek);
            VKA_TAKE_(out_proj_bias, w->out_proj_bias, E);
        }
        VKA_TAKE_(out_proj_weight, w->out_proj_weight, E * Eq);
        if (c->bias_kv) {
            VKA_TAKE_(bias_k, w->bias_k, Ek);
            VKA_TAKE_(bias_v, w->bias_v, Ek);
        }
    }
    if (c->sinks) VKA_TAKE_(sinks, w->sinks, c->H);
    if (c->qk_norm) {
        VKA_TAKE_(q_norm_weight, w->q_norm_weight, vka_qk_norm_width(c, 0));
        VKA_TAKE_(k_norm_weight, w->k_norm_weight, vka_qk_norm_width(c, 1));
    }
#undef VKA_TAKE_
    /* The rope lists too: the layer's configuration points at its own copies from here on. */
    vkattn_rope_scaling *own = &layer->cfg.rope_scaling;
    if (rs->short_factor) {
        memcpy(at, rs->short_factor, pairs * sizeof *at);
        memcpy(at + pairs, rs->long_factor, pairs * sizeof *at);
        own->short_factor = at;
        own->long_factor = at + pairs;
        at += 2 * pairs;
    }
    if (rs->inv_freq) {
        memcpy(at, rs->inv_freq, pairs * sizeof *at);
        own->inv_freq = at;
        at += pairs;
    }
    if (c->alibi) {
        vka_alibi_slopes(c->H, layer->desc.alibi_slopes, at);
        layer->alibi_slopes = at;
    }
    layer->host_block = block;
    return VKATTN_OK;
}

int vka_layer_has_host_weights(const vkattn_layer *layer)
{
    return layer->host.out_proj_weight != NULL;
}

/* fp16 storage holds weights up to 65504; a larger one would become inf and every output NaN.
 * Such weights are refused, naming the tensor, the element and its value. */
static vkattn_status check_fp16_range(vkattn_context *ctx, const char *name, const float *w, size_t rows, size_t cols)
{
    for (size_t i = 0; w && i < rows * cols; i++) {
        uint16_t h = vka_f32_to_f16(w[i]);
        if ((h & 0x7c00u) == 0x7c00u && isfinite(w[i]))
            return vka_fail(&ctx->dev, VKATTN_ERROR_NON_FINITE,
                            "%s element (%zu, %zu) = %g overflows fp16 storage (largest finite fp16: 65504); use "
                            "F32 storage or scale the weights",
                            name, i / cols, i % cols, (double)w[i]);
    }
    return VKATTN_OK;
}

static vkattn_status check_weights_fit_fp16(vkattn_context *ctx, const vka_layer_config *c, const vkattn_weights *w)
{
    vkattn_status status;
    const size_t E = c->E, Eq = c->E_q, Ek = c->E_kv;
    VKA_TRY(check_fp16_range(ctx, "in_proj_weight", w->in_proj_weight, Eq + 2 * Ek, E));
    VKA_TRY(check_fp16_range(ctx, "q_proj_weight", w->q_proj_weight, Eq, E));
    VKA_TRY(check_fp16_range(ctx, "k_proj_weight", w->k_proj_weight, Ek, c->kdim));
    VKA_TRY(check_fp16_range(ctx, "v_proj_weight", w->v_proj_weight, Ek, c->vdim));
    VKA_TRY(check_fp16_range(ctx, "out_proj.weight", w->out_proj_weight, E, Eq));
    VKA_TRY(check_fp16_range(ctx, "bias_k", w->bias_k, 1, Ek));
    VKA_TRY(check_fp16_range(ctx, "bias_v", w->bias_v, 1, Ek));
fail:
    return status;
}

/* Uploads fp32 host data as `dtype` (fp32, or fp16 rounded to nearest even). */
static vkattn_status upload_as(vkattn_layer *layer, vka_role role, const char *what, const float *data, size_t elems,
                               vkattn_dtype dtype)
{
    vka_buffer *b = &layer->buffers[role];
    size_t bytes = elems * vkattn_dtype_size(dtype);
    const void *src = data;
    uint16_t *half = NULL;
    if (dtype == VKATTN_DTYPE_F16) {
        if (!(half = vka_malloc(&layer->ctx->dev.faults, elems * sizeof *half)))
            return vka_fail(&layer->ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory converting %s to fp16", what);
        for (size_t i = 0; i < elems; i++) half[i] = vka_f32_to_f16(data[i]);
        src = half;
    }
    vkattn_status status = vka_buffer_create(&layer->ctx->dev, bytes, VKA_MEMORY_DEVICE, what, b);
    if (status == VKATTN_OK) status = vka_buffer_write(&layer->ctx->transfer, b, 0, src, bytes);
    free(half);
    return status;
}

/* Weights in the layer's storage dtype; biases stay fp32 (few, and added in fp32 anyway). */
static vkattn_status upload(vkattn_layer *layer, vka_role role, const char *what, const float *data, size_t elems)
{
    return upload_as(layer, role, what, data, elems, layer->cfg.storage);
}

static vkattn_status upload_f32(vkattn_layer *layer, vka_role role, const char *what, const float *data, size_t elems)
{
    return upload_as(layer, role, what, data, elems, VKATTN_DTYPE_F32);
}

/* The extra keys (or values) K/V head by head, (inner_kv / D, extra_keys, D): per head row 0 = its
 * slice of bias_k (bias_v) when add_bias_kv, then the zero row; the plan copies each head's rows
 * after that head's projected keys. */
static vkattn_status upload_extra(vkattn_layer *layer, vka_role role, const float *bias, const char *what)
{
    const vka_layer_config *c = &layer->cfg;
    if (c->extra_keys == 0) return VKATTN_OK;
    float *rows = vka_calloc(&layer->ctx->dev.faults, (size_t)c->extra_keys * c->inner_kv, sizeof *rows);
    if (!rows) return vka_fail(&layer->ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for %s", what);
    if (c->bias_kv)
        for (uint32_t h = 0; h < c->inner_kv / c->D; h++)
            memcpy(rows + (size_t)h * c->extra_keys * c->D, bias + (size_t)h * c->D, c->D * sizeof(float));
    vkattn_status status = upload(layer, role, what, rows, (size_t)c->extra_keys * c->inner_kv);
    free(rows);
    return status;
}

/* Copies the D-row blocks of the active heads of a (H*D, cols) matrix, in order. */
static float *gather_head_rows(float *dst, const float *src, size_t cols, const vkattn_layer *layer)
{
    const size_t D = layer->cfg.D, block = D * cols;
    for (uint32_t h = 0; h < layer->cfg.H; h++)
        if (layer->head_active[h]) memcpy(dst, src + h * block, block * sizeof(float)), dst += block;
    return dst;
}

/* The same for a (H_kv*D, cols) K or V matrix: the K/V heads any active query head reads. */
static float *gather_kv_head_rows(float *dst, const float *src, size_t cols, const vkattn_layer *layer)
{
    const size_t D = layer->cfg.D, block = D * cols, G = layer->cfg.group;
    for (uint32_t k = 0; k < layer->cfg.H_kv; k++) {
        int used = 0;
        for (size_t h = k * G; h < (k + 1) * G; h++) used |= layer->head_active[h] != 0;
        if (used) memcpy(dst, src + k * block, block * sizeof(float)), dst += block;
    }
    return dst;
}

/* Copies the D-column blocks of the active heads of a (rows, H*D) matrix. */
static void gather_head_cols(float *dst, const float *src, size_t rows, const vkattn_layer *layer)
{
    const size_t D = layer->cfg.D, Eq = layer->cfg.E_q;
    for (size_t r = 0; r < rows; r++)
        for (uint32_t h = 0; h < layer->cfg.H; h++)
            if (layer->head_active[h]) memcpy(dst, src + r * Eq + h * D, D * sizeof(float)), dst += D;
}

/* Uploads the weights `h` (the caller's at creation, the layer's host copy later) of the active heads
 * only: W_Q/W_K/W_V rows and biases, W_O columns, the extra keys' slices. Pruned heads then cost
 * nothing in any kernel. The small per-head data comes from the layer's own copy. */
static vkattn_status upload_weights(vkattn_layer *layer, const vkattn_weights *h)
{
    const vka_layer_config *c = &layer->cfg;
    const vkattn_weights *own = &layer->host;
    const size_t E = c->E, Eq = c->E_q, Ek = c->E_kv, I = c->inner, Ik = c->inner_kv;
    const size_t widest = c->kdim > c->vdim ? c->kdim : c->vdim;
    vkattn_status status = VKATTN_OK;
    /* Scratch big enough for the largest gathered matrix: (I + 2 I_kv, E), (I_kv, kdim or vdim) or
     * (E, I), and for the RoPE table and head terms (I_kv <= I). */
    size_t scratch_elems = (I + 2 * Ik) * (E > widest ? E : widest) + 3 * I + 2 * (size_t)c->H + c->rope_dim +
                           c->E_q + c->E_kv;
    float *scratch = vka_malloc(&layer->ctx->dev.faults, scratch_elems * sizeof *scratch);
    if (!scratch) return vka_fail(&layer->ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory gathering the weights");
    if (c->packed_in_proj) { /* one (E_q + 2 E_kv, E) matrix, given whole or as W_Q, W_K and W_V */
        const float *wq = h->in_proj_weight ? h->in_proj_weight : h->q_proj_weight;
        const float *wk = h->in_proj_weight ? h->in_proj_weight + Eq * E : h->k_proj_weight;
        const float *wv = h->in_proj_weight ? h->in_proj_weight + Eq * E + Ek * E : h->v_proj_weight;
        float *at = gather_head_rows(scratch, wq, E, layer);
        at = gather_kv_head_rows(at, wk, E, layer);
        gather_kv_head_rows(at, wv, E, layer);
        VKA_TRY(upload(layer, VKA_ROLE_W_IN, "in_proj_weight", scratch, (I + 2 * Ik) * E));
    } else {
        gather_head_rows(scratch, h->q_proj_weight, E, layer);
        VKA_TRY(upload(layer, VKA_ROLE_W_IN, "q_proj_weight", scratch, I * E));
        gather_kv_head_rows(scratch, h->k_proj_weight, c->kdim, layer);
        VKA_TRY(upload(layer, VKA_ROLE_W_K, "k_proj_weight", scratch, Ik * c->kdim));
        gather_kv_head_rows(scratch, h->v_proj_weight, c->vdim, layer);
        VKA_TRY(upload(layer, VKA_ROLE_W_V, "v_proj_weight", scratch, Ik * c->vdim));
    }
    if (c->bias) {
        float *at = gather_head_rows(scratch, h->in_proj_bias, 1, layer);
        at = gather_kv_head_rows(at, h->in_proj_bias + Eq, 1, layer);
        gather_kv_head_rows(at, h->in_proj_bias + Eq + Ek, 1, layer);
        VKA_TRY(upload_f32(layer, VKA_ROLE_B_IN, "in_proj_bias", scratch, I + 2 * Ik));
        VKA_TRY(upload_f32(layer, VKA_ROLE_B_OUT, "out_proj.bias", h->out_proj_bias, E));
    }
    gather_head_cols(scratch, h->out_proj_weight, E, layer);
    VKA_TRY(upload(layer, VKA_ROLE_W_OUT, "out_proj.weight", scratch, E * I));
    if (c->bias_kv) gather_kv_head_rows(scratch, h->bias_k, 1, layer);
    VKA_TRY(upload_extra(layer, VKA_ROLE_EXTRA_K, scratch, "the extra keys"));
    if (c->bias_kv) gather_kv_head_rows(scratch, h->bias_v, 1, layer);
    VKA_TRY(upload_extra(layer, VKA_ROLE_EXTRA_V, scratch, "the extra values"));
    if (c->rope_dim) {
        vka_rope_table(&c->rope_scaling, c->rope_theta, c->rope_dim, 0, scratch);
        VKA_TRY(upload_f32(layer, VKA_ROLE_ROPE_FREQ, "the RoPE frequencies", scratch, c->rope_dim / 2));
    }
    if (c->qk_norm) { /* q's weights then k's, fp32; Gemma's 1 + w added here, in fp32 as the reference does */
        const uint32_t wq = vka_qk_norm_width(c, 0), wk = vka_qk_norm_width(c, 1);
        for (uint32_t i = 0; i < wq + wk; i++) {
            float w = i < wq ? own->q_norm_weight[i] : own->k_norm_weight[i - wq];
            scratch[i] = c->qk_norm_plus_one ? 1.0f + w : w;
        }
        VKA_TRY(upload_f32(layer, VKA_ROLE_QK_NORM, "the q and k norm weights", scratch, (size_t)wq + wk));
    }
    if (c->alibi || c->sinks) { /* (H', 2): each active head's ALiBi slope and sink logit */
        float *at = scratch;
        for (uint32_t head = 0; head < c->H; head++) {
            if (!layer->head_active[head]) continue;
            *at++ = c->alibi ? layer->alibi_slopes[head] : 0.0f;
            *at++ = c->sinks ? own->sinks[head] : 0.0f;
        }
        VKA_TRY(upload_f32(layer, VKA_ROLE_HEAD_TERMS, "the ALiBi slopes and sinks", scratch, 2 * (size_t)c->H_active));
    }
fail:
    free(scratch);
    return status;
}

/* Keeps the heads `mask` keeps (NULL: all): the layer's own copy, and the widths that follow. */
static void apply_head_mask(vkattn_layer *layer, const uint8_t *mask)
{
    for (uint32_t h = 0; h < layer->cfg.H; h++) layer->head_active[h] = !mask || mask[h] != 0;
    vka_layer_config_apply_mask(&layer->cfg, mask);
}

static void destroy_child(vka_child *child) { vkattn_layer_destroy(VKA_CONTAINER_OF(child, vkattn_layer, child)); }

static vkattn_status layer_create(vkattn_context *ctx, const vkattn_layer_desc *desc, const vkattn_weights *weights,
                                  vkattn_layer **out)
{
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status != VKATTN_OK) return status;
    if (!out) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_layer_create: out is NULL");
    vka_layer_config cfg;
    status = vka_layer_config_resolve(desc, weights, &cfg, &ctx->dev.error);
    if (status != VKATTN_OK) return status;

    /* fp16 activations are written through 16-bit storage; without it the layer stays fp32. */
    if (cfg.storage == VKATTN_DTYPE_F16 && !ctx->dev.info.storage_16bit) cfg.storage = VKATTN_DTYPE_F32;
    /* The default precision follows the storage the layer got: an f32 layer keeps fp32 operands
     * (nn.MultiheadAttention's results), an f16 one may round them to fp16, which its storage has
     * done already. */
    if (cfg.precision == VKATTN_PRECISION_DEFAULT)
        cfg.precision = cfg.storage == VKATTN_DTYPE_F16 ? VKATTN_PRECISION_F16 : VKATTN_PRECISION_F32;
    if (cfg.storage == VKATTN_DTYPE_F16 && (status = check_weights_fit_fp16(ctx, &cfg, weights)) != VKATTN_OK)
        return status;
    vkattn_layer *layer = vka_calloc(&ctx->dev.faults, 1, sizeof *layer);
    if (!layer) return vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a layer");
    layer->ctx = ctx;
    vka_context_adopt(ctx, &layer->child, destroy_child);
    layer->serial = ++ctx->layers_made;
    layer->cfg = cfg;
    layer->desc = *desc;
    layer->desc.storage = cfg.storage;
    layer->desc.head_mask = NULL; /* the caller's array is not kept; get_desc points at head_active */
    layer->desc.kdim = cfg.kdim;
    layer->desc.vdim = cfg.vdim;
    layer->desc.no_bias = !cfg.bias;
    layer->desc.add_bias_kv = cfg.bias_kv;
    layer->desc.add_zero_attn = cfg.zero_attn;
    layer->desc.num_kv_heads = cfg.H_kv;
    layer->desc.rope_dim = cfg.rope_dim;
    layer->desc.head_dim = cfg.D;
    layer->desc.scale = cfg.scale;
    VKA_TRY(copy_host_weights(layer, weights));
    layer->desc.alibi_slopes = layer->alibi_slopes; /* the caller's arrays are not kept either */
    layer->desc.rope_scaling = layer->cfg.rope_scaling;
    layer->desc.qk_norm_eps = cfg.qk_norm_eps;
    if (!(layer->head_active = vka_malloc(&ctx->dev.faults, cfg.H))) {
        status = vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a layer");
        goto fail;
    }
    apply_head_mask(layer, desc->head_mask);
    VKA_TRY(upload_weights(layer, weights));
    VKA_TRY(vka_commands_create(&ctx->dev, &layer->commands));
    *out = layer;
    return VKATTN_OK;
fail:
    vkattn_layer_destroy(layer);
    return status;
}

vkattn_status vkattn_layer_create(vkattn_context *ctx, const vkattn_layer_desc *desc, const vkattn_weights *weights,
                                  vkattn_layer **out)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(ctx, layer_create(ctx, desc, weights, out));
}

void vkattn_layer_destroy(vkattn_layer *layer)
{
    if (!layer) return;
    vkattn_context *ctx = layer->ctx;
    /* A forward waits for its fence; a submission is waited for (or dropped) here: nothing of this
     * layer is still running after this line. */
    if (layer->user) layer->user->release(layer->user);
    vka_child_forget(&layer->child);
    for (int a = 0; a < VKA_ARG_COUNT; a++) vkattn_tensor_destroy(layer->host_io[a]);
    vka_plan_free(&layer->plan);
    if (layer->query_pool) ctx->dev.vk.vkDestroyQueryPool(ctx->dev.device, layer->query_pool, NULL);
    if (layer->descriptor_pool) ctx->dev.vk.vkDestroyDescriptorPool(ctx->dev.device, layer->descriptor_pool, NULL);
    vka_commands_destroy(&ctx->dev, &layer->commands);
    for (int r = 0; r < VKA_ROLE_COUNT; r++) vka_buffer_destroy(&ctx->dev, &layer->buffers[r]);
    free(layer->head_active);
    free(layer->host_block);
    free(layer->ticks);
    free(layer->step_times);
    free(layer->step_sets);
    free(layer->step_pipelines);
    free(layer);
}

/* VKATTN_ERROR_BUSY if the layer is in an unfinished submission (its weights are in use). */
static vkattn_status check_layer_free(vkattn_layer *layer)
{
    if (!layer->user) return VKATTN_OK;
    return vka_fail(&layer->ctx->dev, VKATTN_ERROR_BUSY,
                    "the layer is in a submission that has not finished (vkattn_submission_wait or _poll first)");
}

static vkattn_status layer_set_head_mask(vkattn_layer *layer, const uint8_t *active)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status == VKATTN_OK) status = check_layer_free(layer);
    if (status != VKATTN_OK) return status;
    if (vka_count_active_heads(layer->cfg.H, active) == 0)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "a head mask must keep at least one of the %u heads",
                        layer->cfg.H);
    if (layer->cfg.qk_norm == VKATTN_QK_NORM_ROW && vka_count_active_heads(layer->cfg.H, active) < layer->cfg.H)
        return vka_fail(&ctx->dev, VKATTN_ERROR_UNSUPPORTED,
                        "a head mask that prunes heads of a layer with qk_norm ROW is not supported: the norm of a "
                        "whole row needs every head's values");
    if (layer->cfg.group > 1 && vka_count_active_heads(layer->cfg.H, active) < layer->cfg.H)
        return vka_fail(&ctx->dev, VKATTN_ERROR_UNSUPPORTED,
                        "a head mask that prunes heads of a grouped-query layer (num_kv_heads %u of num_heads %u) is "
                        "not implemented; pruning works for num_kv_heads = num_heads only",
                        layer->cfg.H_kv, layer->cfg.H);
    if (!vka_layer_has_host_weights(layer))
        return vka_fail(&ctx->dev, VKATTN_ERROR_UNSUPPORTED,
                        "vkattn_layer_set_head_mask re-uploads the kept heads' weights, and the layer keeps none on "
                        "the host: create it with host_weights VKATTN_HOST_WEIGHTS_COPY or _BORROW");
    /* Upload the new head set beside the old one and keep whichever stands at the end, so a
     * failure leaves the layer exactly as it was. */
    uint8_t *old_active = vka_malloc(&ctx->dev.faults, layer->cfg.H);
    if (!old_active) return vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory changing the head mask");
    memcpy(old_active, layer->head_active, layer->cfg.H);
    const vka_layer_config old_cfg = layer->cfg;
    vka_buffer old[VKA_FIRST_WORKSPACE_ROLE];
    for (int r = VKA_FIRST_LAYER_ROLE; r < VKA_FIRST_WORKSPACE_ROLE; r++) {
        old[r] = layer->buffers[r];
        memset(&layer->buffers[r], 0, sizeof layer->buffers[r]);
    }
    apply_head_mask(layer, active);
    status = upload_weights(layer, &layer->host);
    for (int r = VKA_FIRST_LAYER_ROLE; r < VKA_FIRST_WORKSPACE_ROLE; r++) {
        vka_buffer *drop = status == VKATTN_OK ? &old[r] : &layer->buffers[r];
        vka_buffer_destroy(&ctx->dev, drop);
        if (status != VKATTN_OK) layer->buffers[r] = old[r];
    }
    if (status != VKATTN_OK) {
        memcpy(layer->head_active, old_active, old_cfg.H);
        layer->cfg = old_cfg;
    }
    free(old_active);
    return status;
}

vkattn_status vkattn_layer_set_head_mask(vkattn_layer *layer, const uint8_t *active)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, layer_set_head_mask(layer, active));
}

void vkattn_layer_get_desc(const vkattn_layer *layer, vkattn_layer_desc *out)
{
    if (!layer || !out) return;
    *out = layer->desc;
    out->head_mask = layer->head_active;
}

static vkattn_status layer_set_timing(vkattn_layer *layer, int enabled)
{
    if (enabled && !layer->ctx->dev.caps.timestamps)
        return vka_fail(&layer->ctx->dev, VKATTN_ERROR_UNSUPPORTED, "device \"%s\" has no timestamps on its compute queue",
                        layer->ctx->dev.info.name);
    layer->timing = enabled != 0;
    return VKATTN_OK;
}

vkattn_status vkattn_layer_set_timing(vkattn_layer *layer, int enabled)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, layer_set_timing(layer, enabled));
}

static vkattn_status layer_last_stats(const vkattn_layer *layer, vkattn_forward_stats *out)
{
    if (!out) return vka_fail(&layer->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_layer_last_stats: out is NULL");
    *out = layer->stats;
    return VKATTN_OK;
}

vkattn_status vkattn_layer_last_stats(const vkattn_layer *layer, vkattn_forward_stats *out)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, layer_last_stats(layer, out));
}

static vkattn_status layer_last_step_times(const vkattn_layer *layer, vkattn_step_time *times, uint32_t capacity,
                                           uint32_t *count)
{
    if (!count)
        return vka_fail(&layer->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_layer_last_step_times: count is NULL");
    if (capacity && !times)
        return vka_fail(&layer->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_layer_last_step_times: times is NULL with a capacity of %u", capacity);
    const uint32_t n = layer->stats.timed ? layer->step_time_count : 0;
    for (uint32_t k = 0; k < n && k < capacity; k++) times[k] = layer->step_times[k];
    *count = n;
    return VKATTN_OK;
}

vkattn_status vkattn_layer_last_step_times(const vkattn_layer *layer, vkattn_step_time *times, uint32_t capacity,
                                           uint32_t *count)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, layer_last_step_times(layer, times, capacity, count));
}
