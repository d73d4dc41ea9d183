/* vkattn bench: forwards over a sweep of configurations, timed per stage with GPU timestamps,
 * reported against the device's measured peak and the CPU path. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

#define MAX_CONFIGS 512
#define MAX_REPEATS 1000

/* A named sweep: the lists it sets (flags given explicitly replace them). */
typedef struct bench_preset {
    const char *name, *summary;
    cli_list batch, len, embed, heads, mask, path;
    int no_cpu;
} bench_preset;

static const bench_preset presets[] = {
    {"default", "self-attention E=512 H=8, L=S from 128 to 1024, both paths (about a minute on lavapipe)",
     {1, {1}}, {4, {128, 256, 512, 1024}}, {1, {512}}, {1, {8}}, {1, {BENCH_MASK_NONE}},
     {2, {VKATTN_PATH_UNFUSED, VKATTN_PATH_FUSED}}, 0},
    {"quick", "tiny shapes, a few seconds (smoke test)",
     {1, {1}}, {2, {16, 64}}, {1, {64}}, {1, {4}}, {2, {BENCH_MASK_NONE, BENCH_MASK_CAUSAL}}, {1, {VKATTN_PATH_UNFUSED}}, 0},
    {"small", "L=S from 1 to 16 (dispatch and host overhead)",
     {1, {1}}, {5, {1, 2, 4, 8, 16}}, {1, {256}}, {1, {4}}, {1, {BENCH_MASK_NONE}},
     {2, {VKATTN_PATH_UNFUSED, VKATTN_PATH_FUSED}}, 0},
    {"projections", "E=512 and 1024 at L=1024 (the projection matmuls)",
     {1, {1}}, {1, {1024}}, {2, {512, 1024}}, {1, {8}}, {1, {BENCH_MASK_NONE}}, {1, {VKATTN_PATH_UNFUSED}}, 1},
    {"gpu", "the GPU day's prefill: E=4096 H=32 (D=128), L=S from 512 to 8192, causal and not, the fused path",
     {1, {1}}, {5, {512, 1024, 2048, 4096, 8192}}, {1, {4096}}, {1, {32}}, {2, {BENCH_MASK_NONE, BENCH_MASK_CAUSAL}},
     {1, {VKATTN_PATH_FUSED}}, 1},
    {"long", "E=1024 H=16, L=S from 1024 to 16384 (the fused path)",
     {1, {1}}, {5, {1024, 2048, 4096, 8192, 16384}}, {1, {1024}}, {1, {16}}, {1, {BENCH_MASK_NONE}},
     {1, {VKATTN_PATH_FUSED}}, 1},
};

#define B(field) offsetof(bench_options, field)
static const int k_paths[] = {VKATTN_PATH_UNFUSED, VKATTN_PATH_FUSED};
static const int k_dtypes[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};

