/* The GPU-vs-CPU table: every row runs on the device and on the CPU reference path and compares
 * the outputs (and attention weights, and the fused path's log-sum-exp) on max-abs error and NMSE.
 * Each row runs on both device paths: unfused, and fused unless it asks for attention weights
 * (which only the unfused path forms; the fused path must then refuse).
 *
 * Tolerances, fp32 storage (fp32 on the device against a double-accumulated reference):
 * NMSE <= 1e-10, i.e. about 1e-5 relative RMS error, and max-abs <= 1e-5 * max(1, max|ref|);
 * log-sum-exp max-abs <= 1e-5 * max(1, max|ref|). Rows whose inputs are scaled x30 (peaky softmax:
 * logits in the hundreds, so fp32 rounding of the logits is amplified) allow 1e-8 NMSE and 1e-4.
 * Attention weights are probabilities: max-abs <= 1e-5 (1e-4 for x30 rows). Masked and
 * fully-masked positions must match exactly (zeros, never NaN).
 *
 * fp16 storage (weights, Q/K/V and the attention output rounded to fp16; accumulation in fp32),
 * against the same fp32 reference: NMSE <= 2e-6 and max-abs <= 1e-2 * max(1, max|ref|), the error
 * of a few fp16 roundings (unit roundoff 4.9e-4) of O(1) values.
 *
 * Rows with `nan_masked` put NaN into every key and value row that no query may see (padding,
 * keys past the valid lengths, attn_mask columns blocked for every query): outputs must then be
 * finite on both sides, and equal. Rows with a `loop_budget` run on a context whose plan keeps
 * every kernel within that many loop trips per invocation (lavapipe's own limit is 65535), so
 * the splits real shapes need (fused key parts merged by log-sum-exp, key chunks carrying the
 * softmax state, softmax and P·V key ranges, matmul reduction parts) run at small shapes.
 *
 * Under VKATTN_TUNING=coopmat (ctest's gpu_vs_cpu_coopmat_* families) the rows of the device's own
 * tuning ask for precision VKATTN_PRECISION_F16 (f32 storage too): the projections and the fused
 * attention run on cooperative matrices with fp16-rounded operands, held to the fp16 tolerances;
 * on a device that refuses that tuning the run is skipped (exit 77).
 *
 * Usage: test_gpu_vs_cpu [family]  (no argument = every family)
 */
#include "api/context.h"
#include "gpu_test.h"

/* attn_mask kinds: random (about a fifth of the entries masked: hardly a key block masked whole),
 * and two patterns that mask whole blocks of keys, which the fused kernels skip: the causal mask
 * as a float mask, aligned at the end (-inf for key j > i + S - L, random terms elsewhere), and
 * packed documents (a query sees the keys of its own document up to itself) */
typedef enum mask_kind { MASK_NONE, MASK_BOOL, MASK_FLOAT, MASK_FLOAT_CAUSAL, MASK_BOOL_DOCUMENTS } mask_kind;
#define MASK_IS_BOOL(kind) ((kind) == MASK_BOOL || (kind) == MASK_BOOL_DOCUMENTS)
typedef enum lens_kind { LENS_NONE, LENS_PER_BATCH, LENS_PER_QUERY } lens_kind;
typedef enum weights_kind { WEIGHTS_NONE, WEIGHTS_PER_HEAD, WEIGHTS_AVERAGED } weights_kind;

typedef struct test_case {
    const char *family;
    const char *name;
    uint32_t B, L, S; /* S = 0: self-attention (key = value = query) */
    uint32_t E, H, kdim, vdim;
    int no_bias, bias_kv, zero_attn;
    int causal, key_padding;
    lens_kind lens;
    mask_kind mask;
    int mask_per_head;
    weights_kind weights;
    float input_scale;  /* 0 = 1 */
    int fully_masked;   /* force some rows to have every key masked */
    vkattn_dtype storage;
    const char *tuning;  /* kernel tuning of the context: NULL = the device's own */
    int also_f16;        /* run the row with fp16 storage too, against the same reference */
    int nan_masked;      /* NaN in every key/value row no query may see */
    uint32_t nan_seen;   /* > 0: NaN in batch item 0's key row nan_seen (cross-attention), which some of its
                            queries see (per-query lengths): those rows NaN on both sides, the lse too */
    const char *plan_has; /* text the fused path's plan must hold (the shape a row was written for) */
    uint32_t loop_budget; /* 0 = the device's own */
    uint32_t binding_kib; /* the context's bindings at most this (0: the device's): tensors past them in slices */
    uint32_t kv_heads;    /* num_kv_heads: 0 = H */
    float rope_theta;     /* 0 = no RoPE */
    uint32_t rope_dim;    /* 0 = D */
    int rope_gptj;        /* 0 = NeoX pairs */
    uint32_t rope_offset;
    /* attention variants (vkattn_layer_desc; 0 = off) */
    uint32_t window;
    float softcap;
    int alibi;
    const float *slopes;  /* alibi_slopes: NULL = the standard ones */
    int sinks;            /* a random sink logit per head in [-1, 3) */
    const uint8_t *head_mask; /* NULL = every head */
    int suffix;           /* the L queries are the last L of the S keys (key = value = one sequence): the
                             reference must also equal the last L rows of one causal self-attention
                             forward over all S (L < S, causal, a layer with positions) */
    /* today's models (vkattn_layer_desc; 0 = off / the default) */
    uint32_t head_dim;    /* 0 = E / H */
    float scale;
    vkattn_rope_scaling rope_scaling;
    vkattn_qk_norm qk_norm;
    int qk_plus_one;
} test_case;

/* Real head dims at L = S = 1024 and 2048, causal and not, fp32 and fp16, both paths. A layer
 * runs the same per-head kernels H times, so these rows use one head (E = D) at L = 2048 and two
 * at L = 1024 to keep the suite's CPU reference time in bounds; the head-count rows above and the
 * llama rows below cover many heads and wide projections. */
#define REAL_SHAPE(name, D, L, H, causal_)                                                          \
    {"real_shapes", name, 1, L, 0, (D) * (H), H, .causal = causal_, .also_f16 = 1}

/* LongRoPE factors for 8 rotated pairs (any positive list tests the formula), and a table */
static const float k_short8[8] = {1.0f, 1.125f, 1.25f, 1.5f, 2.0f, 2.5f, 3.0f, 4.0f};
static const float k_long8[8] = {1.0f, 2.0f, 4.0f, 8.0f, 16.0f, 24.0f, 32.0f, 48.0f};

