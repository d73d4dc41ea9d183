/* The arguments of a forward and the problem they describe. Each argument is one row in one table
 * (args.c) saying what a caller may pass, in which dtypes and shapes (dims written in the
 * glossary's symbols), and which role binds it. Every entry point (device tensors, host arrays, a
 * cached forward) describes what it was given as a vka_args and one function checks that against
 * the table and the layer, giving the vka_problem everything downstream trusts; shapes, element
 * counts and dtypes of the arguments are read back from the same table. A new argument is a new
 * row. */
#ifndef VKA_ARGS_H
#define VKA_ARGS_H

#include "problem/config.h"
#include "problem/roles.h"

typedef enum vka_arg {
    VKA_ARG_QUERY,
    VKA_ARG_KEY,
    VKA_ARG_VALUE,
    VKA_ARG_KEY_PADDING_MASK,
    VKA_ARG_VALID_LENS,
    VKA_ARG_ATTN_MASK,
    VKA_ARG_OUTPUT,
    VKA_ARG_WEIGHTS,
    VKA_ARG_LSE,
    VKA_ARG_COUNT
} vka_arg;

/* The symbols a dim is written in (the glossary in vkattn.h). */
typedef enum vka_dim {
    VKA_DIM_B,
    VKA_DIM_L,
    VKA_DIM_S,
    VKA_DIM_S_EXT, /* S' = S + extra keys */
    VKA_DIM_E,
    VKA_DIM_H,
    VKA_DIM_BH,    /* B * H */
    VKA_DIM_KDIM,
    VKA_DIM_VDIM,
    VKA_DIM_COUNT
} vka_dim;

/* One shape an argument may have. */
typedef struct vka_arg_form {
    uint32_t rank;
    vka_dim dims[VKATTN_MAX_RANK];
    const char *names; /* "B, L, E", for messages */
    const char *label; /* the argument's name in messages when this form was asked for; NULL = the row's */
} vka_arg_form;

typedef struct vka_arg_row {
    const char *name;
    vka_role role;        /* the plan role that binds it */
    uint32_t dtypes;      /* accepted dtypes, bit 1 << vkattn_dtype */
    int output;           /* written by the forward */
    uint32_t forms;       /* 1 or 2 shapes; which one was given sets the problem's mode */
    vka_arg_form form[2];
} vka_arg_row;

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
    uint32_t positions_at;  /* meta index of the T positions, then the T slots (then the masks) */
    uint32_t meta_words;
    uint32_t parts;         /* vkattn_cached_forward_desc.kv_splits: key parts asked for, 0 = the device's choice */
    int tree;               /* a mask among each sequence's new tokens (new_token_mask) replaces their causal rule */
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
    int positions;          /* the CPU path places the tokens at the caller's positions (vka_host_arrays) */
} vka_problem;


const vka_arg_row *vka_arg_get(vka_arg arg);

/* One argument as a caller gave it: a device tensor, or host data whose dtype and shape the host
 * description's sizes and flags say. */
typedef struct vka_arg_value {
    int given;
    vkattn_dtype dtype;
    uint32_t rank;
    uint32_t dims[VKATTN_MAX_RANK];
    const vkattn_tensor *tensor; /* device entry point (opaque here) */
    uint64_t memory, begin, end; /* a device argument's bytes: its VkBuffer's handle and a range of it */
    const void *host;            /* host entry point (outputs: where results go) */
} vka_arg_value;

/* Everything a forward was given. */
typedef struct vka_args {
    vka_arg_value v[VKA_ARG_COUNT];
    int weights_averaged; /* the attn_weights asked for are the head average (its second form) */
    int causal;
    vkattn_path path;
    uint32_t rope_offset;
    vkattn_dtype kv_round; /* the CPU path rounds k and v as this KV cache dtype stores them */
    const uint32_t *positions; /* the CPU path's token positions, (B, L) of a self-attention forward */
    int key_is_query; /* key (and value) not given: self-attention on the query */
} vka_args;

/* VKATTN_ERROR_INVALID_ARGUMENT unless `path` is a vkattn_path. */
vkattn_status vka_check_path(vkattn_path path, vkattn_error *error);
/* Describes a host forward's arrays from its sizes and flags. */
vkattn_status vka_args_from_host(const vka_layer_config *cfg, const vkattn_host_forward_desc *d, vka_args *out,
                                 vkattn_error *error);

/* Checks every argument against its row and the layer (dtypes, shapes, what may be asked for
 * together, sizes, float-mask values the library can see) and fills `out`. */
vkattn_status vka_args_check(const vka_layer_config *cfg, const vka_args *args, vka_problem *out, vkattn_error *error);

/* The expected dims of one form of an argument for a problem. */
void vka_arg_dims(const vka_problem *p, const vka_arg_form *form, uint32_t *dims);

/* Finds the first NaN or +inf in a float mask: those make a softmax row NaN, so they are refused. */
vkattn_status vka_check_float_mask(const float *mask, size_t n, vkattn_error *error);

/* RoPE positions of query 0 and key 0. The queries and the keys end at the same position: query i
 * is at rope_offset + (max(L, S) - L) + i and key j at rope_offset + (max(L, S) - S) + j. So
 * with L = S a token's position is its index (plus rope_offset), and L new tokens attending to
 * S >= L keys that end with them (decoding, a chunk of a prompt) sit at the end of the keys. */
void vka_rope_first_positions(const vka_problem *p, uint32_t *query, uint32_t *key);

/* The sequence length whose RoPE table a forward uses (problem/rope.h): its last position + 1, the
 * longest sequence after its new tokens for a cached forward. */
uint64_t vka_rope_seq_len(const vka_problem *p);

/* The checks every problem passes, however it was described: outputs that can be asked for
 * together (weights and lse cannot; pruned heads give neither), and every element count the
 * problem implies fits in size_t and in uint32_t where shaders index with 32-bit integers (each
 * argument's, by its row of the table, and the projections' and one head's scores). */
vkattn_status vka_problem_check(const vka_problem *p, vkattn_error *error);

/* The path that runs a problem: `requested`, or for VKATTN_PATH_AUTO the fused path unless
 * attention weights are asked for (only the unfused path forms them). The forward, the plan and
 * the cost model all resolve it here. */
vkattn_path vka_resolve_path(vkattn_path requested, vkattn_weights_kind weights);

/* What the problem holds for one argument, by the table: the form it was given in (-1 when it was
 * not given), its dtype and its element count (0 when not given). */
int vka_arg_form_of(const vka_problem *p, vka_arg arg);
vkattn_dtype vka_arg_dtype(const vka_problem *p, vka_arg arg);
uint64_t vka_arg_elems(const vka_problem *p, vka_arg arg);



#endif