/* The table's groups: options of both kinds of run, of the sweep only, of --preset decode only. */
enum { BOTH, SWEEP, DECODE };
static const cli_option k_both[] = {
    {"--preset", "NAME", "a named sweep (below), or decode", CLI_TEXT, B(preset)},
    {"--len", "L,..", "sequence lengths L (= S without --kv-len); decode: contexts (default 512 to 16384)",
     CLI_LIST, B(len)},
    {"--embed", "E,..", "embedding widths; decode: one (default 512)", CLI_LIST, B(embed)},
    {"--heads", "H,..", "heads; decode: one (default 8)", CLI_LIST, B(heads)},
    {"--dtype", "f32|f16|q8_0|q4_0", "comma-separated: the layer's storage and its query, key and output tensors', f32 or "
     "f16 (default f32); decode: the KV cache formats (default all four)", CLI_LIST, B(dtype), .values = k_dtypes},
    {"--min-time", "SEC", "repeat each configuration (decode: each point) at least this long, and 3 times",
     CLI_NUMBER, B(min_time_s), 0, 3600},
    {"--warmup", "N", "untimed runs before each", CLI_U32, B(warmup), 0},
    {"--no-peak", NULL, "do not measure the device's peak (no roofline percentages)", CLI_FLAG, B(no_peak)},
    {"--peak-seconds", "SEC", "time the peak microkernels take", CLI_NUMBER, B(peak_seconds), 0, 3600},
    CLI_DEVICE_OPTION(bench_options, device),
    {"--json", "FILE", "the results as JSON (checked before the run, as --csv and --plot are)", CLI_TEXT, B(json)},
    {"--trace", NULL, "print each configuration's plan (steps, kernels, grids, loop trips) before timing it "
     "(decode: each point's decoding step)", CLI_FLAG, B(trace)},
};
static const cli_option k_sweep[] = {
    {"--batch", "B,..", "batch sizes", CLI_LIST, B(batch)},
    {"--kv-len", "S,..", "key lengths (cross-attention; default S = L)", CLI_LIST, B(kv_len)},
    {"--mask", "none|causal|padding|causal+padding|float-causal",
     "comma-separated masks (padding: the last quarter of the keys; float-causal: the causal mask as "
     "a float attn_mask, -inf above the diagonal)",
     CLI_LIST, B(mask)},
    {"--path", "unfused|fused", "comma-separated paths", CLI_LIST, B(path), .values = k_paths},
    {"--no-cpu", NULL, "do not time the CPU reference path", CLI_FLAG, B(no_cpu)},
    {"--cpu-max-gflop", "X", "time the CPU path only for configurations up to X GFLOP", CLI_NUMBER, B(cpu_max_gflop),
     0, 1e9},
    {"--head-mask", "m.npy", "a bool (H) mask of the heads to keep, applied to every configuration", CLI_TEXT,
     B(head_mask)},
    {"--csv", "FILE", "the results as CSV", CLI_TEXT, B(csv)},
    {"--plot", "FILE.png|FILE.svg", "GFLOP/s against L, as PNG or SVG by the file name", CLI_TEXT, B(plot)},
};
static const cli_option k_decode[] = {
    {"--kv-heads", "N", "key/value heads of the layer (default 2)", CLI_U32, B(kv_heads), 1},
    {"--window", "W", "a sliding window of W keys: each step reads at most W of them", CLI_U32, B(window), 1},
    {"--features", NULL, "also time, at each context, the layer with per-head q/k RMS norms and llama3 RoPE scaling "
     "against the same layer without them (steps alternating, the first cache format), and print the ratio",
     CLI_FLAG, B(features)},
    {"--stack", "N", "also time, at each context, a decode step of N layers (a cache each, the first format): one "
     "submission per token on device tensors against one blocking cached forward per layer on host arrays, steps "
     "alternating, and print the ratio", CLI_U32, B(stack), 1},
    {"--no-mqa", NULL, "no effect: what it skipped, the 32768-token MQA comparison, is a recipe in "
     "docs/PERFORMANCE.md", CLI_FLAG, B(no_mqa)},
    {"--no-window", NULL, "no effect: what it skipped, the 32768-token window comparison, is --window and a recipe "
     "in docs/PERFORMANCE.md", CLI_FLAG, B(no_window)},
};

static const char k_bench_notes[] =
    "Lists are comma-separated; the sweep is their product. Each configuration warms up, then repeats\n"
    "until --min-time and 3 runs. --preset decode is no sweep: one token at a time through the paged KV\n"
    "cache at each context, in each cache format, kv_splits auto and 1, beside re-projecting the prefix\n"
    "(layer E=512 H=8 H_kv=2, RoPE). vkattn bench --compare OLD.json NEW.json prints the speed ratios\n"
    "of two --json files (two sweeps, or two decode runs: point by point, with their stages).\n" CLI_EXIT_HELP "presets:\n";

