/* The resolved layer configuration: a layer description (and its weights) checked once, with every
 * default filled in and every derived width computed. Pure data that everything downstream (the
 * problem, the plan, recording, the CPU path) trusts. */
#ifndef VKA_CONFIG_H
#define VKA_CONFIG_H

#include <stdint.h>

#include "vkattn.h"

typedef struct vka_layer_config {
    uint32_t E, H, D;    /* embed_dim, heads, head dim (vkattn_layer_desc.head_dim, else E / H) */
    uint32_t E_q;        /* H * D: rows of W_Q, columns of W_O, width of q and ctx in the reference */
    float scale;         /* the scores' scale: vkattn_layer_desc.scale, else 1 / sqrt(D) */
    uint32_t H_kv;       /* key/value heads (num_kv_heads resolved): H, or a divisor of H */
    uint32_t group;      /* H / H_kv: query heads per key/value head (query head h reads K/V head h / group) */
    uint32_t E_kv;       /* H_kv * D: rows of W_K and W_V, width of k and v in the reference */
    uint32_t H_active;   /* heads computed: H minus the pruned ones (vkattn_layer_set_head_mask) */
    uint32_t inner;      /* H_active * D: width of the projected Q and of ctx on the device */
    uint32_t inner_kv;   /* the projected K/V width on the device: the K/V heads some active head reads, times D */
    uint32_t kdim, vdim; /* defaults resolved */
    int bias;            /* in/out projections have biases */
    int bias_kv;         /* add_bias_kv */
    int zero_attn;       /* add_zero_attn */
    uint32_t extra_keys; /* bias_kv + zero_attn: keys appended after the S real ones */
    int packed_in_proj;  /* kdim == vdim == E: W_Q, W_K, W_V stored as one (E_q + 2 E_kv, E) matrix */
    vkattn_dtype storage;
    /* rotary position embedding (off: rope_dim 0) */
    float rope_theta;
    uint32_t rope_dim;   /* resolved: D when the desc says 0; 0 when off */
    vkattn_rope_style rope_style;
    vkattn_rope_scaling rope_scaling; /* its lists point at the caller's arrays until the layer copies them */
    float rope_attention; /* the attention factor cos and sin are scaled by (problem/rope.h) */
    /* RMS norms of q and k (vkattn_layer_desc.qk_norm) */
    vkattn_qk_norm qk_norm;
    float qk_norm_eps;
    int qk_norm_plus_one;
    /* attention variants (vkattn_layer_desc; 0 = off) */
    uint32_t window;     /* sliding window: keys more than window - 1 positions before the query are masked */
    float softcap;       /* scaled scores x become softcap * tanh(x / softcap) */
    int alibi;           /* scores get m_h * (pos_j - pos_i); the slopes live with the layer (vka_alibi_slopes) */
    int sinks;           /* the weights hold a sink logit per head (vkattn_weights.sinks) */
    vkattn_precision precision; /* as asked; a layer's is F32 or F16 (DEFAULT follows its storage): only F16
                                   takes the cooperative-matrix kernels */
} vka_layer_config;

/* The ALiBi slope of each of the H heads: `given` (H floats) when not NULL, else the standard
 * geometric slopes (vkattn_layer_desc.alibi_slopes), computed in double and rounded to float. */
void vka_alibi_slopes(uint32_t H, const float *given, float *out);

/* Whether the layer gives tokens positions (RoPE, a sliding window, ALiBi): then queries and keys
 * end at the same position and `causal` follows the positions (aligned at the end, bottom-right);
 * otherwise it is PyTorch's top-left mask. The two agree when L = S. */
int vka_layer_has_positions(const vka_layer_config *c);

/* Whether any per-score variant (window, softcap, ALiBi, sinks) is on: the attention kernels'
 * VKA_SPEC_VARIANT bits (abi.h). */
uint32_t vka_variant_bits(const vka_layer_config *c);

/* The widths of q's and k's norm weights: D per head, or the whole projected row; 0 without. */
uint32_t vka_qk_norm_width(const vka_layer_config *c, int key);

/* Checks a layer description (no weights); fills `out`. */
vkattn_status vka_layer_config_from_desc(const vkattn_layer_desc *desc, vka_layer_config *out, vkattn_error *error);

/* Checks a layer description and its host weights; fills `out`. */
vkattn_status vka_layer_config_resolve(const vkattn_layer_desc *desc, const vkattn_weights *weights,
                                       vka_layer_config *out, vkattn_error *error);

/* The heads a mask keeps (mask[h] != 0); all H when `mask` is NULL. */
uint32_t vka_count_active_heads(uint32_t H, const uint8_t *mask);

/* Fills H_active, inner and inner_kv from a head mask (NULL: all heads): a K/V head counts when
 * any of its query heads is active. */
void vka_layer_config_apply_mask(vka_layer_config *c, const uint8_t *mask);

#endif
