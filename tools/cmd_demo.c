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

/* The first forward (it compiles the kernels), then the median of o->repeats more, in seconds. */
static vkattn_status time_forwards(vkattn_layer *layer, const vkattn_host_forward_desc *f, uint32_t repeats,
                                   double *first, double *median)
{
    double *times = calloc(repeats + 1, sizeof *times);
    vkattn_status status = times ? VKATTN_OK : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    for (uint32_t r = 0; r <= repeats && status == VKATTN_OK; r++) {
        double t0 = cli_now();
        status = vkattn_forward_host(layer, f);
        times[r] = cli_now() - t0;
    }
    if (status == VKATTN_OK) *first = times[0], *median = cli_median(times + 1, repeats);
    free(times);
    return status;
}

int cmd_demo(int argc, char **argv)
{
    demo_options o = {NULL, 2, 128, 256, 8, 10, VKATTN_DTYPE_F32};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    const uint32_t B = o.batch, L = o.length, E = o.embed, H = o.heads;
    const size_t ee = (size_t)E * E, n_in = (size_t)B * L * E;
    if (o.repeats > 100000) { /* its timing array, and a run that ends */
        fprintf(stderr, "vkattn demo: at most 100000 --repeats\n");
        return CLI_EXIT_USAGE;
    }
    if ((rc = cli_check_head_split("demo", "--embed", E, H))) return rc;
    vkattn_context *ctx = NULL;
    if ((rc = cli_open_context("demo", o.device, &ctx))) return rc;
    /* in_proj_weight, in_proj_bias, out_proj.weight, out_proj.bias, the query, two outputs */
    float *w = malloc((4 * ee + 4 * E + 3 * n_in) * sizeof(float)), *x = w + 4 * ee + 4 * E;
    float *y_gpu = x + n_in, *y_cpu = y_gpu + n_in;
    vkattn_layer *layer = NULL;
    vkattn_status status = w ? VKATTN_OK : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (status != VKATTN_OK) {
        rc = cli_fail("demo", "allocating host memory", status, NULL);
        goto done;
    }
    /* Xavier-like scale, as nn.MultiheadAttention initialises its projections. */
    const float ws = sqrtf(6.0f / (2.0f * E));
    cli_fill_random(w, 3 * ee, 1, ws), cli_fill_random(w + 3 * ee, 3 * (size_t)E, 2, 0.1f);
    cli_fill_random(w + 3 * ee + 3 * E, ee, 3, ws), cli_fill_random(w + 4 * ee + 3 * E, E, 4, 0.1f);
    cli_fill_random(x, n_in, 5, 1.0f);
    /* the CPU path below reads the caller's weights, freed after the layer */
    vkattn_layer_desc ld = {.embed_dim = E, .num_heads = H, .storage = o.storage,
                            .host_weights = VKATTN_HOST_WEIGHTS_BORROW};
    vkattn_weights lw = {.in_proj_weight = w, .in_proj_bias = w + 3 * ee, .out_proj_weight = w + 3 * ee + 3 * E,
                         .out_proj_bias = w + 4 * ee + 3 * E};
    if ((status = vkattn_layer_create(ctx, &ld, &lw, &layer)) != VKATTN_OK) {
        rc = cli_fail("demo", "creating the layer", status, vkattn_context_last_error(ctx));
        goto done;
    }
    vkattn_dtype storage = cli_layer_storage("demo", layer, o.storage);
    printf("shapes: query = key = value (%u, %u, %u), heads %u (head dim %u), causal self-attention, %s storage\n", B,
           L, E, H, E / H, vkattn_dtype_name(storage));
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .query = x, .output = y_gpu, .causal = 1};
    double first = 0, median = 0;
    if ((status = time_forwards(layer, &f, o.repeats, &first, &median)) != VKATTN_OK) {
        rc = cli_fail("demo", "GPU forward", status, vkattn_context_last_error(ctx));
        goto done;
    }
    vkattn_forward_stats stats;
    vkattn_layer_last_stats(layer, &stats);
    f.output = y_cpu;
    f.path = VKATTN_PATH_CPU;
    double t0 = cli_now();
    if ((status = vkattn_forward_host(layer, &f)) != VKATTN_OK) {
        rc = cli_fail("demo", "CPU forward", status, vkattn_context_last_error(ctx));
        goto done;
    }
    double cpu = cli_now() - t0;
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
    free(w);
    return rc;
}
