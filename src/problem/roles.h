/* The roles of the buffers a forward involves: the caller's arguments, a KV cache's pools, the
 * layer's weights and the workspace the plan sizes. The argument table binds each argument to its
 * role; the plan's steps name roles, and recording resolves them to buffers. */
#ifndef VKA_ROLES_H
#define VKA_ROLES_H

/* Every buffer a step can bind, resolved to a real buffer when recording. */
typedef enum vka_role {
    VKA_ROLE_NONE = 0, /* a small placeholder: the slot is not read */
    /* caller tensors */
    VKA_ROLE_QUERY,
    VKA_ROLE_KEY,   /* the query tensor for self-attention */
    VKA_ROLE_VALUE, /* the key tensor when value was not given */
    VKA_ROLE_KEY_PADDING_MASK,
    VKA_ROLE_VALID_LENS,
    VKA_ROLE_ATTN_MASK,
    VKA_ROLE_OUTPUT,
    VKA_ROLE_WEIGHTS,
    VKA_ROLE_LSE,
    /* a cached forward's KV cache: its pools (the cache's dtype) and the forward's sequence table */
    VKA_ROLE_CACHE_K,
    VKA_ROLE_CACHE_V,
    VKA_ROLE_CACHE_META, /* uint32 words, see "The paged KV cache" in abi.h */
    /* layer weights (storage dtype; biases fp32) */
    VKA_ROLE_W_IN,    /* (I + 2 I_kv, E) when packed, else W_Q (I, E) (I_kv = inner_kv) */
    VKA_ROLE_W_K,     /* (I_kv, kdim), only when not packed */
    VKA_ROLE_W_V,     /* (I_kv, vdim), only when not packed */
    VKA_ROLE_B_IN,    /* (I + 2 I_kv) */
    VKA_ROLE_W_OUT,   /* (E,E) */
    VKA_ROLE_B_OUT,   /* (E) */
    VKA_ROLE_EXTRA_K, /* (I_kv / D, extra_keys, D): bias_k and/or the zero key per K/V head */
    VKA_ROLE_EXTRA_V,
    VKA_ROLE_ROPE_FREQ, /* (rope_dim / 2) fp32: RoPE's inv_freq table */
    VKA_ROLE_HEAD_TERMS, /* (H', 2) fp32: each computed head's ALiBi slope and sink logit */
    VKA_ROLE_QK_NORM,    /* fp32: q's norm weights then k's (vka_qk_norm_width each), 1 + w for Gemma */
    /* workspace, owned by the layer and sized by the plan */
    VKA_ROLE_QKV,    /* (B, H' + 2 H_kv', S', D) one matmul, or Q alone (B, H', L, D) */
    VKA_ROLE_K_PROJ, /* (B, H_kv', S', D): S projected keys then the extra keys, per K/V head */
    VKA_ROLE_V_PROJ, /* (B, H_kv', S', D) */
    VKA_ROLE_SCORES, /* chunk rows × S' (fp32) */
    VKA_ROLE_CTX,    /* (B·L, E), heads concatenated */
    VKA_ROLE_CTX_ACC,       /* (B·L, E) fp32: P·V sums of long rows, key range by key range */
    VKA_ROLE_SOFTMAX_STATS, /* (rows, chunks, 3) fp32: per-chunk max, sum, NaN flag of long rows */
    VKA_ROLE_STATE_O,       /* (parts, rows, D) fp32: softmax states of the fused key parts */
    VKA_ROLE_STATE_LSE,     /* (parts, rows) fp32 */
    VKA_ROLE_ROPE_TABLE,    /* (rope_dim / 2) fp32: the RoPE table of a sequence longer than the layer's own
                               table serves (problem/rope.h), written by the forward */
    VKA_ROLE_COUNT
} vka_role;

#define VKA_FIRST_LAYER_ROLE VKA_ROLE_W_IN
#define VKA_FIRST_WORKSPACE_ROLE VKA_ROLE_QKV

/* "query", "w_in", "state_o", ... */
const char *vka_role_name(vka_role role);
/* What a role is, for messages: "out_proj.weight", "the score buffer (workspace)", ... */
const char *vka_role_what(vka_role role);

#endif
