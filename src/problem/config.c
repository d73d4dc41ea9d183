/* Validation of layer descriptions, weights and host forward arguments. */
#include "problem/config.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "common/checked.h"
#include "common/error.h"
#include "problem/rope.h"
#include "abi.h"

/* Shaders index tensors with 32-bit unsigned integers. */
#define VKA_MAX_ELEMS ((size_t)UINT32_MAX)

static vkattn_status require_pointer(const void *ptr, bool wanted, const char *name, const char *why,
                                     vkattn_error *error)
{
    if (wanted && !ptr) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "weights: %s is NULL but %s", name, why);
    if (!wanted && ptr)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "weights: %s is given but %s", name, why);
    return VKATTN_OK;
}

static vkattn_status check_weight_pointers(const vka_layer_config *c, const vkattn_weights *w, vkattn_error *error)
{
    vkattn_status status;
    bool separate = w->q_proj_weight || w->k_proj_weight || w->v_proj_weight;
    if (c->group > 1 && w->in_proj_weight)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "weights: in_proj_weight is given but num_kv_heads %u differs from num_heads %u; give "
                             "q_proj_weight (%u,E), k_proj_weight (%u,kdim) and v_proj_weight (%u,vdim) instead",
                             c->H_kv, c->H, c->E_q, c->E_kv, c->E_kv);
    if (!c->packed_in_proj) {
        const char *why = "kdim/vdim differ from embed_dim (PyTorch uses q/k/v_proj_weight then)";
        VKA_TRY(require_pointer(w->in_proj_weight, false, "in_proj_weight", why, error));
        VKA_TRY(require_pointer(w->q_proj_weight, true, "q_proj_weight", why, error));
        VKA_TRY(require_pointer(w->k_proj_weight, true, "k_proj_weight", why, error));
        VKA_TRY(require_pointer(w->v_proj_weight, true, "v_proj_weight", why, error));
    } else if (w->in_proj_weight && separate) {
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "weights: give either in_proj_weight or q/k/v_proj_weight, not both");
    } else if (!w->in_proj_weight) {
        const char *why = "in_proj_weight is NULL (give in_proj_weight, or all of q/k/v_proj_weight)";
        VKA_TRY(require_pointer(w->q_proj_weight, true, "q_proj_weight", why, error));
        VKA_TRY(require_pointer(w->k_proj_weight, true, "k_proj_weight", why, error));
        VKA_TRY(require_pointer(w->v_proj_weight, true, "v_proj_weight", why, error));
    }
    VKA_TRY(require_pointer(w->out_proj_weight, true, "out_proj_weight", "it is always required", error));
    /* (named as a config.json says them too: a layer from vkattn_model_config_layer meets its
     * checkpoint here) */
    const char *bias_why = c->bias ? "the layer has biases (no_bias = 0; a config.json's attention_bias true, or the "
                                     "family's own, as Qwen2's): does the checkpoint hold them?"
                                   : "the layer has no biases (no_bias = 1)";
    VKA_TRY(require_pointer(w->in_proj_bias, c->bias, "in_proj_bias", bias_why, error));
    VKA_TRY(require_pointer(w->out_proj_bias, c->bias, "out_proj_bias", bias_why, error));
    const char *kv_why = c->bias_kv ? "add_bias_kv is on" : "add_bias_kv is off";
    VKA_TRY(require_pointer(w->bias_k, c->bias_kv, "bias_k", kv_why, error));
    VKA_TRY(require_pointer(w->bias_v, c->bias_kv, "bias_v", kv_why, error));
    if ((w->q_rows && w->q_rows != c->E_q) || (w->kv_rows && w->kv_rows != c->E_kv))
        return vka_error_set(error, VKATTN_ERROR_SHAPE,
                             "weights: W_Q has %u rows and W_K, W_V %u, but the layer (%u heads, %u key/value heads, "
                             "head dim %u) needs %u and %u: check num_heads, num_kv_heads and head_dim (a config.json's "
                             "num_attention_heads, num_key_value_heads and head_dim; vkattn_weight_file_describe fills "
                             "them from the file)",
                             w->q_rows, w->kv_rows, c->H, c->H_kv, c->D, c->E_q, c->E_kv);
    const char *norm_why = c->qk_norm ? "qk_norm is on" : "qk_norm is NONE";
    VKA_TRY(require_pointer(w->q_norm_weight, c->qk_norm != VKATTN_QK_NORM_NONE, "q_norm_weight", norm_why, error));
    VKA_TRY(require_pointer(w->k_norm_weight, c->qk_norm != VKATTN_QK_NORM_NONE, "k_norm_weight", norm_why, error));
    return VKATTN_OK;
fail:
    return status;
}

