/* Cached forwards on the device and masks among a step's new tokens. Families (argv[1]):
 *   stack    an 8-layer decoder (each layer's cached attention, then a plain forward standing in
 *            for the application's own kernels) run token by token with one submission per token,
 *            its hidden states never leaving the device, equals the same stack run with blocking
 *            host-array cached forwards, bit for bit; the caches answer BUSY while it runs;
 *   tensors  device tensors: f16 query and output, the shapes a cached forward takes, the blocking
 *            entry point on tensors equal to host arrays;
 *   tree     token trees (new_token_mask, new_token_depths) in every cache format, with split-KV
 *            and the attention variants: against the CPU reference (the history and the tree as
 *            one forward at the tree's positions and mask) and against each root-to-token path fed
 *            as a sequence of its own, forked from the same history; then a kept path decodes on;
 *   errors   every bad input refused with a message and nothing changed (lengths, blocks, owner);
 *            BUSY rules; a dropped or destroyed submission takes its cached forwards back. */
#include "gpu_tuning_test.h"
#include "test_tree.h"
#include "vkattn.h"

#include "format/dtype.h" /* vka_dtype_is_block */
#include "format/half.h"  /* the f16 tensors' values */

/* Everything a cache says about its sequences and blocks, to show that a refused call changed
 * nothing. */
typedef struct cache_state {
    vkattn_kv_cache_info info;
    uint32_t len[4];
} cache_state;

static cache_state state_of(const vkattn_kv_cache *cache)
{
    cache_state s;
    memset(&s, 0, sizeof s);
    CHECK_STATUS(vkattn_kv_cache_get_info(cache, &s.info), VKATTN_OK);
    for (uint32_t i = 0; i < s.info.desc.max_sequences && i < 4; i++)
        CHECK_STATUS(vkattn_kv_cache_seq_length(cache, i, &s.len[i]), VKATTN_OK);
    return s;
}

static int same_state(const cache_state *a, const cache_state *b)
{
    return a->info.free_blocks == b->info.free_blocks && a->info.tokens == b->info.tokens &&
           a->info.sequences == b->info.sequences && memcmp(a->len, b->len, sizeof a->len) == 0;
}

static vkattn_kv_cache *make_cache(vkattn_context *ctx, const vkattn_layer_desc *ld, uint32_t blocks, uint32_t seqs,
                                   vkattn_dtype dtype)
{
    uint32_t D = ld->head_dim ? ld->head_dim : ld->embed_dim / ld->num_heads;
    vkattn_kv_cache_desc cd = {.num_kv_heads = ld->num_kv_heads ? ld->num_kv_heads : ld->num_heads, .head_dim = D,
                               .num_blocks = blocks, .block_size = 4, .max_sequences = seqs, .dtype = dtype};
    vkattn_kv_cache *cache = NULL;
    CHECK_STATUS(vkattn_kv_cache_create(ctx, &cd, &cache), VKATTN_OK);
    return cache;
}

static vkattn_tensor *make_tensor(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims)
{
    vkattn_tensor *t = NULL;
    CHECK_STATUS(vkattn_tensor_create(ctx, dtype, rank, dims, &t), VKATTN_OK);
    return t;
}

/* ---- stack: a decoder, one submission per token ------------------------------------------------ */

enum { LAYERS = 8, SE = 64, SEQS = 2 };

/* Each layer: its attention (GQA, RoPE) through its own cache, then a one-head layer over each
 * token alone (L = 1: softmax over one key is 1, so it is an affine map of the token), standing in
 * for the block's other kernels. */
typedef struct decoder {
    test_weights attn_w[LAYERS], mlp_w[LAYERS];
    vkattn_layer *attn[LAYERS], *mlp[LAYERS];
} decoder;

static void decoder_make(vkattn_context *ctx, decoder *d)
{
    vkattn_layer_desc attn = {.embed_dim = SE, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000};
    vkattn_layer_desc mlp = {.embed_dim = SE, .num_heads = 1};
    for (int i = 0; i < LAYERS; i++) {
        test_weights_make(&d->attn_w[i], &attn, 200 + (unsigned)i);
        test_weights_make(&d->mlp_w[i], &mlp, 300 + (unsigned)i);
        CHECK_STATUS(vkattn_layer_create(ctx, &attn, &d->attn_w[i].w, &d->attn[i]), VKATTN_OK);
        CHECK_STATUS(vkattn_layer_create(ctx, &mlp, &d->mlp_w[i].w, &d->mlp[i]), VKATTN_OK);
    }
}

static void decoder_free(decoder *d)
{
    for (int i = 0; i < LAYERS; i++) {
        vkattn_layer_destroy(d->attn[i]), vkattn_layer_destroy(d->mlp[i]);
        test_weights_free(&d->attn_w[i]), test_weights_free(&d->mlp_w[i]);
    }
}

/* One step on the host: per layer a blocking host-array cached forward, then the stand-in's
 * blocking host forward. x (T, E) is the input and becomes the output. */
static void host_step(decoder *d, vkattn_kv_cache *const *caches, const uint32_t *news, uint32_t T, float *x, float *tmp)
{
    for (int i = 0; i < LAYERS; i++) {
        vkattn_cached_forward_desc c = {.batch = SEQS, .new_tokens = news, .query = x, .output = tmp};
        CHECK_STATUS(vkattn_forward_cached(d->attn[i], caches[i], &c), VKATTN_OK);
        vkattn_host_forward_desc m = {.batch = T, .query_len = 1, .query = tmp, .output = x};
        CHECK_STATUS(vkattn_forward_host(d->mlp[i], &m), VKATTN_OK);
    }
}

/* The device's activations for T tokens: h[0] is the step's input and, written by the last
 * layer's stand-in, its output; a[i] layer i's attention output; h[i] layer i's input. */
typedef struct activations {
    vkattn_tensor *h[LAYERS], *a[LAYERS];
} activations;

