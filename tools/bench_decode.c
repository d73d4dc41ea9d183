/* vkattn bench --preset decode: decoding one token at a time through the paged KV cache
 * (vkattn_forward_cached) against context length, with the cache in F32, F16, Q8_0 and Q4_0 and split-KV on
 * (kv_splits 0, the device's choice) and off (1), beside what the same token costs without a
 * cache: one causal forward over the whole context, re-projecting the prefix. Then the decode
 * targets of the KV-cache issue, each with its measured figures and whether it was met.
 *
 * How a point is measured: sequence 0 of a cache is filled to ctx - 1 tokens; each timed step
 * forks it into sequence 1, adds one token there (the ctx-th: it attends to ctx keys) and frees
 * sequence 1 again, so every step of a point sees the same context and sequence 0 never grows.
 * Contexts are taken in ascending order, sequence 0 growing from one to the next, so filling costs
 * one causal prefill of the longest context per cache dtype.
 *
 * The caches are filled by the timed layer itself (one cache serves one layer), in prompts of
 * FILL_CHUNK tokens; filling is not timed. Target (f)'s layer has the sliding window, so its
 * prompts cost W keys a row. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"
#include "cli_json.h"

#define MAX_STEPS 2000       /* timed decode steps per point */
#define BLOCK_SIZE 16        /* the cache's default block */
#define FILL_CHUNK 2048      /* prompt tokens per cached forward when filling */
#define TARGET_A_TOKENS 1024 /* target (a): the prefill, and 1 + 1023 decode steps */
#define MQA_CONTEXT 32768    /* target (d) */
#define QUANT_CONTEXT 8192   /* target (e) */
#define WINDOW 4096          /* target (f): the sliding window, and the context it is compared at */
#define WINDOW_CONTEXT 32768 /* target (f) */
#define ROPE_THETA 10000.0f

static const uint32_t default_lens[] = {512, 1024, 2048, 4096, 8192, 16384};
static const uint32_t split_settings[2] = {0, 1}; /* kv_splits: the device's choice, unsplit */

