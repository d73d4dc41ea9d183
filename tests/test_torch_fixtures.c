/* vkattn against PyTorch: every case in tests/fixtures/torch/ (made by make_torch_fixtures.py with
 * torch 1.13's nn.MultiheadAttention, batch_first, eval, fp32) is loaded through the public file
 * API (safetensors weights, .npy inputs and masks) and run on the CPU reference; with "gpu", also on
 * the device through both the unfused path (with attention weights when the case has them) and the
 * fused path (output only).
 *
 * Pass: max-abs error <= 1e-5 on the attention weights and <= 1e-5 * max(1, max|torch output|) on
 * the output, and no position where only one side is finite. Torch computes in fp32 and the CPU
 * reference in double, so the errors seen are torch's own rounding (~1e-7 for |values| <= 1). The
 * output scale factor only matters for scaled_x30, whose outputs reach ~31 (one fp32 ulp there is
 * 2e-6) and whose fp32 torch result is itself ~6e-6 from a float64 torch run.
 *
 * Usage: test_torch_fixtures FIXTURES_DIR [cpu|gpu [CASE...]]
 *   cpu (the default) runs the CPU reference only; gpu runs it and the device paths. Naming cases
 *   runs only those (so a slow device can split the set over several test entries).
 *   FIXTURES_DIR holds cases.txt, one line per case:
 *     name heads add_zero_attn causal has_key has_kpm attn_mask(none|bool|float) mask_per_head weights(none|head|avg)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test.h"
#include "fixture_manifest.h"
#include "test_util.h"

#define TOL 1e-5

typedef struct torch_case {
    char name[64];
    unsigned heads;
    int add_zero_attn, causal, has_key, has_kpm, mask_per_head;
    char attn_mask[8]; /* none, bool, float */
    char weights[8];   /* none, head, avg */
} torch_case;

/* Everything one case needs, loaded from its files. */
typedef struct case_data {
    vkattn_weight_file *file;
    vkattn_layer_desc desc;
    vkattn_array query, key, value, kpm, mask, output, weights;
    vkattn_host_forward_desc fwd; /* output and attn_weights left NULL */
    size_t out_n, weights_n;
} case_data;

static const char *dir_g;

static int load_npy(const torch_case *c, const char *suffix, vkattn_array *a)
{
    return fixture_load_npy(dir_g, c->name, suffix, a);
}

static size_t elements(const vkattn_array *a)
{
    size_t n = 1;
    for (uint32_t i = 0; i < a->rank; i++) n *= a->dims[i];
    return n;
}

static void case_data_free(case_data *d)
{
    vkattn_weight_file_destroy(d->file);
    vkattn_array *arrays[] = {&d->query, &d->key, &d->value, &d->kpm, &d->mask, &d->output, &d->weights};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) vkattn_array_free(arrays[i]);
    memset(d, 0, sizeof *d);
}