static void activations_make(vkattn_context *ctx, activations *act, uint32_t T)
{
    const uint32_t dims[3] = {T, 1, SE};
    for (int i = 0; i < LAYERS; i++) {
        act->h[i] = make_tensor(ctx, VKATTN_DTYPE_F32, 3, dims);
        act->a[i] = make_tensor(ctx, VKATTN_DTYPE_F32, 3, dims);
    }
}

static void activations_free(activations *act)
{
    for (int i = 0; i < LAYERS; i++) vkattn_tensor_destroy(act->h[i]), vkattn_tensor_destroy(act->a[i]);
}

/* One step as one submission: h[0] -> attention 0 -> a[0] -> stand-in 0 -> h[1] -> ... -> h[0]. */
static void add_step(vkattn_submission *sub, decoder *d, vkattn_kv_cache *const *caches, const uint32_t *news,
                     activations *act)
{
    for (int i = 0; i < LAYERS; i++) {
        vkattn_cached_forward_desc c = {.batch = SEQS, .new_tokens = news, .query_tensor = act->h[i],
                                        .output_tensor = act->a[i]};
        CHECK_STATUS(vkattn_submission_add_cached(sub, d->attn[i], caches[i], &c), VKATTN_OK);
        vkattn_forward_desc m = {.query = act->a[i], .output = act->h[(i + 1) % LAYERS]};
        CHECK_STATUS(vkattn_submission_add(sub, d->mlp[i], &m), VKATTN_OK);
    }
}

/* While a step's submission holds the caches: other calls on them are BUSY (but explaining the
 * next step), their lengths already count the step. */
static void check_busy_while_running(vkattn_context *ctx, decoder *d, vkattn_kv_cache *const *caches,
                                     const uint32_t *expect_len)
{
    uint32_t len = 0;
    CHECK_STATUS(vkattn_kv_cache_seq_length(caches[3], 1, &len), VKATTN_OK);
    CHECK_MSG(len == expect_len[1], "a cache in a submission says length %u, not %u", len, expect_len[1]);
    float x[SEQS * SE] = {0}, y[SEQS * SE];
    vkattn_cached_forward_desc c = {.batch = SEQS, .query = x, .output = y};
    CHECK_STATUS(vkattn_forward_cached(d->attn[5], caches[5], &c), VKATTN_ERROR_BUSY);
    CHECK(strstr(vkattn_context_last_error(ctx), "submission") != NULL);
    /* the next step's plan may be explained meanwhile: it reads and writes nothing of them */
    char plan[8192];
    size_t need = 0;
    CHECK_STATUS(vkattn_forward_cached_explain(d->attn[5], caches[5], &c, plan, sizeof plan, &need), VKATTN_OK);
    CHECK(need > 0 && need < sizeof plan && strstr(plan, "attn_paged") != NULL);
    CHECK_STATUS(vkattn_kv_cache_seq_length(caches[5], 1, &len), VKATTN_OK);
    CHECK(len == expect_len[1]); /* explaining advanced nothing */
    CHECK_STATUS(vkattn_kv_cache_fork(caches[0], 0, 1), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_kv_cache_truncate(caches[0], 0, 1), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_kv_cache_free_seq(caches[0], 0), VKATTN_ERROR_BUSY);
    CHECK(strstr(vkattn_context_last_error(ctx), "KV cache is in a submission") != NULL);
}

static void family_stack(vkattn_context *ctx)
{
    const uint32_t prompt[SEQS] = {5, 3}, one[SEQS] = {1, 1}, steps = 12, Tp = 8;
    decoder d;
    decoder_make(ctx, &d);
    vkattn_layer_desc attn_desc = d.attn_w[0].desc;
    vkattn_kv_cache *host_caches[LAYERS], *dev_caches[LAYERS];
    for (int i = 0; i < LAYERS; i++) {
        host_caches[i] = make_cache(ctx, &attn_desc, 16, SEQS, VKATTN_DTYPE_F32);
        dev_caches[i] = make_cache(ctx, &attn_desc, 16, SEQS, VKATTN_DTYPE_F32);
    }
    activations pre, dec;
    activations_make(ctx, &pre, Tp);
    activations_make(ctx, &dec, SEQS);
    float x[8 * SE], tmp[8 * SE], got[8 * SE], first[SEQS * SE];
    test_rng rng = test_rng_make(77);
    test_fill(&rng, x, Tp * SE, 1.0f);
    test_fill(&rng, first, SEQS * SE, 1.0f);
    vkattn_submission *sub = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);

    /* The prompt: 5 and 3 tokens through the stack, both ways. */
    CHECK_STATUS(vkattn_tensor_write(pre.h[0], x, Tp * SE * sizeof(float)), VKATTN_OK);
    host_step(&d, host_caches, prompt, Tp, x, tmp);
    add_step(sub, &d, dev_caches, prompt, &pre);
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    check_busy_while_running(ctx, &d, dev_caches, prompt);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_read(pre.h[0], got, Tp * SE * sizeof(float)), VKATTN_OK);
    CHECK_MSG(memcmp(got, x, Tp * SE * sizeof(float)) == 0, "the submitted prompt differs from the blocking one");

    /* Decoding: each step's output is the next step's input, on the device (the host side keeps
     * its own copy in x); one submit and one wait per token for the whole stack. */
    memcpy(x, first, sizeof first);
    CHECK_STATUS(vkattn_tensor_write(dec.h[0], first, sizeof first), VKATTN_OK);
    double t_host = 0, t_dev = 0;
    for (uint32_t s = 0; s < steps; s++) {
        double t0 = test_now_s();
        host_step(&d, host_caches, one, SEQS, x, tmp);
        double t1 = test_now_s();
        add_step(sub, &d, dev_caches, one, &dec);
        CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
        CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);
        t_host += t1 - t0, t_dev += test_now_s() - t1;
    }
    CHECK_STATUS(vkattn_tensor_read(dec.h[0], got, sizeof first), VKATTN_OK);
    CHECK_MSG(memcmp(got, x, sizeof first) == 0, "after %u tokens the submitted stack differs from the blocking one", steps);
    for (int i = 0; i < LAYERS; i++) {
        cache_state a = state_of(host_caches[i]), b = state_of(dev_caches[i]);
        CHECK(same_state(&a, &b) && a.len[0] == 5 + steps && a.len[1] == 3 + steps);
    }
    test_error e = test_compare(got, x, SEQS * SE);
    printf("  %u layers x %u tokens: identical to the blocking stack (max |x| %.2f); %.2f ms per token blocking, "
           "%.2f ms submitted (validation on: not a benchmark)\n",
           LAYERS, steps, e.ref_max, 1e3 * t_host / steps, 1e3 * t_dev / steps);
    vkattn_submission_destroy(sub);
    activations_free(&pre), activations_free(&dec);
    for (int i = 0; i < LAYERS; i++) vkattn_kv_cache_destroy(host_caches[i]), vkattn_kv_cache_destroy(dev_caches[i]);
    decoder_free(&d);
}