/* The options, then what --preset decode and the sweep refuse of each other's. */
static int parse(int argc, char **argv, bench_options *o)
{
    cli_command c = {"bench", "[--preset NAME] [options]  |  vkattn bench --compare OLD.json NEW.json", k_bench_notes,
                     {[BOTH] = {NULL, k_both, CLI_COUNT(k_both), o},
                      [SWEEP] = {"the sweep", k_sweep, CLI_COUNT(k_sweep), o},
                      [DECODE] = {"--preset decode", k_decode, CLI_COUNT(k_decode), o}}};
    int rc = cli_parse(&c, argc, argv);
    if (rc < 0) {
        for (size_t i = 0; i < CLI_COUNT(presets); i++) printf("  %-12s %s\n", presets[i].name, presets[i].summary);
        printf("  %-12s decoding through the KV cache (above)\n", "decode");
    }
    if (rc) return rc;
    const char *other;
    if (o->preset && strcmp(o->preset, "decode") == 0) {
        other = cli_group_given(&c, SWEEP) ? cli_group_given(&c, SWEEP)
                : o->embed.n > 1           ? "--embed with more than one value"
                : o->heads.n > 1           ? "--heads with more than one value"
                                           : NULL;
        if (other) fprintf(stderr, "vkattn bench: --preset decode takes no %s (see vkattn bench --help)\n", other);
        return other ? CLI_EXIT_USAGE : 0;
    }
    if ((other = cli_group_given(&c, DECODE))) {
        fprintf(stderr, "vkattn bench: %s is an option of --preset decode\n", other);
        return CLI_EXIT_USAGE;
    }
    for (uint32_t i = 0; i < o->dtype.n; i++)
        if (o->dtype.v[i] != VKATTN_DTYPE_F32 && o->dtype.v[i] != VKATTN_DTYPE_F16) {
            fprintf(stderr, "vkattn bench: --dtype %s is a KV cache format: it goes with --preset decode (the sweep "
                            "takes f32, f16)\n", vkattn_dtype_name((vkattn_dtype)o->dtype.v[i]));
            return CLI_EXIT_USAGE;
        }
    return 0;
}

/* Fills the lists the flags left empty from the preset (or the default preset). */
static int apply_preset(bench_options *o)
{
    const char *name = o->preset ? o->preset : "default";
    const bench_preset *p = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0) p = &presets[i];
    if (!p) {
        fprintf(stderr, "vkattn bench: unknown preset \"%s\" (see vkattn bench --help)\n", name);
        return 2;
    }
    if (!o->batch.n) o->batch = p->batch;
    if (!o->len.n) o->len = p->len;
    if (!o->embed.n) o->embed = p->embed;
    if (!o->heads.n) o->heads = p->heads;
    if (!o->mask.n) o->mask = p->mask;
    if (!o->path.n) o->path = p->path;
    if (!o->dtype.n) o->dtype = (cli_list){1, {VKATTN_DTYPE_F32}};
    o->no_cpu |= p->no_cpu;
    return 0;
}

/* The product of the lists, in a stable order (L varies fastest, for plots). */
static uint32_t expand(const bench_options *o, bench_config *out)
{
    uint32_t n = 0;
    const cli_list *kv = o->kv_len.n ? &o->kv_len : NULL;
    for (uint32_t p = 0; p < o->path.n; p++)
        for (uint32_t d = 0; d < o->dtype.n; d++)
            for (uint32_t m = 0; m < o->mask.n; m++)
                for (uint32_t e = 0; e < o->embed.n; e++)
                    for (uint32_t h = 0; h < o->heads.n; h++)
                        for (uint32_t b = 0; b < o->batch.n; b++)
                            for (uint32_t s = 0; s < (kv ? kv->n : 1); s++)
                                for (uint32_t l = 0; l < o->len.n && n < MAX_CONFIGS; l++) {
                                    bench_config c = {o->batch.v[b], o->len.v[l], kv ? kv->v[s] : o->len.v[l],
                                                      o->embed.v[e], o->heads.v[h], (bench_mask)o->mask.v[m],
                                                      (vkattn_path)o->path.v[p], (vkattn_dtype)o->dtype.v[d]};
                                    out[n++] = c;
                                }
    return n;
}

bench_time bench_stats(double *v, uint32_t n)
{
    double median = cli_median(v, n);
    return (bench_time){median, v[0]};
}

void bench_steps_add(bench_steps *s, const vkattn_layer *layer)
{
    vkattn_step_time t[BENCH_MAX_STEPS];
    uint32_t n = 0;
    if (vkattn_layer_last_step_times(layer, t, BENCH_MAX_STEPS, &n) != VKATTN_OK || n == 0) return;
    if (n != s->count) *s = (bench_steps){.count = n};
    for (uint32_t k = 0; k < n && k < BENCH_MAX_STEPS; k++)
        if (s->runs == 0 || t[k].ms < s->best[k].ms) s->best[k] = t[k];
    s->runs++;
}