#define TRY(expr, what)                                                                            \
    do {                                                                                           \
        vkattn_status s_ = (expr);                                                                 \
        if (s_ != VKATTN_OK) {                                                                     \
            rc = cli_fail("bench", what, s_, vkattn_context_last_error(ctx));                      \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

#define NEED(ptr)                                                                                  \
    do {                                                                                           \
        if (!(ptr)) {                                                                              \
            rc = cli_fail("bench", "allocating host data", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL); \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* ---------------------------------------------------------------------------------------------- */
/* Layers, caches, steps                                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* A layer with random weights, timing on. Grouped-query layers take W_Q, W_K and W_V apart. */
typedef struct decode_layer {
    vkattn_layer_desc desc;
    float *weights;
    vkattn_layer *layer;
} decode_layer;

static void layer_free(decode_layer *l)
{
    vkattn_layer_destroy(l->layer);
    free(l->weights);
    *l = (decode_layer){0};
}

static int layer_make(vkattn_context *ctx, uint32_t E, uint32_t H, uint32_t H_kv, uint32_t window,
                      unsigned long long seed, decode_layer *l)
{
    const size_t e = E, e_kv = (size_t)E / H * H_kv;
    const size_t n = e * e + 2 * e_kv * e + (e + 2 * e_kv) + e * e + e;
    int rc = 0;
    *l = (decode_layer){.desc = {.embed_dim = E, .num_heads = H, .num_kv_heads = H_kv, .rope_theta = ROPE_THETA,
                                 .window = window}};
    NEED(l->weights = malloc(n * sizeof(float)));
    bench_fill_random(l->weights, n, seed, sqrtf(3.0f / E));
    const float *q = l->weights, *k = q + e * e, *v = k + e_kv * e, *bias = v + e_kv * e;
    const float *o = bias + e + 2 * e_kv, *ob = o + e * e;
    vkattn_weights w = {.q_proj_weight = q, .k_proj_weight = k, .v_proj_weight = v, .in_proj_bias = bias,
                        .out_proj_weight = o, .out_proj_bias = ob};
    TRY(vkattn_layer_create(ctx, &l->desc, &w, &l->layer), "creating a layer");
    TRY(vkattn_layer_set_timing(l->layer, 1), "turning stage timing on");
    return 0;
fail:
    layer_free(l);
    return rc;
}

static uint32_t head_dim(const decode_layer *l)
{
    return l->desc.embed_dim / l->desc.num_heads;
}

/* A cache for `tokens` tokens of sequence 0, and a fork of it: its copy of a partly filled last
 * block and the block its new token may open. */
static int cache_make(vkattn_context *ctx, const decode_layer *l, vkattn_dtype dtype, uint32_t tokens,
                      vkattn_kv_cache **out)
{
    int rc = 0;
    /* In 64 bits: a context near 2^32 would wrap to a tiny pool and be reported as a full cache.
     * Clamped, the cache's own check names the device limit instead. */
    uint64_t blocks = ((uint64_t)tokens + BLOCK_SIZE - 1) / BLOCK_SIZE + 2;
    vkattn_kv_cache_desc d = {.num_kv_heads = l->desc.num_kv_heads, .head_dim = head_dim(l),
                              .num_blocks = blocks < UINT32_MAX ? (uint32_t)blocks : UINT32_MAX,
                              .block_size = BLOCK_SIZE, .max_sequences = 2, .dtype = dtype};
    TRY(vkattn_kv_cache_create(ctx, &d, out), "creating the KV cache");
fail:
    return rc;
}

/* One cached forward: sequence `seq` adds `n` tokens (rows of `query`); host wall time in *wall_ms. */
static vkattn_status feed(const decode_layer *l, vkattn_kv_cache *cache, uint32_t seq, uint32_t n, uint32_t splits,
                          const float *query, float *output, double *wall_ms)
{
    vkattn_cached_forward_desc d = {.batch = 1, .seq_ids = &seq, .new_tokens = &n, .query = query, .output = output,
                                    .kv_splits = splits};
    double t0 = cli_now();
    vkattn_status s = vkattn_forward_cached(l->layer, cache, &d);
    if (wall_ms) *wall_ms = (cli_now() - t0) * 1e3;
    return s;
}

/* Grows sequence 0 to `target` tokens with prompts of up to FILL_CHUNK tokens through `l`, the
 * layer the cache serves. */
static int fill_to(vkattn_context *ctx, const decode_layer *l, vkattn_kv_cache *cache, uint32_t target)
{
    const size_t E = l->desc.embed_dim;
    float *in = malloc(FILL_CHUNK * E * sizeof(float)), *out = malloc(FILL_CHUNK * E * sizeof(float));
    uint32_t len = 0;
    int rc = 0;
    NEED(in && out);
    bench_fill_random(in, FILL_CHUNK * E, 7, 1.0f);
    TRY(vkattn_kv_cache_seq_length(cache, 0, &len), "reading the sequence length");
    while (len < target) {
        uint32_t n = target - len < FILL_CHUNK ? target - len : FILL_CHUNK;
        TRY(feed(l, cache, 0, n, 0, in, out, NULL), "filling the KV cache");
        len += n;
    }
fail:
    free(in);
    free(out);
    return rc;
}

/* One decode step at context len(sequence 0) + 1 on a fork of sequence 0 (see the top). */
static vkattn_status fork_step(const decode_layer *l, vkattn_kv_cache *cache, uint32_t splits, const float *token,
                               float *out, double *wall_ms, vkattn_forward_stats *stats)
{
    vkattn_status s = vkattn_kv_cache_fork(cache, 0, 1);
    if (s != VKATTN_OK) return s;
    s = feed(l, cache, 1, 1, splits, token, out, wall_ms);
    if (s == VKATTN_OK) s = vkattn_layer_last_stats(l->layer, stats);
    vkattn_status f = vkattn_kv_cache_free_seq(cache, 1);
    return s != VKATTN_OK ? s : f;
}

/* ---------------------------------------------------------------------------------------------- */
/* Points                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

typedef struct decode_point {
    uint32_t ctx;                       /* keys the timed token attends to, itself included */
    vkattn_dtype dtype;                 /* the cache's */
    uint32_t splits;                    /* kv_splits asked for */
    uint32_t steps, dispatches;         /* timed steps; dispatches of the last */
    bench_time host;                    /* vkattn_forward_cached wall time per step: "ms/token" */
    bench_time gpu;                     /* first to last timestamp */
    bench_time stage[VKATTN_STAGE_COUNT];
    double cache_bytes;                 /* K and V rows the attention must read: 2·ctx·H_kv·row size of D */
    uint32_t bytes_per_token;           /* the cache's (vkattn_kv_cache_info): K and V, all heads */
    double cache_gbs, peak_pct;         /* cache_bytes / attention (FUSED stage) median time */
    double reproject_ms;                /* the same token by one causal forward over ctx tokens; < 0: not measured */
} decode_point;

/* Samples of a point: host, GPU, then each stage; MAX_STEPS each. */
typedef double sample_row[MAX_STEPS];
enum { SAMPLE_ROWS = 2 + VKATTN_STAGE_COUNT };

/* Times the two points of one context (kv_splits auto and 1) at the cache's current context, their
 * steps alternating, until min_time (at least 3 steps each): both see the same machine, so their
 * ratio holds on a machine shared with other work even when the absolute times move. `rows`
 * holds 2 * SAMPLE_ROWS rows. */
static int time_points(vkattn_context *ctx, const decode_layer *l, vkattn_kv_cache *cache, uint32_t warmup,
                       double min_time_s, sample_row *rows, decode_point *points)
{
    const uint32_t E = l->desc.embed_dim;
    float *token = malloc(E * sizeof(float)), *out = malloc(E * sizeof(float));
    vkattn_forward_stats st[2] = {{0}};
    double wall = 0;
    int rc = 0;
    NEED(token && out);
    bench_fill_random(token, E, 3, 1.0f);
    /* at least one warm-up: a split setting's first step at a new context may build pipelines */
    for (uint32_t i = 0; i < (warmup ? warmup : 1); i++)
        for (int k = 0; k < 2; k++)
            TRY(fork_step(l, cache, points[k].splits, token, out, &wall, &st[k]), "a warm-up decode step");
    uint32_t n = 0;
    double start = cli_now();
    while (n < MAX_STEPS && (n < 3 || cli_now() - start < 2 * min_time_s)) {
        for (int k = 0; k < 2; k++) {
            sample_row *r = rows + k * SAMPLE_ROWS;
            TRY(fork_step(l, cache, points[k].splits, token, out, &wall, &st[k]), "a decode step");
            r[0][n] = wall;
            r[1][n] = st[k].gpu_ms;
            for (int s = 0; s < VKATTN_STAGE_COUNT; s++) r[2 + s][n] = st[k].stage_ms[s];
        }
        n++;
    }
    for (int k = 0; k < 2; k++) {
        decode_point *p = &points[k];
        sample_row *r = rows + k * SAMPLE_ROWS;
        p->steps = n;
        p->dispatches = st[k].dispatches;
        p->host = bench_stats(r[0], n);
        p->gpu = bench_stats(r[1], n);
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) p->stage[s] = bench_stats(r[2 + s], n);
        p->cache_bytes = 2.0 * p->ctx * l->desc.num_kv_heads * vkattn_dtype_row_size(p->dtype, head_dim(l));
        double attention_ms = p->stage[VKATTN_STAGE_FUSED].median_ms;
        p->cache_gbs = attention_ms > 0 ? p->cache_bytes / (attention_ms * 1e6) : 0;
    }
fail:
    free(token);
    free(out);
    return rc;
}

/* One cache dtype: points[c * 2 + s] for contexts lens[c] and split_settings[s]. */
static int run_dtype(vkattn_context *ctx, const bench_decode_options *o, const decode_layer *l,
                     vkattn_dtype dtype, sample_row *rows, decode_point *points)
{
    vkattn_kv_cache *cache = NULL;
    vkattn_kv_cache_info info = {0};
    int rc = cache_make(ctx, l, dtype, o->lens[o->len_count - 1], &cache);
    if (rc == 0) TRY(vkattn_kv_cache_get_info(cache, &info), "reading the cache's info");
    for (uint32_t c = 0; rc == 0 && c < o->len_count; c++) {
        if (isatty(fileno(stderr)))
            fprintf(stderr, "\r\033[K[decode] %s cache, context %u", vkattn_dtype_name(dtype), o->lens[c]);
        for (uint32_t s = 0; s < 2; s++)
            points[c * 2 + s] = (decode_point){.ctx = o->lens[c], .dtype = dtype, .splits = split_settings[s],
                                               .bytes_per_token = info.bytes_per_token, .reproject_ms = -1};
        if (!(rc = fill_to(ctx, l, cache, o->lens[c] - 1)))
            rc = time_points(ctx, l, cache, o->warmup, o->min_time_s, rows, &points[c * 2]);
    }
fail:
    if (isatty(fileno(stderr))) fprintf(stderr, "\r\033[K");
    vkattn_kv_cache_destroy(cache);
    return rc;
}

/* What the last token of `len` costs without a cache: one causal forward over all `len` tokens
 * (its last row is that token's output), vkattn_forward_host wall time, median over repeats (at
 * least one). Its kernels' variants do not depend on the length, so one warm-up at the shortest
 * context is enough: warming up at 16384 tokens would cost as much as the measurement, tens of
 * seconds on lavapipe. */
static int time_reproject(vkattn_context *ctx, const decode_layer *l, uint32_t len, uint32_t warmup, double min_time_s,
                          double *samples, double *ms)
{
    const size_t n = (size_t)len * l->desc.embed_dim;
    float *query = malloc(n * sizeof(float)), *out = malloc(n * sizeof(float));
    int rc = 0;
    NEED(query && out);
    bench_fill_random(query, n, 5, 1.0f);
    vkattn_host_forward_desc f = {.batch = 1, .query_len = len, .query = query, .output = out, .causal = 1};
    for (uint32_t i = 0; i < warmup; i++) TRY(vkattn_forward_host(l->layer, &f), "a warm-up causal forward");
    uint32_t count = 0;
    double start = cli_now();
    while (count < MAX_STEPS && (count < 1 || cli_now() - start < min_time_s)) {
        double t0 = cli_now();
        TRY(vkattn_forward_host(l->layer, &f), "a causal forward");
        samples[count++] = (cli_now() - t0) * 1e3;
    }
    *ms = bench_stats(samples, count).median_ms;
fail:
    free(query);
    free(out);
    return rc;
}

/* ---------------------------------------------------------------------------------------------- */
/* Targets                                                                                         */
/* ---------------------------------------------------------------------------------------------- */

/* (a): 1023 decode steps after a 1-token prefill against one prefill of the same 1024 tokens. */
typedef struct target_a {
    vkattn_dtype dtype;
    bench_time prefill_host, prefill_gpu; /* one cached forward of 1024 tokens into an empty sequence */
    double prefill_stage_ms[VKATTN_STAGE_COUNT]; /* of the last prefill */
    double steps_host_ms, steps_gpu_ms;   /* sums over the 1023 steps */
    double steps_stage_ms[VKATTN_STAGE_COUNT];
    double ratio, gpu_ratio;              /* steps / prefill median */
    double plain_ms;                      /* one plain causal vkattn_forward_host over the 1024 tokens */
} target_a;

static int measure_target_a(vkattn_context *ctx, const bench_decode_options *o, const decode_layer *l,
                            vkattn_dtype dtype, double *samples, target_a *t)
{
    const size_t E = l->desc.embed_dim;
    float *tokens = malloc(TARGET_A_TOKENS * E * sizeof(float)), *out = malloc(TARGET_A_TOKENS * E * sizeof(float));
    double *gpu = malloc(MAX_STEPS * sizeof(double)), wall = 0;
    vkattn_kv_cache *cache = NULL;
    vkattn_forward_stats st;
    int rc = 0;
    *t = (target_a){.dtype = dtype};
    NEED(tokens && out && gpu);
    bench_fill_random(tokens, TARGET_A_TOKENS * E, 9, 1.0f);
    if ((rc = cache_make(ctx, l, dtype, TARGET_A_TOKENS, &cache))) goto fail;
    for (uint32_t i = 0; i < o->warmup; i++) {
        TRY(feed(l, cache, 0, TARGET_A_TOKENS, 0, tokens, out, NULL), "a warm-up prefill");
        TRY(vkattn_kv_cache_free_seq(cache, 0), "freeing the sequence");
    }
    uint32_t n = 0;
    double start = cli_now();
    while (n < MAX_STEPS && (n < 3 || cli_now() - start < o->min_time_s)) {
        TRY(feed(l, cache, 0, TARGET_A_TOKENS, 0, tokens, out, &wall), "the 1024-token prefill");
        TRY(vkattn_layer_last_stats(l->layer, &st), "reading the stats");
        TRY(vkattn_kv_cache_free_seq(cache, 0), "freeing the sequence");
        samples[n] = wall, gpu[n] = st.gpu_ms, n++;
    }
    memcpy(t->prefill_stage_ms, st.stage_ms, sizeof st.stage_ms);
    t->prefill_host = bench_stats(samples, n);
    t->prefill_gpu = bench_stats(gpu, n);
    TRY(feed(l, cache, 0, 1, 0, tokens, out, NULL), "the 1-token prefill");
    for (uint32_t i = 1; i < TARGET_A_TOKENS; i++) {
        TRY(feed(l, cache, 0, 1, 0, tokens + i * E, out + i * E, &wall), "a decode step");
        TRY(vkattn_layer_last_stats(l->layer, &st), "reading the stats");
        t->steps_host_ms += wall;
        t->steps_gpu_ms += st.gpu_ms;
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) t->steps_stage_ms[s] += st.stage_ms[s];
    }
    t->ratio = t->steps_host_ms / t->prefill_host.median_ms;
    t->gpu_ratio = t->steps_gpu_ms / t->prefill_gpu.median_ms;
    rc = time_reproject(ctx, l, TARGET_A_TOKENS, 0, o->min_time_s, samples, &t->plain_ms);
fail:
    vkattn_kv_cache_destroy(cache);
    free(tokens);
    free(out);
    free(gpu);
    return rc;
}

/* (b): ms/token = intercept + slope · ctx / 1000 by least squares over one series of points. */
typedef struct linear_fit {
    double slope_per_1k, intercept, r2, worst_residual_pct;
    uint32_t points;
} linear_fit;

/* The figure a fit is over: ms/token, or the attention stage alone. */
static double fit_value(const decode_point *p, int attention)
{
    return attention ? p->stage[VKATTN_STAGE_FUSED].median_ms : p->host.median_ms;
}

static linear_fit fit_series(const decode_point *points, uint32_t len_count, uint32_t split_index, int attention)
{
    linear_fit f = {0};
    double sx = 0, sy = 0, n = len_count;
    for (uint32_t c = 0; c < len_count; c++) {
        sx += points[c * 2 + split_index].ctx / 1000.0;
        sy += fit_value(&points[c * 2 + split_index], attention);
    }
    double mx = sx / n, my = sy / n, sxx = 0, sxy = 0, syy = 0;
    for (uint32_t c = 0; c < len_count; c++) {
        const decode_point *p = &points[c * 2 + split_index];
        double dx = p->ctx / 1000.0 - mx, dy = fit_value(p, attention) - my;
        sxx += dx * dx, sxy += dx * dy, syy += dy * dy;
    }
    f.points = len_count;
    if (len_count < 2 || !(sxx > 0)) return f;
    f.slope_per_1k = sxy / sxx;
    f.intercept = my - f.slope_per_1k * mx;
    double ss_res = 0;
    for (uint32_t c = 0; c < len_count; c++) {
        const decode_point *p = &points[c * 2 + split_index];
        double y = fit_value(p, attention), r = y - (f.intercept + f.slope_per_1k * p->ctx / 1000.0);
        ss_res += r * r;
        double pct = y > 0 ? 100.0 * fabs(r) / y : 0;
        if (pct > f.worst_residual_pct) f.worst_residual_pct = pct;
    }
    f.r2 = syy > 0 ? 1.0 - ss_res / syy : 1.0;
    return f;
}

#define LINEAR_R2 0.99 /* (b) counts as linear at this R^2 and above */

/* (d): the attention stage with kv_splits 1 and 0 on an MQA layer at MQA_CONTEXT. */
typedef struct target_d {
    int measured;
    vkattn_dtype dtype;
    decode_point pair[2];          /* kv_splits 0 (auto) and 1 */
    double ratio, min_ratio;       /* unsplit / split attention time: medians, fastest steps */
} target_d;

static int measure_target_d(vkattn_context *ctx, const bench_decode_options *o, vkattn_dtype dtype, sample_row *rows,
                            target_d *t)
{
    decode_layer l = {0};
    vkattn_kv_cache *cache = NULL;
    int rc;
    *t = (target_d){.dtype = dtype};
    if ((rc = layer_make(ctx, 1024, 8, 1, 0, 21, &l)) || (rc = cache_make(ctx, &l, dtype, MQA_CONTEXT, &cache)) ||
        (rc = fill_to(ctx, &l, cache, MQA_CONTEXT - 1)))
        goto fail;
    t->pair[0] = (decode_point){.ctx = MQA_CONTEXT, .dtype = dtype, .splits = split_settings[0], .reproject_ms = -1};
    t->pair[1] = (decode_point){.ctx = MQA_CONTEXT, .dtype = dtype, .splits = split_settings[1], .reproject_ms = -1};
    /* four times the steps of a point: the ratio is this target's figure, and the split steps
     * depend on a second core that other work on the machine may take */
    if ((rc = time_points(ctx, &l, cache, o->warmup, 4 * o->min_time_s, rows, t->pair))) goto fail;
    t->ratio = t->pair[1].stage[VKATTN_STAGE_FUSED].median_ms / t->pair[0].stage[VKATTN_STAGE_FUSED].median_ms;
    t->min_ratio = t->pair[1].stage[VKATTN_STAGE_FUSED].min_ms / t->pair[0].stage[VKATTN_STAGE_FUSED].min_ms;
    t->measured = 1;
fail:
    vkattn_kv_cache_destroy(cache);
    layer_free(&l);
    return rc;
}

/* (f): the layer `l` with a sliding window of WINDOW keys at WINDOW_CONTEXT against `l` itself at
 * WINDOW: the table's point when it has one (`reference`), else measured here. */
typedef struct target_f {
    int measured, reference_from_table;
    vkattn_dtype dtype;
    decode_point windowed[2];      /* kv_splits 0 (auto) and 1, ctx WINDOW_CONTEXT */
    decode_point plain[2];         /* the same without the window at ctx WINDOW; [0] is compared */
    double ratio, attention_ratio; /* windowed / plain, kv_splits auto: ms per token, attention stage */
} target_f;

static int measure_target_f(vkattn_context *ctx, const bench_decode_options *o, const decode_layer *l,
                            vkattn_dtype dtype, const decode_point *reference, sample_row *rows, target_f *t)
{
    const vkattn_layer_desc *d = &l->desc;
    decode_layer windowed = {0};
    vkattn_kv_cache *cache = NULL;
    int rc;
    *t = (target_f){.dtype = dtype};
    for (int k = 0; k < 2; k++) {
        t->windowed[k] = (decode_point){.ctx = WINDOW_CONTEXT, .dtype = dtype, .splits = split_settings[k],
                                        .reproject_ms = -1};
        t->plain[k] = (decode_point){.ctx = WINDOW, .dtype = dtype, .splits = split_settings[k], .reproject_ms = -1};
    }
    /* seed 1: the weights of the table's layer */
    if ((rc = layer_make(ctx, d->embed_dim, d->num_heads, d->num_kv_heads, WINDOW, 1, &windowed)) ||
        (rc = cache_make(ctx, l, dtype, WINDOW_CONTEXT, &cache)) ||
        (rc = fill_to(ctx, &windowed, cache, WINDOW_CONTEXT - 1)) ||
        (rc = time_points(ctx, &windowed, cache, o->warmup, o->min_time_s, rows, t->windowed)))
        goto fail;
    vkattn_kv_cache_destroy(cache);
    cache = NULL;
    if (reference) {
        t->plain[0] = *reference;
        t->reference_from_table = 1;
    } else if ((rc = cache_make(ctx, l, dtype, WINDOW, &cache)) || (rc = fill_to(ctx, l, cache, WINDOW - 1)) ||
               (rc = time_points(ctx, l, cache, o->warmup, o->min_time_s, rows, t->plain))) {
        goto fail;
    }
    t->ratio = t->windowed[0].host.median_ms / t->plain[0].host.median_ms;
    t->attention_ratio =
        t->windowed[0].stage[VKATTN_STAGE_FUSED].median_ms / t->plain[0].stage[VKATTN_STAGE_FUSED].median_ms;
    t->measured = 1;
fail:
    vkattn_kv_cache_destroy(cache);
    layer_free(&windowed);
    return rc;
}

/* ---------------------------------------------------------------------------------------------- */
/* Report                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

typedef struct decode_report {
    bench_run_info info;
    bench_decode_options o;          /* defaults resolved, lens ascending */
    uint32_t E, H, H_kv, D;
    decode_point *points;            /* [dtype][ctx][split]: (d * len_count + c) * 2 + s */
    target_a a[BENCH_DECODE_MAX_DTYPES];              /* per dtype */
    linear_fit b[BENCH_DECODE_MAX_DTYPES][2];         /* per dtype and split: ms/token */
    linear_fit b_attention[BENCH_DECODE_MAX_DTYPES][2]; /* the same for the attention stage alone */
    target_d d;
    target_f f;
    double load[2];                  /* 1-minute load average at the start and the end; < 0 unknown */
    double elapsed_s[5];             /* the points (fills included), re-projection, (a), (d), (f) */
    double peak_bandwidth[2];        /* copy bandwidth measured at the start and the end; 0 not measured */
} decode_report;