/* ---- tensors: the blocking entry point on device tensors, f16, shapes ------------------------- */

/* How one run feeds its cache: host arrays, or device tensors of rank 2 (T, E) or 3 (T, 1, E), in
 * f32 or f16 (query and output alike). */
typedef struct feed_mode {
    int device, rank;
    vkattn_dtype dtype;
} feed_mode;

/* A prompt of 6 tokens, then 3 steps of 1, through a fresh cache of `layer`; outputs (9, E). */
static void run_feeds(vkattn_context *ctx, vkattn_layer *layer, const vkattn_layer_desc *ld, feed_mode m, const float *x,
                      float *out)
{
    const uint32_t E = ld->embed_dim, news[4] = {6, 1, 1, 1};
    vkattn_kv_cache *cache = make_cache(ctx, ld, 8, 1, VKATTN_DTYPE_F32);
    uint16_t half[6 * 64];
    for (uint32_t k = 0, t = 0; k < 4; t += news[k], k++) {
        const uint32_t T = news[k];
        vkattn_cached_forward_desc d = {.batch = 1, .new_tokens = &news[k]};
        vkattn_tensor *q = NULL, *o = NULL;
        if (!m.device) {
            d.query = x + t * E, d.output = out + t * E;
        } else {
            const uint32_t dims[3] = {T, m.rank == 3 ? 1 : E, E};
            q = make_tensor(ctx, m.dtype, m.rank, dims), o = make_tensor(ctx, m.dtype, m.rank, dims);
            for (uint32_t i = 0; i < T * E; i++) half[i] = vka_f32_to_f16(x[t * E + i]);
            const void *src = m.dtype == VKATTN_DTYPE_F16 ? (const void *)half : (const void *)(x + t * E);
            CHECK_STATUS(vkattn_tensor_write(q, src, vkattn_tensor_bytes(q)), VKATTN_OK);
            d.query_tensor = q, d.output_tensor = o;
        }
        CHECK_STATUS(vkattn_forward_cached(layer, cache, &d), VKATTN_OK);
        if (m.device && m.dtype == VKATTN_DTYPE_F16) {
            CHECK_STATUS(vkattn_tensor_read(o, half, vkattn_tensor_bytes(o)), VKATTN_OK);
            for (uint32_t i = 0; i < T * E; i++) out[t * E + i] = vka_f16_to_f32(half[i]);
        } else if (m.device) {
            CHECK_STATUS(vkattn_tensor_read(o, out + t * E, vkattn_tensor_bytes(o)), VKATTN_OK);
        }
        vkattn_tensor_destroy(q), vkattn_tensor_destroy(o);
    }
    vkattn_kv_cache_destroy(cache);
}

static void family_tensors(vkattn_context *ctx)
{
    enum { E = 64, N = 9 * E };
    vkattn_layer_desc ld = {.embed_dim = E, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000};
    test_weights tw;
    test_weights_make(&tw, &ld, 41);
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
    float x[N], host[N], dev[N], rounded[N];
    test_rng rng = test_rng_make(42);
    test_fill(&rng, x, N, 1.0f);
    run_feeds(ctx, layer, &ld, (feed_mode){0, 0, VKATTN_DTYPE_F32}, x, host);
    run_feeds(ctx, layer, &ld, (feed_mode){1, 2, VKATTN_DTYPE_F32}, x, dev);
    CHECK_MSG(memcmp(host, dev, sizeof host) == 0, "(T, E) tensors differ from host arrays");
    run_feeds(ctx, layer, &ld, (feed_mode){1, 3, VKATTN_DTYPE_F32}, x, dev);
    CHECK_MSG(memcmp(host, dev, sizeof host) == 0, "(T, 1, E) tensors differ from host arrays");
    printf("  f32 tensors (T, E) and (T, 1, E): identical to host arrays\n");
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    if (info.storage_16bit) {
        /* f16 in and out: against host arrays of the same f16-rounded inputs, the output's rounding apart */
        for (int i = 0; i < N; i++) rounded[i] = vka_f16_to_f32(vka_f32_to_f16(x[i]));
        run_feeds(ctx, layer, &ld, (feed_mode){0, 0, VKATTN_DTYPE_F32}, rounded, host);
        run_feeds(ctx, layer, &ld, (feed_mode){1, 3, VKATTN_DTYPE_F16}, x, dev);
        test_error e = test_compare(dev, host, N);
        printf("  f16 query and output tensors: max-abs %.2e NMSE %.2e against f32 host arrays\n", e.max_abs, e.nmse);
        CHECK(e.nonfinite == 0 && e.nmse <= 1e-6);
    }
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

/* ---- tree: masks among the new tokens ---------------------------------------------------------- */

typedef struct tree_row {
    const char *name;
    vkattn_layer_desc layer;
    int sinks;
    vkattn_dtype dtype;  /* the cache's */
    uint32_t kv_splits;
    double nmse;         /* against the CPU reference, which rounds k and v as the cache stores them */
    int merged;          /* the tree forward's keys split into parts, merged (checked in its dispatches) */
} tree_row;

#define TREE_GQA {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000}
#define TREE_QUANT {.embed_dim = 128, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000} /* D = 32 */

/* The first sequence holds 37 + 7 tokens: 3 parts of 16 keys (lavapipe's key tile) when split
 * in 3, 2 parts of the 20 + 7 - 1 keys a window of 20 lets its rows see. */
static const tree_row tree_rows[] = {
    {"gqa rope, unsplit", TREE_GQA, 0, VKATTN_DTYPE_F32, 1, 1e-10, 0},
    {"gqa rope, split-KV 3 parts", TREE_GQA, 0, VKATTN_DTYPE_F32, 3, 1e-10, 1},
    {"rope, window 20 (by position), split-KV 3",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 1, .rope_theta = 10000, .window = 20}, 0, VKATTN_DTYPE_F32, 3,
     1e-10, 1},
    {"window 5 + softcap + alibi + sinks, unsplit",
     {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .window = 5, .softcap = 2.0f, .alibi = 1}, 1, VKATTN_DTYPE_F32,
     1, 1e-10, 0},
    {"alibi + sinks, split-KV 3", {.embed_dim = 64, .num_heads = 4, .num_kv_heads = 2, .alibi = 1}, 1,
     VKATTN_DTYPE_F32, 3, 1e-10, 1},
    {"gqa rope, split-KV 3", TREE_GQA, 0, VKATTN_DTYPE_F16, 3, 1e-5, 1},
    {"gqa rope D=32, split-KV 3", TREE_QUANT, 0, VKATTN_DTYPE_Q8_0, 3, 1e-6, 1},
    {"gqa rope D=32, unsplit", TREE_QUANT, 0, VKATTN_DTYPE_Q4_0, 1, 1e-6, 0},
};

