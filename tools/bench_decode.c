/* vkattn bench --preset decode: decoding one token at a time through the paged KV cache
 * (vkattn_forward_cached) against context length, with the cache in F32, F16, Q8_0 and Q4_0 and split-KV on
 * (kv_splits 0, the device's choice) and off (1), beside what the same token costs without a
 * cache: one causal forward over the whole context, re-projecting the prefix. What the figures must
 * show (time per token linear in the context, a window's cost independent of it) is judged by
 * test_cli_run's bench_decode_scaling, by hand, and the bytes per token by the ctest
 * cli_bench_decode_kernels; other comparisons are recipes in docs/PERFORMANCE.md.
 *
 * How a point is measured: sequence 0 of a cache is filled to ctx - 1 tokens; each timed step
 * forks it into sequence 1, adds one token there (the ctx-th: it attends to ctx keys) and frees
 * sequence 1 again, so every step of a point sees the same context and sequence 0 never grows.
 * Contexts are taken in ascending order, sequence 0 growing from one to the next, so filling costs
 * one causal prefill of the longest context per cache dtype. The caches are filled by the timed
 * layer itself (one cache serves one layer), in prompts of FILL_CHUNK tokens; filling is not timed. */
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
#define MAX_DTYPES 4
#define ROPE_THETA 10000.0f

static const uint32_t default_lens[] = {512, 1024, 2048, 4096, 8192, 16384};
static const uint32_t split_settings[2] = {0, 1}; /* kv_splits: the device's choice, unsplit */

/* The options with the defaults resolved, contexts ascending without repeats. */
typedef struct decode_setup {
    uint32_t lens[CLI_LIST_MAX], len_count;
    vkattn_dtype dtypes[MAX_DTYPES];
    uint32_t dtype_count;
    uint32_t E, H, H_kv, D, window, warmup;
    int features;
    uint32_t stack; /* --stack: layers, 0 = not timed */
    double min_time_s;
    int trace;      /* --trace: each point's decoding step's plan, before it is timed */
} decode_setup;

/* ---------------------------------------------------------------------------------------------- */
/* Layers, caches, steps                                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* A layer with random weights, timing on. Grouped-query layers take W_Q, W_K and W_V apart. */
typedef struct decode_layer {
    vkattn_layer_desc desc;
    uint32_t D;
    float *weights;
    vkattn_layer *layer;
} decode_layer;

static void layer_free(decode_layer *l)
{
    vkattn_layer_destroy(l->layer);
    free(l->weights);
    *l = (decode_layer){0};
}