static const decode_point *point_at(const decode_report *r, uint32_t d, uint32_t c, uint32_t s)
{
    return &r->points[((size_t)d * r->o.len_count + c) * 2 + s];
}

static const char *split_name(uint32_t splits)
{
    return splits ? "1" : "auto";
}

static const char *verdict(int met)
{
    return met ? "met" : "NOT met";
}

/* The machine's 1-minute load average (Linux), or -1. */
static double load_average(void)
{
    FILE *f = fopen("/proc/loadavg", "r");
    double v = -1;
    if (f && fscanf(f, "%lf", &v) != 1) v = -1;
    if (f) fclose(f);
    return v;
}

static void print_point(FILE *out, const decode_point *p, const vkattn_peak *peak)
{
    const bench_time *st = p->stage;
    fprintf(out, "%6u %-5s %-5s %5u %8.3f %8.3f %8.1f %8.3f %7.3f %8.3f %7.3f %8.2f %6.2f", p->ctx,
            vkattn_dtype_name(p->dtype), split_name(p->splits), p->steps, p->host.median_ms, p->host.min_ms,
            1e3 / p->host.median_ms, p->gpu.median_ms, st[VKATTN_STAGE_QKV_PROJECTION].median_ms,
            st[VKATTN_STAGE_FUSED].median_ms, st[VKATTN_STAGE_OUT_PROJECTION].median_ms, p->cache_bytes / 1e6,
            p->cache_gbs);
    if (peak->bandwidth_gbs > 0) fprintf(out, " %6.1f", p->peak_pct);
    else fprintf(out, " %6s", "-");
    if (p->reproject_ms >= 0) fprintf(out, " %10.2f %7.1fx", p->reproject_ms, p->reproject_ms / p->host.median_ms);
    else fprintf(out, " %10s %8s", "-", "-");
    fprintf(out, " %4u\n", p->dispatches);
}