/* Three sequences of the batch: a history (0 for the third: the tree is its first tokens) and a
 * tree each; the second's tree lists parents after their children, the third has two roots. */
enum { TREE_SEQS = 3, TREE_MAX = 48 };
static const uint32_t tree_hist[TREE_SEQS] = {37, 6, 0}, tree_n[TREE_SEQS] = {7, 6, 4};
static const int tree_a[7] = {-1, 0, 0, 1, 1, 2, 5}, tree_b[6] = {3, -1, 1, 1, 0, 4}, tree_c[4] = {-1, -1, 0, 1};
static const int *const tree_parents[TREE_SEQS] = {tree_a, tree_b, tree_c};

typedef struct tree_case {
    const tree_row *row;
    test_weights tw;
    vkattn_layer *layer;
    vkattn_kv_cache *cache;
    uint32_t E;
    float *hist[TREE_SEQS], *tokens[TREE_SEQS]; /* each sequence's history and tree tokens, (n, E) */
    float *out;                                 /* the tree forward's outputs, (T, E) */
} tree_case;

/* One forward of `n` new tokens of sequence `seq` from x into out. */
static vkattn_status feed_one(tree_case *c, uint32_t seq, uint32_t n, const float *x, float *out)
{
    vkattn_cached_forward_desc d = {.batch = 1, .seq_ids = &seq, .new_tokens = &n, .query = x, .output = out,
                                    .kv_splits = c->row->kv_splits};
    return vkattn_forward_cached(c->layer, c->cache, &d);
}

/* The histories (the first two sequences, in one forward), their copies in sequences 3 and 4, then
 * the three trees in one forward. */
static void tree_run(tree_case *c)
{
    const uint32_t E = c->E, T = tree_n[0] + tree_n[1] + tree_n[2];
    const size_t rows = tree_hist[0] + tree_hist[1] > T ? tree_hist[0] + tree_hist[1] : T;
    float *x = malloc(rows * E * sizeof(float)), *y = malloc(rows * E * sizeof(float));
    uint8_t mask[49 + 36 + 16], *m = mask;
    uint32_t depths[17], ids[TREE_SEQS] = {0, 1, 2}, t = 0;
    memcpy(x, c->hist[0], tree_hist[0] * E * sizeof(float));
    memcpy(x + tree_hist[0] * E, c->hist[1], tree_hist[1] * E * sizeof(float));
    vkattn_cached_forward_desc h = {.batch = 2, .new_tokens = tree_hist, .query = x, .output = y};
    CHECK_STATUS(vkattn_forward_cached(c->layer, c->cache, &h), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_fork(c->cache, 0, 3), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_fork(c->cache, 1, 4), VKATTN_OK);
    for (uint32_t s = 0; s < TREE_SEQS; s++) {
        tree_mask(tree_parents[s], tree_n[s], m);
        m += tree_n[s] * tree_n[s];
        for (uint32_t i = 0; i < tree_n[s]; i++, t++) depths[t] = tree_depth(tree_parents[s], i);
        memcpy(x + (t - tree_n[s]) * E, c->tokens[s], tree_n[s] * E * sizeof(float));
    }
    vkattn_cached_forward_desc d = {.batch = TREE_SEQS, .seq_ids = ids, .new_tokens = tree_n, .query = x,
                                    .output = c->out, .kv_splits = c->row->kv_splits, .new_token_mask = mask,
                                    .new_token_depths = depths};
    CHECK_STATUS(vkattn_forward_cached(c->layer, c->cache, &d), VKATTN_OK);
    cache_state st = state_of(c->cache);
    CHECK(st.len[0] == 44 && st.len[1] == 12 && st.len[2] == 4);
    /* projections, RoPE (when on), append, attention, output; and the parts' merge when split */
    vkattn_forward_stats stats;
    CHECK_STATUS(vkattn_layer_last_stats(c->layer, &stats), VKATTN_OK);
    uint32_t want = 4 + (c->row->layer.rope_theta > 0) + c->row->merged;
    CHECK_MSG(stats.dispatches == want, "%s: the tree forward ran %u dispatches, not %u", c->row->name, stats.dispatches,
              want);
    free(x), free(y);
}