/* Checks every file against the manifest and the others' shapes; fills d->desc and d->fwd. */
static int case_data_load(const torch_case *c, case_data *d)
{
    char path[1024];
    vkattn_error error = {0};
    const int failures_before = test_g.failures;
    memset(d, 0, sizeof *d);
    snprintf(path, sizeof path, "%s/%s.safetensors", dir_g, c->name);
    vkattn_status status = vkattn_weight_file_load(path, &d->file, &error);
    CHECK_MSG(status == VKATTN_OK, "%s: %s: %s", path, vkattn_status_name(status), error.message);
    if (status != VKATTN_OK) return 0;
    vkattn_weight_file_describe(d->file, &d->desc);
    d->desc.num_heads = c->heads;
    d->desc.add_zero_attn = c->add_zero_attn;

    int ok = load_npy(c, "query", &d->query) && load_npy(c, "output", &d->output);
    if (ok && c->has_key) ok = load_npy(c, "key", &d->key) && load_npy(c, "value", &d->value);
    if (ok && c->has_kpm) ok = load_npy(c, "kpm", &d->kpm);
    if (ok && strcmp(c->attn_mask, "none") != 0) ok = load_npy(c, "attn_mask", &d->mask);
    if (ok && strcmp(c->weights, "none") != 0) ok = load_npy(c, "weights", &d->weights);
    if (!ok) return 0;

    const uint32_t E = d->desc.embed_dim, H = c->heads;
    const uint32_t B = d->query.dims[0], L = d->query.dims[1];
    const uint32_t S = c->has_key ? d->key.dims[1] : L;
    const uint32_t S_ext = S + (d->desc.add_bias_kv != 0) + (c->add_zero_attn != 0);
    CHECK_MSG(d->query.rank == 3 && d->query.dtype == VKATTN_DTYPE_F32 && d->query.dims[2] == E,
              "%s: query is not f32 (B,L,%u)", c->name, E);
    CHECK_MSG(d->output.rank == 3 && d->output.dims[0] == B && d->output.dims[1] == L && d->output.dims[2] == E,
              "%s: output is not (B,L,E)", c->name);
    if (c->has_key) {
        CHECK_MSG(d->key.rank == 3 && d->key.dims[0] == B && d->key.dims[2] == d->desc.kdim, "%s: key shape", c->name);
        CHECK_MSG(d->value.rank == 3 && d->value.dims[0] == B && d->value.dims[1] == S &&
                      d->value.dims[2] == d->desc.vdim,
                  "%s: value shape", c->name);
    }
    if (c->has_kpm)
        CHECK_MSG(d->kpm.dtype == VKATTN_DTYPE_BOOL && d->kpm.rank == 2 && d->kpm.dims[0] == B && d->kpm.dims[1] == S,
                  "%s: key_padding_mask is not bool (B,S)", c->name);
    if (d->mask.data) {
        vkattn_dtype want = strcmp(c->attn_mask, "bool") == 0 ? VKATTN_DTYPE_BOOL : VKATTN_DTYPE_F32;
        uint32_t rank = c->mask_per_head ? 3 : 2;
        CHECK_MSG(d->mask.dtype == want && d->mask.rank == rank && d->mask.dims[rank - 2] == L &&
                      d->mask.dims[rank - 1] == S && (rank == 2 || d->mask.dims[0] == B * H),
                  "%s: attn_mask is not %s %s", c->name, c->attn_mask, rank == 3 ? "(B*H,L,S)" : "(L,S)");
    }
    int average = strcmp(c->weights, "avg") == 0;
    if (d->weights.data) {
        size_t want = (size_t)B * (average ? 1 : H) * L * S_ext;
        CHECK_MSG(elements(&d->weights) == want && d->weights.dims[d->weights.rank - 1] == S_ext,
                  "%s: weights hold %zu values, expected %zu (S'=%u)", c->name, elements(&d->weights), want, S_ext);
    }

    d->out_n = elements(&d->output);
    d->weights_n = d->weights.data ? elements(&d->weights) : 0;
    d->fwd = (vkattn_host_forward_desc){
        .batch = B,
        .query_len = L,
        .key_len = S,
        .query = d->query.data,
        .key = d->key.data,
        .value = d->value.data,
        .causal = c->causal,
        .key_padding_mask = d->kpm.data,
        .attn_mask = d->mask.data,
        .attn_mask_dtype = d->mask.data ? d->mask.dtype : VKATTN_DTYPE_F32,
        .attn_mask_per_head = c->mask_per_head,
        .average_weights = average,
    };
    return test_g.failures == failures_before; /* run nothing on a mismatched shape */
}