static const test_case cases[] = {
    /* heads: H in {1,2,3,8,12} at E = 48 */
    {"heads", "H1", 2, 17, 0, 48, 1},
    {"heads", "H2", 2, 17, 0, 48, 2},
    {"heads", "H3", 2, 17, 0, 48, 3},
    {"heads", "H8", 2, 17, 0, 48, 8},
    {"heads", "H12", 2, 17, 0, 48, 12, .causal = 1},
    /* head dims: D in {1,7,16,64,80,128} */
    {"dims", "D1", 2, 17, 0, 2, 2},
    {"dims", "D7", 2, 17, 0, 21, 3},
    {"dims", "D16", 2, 64, 0, 32, 2},
    {"dims", "D64", 1, 64, 0, 128, 2, .causal = 1},
    {"dims", "D80", 1, 64, 0, 160, 2},
    {"dims", "D128", 1, 64, 0, 256, 2, .weights = WEIGHTS_PER_HEAD},
    /* lengths: L = S in {1,5,17,64,127,300,1024} */
    {"lengths", "L1", 3, 1, 0, 32, 4},
    {"lengths", "L5", 2, 5, 0, 32, 4},
    {"lengths", "L17", 2, 17, 0, 32, 4, .causal = 1},
    {"lengths", "L64", 2, 64, 0, 32, 4},
    {"lengths", "L127", 2, 127, 0, 32, 4, .causal = 1},
    {"lengths", "L300", 1, 300, 0, 32, 4},
    {"lengths", "L1024", 1, 1024, 0, 32, 4, .causal = 1},
    /* cross-attention: L != S, kdim/vdim != E, bias off, extra keys */
    {"cross", "L5_S17", 2, 5, 17, 32, 4},
    {"cross", "L127_S300", 1, 127, 300, 32, 2},
    {"cross", "L1_S64", 3, 1, 64, 16, 2},
    {"cross", "L300_S1", 1, 300, 1, 16, 2},
    {"cross", "L17_S1024", 1, 17, 1024, 32, 4},
    {"cross", "kdim_vdim", 2, 17, 5, 32, 4, 24, 40},
    {"cross", "kdim_vdim_odd", 2, 7, 9, 21, 3, 5, 11, .causal = 1},
    {"cross", "no_bias", 2, 17, 17, 32, 4, .no_bias = 1},
    {"cross", "no_bias_kdim", 1, 5, 17, 16, 2, 8, 8, .no_bias = 1},
    {"cross", "bias_kv", 2, 17, 5, 32, 4, .bias_kv = 1},
    {"cross", "zero_attn", 2, 17, 5, 32, 4, .zero_attn = 1},
    {"cross", "bias_kv_zero_attn", 2, 5, 17, 32, 4, 24, 40, .bias_kv = 1, .zero_attn = 1},
    {"cross", "self_bias_kv", 2, 17, 0, 32, 4, .bias_kv = 1, .zero_attn = 1, .causal = 1},
    /* masks: each kind, and combinations */
    {"masks", "causal", 2, 64, 0, 32, 4, .causal = 1},
    {"masks", "causal_L_ne_S", 2, 17, 64, 32, 4, .causal = 1},
    {"masks", "causal_L_gt_S", 2, 64, 17, 32, 4, .causal = 1},
    {"masks", "key_padding", 3, 17, 0, 32, 4, .key_padding = 1},
    {"masks", "valid_lens_batch", 3, 17, 0, 32, 4, .lens = LENS_PER_BATCH},
    {"masks", "valid_lens_query", 2, 17, 31, 32, 4, .lens = LENS_PER_QUERY},
    {"masks", "bool_mask", 2, 17, 23, 32, 4, .mask = MASK_BOOL},
    {"masks", "bool_mask_per_head", 2, 17, 23, 32, 4, .mask = MASK_BOOL, .mask_per_head = 1},
    {"masks", "float_mask", 2, 17, 23, 32, 4, .mask = MASK_FLOAT},
    {"masks", "float_mask_per_head", 2, 17, 0, 32, 4, .mask = MASK_FLOAT, .mask_per_head = 1},
    {"masks", "float_mask_causal", 2, 40, 61, 32, 4, .mask = MASK_FLOAT_CAUSAL},
    {"masks", "causal_padding", 2, 64, 0, 32, 4, .causal = 1, .key_padding = 1},
    {"masks", "all_kinds_bool", 2, 33, 33, 32, 4, .causal = 1, .key_padding = 1, .lens = LENS_PER_QUERY,
     .mask = MASK_BOOL, .mask_per_head = 1},
    {"masks", "all_kinds_float", 2, 33, 0, 32, 4, .causal = 1, .key_padding = 1, .lens = LENS_PER_BATCH,
     .mask = MASK_FLOAT},
    {"masks", "masks_extra_keys", 2, 17, 23, 32, 4, .bias_kv = 1, .zero_attn = 1, .key_padding = 1,
     .mask = MASK_FLOAT, .causal = 1},
    {"masks", "fully_masked_rows", 3, 17, 17, 32, 4, .key_padding = 1, .lens = LENS_PER_QUERY, .fully_masked = 1},
    {"masks", "fully_masked_float", 2, 9, 0, 16, 2, .mask = MASK_FLOAT, .mask_per_head = 1, .fully_masked = 1},
    {"masks", "fully_masked_extra", 2, 9, 12, 16, 2, .zero_attn = 1, .key_padding = 1, .fully_masked = 1},
    /* masks_blocks: masks that hide whole key blocks, in the builds the rows above do not take
     * (fp16, key parts, the gpu class's workgroups); on the first driver only, where the rows above
     * run on both (on Mesa 25 these three compiled for 137 s of the family's 206) */
    {"masks_blocks", "bool_mask_documents", 2, 61, 0, 32, 4, .mask = MASK_BOOL_DOCUMENTS, .mask_per_head = 1, .also_f16 = 1},
    /* ... in key parts (a budget of 40 trips: 32 keys an invocation), with a sink and a zero key */
    {"masks_blocks", "float_mask_causal_parts", 1, 40, 61, 32, 4, .mask = MASK_FLOAT_CAUSAL, .loop_budget = 40, .sinks = 1, .plan_has = "parts of",
     .zero_attn = 1},
    /* attn_fused_shared (the gpu class) over 130 keys in workgroups of 64 query rows: the first
     * workgroup's rows see none of the keys from 64 on, so it stages none of those blocks (its
     * invocations' vote), the later ones every block (D = 128) */
    {"masks_blocks", "float_mask_causal_shared", 1, 130, 130, 256, 2, .mask = MASK_FLOAT_CAUSAL, .tuning = "gpu",
     .plan_has = "by workgroups of 64 query rows"},
    /* attention weights out */
    {"weights", "per_head", 2, 17, 23, 32, 4, .weights = WEIGHTS_PER_HEAD},
    {"weights", "averaged", 2, 17, 23, 32, 4, .weights = WEIGHTS_AVERAGED},
    {"weights", "per_head_masks", 2, 17, 0, 32, 4, .causal = 1, .key_padding = 1, .weights = WEIGHTS_PER_HEAD},
    {"weights", "averaged_extra", 2, 17, 5, 48, 12, .bias_kv = 1, .zero_attn = 1, .weights = WEIGHTS_AVERAGED},
    {"weights", "averaged_fully_masked", 3, 9, 9, 16, 2, .lens = LENS_PER_BATCH, .fully_masked = 1,
     .weights = WEIGHTS_AVERAGED},
    {"weights", "per_head_long", 1, 127, 300, 32, 8, .mask = MASK_BOOL, .weights = WEIGHTS_PER_HEAD},
    /* softmax stability: inputs x30 */
    {"stability", "x30", 2, 64, 0, 64, 4, .input_scale = 30},
    {"stability", "x30_causal", 2, 64, 0, 64, 4, .causal = 1, .input_scale = 30, .weights = WEIGHTS_PER_HEAD},
    {"stability", "x30_cross_masks", 2, 17, 127, 32, 2, .key_padding = 1, .mask = MASK_FLOAT, .input_scale = 30},
    /* the score buffer exceeds lavapipe's 128 MiB maxStorageBufferRange: chunked */
    {"chunked", "heads_chunked", 1, 2048, 0, 12, 12, .causal = 1},
    {"chunked", "heads_chunked_averaged", 1, 2048, 0, 12, 12, .key_padding = 1, .weights = WEIGHTS_AVERAGED},
    {"chunked", "rows_chunked", 1, 6000, 0, 2, 1, .causal = 1},
    /* fused path past the unfused limits: L·S·H·4 bytes of scores would be 256 MiB > 128 MiB */
    {"fused_long", "L4096_H4", 1, 4096, 0, 16, 4, .causal = 1},
    {"fused_long", "L3000_S5000_masks", 1, 3000, 5000, 16, 4, .key_padding = 1, .zero_attn = 1},
    /* fp16 storage */
    {"fp16", "self", 2, 64, 0, 64, 4, .storage = VKATTN_DTYPE_F16},
    {"fp16", "cross_masks", 2, 17, 23, 32, 4, 24, 40, .key_padding = 1, .causal = 1, .storage = VKATTN_DTYPE_F16},
    {"fp16", "odd_dims", 2, 9, 7, 21, 3, .bias_kv = 1, .zero_attn = 1, .storage = VKATTN_DTYPE_F16},
    {"fp16", "weights", 1, 33, 0, 32, 2, .weights = WEIGHTS_AVERAGED, .storage = VKATTN_DTYPE_F16},
    {"fp16", "D128", 1, 64, 0, 256, 2, .mask = MASK_FLOAT, .storage = VKATTN_DTYPE_F16},
    /* the shapes real models use (see REAL_SHAPE) */
    REAL_SHAPE("D64_L1024", 64, 1024, 2, 0),   REAL_SHAPE("D64_L2048_causal", 64, 2048, 1, 1),
    REAL_SHAPE("D80_L1024_causal", 80, 1024, 2, 1), REAL_SHAPE("D80_L2048", 80, 2048, 1, 0),
    REAL_SHAPE("D96_L1024", 96, 1024, 2, 0),   REAL_SHAPE("D96_L2048_causal", 96, 2048, 1, 1),
    REAL_SHAPE("D128_L1024_causal", 128, 1024, 2, 1), REAL_SHAPE("D128_L2048", 128, 2048, 1, 0),
    REAL_SHAPE("D160_L1024", 160, 1024, 2, 0), REAL_SHAPE("D160_L2048_causal", 160, 2048, 1, 1),
    REAL_SHAPE("D256_L1024_causal", 256, 1024, 2, 1), REAL_SHAPE("D256_L2048", 256, 2048, 1, 0),
    REAL_SHAPE("D256_L1024", 256, 1024, 1, 0), REAL_SHAPE("D128_L2048_causal", 128, 2048, 1, 1),
    /* long key sequences: cross-attention of a few queries over many keys */
    {"long_keys", "D128_L64_S32768", 1, 64, 32768, 128, 1, .also_f16 = 1},
    {"long_keys", "D64_L16_S65536", 1, 16, 65536, 64, 1, .also_f16 = 1},
    {"long_keys", "D16_L4_S131072_masks", 1, 4, 131072, 32, 2, .key_padding = 1, .zero_attn = 1, .also_f16 = 1},
    /* a LLaMA-sized layer: in_proj_weight (12288, 4096) fp32 is 192 MiB, past lavapipe's 128 MiB
     * maxStorageBufferRange, so the projection binds it through windows */
    {"llama", "E4096_H32", 1, 64, 0, 4096, 32, .causal = 1, .also_f16 = 1},
    /* NaN in key and value rows no query may see changes nothing */
    {"masked_nan", "key_padding", 2, 17, 40, 32, 4, .key_padding = 1, .nan_masked = 1, .also_f16 = 1},
    {"masked_nan", "valid_lens_batch", 3, 9, 33, 32, 4, .lens = LENS_PER_BATCH, .nan_masked = 1, .also_f16 = 1},
    {"masked_nan", "valid_lens_query", 2, 9, 33, 32, 4, .lens = LENS_PER_QUERY, .causal = 1, .nan_masked = 1},
    {"masked_nan", "bool_mask_columns", 2, 17, 23, 48, 4, .mask = MASK_BOOL, .nan_masked = 1},
    {"masked_nan", "padding_weights", 2, 17, 40, 32, 4, .key_padding = 1, .weights = WEIGHTS_PER_HEAD, .nan_masked = 1},
    {"masked_nan", "long_split", 1, 8, 3000, 64, 2, .key_padding = 1, .nan_masked = 1, .loop_budget = 512},
    /* a lowered loop budget: every split at small shapes */
    {"loop_budget", "fused_parts", 2, 33, 700, 64, 2, .causal = 1, .loop_budget = 512, .also_f16 = 1},
    {"loop_budget", "fused_extra_keys", 2, 20, 300, 32, 4, .bias_kv = 1, .zero_attn = 1, .key_padding = 1,
     .loop_budget = 512},
    {"loop_budget", "fused_D7_lse", 2, 9, 250, 21, 3, .mask = MASK_FLOAT, .lens = LENS_PER_QUERY, .loop_budget = 300},
    {"loop_budget", "self_causal", 1, 600, 0, 128, 4, .causal = 1, .loop_budget = 512},
    {"loop_budget", "weights_softmax_ranges", 1, 5, 5000, 16, 2, .weights = WEIGHTS_PER_HEAD, .key_padding = 1,
     .loop_budget = 100},
    {"loop_budget", "averaged_long", 2, 7, 2500, 32, 4, .weights = WEIGHTS_AVERAGED, .causal = 1, .loop_budget = 400},
    {"loop_budget", "matmul_parts", 1, 9, 13, 64, 2, 2000, 1030, .loop_budget = 200, .also_f16 = 1},
    {"loop_budget", "fully_masked", 2, 9, 900, 16, 2, .key_padding = 1, .fully_masked = 1, .loop_budget = 256},
    /* at lavapipe's own budget, just inside and just past one fused part at D = 256 (the model's
     * count is tight there: its head-dim loops are not unrolled), and a matmul reduction of
     * 65534 texels (262136 floats) in one part */
    {"budget_edge", "D256_one_part", 1, 8, 5312, 256, 1, .also_f16 = 1},
    {"budget_edge", "D256_two_parts", 1, 8, 5313, 256, 1},
    {"budget_edge", "matmul_K262136", 1, 3, 2, 8, 1, 262136, 8},
    {"budget_edge", "matmul_K262140", 1, 3, 2, 8, 1, 262140, 8},
    /* the GPU tuning's kernel shapes, run on this device */
    {"gpu_tuning", "self", 2, 33, 0, 32, 4, .causal = 1, .tuning = "gpu"},
    {"gpu_tuning", "cross_odd", 2, 7, 9, 21, 3, 5, 11, .bias_kv = 1, .zero_attn = 1, .key_padding = 1,
     .tuning = "gpu"},
    {"gpu_tuning", "D128_masks", 1, 64, 0, 256, 2, .mask = MASK_FLOAT, .mask_per_head = 1, .tuning = "gpu"},
    {"gpu_tuning", "weights", 2, 17, 23, 32, 4, .weights = WEIGHTS_PER_HEAD, .lens = LENS_PER_QUERY,
     .tuning = "gpu"},
    {"gpu_tuning", "fp16", 2, 17, 0, 32, 4, .storage = VKATTN_DTYPE_F16, .tuning = "gpu"},
    /* key parts merged by several invocations per texel (merge_lanes), with NaN in keys no query
     * sees, and with the lse of a float mask and per-query lengths */
    {"gpu_tuning", "split_parts", 2, 33, 700, 64, 2, .causal = 1, .loop_budget = 512, .also_f16 = 1, .tuning = "gpu"},
    {"gpu_tuning", "split_nan_masked", 1, 8, 3000, 64, 2, .key_padding = 1, .nan_masked = 1, .loop_budget = 512,
     .tuning = "gpu"},
    {"gpu_tuning", "split_D7_lse", 2, 9, 250, 21, 3, .mask = MASK_FLOAT, .lens = LENS_PER_QUERY, .loop_budget = 300,
     .tuning = "gpu"},
    /* a NaN key (row 850) that 5 of batch item 0's 9 queries see, in a part another lane than
     * lane 0 merges (attn_fused_shared's 7 parts of 224 keys in 4 lanes: part 3, lane 3): its NaN
     * must reach the rows' lse through the lanes' shared maxima */
    {"gpu_tuning", "split_nan_seen_lse", 2, 9, 1500, 64, 2, .lens = LENS_PER_QUERY, .nan_seen = 850, .loop_budget = 512,
     .tuning = "gpu",
     .plan_has = "merge 7 parts of (batch, head) pairs 0..3 x queries 0..8 by log-sum-exp (4 lanes per texel)"},
    /* attn_fused_shared with several workgroups of query rows per head (64 invocations of 4 rows
     * at D = 16): a window of 40 over 1000 rows in 3 parts of its 295 keys at a budget of 300 (each
     * workgroup's keys from its first row's window start: from the first row of all, tried once,
     * failed it), per-query lengths with a float mask over 2 parts (a workgroup's keys to its last
     * row's causal limit, each row masking its own) */
    {"gpu_tuning", "shared_window_rows", 1, 1000, 0, 32, 2, .causal = 1, .window = 40, .loop_budget = 300,
     .tuning = "gpu", .plan_has = "attn_fused_shared"},
    {"gpu_tuning", "shared_lens_rows", 2, 290, 0, 32, 2, .causal = 1, .lens = LENS_PER_QUERY, .mask = MASK_FLOAT,
     .loop_budget = 400, .tuning = "gpu", .plan_has = "attn_fused_shared"},
    /* the mobile class's shapes (8 keys and at most 2 queries per fused invocation, 2-query P·V
     * tiles, softmax workgroups of 128) */
    {"gpu_tuning", "mobile_self", 2, 33, 0, 32, 4, .causal = 1, .tuning = "mobile"},
    {"gpu_tuning", "mobile_cross_odd", 2, 7, 9, 21, 3, 5, 11, .bias_kv = 1, .zero_attn = 1, .key_padding = 1,
     .tuning = "mobile"},
    {"gpu_tuning", "mobile_D128_weights", 1, 40, 0, 256, 2, .mask = MASK_FLOAT, .weights = WEIGHTS_PER_HEAD,
     .tuning = "mobile"},
    {"gpu_tuning", "mobile_fp16", 2, 17, 0, 32, 4, .storage = VKATTN_DTYPE_F16, .tuning = "mobile"},
    /* grouped-query attention: H_kv of H heads hold K and V, query head h reads K/V head h / (H / H_kv) */
    {"gqa", "self_kv1", 2, 17, 0, 128, 8, .kv_heads = 1},
    {"gqa", "self_kv2_causal", 2, 33, 0, 128, 8, .causal = 1, .kv_heads = 2},
    {"gqa", "self_kv8", 2, 17, 0, 128, 8, .key_padding = 1, .kv_heads = 8},
    {"gqa", "cross_kdim_vdim", 2, 9, 23, 128, 8, 24, 40, .key_padding = 1, .kv_heads = 2},
    {"gqa", "cross_extra_keys", 2, 17, 5, 128, 8, .bias_kv = 1, .zero_attn = 1, .lens = LENS_PER_QUERY, .kv_heads = 2},
    {"gqa", "zero_attn_fully_masked", 2, 9, 12, 128, 8, .zero_attn = 1, .key_padding = 1, .fully_masked = 1,
     .kv_heads = 1},
    {"gqa", "weights_per_head_masks", 2, 17, 23, 128, 8, .causal = 1, .mask = MASK_FLOAT, .mask_per_head = 1,
     .weights = WEIGHTS_PER_HEAD, .kv_heads = 2},
    {"gqa", "weights_averaged_bias_kv", 2, 17, 0, 128, 8, .bias_kv = 1, .lens = LENS_PER_BATCH,
     .weights = WEIGHTS_AVERAGED, .kv_heads = 1},
    {"gqa", "odd_D7", 2, 9, 7, 42, 6, 5, 11, .causal = 1, .also_f16 = 1, .kv_heads = 3},
    {"gqa", "fp16_cross", 2, 17, 23, 128, 8, 24, 40, .bias_kv = 1, .key_padding = 1, .storage = VKATTN_DTYPE_F16,
     .kv_heads = 2},
    {"gqa", "D64_kv2", 1, 64, 0, 512, 8, .causal = 1, .also_f16 = 1, .kv_heads = 2},
    {"gqa", "D128_kv1", 1, 64, 0, 1024, 8, .mask = MASK_BOOL, .also_f16 = 1, .kv_heads = 1},
    {"gqa", "budget_fused_parts", 2, 20, 700, 64, 8, .zero_attn = 1, .key_padding = 1, .loop_budget = 512,
     .kv_heads = 2},
    {"gqa", "budget_self_causal", 1, 300, 0, 128, 8, .causal = 1, .loop_budget = 512, .kv_heads = 2},
    {"gqa", "budget_softmax_ranges", 1, 5, 3000, 32, 4, .weights = WEIGHTS_PER_HEAD, .loop_budget = 100,
     .kv_heads = 1},
    /* rotary position embedding on q and k (NeoX and GPT-J pairs, partial rope_dim); rope_offset
     * 100000 makes angles of up to 1e5 rad, which the kernel must reduce to [-pi, pi] first */
    {"rope", "neox_self_causal", 2, 33, 0, 128, 4, .causal = 1, .rope_theta = 10000},
    {"rope", "gptj_partial_D64", 2, 17, 0, 128, 2, .rope_theta = 500000, .rope_dim = 32, .rope_gptj = 1},
    {"rope", "gqa_kv2_causal", 2, 17, 0, 128, 8, .causal = 1, .kv_heads = 2, .rope_theta = 10000, .also_f16 = 1},
    {"rope", "cross_offset_1e5", 2, 5, 23, 128, 2, .key_padding = 1, .rope_theta = 10000, .rope_offset = 100000,
     .also_f16 = 1},
    {"rope", "gptj_partial_offset", 1, 9, 0, 128, 2, .causal = 1, .rope_theta = 500000, .rope_dim = 32,
     .rope_gptj = 1, .rope_offset = 100000, .storage = VKATTN_DTYPE_F16},
    /* bindings of 300 KiB: each batch item's Q and K heads (384 KiB) rotated in parts of heads, one
     * item at a time; with per-head norms, a part holding Q's last heads and K's */
    {"rope", "batch2_small_bindings", 2, 300, 0, 256, 8, .causal = 1, .kv_heads = 2, .rope_theta = 10000,
     .binding_kib = 300},
    {"rope", "batch2_small_bindings_head_norms", 2, 300, 0, 256, 8, .causal = 1, .kv_heads = 2,
     .rope_theta = 10000, .binding_kib = 300, .qk_norm = VKATTN_QK_NORM_HEAD, .also_f16 = 1},
    /* attention variants (vkattn_layer_desc.window, softcap, alibi; vkattn_weights.sinks), alone and
     * together, with GQA, RoPE, masks and odd sizes; positions end together (L != S: bottom-right).
     * Head dim 8 where nothing asks for another, so that a cold run compiles few kernels. */
    {"variants", "window_self_causal", 2, 33, 0, 32, 4, .causal = 1, .window = 5},
    {"variants", "window_gqa_rope", 2, 40, 0, 64, 8, .causal = 1, .kv_heads = 2, .rope_theta = 10000, .window = 7},
    {"variants", "window_not_causal", 2, 17, 0, 32, 4, .window = 4},
    {"variants", "window_L_lt_S", 2, 5, 23, 32, 4, .window = 6},
    {"variants", "window_1", 1, 9, 0, 16, 2, .causal = 1, .window = 1},
    {"variants", "softcap", 2, 17, 23, 32, 4, .input_scale = 3, .softcap = 2.0f},
    {"variants", "softcap_50_causal", 2, 33, 0, 32, 4, .causal = 1, .softcap = 50.0f},
    {"variants", "sinks", 2, 17, 0, 32, 4, .causal = 1, .sinks = 1},
    {"variants", "sinks_fully_masked", 3, 17, 17, 32, 4, .key_padding = 1, .lens = LENS_PER_QUERY, .fully_masked = 1,
     .sinks = 1},
    {"variants", "softcap_sinks_weights", 2, 17, 23, 32, 4, .input_scale = 3, .softcap = 1.5f, .sinks = 1,
     .weights = WEIGHTS_PER_HEAD},
    {"variants", "alibi_H8_causal", 2, 33, 0, 64, 8, .causal = 1, .alibi = 1}, /* D = 8 */
    {"variants", "alibi_H6_ragged", 3, 17, 0, 48, 6, .key_padding = 1, .lens = LENS_PER_BATCH, .alibi = 1},
    {"variants", "alibi_cross_gqa", 2, 9, 31, 64, 8, .kv_heads = 2, .alibi = 1},
    {"variants", "alibi_window_weights", 2, 17, 0, 32, 4, .causal = 1, .alibi = 1, .window = 6,
     .weights = WEIGHTS_PER_HEAD},
    {"variants", "rope_window_softcap_sinks", 2, 33, 0, 64, 8, .causal = 1, .kv_heads = 2, .rope_theta = 10000,
     .window = 9, .softcap = 3.0f, .sinks = 1, .input_scale = 2},
    {"variants", "odd_D7_all", 2, 9, 0, 42, 6, .causal = 1, .kv_heads = 3, .window = 3, .softcap = 1.0f, .alibi = 1,
     .sinks = 1, .input_scale = 2},
    /* ... with masks, extra keys, given slopes, fp16, pruned heads, the GPU tuning */
    {"variants_mixed", "window_L_gt_S_causal_masks", 2, 17, 9, 32, 4, .causal = 1, .key_padding = 1,
     .lens = LENS_PER_QUERY, .mask = MASK_FLOAT, .window = 4},
    {"variants_mixed", "sinks_averaged_extra", 2, 17, 5, 48, 12, .bias_kv = 1, .zero_attn = 1, .sinks = 1,
     .weights = WEIGHTS_AVERAGED},
    {"variants_mixed", "softcap_extra_keys", 2, 9, 23, 32, 4, .bias_kv = 1, .zero_attn = 1, .key_padding = 1,
     .input_scale = 3, .softcap = 1.0f},
    {"variants_mixed", "alibi_slopes_given", 2, 17, 0, 48, 3, .causal = 1, .alibi = 1,
     .slopes = (const float[]){0.5f, -0.25f, 2.0f}},
    {"variants_mixed", "fp16_all", 2, 17, 23, 64, 8, .kv_heads = 2, .window = 9, .softcap = 3.0f, .alibi = 1, .sinks = 1,
     .key_padding = 1, .storage = VKATTN_DTYPE_F16},
    {"variants_mixed", "pruned_alibi_sinks", 2, 17, 0, 32, 4, .causal = 1, .alibi = 1, .sinks = 1,
     .head_mask = (const uint8_t[]){1, 0, 1, 1}},
    {"variants_mixed", "x30_softcap", 2, 17, 0, 32, 4, .causal = 1, .input_scale = 30, .softcap = 20.0f},
    {"variants_mixed", "gpu_tuning_all", 2, 20, 0, 32, 4, .causal = 1, .window = 6, .softcap = 2.0f, .alibi = 1, .sinks = 1,
     .tuning = "gpu"},
    /* the same with a lowered loop budget: key parts (merged by log-sum-exp) and chunks (the state
     * carried) that start at each tile's window, a part wholly outside every window, the sink once
     * per row however the keys are split, softmax key ranges */
    {"variants_budget", "window_parts", 1, 700, 0, 64, 2, .causal = 1, .window = 300, .loop_budget = 512},
    {"variants_budget", "window_wide_parts", 2, 33, 1200, 64, 2, .window = 900, .loop_budget = 512},
    {"variants_budget", "window_cross_parts", 1, 8, 3000, 64, 2, .window = 1000, .loop_budget = 512},
    {"variants_budget", "sinks_parts_chunks", 2, 20, 1300, 64, 4, .key_padding = 1, .sinks = 1, .loop_budget = 300},
    {"variants_budget", "all_parts", 1, 300, 0, 128, 8, .causal = 1, .kv_heads = 2, .window = 200, .alibi = 1,
     .sinks = 1, .softcap = 4.0f, .loop_budget = 512},
    {"variants_budget", "sinks_softmax_ranges", 1, 5, 3000, 32, 4, .weights = WEIGHTS_PER_HEAD, .sinks = 1,
     .alibi = 1, .window = 1000, .loop_budget = 100},
    {"variants_budget", "nan_outside_window", 1, 8, 3000, 64, 2, .causal = 0, .window = 700, .nan_masked = 1,
     .loop_budget = 512},
    /* L < S with causal in a layer with positions: the last L tokens over all S tokens so far attend
     * as in the full causal forward (causal aligned at the end). Top-left causal masked every key of
     * such a row, which then returned out_proj.bias with status OK (issue 18). */
    {"causal_suffix", "window_L1_S10", 1, 1, 10, 32, 4, .causal = 1, .window = 4, .suffix = 1},
    {"causal_suffix", "window_L3_S20", 2, 3, 20, 32, 4, .causal = 1, .window = 4, .suffix = 1},
    {"causal_suffix", "alibi_L5_S23", 2, 5, 23, 32, 4, .causal = 1, .alibi = 1, .suffix = 1},
    {"causal_suffix", "rope_gqa_L4_S19", 2, 4, 19, 64, 8, .causal = 1, .kv_heads = 2, .rope_theta = 10000, .suffix = 1},
    {"causal_suffix", "rope_sinks_L3_S17", 2, 3, 17, 32, 4, .causal = 1, .rope_theta = 10000, .sinks = 1, .suffix = 1},
    {"causal_suffix", "window_sinks_L2_S15", 1, 2, 15, 32, 4, .causal = 1, .window = 5, .sinks = 1, .suffix = 1},
    {"causal_suffix", "all_weights_L4_S21", 2, 4, 21, 32, 4, .causal = 1, .window = 6, .softcap = 2.0f, .alibi = 1,
     .sinks = 1, .weights = WEIGHTS_PER_HEAD, .suffix = 1},
    {"causal_suffix", "window_parts_budget", 1, 6, 700, 64, 2, .causal = 1, .window = 300, .rope_theta = 10000,
     .loop_budget = 512, .suffix = 1},
    /* models: what today's open models add, at small shapes (their real ones: test_models.c):
     * H * D != E (Qwen3 0.6B, Gemma, Mistral Nemo), an explicit scale (Gemma's
     * query_pre_attn_scalar), q/k RMS norms per head (Qwen3; Gemma's 1 + w) or per row (OLMo 2)
     * before RoPE, and each rope type's frequencies, at positions where they differ from theta's */
    {"models", "head_dim_ne_E_over_H", 2, 17, 0, 48, 4, .causal = 1, .kv_heads = 2, .head_dim = 32,
     .rope_theta = 1e6f, .also_f16 = 1},
    {"models", "head_dim_cross_kdim", 2, 9, 23, 40, 2, 24, 56, .key_padding = 1, .head_dim = 24, .bias_kv = 1},
    {"models", "scale_gemma", 2, 17, 0, 64, 4, .causal = 1, .kv_heads = 1, .head_dim = 32, .scale = 0.0625f,
     .softcap = 50.0f, .rope_theta = 10000},
    {"models", "qk_norm_head_qwen3", 2, 17, 0, 48, 4, .causal = 1, .kv_heads = 2, .head_dim = 32, .rope_theta = 1e6f,
     .qk_norm = VKATTN_QK_NORM_HEAD, .also_f16 = 1},
    {"models", "qk_norm_plus_one_gemma3", 2, 20, 0, 64, 4, .causal = 1, .kv_heads = 1, .head_dim = 32,
     .scale = 0.0625f, .window = 6, .rope_theta = 10000, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_plus_one = 1},
    {"models", "qk_norm_row_olmo2", 2, 17, 0, 64, 4, .causal = 1, .rope_theta = 500000, .qk_norm = VKATTN_QK_NORM_ROW,
     .also_f16 = 1},
    {"models", "qk_norm_row_gqa_cross", 2, 9, 23, 64, 4, .kv_heads = 2, .qk_norm = VKATTN_QK_NORM_ROW},
    {"models", "qk_norm_nope", 2, 17, 0, 64, 4, .causal = 1, .qk_norm = VKATTN_QK_NORM_HEAD},
    {"models", "qk_norm_partial_gptj", 2, 9, 0, 64, 2, .causal = 1, .rope_theta = 10000, .rope_dim = 24,
     .rope_gptj = 1, .qk_norm = VKATTN_QK_NORM_HEAD},
    {"models", "rope_llama3", 2, 17, 0, 64, 4, .causal = 1, .kv_heads = 2, .rope_theta = 500000, .rope_offset = 9000,
     .rope_scaling = {.type = VKATTN_ROPE_TYPE_LLAMA3, .factor = 8, .low_freq_factor = 1, .high_freq_factor = 4,
                      .original_max_position_embeddings = 8192}},
    {"models", "rope_linear", 2, 9, 0, 64, 2, .causal = 1, .rope_theta = 1e6f, .rope_offset = 300,
     .rope_scaling = {.type = VKATTN_ROPE_TYPE_LINEAR, .factor = 8}},
    {"models", "rope_yarn_gpt_oss", 2, 17, 0, 64, 4, .causal = 1, .kv_heads = 1, .rope_theta = 150000,
     .rope_offset = 5000, .sinks = 1, .window = 8,
     .rope_scaling = {.type = VKATTN_ROPE_TYPE_YARN, .factor = 32, .beta_fast = 32, .beta_slow = 1,
                      .original_max_position_embeddings = 4096, .no_truncate = 1}},
    {"models", "rope_yarn_mscale", 1, 9, 0, 64, 2, .causal = 1, .rope_theta = 10000,
     .rope_scaling = {.type = VKATTN_ROPE_TYPE_YARN, .factor = 40, .mscale = 0.707f, .mscale_all_dim = 1,
                      .original_max_position_embeddings = 4096}},
    {"models", "rope_longrope_long", 2, 9, 0, 64, 2, .causal = 1, .rope_theta = 10000, .rope_dim = 16,
     .rope_offset = 5000, .head_dim = 24, .also_f16 = 1,
     .rope_scaling = {.type = VKATTN_ROPE_TYPE_LONGROPE, .original_max_position_embeddings = 4096,
                      .max_position_embeddings = 131072, .short_factor = k_short8, .long_factor = k_long8}},
    {"models", "rope_longrope_short", 2, 9, 0, 64, 2, .causal = 1, .rope_theta = 10000, .rope_dim = 16,
     .head_dim = 24,
     .rope_scaling = {.type = VKATTN_ROPE_TYPE_LONGROPE, .original_max_position_embeddings = 4096,
                      .max_position_embeddings = 131072, .short_factor = k_short8, .long_factor = k_long8}},
    {"models", "rope_dynamic_long", 2, 9, 0, 64, 2, .causal = 1, .rope_theta = 10000, .rope_offset = 9000,
     .rope_scaling = {.type = VKATTN_ROPE_TYPE_DYNAMIC, .factor = 2, .max_position_embeddings = 4096}},
    {"models", "rope_table", 2, 9, 7, 64, 2, .causal = 1, .rope_dim = 16, .rope_offset = 40,
     .rope_scaling = {.type = VKATTN_ROPE_TYPE_TABLE, .inv_freq = k_long8, .attention_factor = 0.75f}},
    /* the same at a lowered loop budget: the projections' reduction parts over H * D != E, the norms'
     * workgroups, fused key parts */
    {"models_budget", "head_dim_norms_budget", 1, 300, 0, 96, 4, .causal = 1, .kv_heads = 2, .head_dim = 64,
     .rope_theta = 10000, .qk_norm = VKATTN_QK_NORM_HEAD, .loop_budget = 200},
    {"models_budget", "row_norm_budget", 1, 40, 500, 128, 4, .qk_norm = VKATTN_QK_NORM_ROW, .head_dim = 96,
     .rope_theta = 10000, .loop_budget = 300},
};

