/* vkattn bench: forwards over a sweep of configurations, timed per stage with GPU timestamps,
 * reported against the device's measured peak and the CPU path. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

#define MAX_LIST 16
#define MAX_CONFIGS 512
#define MAX_REPEATS 1000
_Static_assert(MAX_LIST <= BENCH_DECODE_MAX_LENS, "--len of --preset decode takes a list");

typedef struct u32_list {
    uint32_t n, v[MAX_LIST];
} u32_list;

typedef struct bench_options {
    const char *device, *json, *csv, *plot, *preset, *head_mask_path;
    vkattn_array head_mask; /* loaded from --head-mask */
    u32_list batch, len, kv_len, embed, heads, mask, path, dtype;
    double min_time_s, peak_seconds, cpu_max_gflop;
    uint32_t warmup, kv_heads;
    int no_cpu, no_peak, trace, no_mqa, no_window;
    int cpu_max_gflop_given;
} bench_options;

/* A named sweep: the lists it sets (flags given explicitly replace them). */
typedef struct bench_preset {
    const char *name, *summary;
    u32_list batch, len, embed, heads, mask, path;
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
    {"long", "E=1024 H=16, L=S from 1024 to 16384 (the fused path)",
     {1, {1}}, {5, {1024, 2048, 4096, 8192, 16384}}, {1, {1024}}, {1, {16}}, {1, {BENCH_MASK_NONE}},
     {1, {VKATTN_PATH_FUSED}}, 1},
};

static void bench_usage(FILE *out)
{
    fprintf(out,
            "usage: vkattn bench [--preset NAME] [--batch B,..] [--len L,..] [--kv-len S,..] [--embed E,..]\n"
            "                    [--heads H,..] [--mask none,causal,padding,causal+padding] [--path unfused,fused]\n"
            "                    [--dtype f32,f16] [--min-time SEC] [--warmup N] [--no-cpu] [--cpu-max-gflop X]\n"
            "                    [--no-peak] [--peak-seconds SEC] [--device N|NAME] [--head-mask m.npy] [--trace]\n"
            "                    [--json FILE] [--csv FILE] [--plot FILE.png|FILE.svg]\n"
            "       vkattn bench --preset decode [--len CTX,..] [--embed E] [--heads H] [--kv-heads H_kv]\n"
            "                    [--dtype f32,f16,q8_0,q4_0] [--min-time SEC] [--warmup N] [--no-mqa]\n"
            "                    [--no-window] [--no-peak] [--peak-seconds SEC] [--device N|NAME] [--json FILE]\n"
            "       vkattn bench --compare OLD.json NEW.json\n"
            "  Lists are comma-separated; the sweep is their product. Without --kv-len, S = L (self-attention).\n"
            "  Each configuration warms up, then repeats until --min-time seconds (default 0.5) and 3 runs.\n"
            "  --trace prints each configuration's plan (its steps, kernels, grids, loop trips) before timing it.\n"
            "  --json, --csv and --plot are checked before the sweep.\n"
            CLI_EXIT_HELP
            "presets:\n");
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        fprintf(out, "  %-12s %s\n", presets[i].name, presets[i].summary);
    fprintf(out,
            "  %-12s not a sweep: decoding one token at a time through the paged KV cache at contexts 512 to\n"
            "  %-12s 16384 (--len), cache f32, f16, q8_0 and q4_0 (--dtype), kv_splits auto and 1, against\n"
            "  %-12s re-projecting the prefix; then the decode targets, met or not. Layer E=512 H=8 H_kv=2\n"
            "  %-12s (--embed, --heads, --kv-heads); several minutes on lavapipe, of which --no-mqa skips\n"
            "  %-12s target (d), a 32768-token MQA cache, and --no-window target (f), a 32768-token cache\n"
            "  %-12s read through a sliding window\n",
            "decode", "", "", "", "", "");
}

/* Parses the value of `option`, "a,b,c", through `item` (returns 0 on success). */
static int parse_list(cli_args *a, const char *option, u32_list *out, int (*item)(const char *, uint32_t *))
{
    const char *text = cli_value(a, option);
    if (!text) return 2;
    char buf[256];
    if (strlen(text) >= sizeof buf) {
        fprintf(stderr, "vkattn bench: %s list too long\n", option);
        return 2;
    }
    strcpy(buf, text);
    out->n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (out->n == MAX_LIST) {
            fprintf(stderr, "vkattn bench: %s takes at most %d values\n", option, MAX_LIST);
            return 2;
        }
        if (item(tok, &out->v[out->n])) {
            fprintf(stderr, "vkattn bench: %s: bad value \"%s\"\n", option, tok);
            return 2;
        }
        out->n++;
    }
    if (out->n == 0) {
        fprintf(stderr, "vkattn bench: %s needs at least one value\n", option);
        return 2;
    }
    return 0;
}

