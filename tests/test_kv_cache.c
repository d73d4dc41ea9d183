/* The paged KV cache and cached forwards, against the CPU reference: every token a sequence gets
 * through the cache (prefill, chunks, decode steps, ragged batches, forks) must come out as that
 * token's row of one causal forward over the whole sequence (vkattn_reference_forward, causal).
 * Families (argv[1]): decode, decode_shapes, ragged, split, paging, errors, variants; quant and
 * quant_accuracy for the caches of a block format (Q8_0, Q4_0), checked against a reference that
 * rounds k and v the same way (kv_cache_dtype) and, for what the format costs, against the unrounded
 * one. */
#define _POSIX_C_SOURCE 200809L
#include "api/kv_cache.h"
#include "api/context.h"
#include "gpu_tuning_test.h"
#include "format/quant.h"
#include "memory/transfer.h"

/* One sequence as the test feeds it: its input tokens, and the outputs the cache gave for them. */
typedef struct seq_run {
    uint32_t id, len, cap;
    float *tokens, *out; /* (cap, E) */
} seq_run;

static void run_make(seq_run *r, uint32_t id, uint32_t cap, uint32_t E, unsigned long long seed)
{
    test_rng rng = test_rng_make(seed);
    *r = (seq_run){.id = id, .cap = cap};
    r->tokens = malloc((size_t)cap * E * sizeof(float));
    r->out = calloc((size_t)cap * E, sizeof(float));
    test_fill(&rng, r->tokens, (size_t)cap * E, 1.0f);
}

static void run_free(seq_run *r)
{
    free(r->tokens);
    free(r->out);
}

/* One cached forward: sequence runs[k] adds news[k] tokens. Returns the status. */
static vkattn_status feed(vkattn_layer *layer, vkattn_kv_cache *cache, uint32_t E, seq_run **runs, const uint32_t *news,
                          uint32_t n, uint32_t splits)
{
    uint32_t T = 0, ids[16];
    for (uint32_t k = 0; k < n; k++) T += news[k], ids[k] = runs[k]->id;
    float *q = malloc((size_t)T * E * sizeof(float)), *o = malloc((size_t)T * E * sizeof(float));
    for (uint32_t k = 0, t = 0; k < n; t += news[k], k++)
        memcpy(q + (size_t)t * E, runs[k]->tokens + (size_t)runs[k]->len * E, (size_t)news[k] * E * sizeof(float));
    vkattn_cached_forward_desc d = {.batch = n, .seq_ids = ids, .new_tokens = news, .query = q, .output = o,
                                    .kv_splits = splits};
    vkattn_status status = vkattn_forward_cached(layer, cache, &d);
    if (status == VKATTN_OK) {
        for (uint32_t k = 0, t = 0; k < n; t += news[k], k++) {
            memcpy(runs[k]->out + (size_t)runs[k]->len * E, o + (size_t)t * E, (size_t)news[k] * E * sizeof(float));
            runs[k]->len += news[k];
        }
    }
    free(q);
    free(o);
    return status;
}

/* The run's outputs so far against one causal reference forward over its tokens, whose k and v
 * are rounded as a cache of `round` holds them (F32: not rounded). Returns the NMSE. */
static double check_run_as(const test_weights *tw, const seq_run *r, vkattn_dtype round, double tol, const char *what)
{
    const uint32_t E = tw->desc.embed_dim;
    float *want = malloc((size_t)r->len * E * sizeof(float));
    vkattn_host_forward_desc f = {.batch = 1, .query_len = r->len, .query = r->tokens, .output = want, .causal = 1,
                                  .kv_cache_dtype = round};
    vkattn_error error = {0};
    CHECK_STATUS(vkattn_reference_forward(&tw->desc, &tw->w, &f, &error), VKATTN_OK);
    test_error e = test_compare(r->out, want, (size_t)r->len * E);
    printf("  %-44s seq %u, %4u tokens: nmse %.2e max_abs %.2e%s%s\n", what, r->id, r->len, e.nmse, e.max_abs,
           round ? " vs reference rounded as " : "", round ? vkattn_dtype_name(round) : "");
    CHECK_MSG(e.nonfinite == 0 && e.nmse <= tol, "%s: seq %u nmse %.3e > %.1e (%zu non-finite)", what, r->id, e.nmse, tol,
              e.nonfinite);
    free(want);
    return e.nmse;
}

static void check_run(const test_weights *tw, const seq_run *r, double tol, const char *what)
{
    check_run_as(tw, r, VKATTN_DTYPE_F32, tol, what);
}

/* A layer with random weights; with `sinks`, a sink logit per head too (in [-1, 3)). */
static vkattn_layer *make_layer_sinks(vkattn_context *ctx, test_weights *tw, const vkattn_layer_desc *desc,
                                      unsigned long long seed, int sinks)
{
    test_weights_make(tw, desc, seed);
    if (sinks) test_weights_add_sinks(tw, -1.0f, 3.0f, seed + 1);
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, desc, &tw->w, &layer), VKATTN_OK);
    return layer;
}

static vkattn_layer *make_layer(vkattn_context *ctx, test_weights *tw, const vkattn_layer_desc *desc, unsigned long long seed)
{
    return make_layer_sinks(ctx, tw, desc, seed, 0);
}

static vkattn_kv_cache *make_cache(vkattn_context *ctx, const vkattn_layer_desc *desc, uint32_t blocks, uint32_t block_size,
                                   uint32_t seqs, vkattn_dtype dtype)
{
    vkattn_kv_cache_desc cd = {.num_kv_heads = desc->num_kv_heads ? desc->num_kv_heads : desc->num_heads,
                               .head_dim = desc->head_dim ? desc->head_dim : desc->embed_dim / desc->num_heads,
                               .num_blocks = blocks,
                               .block_size = block_size, .max_sequences = seqs, .dtype = dtype};
    vkattn_kv_cache *cache = NULL;
    CHECK_STATUS(vkattn_kv_cache_create(ctx, &cd, &cache), VKATTN_OK);
    return cache;
}

/* N(0,1) values: Box-Muller over the test generator. */
static void fill_normal(test_rng *rng, float *x, size_t n)
{
    for (size_t i = 0; i < n; i += 2) {
        double u1 = (test_rng_float(rng) + 1.0) / 2.0, u2 = (test_rng_float(rng) + 1.0) / 2.0;
        double r = sqrt(-2.0 * log(u1 > 1e-12 ? u1 : 1e-12)), a = 6.283185307179586 * u2;
        x[i] = (float)(r * cos(a));
        if (i + 1 < n) x[i + 1] = (float)(r * sin(a));
    }
}

/* ---- decoding through the cache, one row per case ------------------------------------------ */

/* A sequence fed to one cache: a prompt of `prefill` tokens in pieces of `chunk`, then one token at
 * a time up to `total`, every output against the reference over the whole sequence. */
typedef struct decode_row {
    const char *family, *name;
    vkattn_layer_desc layer;
    int sinks;                /* a sink logit per head in [-1, 3) */
    uint32_t prefill, chunk, total, block_size;
    vkattn_dtype dtype;       /* the cache's */
    uint32_t kv_splits;       /* 0 = the device's choice */
    double nmse;              /* against the reference (for a block format: the unrounded one, what the format costs) */
    int merged;               /* the last step's dispatches: 1 = with the parts' merge, 0 = without, -1 = not checked */
    int normal;               /* N(0,1) inputs (the block formats' cost is quoted for those), else uniform in [-1, 1) */
    uint32_t binding_kib;     /* the context's bindings at most this (0: the device's), to split a long prefill */
} decode_row;

/* The rounding reference of a block format agrees to about 1e-13 NMSE, except where a value lies
 * within an ulp of a rounding boundary of the format: the device's fp32 projections and the
 * reference's double ones differ in the last bit, and one side lands on the neighbouring level.
 * Such a flip moved the NMSE to 2e-8 (split-KV, q8_0) and 6e-10 (D=128, q4_0); perturbing the
 * inputs by a few ulps moved it by up to 1e-8. Hence 1e-6: far below the formats' own error, far
 * above a flip. */
#define ROUNDING_REFERENCE_NMSE 1e-6

#define GQA_ROPE {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000}
#define MQA_ROPE {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 10000}
#define QUANT_GQA {.embed_dim = 128, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000}

static const float k_short8[8] = {1.0f, 1.125f, 1.25f, 1.5f, 2.0f, 2.5f, 3.0f, 4.0f};
static const float k_long8[8] = {1.0f, 2.0f, 4.0f, 8.0f, 16.0f, 24.0f, 32.0f, 48.0f};