/* Inputs and masks of one case, generated from its parameters. */
typedef struct case_data {
    float *query, *key, *value, *float_mask;
    uint8_t *kpm, *bool_mask;
    int32_t *lens;
} case_data;

/* Whether no query of batch b may attend to key j (so its key and value rows may hold anything). */
static int unseen_key(const test_case *c, const case_data *d, uint32_t S, uint32_t b, uint32_t j)
{
    if (d->kpm && d->kpm[(size_t)b * S + j]) return 1;
    /* before query 0's window (at position S - L, it sees the most keys before it) */
    if (c->window && (int64_t)j + c->window <= (int64_t)S - c->L) return 1;
    if (d->lens) {
        int32_t longest = 0;
        uint32_t n = c->lens == LENS_PER_QUERY ? c->L : 1;
        for (uint32_t i = 0; i < n; i++)
            if (d->lens[(size_t)b * n + i] > longest) longest = d->lens[(size_t)b * n + i];
        if ((int64_t)j >= longest) return 1;
    }
    if (d->bool_mask && !c->mask_per_head) {
        for (uint32_t i = 0; i < c->L; i++)
            if (!d->bool_mask[(size_t)i * S + j]) return 0;
        return 1;
    }
    return 0;
}

/* NaN in every key and value row no query may see: a KV cache's stale slots. */
static void poison_unseen_keys(const test_case *c, case_data *d, uint32_t S, size_t kd, size_t vd)
{
    size_t poisoned = 0;
    for (uint32_t b = 0; b < c->B; b++) {
        for (uint32_t j = 0; j < S; j++) {
            if (!unseen_key(c, d, S, b, j)) continue;
            for (size_t e = 0; e < kd; e++) d->key[((size_t)b * S + j) * kd + e] = NAN;
            for (size_t e = 0; e < vd; e++) d->value[((size_t)b * S + j) * vd + e] = NAN;
            poisoned++;
        }
    }
    CHECK_MSG(poisoned > 0, "%s: no key row is unseen, so the NaN row test tests nothing", c->name);
}