static int item_u32(const char *s, uint32_t *out)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '-' || *end || end == s || v == 0 || v > UINT32_MAX) return 1;
    *out = (uint32_t)v;
    return 0;
}

static int item_mask(const char *s, uint32_t *out)
{
    for (uint32_t m = BENCH_MASK_NONE; m <= BENCH_MASK_CAUSAL_PADDING; m++)
        if (strcmp(s, bench_mask_name((bench_mask)m)) == 0) return *out = m, 0;
    return 1;
}

static int item_path(const char *s, uint32_t *out)
{
    if (strcmp(s, "unfused") == 0) return *out = VKATTN_PATH_UNFUSED, 0;
    if (strcmp(s, "fused") == 0) return *out = VKATTN_PATH_FUSED, 0;
    return 1;
}

/* f32, f16, and the KV cache block formats q8_0, q4_0 (--preset decode only, checked later: the
 * preset may come after --dtype). */
static int item_dtype(const char *s, uint32_t *out)
{
    vkattn_dtype dtype;
    if (cli_storage_from_name(s, &dtype) == 0) return *out = (uint32_t)dtype, 0;
    if (strcmp(s, vkattn_dtype_name(VKATTN_DTYPE_Q8_0)) == 0) return *out = VKATTN_DTYPE_Q8_0, 0;
    if (strcmp(s, vkattn_dtype_name(VKATTN_DTYPE_Q4_0)) == 0) return *out = VKATTN_DTYPE_Q4_0, 0;
    return 1;
}

/* The value of `option`, a number in [0, max]; `unit` names it in the message ("seconds", "GFLOP"). */
static int parse_number(cli_args *a, const char *option, double max, const char *unit, double *out)
{
    const char *text = cli_value(a, option);
    if (!text) return 2;
    char *end;
    double v = strtod(text, &end);
    if (*end || end == text || !(v >= 0 && v <= max)) {
        fprintf(stderr, "vkattn bench: %s expects %s in [0, %g], got \"%s\"\n", option, unit, max, text);
        return 2;
    }
    *out = v;
    return 0;
}

/* The value of `option` as text into *out: 0, or 2 when it is missing. */
static int parse_text(cli_args *a, const char *option, const char **out)
{
    return (*out = cli_value(a, option)) ? 0 : 2;
}