static const decode_row decode_rows[] = {
    /* decode: every kernel build of a cached forward once (this family also runs on the second
     * driver): GQA with NeoX RoPE in f32 and f16 caches and f16 storage, and split-KV's ragged merge */
    {"decode", "gqa rope neox, prefill 7 then decode", GQA_ROPE, 0, 7, 7, 40, 4, VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"decode", "gqa rope neox, f16 cache", GQA_ROPE, 0, 7, 7, 40, 4, VKATTN_DTYPE_F16, 0, 1e-5, -1},
    {"decode", "gqa, split-KV 3 parts (the ragged merge)", GQA_ROPE, 0, 7, 7, 40, 4, VKATTN_DTYPE_F32, 3, 1e-10, 1},
    /* more parts asked for than the keys have blocks: fewer parts (was refused, as more than one
     * merge combines) */
    {"decode", "gqa, kv_splits 2^32 - 1 (as many parts as blocks)", GQA_ROPE, 0, 7, 7, 40, 4, VKATTN_DTYPE_F32,
     UINT32_MAX, 1e-10, -1},
    {"decode", "gqa, f16 layer storage and cache",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000, .storage = VKATTN_DTYPE_F16}, 0, 7, 7, 40,
     4, VKATTN_DTYPE_F16, 0, 2e-5, -1},
    /* D = 64 in an f16 cache: the GPU classes read its K and V rows 8 halves per load (K: two
     * texels of a key lane's 4; D = 16 above has one each. V: by 4 sets of 8 lanes, each adding
     * some of a block's keys, their sums added at the end) */
    {"decode", "gqa D=64, f16 cache, split-KV 3 parts",
     {.embed_dim = 256, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000}, 0, 9, 9, 40, 16, VKATTN_DTYPE_F16, 3,
     1e-5, 1},
    /* decode_dims: the same at D = 128 and 256 (K 8 and 16 texels a lane, V in 2 sets and 1); a
     * family of its own, run under the gpu class only, since each head dim compiles its kernels anew
     * (about 10 and 20 s from a cold cache on Mesa 25) */
    {"decode_dims", "gqa D=128, f16 cache", {.embed_dim = 512, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000},
     0, 9, 9, 40, 16, VKATTN_DTYPE_F16, 0, 1e-5, -1},
    {"decode_dims", "mqa D=256, f16 cache, split-KV 2 parts", {.embed_dim = 512, .num_heads = 2, .num_kv_heads = 1}, 0,
     9, 9, 40, 16, VKATTN_DTYPE_F16, 2, 1e-5, 1},
    /* decode_shapes: the same kernels at more shapes */
    {"decode_shapes", "gqa, prompt in chunks of 5", GQA_ROPE, 0, 23, 5, 30, 8, VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"decode_shapes", "gqa, 1-token prefill (all decode)", GQA_ROPE, 0, 1, 1, 24, 16, VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"decode_shapes", "mqa D=128 theta 500000", {.embed_dim = 512, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 500000},
     0, 40, 40, 72, 16, VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"decode_shapes", "mha gptj rope_dim 16",
     {.embed_dim = 96, .num_heads = 3, .rope_theta = 10000, .rope_dim = 16, .rope_style = VKATTN_ROPE_GPTJ}, 0, 9, 9, 33,
     4, VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"decode_shapes", "no rope, D=15 (scalar texels)", {.embed_dim = 30, .num_heads = 2, .num_kv_heads = 1}, 0, 5, 5, 20,
     3, VKATTN_DTYPE_F32, 0, 1e-10, -1},
    /* split: split-KV forced, and the parts a loop budget of 600 trips needs (main lowers it; 80
     * for the GPU tunings' attn_paged_lanes): it holds 560 keys per invocation at D = 16, so 1300
     * keys need 3 parts; with a window of 700 the parts cover 700 keys from each row's window
     * start (2 parts), and a sink joins part 0 only */
    {"split", "split-KV 1 part (unsplit)", MQA_ROPE, 0, 300, 300, 310, 16, VKATTN_DTYPE_F32, 1, 1e-10, 0},
    {"split", "split-KV 7 parts", MQA_ROPE, 0, 300, 300, 310, 16, VKATTN_DTYPE_F32, 7, 1e-10, 1},
    {"split", "split-KV 7 parts, f16 cache", MQA_ROPE, 0, 300, 300, 310, 16, VKATTN_DTYPE_F16, 7, 1e-5, 1},
    /* enough parts (about 20) for the GPU classes' 16 merge lanes per texel */
    {"split", "split-KV 32 parts asked, f16 cache", MQA_ROPE, 0, 300, 300, 310, 16, VKATTN_DTYPE_F16, 32, 1e-5, 1},
    {"split", "loop budget: parts it needs", MQA_ROPE, 0, 1290, 1290, 1300, 32, VKATTN_DTYPE_F32, 1, 1e-10, 1},
    {"split", "loop budget: window 700, sinks",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 10000, .window = 700}, 1, 1290, 1290, 1300, 32,
     VKATTN_DTYPE_F32, 1, 1e-10, 1},
    /* variants: each against the reference over the whole sequence (decode equals prefill) */
    {"variants", "window 5, gqa rope, prefill 7 then decode",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000, .window = 5}, 0, 7, 7, 40, 4,
     VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"variants", "window 8, prompt in chunks of 5",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000, .window = 8}, 0, 23, 5, 30, 3,
     VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"variants", "softcap 1.5 + sinks, mqa",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 10000, .softcap = 1.5f}, 1, 9, 9, 30, 4,
     VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"variants", "alibi H=4, gqa", {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .alibi = 1}, 0, 6, 6, 30, 4,
     VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"variants", "alibi H=6 (not a power of two), D=7", {.embed_dim = 42, .num_heads = 6, .num_kv_heads = 3, .alibi = 1},
     0, 5, 5, 25, 4, VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"variants", "window + softcap + alibi + sinks",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .window = 6, .softcap = 2.0f, .alibi = 1}, 1, 8, 8, 30, 4,
     VKATTN_DTYPE_F32, 0, 1e-10, -1},
    {"variants", "all variants, f16 cache",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .window = 6, .softcap = 2.0f, .alibi = 1}, 1, 8, 8, 30, 4,
     VKATTN_DTYPE_F16, 0, 1e-5, -1},
    /* split-KV: 7 parts (most of them wholly outside the window, or past it), the sink once */
    {"variants", "split-KV 7 parts, window 40, sinks",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 10000, .window = 40}, 1, 300, 300, 310, 16,
     VKATTN_DTYPE_F32, 7, 1e-10, 1},
    {"variants", "split-KV 7 parts, sinks", MQA_ROPE, 1, 300, 300, 310, 16, VKATTN_DTYPE_F32, 7, 1e-10, 1},
    /* models: today's models decoding token by token; the norms and RoPE act on each new token
     * before its K enters the cache. LongRoPE's long factors from the first forward on (its prompt
     * already passes original_max_position_embeddings), so every step uses the table the whole
     * sequence's reference does (vkattn_rope_type says what a cache does when a sequence crosses
     * that length). */
    {"models", "qwen3: head_dim 32 != E/H, per-head norms, gqa",
     {.embed_dim = 48, .num_heads = 4, .num_kv_heads = 2, .head_dim = 32, .rope_theta = 1e6f,
      .qk_norm = VKATTN_QK_NORM_HEAD},
     0, 9, 9, 30, 4, VKATTN_DTYPE_F32, 0, 1e-10, 0},
    {"models", "gemma3: (1 + w) norms, scale, window, mqa",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 1, .head_dim = 32, .scale = 0.0625f, .window = 6,
      .rope_theta = 10000, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_plus_one = 1},
     0, 9, 9, 30, 4, VKATTN_DTYPE_F32, 0, 1e-10, 0},
    {"models", "olmo2: row norms, f16 cache",
     {.embed_dim = 64, .num_heads = 4, .rope_theta = 500000, .qk_norm = VKATTN_QK_NORM_ROW}, 0, 9, 9, 30, 4,
     VKATTN_DTYPE_F16, 0, 1e-5, 0},
    {"models", "llama3 rope, split-KV 3 parts",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 500000,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LLAMA3, .factor = 8, .low_freq_factor = 1, .high_freq_factor = 4,
                       .original_max_position_embeddings = 16}},
     0, 7, 7, 40, 4, VKATTN_DTYPE_F32, 3, 1e-10, 1},
    {"models", "gpt-oss: yarn without truncation, sinks, window, biases",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 150000, .window = 8,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_YARN, .factor = 32, .original_max_position_embeddings = 4096,
                       .no_truncate = 1}},
     1, 7, 7, 30, 4, VKATTN_DTYPE_F32, 0, 1e-10, 0},
    {"models", "phi-4-mini: longrope long, partial rotary, head_dim 24",
     {.embed_dim = 64, .num_heads = 2, .head_dim = 24, .rope_theta = 10000, .rope_dim = 16,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LONGROPE, .original_max_position_embeddings = 16,
                       .max_position_embeddings = 128, .short_factor = k_short8, .long_factor = k_long8}},
     0, 20, 20, 32, 4, VKATTN_DTYPE_F32, 0, 1e-10, 0},
    {"models", "smollm3 nope layer with norms, q8_0 cache",
     {.embed_dim = 128, .num_heads = 4, .num_kv_heads = 2, .qk_norm = VKATTN_QK_NORM_HEAD}, 0, 7, 7, 30, 4,
     VKATTN_DTYPE_Q8_0, 0, 5e-4, 0, 1},
    /* quant: both block formats through GQA + RoPE decoding (D = 32: a block per row), and Q4_0 at
     * D = 64 without RoPE (two blocks per row, rows 36 bytes apart) */
    {"quant", "gqa rope neox, prefill 7 then decode", QUANT_GQA, 0, 7, 7, 40, 4, VKATTN_DTYPE_Q8_0, 0, 5e-4, -1, 1},
    {"quant", "gqa rope neox, prefill 7 then decode", QUANT_GQA, 0, 7, 7, 40, 4, VKATTN_DTYPE_Q4_0, 0, 5e-2, -1, 1},
    {"quant", "mha D=64, prompt in chunks of 5", {.embed_dim = 128, .num_heads = 2}, 0, 23, 5, 30, 8, VKATTN_DTYPE_Q4_0,
     0, 5e-2, -1, 1},
    /* quant_accuracy: what the formats cost at a real head dim (D = 128; README quotes these), the
     * paths that split the keys, and a block format with the variants */
    {"quant_accuracy", "D=128 gqa rope, prefill 40 then decode",
     {.embed_dim = 512, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000}, 0, 40, 40, 72, 16, VKATTN_DTYPE_Q8_0, 0,
     5e-4, -1, 1},
    {"quant_accuracy", "D=128 gqa rope, prefill 40 then decode",
     {.embed_dim = 512, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000}, 0, 40, 40, 72, 16, VKATTN_DTYPE_Q4_0, 0,
     5e-2, -1, 1},
    {"quant_accuracy", "split-KV 7 parts", {.embed_dim = 128, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 10000}, 0,
     300, 300, 310, 16, VKATTN_DTYPE_Q4_0, 7, 5e-2, -1, 1},
    {"quant_accuracy", "split-KV 7 parts", {.embed_dim = 128, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 10000}, 0,
     300, 300, 310, 16, VKATTN_DTYPE_Q8_0, 7, 5e-4, -1, 1},
    {"quant_accuracy", "window 40 + softcap, split-KV 7",
     {.embed_dim = 128, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 10000, .window = 40, .softcap = 30}, 0, 100,
     100, 130, 16, VKATTN_DTYPE_Q4_0, 7, 5e-2, -1, 1},
    /* long_prefill: a prompt whose Q/K/V exceed one binding (the device's: 128 MiB on lavapipe,
     * 2^27 texels on NVIDIA: Llama 3.1 8B past 5461 tokens here, 70B past 13107 there), here with
     * bindings of 300 KiB: the projections write row parts, RoPE (and the norms) runs in parts of
     * heads, the append reads K's and V's heads only and the attention Q's. 256 tokens at once,
     * then decoding. */
    {"long_prefill", "qwen3-like: head norms, gqa, prefill 256 at once",
     {.embed_dim = 256, .num_heads = 8, .num_kv_heads = 2, .rope_theta = 1e6f, .qk_norm = VKATTN_QK_NORM_HEAD}, 0, 256,
     256, 260, 16, VKATTN_DTYPE_F32, 0, 1e-10, -1, 0, 300},
    {"long_prefill", "olmo2-like: row norms (a row's heads in one part), gqa, prefill 256 at once",
     {.embed_dim = 256, .num_heads = 8, .num_kv_heads = 2, .rope_theta = 500000, .qk_norm = VKATTN_QK_NORM_ROW}, 0,
     256, 256, 260, 16, VKATTN_DTYPE_F32, 0, 1e-10, -1, 0, 300},
    {"long_prefill", "llama-like: gqa rope, q8_0 cache, prefill 256 at once",
     {.embed_dim = 256, .num_heads = 8, .num_kv_heads = 2, .rope_theta = 500000}, 0, 256, 256, 260, 16,
     VKATTN_DTYPE_Q8_0, 0, 5e-4, -1, 1, 300},
    {"long_prefill", "fp16 layer, f16 cache, mqa, prefill 256 at once",
     {.embed_dim = 256, .num_heads = 8, .num_kv_heads = 1, .rope_theta = 10000, .storage = VKATTN_DTYPE_F16}, 0, 256,
     256, 260, 16, VKATTN_DTYPE_F16, 0, 1e-5, -1, 0, 140},
};

static void run_decode_row(vkattn_context *ctx, const decode_row *row)
{
    const vkattn_layer_desc *desc = &row->layer;
    test_weights tw;
    vkattn_layer *layer = make_layer_sinks(ctx, &tw, desc, 11, row->sinks);
    const uint32_t total = row->total, bs = row->block_size;
    vkattn_kv_cache *cache = make_cache(ctx, desc, (total + bs - 1) / bs, bs, 1, row->dtype);
    seq_run r, *rp = &r;
    run_make(&r, 0, total, desc->embed_dim, 5);
    if (row->normal) {
        test_rng rng = test_rng_make(21);
        fill_normal(&rng, r.tokens, (size_t)total * desc->embed_dim);
    }
    const uint64_t device_bindings = ctx->binding_bytes;
    if (row->binding_kib) ctx->binding_bytes = (uint64_t)row->binding_kib << 10;
    uint32_t first_dispatches = 0;
    while (r.len < total) {
        uint32_t n = r.len < row->prefill ? (row->prefill - r.len < row->chunk ? row->prefill - r.len : row->chunk) : 1;
        vkattn_status status = feed(layer, cache, desc->embed_dim, &rp, &n, 1, row->kv_splits);
        CHECK_STATUS(status, VKATTN_OK);
        if (status != VKATTN_OK) break; /* the cache did not grow: the loop would not end */
        vkattn_forward_stats first;
        if (!first_dispatches && vkattn_layer_last_stats(layer, &first) == VKATTN_OK)
            first_dispatches = first.dispatches;
    }
    ctx->binding_bytes = device_bindings;
    /* the lowered bindings bite: the prompt's projections and RoPE ran in parts (unsplit: 4 + 1) */
    if (row->binding_kib)
        CHECK_MSG(first_dispatches >= 7, "%s: the prompt ran %u dispatches; its bindings did not split it", row->name,
                  first_dispatches);
    uint32_t length = 0;
    CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 0, &length), VKATTN_OK);
    CHECK(length == total);
    /* The last step's dispatches: projections, RoPE, append, attention, output; + the merge when split. */
    vkattn_forward_stats stats;
    CHECK_STATUS(vkattn_layer_last_stats(layer, &stats), VKATTN_OK);
    const int rope = desc->rope_theta > 0 || desc->rope_scaling.type == VKATTN_ROPE_TYPE_TABLE;
    /* one rope step (a row norm: q's and k's) */
    uint32_t want = 4 + (desc->qk_norm == VKATTN_QK_NORM_ROW ? 2 : desc->qk_norm || rope) + (row->merged > 0);
    /* whether a step splits its keys (and merges) is lavapipe's choice here; a GPU splits for waves */
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    int split_by_device = info.type != VKATTN_DEVICE_CPU && row->merged == 0 && stats.dispatches == want + 1;
    CHECK_MSG(row->merged < 0 || stats.dispatches == want || split_by_device,
              "%s: the last step ran %u dispatches, not %u", row->name, stats.dispatches, want);
    char what[96];
    snprintf(what, sizeof what, "%s, %s cache", row->name, vkattn_dtype_name(row->dtype));
    if (vka_dtype_is_block(row->dtype)) check_run_as(&tw, &r, row->dtype, ROUNDING_REFERENCE_NMSE, what);
    check_run(&tw, &r, row->nmse, what);
    run_free(&r);
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