/* Against the CPU reference: each sequence's history and tree as one forward at the tree's
 * positions and mask, k and v rounded as the cache stores them. */
static void tree_check_reference(tree_case *c)
{
    const uint32_t E = c->E;
    float x[TREE_MAX * 128], y[TREE_MAX * 128], *want = malloc(17 * E * sizeof(float));
    uint8_t mask[TREE_MAX * TREE_MAX];
    uint32_t pos[TREE_MAX], t = 0;
    for (uint32_t s = 0; s < TREE_SEQS; s++) {
        const uint32_t P = tree_hist[s], n = tree_n[s];
        memcpy(x, c->hist[s], P * E * sizeof(float));
        memcpy(x + P * E, c->tokens[s], n * E * sizeof(float));
        tree_reference(tree_parents[s], P, n, mask, pos);
        vkattn_host_forward_desc f = {.batch = 1, .query_len = P + n, .query = x, .output = y, .attn_mask = mask,
                                      .attn_mask_dtype = VKATTN_DTYPE_BOOL, .positions = pos,
                                      .kv_cache_dtype = c->row->dtype};
        vkattn_error err = {0};
        CHECK_STATUS(vkattn_reference_forward(&c->tw.desc, &c->tw.w, &f, &err), VKATTN_OK);
        memcpy(want + t * E, y + P * E, n * E * sizeof(float));
        t += n;
    }
    test_error e = test_compare(c->out, want, (size_t)t * E);
    printf("  %-46s %-4s vs CPU reference:        nmse %.2e max_abs %.2e\n", c->row->name,
           vkattn_dtype_name(c->row->dtype), e.nmse, e.max_abs);
    CHECK_MSG(e.nonfinite == 0 && e.nmse <= c->row->nmse, "%s: nmse %.3e", c->row->name, e.nmse);
    free(want);
}

/* Against each root-to-token path fed as a sequence of its own (sequence 5), forked from the
 * history's copy: the token's output is the path's last. */
static void tree_check_paths(tree_case *c)
{
    const uint32_t E = c->E;
    float x[8 * 128], y[8 * 128], *want = malloc(17 * E * sizeof(float));
    uint32_t path[8], t = 0;
    for (uint32_t s = 0; s < TREE_SEQS; s++) {
        for (uint32_t i = 0; i < tree_n[s]; i++, t++) {
            uint32_t len = tree_path(tree_parents[s], i, path);
            for (uint32_t k = 0; k < len; k++) memcpy(x + k * E, c->tokens[s] + path[k] * E, E * sizeof(float));
            if (tree_hist[s]) CHECK_STATUS(vkattn_kv_cache_fork(c->cache, 3 + s, 5), VKATTN_OK);
            CHECK_STATUS(feed_one(c, 5, len, x, y), VKATTN_OK);
            memcpy(want + t * E, y + (len - 1) * E, E * sizeof(float));
            CHECK_STATUS(vkattn_kv_cache_free_seq(c->cache, 5), VKATTN_OK);
        }
    }
    test_error e = test_compare(c->out, want, (size_t)t * E);
    printf("  %-46s %-4s vs each path as a sequence: nmse %.2e max_abs %.2e\n", c->row->name,
           vkattn_dtype_name(c->row->dtype), e.nmse, e.max_abs);
    CHECK_MSG(e.nonfinite == 0 && e.nmse <= 1e-10, "%s: the tree differs from its paths: nmse %.3e", c->row->name, e.nmse);
    free(want);
}

/* A kept path: the first sequence's tokens 0 and 1 are a chain (the prefix of the tree's order),
 * so rolling back to history + 2 keeps it; the next token then sees the history and that path. */
static void tree_check_kept_path(tree_case *c)
{
    const uint32_t E = c->E, P = tree_hist[0];
    float x[TREE_MAX * 128], y[TREE_MAX * 128], z[128], out[128];
    test_rng rng = test_rng_make(5);
    test_fill(&rng, z, E, 1.0f);
    CHECK_STATUS(vkattn_kv_cache_truncate(c->cache, 0, P + 2), VKATTN_OK);
    CHECK_STATUS(feed_one(c, 0, 1, z, out), VKATTN_OK);
    memcpy(x, c->hist[0], P * E * sizeof(float));
    memcpy(x + P * E, c->tokens[0], 2 * E * sizeof(float));
    memcpy(x + (P + 2) * E, z, E * sizeof(float));
    vkattn_host_forward_desc f = {.batch = 1, .query_len = P + 3, .query = x, .output = y, .causal = 1,
                                  .kv_cache_dtype = c->row->dtype};
    CHECK_STATUS(vkattn_reference_forward(&c->tw.desc, &c->tw.w, &f, NULL), VKATTN_OK);
    test_error e = test_compare(out, y + (P + 2) * E, E);
    CHECK_MSG(e.nonfinite == 0 && e.nmse <= c->row->nmse, "%s: the token after a kept path: nmse %.3e", c->row->name,
              e.nmse);
}