/* RoPE: theta finite and >= 0; rope_dim even and <= D; the frequencies' scaling (problem/rope.c);
 * no appended keys (they have no position). On with rope_theta > 0 or a table of frequencies. */
static vkattn_status resolve_rope(const vkattn_layer_desc *desc, vka_layer_config *c, vkattn_error *error)
{
    if (!isfinite(desc->rope_theta) || desc->rope_theta < 0.0f)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope_theta %g must be finite and >= 0 (0 = no rotary position embedding)",
                             (double)desc->rope_theta);
    if ((unsigned)desc->rope_style > VKATTN_ROPE_GPTJ)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "rope_style %d is not a vkattn_rope_style",
                             (int)desc->rope_style);
    uint32_t dim = desc->rope_dim ? desc->rope_dim : c->D;
    if (desc->rope_theta == 0.0f && desc->rope_scaling.type != VKATTN_ROPE_TYPE_TABLE) {
        vkattn_rope_scaling none = {0};
        if (memcmp(&desc->rope_scaling, &none, sizeof none) != 0)
            return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                                 "rope_scaling is set but RoPE is off (rope_theta 0 and no table of frequencies)");
        return VKATTN_OK;
    }
    if (dim > c->D || dim % 2 != 0 || dim == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope_dim %u must be even and at most the head dim %u (0 = the whole head)", dim, c->D);
    vkattn_status status = vka_rope_scaling_check(desc, dim, error);
    if (status != VKATTN_OK) return status;
    if (desc->add_bias_kv || desc->add_zero_attn)
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED,
                             "RoPE with %s is not supported: the appended key has no position to rotate by",
                             desc->add_bias_kv ? "add_bias_kv" : "add_zero_attn");
    c->rope_theta = desc->rope_theta;
    c->rope_dim = dim;
    c->rope_style = desc->rope_style;
    c->rope_scaling = desc->rope_scaling;
    c->rope_attention = vka_rope_attention_factor(&c->rope_scaling);
    return VKATTN_OK;
}

/* The q/k norms: a known kind, eps finite and > 0 (0 = 1e-6); a whole row's norm needs every head. */
static vkattn_status resolve_qk_norm(const vkattn_layer_desc *desc, vka_layer_config *c, vkattn_error *error)
{
    if ((unsigned)desc->qk_norm > VKATTN_QK_NORM_ROW)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "qk_norm %d is not a vkattn_qk_norm", (int)desc->qk_norm);
    if (!isfinite(desc->qk_norm_eps) || desc->qk_norm_eps < 0.0f)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "qk_norm_eps %g must be finite and > 0 (0 = 1e-6)",
                             (double)desc->qk_norm_eps);
    if (desc->qk_norm == VKATTN_QK_NORM_NONE && (desc->qk_norm_eps != 0.0f || desc->qk_norm_plus_one))
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "%s is set but qk_norm is NONE",
                             desc->qk_norm_eps != 0.0f ? "qk_norm_eps" : "qk_norm_plus_one");
    if (desc->qk_norm && (desc->add_bias_kv || desc->add_zero_attn))
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED, "qk_norm with %s is not supported",
                             desc->add_bias_kv ? "add_bias_kv" : "add_zero_attn");
    if (desc->qk_norm == VKATTN_QK_NORM_ROW && c->H_active < c->H)
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED,
                             "qk_norm ROW with pruned heads: the norm of a whole row needs every head's values");
    c->qk_norm = desc->qk_norm;
    c->qk_norm_eps = desc->qk_norm ? (desc->qk_norm_eps > 0.0f ? desc->qk_norm_eps : 1e-6f) : 0.0f;
    c->qk_norm_plus_one = desc->qk_norm && desc->qk_norm_plus_one;
    return VKATTN_OK;
}

uint32_t vka_qk_norm_width(const vka_layer_config *c, int key)
{
    if (c->qk_norm == VKATTN_QK_NORM_HEAD) return c->D;
    if (c->qk_norm == VKATTN_QK_NORM_ROW) return key ? c->E_kv : c->E_q;
    return 0;
}

/* The variants: softcap finite and >= 0; ALiBi not with RoPE, its slopes finite and only with it;
 * window and ALiBi need positions, which appended keys do not have. */