void bench_steps_print(FILE *out, const char *what, const bench_steps *s)
{
    if (!s->runs) return;
    fprintf(out, "  step times (ms, fastest of %u forward%s%s%s):", s->runs, s->runs == 1 ? "" : "s", what ? "; " : "",
            what ? what : "");
    for (uint32_t k = 0; k < s->count && k < BENCH_MAX_STEPS; k++)
        fprintf(out, "%s %u %s %.4f", k ? "," : "", k + 1, s->best[k].kernel, s->best[k].ms);
    if (s->count > BENCH_MAX_STEPS) fprintf(out, " (%u steps; the first %d)", s->count, BENCH_MAX_STEPS);
    fprintf(out, "\n");
}

/* Host data and device objects of one configuration. */
typedef struct bench_case {
    float *weights, *query, *key;
    uint8_t *kpm;
    float *attn_mask; /* float-causal's (L,S) */
    vkattn_layer_desc desc;
    vkattn_weights w;
    vkattn_layer *layer;
    vkattn_tensor *tq, *tk, *tkpm, *tmask, *tout;
    vkattn_forward_desc f;
} bench_case;

static void free_case(bench_case *bc)
{
    vkattn_tensor_destroy(bc->tq), vkattn_tensor_destroy(bc->tk), vkattn_tensor_destroy(bc->tkpm);
    vkattn_tensor_destroy(bc->tmask), vkattn_tensor_destroy(bc->tout);
    vkattn_layer_destroy(bc->layer);
    free(bc->weights), free(bc->query), free(bc->key), free(bc->kpm), free(bc->attn_mask);
}

/* Writes `count` fp32 values into a tensor of F32 or F16 (rounded: vkattn_dtype_from_f32). */
static vkattn_status write_values(vkattn_tensor *t, const float *x, size_t count)
{
    const vkattn_dtype dtype = vkattn_tensor_dtype(t);
    const size_t bytes = vkattn_dtype_row_size(dtype, count);
    void *converted = malloc(bytes);
    if (!converted) return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    vkattn_status status = vkattn_dtype_from_f32(dtype, x, count, converted);
    if (status == VKATTN_OK) status = vkattn_tensor_write(t, converted, bytes);
    free(converted);
    return status;
}

/* Random weights and inputs (the last quarter of the keys padded with a padding mask), the layer
 * and the device tensors of one configuration; 0, or 1 after a message (free_case either way). */