/* `features`: today's models' additions, per-head q/k RMS norms (Qwen3) and llama3 RoPE scaling. */
static int layer_make(vkattn_context *ctx, const decode_setup *o, int features, decode_layer *l)
{
    const size_t e = o->E, e_kv = (size_t)o->D * o->H_kv, D = o->D;
    const size_t n = e * e + 2 * e_kv * e + (e + 2 * e_kv) + e * e + e + 2 * D;
    int rc = 0;
    *l = (decode_layer){.desc = {.embed_dim = o->E, .num_heads = o->H, .num_kv_heads = o->H_kv,
                                 .rope_theta = ROPE_THETA, .window = o->window}, .D = o->D};
    if (features) {
        l->desc.qk_norm = VKATTN_QK_NORM_HEAD;
        l->desc.rope_scaling = (vkattn_rope_scaling){.type = VKATTN_ROPE_TYPE_LLAMA3, .factor = 8, .low_freq_factor = 1,
                                                     .high_freq_factor = 4, .original_max_position_embeddings = 8192};
    }
    BENCH_NEED(l->weights = malloc(n * sizeof(float)));
    cli_fill_random(l->weights, n, 1 + (unsigned)features, sqrtf(3.0f / o->E));
    const float *q = l->weights, *k = q + e * e, *v = k + e_kv * e, *bias = v + e_kv * e;
    const float *out = bias + e + 2 * e_kv, *out_bias = out + e * e, *norms = out_bias + e;
    vkattn_weights w = {.q_proj_weight = q, .k_proj_weight = k, .v_proj_weight = v, .in_proj_bias = bias,
                        .out_proj_weight = out, .out_proj_bias = out_bias, .q_norm_weight = features ? norms : NULL,
                        .k_norm_weight = features ? norms + D : NULL};
    BENCH_TRY(vkattn_layer_create(ctx, &l->desc, &w, &l->layer), "creating a layer");
    BENCH_TRY(vkattn_layer_set_timing(l->layer, 1), "turning stage timing on");
    return 0;
fail:
    layer_free(l);
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
    BENCH_NEED(in && out);
    cli_fill_random(in, FILL_CHUNK * E, 7, 1.0f);
    BENCH_TRY(vkattn_kv_cache_seq_length(cache, 0, &len), "reading the sequence length");
    while (len < target) {
        uint32_t n = target - len < FILL_CHUNK ? target - len : FILL_CHUNK;
        BENCH_TRY(feed(l, cache, 0, n, 0, in, out, NULL), "filling the KV cache");
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
    double cache_bytes;                 /* K and V rows the attention must read: 2·keys·H_kv·row size of D, keys
                                           ctx or the window */
    uint32_t bytes_per_token;           /* the cache's (vkattn_kv_cache_info): K and V, all heads */
    double cache_gbs, peak_pct;         /* cache_bytes / attention (FUSED stage) median time */
    double reproject_ms;                /* the same token by one causal forward over ctx tokens; < 0: not measured */
} decode_point;

/* Two ways of one decode step at one context, their steps alternating: --features (a: the plain
 * layer, b: with today's additions) and --stack (a: one submission per token, b: one blocking
 * cached forward per layer). The ratio is b's fastest step over a's. */
typedef struct pair_point {
    uint32_t ctx, steps;
    bench_time a, b; /* ms/token */
} pair_point;

/* Samples of a point: host, GPU, then each stage; MAX_STEPS each. */
typedef double sample_row[MAX_STEPS];
enum { SAMPLE_ROWS = 2 + VKATTN_STAGE_COUNT };

/* "context 8192, f16 cache, kv_splits auto" (or the splits asked): how the plan heading and the
 * step times name a point */
static void point_name(const decode_point *p, char *buf, size_t size)
{
    char asked[16] = "auto";
    if (p->splits) snprintf(asked, sizeof asked, "%u", p->splits);
    snprintf(buf, size, "context %u, %s cache, kv_splits %s", p->ctx, vkattn_dtype_name(p->dtype), asked);
}

/* Prints the plan of point p's decode step at the cache's context (sequence 0 adds a token: the
 * fork's step has its shapes; nothing is committed). */
static int print_step_plan(vkattn_context *ctx, const decode_layer *l, vkattn_kv_cache *cache, const decode_point *p,
                           const float *token, float *out)
{
    uint32_t seq = 0, one = 1;
    vkattn_cached_forward_desc d = {.batch = 1, .seq_ids = &seq, .new_tokens = &one, .query = token, .output = out,
                                    .kv_splits = p->splits};
    char name[80], heading[112];
    point_name(p, name, sizeof name);
    snprintf(heading, sizeof heading, "-- decoding step at %s", name);
    return cli_print_cached_plan("bench", ctx, l->layer, cache, &d, heading);
}

/* Times the two points of one context (kv_splits auto and 1) at the cache's current context, their
 * steps alternating, until min_time (at least 3 steps each): both see the same machine, so their
 * ratio holds on a machine shared with other work even when the absolute times move. `rows`
 * holds 2 * SAMPLE_ROWS rows. */
static int time_points(vkattn_context *ctx, const decode_layer *l, vkattn_kv_cache *cache, uint32_t warmup,
                       double min_time_s, int trace, sample_row *rows, decode_point *points)
{
    const uint32_t E = l->desc.embed_dim;
    float *token = malloc(E * sizeof(float)), *out = malloc(E * sizeof(float));
    vkattn_forward_stats st[2] = {{0}};
    bench_steps steps[2] = {{0}}; /* --trace: each step's fastest time */
    double wall = 0;
    int rc = 0;
    BENCH_NEED(token && out);
    cli_fill_random(token, E, 3, 1.0f);
    for (int k = 0; trace && k < 2; k++)
        if ((rc = print_step_plan(ctx, l, cache, &points[k], token, out))) goto fail;
    /* at least one warm-up: a split setting's first step at a new context may build pipelines */
    for (uint32_t i = 0; i < (warmup ? warmup : 1); i++)
        for (int k = 0; k < 2; k++)
            BENCH_TRY(fork_step(l, cache, points[k].splits, token, out, &wall, &st[k]), "a warm-up decode step");
    uint32_t n = 0;
    double start = cli_now();
    while (n < MAX_STEPS && (n < 3 || cli_now() - start < 2 * min_time_s)) {
        for (int k = 0; k < 2; k++) {
            sample_row *r = rows + k * SAMPLE_ROWS;
            BENCH_TRY(fork_step(l, cache, points[k].splits, token, out, &wall, &st[k]), "a decode step");
            if (trace) bench_steps_add(&steps[k], l->layer);
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
        uint32_t keys = l->desc.window && l->desc.window < p->ctx ? l->desc.window : p->ctx; /* what a step reads */
        p->cache_bytes = 2.0 * keys * l->desc.num_kv_heads * vkattn_dtype_row_size(p->dtype, l->D);
        double attention_ms = p->stage[VKATTN_STAGE_FUSED].median_ms;
        p->cache_gbs = attention_ms > 0 ? p->cache_bytes / (attention_ms * 1e6) : 0;
        if (trace) {
            char name[80];
            point_name(p, name, sizeof name);
            bench_steps_print(stdout, name, &steps[k]);
        }
    }
fail:
    free(token);
    free(out);
    return rc;
}

/* A cache for the longest context in sequence 0, and a fork of it: its copy of a partly filled last
 * block and the block its new token may open. */
static int cache_make(vkattn_context *ctx, const decode_setup *o, vkattn_dtype dtype, vkattn_kv_cache **cache)
{
    /* In 64 bits: a context near 2^32 would wrap to a tiny pool and be reported as a full cache.
     * Clamped, the cache's own check names the device limit instead. */
    uint64_t blocks = ((uint64_t)o->lens[o->len_count - 1] + BLOCK_SIZE - 1) / BLOCK_SIZE + 2;
    vkattn_kv_cache_desc d = {.num_kv_heads = o->H_kv, .head_dim = o->D, .block_size = BLOCK_SIZE,
                              .num_blocks = blocks < UINT32_MAX ? (uint32_t)blocks : UINT32_MAX,
                              .max_sequences = 2, .dtype = dtype};
    int rc = 0;
    BENCH_TRY(vkattn_kv_cache_create(ctx, &d, cache), "creating the KV cache");
fail:
    return rc;
}

/* One cache dtype: points[c * 2 + s] for contexts lens[c] and split_settings[s]. */
static int run_dtype(vkattn_context *ctx, const decode_setup *o, const decode_layer *l,
                     vkattn_dtype dtype, sample_row *rows, decode_point *points)
{
    vkattn_kv_cache *cache = NULL;
    vkattn_kv_cache_info info = {0};
    int rc = cache_make(ctx, o, dtype, &cache);
    if (rc) goto fail;
    BENCH_TRY(vkattn_kv_cache_get_info(cache, &info), "reading the cache's info");
    for (uint32_t c = 0; rc == 0 && c < o->len_count; c++) {
        if (isatty(fileno(stderr)))
            fprintf(stderr, "\r\033[K[decode] %s cache, context %u", vkattn_dtype_name(dtype), o->lens[c]);
        for (uint32_t s = 0; s < 2; s++)
            points[c * 2 + s] = (decode_point){.ctx = o->lens[c], .dtype = dtype, .splits = split_settings[s],
                                               .bytes_per_token = info.bytes_per_token, .reproject_ms = -1};
        if (!(rc = fill_to(ctx, l, cache, o->lens[c] - 1)))
            rc = time_points(ctx, l, cache, o->warmup, o->min_time_s, o->trace, rows, &points[c * 2]);
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
    BENCH_NEED(query && out);
    cli_fill_random(query, n, 5, 1.0f);
    vkattn_host_forward_desc f = {.batch = 1, .query_len = len, .query = query, .output = out, .causal = 1};
    for (uint32_t i = 0; i < warmup; i++) BENCH_TRY(vkattn_forward_host(l->layer, &f), "a warm-up causal forward");
    uint32_t count = 0;
    double start = cli_now();
    while (count < MAX_STEPS && (count < 1 || cli_now() - start < min_time_s)) {
        double t0 = cli_now();
        BENCH_TRY(vkattn_forward_host(l->layer, &f), "a causal forward");
        samples[count++] = (cli_now() - t0) * 1e3;
    }
    *ms = bench_stats(samples, count).median_ms;
fail:
    free(query);
    free(out);
    return rc;
}

/* ---------------------------------------------------------------------------------------------- */
/* Report                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

typedef struct decode_report {
    bench_run_info info;
    decode_setup o;
    decode_point *points;            /* [dtype][ctx][split]: (d * len_count + c) * 2 + s */
    pair_point *features;         /* --features: one per context, else NULL */
    pair_point *stack;            /* --stack: one per context, else NULL */
    double load[2];                  /* 1-minute load average at the start and the end; < 0 unknown */
    double peak_bandwidth[2];        /* copy bandwidth measured at the start and the end; 0 not measured */
} decode_report;

static size_t point_count(const decode_report *r)
{
    return (size_t)r->o.dtype_count * r->o.len_count * 2;
}

static const decode_point *point_at(const decode_report *r, uint32_t d, uint32_t c, uint32_t s)
{
    return &r->points[((size_t)d * r->o.len_count + c) * 2 + s];
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
            vkattn_dtype_name(p->dtype), p->splits ? "1" : "auto", p->steps, p->host.median_ms, p->host.min_ms,
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
    const decode_setup *o = &r->o;
    bench_print_device(out, &r->info);
    if (r->peak_bandwidth[1] > 0)
        fprintf(out, "        (the better of two measurements, before and after the points: bandwidth %.2f and %.2f GB/s)\n",
                r->peak_bandwidth[0], r->peak_bandwidth[1]);
    if (r->load[0] >= 0)
        fprintf(out, "load:   1-minute load average %.2f at the start on %ld cores (other work on the machine slows "
                     "every figure)\n", r->load[0], sysconf(_SC_NPROCESSORS_ONLN));
    fprintf(out, "layer:  E=%u H=%u H_kv=%u D=%u, RoPE theta %g", o->E, o->H, o->H_kv, o->D, (double)ROPE_THETA);
    if (o->window) fprintf(out, ", sliding window %u", o->window);
    fprintf(out, ", one sequence; KV cache blocks of %u tokens\n", BLOCK_SIZE);
    fprintf(out, "cache:  bytes per token (K and V, all heads):");
    for (uint32_t d = 0; d < o->dtype_count; d++)
        fprintf(out, "%s %s %u", d ? "," : "", vkattn_dtype_name(o->dtypes[d]), point_at(r, d, 0, 0)->bytes_per_token);
    fputc('\n', out);
    fprintf(out, "timing: each point: the cache holds ctx - 1 tokens, then decode steps of one token at context ctx\n"
                 "        (each on a fork of the sequence) for at least %.2f s and 3 steps, steps of split auto and 1\n"
                 "        alternating; medians over the steps\n",
            o->min_time_s);
    fprintf(out, "        ms/token: vkattn_forward_cached wall time (min: the fastest step); GPU, qkv (projections,\n"
                 "        RoPE, cache append), attn (attn_paged + merge), out: GPU timestamps; cache MB: the K/V bytes\n"
                 "        a step must read (2 * H_kv rows of D values in the cache's format per key: ctx keys, or the\n"
                 "        window), GB/s and peak%%: those over attn time against the peak copy bandwidth;\n"
                 "        reproj: the same token without a cache (one causal vkattn_forward_host over ctx tokens,\n"
                 "        f32 layer); speedup: reproj / ms per token; disp: dispatches of a step (+1: a merge)\n\n");
    fprintf(out, "%6s %-5s %-5s %5s %8s %8s %8s %8s %7s %8s %7s %8s %6s %6s %10s %8s %4s\n", "ctx", "cache", "split",
            "steps", "ms/token", "min ms", "tokens/s", "GPU ms", "qkv ms", "attn ms", "out ms", "cache MB", "GB/s",
            "peak%", "reproj ms", "speedup", "disp");
    for (uint32_t d = 0; d < o->dtype_count; d++)
        for (uint32_t s = 0; s < 2; s++)
            for (uint32_t c = 0; c < o->len_count; c++) print_point(out, point_at(r, d, c, s), &r->info.peak);
    if (r->load[1] >= 0) fprintf(out, "load:   1-minute load average %.2f at the end\n", r->load[1]);
}

static cJSON *json_point(const decode_point *p)
{
    const bench_time *st = p->stage;
    const double reproject = p->reproject_ms >= 0 ? p->reproject_ms : NAN;
    const cli_json_num fields[] = {
        {"ctx", p->ctx}, {"kv_splits", p->splits}, {"steps", p->steps}, {"dispatches", p->dispatches},
        {"cache_bytes_per_token", p->bytes_per_token}, {"ms_per_token_median", p->host.median_ms},
        {"ms_per_token_min", p->host.min_ms}, {"tokens_per_s", 1e3 / p->host.median_ms},
        {"gpu_ms_median", p->gpu.median_ms}, {"qkv_projection_ms", st[VKATTN_STAGE_QKV_PROJECTION].median_ms},
        {"attention_ms", st[VKATTN_STAGE_FUSED].median_ms}, {"attention_ms_min", st[VKATTN_STAGE_FUSED].min_ms},
        {"out_projection_ms", st[VKATTN_STAGE_OUT_PROJECTION].median_ms},
        {"cache_bytes_per_step", p->cache_bytes}, {"cache_gbs", p->cache_gbs}, {"cache_peak_pct", p->peak_pct},
        {"reproject_ms", reproject}, {"speedup", reproject / p->host.median_ms}};
    cJSON *o = cJSON_CreateObject();
    if (o && cJSON_AddStringToObject(o, "cache_dtype", vkattn_dtype_name(p->dtype)) &&
        !cli_json_add_numbers(o, fields, CLI_COUNT(fields)))
        return o;
    cJSON_Delete(o);
    return NULL;
}

/* --features or --stack: an array `key` of one object per context, a's and b's times named by
 * `names`; nonzero on failure. */
static int json_pairs(cJSON *root, const char *key, const char *const names[2], const pair_point *points,
                      const decode_setup *o)
{
    cJSON *list = cJSON_AddArrayToObject(root, key);
    int bad = !list;
    for (uint32_t c = 0; !bad && c < o->len_count; c++) {
        const pair_point *p = &points[c];
        char field[4][48];
        for (int k = 0; k < 2; k++) {
            snprintf(field[2 * k], sizeof field[0], "%s_ms_median", names[k]);
            snprintf(field[2 * k + 1], sizeof field[0], "%s_ms_min", names[k]);
        }
        const cli_json_num fields[] = {{"ctx", p->ctx}, {"steps", p->steps}, {field[0], p->a.median_ms},
                                       {field[1], p->a.min_ms}, {field[2], p->b.median_ms}, {field[3], p->b.min_ms},
                                       {"ratio", p->b.min_ms / p->a.min_ms}};
        cJSON *item = cJSON_CreateObject();
        bad = !item || cli_json_add_numbers(item, fields, CLI_COUNT(fields)) || cli_json_append(list, item);
    }
    return bad;
}

static int write_json(const char *path, const decode_report *r)
{
    const decode_setup *o = &r->o;
    const cli_json_num layer_fields[] = {{"embed_dim", o->E}, {"heads", o->H}, {"kv_heads", o->H_kv},
                                         {"head_dim", o->D}, {"rope_theta", ROPE_THETA}, {"block_size", BLOCK_SIZE},
                                         {"window", o->window}};
    cJSON *root = cJSON_CreateObject(), *layer = NULL, *list = NULL;
    int bad = !root || bench_json_run_info(root, &r->info) || !(layer = cJSON_AddObjectToObject(root, "layer")) ||
              cli_json_add_numbers(layer, layer_fields, CLI_COUNT(layer_fields)) ||
              !(list = cJSON_AddArrayToObject(root, "points"));
    for (size_t i = 0; !bad && i < point_count(r); i++) bad = cli_json_append(list, json_point(&r->points[i]));
    if (!bad && r->features) bad = json_pairs(root, "features", (const char *[]){"plain", "featured"}, r->features, o);
    if (!bad && r->stack) bad = json_pairs(root, "stack", (const char *[]){"submitted", "blocking"}, r->stack, o);
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
static int resolve(const bench_options *in, decode_setup *o)
{
    const vkattn_dtype all[MAX_DTYPES] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};
    *o = (decode_setup){.len_count = in->len.n, .E = in->embed.n ? in->embed.v[0] : 512,
                        .H = in->heads.n ? in->heads.v[0] : 8, .H_kv = in->kv_heads ? in->kv_heads : 2,
                        .window = in->window, .warmup = in->warmup, .features = in->features, .stack = in->stack,
                        .min_time_s = in->min_time_s, .trace = in->trace};
    o->D = o->E / o->H;
    memcpy(o->lens, in->len.v, sizeof o->lens);
    if (!o->len_count) {
        o->len_count = CLI_COUNT(default_lens);
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
    if (in->dtype.n > MAX_DTYPES) {
        fprintf(stderr, "vkattn bench: --preset decode: --dtype takes up to %d of f32, f16, q8_0, q4_0\n", MAX_DTYPES);
        return 2;
    }
    o->dtype_count = in->dtype.n ? in->dtype.n : MAX_DTYPES;
    for (uint32_t d = 0; d < o->dtype_count; d++) o->dtypes[d] = in->dtype.n ? (vkattn_dtype)in->dtype.v[d] : all[d];
    return 0;
}

/* The points of every cache dtype, then re-projection at each context. */
static int measure(vkattn_context *ctx, decode_report *r, sample_row *rows)
{
    const decode_setup *o = &r->o;
    decode_layer l = {0};
    int rc;
    if ((rc = layer_make(ctx, o, 0, &l))) goto fail;
    for (uint32_t d = 0; d < o->dtype_count; d++)
        if ((rc = run_dtype(ctx, o, &l, o->dtypes[d], rows, &r->points[(size_t)d * o->len_count * 2]))) goto fail;
    for (uint32_t c = 0; c < o->len_count; c++) {
        double ms = -1;
        if ((rc = time_reproject(ctx, &l, o->lens[c], c == 0 ? o->warmup : 0, o->min_time_s, rows[0], &ms)))
            goto fail;
        for (uint32_t d = 0; d < o->dtype_count; d++)
            for (uint32_t s = 0; s < 2; s++) r->points[((size_t)d * o->len_count + c) * 2 + s].reproject_ms = ms;
    }
fail:
    layer_free(&l);
    return rc;
}

/* --features: at each context, decode steps of the layer with q/k norms and scaled RoPE and of the
 * same layer without, alternating (each with its own cache of the first format), so the ratio of
 * their fastest steps holds on a shared machine. */
static int measure_features(vkattn_context *ctx, const decode_setup *o, sample_row *rows, pair_point *points)
{
    decode_layer l[2];
    memset(l, 0, sizeof l);
    vkattn_kv_cache *cache[2] = {NULL, NULL};
    float *token = malloc(o->E * sizeof(float)), *out = malloc(o->E * sizeof(float));
    int rc = 0;
    BENCH_NEED(token && out);
    cli_fill_random(token, o->E, 3, 1.0f);
    for (int k = 0; k < 2 && !rc; k++) {
        if (!(rc = layer_make(ctx, o, k, &l[k])))
            rc = cache_make(ctx, o, o->dtypes[0], &cache[k]);
    }
    for (uint32_t c = 0; !rc && c < o->len_count; c++) {
        for (int k = 0; k < 2 && !rc; k++) rc = fill_to(ctx, &l[k], cache[k], o->lens[c] - 1);
        vkattn_forward_stats st;
        double wall;
        for (uint32_t i = 0; !rc && i < (o->warmup ? o->warmup : 1); i++)
            for (int k = 0; k < 2; k++) BENCH_TRY(fork_step(&l[k], cache[k], 0, token, out, &wall, &st), "a warm-up step");
        uint32_t n = 0;
        double start = cli_now();
        while (!rc && n < MAX_STEPS && (n < 3 || cli_now() - start < 2 * o->min_time_s)) {
            for (int k = 0; k < 2; k++) {
                BENCH_TRY(fork_step(&l[k], cache[k], 0, token, out, &wall, &st), "a decode step");
                rows[k][n] = wall;
            }
            n++;
        }
        points[c] = (pair_point){.ctx = o->lens[c], .steps = n, .a = bench_stats(rows[0], n),
                                    .b = bench_stats(rows[1], n)};
    }
fail:
    for (int k = 0; k < 2; k++) vkattn_kv_cache_destroy(cache[k]), layer_free(&l[k]);
    free(token);
    free(out);
    return rc;
}

/* --stack: N layers, a cache each, every sequence 0 filled to the context; tensors h[i] (1, 1, E),
 * layer i reading h[i] and writing h[i + 1], the last one h[0]. */
typedef struct stack_setup {
    uint32_t n;
    decode_layer *layers;
    vkattn_kv_cache **caches;
    vkattn_tensor **h;
    vkattn_submission *sub;
    float *x, *y;
} stack_setup;

static void stack_free(stack_setup *st)
{
    vkattn_submission_destroy(st->sub);
    for (uint32_t i = 0; i < st->n; i++) {
        if (st->h) vkattn_tensor_destroy(st->h[i]);
        if (st->caches) vkattn_kv_cache_destroy(st->caches[i]);
        if (st->layers) layer_free(&st->layers[i]);
    }
    free(st->layers), free(st->caches), free(st->h), free(st->x), free(st->y);
    *st = (stack_setup){0};
}

static int stack_make(vkattn_context *ctx, const decode_setup *o, stack_setup *st)
{
    const uint32_t dims[3] = {1, 1, o->E};
    int rc = 0;
    *st = (stack_setup){.n = o->stack, .layers = calloc(o->stack, sizeof *st->layers),
                        .caches = calloc(o->stack, sizeof *st->caches), .h = calloc(o->stack, sizeof *st->h),
                        .x = malloc(o->E * sizeof(float)), .y = malloc(o->E * sizeof(float))};
    BENCH_NEED(st->layers && st->caches && st->h && st->x && st->y);
    cli_fill_random(st->x, o->E, 3, 1.0f);
    for (uint32_t i = 0; i < st->n; i++) {
        if ((rc = layer_make(ctx, o, 0, &st->layers[i])) || (rc = cache_make(ctx, o, o->dtypes[0], &st->caches[i])))
            goto fail;
        /* no timestamps: both ways would pay for them, the blocking one per layer */
        BENCH_TRY(vkattn_layer_set_timing(st->layers[i].layer, 0), "turning stage timing off");
        BENCH_TRY(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &st->h[i]), "creating a tensor");
    }
    BENCH_TRY(vkattn_tensor_write(st->h[0], st->x, o->E * sizeof(float)), "writing a tensor");
    BENCH_TRY(vkattn_submission_create(ctx, &st->sub), "creating a submission");
    return 0;
fail:
    stack_free(st);
    return rc;
}

/* One token through the stack (submitted: one submission; else a blocking cached forward per
 * layer, host arrays), its wall time in *ms; then every sequence 0 rolled back to `len` (host
 * bookkeeping only: the token's block is not shared), so each step sees the same context. */
static int stack_step(vkattn_context *ctx, stack_setup *st, int submitted, uint32_t len, double *ms)
{
    const uint32_t seq = 0, one = 1;
    int rc = 0;
    double t0 = cli_now();
    for (uint32_t i = 0; i < st->n; i++) {
        vkattn_layer *layer = st->layers[i].layer;
        vkattn_cached_forward_desc d = {.batch = 1, .seq_ids = &seq, .new_tokens = &one};
        if (submitted) {
            d.query_tensor = st->h[i], d.output_tensor = st->h[(i + 1) % st->n];
            BENCH_TRY(vkattn_submission_add_cached(st->sub, layer, st->caches[i], &d), "adding a cached forward");
        } else {
            d.query = i % 2 ? st->y : st->x, d.output = i % 2 ? st->x : st->y;
            BENCH_TRY(vkattn_forward_cached(layer, st->caches[i], &d), "a blocking decode step");
        }
    }
    if (submitted) {
        BENCH_TRY(vkattn_submission_submit(st->sub), "submitting a token");
        BENCH_TRY(vkattn_submission_wait(st->sub), "waiting for a token");
    }
    *ms = (cli_now() - t0) * 1e3;
    for (uint32_t i = 0; i < st->n; i++) BENCH_TRY(vkattn_kv_cache_truncate(st->caches[i], 0, len), "rolling back");
fail:
    return rc;
}

/* --stack: at each context, decode steps of the stack both ways, alternating (rows[0]: submitted,
 * rows[1]: blocking). */
static int measure_stack(vkattn_context *ctx, const decode_setup *o, sample_row *rows, pair_point *points)
{
    stack_setup st;
    int rc = stack_make(ctx, o, &st);
    if (rc) return rc;
    for (uint32_t c = 0; !rc && c < o->len_count; c++) {
        const uint32_t len = o->lens[c] - 1;
        for (uint32_t i = 0; !rc && i < st.n; i++) rc = fill_to(ctx, &st.layers[i], st.caches[i], len);
        double ms;
        for (uint32_t w = 0; !rc && w < (o->warmup ? o->warmup : 1); w++)
            for (int k = 0; k < 2 && !rc; k++) rc = stack_step(ctx, &st, k == 0, len, &ms);
        uint32_t n = 0;
        double start = cli_now();
        while (!rc && n < MAX_STEPS && (n < 3 || cli_now() - start < 2 * o->min_time_s)) {
            for (int k = 0; k < 2 && !rc; k++) rc = stack_step(ctx, &st, k == 0, len, &rows[k][n]);
            n++;
        }
        if (!rc)
            points[c] = (pair_point){.ctx = o->lens[c], .steps = n, .a = bench_stats(rows[0], n),
                                     .b = bench_stats(rows[1], n)};
    }
    stack_free(&st);
    return rc;
}

/* --features or --stack: what was compared (`title`, two lines), then a line per context. */
static void print_pairs(FILE *out, const char *title, const char *const names[2], const decode_setup *o,
                        const pair_point *points)
{
    fprintf(out, "\n%s\n", title);
    char head[4][32];
    for (int k = 0; k < 2; k++) {
        snprintf(head[2 * k], sizeof head[0], "%s ms", names[k]);
        snprintf(head[2 * k + 1], sizeof head[0], "%s min", names[k]);
    }
    fprintf(out, "%6s %5s %14s %14s %14s %14s %7s\n", "ctx", "steps", head[0], head[1], head[2], head[3], "ratio");
    for (uint32_t c = 0; c < o->len_count; c++) {
        const pair_point *p = &points[c];
        fprintf(out, "%6u %5u %14.3f %14.3f %14.3f %14.3f %7.3f\n", p->ctx, p->steps, p->a.median_ms, p->a.min_ms,
                p->b.median_ms, p->b.min_ms, p->b.min_ms / p->a.min_ms);
    }
}

/* The peak once more after the measurements, keeping the better of each figure: on a machine
 * shared with other work one measurement can land in a busy second and understate the ceiling
 * the points' peak% are taken against. */
static void peak_again(vkattn_context *ctx, const bench_options *o, decode_report *r)
{
    vkattn_peak end, *p = &r->info.peak;
    r->peak_bandwidth[0] = p->bandwidth_gbs;
    if (vkattn_measure_peak(ctx, o->peak_seconds, &end) != VKATTN_OK) return;
    r->peak_bandwidth[1] = end.bandwidth_gbs;
    if (end.fp32_gflops > p->fp32_gflops) p->fp32_gflops = end.fp32_gflops, p->fp32_ms = end.fp32_ms;
    if (end.fp16_gflops > p->fp16_gflops) p->fp16_gflops = end.fp16_gflops, p->fp16_ms = end.fp16_ms;
    if (end.bandwidth_gbs > p->bandwidth_gbs) p->bandwidth_gbs = end.bandwidth_gbs, p->bandwidth_ms = end.bandwidth_ms;
}

/* Opens the context; drops the f16 cache from the default list on a device without 16-bit storage. */
static int open_device(const bench_options *o, decode_report *r, vkattn_context **ctx)
{
    int rc = cli_open_context("bench", o->device, ctx);
    if (rc) return rc;
    vkattn_context_device(*ctx, &r->info.device);
    if (!o->dtype.n && !r->info.device.storage_16bit) {
        fprintf(stderr, "vkattn bench: this device has no 16-bit storage: no f16 cache\n");
        uint32_t n = 0;
        for (uint32_t d = 0; d < r->o.dtype_count; d++)
            if (r->o.dtypes[d] != VKATTN_DTYPE_F16) r->o.dtypes[n++] = r->o.dtypes[d];
        r->o.dtype_count = n;
    }
    if (vkattn_context_validation_enabled(*ctx))
        fprintf(stderr, "vkattn bench: warning: validation is on; host times include its cost\n");
    if (!o->no_peak) {
        vkattn_status status = vkattn_measure_peak(*ctx, o->peak_seconds, &r->info.peak);
        if (status != VKATTN_OK)
            cli_fail("bench", "measuring the peak (continuing without)", status, vkattn_context_last_error(*ctx));
    }
    return 0;
}

int bench_decode(FILE *out, const bench_options *o)
{
    decode_report r = {.load = {load_average(), -1}};
    int rc = resolve(o, &r.o);
    if (rc) return rc;
    r.info = (bench_run_info){.min_time_s = o->min_time_s, .preset = "decode"};
    vkattn_context *ctx = NULL;
    sample_row *rows = NULL;
    if ((rc = open_device(o, &r, &ctx))) goto fail;
    r.points = calloc(point_count(&r), sizeof *r.points);
    rows = calloc(2 * SAMPLE_ROWS, sizeof *rows);
    if (!r.points || !rows) {
        rc = cli_fail("bench", "allocating", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto fail;
    }
    if ((rc = measure(ctx, &r, rows))) goto fail;
    if (r.o.features && !(r.features = calloc(r.o.len_count, sizeof *r.features))) {
        rc = cli_fail("bench", "allocating", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto fail;
    }
    if (r.features && (rc = measure_features(ctx, &r.o, rows, r.features))) goto fail;
    if (r.o.stack && !(r.stack = calloc(r.o.len_count, sizeof *r.stack))) {
        rc = cli_fail("bench", "allocating", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto fail;
    }
    if (r.stack && (rc = measure_stack(ctx, &r.o, rows, r.stack))) goto fail;
    if (r.info.peak.bandwidth_gbs > 0) peak_again(ctx, o, &r);
    for (size_t i = 0; i < point_count(&r); i++)
        if (r.info.peak.bandwidth_gbs > 0) r.points[i].peak_pct = 100.0 * r.points[i].cache_gbs / r.info.peak.bandwidth_gbs;
    r.load[1] = load_average();
    print_table(out, &r);
    if (r.features) {
        char title[256];
        snprintf(title, sizeof title, "features: the same layer with per-head q/k RMS norms and llama3 RoPE scaling "
                 "(factor 8) against\n          without, %s cache, steps alternating; ratio: fastest featured step / "
                 "fastest plain one", vkattn_dtype_name(r.o.dtypes[0]));
        print_pairs(out, title, (const char *[]){"plain", "featured"}, &r.o, r.features);
    }
    if (r.stack) {
        char title[256];
        snprintf(title, sizeof title, "stack: a decode step of %u layers (a %s cache each): one submission per token on "
                 "device tensors\n       against one blocking cached forward per layer on host arrays, steps "
                 "alternating; ratio: blocking / submitted", r.o.stack, vkattn_dtype_name(r.o.dtypes[0]));
        print_pairs(out, title, (const char *[]){"submitted", "blocking"}, &r.o, r.stack);
    }
    if (o->json && write_json(o->json, &r)) rc = 1;
fail:
    free(r.features);
    free(r.stack);
    free(rows);
    free(r.points);
    vkattn_context_destroy(ctx);
    return rc;
}