static void make_data(const test_case *c, const vkattn_layer_desc *ld, case_data *d, test_rng *rng)
{
    const uint32_t S = c->S ? c->S : c->L, E = c->E, kd = ld->kdim ? ld->kdim : E, vd = ld->vdim ? ld->vdim : E;
    const float scale = c->input_scale ? c->input_scale : 1.0f;
    memset(d, 0, sizeof *d);
    d->query = malloc((size_t)c->B * c->L * E * sizeof(float));
    test_fill(rng, d->query, (size_t)c->B * c->L * E, scale);
    if (c->S) {
        d->key = malloc((size_t)c->B * S * kd * sizeof(float));
        d->value = malloc((size_t)c->B * S * vd * sizeof(float));
        test_fill(rng, d->key, (size_t)c->B * S * kd, scale);
        test_fill(rng, d->value, (size_t)c->B * S * vd, scale);
    }
    if (c->suffix) /* one sequence of S tokens: the keys and values, and its last L as the queries */
        for (uint32_t b = 0; b < c->B; b++) {
            memcpy(d->value + (size_t)b * S * E, d->key + (size_t)b * S * E, (size_t)S * E * sizeof(float));
            memcpy(d->query + (size_t)b * c->L * E, d->key + ((size_t)b * S + S - c->L) * E,
                   (size_t)c->L * E * sizeof(float));
        }
    if (c->key_padding) {
        d->kpm = malloc((size_t)c->B * S);
        for (size_t i = 0; i < (size_t)c->B * S; i++) d->kpm[i] = test_rng_float(rng) > 0.4f; /* ~30% ignored */
        if (c->fully_masked) memset(d->kpm, 1, S); /* batch 0 has no key left */
    }
    if (c->lens) {
        size_t n = c->lens == LENS_PER_QUERY ? (size_t)c->B * c->L : c->B;
        d->lens = malloc(n * sizeof(int32_t));
        for (size_t i = 0; i < n; i++) d->lens[i] = (int32_t)((test_rng_float(rng) * 0.5f + 0.5f) * (S + 2)) - 1;
        if (c->fully_masked) d->lens[n - 1] = 0;
    }
    size_t mask_n = (size_t)c->L * S * (c->mask_per_head ? (size_t)c->B * c->H : 1);
    if (c->mask == MASK_BOOL) {
        d->bool_mask = malloc(mask_n);
        for (size_t i = 0; i < mask_n; i++) d->bool_mask[i] = test_rng_float(rng) > 0.6f; /* ~20% blocked */
        if (c->nan_masked) /* every third column blocked for every query */
            for (size_t i = 0; i < mask_n; i++) d->bool_mask[i] |= (i % S) % 3 == 1;
    }
    if (c->mask == MASK_BOOL_DOCUMENTS) { /* documents of 13, 24, 24, ... tokens; heads from 0 to 4 tokens later */
        d->bool_mask = malloc(mask_n);
        for (size_t e = 0; e < mask_n; e++) {
            int64_t i = (int64_t)(e / S % c->L), j = (int64_t)(e % S), shift = (int64_t)(e / S / c->L % 5);
            int64_t di = i + shift < 13 ? 0 : (i + shift - 13) / 24 + 1, dj = j + shift < 13 ? 0 : (j + shift - 13) / 24 + 1;
            d->bool_mask[e] = di != dj || j > i;
        }
    }
    if (c->mask == MASK_FLOAT || c->mask == MASK_FLOAT_CAUSAL) {
        d->float_mask = malloc(mask_n * sizeof(float));
        for (size_t i = 0; i < mask_n; i++) {
            float r = test_rng_float(rng);
            d->float_mask[i] = r > 0.8f ? -INFINITY : r * 2.0f;
            if (c->mask == MASK_FLOAT_CAUSAL)
                d->float_mask[i] = (int64_t)(i % S) > (int64_t)(i / S % c->L) + S - c->L ? -INFINITY : r * 2.0f;
        }
        if (c->fully_masked)
            for (size_t j = 0; j < S; j++) d->float_mask[j] = -INFINITY; /* row 0 (of head 0) */
    }
    if (c->nan_masked) poison_unseen_keys(c, d, S, kd, vd);
    for (uint32_t e = 0; c->nan_seen && e < kd; e++) d->key[(size_t)c->nan_seen * kd + e] = NAN;
}