static vkattn_status resolve_variants(const vkattn_layer_desc *desc, vka_layer_config *c, vkattn_error *error)
{
    if (!isfinite(desc->softcap) || desc->softcap < 0.0f)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "softcap %g must be finite and >= 0 (0 = no logit soft-capping)", (double)desc->softcap);
    if (desc->alibi_slopes && !desc->alibi)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "alibi_slopes are given but alibi is off");
    if (desc->alibi && c->rope_dim)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "alibi with RoPE (rope_theta %g): ALiBi replaces positional embeddings, a layer has one "
                             "or the other",
                             (double)desc->rope_theta);
    for (uint32_t h = 0; desc->alibi && desc->alibi_slopes && h < c->H; h++) {
        float m = desc->alibi_slopes[h];
        if (!isfinite(m))
            return vka_error_set(error, VKATTN_ERROR_NON_FINITE, "alibi_slopes[%u] is %g; slopes must be finite", h,
                                 (double)m);
        /* The device adds m * (pos_j - pos_i) in fp32, with distances up to 2^32: a bound on m keeps
         * every bias (below 2^49) and every score finite, as they are on the CPU path. */
        if (fabsf(m) > VKATTN_ALIBI_MAX_SLOPE)
            return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                                 "alibi_slopes[%u] is %g; slopes lie in [-%g, %g] (models' slopes are at most 1; larger "
                                 "ones would overflow fp32 scores at long distances)",
                                 h, (double)m, (double)VKATTN_ALIBI_MAX_SLOPE, (double)VKATTN_ALIBI_MAX_SLOPE);
    }
    if ((desc->window || desc->alibi) && (desc->add_bias_kv || desc->add_zero_attn))
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED,
                             "%s with %s is not supported: the appended key has no position",
                             desc->window ? "a sliding window" : "alibi",
                             desc->add_bias_kv ? "add_bias_kv" : "add_zero_attn");
    c->window = desc->window;
    c->softcap = desc->softcap;
    c->alibi = desc->alibi != 0;
    return VKATTN_OK;
}

int vka_layer_has_positions(const vka_layer_config *c) { return c->rope_dim > 0 || c->window > 0 || c->alibi; }

void vka_alibi_slopes(uint32_t H, const float *given, float *out)
{
    uint32_t n = 1; /* the largest power of two <= H */
    while (n <= H / 2) n *= 2;
    for (uint32_t h = 0; h < H; h++) {
        if (given) out[h] = given[h];
        else if (h < n) out[h] = (float)pow(2.0, -8.0 * (h + 1) / n);
        else out[h] = (float)pow(2.0, -4.0 * (2 * (h - n) + 1) / n); /* the odd ones of 2n heads' slopes */
    }
}

uint32_t vka_variant_bits(const vka_layer_config *c)
{
    return (c->window ? VKA_VARIANT_WINDOW : 0) | (c->softcap > 0.0f ? VKA_VARIANT_SOFTCAP : 0) |
           (c->alibi ? VKA_VARIANT_ALIBI : 0) | (c->sinks ? VKA_VARIANT_SINK : 0);
}