/* Every row of `family`; 1 if there was one. */
static int run_decode_rows(vkattn_context *ctx, const char *family)
{
    int ran = 0;
    for (size_t i = 0; i < sizeof decode_rows / sizeof decode_rows[0]; i++)
        if (strcmp(decode_rows[i].family, family) == 0) run_decode_row(ctx, &decode_rows[i]), ran = 1;
    return ran;
}

/* Three sequences of different lengths in one pool, in batches of mixed prompts and steps. */
static void ragged_case(vkattn_context *ctx, const vkattn_layer_desc *desc_in, int sinks, const char *name)
{
    vkattn_layer_desc desc = *desc_in;
    test_weights tw;
    vkattn_layer *layer = make_layer_sinks(ctx, &tw, &desc, 3, sinks);
    vkattn_kv_cache *cache = make_cache(ctx, &desc, 64, 4, 5, VKATTN_DTYPE_F32);
    seq_run r[3];
    for (uint32_t k = 0; k < 3; k++) run_make(&r[k], k == 0 ? 4 : k, 40, 64, 100 + k);
    /* prompts of 5, 1 and 12 tokens in one forward; then mixed steps in other orders */
    seq_run *all[3] = {&r[0], &r[1], &r[2]}, *mix[3] = {&r[2], &r[0], &r[1]}, *two[2] = {&r[1], &r[2]};
    CHECK_STATUS(feed(layer, cache, 64, all, (uint32_t[]){5, 1, 12}, 3, 0), VKATTN_OK);
    CHECK_STATUS(feed(layer, cache, 64, mix, (uint32_t[]){1, 3, 1}, 3, 0), VKATTN_OK);
    for (int step = 0; step < 6; step++) CHECK_STATUS(feed(layer, cache, 64, two, (uint32_t[]){1, 1}, 2, 0), VKATTN_OK);
    CHECK_STATUS(feed(layer, cache, 64, mix, (uint32_t[]){2, 1, 9}, 3, 0), VKATTN_OK);
    for (uint32_t k = 0; k < 3; k++) check_run(&tw, &r[k], 1e-10, name);
    for (uint32_t k = 0; k < 3; k++) run_free(&r[k]);
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

static void family_ragged(vkattn_context *ctx)
{
    vkattn_layer_desc desc = {.embed_dim = 64, .num_heads = 8, .num_kv_heads = 2, .rope_theta = 10000};
    ragged_case(ctx, &desc, 0, "ragged batch");
}

/* A ragged batch with the variants: a window, ALiBi and sinks. */
static void family_variants(vkattn_context *ctx)
{
    vkattn_layer_desc rg = {.embed_dim = 64, .num_heads = 8, .num_kv_heads = 2, .window = 4, .alibi = 1};
    ragged_case(ctx, &rg, 1, "ragged batch, window 4 + alibi + sinks");
}

/* Rollback (vkattn_kv_cache_truncate), in every cache format: a prompt in sequence 0, forked into
 * 1, which decodes 5 tokens of its own and is rolled back into a block it shares with 0 (a
 * copy-on-write), then decodes 6 other tokens: both sequences must equal fresh ones with their
 * histories (the reference over each whole history); a rollback to a block boundary, to the
 * current length, and to 0; refusals that change nothing (a length above the sequence's, a
 * sequence out of range, no free block for the copy and none of the sequence's own past the new
 * length); in a full pool, the copy in a block the rollback releases; every block back at the end. Stale slots
 * past a rolled-back length hold the old tokens' values (or NaN, for the last round): nothing of
 * them may leak. */
static void truncate_faults(vkattn_context *ctx, vkattn_layer *layer, const test_weights *tw);

static void family_truncate(vkattn_context *ctx)
{
    const vkattn_dtype dtypes[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};
    vkattn_layer_desc desc = {.embed_dim = 64, .num_heads = 2, .num_kv_heads = 1, .rope_theta = 10000}; /* D = 32 */
    test_weights tw;
    vkattn_layer *layer = make_layer(ctx, &tw, &desc, 17);
    for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++) {
        const vkattn_dtype dtype = dtypes[di];
        const double tol = dtype == VKATTN_DTYPE_F32 ? 1e-10 : dtype == VKATTN_DTYPE_F16 ? 1e-5 : ROUNDING_REFERENCE_NMSE;
        vkattn_kv_cache *cache = make_cache(ctx, &desc, 12, 4, 3, dtype);
        seq_run a, b, *pa = &a, *pb = &b;
        run_make(&a, 0, 32, 64, 31 + di);
        run_make(&b, 1, 32, 64, 41 + di);
        CHECK_STATUS(feed(layer, cache, 64, &pa, (uint32_t[]){10}, 1, 0), VKATTN_OK); /* blocks of 4: 4 + 4 + 2 */
        CHECK_STATUS(vkattn_kv_cache_fork(cache, 0, 1), VKATTN_OK);
        memcpy(b.tokens, a.tokens, 10 * 64 * sizeof(float));
        memcpy(b.out, a.out, 10 * 64 * sizeof(float));
        b.len = 10;
        for (int i = 0; i < 5; i++) CHECK_STATUS(feed(layer, cache, 64, &pb, (uint32_t[]){1}, 1, 0), VKATTN_OK);
        vkattn_kv_cache_info before, after;
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &before), VKATTN_OK);
        /* refused, nothing changes */
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 1, 16), VKATTN_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 3, 1), VKATTN_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 1, 15), VKATTN_OK); /* its length: nothing to do */
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &after), VKATTN_OK);
        CHECK(after.free_blocks == before.free_blocks && after.tokens == before.tokens);
        /* into the block of positions 4..7, which 1 shares with 0: 1 gets its own copy */
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 1, 7), VKATTN_OK);
        uint32_t length = 0;
        CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 1, &length), VKATTN_OK);
        CHECK(length == 7);
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &after), VKATTN_OK);
        /* 1 held 4 blocks (0 and 1 shared with sequence 0, 2 and 3 its own): 2 and 3 went back, and
         * a free one became its own copy of 1 */
        CHECK_MSG(after.free_blocks == before.free_blocks + 2 - 1, "%s: %u free blocks after the rollback, %u before",
                  vkattn_dtype_name(dtype), after.free_blocks, before.free_blocks);
        b.len = 7;
        test_rng rng = test_rng_make(51 + di);
        test_fill(&rng, b.tokens + 7 * 64, 6 * 64, 1.0f); /* other tokens than the rolled-back ones */
        for (int i = 0; i < 6; i++) CHECK_STATUS(feed(layer, cache, 64, &pb, (uint32_t[]){1}, 1, 0), VKATTN_OK);
        for (int i = 0; i < 3; i++) CHECK_STATUS(feed(layer, cache, 64, &pa, (uint32_t[]){1}, 1, 0), VKATTN_OK);
        char what[96];
        snprintf(what, sizeof what, "rolled back into a shared block, %s", vkattn_dtype_name(dtype));
        if (vka_dtype_is_block(dtype)) check_run_as(&tw, &b, dtype, tol, what), check_run_as(&tw, &a, dtype, tol, "its source");
        else check_run(&tw, &b, tol, what), check_run(&tw, &a, tol, "its source");
        /* to a block boundary, then on */
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 1, 8), VKATTN_OK);
        b.len = 8;
        test_fill(&rng, b.tokens + 8 * 64, 3 * 64, 1.0f);
        CHECK_STATUS(feed(layer, cache, 64, &pb, (uint32_t[]){3}, 1, 0), VKATTN_OK);
        snprintf(what, sizeof what, "rolled back to a block boundary, %s", vkattn_dtype_name(dtype));
        if (vka_dtype_is_block(dtype)) check_run_as(&tw, &b, dtype, tol, what);
        else check_run(&tw, &b, tol, what);
        /* stale NaN past the rolled-back length never leaks: a NaN token, rolled back, then others */
        for (int i = 0; i < 64; i++) b.tokens[11 * 64 + i] = NAN;
        CHECK_STATUS(feed(layer, cache, 64, &pb, (uint32_t[]){1}, 1, 0), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 1, 11), VKATTN_OK);
        b.len = 11;
        test_fill(&rng, b.tokens + 11 * 64, 2 * 64, 1.0f);
        CHECK_STATUS(feed(layer, cache, 64, &pb, (uint32_t[]){2}, 1, 0), VKATTN_OK);
        snprintf(what, sizeof what, "a NaN token rolled back, %s", vkattn_dtype_name(dtype));
        if (vka_dtype_is_block(dtype)) check_run_as(&tw, &b, dtype, tol, what);
        else check_run(&tw, &b, tol, what);
        /* A full pool: the copy goes into a block of the sequence's own that the rollback releases,
         * else it is refused and nothing changes. */
        CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 1), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_fork(cache, 0, 1), VKATTN_OK); /* 13 tokens: 3 shared blocks + a copy */
        CHECK_STATUS(vkattn_kv_cache_fork(cache, 0, 2), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 1, 12), VKATTN_OK); /* a boundary: 1's copy goes back */
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &before), VKATTN_OK);
        seq_run c, *pc = &c;
        run_make(&c, 2, 48, 64, 61 + di); /* 13 + 31 tokens at the most */
        memcpy(c.tokens, a.tokens, 13 * 64 * sizeof(float)); /* 2's history is 0's */
        memcpy(c.out, a.out, 13 * 64 * sizeof(float));
        c.len = 13;
        uint32_t fill = before.free_blocks * 4 + 3; /* the rest of the pool, and the 3 slots left in 2's last block */
        CHECK_STATUS(feed(layer, cache, 64, &pc, &fill, 1, 0), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &before), VKATTN_OK);
        CHECK(before.free_blocks == 0);
        /* 1 holds only blocks it shares: no block for its copy of positions 4..7 */
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 1, 6), VKATTN_ERROR_CACHE_FULL);
        CHECK(strstr(vkattn_context_last_error(ctx), "none of 12 is free") != NULL);
        CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 1, &length), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &after), VKATTN_OK);
        CHECK(length == 12 && after.free_blocks == 0 && after.tokens == before.tokens);
        /* 2 holds blocks of its own past position 6: one becomes its copy of positions 4..7, the
         * rest go back (2 held 3 shared blocks, its copy of 0's last and `fill` / 4 more) */
        const uint32_t held = 4 + (fill - 3) / 4;
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 2, 6), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 2, &length), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &after), VKATTN_OK);
        /* its own past the new length: held - 3 (not 0's blocks 0 to 2), one of them now its copy */
        CHECK_MSG(length == 6 && after.free_blocks == held - 4, "%s: %u free blocks after a rollback in a full pool, %u "
                  "of its own past the new length", vkattn_dtype_name(dtype), after.free_blocks, held - 3);
        c.len = 6;
        test_fill(&rng, c.tokens + 6 * 64, 5 * 64, 1.0f);
        CHECK_STATUS(feed(layer, cache, 64, &pc, (uint32_t[]){5}, 1, 0), VKATTN_OK);
        for (int i = 0; i < 2; i++) CHECK_STATUS(feed(layer, cache, 64, &pa, (uint32_t[]){1}, 1, 0), VKATTN_OK);
        snprintf(what, sizeof what, "rolled back in a full pool, %s", vkattn_dtype_name(dtype));
        if (vka_dtype_is_block(dtype)) check_run_as(&tw, &c, dtype, tol, what), check_run_as(&tw, &a, dtype, tol, "its source");
        else check_run(&tw, &c, tol, what), check_run(&tw, &a, tol, "its source");
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 1, 4), VKATTN_OK); /* a boundary needs no copy */
        CHECK_STATUS(vkattn_kv_cache_truncate(cache, 1, 0), VKATTN_OK); /* as free_seq */
        for (uint32_t seq = 0; seq < 3; seq++) CHECK_STATUS(vkattn_kv_cache_free_seq(cache, seq), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &after), VKATTN_OK);
        CHECK(after.free_blocks == 12 && after.tokens == 0 && after.sequences == 0);
        run_free(&a), run_free(&b), run_free(&c);
        vkattn_kv_cache_destroy(cache);
    }
    truncate_faults(ctx, layer, &tw);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