static int make_case(vkattn_context *ctx, const bench_config *c, bench_case *bc)
{
    const uint32_t B = c->batch, L = c->query_len, S = c->key_len, E = c->embed_dim;
    const size_t ee = (size_t)E * E, wn = 4 * ee + 4 * E;
    int rc = 0;
    bc->weights = malloc(wn * sizeof(float));
    bc->query = malloc((size_t)B * L * E * sizeof(float));
    if (S != L) bc->key = malloc((size_t)B * S * E * sizeof(float));
    if (c->mask & BENCH_MASK_PADDING) bc->kpm = calloc((size_t)B * S, 1);
    if (c->mask & BENCH_MASK_FLOAT_CAUSAL) bc->attn_mask = malloc((size_t)L * S * sizeof(float));
    BENCH_NEED(bc->weights && bc->query && (S == L || bc->key) && (!(c->mask & BENCH_MASK_PADDING) || bc->kpm) &&
               (!(c->mask & BENCH_MASK_FLOAT_CAUSAL) || bc->attn_mask));
    cli_fill_random(bc->weights, wn, 1, sqrtf(3.0f / E));
    cli_fill_random(bc->query, (size_t)B * L * E, 2, 1.0f);
    if (bc->key) cli_fill_random(bc->key, (size_t)B * S * E, 3, 1.0f);
    for (size_t b = 0; bc->kpm && b < B; b++)
        for (size_t j = S - S / 4; j < S; j++) bc->kpm[b * S + j] = 1;
    for (size_t i = 0; bc->attn_mask && i < L; i++) /* top-left aligned, as `causal` is */
        for (size_t j = 0; j < S; j++) bc->attn_mask[i * S + j] = j > i ? -INFINITY : 0.0f;
    bc->desc = (vkattn_layer_desc){.embed_dim = E, .num_heads = c->heads, .storage = c->dtype,
                                   .head_mask = c->head_mask};
    bc->w = (vkattn_weights){.in_proj_weight = bc->weights, .in_proj_bias = bc->weights + 3 * ee,
                             .out_proj_weight = bc->weights + 3 * ee + 3 * E, .out_proj_bias = bc->weights + 4 * ee + 3 * E};
    BENCH_TRY(vkattn_layer_create(ctx, &bc->desc, &bc->w, &bc->layer), "creating the layer");
    /* The device tensors in the layer's storage, as an fp16 model's activations are (and as the cost
     * model counts their bytes): an f16 layer's projections read 8 fp16 values per 16-byte load, not 4
     * fp32 ones (the GPU day compares them with torch's fp16 matmul). The storage in use: a device
     * without 16-bit storage keeps an f16 layer in fp32. */
    vkattn_layer_desc used;
    vkattn_layer_get_desc(bc->layer, &used);
    const vkattn_dtype io = used.storage;
    bc->desc.storage = io; /* the cost below counts the bytes of the storage in use */
    BENCH_TRY(vkattn_tensor_create(ctx, io, 3, (uint32_t[]){B, L, E}, &bc->tq), "creating the query");
    BENCH_TRY(vkattn_tensor_create(ctx, io, 3, (uint32_t[]){B, L, E}, &bc->tout), "creating the output");
    BENCH_TRY(write_values(bc->tq, bc->query, (size_t)B * L * E), "writing the query");
    if (bc->key) {
        BENCH_TRY(vkattn_tensor_create(ctx, io, 3, (uint32_t[]){B, S, E}, &bc->tk), "creating the key");
        BENCH_TRY(write_values(bc->tk, bc->key, (size_t)B * S * E), "writing the key");
    }
    if (bc->kpm) {
        BENCH_TRY(vkattn_tensor_create(ctx, VKATTN_DTYPE_BOOL, 2, (uint32_t[]){B, S}, &bc->tkpm), "creating the mask");
        BENCH_TRY(vkattn_tensor_write(bc->tkpm, bc->kpm, (size_t)B * S), "writing the mask");
    }
    if (bc->attn_mask) {
        BENCH_TRY(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){L, S}, &bc->tmask),
                  "creating the attn_mask");
        BENCH_TRY(vkattn_tensor_write(bc->tmask, bc->attn_mask, (size_t)L * S * sizeof(float)), "writing the attn_mask");
    }
    bc->f = (vkattn_forward_desc){.query = bc->tq, .key = bc->tk, .output = bc->tout, .key_padding_mask = bc->tkpm,
                                  .attn_mask = bc->tmask, .causal = (c->mask & BENCH_MASK_CAUSAL) != 0,
                                  .path = c->path};
fail:
    return rc;
}

/* The same forward from host arrays, for the CPU path's time. */
static vkattn_host_forward_desc host_forward(const bench_case *bc, const bench_config *c, float *output)
{
    return (vkattn_host_forward_desc){.batch = c->batch, .query_len = c->query_len,
                                      .key_len = bc->key ? c->key_len : 0, .query = bc->query, .key = bc->key,
                                      .key_padding_mask = bc->kpm, .attn_mask = bc->attn_mask,
                                      .causal = bc->f.causal, .output = output,
                                      .path = c->path};
}

/* Warm-up, then forwards until min_time and 3 runs: GPU, host and per-stage times into `r`. */
static int time_case(vkattn_context *ctx, const bench_options *o, const bench_case *bc, bench_result *r)
{
    int rc = 0;
    /* Samples per repeat: whole forward on the GPU, on the host, their difference, each stage. */
    double(*samples)[MAX_REPEATS] = NULL;
    for (uint32_t i = 0; i < o->warmup; i++) BENCH_TRY(vkattn_forward(bc->layer, &bc->f), "warm-up forward");
    BENCH_TRY(vkattn_layer_set_timing(bc->layer, 1), "turning stage timing on");
    if (!(samples = calloc(3 + VKATTN_STAGE_COUNT, sizeof *samples))) {
        rc = cli_fail("bench", "allocating samples", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto fail;
    }
    vkattn_forward_stats st = {0};
    vkattn_status status = VKATTN_OK;
    bench_steps steps = {0};
    uint32_t n = 0;
    for (double start = cli_now(); n < MAX_REPEATS && (n < 3 || cli_now() - start < o->min_time_s); n++) {
        double t0 = cli_now();
        if ((status = vkattn_forward(bc->layer, &bc->f)) != VKATTN_OK) break;
        double wall_ms = (cli_now() - t0) * 1e3;
        vkattn_layer_last_stats(bc->layer, &st);
        if (o->trace) bench_steps_add(&steps, bc->layer);
        samples[0][n] = st.gpu_ms, samples[1][n] = wall_ms, samples[2][n] = wall_ms - st.gpu_ms;
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) samples[3 + s][n] = st.stage_ms[s];
    }
    if (status == VKATTN_OK) {
        *r = (bench_result){.config = r->config, .cpu_ms = -1, .repeats = n, .path_ran = st.path,
                            .dispatches = st.dispatches, .submits = st.submits, .workspace_bytes = st.workspace_bytes,
                            .gpu = bench_stats(samples[0], n), .host = bench_stats(samples[1], n),
                            .host_overhead = bench_stats(samples[2], n)};
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) r->stages[s].time = bench_stats(samples[3 + s], n);
        if (o->trace) bench_steps_print(stdout, NULL, &steps);
    }
    BENCH_TRY(status, "forward");