/* Compares one run's results with torch's; prints a line either way. */
static void compare(const torch_case *c, const case_data *d, const char *path, const float *out, const float *w)
{
    test_error eo = test_compare(out, d->output.data, d->out_n);
    double tol_o = TOL * (eo.ref_max > 1 ? eo.ref_max : 1);
    CHECK_MSG(eo.nonfinite == 0 && eo.max_abs <= tol_o, "%s (%s): output max-abs %.3g > %.3g or %zu non-finite",
              c->name, path, eo.max_abs, tol_o, eo.nonfinite);
    if (w) {
        test_error ew = test_compare(w, d->weights.data, d->weights_n);
        CHECK_MSG(ew.nonfinite == 0 && ew.max_abs <= TOL, "%s (%s): weights max-abs %.3g > %.3g or %zu non-finite",
                  c->name, path, ew.max_abs, TOL, ew.nonfinite);
        printf("  %-24s %-8s output max-abs %.3g (|ref| <= %.3g)  weights max-abs %.3g\n", c->name, path, eo.max_abs,
               eo.ref_max, ew.max_abs);
    } else {
        printf("  %-24s %-8s output max-abs %.3g (|ref| <= %.3g)\n", c->name, path, eo.max_abs, eo.ref_max);
    }
}

static void run_cpu(const torch_case *c, const case_data *d)
{
    float *out = calloc(d->out_n, sizeof *out);
    float *w = d->weights_n ? calloc(d->weights_n, sizeof *w) : NULL;
    vkattn_host_forward_desc f = d->fwd;
    f.output = out;
    f.attn_weights = w;
    vkattn_error error = {0};
    vkattn_status status = vkattn_reference_forward(&d->desc, vkattn_weight_file_weights(d->file), &f, &error);
    CHECK_MSG(status == VKATTN_OK, "%s: vkattn_reference_forward: %s: %s", c->name, vkattn_status_name(status),
              error.message);
    if (status == VKATTN_OK) compare(c, d, "cpu", out, w);
    free(out);
    free(w);
}

/* One device forward on `path`, with attention weights only when `with_weights`. */
static void run_device_path(vkattn_context *ctx, vkattn_layer *layer, const torch_case *c, const case_data *d,
                            vkattn_path path, int with_weights)
{
    float *out = calloc(d->out_n, sizeof *out);
    float *w = with_weights ? calloc(d->weights_n, sizeof *w) : NULL;
    vkattn_host_forward_desc f = d->fwd;
    f.output = out;
    f.attn_weights = w;
    f.path = path;
    vkattn_status status = vkattn_forward_host(layer, &f);
    CHECK_MSG(status == VKATTN_OK, "%s: vkattn_forward_host (%s): %s: %s", c->name, vkattn_path_name(path),
              vkattn_status_name(status), vkattn_context_last_error(ctx));
    if (status == VKATTN_OK) compare(c, d, vkattn_path_name(path), out, w);
    free(out);
    free(w);
}

static void run_device(vkattn_context *ctx, const torch_case *c, const case_data *d)
{
    vkattn_layer *layer = NULL;
    vkattn_status status = vkattn_layer_create(ctx, &d->desc, vkattn_weight_file_weights(d->file), &layer);
    CHECK_MSG(status == VKATTN_OK, "%s: vkattn_layer_create: %s: %s", c->name, vkattn_status_name(status),
              vkattn_context_last_error(ctx));
    if (status != VKATTN_OK) return;
    run_device_path(ctx, layer, c, d, VKATTN_PATH_UNFUSED, d->weights_n != 0);
    run_device_path(ctx, layer, c, d, VKATTN_PATH_FUSED, 0);
    vkattn_layer_destroy(layer);
}

static int read_case(const char *line, torch_case *c)
{
    memset(c, 0, sizeof *c);
    int n = sscanf(line, "%63s %u %d %d %d %d %7s %d %7s", c->name, &c->heads, &c->add_zero_attn, &c->causal,
                   &c->has_key, &c->has_kpm, c->attn_mask, &c->mask_per_head, c->weights);
    return n == 9;
}

FIXTURE_MAIN(torch_case)
