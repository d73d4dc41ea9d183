/* vkattn demo: one forward on random data, on the GPU and on the CPU path, compared and timed. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct demo_options {
    const char *device;
    uint32_t batch, length, embed, heads, repeats;
    vkattn_dtype storage; /* --dtype f32|f16 */
} demo_options;

#define D(field) offsetof(demo_options, field)
static const cli_option k_demo_rows[] = {
    {"--batch", "B", "batch", CLI_U32, D(batch), 1},
    {"--length", "L", "tokens (L = S)", CLI_U32, D(length), 1},
    {"--embed", "E", "embedding width", CLI_U32, D(embed), 1},
    {"--heads", "H", "heads", CLI_U32, D(heads), 1},
    {"--repeats", "N", "timed forwards (the median is printed)", CLI_U32, D(repeats), 1},
    CLI_STORAGE_OPTION(demo_options, storage),
    CLI_DEVICE_OPTION(demo_options, device),
};

static int parse(int argc, char **argv, demo_options *o)
{
    cli_command c = {"demo", NULL,
                     "Causal self-attention on random data, checked against the CPU path: OK within max-abs 1e-4 x\n"
                     "max(1, max|ref|) and NMSE 1e-9 (f16 storage: 1e-2 x max(1, max|ref|) and 2e-6), else MISMATCH.\n"
                     CLI_EXIT_HELP "4 MISMATCH.\n",
                     {{NULL, k_demo_rows, CLI_COUNT(k_demo_rows), o}}};
    return cli_parse(&c, argc, argv);
}

/* Deterministic values in [-scale, scale). */
static void fill(float *x, size_t n, unsigned seed, float scale)
{
    unsigned long long s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < n; i++) {
        s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
        x[i] = (float)(((s * 0x2545F4914F6CDD1Dull) >> 40) / 16777216.0 * 2.0 - 1.0) * scale;
    }
}

int cmd_demo(int argc, char **argv)
{
    demo_options o = {NULL, 2, 128, 256, 8, 10, VKATTN_DTYPE_F32};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    const uint32_t B = o.batch, L = o.length, E = o.embed, H = o.heads;

    vkattn_context *ctx = NULL;
    if ((rc = cli_open_context("demo", o.device, &ctx))) return rc;
    size_t n_in = (size_t)B * L * E;
    float *w_in = malloc(3 * (size_t)E * E * sizeof(float)), *b_in = malloc(3 * (size_t)E * sizeof(float));
    float *w_out = malloc((size_t)E * E * sizeof(float)), *b_out = malloc((size_t)E * sizeof(float));
    float *x = malloc(n_in * sizeof(float)), *y_gpu = malloc(n_in * sizeof(float)), *y_cpu = malloc(n_in * sizeof(float));
    vkattn_layer *layer = NULL;
    if (!w_in || !b_in || !w_out || !b_out || !x || !y_gpu || !y_cpu) {
        rc = cli_fail("demo", "allocating host memory", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto done;
    }
    /* Xavier-like scale, as nn.MultiheadAttention initialises its projections. */
    float ws = sqrtf(6.0f / (2.0f * E));
    fill(w_in, 3 * (size_t)E * E, 1, ws), fill(b_in, 3 * (size_t)E, 2, 0.1f);
    fill(w_out, (size_t)E * E, 3, ws), fill(b_out, E, 4, 0.1f), fill(x, n_in, 5, 1.0f);

    vkattn_layer_desc ld = {.embed_dim = E, .num_heads = H, .storage = o.storage};
    vkattn_weights w = {.in_proj_weight = w_in, .in_proj_bias = b_in, .out_proj_weight = w_out, .out_proj_bias = b_out};
    vkattn_status status = vkattn_layer_create(ctx, &ld, &w, &layer);
    if (status != VKATTN_OK) {
        rc = cli_fail("demo", "creating the layer", status, vkattn_context_last_error(ctx));
        goto done;
    }
    vkattn_dtype storage = cli_layer_storage("demo", layer, o.storage);
    printf("shapes: query = key = value (%u, %u, %u), heads %u (head dim %u), causal self-attention, %s storage\n", B,
           L, E, H, E / H, vkattn_dtype_name(storage));

    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .query = x, .output = y_gpu, .causal = 1};
    double *times = calloc(o.repeats + 1, sizeof *times);
    for (uint32_t r = 0; r <= o.repeats && times; r++) { /* run 0 warms up (pipeline creation) */
        double t0 = cli_now();
        status = vkattn_forward_host(layer, &f);
        times[r] = cli_now() - t0;
        if (status != VKATTN_OK) break;
    }
    if (!times || status != VKATTN_OK) {
        rc = cli_fail("demo", "GPU forward", times ? status : VKATTN_ERROR_OUT_OF_HOST_MEMORY,
                      vkattn_context_last_error(ctx));
        free(times);
        goto done;
    }
    vkattn_forward_stats stats;
    vkattn_layer_last_stats(layer, &stats);
    double first = times[0];
    qsort(times + 1, o.repeats, sizeof *times, cli_compare_doubles);
    double median = o.repeats ? times[1 + o.repeats / 2] : first;
    free(times);

    f.output = y_cpu;
    f.path = VKATTN_PATH_CPU;
    double t0 = cli_now();
    status = vkattn_forward_host(layer, &f);
    double cpu = cli_now() - t0;
    if (status != VKATTN_OK) {
        rc = cli_fail("demo", "CPU forward", status, vkattn_context_last_error(ctx));
        goto done;
    }
    double flops = 2.0 * B * ((double)L * E * E * 3 + (double)L * E * E) + 4.0 * B * H * (double)L * L * (E / H);
    printf("GPU forward, %s path, host arrays in and out: %.3f ms median of %u runs, %.2f GFLOP/s\n"
           "  (the first call took %.0f ms: it compiles the kernels, cached on disk by Mesa for later runs)\n",
           vkattn_path_name(stats.path), median * 1e3, o.repeats, flops / median * 1e-9, first * 1e3);
    printf("CPU reference path (double accumulation): %.1f ms\n", cpu * 1e3);
    compare_stats e = compare_arrays(y_gpu, y_cpu, n_in);
    const compare_tolerance *t = compare_tolerance_for(storage);
    int ok = compare_within(&e, t);
    char tol[200];
    compare_describe(tol, sizeof tol, t, e.ref_max);
    printf("max |GPU - CPU| = %.3g, NMSE = %.3g%s: %s (%s)\n", e.max_abs, e.nmse,
           e.nonfinite ? ", non-finite values differ" : "", ok ? "OK" : "MISMATCH", tol);
    rc = ok ? CLI_EXIT_OK : CLI_EXIT_MISMATCH;
done:
    vkattn_layer_destroy(layer);
    vkattn_context_destroy(ctx);
    free(w_in), free(b_in), free(w_out), free(b_out), free(x), free(y_gpu), free(y_cpu);
    return rc;
}