static void print_table(FILE *out, const decode_report *r)
{
    bench_print_device(out, &r->info);
    if (r->peak_bandwidth[1] > 0)
        fprintf(out, "        (the better of two measurements, before and after the points: bandwidth %.2f and %.2f GB/s)\n",
                r->peak_bandwidth[0], r->peak_bandwidth[1]);
    if (r->load[0] >= 0)
        fprintf(out, "load:   1-minute load average %.2f at the start on %ld cores (other work on the machine slows "
                     "every figure)\n", r->load[0], sysconf(_SC_NPROCESSORS_ONLN));
    fprintf(out, "layer:  E=%u H=%u H_kv=%u D=%u, RoPE theta %g, one sequence; KV cache blocks of %u tokens\n", r->E,
            r->H, r->H_kv, r->D, (double)ROPE_THETA, BLOCK_SIZE);
    fprintf(out, "cache:  bytes per token (K and V, all heads):");
    for (uint32_t d = 0; d < r->o.dtype_count; d++)
        fprintf(out, "%s %s %u", d ? "," : "", vkattn_dtype_name(r->o.dtypes[d]), point_at(r, d, 0, 0)->bytes_per_token);
    fputc('\n', out);
    fprintf(out, "timing: each point: the cache holds ctx - 1 tokens, then decode steps of one token at context ctx\n"
                 "        (each on a fork of the sequence) for at least %.2f s and 3 steps, steps of split auto and 1\n"
                 "        alternating; medians over the steps\n",
            r->o.min_time_s);
    fprintf(out, "        ms/token: vkattn_forward_cached wall time (min: the fastest step); GPU, qkv (projections,\n"
                 "        RoPE, cache append), attn (attn_paged + merge), out: GPU timestamps; cache MB: the K/V bytes\n"
                 "        a step must read (2 * ctx * H_kv rows of D values in the cache's format), GB/s and peak%%: those over attn time against the peak copy bandwidth;\n"
                 "        reproj: the same token without a cache (one causal vkattn_forward_host over ctx tokens,\n"
                 "        f32 layer); speedup: reproj / ms per token; disp: dispatches of a step (+1: a merge)\n\n");
    fprintf(out, "%6s %-5s %-5s %5s %8s %8s %8s %8s %7s %8s %7s %8s %6s %6s %10s %8s %4s\n", "ctx", "cache", "split",
            "steps", "ms/token", "min ms", "tokens/s", "GPU ms", "qkv ms", "attn ms", "out ms", "cache MB", "GB/s",
            "peak%", "reproj ms", "speedup", "disp");
    for (uint32_t d = 0; d < r->o.dtype_count; d++)
        for (uint32_t s = 0; s < 2; s++)
            for (uint32_t c = 0; c < r->o.len_count; c++) print_point(out, point_at(r, d, c, s), &r->info.peak);
}