static void free_data(case_data *d)
{
    free(d->query), free(d->key), free(d->value), free(d->float_mask), free(d->kpm), free(d->bool_mask), free(d->lens);
}

/* Largest errors seen per family, for the summary. */
typedef struct family_stats {
    const char *family;
    double out_max_abs, out_nmse, weights_max_abs, lse_max_abs;
    int runs, failures;
} family_stats;

/* 1 when VKATTN_TUNING=coopmat: rows without a tuning of their own get fp16 operands (precision F16). */
static int coopmat_run;

/* The rows of the shared table (tools/compare.h) the cases are held to. */
static const compare_tolerance *tolerance_of(const test_case *c, vkattn_dtype storage)
{
    if (storage == VKATTN_DTYPE_F16 || (coopmat_run && !c->tuning)) return compare_tolerance_of(COMPARE_F16);
    return compare_tolerance_of(c->input_scale >= 30 ? COMPARE_LARGE : COMPARE_STRICT);
}

/* Compares one device run with the reference; returns 1 if anything is off. */
static int check_run(const test_case *c, vkattn_dtype storage, vkattn_path path, const float *gpu, const float *cpu,
                     size_t out_n,
                     const float *gpu_w, const float *cpu_w, size_t w_n, const float *gpu_lse, const float *cpu_lse,
                     size_t lse_n, family_stats *fs)
{
    const char *pn = vkattn_path_name(path);
    const compare_tolerance *tol = tolerance_of(c, storage);
    int failed = 0;
    test_error e = test_compare(gpu, cpu, out_n);
    if (c->nan_masked) {
        /* Unseen NaN rows change nothing: every output finite on both sides. */
        size_t bad = 0;
        for (size_t i = 0; i < out_n; i++) bad += !isfinite(gpu[i]) || !isfinite(cpu[i]);
        CHECK_MSG(bad == 0, "%s/%s: %zu outputs not finite with NaN in unseen key rows", c->name, pn, bad);
        failed |= bad != 0;
    }
    double tol_abs = compare_abs_bound(tol, e.ref_max);
    failed |= !compare_within(&e, tol);
    CHECK_MSG(e.nonfinite == 0, "%s/%s: %zu outputs finite on one side only", c->name, pn, e.nonfinite);
    CHECK_MSG(e.nmse <= tol->nmse, "%s/%s: output NMSE %.3g > %.1g", c->name, pn, e.nmse, tol->nmse);
    CHECK_MSG(e.max_abs <= tol_abs, "%s/%s: output max-abs %.3g > %.3g", c->name, pn, e.max_abs, tol_abs);
    if (c->nan_seen) { /* the row must test something: some outputs (and lse) NaN, some finite */
        size_t nan_out = 0, nan_lse = 0;
        for (size_t i = 0; i < out_n; i++) nan_out += isnan(cpu[i]) != 0;
        for (size_t i = 0; i < lse_n; i++) nan_lse += isnan(cpu_lse[i]) != 0;
        int some = nan_out > 0 && nan_out < out_n && (!lse_n || (nan_lse > 0 && nan_lse < lse_n));
        CHECK_MSG(some, "%s/%s: %zu of %zu outputs, %zu of %zu lse NaN in the reference: the seen NaN key tests nothing",
                  c->name, pn, nan_out, out_n, nan_lse, lse_n);
        failed |= !some;
    }
    test_error ew = {0}, el = {0};
    if (w_n) {
        ew = test_compare(gpu_w, cpu_w, w_n);
        failed |= ew.nonfinite != 0 || ew.max_abs > tol->weights;
        CHECK_MSG(ew.nonfinite == 0, "%s/%s: %zu weights finite on one side only", c->name, pn, ew.nonfinite);
        CHECK_MSG(ew.max_abs <= tol->weights, "%s/%s: weights max-abs %.3g > %.1g", c->name, pn, ew.max_abs, tol->weights);
        /* Masked probabilities are exactly zero on both sides. (Tiny probabilities may underflow to
         * zero on one side only: devices flush denormals, so those below 1e-20 are not counted.) */
        size_t zero_mismatch = 0;
        for (size_t i = 0; i < w_n; i++)
            zero_mismatch += (cpu_w[i] == 0.0f) != (gpu_w[i] == 0.0f) && fmaxf(cpu_w[i], gpu_w[i]) > 1e-20f;
        CHECK_MSG(zero_mismatch == 0, "%s/%s: %zu weights zero on one side only", c->name, pn, zero_mismatch);
        failed |= zero_mismatch != 0;
    }
    if (lse_n) {
        /* Fully masked rows: -inf on both sides (counted as matching non-finite values). */
        el = test_compare(gpu_lse, cpu_lse, lse_n);
        double tol_lse = compare_abs_bound(tol, el.ref_max);
        size_t inf_mismatch = 0;
        for (size_t i = 0; i < lse_n; i++) inf_mismatch += isinf(gpu_lse[i]) != isinf(cpu_lse[i]);
        failed |= el.nonfinite != 0 || inf_mismatch != 0 || el.max_abs > tol_lse;
        CHECK_MSG(inf_mismatch == 0 && el.nonfinite == 0, "%s/%s: lse finite on one side only", c->name, pn);
        CHECK_MSG(el.max_abs <= tol_lse, "%s/%s: lse max-abs %.3g > %.3g", c->name, pn, el.max_abs, tol_lse);
    }
    printf("  %-11s %-22s %-7s %s out max-abs %.2e nmse %.2e%s%s  %s\n", c->family, c->name, pn,
           vkattn_dtype_name(storage), e.max_abs, e.nmse, w_n ? "  weights" : "", lse_n ? "  lse" : "",
           failed ? "FAILED" : "ok");
    fflush(stdout);
    fs->runs++;
    fs->failures += failed;
    if (e.max_abs > fs->out_max_abs) fs->out_max_abs = e.max_abs;
    if (e.nmse > fs->out_nmse) fs->out_nmse = e.nmse;
    if (ew.max_abs > fs->weights_max_abs) fs->weights_max_abs = ew.max_abs;
    if (el.max_abs > fs->lse_max_abs) fs->lse_max_abs = el.max_abs;
    return failed;
}