/* Sequence 1 forked from 0's 10 tokens (2 shared blocks of 4, its own copy of the third), then
 * grown until the pool of 12 is full. */
static void full_pool(vkattn_layer *layer, vkattn_kv_cache *cache, seq_run *a, seq_run *b)
{
    seq_run *pb = b;
    CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 1), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_fork(cache, 0, 1), VKATTN_OK);
    memcpy(b->tokens, a->tokens, 10 * 64 * sizeof(float));
    memcpy(b->out, a->out, 10 * 64 * sizeof(float));
    b->len = 10;
    vkattn_kv_cache_info info;
    CHECK_STATUS(vkattn_kv_cache_get_info(cache, &info), VKATTN_OK);
    uint32_t fill = info.free_blocks * 4 + 2;
    CHECK_STATUS(feed(layer, cache, 64, &pb, &fill, 1, 0), VKATTN_OK);
}

/* A rollback into a shared block in a full pool copies into one of the sequence's own blocks: a
 * failure of each Vulkan call on its way leaves the cache as it was, or, where the device may have
 * copied already, the sequence with its whole blocks before the partly filled one (said so), never
 * a block whose tokens are not its own; then the rollback succeeds and decoding matches. */
static void truncate_faults(vkattn_context *ctx, vkattn_layer *layer, const test_weights *tw)
{
    vkattn_layer_desc desc = {.embed_dim = 64, .num_heads = 2, .num_kv_heads = 1, .rope_theta = 10000};
    vkattn_kv_cache *cache = make_cache(ctx, &desc, 12, 4, 2, VKATTN_DTYPE_F32);
    seq_run a, b, *pa = &a, *pb = &b;
    run_make(&a, 0, 16, 64, 71);
    run_make(&b, 1, 48, 64, 72);
    CHECK_STATUS(feed(layer, cache, 64, &pa, (uint32_t[]){10}, 1, 0), VKATTN_OK);
    full_pool(layer, cache, &a, &b);
    int cut = 0, unchanged = 0;
    vkattn_status status = VKATTN_ERROR_DEVICE_LIMIT;
    for (uint64_t k = 1; k < 64 && status != VKATTN_OK; k++) {
        uint32_t before = 0, after = 0;
        vkattn_kv_cache_info info_before, info_after;
        CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 1, &before), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &info_before), VKATTN_OK);
        ctx->dev.faults.vk_calls = 0, ctx->dev.faults.vk_fail_at = k;
        status = vkattn_kv_cache_truncate(cache, 1, 6);
        ctx->dev.faults.vk_fail_at = 0;
        CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 1, &after), VKATTN_OK);
        if (status == VKATTN_OK) break;
        CHECK_STATUS(vkattn_kv_cache_get_info(cache, &info_after), VKATTN_OK);
        if (after == before) {
            unchanged++;
            CHECK(info_after.free_blocks == info_before.free_blocks && info_after.tokens == info_before.tokens);
        } else {
            cut++;
            CHECK_MSG(after == 4 && strstr(vkattn_context_last_error(ctx), "now holds its first 4 tokens") != NULL,
                      "call %llu failed: sequence 1 holds %u tokens (%s)", (unsigned long long)k, after,
                      vkattn_context_last_error(ctx));
            b.len = 4; /* its first block, as it was: decoding on from there matches */
            test_rng rng = test_rng_make(73 + k);
            test_fill(&rng, b.tokens + 4 * 64, 3 * 64, 1.0f);
            CHECK_STATUS(feed(layer, cache, 64, &pb, (uint32_t[]){3}, 1, 0), VKATTN_OK);
            check_run(tw, &b, 1e-10, "decoding on after a failed copy");
            full_pool(layer, cache, &a, &b);
        }
    }
    CHECK_STATUS(status, VKATTN_OK);
    uint32_t length = 0;
    CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 1, &length), VKATTN_OK);
    CHECK(length == 6);
    printf("  a rollback in a full pool with each Vulkan call failing: %d left the cache as it was, %d cut the "
           "sequence to its whole blocks\n", unchanged, cut);
    CHECK(cut > 0 && unchanged > 0); /* both kinds of failure were walked */
    b.len = 6;
    test_rng rng = test_rng_make(79);
    test_fill(&rng, b.tokens + 6 * 64, 2 * 64, 1.0f);
    CHECK_STATUS(feed(layer, cache, 64, &pb, (uint32_t[]){2}, 1, 0), VKATTN_OK);
    check_run(tw, &b, 1e-10, "after the rollback that failed first");
    run_free(&a), run_free(&b);
    vkattn_kv_cache_destroy(cache);
}

static uint32_t pipelines_of(vkattn_context *ctx)
{
    vkattn_pipeline_cache_info info;
    CHECK_STATUS(vkattn_context_pipeline_cache_info(ctx, &info), VKATTN_OK);
    return info.pipelines;
}

/* Warm-up (vkattn_layer_warm_up): after it, cached forwards within its limits build no pipeline —
 * prompts and chunks of every size up to the limit, a ragged batch, decoding steps at lengths to
 * the limit, and steps at the kv_splits it was given — and a second warm-up builds none; limits
 * the cache cannot hold, and kv_splits without a cache, are refused. */