static void print_target_a(FILE *out, const decode_report *r)
{
    fprintf(out, "(a) %u decode steps after a 1-token prefill cost at most 3x one cached causal prefill of the same %u\n"
                 "    tokens (E=%u H=%u H_kv=%u, kv_splits auto; steps: the sum of their wall times):\n",
            TARGET_A_TOKENS - 1, TARGET_A_TOKENS, r->E, r->H, r->H_kv);
    for (uint32_t d = 0; d < r->o.dtype_count; d++) {
        const target_a *a = &r->a[d];
        const double *ps = a->prefill_stage_ms, *ss = a->steps_stage_ms;
        fprintf(out, "    %s cache: steps %.1f ms, prefill %.1f ms: ratio %.2fx (GPU time: %.1f ms / %.1f ms = %.2fx)  %s\n",
                vkattn_dtype_name(a->dtype), a->steps_host_ms, a->prefill_host.median_ms, a->ratio, a->steps_gpu_ms,
                a->prefill_gpu.median_ms, a->gpu_ratio, verdict(a->ratio <= 3.0));
        fprintf(out, "        GPU stages, steps: qkv %.1f ms, attn %.1f ms, out %.1f ms; prefill: qkv %.1f, attn %.1f, out "
                     "%.1f ms\n",
                ss[VKATTN_STAGE_QKV_PROJECTION], ss[VKATTN_STAGE_FUSED], ss[VKATTN_STAGE_OUT_PROJECTION],
                ps[VKATTN_STAGE_QKV_PROJECTION], ps[VKATTN_STAGE_FUSED], ps[VKATTN_STAGE_OUT_PROJECTION]);
        fprintf(out, "        against a plain causal vkattn_forward_host over the %u tokens (%.1f ms): %.2fx\n",
                TARGET_A_TOKENS, a->plain_ms, a->steps_host_ms / a->plain_ms);
    }
}

static void print_target_b(FILE *out, const decode_report *r)
{
    fprintf(out, "(b) per-token time grows linearly in context: least squares of ms/token over ctx %u..%u (%u points;\n"
                 "    counted as linear at R^2 >= %.2f):\n",
            r->o.lens[0], r->o.lens[r->o.len_count - 1], r->o.len_count, LINEAR_R2);
    for (uint32_t d = 0; d < r->o.dtype_count; d++)
        for (uint32_t s = 0; s < 2; s++) {
            const linear_fit *f = &r->b[d][s];
            const linear_fit *fa = &r->b_attention[d][s];
            fprintf(out, "    %s cache, split %-4s: %.4f ms per 1k tokens of context + %.3f ms, R^2 %.4f, largest "
                         "residual %.1f%%  %s\n",
                    vkattn_dtype_name(r->o.dtypes[d]), split_name(split_settings[s]), f->slope_per_1k, f->intercept,
                    f->r2, f->worst_residual_pct,
                    f->points < 3 ? "not judged (fewer than 3 contexts)" : verdict(f->r2 >= LINEAR_R2));
            fprintf(out, "        attention stage alone: %.4f ms per 1k + %.3f ms, R^2 %.4f, largest residual %.1f%%\n",
                    fa->slope_per_1k, fa->intercept, fa->r2, fa->worst_residual_pct);
        }
}

/* (c) is judged on the F16 points at ctx >= 4096 with kv_splits auto (the default). */
static void print_target_c(FILE *out, const decode_report *r)
{
    const double peak = r->info.peak.bandwidth_gbs;
    fprintf(out, "(c) attention reads an F16 cache at >= 50%% of the peak copy bandwidth (");
    if (peak > 0) fprintf(out, "%.2f GB/s", peak);
    else fprintf(out, "not measured");
    fprintf(out, ") at ctx >= 4096\n"
                 "    (bytes: 2 * ctx * H_kv * D * 2; time: the attention stage; judged with kv_splits auto):\n");
    int judged = 0, met = 1;
    for (uint32_t d = 0; d < r->o.dtype_count; d++) {
        if (r->o.dtypes[d] != VKATTN_DTYPE_F16) continue;
        for (uint32_t c = 0; c < r->o.len_count; c++)
            for (uint32_t s = 0; s < 2; s++) {
                const decode_point *p = point_at(r, d, c, s);
                if (p->ctx < 4096) continue;
                fprintf(out, "    ctx %5u split %-4s: %.2f MB in %.3f ms = %.2f GB/s", p->ctx, split_name(p->splits),
                        p->cache_bytes / 1e6, p->stage[VKATTN_STAGE_FUSED].median_ms, p->cache_gbs);
                if (peak > 0) fprintf(out, " = %.1f%% of peak", p->peak_pct);
                fputc('\n', out);
                if (p->splits == 0) judged = 1, met &= p->peak_pct >= 50.0;
            }
    }
    if (!judged) fprintf(out, "    not measured: needs an f16 cache and a context >= 4096\n");
    else if (!(peak > 0)) fprintf(out, "    not judged: no peak (--no-peak)\n");
    else fprintf(out, "    %s\n", verdict(met));
    for (size_t i = 0; peak > 0 && i < (size_t)r->o.dtype_count * r->o.len_count * 2; i++)
        if (r->points[i].peak_pct > 100) {
            fprintf(out, "    (some points read faster than the peak copy runs: that peak is no ceiling for reads\n"
                         "    alone, and load on the machine moves both)\n");
            break;
        }
}