/* A suffix row's reference (L queries over S keys) against the last L rows of the causal
 * self-attention forward over all S tokens: the same sums in double, so only float rounding. */
static void check_suffix(const test_case *c, const vkattn_layer_desc *ld, const test_weights *tw, const case_data *d,
                         const float *cpu)
{
    const uint32_t S = c->S, L = c->L, E = c->E;
    float *full = malloc((size_t)c->B * S * E * sizeof(float)), *rows = malloc((size_t)c->B * L * E * sizeof(float));
    vkattn_host_forward_desc f = {.batch = c->B, .query_len = S, .query = d->key, .output = full, .causal = 1};
    vkattn_error error = {0};
    CHECK_STATUS(vkattn_reference_forward(ld, &tw->w, &f, &error), VKATTN_OK);
    for (uint32_t b = 0; b < c->B; b++)
        memcpy(rows + (size_t)b * L * E, full + ((size_t)b * S + S - L) * E, (size_t)L * E * sizeof(float));
    test_error e = test_compare(cpu, rows, (size_t)c->B * L * E);
    double tol = 1e-6 * (e.ref_max > 1 ? e.ref_max : 1);
    printf("  %-11s %-22s the last %u rows of the full causal forward: max-abs %.2e\n", c->family, c->name, L,
           e.max_abs);
    CHECK_MSG(e.nonfinite == 0 && e.max_abs <= tol, "%s: the reference's %u queries over %u keys differ from the full "
              "causal forward's last rows by %.3g (> %.3g)", c->name, L, S, e.max_abs, tol);
    free(full), free(rows);
}