fail:
    free(samples);
    return rc;
}

static int run_config(vkattn_context *ctx, const bench_options *o, const bench_config *c, bench_result *r)
{
    bench_case bc = {0};
    *r = (bench_result){.config = *c, .cpu_ms = -1};
    int rc = make_case(ctx, c, &bc);
    if (!rc && o->trace) rc = cli_print_tensor_plan("bench", ctx, bc.layer, &bc.f); /* the forward timed */
    if (!rc) rc = time_case(ctx, o, &bc, r);
    vkattn_cost cost;
    vkattn_status status = VKATTN_OK;
    if (!rc && (status = vkattn_forward_cost(&bc.desc, c->batch, c->query_len, bc.key ? c->key_len : 0, r->path_ran,
                                             VKATTN_WEIGHTS_NONE, &cost)) != VKATTN_OK)
        rc = cli_fail("bench", "computing the cost", status, vkattn_context_last_error(ctx));
    if (!rc) {
        r->flops = cost.total_flops, r->bytes = cost.total_bytes;
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
            bench_stage_result *st = &r->stages[s];
            st->flops = cost.flops[s], st->bytes = cost.bytes[s];
            st->present = st->time.median_ms > 0 || st->flops > 0 || st->bytes > 0;
        }
    }
    if (!rc && !o->no_cpu && cost.total_flops <= o->cpu_max_gflop * 1e9) {
        float *out = malloc((size_t)c->batch * c->query_len * c->embed_dim * sizeof(float));
        vkattn_host_forward_desc h = host_forward(&bc, c, out);
        h.path = VKATTN_PATH_AUTO;
        bc.desc.storage = VKATTN_DTYPE_F32;
        double t0 = cli_now();
        vkattn_error err = {0};
        status = out ? vkattn_reference_forward(&bc.desc, &bc.w, &h, &err) : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
        if (status == VKATTN_OK) r->cpu_ms = (cli_now() - t0) * 1e3;
        else cli_fail("bench", "CPU path", status, err.message);
        free(out);
    }
    free_case(&bc);
    return rc;
}

/* --head-mask: a bool (H) .npy applied to every configuration, whose heads must all be H. */
static int attach_head_mask(const char *path, vkattn_array *m, bench_config *configs, uint32_t count)
{
    vkattn_error err = {0};
    vkattn_status s = vkattn_npy_read(path, m, &err);
    if (s != VKATTN_OK) return cli_fail_input("bench", "--head-mask", path, CLI_FILE_NPY, s, err.message);
    uint32_t active = 0;
    for (size_t h = 0; m->dtype == VKATTN_DTYPE_BOOL && m->rank == 1 && h < m->dims[0]; h++)
        active += ((const uint8_t *)m->data)[h] != 0;
    for (uint32_t i = 0; i < count; i++) {
        if (m->dtype != VKATTN_DTYPE_BOOL || m->rank != 1 || m->dims[0] != configs[i].heads || active == 0) {
            /* what the file holds: its own dtype, not the one the reader converted it to */
            char dtype[64], shape[128];
            int loads_as;
            if (!cli_npy_stored_dtype(path, dtype, sizeof dtype, &loads_as)) /* a pipe: what it loaded as */
                snprintf(dtype, sizeof dtype, "what loads as %s", vkattn_dtype_name(m->dtype));
            cli_format_shape(shape, sizeof shape, m->rank, m->dims);
            cli_error("bench", "--head-mask %s holds %s of shape %s%s; the head mask must be bool (|b1) of shape "
                      "(%u), one entry per head, keeping at least one\n", path, dtype, shape,
                      m->dtype == VKATTN_DTYPE_BOOL && !active ? " keeping no head" : "", configs[i].heads);
            return 1;
        }
        configs[i].head_mask = m->data;
        configs[i].active_heads = active;
    }
    return 0;
}