static void print_target_d(FILE *out, const decode_report *r)
{
    const target_d *t = &r->d;
    fprintf(out, "(d) split-KV: the attention stage >= 1.6x faster with kv_splits 0 (auto) than 1, one query, MQA\n"
                 "    E=1024 H=8 H_kv=1 D=128, ctx %u:\n", MQA_CONTEXT);
    if (!t->measured) {
        fprintf(out, "    not measured (--no-mqa)\n");
        return;
    }
    const bench_time *one = &t->pair[1].stage[VKATTN_STAGE_FUSED], *split = &t->pair[0].stage[VKATTN_STAGE_FUSED];
    fprintf(out, "    %s cache, %u steps each, alternating: kv_splits 1 %.3f ms (%u dispatches), auto %.3f ms (%u "
                 "dispatches): %.2fx  %s\n"
                 "    (fastest steps: %.3f ms vs %.3f ms, %.2fx; per token: %.3f ms vs %.3f ms)\n",
            vkattn_dtype_name(t->dtype), t->pair[0].steps, one->median_ms, t->pair[1].dispatches, split->median_ms,
            t->pair[0].dispatches, t->ratio, verdict(t->ratio >= 1.6), one->min_ms, split->min_ms, t->min_ratio,
            t->pair[1].host.median_ms, t->pair[0].host.median_ms);
    if (t->pair[1].dispatches >= t->pair[0].dispatches)
        fprintf(out, "    kv_splits 1 ran as many dispatches as auto, a merge among them: the device's loop budget\n"
                     "    (%u trips per invocation) needs key parts at this context and head dim, so 1 was not one part\n",
                r->info.device.loop_budget);
}

/* The point of cache dtype `dtype` at context `len`, kv_splits auto; NULL if not measured. */
static const decode_point *find_point(const decode_report *r, vkattn_dtype dtype, uint32_t len)
{
    for (uint32_t d = 0; d < r->o.dtype_count; d++)
        for (uint32_t c = 0; c < r->o.len_count; c++)
            if (r->o.dtypes[d] == dtype && r->o.lens[c] == len) return point_at(r, d, c, 0);
    return NULL;
}

/* (e) is judged on the points of the table: Q8_0 against F16 at QUANT_CONTEXT, kv_splits auto. */
static void print_target_e(FILE *out, const decode_report *r)
{
    const decode_point *q = find_point(r, VKATTN_DTYPE_Q8_0, QUANT_CONTEXT);
    const decode_point *h = find_point(r, VKATTN_DTYPE_F16, QUANT_CONTEXT);
    fprintf(out, "(e) a decode step over a Q8_0 cache reads ~0.53x the bytes of an F16 cache, and its attention stage\n"
                 "    is no slower than F16's; ctx %u, kv_splits auto, medians of the table's points:\n", QUANT_CONTEXT);
    if (!q || !h) {
        fprintf(out, "    not measured: needs q8_0 and f16 caches (--dtype) and context %u (--len)\n", QUANT_CONTEXT);
        return;
    }
    double qa = q->stage[VKATTN_STAGE_FUSED].median_ms, ha = h->stage[VKATTN_STAGE_FUSED].median_ms;
    fprintf(out, "    bytes: q8_0 %.2f MB, f16 %.2f MB: %.3fx\n"
                 "    attention: q8_0 %.3f ms, f16 %.3f ms: %.2fx  %s\n"
                 "    (per token: q8_0 %.3f ms, f16 %.3f ms; the two points were timed at different moments)\n",
            q->cache_bytes / 1e6, h->cache_bytes / 1e6, q->cache_bytes / h->cache_bytes, qa, ha, qa / ha,
            verdict(qa <= ha), q->host.median_ms, h->host.median_ms);
}

static void print_target_f(FILE *out, const decode_report *r)
{
    const target_f *t = &r->f;
    fprintf(out, "(f) sliding window W=%u at ctx %u: ms per token within +-20%% of the layer without the window at\n"
                 "    ctx %u (E=%u H=%u H_kv=%u, kv_splits auto, medians):\n",
            WINDOW, WINDOW_CONTEXT, WINDOW, r->E, r->H, r->H_kv);
    if (!t->measured) {
        fprintf(out, "    not measured (--no-window)\n");
        return;
    }
    const decode_point *w = &t->windowed[0], *p = &t->plain[0];
    fprintf(out, "    window %u, ctx %5u, %s cache: %.3f ms/token, attention %.3f ms (%u steps, %u dispatches)\n",
            WINDOW, w->ctx, vkattn_dtype_name(t->dtype), w->host.median_ms, w->stage[VKATTN_STAGE_FUSED].median_ms,
            w->steps, w->dispatches);
    fprintf(out, "    no window,   ctx %5u, %s cache: %.3f ms/token, attention %.3f ms (%s)\n", p->ctx,
            vkattn_dtype_name(p->dtype), p->host.median_ms, p->stage[VKATTN_STAGE_FUSED].median_ms,
            t->reference_from_table ? "the table's point" : "measured here: the table has no such point");
    fprintf(out, "    per token %.2fx  %s; attention stage %.2fx (kv_splits 1: window %.3f ms/token)\n", t->ratio,
            verdict(t->ratio >= 0.8 && t->ratio <= 1.2), t->attention_ratio, t->windowed[1].host.median_ms);
}

static void print_targets(FILE *out, const decode_report *r)
{
    fprintf(out, "\ntargets (a benchmark, not a test: each says what was measured and whether it met the target)\n");
    print_target_a(out, r);
    print_target_b(out, r);
    print_target_c(out, r);
    print_target_d(out, r);
    print_target_e(out, r);
    print_target_f(out, r);
    fprintf(out, "elapsed: points %.1f s (filling the caches included), re-projection %.1f s, (a) %.1f s, (d) %.1f s,\n"
                 "         (f) %.1f s\n",
            r->elapsed_s[0], r->elapsed_s[1], r->elapsed_s[2], r->elapsed_s[3], r->elapsed_s[4]);
    if (r->load[1] >= 0) fprintf(out, "load:   1-minute load average %.2f at the end\n", r->load[1]);
}

/* ---------------------------------------------------------------------------------------------- */
/* JSON                                                                                            */
/* ---------------------------------------------------------------------------------------------- */

/* Adds `count` number members; 0, or 1 when out of memory. */
static int add_numbers(cJSON *o, const char *const *names, const double *values, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!cli_json_add_number(o, names[i], values[i])) return 1;
    return 0;
}

#define ADD_NUMBERS(o, names, values) add_numbers(o, names, values, sizeof(values) / sizeof((values)[0]))