static void tree_case_run(vkattn_context *ctx, const tree_row *row)
{
    tree_case c = {.row = row, .E = row->layer.embed_dim};
    test_weights_make(&c.tw, &row->layer, 61);
    if (row->sinks) test_weights_add_sinks(&c.tw, -1.0f, 3.0f, 62);
    CHECK_STATUS(vkattn_layer_create(ctx, &row->layer, &c.tw.w, &c.layer), VKATTN_OK);
    c.cache = make_cache(ctx, &row->layer, 64, 6, row->dtype);
    test_rng rng = test_rng_make(63);
    for (uint32_t s = 0; s < TREE_SEQS; s++) {
        c.hist[s] = malloc((tree_hist[s] + 1) * c.E * sizeof(float));
        c.tokens[s] = malloc(tree_n[s] * c.E * sizeof(float));
        test_fill(&rng, c.hist[s], tree_hist[s] * c.E, 1.0f);
        test_fill(&rng, c.tokens[s], tree_n[s] * c.E, 1.0f);
    }
    c.out = malloc(17 * c.E * sizeof(float));
    tree_run(&c);
    tree_check_reference(&c);
    tree_check_paths(&c);
    tree_check_kept_path(&c);
    for (uint32_t s = 0; s < TREE_SEQS; s++) free(c.hist[s]), free(c.tokens[s]);
    free(c.out);
    vkattn_kv_cache_destroy(c.cache);
    vkattn_layer_destroy(c.layer);
    test_weights_free(&c.tw);
}

/* Rows whose cache is an element format (tree), or a block format (tree_quant). */
static void family_tree(vkattn_context *ctx, int quant)
{
    for (size_t i = 0; i < sizeof tree_rows / sizeof tree_rows[0]; i++)
        if (vka_dtype_is_block(tree_rows[i].dtype) == quant) tree_case_run(ctx, &tree_rows[i]);
}

/* ---- errors: refusals change nothing; BUSY; drops take the forwards back ----------------------- */

/* `call` returns `status` with `text` in the message, and the cache is as `before`. */
#define REFUSED(ctx, cache, before, call, status, text)                                              \
    do {                                                                                           \
        CHECK_STATUS(call, status);                                                                \
        CHECK_MSG(strstr(vkattn_context_last_error(ctx), text) != NULL, "message \"%s\" lacks \"%s\"", \
                  vkattn_context_last_error(ctx), text);                                           \
        cache_state now_ = state_of(cache);                                                        \
        CHECK_MSG(same_state(&now_, &(before)), "a refused call changed the cache");               \
    } while (0)

typedef struct error_setup {
    test_weights tw, tw2, tw3;
    vkattn_layer *layer, *other, *plain; /* other: the layer's shape, own weights; plain: a one-head stand-in */
    vkattn_kv_cache *cache, *cache2;
    vkattn_tensor *q, *o, *o2;           /* (2, 1, 32): a step of both sequences */
} error_setup;

static void error_setup_make(vkattn_context *ctx, error_setup *e)
{
    vkattn_layer_desc ld = {.embed_dim = 32, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000};
    vkattn_layer_desc pd = {.embed_dim = 32, .num_heads = 1};
    test_weights_make(&e->tw, &ld, 1), test_weights_make(&e->tw2, &ld, 2), test_weights_make(&e->tw3, &pd, 3);
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &e->tw.w, &e->layer), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &e->tw2.w, &e->other), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_create(ctx, &pd, &e->tw3.w, &e->plain), VKATTN_OK);
    e->cache = make_cache(ctx, &ld, 6, 2, VKATTN_DTYPE_F32); /* 24 tokens */
    e->cache2 = make_cache(ctx, &ld, 6, 2, VKATTN_DTYPE_F32);
    const uint32_t dims[3] = {2, 1, 32};
    e->q = make_tensor(ctx, VKATTN_DTYPE_F32, 3, dims), e->o = make_tensor(ctx, VKATTN_DTYPE_F32, 3, dims);
    e->o2 = make_tensor(ctx, VKATTN_DTYPE_F32, 3, dims);
    float x[7 * 32];
    test_rng rng = test_rng_make(4);
    test_fill(&rng, x, 7 * 32, 1.0f);
    CHECK_STATUS(vkattn_tensor_write(e->q, x, 2 * 32 * sizeof(float)), VKATTN_OK);
    vkattn_cached_forward_desc d = {.batch = 2, .new_tokens = (uint32_t[]){5, 2}, .query = x, .output = x};
    CHECK_STATUS(vkattn_forward_cached(e->layer, e->cache, &d), VKATTN_OK);
}

static void error_setup_free(error_setup *e)
{
    vkattn_tensor_destroy(e->q), vkattn_tensor_destroy(e->o), vkattn_tensor_destroy(e->o2);
    vkattn_kv_cache_destroy(e->cache), vkattn_kv_cache_destroy(e->cache2);
    vkattn_layer_destroy(e->layer), vkattn_layer_destroy(e->other), vkattn_layer_destroy(e->plain);
    test_weights_free(&e->tw), test_weights_free(&e->tw2), test_weights_free(&e->tw3);
}