static int parse(int argc, char **argv, bench_options *o)
{
    cli_args a = cli_args_make("bench", argc, argv);
    const char *opt, *v;
    while ((opt = cli_next(&a))) {
        int rc = 0;
        if (cli_is(&a, opt, "--help")) {
            bench_usage(stdout);
            return -1;
        } else if (cli_is(&a, opt, "--no-cpu")) {
            o->no_cpu = 1;
            continue;
        } else if (cli_is(&a, opt, "--no-peak")) {
            o->no_peak = 1;
            continue;
        } else if (cli_is(&a, opt, "--trace")) {
            o->trace = 1;
            continue;
        } else if (cli_is(&a, opt, "--no-mqa")) {
            o->no_mqa = 1;
            continue;
        } else if (cli_is(&a, opt, "--no-window")) {
            o->no_window = 1;
            continue;
        }
        /* Each option takes its value once its name is known: an unknown one never swallows the next. */
        if (cli_is(&a, opt, "--preset")) rc = parse_text(&a, opt, &o->preset);
        else if (cli_is(&a, opt, "--device")) rc = parse_text(&a, opt, &o->device);
        else if (cli_is(&a, opt, "--json")) rc = parse_text(&a, opt, &o->json);
        else if (cli_is(&a, opt, "--csv")) rc = parse_text(&a, opt, &o->csv);
        else if (cli_is(&a, opt, "--plot")) rc = parse_text(&a, opt, &o->plot);
        else if (cli_is(&a, opt, "--head-mask")) rc = parse_text(&a, opt, &o->head_mask_path);
        else if (cli_is(&a, opt, "--batch")) rc = parse_list(&a, opt, &o->batch, item_u32);
        else if (cli_is(&a, opt, "--len")) rc = parse_list(&a, opt, &o->len, item_u32);
        else if (cli_is(&a, opt, "--kv-len")) rc = parse_list(&a, opt, &o->kv_len, item_u32);
        else if (cli_is(&a, opt, "--embed")) rc = parse_list(&a, opt, &o->embed, item_u32);
        else if (cli_is(&a, opt, "--heads")) rc = parse_list(&a, opt, &o->heads, item_u32);
        else if (cli_is(&a, opt, "--mask")) rc = parse_list(&a, opt, &o->mask, item_mask);
        else if (cli_is(&a, opt, "--path")) rc = parse_list(&a, opt, &o->path, item_path);
        else if (cli_is(&a, opt, "--dtype")) rc = parse_list(&a, opt, &o->dtype, item_dtype);
        else if (cli_is(&a, opt, "--min-time")) rc = parse_number(&a, opt, 3600, "seconds", &o->min_time_s);
        else if (cli_is(&a, opt, "--peak-seconds")) rc = parse_number(&a, opt, 3600, "seconds", &o->peak_seconds);
        else if (cli_is(&a, opt, "--cpu-max-gflop"))
            rc = parse_number(&a, opt, 1e9, "GFLOP", &o->cpu_max_gflop), o->cpu_max_gflop_given = 1;
        else if (cli_is(&a, opt, "--kv-heads")) rc = (v = cli_value(&a, opt)) ? cli_parse_u32(opt, v, 1, &o->kv_heads) : 2;
        else if (cli_is(&a, opt, "--warmup")) rc = (v = cli_value(&a, opt)) ? cli_parse_u32(opt, v, 0, &o->warmup) : 2;
        else return cli_unknown_option(&a, opt);
        if (rc) return rc;
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
    if (!o->dtype.n) o->dtype = (u32_list){1, {VKATTN_DTYPE_F32}};
    o->no_cpu |= p->no_cpu;
    return 0;
}

/* The product of the lists, in a stable order (L varies fastest, for plots). */
static uint32_t expand(const bench_options *o, bench_config *out)
{
    uint32_t n = 0;
    const u32_list *kv = o->kv_len.n ? &o->kv_len : NULL;
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
    qsort(v, n, sizeof *v, cli_compare_doubles);
    bench_time t = {n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, v[0]};
    return t;
}

void bench_fill_random(float *x, size_t n, unsigned long long seed, float scale)
{
    unsigned long long s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        x[i] = (float)(((s * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0 * 2.0 - 1.0) * scale;
    }
}

/* Host data and device objects of one configuration. */
typedef struct bench_case {
    float *weights, *query, *key;
    uint8_t *kpm;
    vkattn_layer *layer;
    vkattn_tensor *tq, *tk, *tkpm, *tout;
} bench_case;

static void free_case(bench_case *bc)
{
    vkattn_tensor_destroy(bc->tq), vkattn_tensor_destroy(bc->tk), vkattn_tensor_destroy(bc->tkpm);
    vkattn_tensor_destroy(bc->tout);
    vkattn_layer_destroy(bc->layer);
    free(bc->weights), free(bc->query), free(bc->key), free(bc->kpm);
}

#define BENCH_TRY(expr, what)                                                                      \
    do {                                                                                           \
        vkattn_status s_ = (expr);                                                                 \
        if (s_ != VKATTN_OK) {                                                                     \
            cli_fail("bench", what, s_, vkattn_context_last_error(ctx));                           \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

static int run_config(vkattn_context *ctx, const bench_options *o, const bench_config *c, bench_result *r)
{
    const uint32_t B = c->batch, L = c->query_len, S = c->key_len, E = c->embed_dim;
    const int self = S == L;
    bench_case bc = {0};
    int rc = 1;
    memset(r, 0, sizeof *r);
    r->config = *c;
    r->cpu_ms = -1;

    vkattn_layer_desc ld = {.embed_dim = E, .num_heads = c->heads, .storage = c->dtype, .head_mask = c->head_mask};
    size_t wn = 3 * (size_t)E * E + 3 * E + (size_t)E * E + E;
    bc.weights = malloc(wn * sizeof(float));
    bc.query = malloc((size_t)B * L * E * sizeof(float));
    if (!self) bc.key = malloc((size_t)B * S * E * sizeof(float));
    if (c->mask & BENCH_MASK_PADDING) bc.kpm = calloc((size_t)B * S, 1);
    if (!bc.weights || !bc.query || (!self && !bc.key) || ((c->mask & BENCH_MASK_PADDING) && !bc.kpm)) {
        cli_fail("bench", "allocating host data", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto fail;
    }
    bench_fill_random(bc.weights, wn, 1, sqrtf(3.0f / E));
    bench_fill_random(bc.query, (size_t)B * L * E, 2, 1.0f);
    if (bc.key) bench_fill_random(bc.key, (size_t)B * S * E, 3, 1.0f);
    for (size_t b = 0; bc.kpm && b < B; b++)
        for (size_t j = S - S / 4; j < S; j++) bc.kpm[b * S + j] = 1; /* the last quarter is padding */
    vkattn_weights w = {.in_proj_weight = bc.weights, .in_proj_bias = bc.weights + 3 * (size_t)E * E,
                        .out_proj_weight = bc.weights + 3 * (size_t)E * E + 3 * E,
                        .out_proj_bias = bc.weights + 4 * (size_t)E * E + 3 * E};
    BENCH_TRY(vkattn_layer_create(ctx, &ld, &w, &bc.layer), "creating the layer");
    BENCH_TRY(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, E}, &bc.tq), "creating the query");
    BENCH_TRY(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, E}, &bc.tout), "creating the output");
    BENCH_TRY(vkattn_tensor_write(bc.tq, bc.query, (size_t)B * L * E * sizeof(float)), "writing the query");
    if (!self) {
        BENCH_TRY(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, S, E}, &bc.tk), "creating the key");
        BENCH_TRY(vkattn_tensor_write(bc.tk, bc.key, (size_t)B * S * E * sizeof(float)), "writing the key");
    }
    if (bc.kpm) {
        BENCH_TRY(vkattn_tensor_create(ctx, VKATTN_DTYPE_BOOL, 2, (uint32_t[]){B, S}, &bc.tkpm), "creating the mask");
        BENCH_TRY(vkattn_tensor_write(bc.tkpm, bc.kpm, (size_t)B * S), "writing the mask");
    }
    vkattn_forward_desc f = {.query = bc.tq, .key = bc.tk, .output = bc.tout, .key_padding_mask = bc.tkpm,
                             .causal = (c->mask & BENCH_MASK_CAUSAL) != 0, .path = c->path};

    if (o->trace) {
        /* The plan comes from the host description of the same forward (explaining writes no
         * array, but the output must still be one of its own). */
        float *output = malloc((size_t)B * L * E * sizeof(float));
        vkattn_host_forward_desc hf = {.batch = B, .query_len = L, .key_len = S, .query = bc.query, .key = bc.key,
                                       .key_padding_mask = bc.kpm, .causal = f.causal, .output = output,
                                       .path = c->path};
        int traced = output ? cli_print_plan("bench", ctx, bc.layer, &hf)
                            : cli_fail("bench", "allocating host data", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        free(output);
        if (traced) goto fail;
    }
    for (uint32_t i = 0; i < o->warmup; i++) BENCH_TRY(vkattn_forward(bc.layer, &f), "warm-up forward");
    BENCH_TRY(vkattn_layer_set_timing(bc.layer, 1), "turning stage timing on");
    /* Samples per repeat: whole forward on the GPU, on the host, their difference, each stage. */
    double(*samples)[MAX_REPEATS] = calloc(3 + VKATTN_STAGE_COUNT, sizeof *samples);
    if (!samples) {
        cli_fail("bench", "allocating samples", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto fail;
    }
    double *gpu = samples[0], *host = samples[1], *over = samples[2], (*stage)[MAX_REPEATS] = samples + 3;
    vkattn_forward_stats st = {0};
    uint32_t n = 0;
    double start = cli_now();
    while (n < MAX_REPEATS && (n < 3 || cli_now() - start < o->min_time_s)) {
        double t0 = cli_now();
        vkattn_status fs = vkattn_forward(bc.layer, &f);
        if (fs != VKATTN_OK) {
            free(samples);
            BENCH_TRY(fs, "forward");
        }
        double wall_ms = (cli_now() - t0) * 1e3;
        vkattn_layer_last_stats(bc.layer, &st);
        gpu[n] = st.gpu_ms;
        host[n] = wall_ms;
        over[n] = wall_ms - st.gpu_ms;
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) stage[s][n] = st.stage_ms[s];
        n++;
    }
    r->repeats = n;
    r->path_ran = st.path;
    r->dispatches = st.dispatches;
    r->submits = st.submits;
    r->workspace_bytes = st.workspace_bytes;
    r->gpu = bench_stats(gpu, n);
    r->host = bench_stats(host, n);
    r->host_overhead = bench_stats(over, n);
    bench_time stage_times[VKATTN_STAGE_COUNT];
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) stage_times[s] = bench_stats(stage[s], n);
    free(samples);

    vkattn_cost cost;
    BENCH_TRY(vkattn_forward_cost(&ld, B, L, self ? 0 : S, st.path, VKATTN_WEIGHTS_NONE, &cost), "computing the cost");
    r->flops = cost.total_flops;
    r->bytes = cost.total_bytes;
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
        bench_time t = stage_times[s];
        r->stages[s].present = t.median_ms > 0 || cost.flops[s] > 0 || cost.bytes[s] > 0;
        r->stages[s].time = t;
        r->stages[s].flops = cost.flops[s];
        r->stages[s].bytes = cost.bytes[s];
    }

    if (!o->no_cpu && cost.total_flops <= o->cpu_max_gflop * 1e9) {
        float *out = malloc((size_t)B * L * E * sizeof(float));
        vkattn_host_forward_desc h = {.batch = B, .query_len = L, .key_len = self ? 0 : S, .query = bc.query,
                                      .key = bc.key, .key_padding_mask = bc.kpm, .causal = f.causal, .output = out};
        ld.storage = VKATTN_DTYPE_F32;
        double t0 = cli_now();
        vkattn_error err = {0};
        vkattn_status status = out ? vkattn_reference_forward(&ld, &w, &h, &err) : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
        if (status == VKATTN_OK) r->cpu_ms = (cli_now() - t0) * 1e3;
        else cli_fail("bench", "CPU path", status, err.message);
        free(out);
    }
    rc = 0;