/* Times every configuration, then prints and writes what ran. */
static int sweep(vkattn_context *ctx, const bench_options *o, const bench_config *configs, uint32_t count)
{
    bench_run_info info = {.min_time_s = o->min_time_s, .preset = o->preset};
    vkattn_context_device(ctx, &info.device);
    if (vkattn_context_validation_enabled(ctx))
        fprintf(stderr, "vkattn bench: warning: validation is on; host overheads include its cost\n");
    if (!o->no_peak) {
        vkattn_status status = vkattn_measure_peak(ctx, o->peak_seconds, &info.peak);
        if (status != VKATTN_OK) cli_fail("bench", "measuring the peak (continuing without)", status,
                                          vkattn_context_last_error(ctx));
    }
    bench_result *results = calloc(count ? count : 1, sizeof *results);
    if (!results) return cli_fail("bench", "allocating results", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
    uint32_t done = 0;
    int rc = 0, progress = isatty(fileno(stderr));
    double start = cli_now();
    for (uint32_t i = 0; i < count; i++) {
        char key[128];
        bench_config_key(&configs[i], key, sizeof key);
        if (progress && cli_now() - start > 2.0) fprintf(stderr, "\r\033[K[%u/%u] %s", i + 1, count, key);
        if (run_config(ctx, o, &configs[i], &results[done]) == 0) bench_derive(&results[done++], &info.peak);
        else rc = 1;
    }
    if (progress && cli_now() - start > 2.0) fprintf(stderr, "\r\033[K");
    bench_print_table(stdout, &info, results, done);
    if (o->json && bench_write_json(o->json, &info, results, done)) rc = 1;
    if (o->csv && bench_write_csv(o->csv, &info, results, done)) rc = 1;
    if (o->plot && bench_write_plot(o->plot, &info, results, done)) rc = 1;
    free(results);
    return rc;
}

int cmd_bench(int argc, char **argv)
{
    if (argc >= 1 && strcmp(argv[0], "--compare") == 0) {
        if (argc != 3) {
            fprintf(stderr, "vkattn bench: --compare takes exactly two files: OLD.json NEW.json\n");
            return 2;
        }
        return bench_compare(stdout, argv[1], argv[2]);
    }
    bench_options o = {.min_time_s = 0.5, .peak_seconds = 1.0, .cpu_max_gflop = 20.0, .warmup = 1};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    /* Output problems are said now, not after a run of minutes. */
    if (o.plot && !bench_plot_path_ok(o.plot)) {
        fprintf(stderr, "vkattn bench: --plot %s: give %s (the format)\n", o.plot, BENCH_PLOT_NAMES);
        return 2;
    }
    if ((rc = cli_check_distinct_outputs("bench", (const char *[]){"--json", "--csv", "--plot"},
                                         (const char *[]){o.json, o.csv, o.plot}, 3)) ||
        (rc = cli_check_output("bench", "--json", o.json)) || (rc = cli_check_output("bench", "--csv", o.csv)) ||
        (rc = cli_check_output("bench", "--plot", o.plot)))
        return rc;
    if (o.preset && strcmp(o.preset, "decode") == 0) return bench_decode(stdout, &o);
    if ((rc = apply_preset(&o))) return rc;
    bench_config *configs = malloc(MAX_CONFIGS * sizeof *configs);
    if (!configs) return cli_fail("bench", "allocating", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
    uint32_t count = expand(&o, configs);
    vkattn_array mask = {0};
    vkattn_context *ctx = NULL;
    if (!(rc = cli_open_context("bench", o.device, &ctx)) &&
        !(o.head_mask && (rc = attach_head_mask(o.head_mask, &mask, configs, count))))
        rc = sweep(ctx, &o, configs, count);
    vkattn_array_free(&mask);
    free(configs);
    vkattn_context_destroy(ctx);
    return rc;
}