static void family_warm_up(vkattn_context *ctx)
{
    vkattn_layer_desc desc = {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000,
                              .qk_norm = VKATTN_QK_NORM_HEAD};
    test_weights tw;
    vkattn_layer *layer = make_layer(ctx, &tw, &desc, 23);
    vkattn_kv_cache *cache = make_cache(ctx, &desc, 64, 8, 3, VKATTN_DTYPE_F32);
    uint32_t built = 0, again = 99;
    vkattn_warm_up_desc w = {.cache = cache, .max_batch = 3, .max_new_tokens = 24, .max_length = 160};
    double t0 = test_now_s();
    CHECK_STATUS(vkattn_layer_warm_up(layer, &w, &built), VKATTN_OK);
    printf("  warm-up built %u pipelines in %.2f s\n", built, test_now_s() - t0);
    CHECK(built > 0);
    CHECK_STATUS(vkattn_layer_warm_up(layer, &w, &again), VKATTN_OK);
    CHECK(again == 0);
    const uint32_t warm = pipelines_of(ctx);
    seq_run r[3], *pr[3] = {&r[0], &r[1], &r[2]};
    for (uint32_t s = 0; s < 3; s++) run_make(&r[s], s, 160, 64, 70 + s);
    uint32_t news[3];
    for (uint32_t n = 1; n <= 24; n++) { /* prompts of every size, then decode steps */
        CHECK_STATUS(feed(layer, cache, 64, &pr[0], &n, 1, 0), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 0), VKATTN_OK);
        r[0].len = 0;
    }
    news[0] = 5, news[1] = 1, news[2] = 17;
    CHECK_STATUS(feed(layer, cache, 64, pr, news, 3, 0), VKATTN_OK);
    while (r[0].len < 150) { /* chunks of 24, then steps, on all three */
        news[0] = r[0].len + 24 <= 120 ? 24 : 1, news[1] = 1, news[2] = r[2].len < 100 ? 2 : 1;
        vkattn_status status = feed(layer, cache, 64, pr, news, 3, 0);
        CHECK_STATUS(status, VKATTN_OK);
        if (status != VKATTN_OK) break;
    }
    CHECK_MSG(pipelines_of(ctx) == warm, "forwards within the warm-up's limits built %u pipelines",
              pipelines_of(ctx) - warm);
    check_run(&tw, &r[0], 1e-10, "after a warm-up");
    /* an explicit kv_splits: the split builds (attention in parts, their merge), which lavapipe's
     * own choice at these lengths does not take (a GPU tuning's may, and then has them already),
     * come from a warm-up given it, and its steps build nothing */
    w.kv_splits = 3;
    CHECK_STATUS(vkattn_layer_warm_up(layer, &w, &built), VKATTN_OK);
    printf("  warm-up with kv_splits 3 built %u more pipelines\n", built);
    const uint32_t warm_split = pipelines_of(ctx);
    const uint32_t steps[3] = {1, 1, 1};
    for (vkattn_status status = VKATTN_OK; status == VKATTN_OK && r[0].len < 160;)
        CHECK_STATUS((status = feed(layer, cache, 64, pr, steps, 3, 3)), VKATTN_OK);
    CHECK_MSG(pipelines_of(ctx) == warm_split, "kv_splits 3 steps after its warm-up built %u pipelines",
              pipelines_of(ctx) - warm_split);
    check_run(&tw, &r[0], 1e-10, "kv_splits 3 after its warm-up");
    vkattn_warm_up_desc plain = {.kv_splits = 2}; /* splits are a cache's */
    CHECK_STATUS(vkattn_layer_warm_up(layer, &plain, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "kv_splits 2 without a cache") != NULL);
    w.kv_splits = 0;
    /* refused */
    w.max_batch = 4;
    CHECK_STATUS(vkattn_layer_warm_up(layer, &w, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    w.max_batch = 1, w.max_new_tokens = 200;
    CHECK_STATUS(vkattn_layer_warm_up(layer, &w, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_kv_cache_info ci;
    CHECK_STATUS(vkattn_kv_cache_get_info(cache, &ci), VKATTN_OK);
    const uint32_t capacity = ci.desc.num_blocks * ci.desc.block_size, built_before = pipelines_of(ctx);
    w.max_new_tokens = 1, w.max_length = capacity + 1; /* longer than the cache holds */
    CHECK_STATUS(vkattn_layer_warm_up(layer, &w, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "above the cache's capacity") != NULL);
    w.max_length = 1u << 30;
    CHECK_STATUS(vkattn_layer_warm_up(layer, &w, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(pipelines_of(ctx) == built_before);
    CHECK_STATUS(vkattn_layer_warm_up(layer, NULL, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    /* more new tokens than one forward takes, as the cached forward refuses them: 2^16 sequences of
     * 2^16 (2^32, which wrapped to 0 in 32 bits before an outside review), and 2^10 of 2^16 (T x E
     * = 2^32); nothing built */
    vkattn_kv_cache *wide = make_cache(ctx, &desc, 4096, 16, 1u << 16, VKATTN_DTYPE_F32);
    const uint32_t wide_batch[2] = {1u << 16, 1u << 10};
    for (int i = 0; i < 2 && wide; i++) {
        vkattn_warm_up_desc big = {.cache = wide, .max_batch = wide_batch[i], .max_new_tokens = 1u << 16};
        CHECK_STATUS(vkattn_layer_warm_up(layer, &big, NULL), VKATTN_ERROR_SIZE_OVERFLOW);
        CHECK_MSG(strstr(vkattn_context_last_error(ctx), "more than one forward takes") != NULL, "%s",
                  vkattn_context_last_error(ctx));
    }
    CHECK(pipelines_of(ctx) == built_before);
    vkattn_kv_cache_destroy(wide);
    for (uint32_t s = 0; s < 3; s++) run_free(&r[s]);
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

static void family_paging(vkattn_context *ctx)
{
    vkattn_layer_desc desc = {.embed_dim = 32, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000};
    test_weights tw;
    vkattn_layer *layer = make_layer(ctx, &tw, &desc, 9);
    vkattn_kv_cache *cache = make_cache(ctx, &desc, 16, 3, 4, VKATTN_DTYPE_F32);
    vkattn_kv_cache_info info;
    seq_run a, b, c;
    run_make(&a, 0, 24, 32, 1);
    run_make(&b, 1, 24, 32, 2);
    run_make(&c, 2, 24, 32, 3);
    /* Interleaved decoding: a's and b's blocks alternate in the pool (not contiguous). */
    seq_run *ab[2] = {&a, &b}, *pa = &a, *pb = &b, *pc = &c;
    for (int step = 0; step < 10; step++) CHECK_STATUS(feed(layer, cache, 32, ab, (uint32_t[]){1, 1}, 2, 0), VKATTN_OK);
    check_run(&tw, &a, 1e-10, "interleaved blocks");
    check_run(&tw, &b, 1e-10, "interleaved blocks");

    /* Fork b into c mid-block (10 tokens, blocks of 3): c shares 3 blocks and copies the 4th. */
    CHECK_STATUS(vkattn_kv_cache_get_info(cache, &info), VKATTN_OK);
    uint32_t free_before = info.free_blocks;
    CHECK_STATUS(vkattn_kv_cache_fork(cache, 1, 2), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_get_info(cache, &info), VKATTN_OK);
    CHECK(info.free_blocks == free_before - 1 && info.sequences == 3);
    memcpy(c.tokens, b.tokens, 10 * 32 * sizeof(float));
    memcpy(c.out, b.out, 10 * 32 * sizeof(float));
    c.len = 10;
    for (int step = 0; step < 5; step++) {
        CHECK_STATUS(feed(layer, cache, 32, &pc, (uint32_t[]){1}, 1, 0), VKATTN_OK);
        CHECK_STATUS(feed(layer, cache, 32, &pb, (uint32_t[]){1}, 1, 0), VKATTN_OK);
    }
    check_run(&tw, &b, 1e-10, "after a fork (the source)");
    check_run(&tw, &c, 1e-10, "a fork, then its own tokens");

    /* Stale data: a sequence that wrote NaN (a NaN prompt makes NaN keys and values) is freed; a
     * new sequence takes its blocks, whose unused slots still hold NaN. Nothing of it may leak. */
    CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 0), VKATTN_OK);
    seq_run poison;
    run_make(&poison, 0, 24, 32, 4);
    for (size_t i = 0; i < 24 * 32; i++) poison.tokens[i] = NAN;
    CHECK_STATUS(feed(layer, cache, 32, &pa, (uint32_t[]){0}, 0, 0), VKATTN_ERROR_INVALID_ARGUMENT);
    seq_run *pp = &poison;
    CHECK_STATUS(feed(layer, cache, 32, &pp, (uint32_t[]){12}, 1, 0), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 0), VKATTN_OK);
    seq_run fresh, *pf = &fresh;
    run_make(&fresh, 0, 24, 32, 6);
    CHECK_STATUS(feed(layer, cache, 32, &pf, (uint32_t[]){4}, 1, 0), VKATTN_OK);
    for (int step = 0; step < 3; step++) CHECK_STATUS(feed(layer, cache, 32, &pf, (uint32_t[]){1}, 1, 0), VKATTN_OK);
    check_run(&tw, &fresh, 1e-10, "blocks reused after NaN, stale slots");
    check_run(&tw, &c, 1e-10, "the fork, untouched by the rest");
    CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 1), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 2), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 0), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_get_info(cache, &info), VKATTN_OK);
    CHECK_MSG(info.free_blocks == 16 && info.tokens == 0, "free blocks %u of 16, %llu tokens after freeing all",
              info.free_blocks, (unsigned long long)info.tokens);
    run_free(&a), run_free(&b), run_free(&c), run_free(&poison), run_free(&fresh);
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

/* A prompt whose queries do not fit one binding even so (bindings of 100 KiB: 1 KiB of Q and of
 * context rows a token): refused, the message saying how long the chunks may be, the cache
 * unchanged; fed in chunks of that length, it matches the reference. */
static void family_long_prefill(vkattn_context *ctx)
{
    const vkattn_layer_desc desc = {.embed_dim = 256, .num_heads = 8, .num_kv_heads = 2, .rope_theta = 10000};
    test_weights tw;
    vkattn_layer *layer = make_layer_sinks(ctx, &tw, &desc, 13, 0);
    vkattn_kv_cache *cache = make_cache(ctx, &desc, 17, 16, 1, VKATTN_DTYPE_F32);
    seq_run r, *rp = &r;
    run_make(&r, 0, 260, desc.embed_dim, 7);
    const uint64_t device_bindings = ctx->binding_bytes;
    ctx->binding_bytes = 100u << 10;
    uint32_t n = 256, length = 1;
    CHECK_STATUS(feed(layer, cache, desc.embed_dim, &rp, &n, 1, 0), VKATTN_ERROR_DEVICE_LIMIT);
    const char *msg = vkattn_context_last_error(ctx), *at = strstr(msg, "chunks of at most ");
    CHECK_MSG(at != NULL, "no chunk length in: %s", msg);
    uint32_t chunk = at ? (uint32_t)strtoul(at + strlen("chunks of at most "), NULL, 10) : 0;
    CHECK_MSG(chunk == 100, "chunks of %u tokens (100 KiB of 1 KiB rows: 100)", chunk);
    CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 0, &length), VKATTN_OK);
    CHECK(length == 0 && r.len == 0);
    while (chunk && r.len < 256) {
        n = r.len + chunk <= 256 ? chunk : 256 - r.len;
        vkattn_status status = feed(layer, cache, desc.embed_dim, &rp, &n, 1, 0);
        CHECK_STATUS(status, VKATTN_OK);
        if (status != VKATTN_OK) break;
    }
    ctx->binding_bytes = device_bindings;
    for (n = 1; r.len < 260 && feed(layer, cache, desc.embed_dim, &rp, &n, 1, 0) == VKATTN_OK;) {}
    CHECK(r.len == 260);
    check_run(&tw, &r, 1e-10, "a prompt of 256 in chunks of the length the refusal named, then decoding");
    run_free(&r);
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

static void family_errors(vkattn_context *ctx)
{
    vkattn_layer_desc desc = {.embed_dim = 32, .num_heads = 4, .num_kv_heads = 2};
    test_weights tw;
    vkattn_layer *layer = make_layer(ctx, &tw, &desc, 2);
    vkattn_kv_cache *cache = make_cache(ctx, &desc, 4, 4, 2, VKATTN_DTYPE_F32); /* 16 tokens in all */
    vkattn_kv_cache_info info;
    seq_run a, b, *pa = &a, *pb = &b, *ab[2] = {&a, &b};
    run_make(&a, 0, 20, 32, 1);
    run_make(&b, 1, 20, 32, 2);
    CHECK_STATUS(feed(layer, cache, 32, &pa, (uint32_t[]){10}, 1, 0), VKATTN_OK);
    /* a: 12 tokens in 3 blocks, b: 3 in 1; then a's 13th token needs a 5th block: nothing changes,
     * and the message says what to do. */
    CHECK_STATUS(feed(layer, cache, 32, ab, (uint32_t[]){2, 3}, 2, 0), VKATTN_OK);
    CHECK_STATUS(feed(layer, cache, 32, ab, (uint32_t[]){1, 1}, 2, 0), VKATTN_ERROR_CACHE_FULL);
    printf("  cache full: %s\n", vkattn_context_last_error(ctx));
    CHECK(strstr(vkattn_context_last_error(ctx), "full") != NULL);
    /* A fork that must copy a partly filled last block into a full pool says so (it adds no token). */
    {
        vkattn_kv_cache *one = make_cache(ctx, &desc, 1, 4, 2, VKATTN_DTYPE_F32);
        seq_run c, *pc = &c;
        run_make(&c, 0, 4, 32, 5);
        CHECK_STATUS(feed(layer, one, 32, &pc, (uint32_t[]){3}, 1, 0), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_fork(one, 0, 1), VKATTN_ERROR_CACHE_FULL);
        CHECK(strstr(vkattn_context_last_error(ctx),
                     "forking sequence 0 copies its partly filled last block into a free block, and none of 1 is "
                     "free") != NULL);
        uint32_t forked = 1;
        CHECK_STATUS(vkattn_kv_cache_seq_length(one, 1, &forked), VKATTN_OK);
        CHECK(forked == 0);
        run_free(&c);
        vkattn_kv_cache_destroy(one);
    }
    CHECK_STATUS(vkattn_kv_cache_get_info(cache, &info), VKATTN_OK);
    CHECK(info.free_blocks == 0 && info.tokens == 15);
    uint32_t len = 0;
    CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 0, &len), VKATTN_OK);
    CHECK(len == 12);
    CHECK_STATUS(feed(layer, cache, 32, &pb, (uint32_t[]){1}, 1, 0), VKATTN_OK); /* b's block has room */
    check_run(&tw, &a, 1e-10, "after a refused forward");
    check_run(&tw, &b, 1e-10, "after a refused forward");
    CHECK_STATUS(vkattn_kv_cache_fork(cache, 0, 1), VKATTN_ERROR_INVALID_ARGUMENT); /* dst holds tokens */
    CHECK_STATUS(vkattn_kv_cache_fork(cache, 0, 0), VKATTN_ERROR_INVALID_ARGUMENT);
    /* Another layer of the same shape on this cache: the sequences hold `layer`'s keys, so it is
     * refused and nothing changes (it used to run, and advance the sequences twice per token). */
    test_weights t2;
    vkattn_layer *second = make_layer(ctx, &t2, &desc, 3);
    CHECK_STATUS(feed(second, cache, 32, &pb, (uint32_t[]){1}, 1, 0), VKATTN_ERROR_INVALID_ARGUMENT);
    printf("  second layer: %s\n", vkattn_context_last_error(ctx));
    CHECK(strstr(vkattn_context_last_error(ctx), "one cache serves one layer") != NULL);
    CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 1, &len), VKATTN_OK);
    CHECK(len == 4 && b.len == 4);
    check_run(&tw, &b, 1e-10, "after another layer was refused");
    CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 2, &len), VKATTN_ERROR_INVALID_ARGUMENT);
    /* Bad batches */
    uint32_t dup[2] = {0, 0}, one = 1, far = 7;
    float x[2 * 32] = {0}, y[2 * 32];
    vkattn_cached_forward_desc d = {.batch = 2, .seq_ids = dup, .query = x, .output = y};
    CHECK_STATUS(vkattn_forward_cached(layer, cache, &d), VKATTN_ERROR_INVALID_ARGUMENT);
    d = (vkattn_cached_forward_desc){.batch = 1, .seq_ids = &far, .query = x, .output = y};
    CHECK_STATUS(vkattn_forward_cached(layer, cache, &d), VKATTN_ERROR_INVALID_ARGUMENT);
    d = (vkattn_cached_forward_desc){.batch = 3, .query = x, .output = y};
    CHECK_STATUS(vkattn_forward_cached(layer, cache, &d), VKATTN_ERROR_INVALID_ARGUMENT);
    d = (vkattn_cached_forward_desc){.batch = 1, .seq_ids = &one, .output = y};
    CHECK_STATUS(vkattn_forward_cached(layer, cache, &d), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_forward_cached(layer, cache, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_forward_cached(layer, NULL, &d), VKATTN_ERROR_INVALID_ARGUMENT);
    /* A cache of another shape, and bad cache descriptions */
    vkattn_layer_desc other = {.embed_dim = 32, .num_heads = 4};
    vkattn_kv_cache *wrong = make_cache(ctx, &other, 2, 4, 1, VKATTN_DTYPE_F32);
    d = (vkattn_cached_forward_desc){.batch = 1, .query = x, .output = y};
    CHECK_STATUS(vkattn_forward_cached(layer, wrong, &d), VKATTN_ERROR_SHAPE);
    printf("  wrong cache: %s\n", vkattn_context_last_error(ctx));
    vkattn_kv_cache *none = NULL;
    vkattn_kv_cache_desc bad = {.num_kv_heads = 2, .head_dim = 8};
    CHECK_STATUS(vkattn_kv_cache_create(ctx, &bad, &none), VKATTN_ERROR_INVALID_ARGUMENT);
    bad.num_blocks = 4, bad.dtype = VKATTN_DTYPE_I32;
    CHECK_STATUS(vkattn_kv_cache_create(ctx, &bad, &none), VKATTN_ERROR_DTYPE);
    bad.dtype = VKATTN_DTYPE_F32, bad.num_blocks = 0xFFFFFFFFu, bad.block_size = 4096;
    CHECK_STATUS(vkattn_kv_cache_create(ctx, &bad, &none), VKATTN_ERROR_DEVICE_LIMIT);
    printf("  too big: %s\n", vkattn_context_last_error(ctx));
    CHECK(none == NULL);
    /* Sizes whose products wrap 64 bits (2^31 x 2^17 x 2^16 elements per block: 0) or 32 bits:
     * refused before any arithmetic can wrap (this was a SIGFPE and tiny pools; issue 18). */
    const vkattn_kv_cache_desc wraps[] = {
        {.num_kv_heads = 1u << 31, .head_dim = 1u << 17, .block_size = 1u << 16, .num_blocks = 1},
        {.num_kv_heads = 1u << 16, .head_dim = 1u << 16, .block_size = 1, .num_blocks = 1},
        {.num_kv_heads = 0xFFFFFFFFu, .head_dim = 0xFFFFFFFFu, .num_blocks = 0xFFFFFFFFu},
        {.num_kv_heads = 1u << 12, .head_dim = 1u << 12, .block_size = 1u << 16, .num_blocks = 1u << 20},
        {.num_kv_heads = 1u << 10, .head_dim = 1u << 10, .block_size = 1u << 12, .num_blocks = 1u << 16,
         .dtype = VKATTN_DTYPE_Q8_0},
    };
    for (size_t i = 0; i < sizeof wraps / sizeof wraps[0]; i++) {
        CHECK_STATUS(vkattn_kv_cache_create(ctx, &wraps[i], &none), VKATTN_ERROR_DEVICE_LIMIT);
        printf("  wrap %zu: %s\n", i, vkattn_context_last_error(ctx));
        CHECK(none == NULL);
    }
    /* A layer the cache cannot serve: appended keys */
    vkattn_layer_desc biased = {.embed_dim = 32, .num_heads = 4, .add_bias_kv = 1};
    test_weights tb;
    vkattn_layer *bl = make_layer(ctx, &tb, &biased, 4);
    CHECK_STATUS(vkattn_forward_cached(bl, wrong, &d), VKATTN_ERROR_UNSUPPORTED);
    vkattn_layer_destroy(bl);
    test_weights_free(&tb);
    run_free(&a), run_free(&b);
    vkattn_kv_cache_destroy(wrong);

    /* Once every sequence is freed the cache is free for another layer, which then owns it (even
     * after the first layer is gone). */
    CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 0), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_free_seq(cache, 1), VKATTN_OK);
    seq_run s2, *ps2 = &s2;
    run_make(&s2, 0, 8, 32, 7);
    CHECK_STATUS(feed(second, cache, 32, &ps2, (uint32_t[]){3}, 1, 0), VKATTN_OK);
    CHECK_STATUS(feed(layer, cache, 32, &ps2, (uint32_t[]){1}, 1, 0), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_layer_destroy(layer);
    CHECK_STATUS(feed(second, cache, 32, &ps2, (uint32_t[]){2}, 1, 0), VKATTN_OK);
    check_run(&t2, &s2, 1e-10, "a cache handed to another layer");
    /* A fork of a sequence shorter than a block into one never used, which has no block table
     * yet (this was memcpy(NULL, ..., 0), which UBSan aborts on). */
    vkattn_kv_cache *three = make_cache(ctx, &desc, 4, 4, 3, VKATTN_DTYPE_F32);
    seq_run s3, *ps3 = &s3;
    run_make(&s3, 0, 8, 32, 8);
    CHECK_STATUS(feed(second, three, 32, &ps3, (uint32_t[]){3}, 1, 0), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_fork(three, 0, 2), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_seq_length(three, 2, &len), VKATTN_OK);
    CHECK(len == 3);
    s3.id = 2;
    CHECK_STATUS(feed(second, three, 32, &ps3, (uint32_t[]){2}, 1, 0), VKATTN_OK);
    check_run(&t2, &s3, 1e-10, "a fork into a sequence never used");
    run_free(&s2), run_free(&s3);
    /* `cache` and `second` are left for the context to destroy */
    test_weights_free(&tw);
    test_weights_free(&t2);
}