static cJSON *json_point(const decode_point *p)
{
    static const char *const names[] = {"ctx", "kv_splits", "steps", "dispatches", "cache_bytes_per_token",
                                        "ms_per_token_median",
                                        "ms_per_token_min", "tokens_per_s", "gpu_ms_median", "qkv_projection_ms",
                                        "attention_ms", "out_projection_ms", "cache_bytes_per_step", "cache_gbs",
                                        "cache_peak_pct", "reproject_ms", "speedup"};
    const bench_time *st = p->stage;
    const double values[] = {p->ctx, p->splits, p->steps, p->dispatches, p->bytes_per_token, p->host.median_ms,
                             p->host.min_ms,
                             1e3 / p->host.median_ms, p->gpu.median_ms, st[VKATTN_STAGE_QKV_PROJECTION].median_ms,
                             st[VKATTN_STAGE_FUSED].median_ms, st[VKATTN_STAGE_OUT_PROJECTION].median_ms,
                             p->cache_bytes, p->cache_gbs, p->peak_pct, p->reproject_ms >= 0 ? p->reproject_ms : NAN,
                             p->reproject_ms >= 0 ? p->reproject_ms / p->host.median_ms : NAN};
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "cache_dtype", vkattn_dtype_name(p->dtype)) && !ADD_NUMBERS(o, names, values))
        return o;
    cJSON_Delete(o);
    return NULL;
}

/* Appends `item` (NULL: out of memory) to `array`; 0, or 1 with `item` freed. */
static int append(cJSON *array, cJSON *item)
{
    if (item && cJSON_AddItemToArray(array, item)) return 0;
    cJSON_Delete(item);
    return 1;
}

static int json_targets(cJSON *root, const decode_report *r)
{
    cJSON *t = cJSON_AddObjectToObject(root, "targets"), *a = NULL, *b = NULL;
    if (!t || !(a = cJSON_AddArrayToObject(t, "a")) || !(b = cJSON_AddArrayToObject(t, "b"))) return 1;
    static const char *const a_names[] = {"prefill_ms", "prefill_gpu_ms", "steps_ms", "steps_gpu_ms", "ratio",
                                          "gpu_ratio"};
    static const char *const b_names[] = {"kv_splits", "slope_ms_per_1k", "intercept_ms", "r2", "worst_residual_pct"};
    for (uint32_t d = 0; d < r->o.dtype_count; d++) {
        const target_a *x = &r->a[d];
        const double av[] = {x->prefill_host.median_ms, x->prefill_gpu.median_ms, x->steps_host_ms, x->steps_gpu_ms,
                             x->ratio, x->gpu_ratio};
        cJSON *o = cJSON_CreateObject();
        if (append(a, o) || !cJSON_AddStringToObject(o, "cache_dtype", vkattn_dtype_name(x->dtype)) ||
            ADD_NUMBERS(o, a_names, av))
            return 1;
        for (uint32_t s = 0; s < 2; s++) {
            const linear_fit *f = &r->b[d][s];
            const double bv[] = {split_settings[s], f->slope_per_1k, f->intercept, f->r2, f->worst_residual_pct};
            o = cJSON_CreateObject();
            if (append(b, o) || !cJSON_AddStringToObject(o, "cache_dtype", vkattn_dtype_name(x->dtype)) ||
                ADD_NUMBERS(o, b_names, bv))
                return 1;
        }
    }
    const decode_point *q = find_point(r, VKATTN_DTYPE_Q8_0, QUANT_CONTEXT);
    const decode_point *h = find_point(r, VKATTN_DTYPE_F16, QUANT_CONTEXT);
    if (q && h) {
        static const char *const e_names[] = {"ctx", "q8_0_cache_bytes", "f16_cache_bytes", "bytes_ratio",
                                              "q8_0_attention_ms", "f16_attention_ms", "attention_ratio"};
        const double qa = q->stage[VKATTN_STAGE_FUSED].median_ms, ha = h->stage[VKATTN_STAGE_FUSED].median_ms;
        const double ev[] = {QUANT_CONTEXT, q->cache_bytes, h->cache_bytes, q->cache_bytes / h->cache_bytes, qa, ha,
                             qa / ha};
        cJSON *e = cJSON_AddObjectToObject(t, "e");
        if (!e || ADD_NUMBERS(e, e_names, ev)) return 1;
    }
    if (r->f.measured) {
        static const char *const f_names[] = {"window", "ctx", "reference_ctx", "ms_per_token", "attention_ms",
                                              "reference_ms_per_token", "reference_attention_ms", "ratio",
                                              "attention_ratio"};
        const decode_point *w = &r->f.windowed[0], *p = &r->f.plain[0];
        const double fv[] = {WINDOW, w->ctx, p->ctx, w->host.median_ms, w->stage[VKATTN_STAGE_FUSED].median_ms,
                             p->host.median_ms, p->stage[VKATTN_STAGE_FUSED].median_ms, r->f.ratio,
                             r->f.attention_ratio};
        cJSON *f = cJSON_AddObjectToObject(t, "f");
        if (!f || !cJSON_AddStringToObject(f, "cache_dtype", vkattn_dtype_name(r->f.dtype)) ||
            ADD_NUMBERS(f, f_names, fv))
            return 1;
    }
    if (!r->d.measured) return 0;
    static const char *const d_names[] = {"ctx", "steps", "unsplit_attention_ms", "split_attention_ms", "ratio",
                                          "unsplit_attention_min_ms", "split_attention_min_ms", "min_ratio"};
    const bench_time *one = &r->d.pair[1].stage[VKATTN_STAGE_FUSED], *split = &r->d.pair[0].stage[VKATTN_STAGE_FUSED];
    const double dv[] = {MQA_CONTEXT, r->d.pair[0].steps, one->median_ms, split->median_ms, r->d.ratio,
                         one->min_ms, split->min_ms, r->d.min_ratio};
    cJSON *d = cJSON_AddObjectToObject(t, "d");
    return !d || !cJSON_AddStringToObject(d, "cache_dtype", vkattn_dtype_name(r->d.dtype)) || ADD_NUMBERS(d, d_names, dv);
}

static int write_json(const char *path, const decode_report *r)
{
    static const char *const layer_names[] = {"embed_dim", "heads", "kv_heads", "head_dim", "rope_theta", "block_size"};
    const double layer_values[] = {r->E, r->H, r->H_kv, r->D, ROPE_THETA, BLOCK_SIZE};
    cJSON *root = cJSON_CreateObject(), *layer = NULL, *list = NULL;
    int bad = !root || bench_json_run_info(root, &r->info) || !(layer = cJSON_AddObjectToObject(root, "layer")) ||
              ADD_NUMBERS(layer, layer_names, layer_values) || !(list = cJSON_AddArrayToObject(root, "points"));
    for (size_t i = 0; !bad && i < (size_t)r->o.dtype_count * r->o.len_count * 2; i++)
        bad = append(list, json_point(&r->points[i]));
    bad = bad || json_targets(root, r);
    char err[512] = "out of memory";
    if (!bad) bad = cli_json_write_file(root, path, err, sizeof err);
    cJSON_Delete(root);
    if (bad) fprintf(stderr, "vkattn bench: --json: %s\n", err);
    return bad;
}

/* ---------------------------------------------------------------------------------------------- */
/* The run                                                                                         */
/* ---------------------------------------------------------------------------------------------- */