vkattn_status vka_layer_config_from_desc(const vkattn_layer_desc *desc, vka_layer_config *out, vkattn_error *error)
{
    if (!desc) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "layer description is NULL");
    if (desc->embed_dim == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "embed_dim must be at least 1");
    if (desc->num_heads == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "num_heads must be at least 1");
    if (!desc->head_dim && desc->embed_dim % desc->num_heads != 0)
        return vka_error_set(error, VKATTN_ERROR_HEADS,
                             "embed_dim %u is not divisible by num_heads %u (head dim would be %.3g; give head_dim)",
                             desc->embed_dim, desc->num_heads, (double)desc->embed_dim / desc->num_heads);
    if ((uint64_t)desc->num_heads * desc->head_dim > UINT32_MAX / 4)
        return vka_error_set(error, VKATTN_ERROR_SIZE_OVERFLOW, "num_heads %u x head_dim %u is too large",
                             desc->num_heads, desc->head_dim);
    if (!isfinite(desc->scale) || desc->scale < 0.0f)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "scale %g must be finite and >= 0 (0 = 1 / sqrt(head_dim))", (double)desc->scale);
    if (desc->num_kv_heads != 0 && desc->num_heads % desc->num_kv_heads != 0)
        return vka_error_set(error, VKATTN_ERROR_HEADS,
                             "num_heads %u is not a multiple of num_kv_heads %u (each key/value head serves "
                             "num_heads / num_kv_heads query heads)",
                             desc->num_heads, desc->num_kv_heads);
    if ((unsigned)desc->host_weights > VKATTN_HOST_WEIGHTS_BORROW)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "host_weights %d is not a vkattn_host_weights",
                             (int)desc->host_weights);
    if ((unsigned)desc->precision > VKATTN_PRECISION_F16)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "precision %d is not a vkattn_precision",
                             (int)desc->precision);
    if (desc->storage != VKATTN_DTYPE_F32 && desc->storage != VKATTN_DTYPE_F16)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "storage must be F32 or F16, not %s",
                             vkattn_dtype_name(desc->storage));

    vka_layer_config c = {0};
    c.E = desc->embed_dim;
    c.H = desc->num_heads;
    c.D = desc->head_dim ? desc->head_dim : c.E / c.H;
    c.E_q = c.H * c.D;
    c.scale = desc->scale > 0.0f ? desc->scale : (float)(1.0 / sqrt((double)c.D));
    c.H_kv = desc->num_kv_heads ? desc->num_kv_heads : c.H;
    c.group = c.H / c.H_kv;
    c.E_kv = c.H_kv * c.D;
    vka_layer_config_apply_mask(&c, desc->head_mask);
    if (c.H_active == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "head_mask prunes all %u heads; keep at least one",
                             c.H);
    if (c.group > 1 && c.H_active < c.H)
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED,
                             "head_mask prunes heads of a grouped-query layer (num_kv_heads %u of num_heads %u): "
                             "pruning is implemented for num_kv_heads = num_heads only",
                             c.H_kv, c.H);
    c.kdim = desc->kdim ? desc->kdim : c.E;
    c.vdim = desc->vdim ? desc->vdim : c.E;
    c.bias = !desc->no_bias;
    c.bias_kv = desc->add_bias_kv != 0;
    c.zero_attn = desc->add_zero_attn != 0;
    c.extra_keys = (uint32_t)c.bias_kv + (uint32_t)c.zero_attn;
    c.packed_in_proj = c.kdim == c.E && c.vdim == c.E;
    c.storage = desc->storage;
    c.precision = desc->precision; /* DEFAULT follows the storage the layer gets: vkattn_layer_create */
    vkattn_status status = resolve_rope(desc, &c, error);
    if (status == VKATTN_OK) status = resolve_qk_norm(desc, &c, error);
    if (status == VKATTN_OK) status = resolve_variants(desc, &c, error);
    if (status != VKATTN_OK) return status;

    /* The largest weight matrix is (E_q + 2 E_kv, max(E,kdim,vdim)) when packed, W_O (E, E_q);
     * shaders index them with uint. */
    uint32_t widest = c.E > c.kdim ? c.E : c.kdim;
    widest = widest > c.vdim ? widest : c.vdim;
    size_t elems, out_elems;
    if (!vka_mul_size((size_t)c.E_q + 2 * (size_t)c.E_kv, widest, &elems) || elems > VKA_MAX_ELEMS ||
        !vka_mul_size(c.E, c.E_q, &out_elems) || out_elems > VKA_MAX_ELEMS)
        return vka_error_set(error, VKATTN_ERROR_SIZE_OVERFLOW,
                             "weights of embed_dim %u, %u heads of %u dims, kdim %u, vdim %u have more than 2^32 elements",
                             c.E, c.H, c.D, c.kdim, c.vdim);
    *out = c;
    return VKATTN_OK;
}

vkattn_status vka_layer_config_resolve(const vkattn_layer_desc *desc, const vkattn_weights *weights,
                                       vka_layer_config *out, vkattn_error *error)
{
    vka_layer_config c;
    vkattn_status status = vka_layer_config_from_desc(desc, &c, error);
    if (status != VKATTN_OK) return status;
    if (!weights) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "weights are NULL");
    status = check_weight_pointers(&c, weights, error);
    for (uint32_t h = 0; status == VKATTN_OK && weights->sinks && h < c.H; h++)
        if (!isfinite(weights->sinks[h]))
            status = vka_error_set(error, VKATTN_ERROR_NON_FINITE, "weights: sinks[%u] is %g; sink logits must be finite",
                                   h, (double)weights->sinks[h]);
    for (int key = 0; status == VKATTN_OK && key < 2 && c.qk_norm; key++) {
        const float *w = key ? weights->k_norm_weight : weights->q_norm_weight;
        for (uint32_t i = 0; status == VKATTN_OK && i < vka_qk_norm_width(&c, key); i++)
            if (!isfinite(w[i]))
                status = vka_error_set(error, VKATTN_ERROR_NON_FINITE, "weights: %s[%u] is %g; norm weights must be finite",
                                       key ? "k_norm_weight" : "q_norm_weight", i, (double)w[i]);
    }
    c.sinks = weights->sinks != NULL;
    if (status == VKATTN_OK) *out = c;
    return status;
}

uint32_t vka_count_active_heads(uint32_t H, const uint8_t *mask)
{
    uint32_t count = 0;
    for (uint32_t h = 0; h < H; h++) count += !mask || mask[h] != 0;
    return count;
}

void vka_layer_config_apply_mask(vka_layer_config *c, const uint8_t *mask)
{
    uint32_t kv_active = 0;
    for (uint32_t k = 0; k < c->H_kv; k++)
        kv_active += vka_count_active_heads(c->group, mask ? mask + (size_t)k * c->group : NULL) > 0;
    c->H_active = vka_count_active_heads(c->H, mask);
    c->inner = c->H_active * c->D;
    c->inner_kv = kv_active * c->D;
}