/* ---- caches of a block format (Q8_0, Q4_0) ------------------------------------------------- */

/* Every row the sequences of `runs` wrote, in both pools, is the host's blocks of its tokens
 * (k = v = the token: identity projections). Returns the blocks that differ. */
static uint32_t check_pools(vkattn_context *ctx, vkattn_kv_cache *cache, seq_run *const *runs, uint32_t n, uint32_t E)
{
    const vkattn_kv_cache_desc *d = &cache->desc;
    const uint32_t D = d->head_dim, nb = D / 32, bb = (uint32_t)vka_dtype_bytes(d->dtype, 32), bs = d->block_size;
    const size_t bytes = (size_t)vka_kv_pool_bytes(d->dtype, (uint64_t)d->num_blocks * bs * d->num_kv_heads * D);
    uint8_t *pool[2] = {malloc(bytes), malloc(bytes)}, want[34];
    CHECK_STATUS(vka_buffer_read(&ctx->transfer, &cache->k, 0, pool[0], bytes), VKATTN_OK);
    CHECK_STATUS(vka_buffer_read(&ctx->transfer, &cache->v, 0, pool[1], bytes), VKATTN_OK);
    uint32_t differ = 0, checked = 0;
    for (uint32_t s = 0; s < n; s++) {
        const vka_kv_seq *seq = &cache->seqs[runs[s]->id];
        for (uint32_t pos = 0; pos < seq->length; pos++) {
            uint32_t slot = seq->blocks[pos / bs] * bs + pos % bs;
            for (uint32_t k = 0; k < d->num_kv_heads; k++) {
                uint32_t row = (slot / bs * d->num_kv_heads + k) * bs + slot % bs;
                /* k = v = the token, but for a non-finite value anywhere in it: 0 * NaN and 0 * inf
                 * in the projection make the whole row NaN */
                const float *token = runs[s]->tokens + (size_t)pos * E;
                int finite = 1;
                for (uint32_t e = 0; e < E; e++) finite &= isfinite(token[e]) != 0;
                for (uint32_t b = 0; b < nb; b++) {
                    float x[32];
                    for (int j = 0; j < 32; j++) x[j] = finite ? token[k * D + b * 32 + j] : NAN;
                    if (d->dtype == VKATTN_DTYPE_Q8_0) vka_quantize_q8_0(x, want);
                    else vka_quantize_q4_0(x, want);
                    for (int p = 0; p < 2; p++) {
                        const uint8_t *got = pool[p] + ((size_t)row * nb + b) * bb;
                        checked++;
                        if (memcmp(got, want, bb) == 0) continue;
                        if (differ++ < 4)
                            fprintf(stderr, "  %s pool %c, seq %u token %u head %u block %u: d 0x%02x%02x vs 0x%02x%02x, "
                                    "q0 0x%02x vs 0x%02x\n", vkattn_dtype_name(d->dtype), p ? 'V' : 'K', runs[s]->id,
                                    pos, k, b, got[1], got[0], want[1], want[0], got[2], want[2]);
                    }
                }
            }
        }
    }
    printf("  %s pools: %u of %u blocks as the host quantizes them\n", vkattn_dtype_name(d->dtype), checked - differ,
           checked);
    free(pool[0]), free(pool[1]);
    return differ;
}

/* One value's quant at scale inverse id, as vka_quantize_q8_0 and _q4_0 compute it (the product
 * and the sum in two statements, unfused, as there). */
static int quant_at(float x, float id, int q4)
{
    const float s = x * id;
    if (!q4) return (int)roundf(s);
    const float t = s + 8.5f;
    return (int)t < 15 ? (int)t : 15;
}

/* A block (x[0] of the largest magnitude) whose quant bytes move when id = 1 / d is one ulp off, up
 * for odd j, down for even j: each other value sits next to a rounding edge (Q8_0: x * id at k + 1/2;
 * Q4_0: x * id + 8.5 at an integer). Vulkan lets a division be 2.5 ulp off (GPUs multiply by a
 * reciprocal): the device's d and id must be C's correctly rounded quotients for these bytes to be
 * the host's. */
static void edge_block(float *x, int q4)
{
    x[0] = q4 ? -7.3459f : 100.372f;
    /* Q8_0: an amax whose d (and so id) a product with 1 / 127 gets one ulp off */
    while (!q4 && (x[0] * (1.0f / 127.0f) == x[0] / 127.0f || 1.0f / (x[0] * (1.0f / 127.0f)) == 1.0f / (x[0] / 127.0f)))
        x[0] = nextafterf(x[0], INFINITY);
    const float d = q4 ? x[0] / -8.0f : x[0] / 127.0f, id = 1.0f / d;
    for (int j = 1; j < 32; j++) {
        const float moved = j & 1 ? nextafterf(id, INFINITY) : nextafterf(id, 0.0f);
        int found = 0;
        for (int e = 0; e < 4 && !found; e++) { /* an edge whose neighbours' products skip the window: the next */
            const float edge = q4 ? (float)((j + e) % 15 + 1) - 8.5f : (float)((j * 37 + e) % 119 - 59) + 0.5f;
            float up = edge * d, down = up;
            for (int s = 0; s < 64 && !found; s++, up = nextafterf(up, INFINITY), down = nextafterf(down, -INFINITY)) {
                if (quant_at(up, id, q4) != quant_at(up, moved, q4)) x[j] = up, found = 1;
                else if (quant_at(down, id, q4) != quant_at(down, moved, q4)) x[j] = down, found = 1;
            }
        }
        CHECK(found && fabsf(x[j]) <= fabsf(x[0]));
    }
}

/* Hand-picked blocks of 32 at the start of `x`, then N(0,1) values: Q8_0 ties (amax 63.5: d = 0.5,
 * q = roundf(2x)); zeros; all negative, the largest magnitude negative; a scale fp16 holds only as a
 * subnormal (amax 1e-3); one that underflows fp16 (amax 1e-30); wide values (x 100); a Q8_0 and a
 * Q4_0 block whose bytes move if 1 / d is one ulp off (edge_block). */
static void fill_blocks(test_rng *rng, float *x, size_t n)
{
    fill_normal(rng, x, n);
    for (int j = 0; j < 32; j++) {
        x[j] = j == 0 ? 63.5f : (float)(j - 16) * 0.75f; /* 2x = 1.5 (j - 16): halves on odd j */
        x[32 + j] = 0.0f;
        x[64 + j] = -(float)(j % 9) * 0.37f - 0.01f;
        x[96 + j] *= 1e-3f / 4;
        x[128 + j] *= 1e-30f;
        x[160 + j] *= 100.0f;
    }
    x[64 + 20] = -9.0f;
    edge_block(x + 192, 0);
    edge_block(x + 224, 1);
}

/* The device's blocks are the host's, bit for bit (a layer whose projections are identities, so
 * k = v = the token exactly), for both formats: a ragged prompt of 17 and 10 tokens in one
 * forward, decode steps, a fork, and a sequence with NaN and values beyond fp16's range (its
 * output is not checked). Blocks of 3 tokens and D = 32: rows of one 34- or 18-byte block, every
 * other one starting on an odd halfword, so neighbouring rows that one dispatch writes share a
 * word. */
static void quant_pools(vkattn_context *ctx)
{
    enum { E = 64 };
    static float in_proj[3 * E * E], out_proj[E * E];
    for (int i = 0; i < E; i++) {
        for (int p = 0; p < 3; p++) in_proj[(p * E + i) * E + i] = 1;
        out_proj[i * E + i] = 1;
    }
    vkattn_layer_desc desc = {.embed_dim = E, .num_heads = 2, .no_bias = 1};
    vkattn_weights w = {.in_proj_weight = in_proj, .out_proj_weight = out_proj};
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &desc, &w, &layer), VKATTN_OK);
    const vkattn_dtype dts[2] = {VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};
    for (int t = 0; t < 2; t++) {
        vkattn_kv_cache *cache = make_cache(ctx, &desc, 24, 3, 4, dts[t]);
        seq_run a, b, c, bad;
        run_make(&a, 0, 24, E, 1), run_make(&b, 1, 24, E, 2), run_make(&c, 2, 24, E, 3), run_make(&bad, 3, 24, E, 4);
        test_rng rng = test_rng_make(40 + t);
        fill_blocks(&rng, a.tokens, 24 * E);
        fill_normal(&rng, b.tokens, 24 * E);
        fill_normal(&rng, c.tokens + 20 * E, 4 * E);
        fill_normal(&rng, bad.tokens, 24 * E);
        bad.tokens[5] = NAN, bad.tokens[E + 40] = INFINITY, bad.tokens[2 * E + 3] = 1e7f; /* d = 78740: fp16 inf */
        seq_run *ab[2] = {&a, &b}, *pc = &c, *pbad = &bad;
        CHECK_STATUS(feed(layer, cache, E, ab, (uint32_t[]){17, 10}, 2, 0), VKATTN_OK);
        for (int step = 0; step < 3; step++) CHECK_STATUS(feed(layer, cache, E, ab, (uint32_t[]){1, 1}, 2, 0), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_fork(cache, 0, 2), VKATTN_OK); /* 20 tokens: its 7th block is copied */
        memcpy(c.tokens, a.tokens, 20 * E * sizeof(float));
        c.len = 20;
        CHECK_STATUS(feed(layer, cache, E, &pc, (uint32_t[]){2}, 1, 0), VKATTN_OK);
        CHECK_STATUS(feed(layer, cache, E, &pbad, (uint32_t[]){5}, 1, 0), VKATTN_OK);
        seq_run *all[4] = {&a, &b, &c, &bad};
        CHECK(check_pools(ctx, cache, all, 4, E) == 0);
        run_free(&a), run_free(&b), run_free(&c), run_free(&bad);
        vkattn_kv_cache_destroy(cache);
    }
    vkattn_layer_destroy(layer);
}