/* Bad descriptions: each refused with a message, the cache unchanged. */
static void errors_bad_inputs(vkattn_context *ctx, error_setup *e)
{
    const cache_state before = state_of(e->cache);
    float x[2 * 32] = {0}, y[2 * 32];
    vkattn_submission *sub = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    vkattn_cached_forward_desc d = {.batch = 2, .query = x, .output = y, .query_tensor = e->q, .output_tensor = e->o};
    REFUSED(ctx, e->cache, before, vkattn_forward_cached(e->layer, e->cache, &d), VKATTN_ERROR_INVALID_ARGUMENT, "not both");
    d = (vkattn_cached_forward_desc){.batch = 2, .query = x, .output = y};
    REFUSED(ctx, e->cache, before, vkattn_submission_add_cached(sub, e->layer, e->cache, &d),
            VKATTN_ERROR_INVALID_ARGUMENT, "device tensors");
    d = (vkattn_cached_forward_desc){.batch = 2, .query_tensor = e->q};
    REFUSED(ctx, e->cache, before, vkattn_forward_cached(e->layer, e->cache, &d), VKATTN_ERROR_INVALID_ARGUMENT,
            "output_tensor");
    vkattn_tensor *long_q = make_tensor(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){4, 32});
    vkattn_tensor *narrow = make_tensor(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){2, 16});
    vkattn_tensor *flat = make_tensor(ctx, VKATTN_DTYPE_F32, 1, (uint32_t[]){64});
    vkattn_tensor *bools = make_tensor(ctx, VKATTN_DTYPE_BOOL, 2, (uint32_t[]){2, 32});
    d = (vkattn_cached_forward_desc){.batch = 2, .query_tensor = long_q, .output_tensor = e->o};
    REFUSED(ctx, e->cache, before, vkattn_forward_cached(e->layer, e->cache, &d), VKATTN_ERROR_SHAPE, "T = 2");
    d.query_tensor = e->q, d.output_tensor = narrow;
    REFUSED(ctx, e->cache, before, vkattn_submission_add_cached(sub, e->layer, e->cache, &d), VKATTN_ERROR_SHAPE,
            "output_tensor is (2, 16)");
    d.output_tensor = flat;
    REFUSED(ctx, e->cache, before, vkattn_forward_cached(e->layer, e->cache, &d), VKATTN_ERROR_SHAPE, "E = 32");
    d.output_tensor = e->q;
    REFUSED(ctx, e->cache, before, vkattn_forward_cached(e->layer, e->cache, &d), VKATTN_ERROR_INVALID_ARGUMENT,
            "shares memory");
    d.query_tensor = bools, d.output_tensor = e->o;
    REFUSED(ctx, e->cache, before, vkattn_forward_cached(e->layer, e->cache, &d), VKATTN_ERROR_DTYPE, "query");
    /* masks: depths without a mask; a depth past its sequence's tokens */
    const uint32_t news[2] = {1, 2}, depths[3] = {0, 0, 2};
    const uint8_t mask[1 + 4] = {1, 1, 0, 1, 1};
    vkattn_tensor *q3 = make_tensor(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){3, 32});
    vkattn_tensor *o3 = make_tensor(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){3, 32});
    d = (vkattn_cached_forward_desc){.batch = 2, .new_tokens = news, .query_tensor = q3, .output_tensor = o3,
                                     .new_token_depths = depths};
    REFUSED(ctx, e->cache, before, vkattn_forward_cached(e->layer, e->cache, &d), VKATTN_ERROR_INVALID_ARGUMENT,
            "new_token_mask");
    d.new_token_mask = mask;
    REFUSED(ctx, e->cache, before, vkattn_submission_add_cached(sub, e->layer, e->cache, &d),
            VKATTN_ERROR_INVALID_ARGUMENT, "new_token_depths[2] is 2");
    /* a tensor of another context */
    vkattn_context *ctx2 = gpu_test_context();
    vkattn_tensor *foreign = make_tensor(ctx2, VKATTN_DTYPE_F32, 3, (uint32_t[]){2, 1, 32});
    d = (vkattn_cached_forward_desc){.batch = 2, .query_tensor = foreign, .output_tensor = e->o};
    REFUSED(ctx, e->cache, before, vkattn_forward_cached(e->layer, e->cache, &d), VKATTN_ERROR_INVALID_ARGUMENT,
            "different context");
    gpu_test_finish_context(ctx2);
    /* the pool is full: 24 slots, 7 held, 17 more needed */
    vkattn_tensor *big_q = make_tensor(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){20, 32});
    vkattn_tensor *big_o = make_tensor(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){20, 32});
    d = (vkattn_cached_forward_desc){.batch = 1, .new_tokens = (uint32_t[]){20}, .query_tensor = big_q,
                                     .output_tensor = big_o};
    REFUSED(ctx, e->cache, before, vkattn_submission_add_cached(sub, e->layer, e->cache, &d), VKATTN_ERROR_CACHE_FULL,
            "full");
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK); /* nothing was added */
    vkattn_tensor *all[] = {long_q, narrow, flat, bools, q3, o3, big_q, big_o};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) vkattn_tensor_destroy(all[i]);
    vkattn_submission_destroy(sub);
}

/* A cache in an unfinished submission: BUSY everywhere else, its lengths already advanced. */
static void errors_busy(vkattn_context *ctx, error_setup *e)
{
    const cache_state before = state_of(e->cache);
    vkattn_submission *sub = NULL, *sub2 = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_create(ctx, &sub2), VKATTN_OK);
    vkattn_cached_forward_desc d = {.batch = 2, .query_tensor = e->q, .output_tensor = e->o};
    CHECK_STATUS(vkattn_submission_add_cached(sub, e->layer, e->cache, &d), VKATTN_OK);
    const cache_state added = state_of(e->cache);
    CHECK(added.len[0] == before.len[0] + 1 && added.len[1] == before.len[1] + 1);
    vkattn_cached_forward_desc d2 = {.batch = 2, .query_tensor = e->o, .output_tensor = e->o2};
    REFUSED(ctx, e->cache, added, vkattn_submission_add_cached(sub, e->other, e->cache, &d2), VKATTN_ERROR_BUSY,
            "already has a forward in this submission");
    REFUSED(ctx, e->cache, added, vkattn_submission_add_cached(sub2, e->other, e->cache, &d2), VKATTN_ERROR_BUSY,
            "KV cache is in a submission");
    REFUSED(ctx, e->cache, added, vkattn_submission_add_cached(sub2, e->layer, e->cache2, &d2), VKATTN_ERROR_BUSY,
            "layer is in a submission");
    REFUSED(ctx, e->cache, added, vkattn_forward_cached(e->other, e->cache, &d2), VKATTN_ERROR_BUSY, "KV cache");
    REFUSED(ctx, e->cache, added, vkattn_kv_cache_fork(e->cache, 0, 1), VKATTN_ERROR_BUSY, "KV cache");
    REFUSED(ctx, e->cache, added, vkattn_kv_cache_truncate(e->cache, 0, 1), VKATTN_ERROR_BUSY, "KV cache");
    REFUSED(ctx, e->cache, added, vkattn_kv_cache_free_seq(e->cache, 1), VKATTN_ERROR_BUSY, "KV cache");
    /* a layer of another context: refused for that before anything of the cache is read (its own
     * context guards it), so not as busy (it was, before an outside review) */
    vkattn_context *ctx2 = gpu_test_context();
    vkattn_layer *foreign = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx2, &e->tw2.desc, &e->tw2.w, &foreign), VKATTN_OK); /* e->other's twin */
    float x[2 * 32] = {0}, y[2 * 32];
    vkattn_cached_forward_desc hd = {.batch = 2, .query = x, .output = y};
    REFUSED(ctx2, e->cache, added, vkattn_forward_cached(foreign, e->cache, &hd), VKATTN_ERROR_INVALID_ARGUMENT,
            "belongs to a different context");
    vkattn_layer_destroy(foreign);
    gpu_test_finish_context(ctx2);
    /* its tensors are the submission's too: another cache's forward cannot write its output */
    vkattn_cached_forward_desc d3 = {.batch = 2, .query_tensor = e->o2, .output_tensor = e->o};
    CHECK_STATUS(vkattn_forward_cached(e->other, e->cache2, &d3), VKATTN_ERROR_BUSY);
    /* the same submission may chain another cache's forward on the output */
    CHECK_STATUS(vkattn_submission_add_cached(sub, e->other, e->cache2, &d2), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);
    const cache_state done = state_of(e->cache);
    CHECK(same_state(&done, &added));
    CHECK_STATUS(vkattn_kv_cache_truncate(e->cache, 0, before.len[0]), VKATTN_OK); /* free again */
    CHECK_STATUS(vkattn_kv_cache_truncate(e->cache, 1, before.len[1]), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_free_seq(e->cache2, 0), VKATTN_OK);
    CHECK_STATUS(vkattn_kv_cache_free_seq(e->cache2, 1), VKATTN_OK);
    vkattn_submission_destroy(sub), vkattn_submission_destroy(sub2);
}