static int compare_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Defaults filled in, contexts ascending without repeats; 0, or 2 with a message. */
static int resolve(const bench_decode_options *in, bench_decode_options *o)
{
    *o = *in;
    if (!o->len_count) {
        o->len_count = sizeof default_lens / sizeof default_lens[0];
        memcpy(o->lens, default_lens, sizeof default_lens);
    }
    qsort(o->lens, o->len_count, sizeof o->lens[0], compare_u32);
    uint32_t n = 0;
    for (uint32_t i = 0; i < o->len_count; i++)
        if (n == 0 || o->lens[i] != o->lens[n - 1]) o->lens[n++] = o->lens[i];
    o->len_count = n;
    if (o->lens[0] < 2) {
        fprintf(stderr, "vkattn bench: --preset decode: contexts (--len) must be at least 2 (a token and its prefix)\n");
        return 2;
    }
    if (!o->embed_dim) o->embed_dim = 512;
    if (!o->heads) o->heads = 8;
    if (!o->kv_heads) o->kv_heads = 2;
    if (!o->dtype_count) {
        const vkattn_dtype all[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};
        _Static_assert(sizeof all / sizeof all[0] <= BENCH_DECODE_MAX_DTYPES, "the default cache dtypes");
        memcpy(o->dtypes, all, sizeof all);
        o->dtype_count = sizeof all / sizeof all[0];
    }
    return 0;
}

/* The points of every cache dtype, then re-projection at each context, then targets (a), (d), (f). */
static int measure(vkattn_context *ctx, decode_report *r, sample_row *rows)
{
    const bench_decode_options *o = &r->o;
    decode_layer l = {0};
    int rc;
    if ((rc = layer_make(ctx, r->E, r->H, r->H_kv, 0, 1, &l))) goto fail;
    double t0 = cli_now();
    for (uint32_t d = 0; d < o->dtype_count; d++)
        if ((rc = run_dtype(ctx, o, &l, o->dtypes[d], rows, &r->points[(size_t)d * o->len_count * 2])))
            goto fail;
    r->elapsed_s[0] = cli_now() - t0, t0 = cli_now();
    for (uint32_t c = 0; c < o->len_count; c++) {
        double ms = -1;
        if ((rc = time_reproject(ctx, &l, o->lens[c], c == 0 ? o->warmup : 0, o->min_time_s, rows[0], &ms)))
            goto fail;
        for (uint32_t d = 0; d < o->dtype_count; d++)
            for (uint32_t s = 0; s < 2; s++) r->points[((size_t)d * o->len_count + c) * 2 + s].reproject_ms = ms;
    }
    r->elapsed_s[1] = cli_now() - t0, t0 = cli_now();
    for (uint32_t d = 0; d < o->dtype_count; d++)
        if ((rc = measure_target_a(ctx, o, &l, o->dtypes[d], rows[0], &r->a[d]))) goto fail;
    r->elapsed_s[2] = cli_now() - t0, t0 = cli_now();
    for (uint32_t d = 0; d < o->dtype_count; d++)
        for (uint32_t s = 0; s < 2; s++) {
            r->b[d][s] = fit_series(&r->points[(size_t)d * o->len_count * 2], o->len_count, s, 0);
            r->b_attention[d][s] = fit_series(&r->points[(size_t)d * o->len_count * 2], o->len_count, s, 1);
        }
    if (!o->no_mqa) {
        vkattn_dtype dtype = o->dtypes[0];
        for (uint32_t d = 0; d < o->dtype_count; d++)
            if (o->dtypes[d] == VKATTN_DTYPE_F16) dtype = VKATTN_DTYPE_F16;
        rc = measure_target_d(ctx, o, dtype, rows, &r->d);
        r->elapsed_s[3] = cli_now() - t0;
    }
    if (rc == 0 && !o->no_window) {
        vkattn_dtype dtype = r->info.device.storage_16bit ? VKATTN_DTYPE_F16 : VKATTN_DTYPE_F32;
        t0 = cli_now();
        rc = measure_target_f(ctx, o, &l, dtype, find_point(r, dtype, WINDOW), rows, &r->f);
        r->elapsed_s[4] = cli_now() - t0;
    }
fail:
    layer_free(&l);
    return rc;
}

/* The peak once more after the measurements, keeping the better of each figure: on a machine
 * shared with other work one measurement can land in a busy second and understate the ceiling
 * that (c) is judged against. */
static void peak_again(vkattn_context *ctx, decode_report *r)
{
    vkattn_peak end, *p = &r->info.peak;
    r->peak_bandwidth[0] = p->bandwidth_gbs;
    if (vkattn_measure_peak(ctx, r->o.peak_seconds, &end) != VKATTN_OK) return;
    r->peak_bandwidth[1] = end.bandwidth_gbs;
    if (end.fp32_gflops > p->fp32_gflops) p->fp32_gflops = end.fp32_gflops, p->fp32_ms = end.fp32_ms;
    if (end.fp16_gflops > p->fp16_gflops) p->fp16_gflops = end.fp16_gflops, p->fp16_ms = end.fp16_ms;
    if (end.bandwidth_gbs > p->bandwidth_gbs) p->bandwidth_gbs = end.bandwidth_gbs, p->bandwidth_ms = end.bandwidth_ms;
}

int bench_decode(FILE *out, const bench_decode_options *options)
{
    decode_report r = {.load = {load_average(), -1}};
    int rc = resolve(options, &r.o);
    if (rc) return rc;
    r.E = r.o.embed_dim, r.H = r.o.heads, r.H_kv = r.o.kv_heads, r.D = r.H ? r.E / r.H : 0;
    r.info = (bench_run_info){.min_time_s = r.o.min_time_s, .preset = "decode"};
    vkattn_context *ctx = NULL;
    sample_row *rows = NULL;
    if ((rc = cli_open_context("bench", r.o.device, &ctx))) return rc;
    vkattn_context_device(ctx, &r.info.device);
    if (!options->dtype_count && !r.info.device.storage_16bit) {
        fprintf(stderr, "vkattn bench: this device has no 16-bit storage: no f16 cache\n");
        uint32_t n = 0;
        for (uint32_t d = 0; d < r.o.dtype_count; d++)
            if (r.o.dtypes[d] != VKATTN_DTYPE_F16) r.o.dtypes[n++] = r.o.dtypes[d];
        r.o.dtype_count = n;
    }
    if (vkattn_context_validation_enabled(ctx))
        fprintf(stderr, "vkattn bench: warning: validation is on; host times include its cost\n");
    if (!r.o.no_peak) {
        vkattn_status status = vkattn_measure_peak(ctx, r.o.peak_seconds, &r.info.peak);
        if (status != VKATTN_OK)
            cli_fail("bench", "measuring the peak (continuing without)", status, vkattn_context_last_error(ctx));
    }
    r.points = calloc((size_t)r.o.dtype_count * r.o.len_count * 2, sizeof *r.points);
    rows = calloc(2 * SAMPLE_ROWS, sizeof *rows);
    if (!r.points || !rows) {
        rc = cli_fail("bench", "allocating", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto fail;
    }
    if ((rc = measure(ctx, &r, rows))) goto fail;
    if (r.info.peak.bandwidth_gbs > 0) peak_again(ctx, &r);
    for (size_t i = 0; i < (size_t)r.o.dtype_count * r.o.len_count * 2; i++)
        if (r.info.peak.bandwidth_gbs > 0) r.points[i].peak_pct = 100.0 * r.points[i].cache_gbs / r.info.peak.bandwidth_gbs;
    r.load[1] = load_average();
    print_table(out, &r);
    print_targets(out, &r);
    if (r.o.json && write_json(r.o.json, &r)) rc = 1;
fail:
    free(rows);
    free(r.points);
    vkattn_context_destroy(ctx);
    return rc;
}