static void family_quant(vkattn_context *ctx)
{
    quant_pools(ctx);
    vkattn_layer_desc gqa = {.embed_dim = 128, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000,
                             .host_weights = VKATTN_HOST_WEIGHTS_COPY}; /* its CPU path below */

    /* Refusals: a head dim that is not whole blocks; tensors of a block format. */
    vkattn_kv_cache *none = NULL;
    vkattn_kv_cache_desc bad = {.num_kv_heads = 2, .head_dim = 48, .num_blocks = 4, .dtype = VKATTN_DTYPE_Q8_0};
    CHECK_STATUS(vkattn_kv_cache_create(ctx, &bad, &none), VKATTN_ERROR_INVALID_ARGUMENT);
    printf("  D = 48: %s\n", vkattn_context_last_error(ctx));
    CHECK(none == NULL && strstr(vkattn_context_last_error(ctx), "multiple of 32") != NULL);
    vkattn_tensor *t = NULL;
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_Q4_0, 1, (uint32_t[]){32}, &t), VKATTN_ERROR_DTYPE);
    printf("  tensor: %s\n", vkattn_context_last_error(ctx));
    CHECK(t == NULL);
    /* The size it reports: 2 x H_kv x D / 32 blocks of 34 or 18 bytes per token; the pools as
     * allocated, each with its 4 spare bytes (left out before an outside review) */
    bad.head_dim = 128;
    vkattn_kv_cache_info info;
    const vkattn_dtype dts[2] = {VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};
    const uint32_t per_token[2] = {2 * 2 * 4 * 34, 2 * 2 * 4 * 18};
    for (int i = 0; i < 2; i++) {
        bad.dtype = dts[i];
        CHECK_STATUS(vkattn_kv_cache_create(ctx, &bad, &none), VKATTN_OK);
        CHECK_STATUS(vkattn_kv_cache_get_info(none, &info), VKATTN_OK);
        CHECK_MSG(info.bytes_per_token == per_token[i] && info.bytes == 4ull * 16 * per_token[i] + 2 * 4,
                  "%s: %u bytes per token, %llu in all", vkattn_dtype_name(dts[i]), info.bytes_per_token,
                  (unsigned long long)info.bytes);
        vkattn_kv_cache_destroy(none);
    }
    /* The reference's rounding is for the CPU path: a device forward refuses it */
    test_weights tw;
    vkattn_layer *layer = make_layer(ctx, &tw, &gqa, 2);
    float x[128] = {0}, y[128];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 1, .query = x, .output = y,
                                  .kv_cache_dtype = VKATTN_DTYPE_Q8_0};
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_ERROR_INVALID_ARGUMENT);
    printf("  device forward: %s\n", vkattn_context_last_error(ctx));
    f.path = VKATTN_PATH_CPU;
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

/* ---- random cache operations ----------------------------------------------------------------- */

/* Blocks a sequence of `len` tokens must take to hold n more (a forked sequence's partly filled last
 * block is its own copy, so only whole new blocks count). */
static uint32_t blocks_to_grow(uint32_t len, uint32_t n, uint32_t bs)
{
    return (len + n + bs - 1) / bs - (len + bs - 1) / bs;
}

static uint32_t free_blocks(vkattn_kv_cache *cache)
{
    vkattn_kv_cache_info info;
    CHECK_STATUS(vkattn_kv_cache_get_info(cache, &info), VKATTN_OK);
    return info.free_blocks;
}

/* One round of random operations on a small pool: ragged forwards of 1-3 sequences (1-6 new tokens
 * each, split-KV auto, off or 3 parts), forks, frees, and running the pool dry. A refused call
 * (CACHE_FULL exactly when the free blocks are too few) must change nothing; every sequence's
 * outputs must match the reference over its whole token history (rounded as the cache stores k
 * and v) when it is freed and at the end; at the end every block is free again. */
static void random_ops_round(vkattn_context *ctx, vkattn_dtype dtype, uint32_t window, int must_split,
                             unsigned long long seed)
{
    enum { SEQS = 5, CAP = 48, E = 64, BS = 4, BLOCKS = 20, OPS = 36 };
    vkattn_layer_desc desc = {.embed_dim = E, .num_heads = 2, .num_kv_heads = 1, .rope_theta = 10000,
                              .window = window};
    test_weights tw;
    vkattn_layer *layer = make_layer(ctx, &tw, &desc, seed);
    vkattn_kv_cache *cache = make_cache(ctx, &desc, BLOCKS, BS, SEQS, dtype);
    const double tol = dtype == VKATTN_DTYPE_F32 ? 1e-10 : dtype == VKATTN_DTYPE_F16 ? 1e-5 : 1e-6;
    const vkattn_dtype round = vka_dtype_is_block(dtype) ? dtype : VKATTN_DTYPE_F32;
    char what[64];
    snprintf(what, sizeof what, "random ops, %s cache, window %u%s", vkattn_dtype_name(dtype), window,
             must_split ? ", budget" : "");
    seq_run runs[SEQS];
    for (uint32_t s = 0; s < SEQS; s++) run_make(&runs[s], s, CAP, E, seed * 16 + s);
    test_rng rng = test_rng_make(seed);
    uint32_t ops[3] = {0}, refused = 0, split = 0;
    for (int op = 0; op < OPS; op++) {
        float r = test_rng_float(&rng) * 0.5f + 0.5f; /* [0, 1) */
        uint32_t a = (uint32_t)((test_rng_float(&rng) * 0.5f + 0.5f) * SEQS) % SEQS;
        if (r < 0.5f) { /* a ragged forward */
            seq_run *batch[3];
            uint32_t news[3], n = 1 + (uint32_t)((test_rng_float(&rng) * 0.5f + 0.5f) * 3) % 3, need = 0;
            for (uint32_t k = 0; k < n; k++) {
                batch[k] = &runs[(a + 2 * k) % SEQS];
                news[k] = 1 + (uint32_t)((test_rng_float(&rng) * 0.5f + 0.5f) * 6) % 6;
                if (batch[k]->len + news[k] > CAP) news[k] = 1;
                if (batch[k]->len + news[k] > CAP) n = k; /* full: leave it and the rest out */
                else need += blocks_to_grow(batch[k]->len, news[k], BS);
            }
            if (n == 0) continue;
            uint32_t before = free_blocks(cache), splits = (uint32_t)op % 3 == 2 ? 3 : (uint32_t)op % 3;
            vkattn_status want = need > before ? VKATTN_ERROR_CACHE_FULL : VKATTN_OK;
            CHECK_STATUS(feed(layer, cache, E, batch, news, n, splits), want);
            if (want != VKATTN_OK) {
                refused++;
                CHECK_MSG(free_blocks(cache) == before, "%s: a refused forward changed the free blocks", what);
            } else {
                vkattn_forward_stats stats;
                CHECK_STATUS(vkattn_layer_last_stats(layer, &stats), VKATTN_OK);
                split += stats.dispatches > 5; /* projections, RoPE, append, attention, output + a merge */
            }
            ops[0]++;
        } else if (r < 0.8f) { /* a fork into an empty sequence */
            uint32_t dst = (a + 1) % SEQS;
            if (runs[dst].len > 0 || runs[a].len == 0) continue;
            uint32_t before = free_blocks(cache), need = runs[a].len % BS != 0;
            vkattn_status want = need > before ? VKATTN_ERROR_CACHE_FULL : VKATTN_OK;
            CHECK_STATUS(vkattn_kv_cache_fork(cache, a, dst), want);
            if (want == VKATTN_OK) {
                memcpy(runs[dst].tokens, runs[a].tokens, (size_t)runs[a].len * E * sizeof(float));
                memcpy(runs[dst].out, runs[a].out, (size_t)runs[a].len * E * sizeof(float));
                runs[dst].len = runs[a].len;
            } else {
                refused++;
                CHECK(free_blocks(cache) == before);
            }
            ops[1]++;
        } else { /* free, after checking what the sequence got */
            if (runs[a].len) check_run_as(&tw, &runs[a], round, tol, what);
            CHECK_STATUS(vkattn_kv_cache_free_seq(cache, a), VKATTN_OK);
            runs[a].len = 0;
            test_rng fresh = test_rng_make(seed * 97 + (unsigned long long)op);
            test_fill(&fresh, runs[a].tokens, (size_t)CAP * E, 1.0f);
            ops[2]++;
        }
        for (uint32_t s = 0; s < SEQS; s++) {
            uint32_t len = 0;
            CHECK_STATUS(vkattn_kv_cache_seq_length(cache, s, &len), VKATTN_OK);
            CHECK_MSG(len == runs[s].len, "%s, op %d: sequence %u holds %u tokens, expected %u", what, op, s, len,
                      runs[s].len);
        }
    }
    printf("  %-44s %u forwards (%u split), %u forks, %u frees, %u refused (pool dry)\n", what, ops[0], split, ops[1],
           ops[2], refused);
    CHECK_MSG(!must_split || split > 0, "%s: no forward split its keys at this loop budget", what);
    for (uint32_t s = 0; s < SEQS; s++) {
        if (runs[s].len) check_run_as(&tw, &runs[s], round, tol, what);
        CHECK_STATUS(vkattn_kv_cache_free_seq(cache, s), VKATTN_OK);
        run_free(&runs[s]);
    }
    CHECK_MSG(free_blocks(cache) == BLOCKS, "%s: %u of %u blocks free after freeing every sequence", what,
              free_blocks(cache), BLOCKS);
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

/* Random operations in every cache format, with and without a sliding window, on the device's
 * own loop budget and on one so low that every attention is split into parts (runs under the
 * sanitizers too). */
static void family_random_ops(vkattn_context *ctx)
{
    const vkattn_dtype dtypes[4] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};
    for (int i = 0; i < 4; i++) random_ops_round(ctx, dtypes[i], i % 2 ? 6 : 0, 0, 300 + (unsigned long long)i);
    vkattn_context_desc low = {.validation = VKATTN_VALIDATION_ON, .loop_budget = 160};
    vkattn_context *budget = NULL;
    vkattn_error error = {0};
    CHECK_STATUS(vkattn_context_create(&low, &budget, &error), VKATTN_OK);
    for (int i = 0; budget && i < 4; i++)
        random_ops_round(budget, dtypes[i], i % 2 ? 0 : 24, 1, 400 + (unsigned long long)i);
    if (budget) gpu_test_finish_context(budget);
}

/* One part of many key blocks (the GPU tunings' attn_paged_lanes, run under VKATTN_TUNING=gpu):
 * its plan counts one trip per block of keys, which holds only if lavapipe unrolls the block's
 * inner loops (the V fetches, P·V): otherwise a part of more than 65535 / (keys per block + 1)
 * blocks would run past the driver's loop cap and silently lose its last keys. So: 70000 cached
 * keys at D = 8 (16 keys per block: 4375 blocks, 74375 trips if those loops were rolled), the last
 * token decoded in one part, then rolled back and decoded again in 8 parts (well within the cap
 * either way), the two against each other. Not in the suite: the 70000-token prompt takes about 4
 * minutes on lavapipe (a cache serves one layer, so no cheaper layer can write it); run it by hand
 * after changing that kernel's loops: VKATTN_TUNING=gpu vkattn_test_kv_cache long_part. */