fail:
    free_case(&bc);
    return rc;
}

/* --head-mask: a bool (H) .npy applied to every configuration, whose heads must all be H. */
static int attach_head_mask(bench_options *o, bench_config *configs, uint32_t count)
{
    vkattn_error err = {0};
    vkattn_status s = vkattn_npy_read(o->head_mask_path, &o->head_mask, &err);
    if (s != VKATTN_OK) return cli_fail_input("bench", "--head-mask", o->head_mask_path, CLI_FILE_NPY, s, err.message);
    const vkattn_array *m = &o->head_mask;
    uint32_t active = 0;
    for (size_t h = 0; m->dtype == VKATTN_DTYPE_BOOL && m->rank == 1 && h < m->dims[0]; h++)
        active += ((const uint8_t *)m->data)[h] != 0;
    for (uint32_t i = 0; i < count; i++) {
        if (m->dtype != VKATTN_DTYPE_BOOL || m->rank != 1 || m->dims[0] != configs[i].heads || active == 0) {
            fprintf(stderr, "vkattn bench: the head mask must be a bool (%u,) array keeping at least one head\n",
                    configs[i].heads);
            return 2;
        }
        configs[i].head_mask = m->data;
        configs[i].active_heads = active;
    }
    return 0;
}

/* --preset decode: its own options (bench_decode.h); the sweep's are refused by name. */
static int run_decode(const bench_options *o)
{
    const struct {
        int given;
        const char *name;
    } sweep_only[] = {
        {o->batch.n > 0, "--batch"}, {o->kv_len.n > 0, "--kv-len"}, {o->mask.n > 0, "--mask"},
        {o->path.n > 0, "--path"}, {o->head_mask_path != NULL, "--head-mask"}, {o->trace, "--trace"},
        {o->csv != NULL, "--csv"}, {o->plot != NULL, "--plot"}, {o->no_cpu, "--no-cpu"},
        {o->cpu_max_gflop_given, "--cpu-max-gflop"}, {o->embed.n > 1, "--embed with more than one value"},
        {o->heads.n > 1, "--heads with more than one value"},
    };
    for (size_t i = 0; i < sizeof sweep_only / sizeof sweep_only[0]; i++)
        if (sweep_only[i].given) {
            fprintf(stderr, "vkattn bench: --preset decode takes no %s (see vkattn bench --help)\n", sweep_only[i].name);
            return 2;
        }
    int rc = cli_check_output("bench", "--json", o->json);
    if (rc) return rc;
    bench_decode_options d = {.device = o->device, .json = o->json, .len_count = o->len.n,
                              .embed_dim = o->embed.n ? o->embed.v[0] : 0, .heads = o->heads.n ? o->heads.v[0] : 0,
                              .kv_heads = o->kv_heads, .dtype_count = o->dtype.n, .min_time_s = o->min_time_s,
                              .peak_seconds = o->peak_seconds, .warmup = o->warmup, .no_peak = o->no_peak,
                              .no_mqa = o->no_mqa, .no_window = o->no_window};
    memcpy(d.lens, o->len.v, o->len.n * sizeof o->len.v[0]);
    if (o->dtype.n > BENCH_DECODE_MAX_DTYPES) {
        fprintf(stderr, "vkattn bench: --preset decode: --dtype takes up to %d of f32, f16, q8_0, q4_0\n",
                BENCH_DECODE_MAX_DTYPES);
        return 2;
    }
    for (uint32_t i = 0; i < o->dtype.n; i++) d.dtypes[i] = (vkattn_dtype)o->dtype.v[i];
    return bench_decode(stdout, &d);
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
    if (o.preset && strcmp(o.preset, "decode") == 0) return run_decode(&o);
    if (o.kv_heads || o.no_mqa || o.no_window) {
        fprintf(stderr, "vkattn bench: %s is an option of --preset decode\n",
                o.kv_heads ? "--kv-heads" : o.no_mqa ? "--no-mqa" : "--no-window");
        return 2;
    }
    for (uint32_t i = 0; i < o.dtype.n; i++)
        if (o.dtype.v[i] != VKATTN_DTYPE_F32 && o.dtype.v[i] != VKATTN_DTYPE_F16) {
            fprintf(stderr, "vkattn bench: --dtype %s is a KV cache format: it goes with --preset decode (the sweep "
                            "takes f32, f16)\n", vkattn_dtype_name((vkattn_dtype)o.dtype.v[i]));
            return 2;
        }
    /* Output problems are said now, not after a sweep of minutes. */
    if (o.plot && !bench_plot_path_ok(o.plot)) {
        fprintf(stderr, "vkattn bench: --plot %s: give %s (the format)\n", o.plot, BENCH_PLOT_NAMES);
        return 2;
    }
    if ((rc = cli_check_output("bench", "--json", o.json)) || (rc = cli_check_output("bench", "--csv", o.csv)) ||
        (rc = cli_check_output("bench", "--plot", o.plot)))
        return rc;
    if ((rc = apply_preset(&o))) return rc;
    bench_config *configs = malloc(MAX_CONFIGS * sizeof *configs);
    if (!configs) return cli_fail("bench", "allocating", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
    uint32_t count = expand(&o, configs);

    vkattn_context *ctx = NULL;
    if ((rc = cli_open_context("bench", o.device, &ctx))) {
        free(configs);
        return rc;
    }
    bench_run_info info = {.min_time_s = o.min_time_s, .preset = o.preset};
    if (o.head_mask_path && (rc = attach_head_mask(&o, configs, count))) {
        vkattn_context_destroy(ctx);
        free(configs);
        return rc;
    }
    vkattn_context_device(ctx, &info.device);
    if (vkattn_context_validation_enabled(ctx))
        fprintf(stderr, "vkattn bench: warning: validation is on; host overheads include its cost\n");
    if (!o.no_peak) {
        vkattn_status status = vkattn_measure_peak(ctx, o.peak_seconds, &info.peak);
        if (status != VKATTN_OK) cli_fail("bench", "measuring the peak (continuing without)", status,
                                          vkattn_context_last_error(ctx));
    }

    bench_result *results = calloc(count ? count : 1, sizeof *results);
    uint32_t done = 0;
    int progress = isatty(fileno(stderr));
    double start = cli_now();
    for (uint32_t i = 0; results && i < count; i++) {
        char key[128];
        bench_config_key(&configs[i], key, sizeof key);
        if (progress && cli_now() - start > 2.0) fprintf(stderr, "\r\033[K[%u/%u] %s", i + 1, count, key);
        if (run_config(ctx, &o, &configs[i], &results[done]) == 0) {
            bench_derive(&results[done], &info.peak);
            done++;
        } else {
            rc = 1;
        }
    }
    if (progress && cli_now() - start > 2.0) fprintf(stderr, "\r\033[K");
    if (!results) rc = cli_fail("bench", "allocating results", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
    if (results) {
        bench_print_table(stdout, &info, results, done);
        if (o.json && bench_write_json(o.json, &info, results, done)) rc = 1;
        if (o.csv && bench_write_csv(o.csv, &info, results, done)) rc = 1;
        if (o.plot && bench_write_plot(o.plot, &info, results, done)) rc = 1;
    }
    free(results);
    free(configs);
    vkattn_array_free(&o.head_mask);
    vkattn_context_destroy(ctx);
    return rc;
}