static void run_case(vkattn_context *ctx, const test_case *c, family_stats *fs, unsigned long long seed)
{
    vkattn_layer_desc ld = {.embed_dim = c->E, .num_heads = c->H, .kdim = c->kdim, .vdim = c->vdim,
                            .no_bias = c->no_bias, .add_bias_kv = c->bias_kv, .add_zero_attn = c->zero_attn,
                            .storage = c->storage, .num_kv_heads = c->kv_heads, .rope_theta = c->rope_theta,
                            .rope_dim = c->rope_dim, .rope_style = c->rope_gptj ? VKATTN_ROPE_GPTJ : VKATTN_ROPE_NEOX,
                            .head_mask = c->head_mask, .window = c->window, .softcap = c->softcap, .alibi = c->alibi,
                            .alibi_slopes = c->slopes, .head_dim = c->head_dim, .scale = c->scale,
                            .rope_scaling = c->rope_scaling, .qk_norm = c->qk_norm, .qk_norm_plus_one = c->qk_plus_one,
                            .precision = coopmat_run && !c->tuning ? VKATTN_PRECISION_F16 : VKATTN_PRECISION_DEFAULT};
    test_weights tw;
    test_weights_make(&tw, &ld, seed);
    if (c->sinks) test_weights_add_sinks(&tw, -1.0f, 3.0f, seed + 7);
    test_rng rng = test_rng_make(seed + 1);
    case_data d;
    make_data(c, &ld, &d, &rng);
    const uint32_t S = c->S ? c->S : c->L, S_ext = S + (uint32_t)c->bias_kv + (uint32_t)c->zero_attn;
    size_t out_n = (size_t)c->B * c->L * c->E, lse_n = (size_t)c->B * c->H * c->L;
    size_t w_n = c->weights == WEIGHTS_NONE       ? 0
                 : c->weights == WEIGHTS_PER_HEAD ? (size_t)c->B * c->H * c->L * S_ext
                                                  : (size_t)c->B * c->L * S_ext;
    float *gpu = malloc(out_n * sizeof(float)), *cpu = malloc(out_n * sizeof(float));
    float *gpu_w = w_n ? malloc(w_n * sizeof(float)) : NULL, *cpu_w = w_n ? malloc(w_n * sizeof(float)) : NULL;
    float *gpu_lse = malloc(lse_n * sizeof(float)), *cpu_lse = malloc(lse_n * sizeof(float));

    vkattn_host_forward_desc f = {
        .batch = c->B, .query_len = c->L, .key_len = c->S,
        .query = d.query, .key = d.key, .value = d.value,
        .causal = c->causal, .key_padding_mask = d.kpm,
        .valid_lens = d.lens, .valid_lens_per_query = c->lens == LENS_PER_QUERY,
        .attn_mask = MASK_IS_BOOL(c->mask) ? (const void *)d.bool_mask : (const void *)d.float_mask,
        .attn_mask_dtype = MASK_IS_BOOL(c->mask) ? VKATTN_DTYPE_BOOL : VKATTN_DTYPE_F32,
        .attn_mask_per_head = c->mask_per_head,
        .average_weights = c->weights == WEIGHTS_AVERAGED,
        .rope_offset = c->rope_offset,
    };
    vkattn_error error = {0};
    vkattn_host_forward_desc ref = f;
    ref.output = cpu, ref.attn_weights = cpu_w, ref.lse = w_n || c->head_mask ? NULL : cpu_lse; /* pruned: no lse */
    double t0 = test_now_s();
    CHECK_STATUS(vkattn_reference_forward(&ld, &tw.w, &ref, &error), VKATTN_OK);
    double ref_s = test_now_s() - t0;
    if (c->suffix) check_suffix(c, &ld, &tw, &d, cpu);

    const vkattn_dtype storages[2] = {c->storage, VKATTN_DTYPE_F16};
    double device_s = 0;
    for (int st_i = 0; st_i < 1 + (c->also_f16 != 0); st_i++) {
        vkattn_layer_desc sd = ld;
        sd.storage = storages[st_i];
        vkattn_layer *layer = NULL;
        vkattn_status status = vkattn_layer_create(ctx, &sd, &tw.w, &layer);
        CHECK_MSG(status == VKATTN_OK, "%s: layer: %s", c->name, vkattn_context_last_error(ctx));
        const vkattn_path paths[2] = {VKATTN_PATH_UNFUSED, VKATTN_PATH_FUSED};
        for (int k = 0; layer && k < 2; k++) {
            vkattn_host_forward_desc g = f;
            g.path = paths[k];
            g.output = gpu, g.attn_weights = gpu_w;
            g.lse = paths[k] == VKATTN_PATH_FUSED && !w_n && !c->head_mask ? gpu_lse : NULL;
            t0 = test_now_s();
            status = vkattn_forward_host(layer, &g);
            device_s += test_now_s() - t0;
            if (paths[k] == VKATTN_PATH_FUSED && w_n) {
                /* Only the unfused path forms attention weights; the fused one says so. */
                CHECK_MSG(status == VKATTN_ERROR_INVALID_ARGUMENT, "%s: fused path with weights returned %s", c->name,
                          vkattn_status_name(status));
                continue;
            }
            CHECK_MSG(status == VKATTN_OK, "%s/%s: forward: %s", c->name, vkattn_path_name(paths[k]),
                      vkattn_context_last_error(ctx));
            if (status != VKATTN_OK) {
                fs->runs++, fs->failures++;
                continue;
            }
            if (c->plan_has && paths[k] == VKATTN_PATH_FUSED) { /* the shape the row was written for */
                static char plan[1 << 16];
                plan[0] = '\0';
                vkattn_forward_explain(layer, &g, plan, sizeof plan, NULL);
                CHECK_MSG(strstr(plan, c->plan_has) != NULL, "%s: the plan lacks \"%s\":\n%s", c->name, c->plan_has,
                          plan);
            }
            vkattn_forward_stats stats;
            vkattn_layer_last_stats(layer, &stats);
            CHECK_MSG(stats.path == paths[k], "%s: ran %s, asked for %s", c->name, vkattn_path_name(stats.path),
                      vkattn_path_name(paths[k]));
            check_run(c, sd.storage, paths[k], gpu, cpu, out_n, gpu_w, cpu_w, w_n, gpu_lse, cpu_lse,
                      g.lse ? lse_n : 0, fs);
        }
        vkattn_layer_destroy(layer);
    }
    printf("  %-11s %-22s time: CPU reference %.2f s, device forwards %.2f s\n", c->family, c->name, ref_s, device_s);

    free(gpu), free(cpu), free(gpu_w), free(cpu_w), free(gpu_lse), free(cpu_lse);
    free_data(&d);
    test_weights_free(&tw);
}