static void family_long_part(vkattn_context *ctx)
{
    const uint32_t E = 8, n = 70000, bs = 256;
    vkattn_layer_desc desc = {.embed_dim = E, .num_heads = 1};
    test_weights tw;
    vkattn_layer *layer = make_layer(ctx, &tw, &desc, 61);
    vkattn_kv_cache *cache = make_cache(ctx, &desc, (n + 1 + bs - 1) / bs, bs, 1, VKATTN_DTYPE_F32);
    seq_run r, *rp = &r;
    run_make(&r, 0, n + 1, E, 63);
    vkattn_status st = feed(layer, cache, E, &rp, (uint32_t[]){n}, 1, 0);
    CHECK_MSG(st == VKATTN_OK, "prompt: %s: %s", vkattn_status_name(st), vkattn_context_last_error(ctx));
    float one_part[8], parts[8];
    vkattn_forward_stats stats;
    st = feed(layer, cache, E, &rp, (uint32_t[]){1}, 1, 1);
    CHECK_MSG(st == VKATTN_OK, "one part: %s: %s", vkattn_status_name(st), vkattn_context_last_error(ctx));
    CHECK_STATUS(vkattn_layer_last_stats(layer, &stats), VKATTN_OK);
    const uint32_t unsplit = stats.dispatches;
    memcpy(one_part, r.out + (size_t)n * E, sizeof one_part);
    CHECK_STATUS(vkattn_kv_cache_truncate(cache, 0, n), VKATTN_OK);
    r.len = n;
    CHECK_STATUS(feed(layer, cache, E, &rp, (uint32_t[]){1}, 1, 8), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_last_stats(layer, &stats), VKATTN_OK);
    CHECK_MSG(stats.dispatches == unsplit + 1, "%u dispatches in 8 parts, %u in one: no merge?", stats.dispatches,
              unsplit);
    memcpy(parts, r.out + (size_t)n * E, sizeof parts);
    test_error e = test_compare(one_part, parts, E);
    printf("  %u keys in one part against 8 parts: nmse %.2e max_abs %.2e\n", n, e.nmse, e.max_abs);
    CHECK_MSG(e.nonfinite == 0 && e.nmse <= 1e-10, "one part: nmse %.3e against 8 parts", e.nmse);
    run_free(&r);
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

/* vkattn_forward_cached_explain: the plan of a decoding step (and of one in key parts) before it
 * runs, in the formats f16 and q8_0: the kernels this device's tuning takes (attn_paged, or the
 * GPU tunings' lanes builds, fetching the next block meanwhile unless the tuning string says not,
 * the cache's rows from storage buffers (an f16 one 8 halves per load) and the queries staged in
 * shared memory unless it says not),
 * the merge of the parts, the same text for the step on device tensors; the length asked with no
 * buffer, a text cut short, bad arguments refused as the forward refuses them; the cache and the
 * layer unchanged (length, the layer's last stats), and the step then run against the reference. */
static void family_explain(vkattn_context *ctx)
{
    /* (the cooperative-matrix classes decode with the gpu class's kernels) */
    const int lanes = gpu_test_tuning_is("gpu") || gpu_test_tuning_is("coopmat") || gpu_test_tuning_is("intel");
    const int prefetch = lanes && !strstr(getenv("VKATTN_TUNING"), "paged_lanes_prefetch=0");
    const int storage = lanes && !strstr(getenv("VKATTN_TUNING"), "paged_lanes_storage=0");
    const int q_shared = lanes && !strstr(getenv("VKATTN_TUNING"), "paged_lanes_q_shared=0");
    const vkattn_dtype dtypes[2] = {VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0};
    for (int k = 0; k < 2; k++) {
        const uint32_t E = 512, n = 200;
        vkattn_layer_desc desc = {.embed_dim = E, .num_heads = 8, .num_kv_heads = 2, .rope_theta = 10000};
        test_weights tw;
        vkattn_layer *layer = make_layer(ctx, &tw, &desc, 71 + k);
        vkattn_kv_cache *cache = make_cache(ctx, &desc, 16, 16, 2, dtypes[k]);
        seq_run r, *rp = &r;
        run_make(&r, 0, n + 1, E, 73 + k);
        CHECK_STATUS(feed(layer, cache, E, &rp, (uint32_t[]){n}, 1, 0), VKATTN_OK);
        vkattn_forward_stats before, after;
        CHECK_STATUS(vkattn_layer_last_stats(layer, &before), VKATTN_OK);

        float q[512], o[512];
        memcpy(q, r.tokens + (size_t)n * E, sizeof q);
        uint32_t id = 0, one = 1;
        for (uint32_t splits = 0; splits <= 4; splits += 4) {
            vkattn_cached_forward_desc d = {.batch = 1, .seq_ids = &id, .new_tokens = &one, .query = q, .output = o,
                                            .kv_splits = splits};
            size_t need = 0, got = 0;
            CHECK_STATUS(vkattn_forward_cached_explain(layer, cache, &d, NULL, 0, &need), VKATTN_OK);
            char *text = malloc(need + 1);
            CHECK_STATUS(vkattn_forward_cached_explain(layer, cache, &d, text, need + 1, &got), VKATTN_OK);
            CHECK(got == need && strlen(text) == need && need > 0);
            const int quant = dtypes[k] != VKATTN_DTYPE_F16;
            const char *kernel = lanes ? (quant ? (storage ? " attn_paged_quant_lanes_storage " : " attn_paged_quant_lanes ")
                                                : (storage ? " attn_paged_lanes_storage " : " attn_paged_lanes "))
                                       : (quant ? " attn_paged_quant " : " attn_paged ");
            CHECK_MSG(strstr(text, kernel) != NULL, "%s, kv_splits %u: no%s step in the plan:\n%s",
                      vkattn_dtype_name(dtypes[k]), splits, kernel, text);
            CHECK_MSG((strstr(text, "fetched meanwhile") != NULL) == prefetch, "%s: the next block%s fetched meanwhile:\n%s",
                      vkattn_dtype_name(dtypes[k]), prefetch ? " not" : "", text);
            /* (D = 64: a key lane's share of 4 texels, read 2 per load; V by 4 sets of 8 lanes; a
             * block format's words one per load) */
            CHECK_MSG((strstr(text, "K and V rows from storage buffers") != NULL) == storage &&
                          (strstr(text, "(K and V 8 per 16-byte load)") != NULL) == (storage && !quant),
                      "%s: K and V rows%s from storage buffers:\n%s", vkattn_dtype_name(dtypes[k]),
                      storage ? " not" : "", text);
            CHECK_MSG((strstr(text, "queries staged in shared memory") != NULL) == q_shared,
                      "%s: queries%s staged in shared memory:\n%s", vkattn_dtype_name(dtypes[k]), q_shared ? " not" : "",
                      text);
            CHECK_MSG(!splits || strstr(text, " attn_merge ") != NULL, "kv_splits %u: no merge:\n%s", splits, text);
            /* the header says where the keys come from: one sequence, one new token, n + 1 keys in
             * the cache's blocks of 16; RoPE's positions from the sequence table */
            char cache_line[160];
            snprintf(cache_line, sizeof cache_line,
                     "  cache: 1 sequence, 1 new token in all (at most 1 in one), keys from the cache's %s blocks of 16, "
                     "up to %u per sequence\n",
                     vkattn_dtype_name(dtypes[k]), n + 1);
            CHECK_MSG(strstr(text, cache_line) && strstr(text, "theta 10000, positions from the sequence table\n"),
                      "the plan's header:\n%s", text);
            if (k == 0 && splits) printf("  explain, f16 cache, kv_splits 4:\n%s", text);
            char cut[10];
            CHECK_STATUS(vkattn_forward_cached_explain(layer, cache, &d, cut, sizeof cut, &got), VKATTN_OK);
            CHECK(got == need && strlen(cut) == sizeof cut - 1 && strncmp(cut, text, sizeof cut - 1) == 0);
            /* the same step on device tensors: the same plan */
            vkattn_tensor *tq = NULL, *to = NULL;
            CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){1, E}, &tq), VKATTN_OK);
            CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){1, E}, &to), VKATTN_OK);
            vkattn_cached_forward_desc dt = d;
            dt.query = NULL, dt.output = NULL, dt.query_tensor = tq, dt.output_tensor = to;
            char *tensor_text = malloc(need + 1);
            CHECK_STATUS(vkattn_forward_cached_explain(layer, cache, &dt, tensor_text, need + 1, &got), VKATTN_OK);
            CHECK_MSG(got == need && strcmp(tensor_text, text) == 0, "the plan on device tensors differs:\n%s",
                      tensor_text);
            free(tensor_text);
            vkattn_tensor_destroy(tq), vkattn_tensor_destroy(to);
            free(text);
        }
        /* refused as the forward refuses it, and nothing changes */
        vkattn_cached_forward_desc d = {.batch = 1, .seq_ids = &id, .new_tokens = &one, .query = q, .output = o};
        char small[8];
        CHECK_STATUS(vkattn_forward_cached_explain(layer, cache, &d, NULL, sizeof small, NULL),
                     VKATTN_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(vkattn_forward_cached_explain(layer, NULL, &d, small, sizeof small, NULL),
                     VKATTN_ERROR_INVALID_ARGUMENT);
        CHECK_STATUS(vkattn_forward_cached_explain(NULL, cache, &d, small, sizeof small, NULL),
                     VKATTN_ERROR_INVALID_ARGUMENT);
        uint32_t stranger = 5; /* the cache holds 2 sequences */
        vkattn_cached_forward_desc bad = {.batch = 1, .seq_ids = &stranger, .new_tokens = &one, .query = q, .output = o};
        vkattn_status explain_status = vkattn_forward_cached_explain(layer, cache, &bad, small, sizeof small, NULL);
        CHECK_MSG(explain_status != VKATTN_OK && explain_status == vkattn_forward_cached(layer, cache, &bad),
                  "sequence 5 of 2: explain %s", vkattn_status_name(explain_status));
        uint32_t length = 0;
        CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 0, &length), VKATTN_OK);
        CHECK_MSG(length == n, "the cache's sequence is %u tokens after the explains, %u before", length, n);
        CHECK_STATUS(vkattn_layer_last_stats(layer, &after), VKATTN_OK);
        CHECK(after.dispatches == before.dispatches && after.chunks == before.chunks);
        /* the step itself, as explained */
        CHECK_STATUS(feed(layer, cache, E, &rp, (uint32_t[]){1}, 1, 0), VKATTN_OK);
        check_run_as(&tw, &r, dtypes[k], k ? 1e-6 : 5e-4, k ? "explained step, q8_0 cache" : "explained step, f16 cache");
        run_free(&r);
        vkattn_kv_cache_destroy(cache);
        vkattn_layer_destroy(layer);
        test_weights_free(&tw);
    }
}

int main(int argc, char **argv)
{
    const char *family = argc > 1 ? argv[1] : "decode";
    if (strcmp(family, "split") == 0) setenv("VKATTN_LOOP_BUDGET", "600", 1);
    vkattn_context *ctx = gpu_test_context();
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    if (strcmp(family, "split") == 0 && strncmp(info.tuning, "lavapipe", 8) != 0) {
        /* The GPU tunings' attn_paged_lanes takes a trip per block of 8 keys: at 80 trips 632 keys
         * per part, so 1300 keys need 3 parts, a 700-key window 2, and 310 keys still fit one. */
        gpu_test_finish_context(ctx);
        setenv("VKATTN_LOOP_BUDGET", "80", 1);
        ctx = gpu_test_context();
    }
    gpu_test_expect_subgroup_kernels(ctx);
    int rows = run_decode_rows(ctx, family);
    if (strcmp(family, "ragged") == 0) family_ragged(ctx);
    else if (strcmp(family, "paging") == 0) family_paging(ctx);
    else if (strcmp(family, "truncate") == 0) family_truncate(ctx);
    else if (strcmp(family, "warm_up") == 0) family_warm_up(ctx);
    else if (strcmp(family, "errors") == 0) family_errors(ctx);
    else if (strcmp(family, "quant") == 0) family_quant(ctx);
    else if (strcmp(family, "long_part") == 0) family_long_part(ctx);
    else if (strcmp(family, "long_prefill") == 0) family_long_prefill(ctx);
    else if (strcmp(family, "variants") == 0) family_variants(ctx);
    else if (strcmp(family, "random_ops") == 0) family_random_ops(ctx);
    else if (strcmp(family, "explain") == 0) family_explain(ctx);
    else CHECK_MSG(rows, "unknown family %s", family);
    gpu_test_finish_context(ctx);
    return test_finish();
}