/* Forwards that will never run are taken back: a tensor destroyed before the submit drops them
 * (the next submit says so), a submission destroyed unsubmitted, a cache destroyed meanwhile. A
 * failed add keeps the adds before it. */
static void errors_drops(vkattn_context *ctx, error_setup *e)
{
    const cache_state before = state_of(e->cache), before2 = state_of(e->cache2);
    vkattn_submission *sub = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    vkattn_tensor *tmp = make_tensor(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){2, 1, 32});
    vkattn_cached_forward_desc d = {.batch = 2, .query_tensor = e->q, .output_tensor = e->o};
    vkattn_forward_desc m = {.query = e->o, .output = tmp};
    vkattn_cached_forward_desc d2 = {.batch = 2, .query_tensor = tmp, .output_tensor = e->o2};
    CHECK_STATUS(vkattn_submission_add_cached(sub, e->layer, e->cache, &d), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_add(sub, e->plain, &m), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_add_cached(sub, e->other, e->cache2, &d2), VKATTN_OK);
    vkattn_tensor_destroy(tmp); /* drops all three */
    cache_state now = state_of(e->cache), now2 = state_of(e->cache2);
    CHECK_MSG(same_state(&now, &before) && same_state(&now2, &before2), "a dropped submission kept its sequences");
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "dropped") != NULL);
    /* destroyed before it was submitted */
    CHECK_STATUS(vkattn_submission_add_cached(sub, e->layer, e->cache, &d), VKATTN_OK);
    vkattn_submission_destroy(sub);
    now = state_of(e->cache);
    CHECK(same_state(&now, &before));
    /* a failed add after a good one: the good one stays and runs */
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_add_cached(sub, e->layer, e->cache, &d), VKATTN_OK);
    vkattn_cached_forward_desc bad = {.batch = 3, .query_tensor = e->o, .output_tensor = e->o2};
    REFUSED(ctx, e->cache2, before2, vkattn_submission_add_cached(sub, e->other, e->cache2, &bad),
            VKATTN_ERROR_INVALID_ARGUMENT, "batch is 3");
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);
    now = state_of(e->cache);
    CHECK(now.len[0] == before.len[0] + 1 && now.len[1] == before.len[1] + 1);
    /* a cache destroyed while an unsubmitted submission holds it and another cache: the other is
     * taken back too, and the submission says so */
    vkattn_layer_desc ld = e->tw.desc;
    vkattn_kv_cache *doomed = make_cache(ctx, &ld, 4, 2, VKATTN_DTYPE_F32);
    vkattn_cached_forward_desc d3 = {.batch = 2, .query_tensor = e->q, .output_tensor = e->o2};
    CHECK_STATUS(vkattn_submission_add_cached(sub, e->other, e->cache2, &d3), VKATTN_OK);
    vkattn_cached_forward_desc d4 = {.batch = 2, .query_tensor = e->o2, .output_tensor = e->o};
    CHECK_STATUS(vkattn_submission_add_cached(sub, e->layer, doomed, &d4), VKATTN_OK);
    vkattn_kv_cache_destroy(doomed);
    now2 = state_of(e->cache2);
    CHECK(same_state(&now2, &before2));
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_submission_destroy(sub);
}

static void family_errors(vkattn_context *ctx)
{
    error_setup e;
    error_setup_make(ctx, &e);
    errors_bad_inputs(ctx, &e);
    errors_busy(ctx, &e);
    errors_drops(ctx, &e);
    error_setup_free(&e);
}

int main(int argc, char **argv)
{
    const char *family = argc > 1 ? argv[1] : "stack";
    vkattn_context *ctx = gpu_test_context();
    gpu_test_expect_subgroup_kernels(ctx);
    if (strcmp(family, "stack") == 0) family_stack(ctx);
    else if (strcmp(family, "tensors") == 0) family_tensors(ctx);
    else if (strcmp(family, "tree") == 0) family_tree(ctx, 0);
    else if (strcmp(family, "tree_quant") == 0) family_tree(ctx, 1);
    else if (strcmp(family, "errors") == 0) family_errors(ctx);
    else CHECK_MSG(0, "unknown family %s", family);
    gpu_test_finish_context(ctx);
    return test_finish();
}
