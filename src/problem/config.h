/* Resolved layer configuration and per-forward problem description.
 *
 * Both are pure data: the public entry points validate user input into these structs once, and
 * everything downstream (plan, recording, the CPU path) trusts them. */
#ifndef VKA_CONFIG_H
#define VKA_CONFIG_H

#include <stdint.h>

#include "vkattn.h"

typedef struct vka_layer_config {
    uint32_t E, H, D;    /* embed_dim, heads, head dim */
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
    int packed_in_proj;  /* kdim == vdim == E: W_Q, W_K, W_V stored as one (E + 2 E_kv, E) matrix */
    vkattn_dtype storage;
    /* rotary position embedding (rope_theta 0 = off) */
    float rope_theta;
    uint32_t rope_dim;   /* resolved: D when the desc says 0; 0 when off */
    vkattn_rope_style rope_style;
    /* attention variants (vkattn_layer_desc; 0 = off) */
    uint32_t window;     /* sliding window: keys more than window - 1 positions before the query are masked */
    float softcap;       /* scaled scores x become softcap * tanh(x / softcap) */
    int alibi;           /* scores get m_h * (pos_j - pos_i); the slopes live with the layer (vka_alibi_slopes) */
    int sinks;           /* the weights hold a sink logit per head (vkattn_weights.sinks) */
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

/* inv_freq_i = theta^(-2i / rope_dim) for i < rope_dim / 2, computed in double and rounded to
 * float: the one table both the CPU path and the device kernel use. */
void vka_rope_inv_freq(const vka_layer_config *c, float *out);

typedef enum vka_valid_lens_mode {
    VKA_VALID_LENS_NONE = 0,
    VKA_VALID_LENS_PER_BATCH = 1, /* (B) */
    VKA_VALID_LENS_PER_QUERY = 2  /* (B,L) */
} vka_valid_lens_mode;

typedef enum vka_attn_mask_mode {
    VKA_ATTN_MASK_NONE = 0,
    VKA_ATTN_MASK_BOOL = 1,
    VKA_ATTN_MASK_FLOAT = 2
} vka_attn_mask_mode;

/* A forward through a paged KV cache (vkattn_forward_cached): `seqs` sequences whose new tokens,
 * T in all, are the problem's L = S = T query rows (B = 1, self-attention); the keys come from the
 * cache's pools, through a `meta` buffer laid out as shaders/abi.h says. seqs = 0: no cache. */
typedef struct vka_cache_problem {
    uint32_t seqs;
    uint32_t max_new;       /* the most new tokens of one sequence */
    uint32_t max_len;       /* the longest sequence, its new tokens included */
    uint32_t block_size, num_blocks;
    vkattn_dtype dtype;     /* of the pools */
    uint32_t positions_at;  /* meta index of the T positions, then the T slots */
    uint32_t meta_words;
    uint32_t splits;        /* vkattn_cached_forward_desc.kv_splits */
} vka_cache_problem;

typedef struct vka_problem {
    vka_layer_config cfg;
    uint32_t B, L, S;
    uint32_t S_ext;         /* S' = S + cfg.extra_keys */
    int self_attention;     /* key and value are the query itself: one Q/K/V projection */
    int causal;
    int causal_end;         /* causal aligned at the end (bottom-right): the layer has positions */
    int key_padding_mask;
    vka_valid_lens_mode valid_lens;
    vka_attn_mask_mode attn_mask;
    int attn_mask_per_head; /* (B*H,L,S) rather than (L,S) */
    vkattn_weights_kind weights;
    int lse;                /* the log-sum-exp of every row is wanted (fused path) */
    vkattn_path path;       /* as requested */
    uint32_t rope_offset;   /* added to every query and key position (RoPE only) */
    /* element types of the caller's tensors (F32 for host forwards) */
    vkattn_dtype query_dtype, key_dtype, value_dtype, output_dtype;
    vka_cache_problem cache;
    vkattn_dtype kv_round;  /* the CPU path rounds k and v as a KV cache of this dtype stores them (F32: not) */
} vka_problem;

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

/* The checks every problem passes, however it was described: outputs that can be asked for
 * together (weights and lse cannot; pruned heads give neither), and every element count the
 * problem implies fits in size_t and in uint32_t where shaders index with 32-bit integers
 * (element counts of each tensor and of one head's scores). */
/* RoPE positions of query 0 and key 0. The queries and the keys end at the same position: query i
 * is at rope_offset + (max(L, S) - L) + i and key j at rope_offset + (max(L, S) - S) + j. So
 * with L = S a token's position is its index (plus rope_offset), and L new tokens attending to
 * S >= L keys that end with them (decoding, a chunk of a prompt) sit at the end of the keys. */
void vka_rope_first_positions(const vka_problem *p, uint32_t *query, uint32_t *key);
vkattn_status vka_problem_check(const vka_problem *p, vkattn_error *error);

/* Element counts of the tensors of a problem (valid after vka_problem_check). */
size_t vka_problem_query_elems(const vka_problem *p);
size_t vka_problem_key_elems(const vka_problem *p);
size_t vka_problem_value_elems(const vka_problem *p);
size_t vka_problem_output_elems(const vka_problem *p);
size_t vka_problem_weights_elems(const vka_problem *p); /* 0 if no weights requested */
size_t vka_problem_attn_mask_elems(const vka_problem *p);
size_t vka_problem_valid_lens_elems(const vka_problem *p);

#endif