/* Contexts by kernel tuning and loop budget; the first is the device's own. */
typedef struct context_slot {
    const char *tuning;
    uint32_t loop_budget, binding_kib;
    vkattn_context *ctx;
} context_slot;

/* A context of the device's tuning, or VKATTN_TUNING's: under VKATTN_TUNING=NAME[:FIELDS] (ctest's
 * gpu_vs_cpu_gpu_class_* and gpu_vs_cpu_coopmat_* rows) that class must be the one in use, or
 * the rows would quietly test another. */
static vkattn_context *checked_tuning(vkattn_context *ctx)
{
    const char *asked = getenv("VKATTN_TUNING");
    if (!ctx || !asked || !*asked) return ctx;
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    size_t n = strcspn(asked, ":");
    CHECK_MSG(strncmp(info.tuning, asked, n) == 0 && (info.tuning[n] == '\0' || info.tuning[n] == ','),
              "VKATTN_TUNING=%s, but the context runs the %s tuning", asked, info.tuning);
    return ctx;
}

static vkattn_context *context_for(const test_case *c, context_slot *slots, int *count)
{
    for (int i = 0; i < *count; i++)
        if (slots[i].loop_budget == c->loop_budget && slots[i].binding_kib == c->binding_kib &&
            (slots[i].tuning == c->tuning || (slots[i].tuning && c->tuning && !strcmp(slots[i].tuning, c->tuning))))
            return slots[i].ctx;
    context_slot *s = &slots[(*count)++];
    s->tuning = c->tuning, s->loop_budget = c->loop_budget, s->binding_kib = c->binding_kib;
    if (!c->tuning && !c->loop_budget && !c->binding_kib) return s->ctx = checked_tuning(gpu_test_context());
    gpu_test_pin_drivers();
    vkattn_error error = {0};
    vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON, .tuning = c->tuning,
                                .loop_budget = c->loop_budget};
    vkattn_status status = vkattn_context_create(&desc, &s->ctx, &error);
    CHECK_MSG(status == VKATTN_OK, "context (tuning %s, loop budget %u): %s", c->tuning ? c->tuning : "default",
              c->loop_budget, error.message);
    if (s->ctx && c->binding_kib) s->ctx->binding_bytes = (uint64_t)c->binding_kib << 10;
    if (s->ctx && c->loop_budget) {
        vkattn_device_info info;
        vkattn_context_device(s->ctx, &info);
        CHECK_MSG(info.loop_budget == c->loop_budget, "loop budget %u asked, %u in effect", c->loop_budget,
                  info.loop_budget);
    }
    return c->tuning ? s->ctx : checked_tuning(s->ctx);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    const char *tuning = getenv("VKATTN_TUNING");
    coopmat_run = tuning && strcmp(tuning, "coopmat") == 0;
    if (coopmat_run) { /* where the device cannot run it, the context says why */
        vkattn_context *probe = NULL;
        vkattn_error error = {0};
        if (vkattn_context_create(NULL, &probe, &error) == VKATTN_ERROR_UNSUPPORTED) {
            printf("skipped: VKATTN_TUNING=coopmat is refused here: %s\n", error.message);
            return 77;
        }
        vkattn_context_destroy(probe);
    }
    context_slot contexts[24] = {0};
    int context_count = 0;
    family_stats stats[32] = {0};
    int families = 0;
    size_t n = sizeof cases / sizeof cases[0];
    for (size_t i = 0; i < n; i++) {
        const test_case *c = &cases[i];
        if (only && strcmp(only, c->family) != 0) continue;
        int f = 0;
        while (f < families && strcmp(stats[f].family, c->family) != 0) f++;
        if (f == families && families == (int)(sizeof stats / sizeof stats[0])) {
            CHECK_MSG(0, "more families than stats[] holds: %s", c->family);
            break;
        }
        if (f == families) stats[families++].family = c->family;
        if (context_count == (int)(sizeof contexts / sizeof contexts[0])) { /* context_for may need a slot */
            CHECK_MSG(0, "more contexts than contexts[] holds: %s/%s", c->family, c->name);
            break;
        }
        vkattn_context *ctx = context_for(c, contexts, &context_count);
        if (ctx) run_case(ctx, c, &stats[f], 1000 + i);
    }
    CHECK_MSG(families > 0, "no case in family \"%s\"", only ? only : "");
    printf("\nfamily       runs  failures  max out max-abs  max out NMSE  max weights max-abs  max lse max-abs\n");
    for (int f = 0; f < families; f++)
        printf("%-11s  %4d  %8d  %15.2e  %12.2e  %19.2e  %15.2e\n", stats[f].family, stats[f].runs,
               stats[f].failures, stats[f].out_max_abs, stats[f].out_nmse, stats[f].weights_max_abs,
               stats[f].lse_max_abs);
    for (int i = 0; i < context_count; i++)
        if (contexts[i].ctx) gpu_test_finish_context(contexts[i].ctx);
    return test_finish();
}
