/* vkattn against PyTorch for the attention variants (sliding window, softcap, ALiBi, sinks): every
 * case in tests/fixtures/torch_variants/ (made by make_variant_fixtures.py: the models' formulas
 * written out in torch 1.13, computed in float64 on the float32 weights and inputs, stored as
 * float32) is loaded through the public file API (vkattn_weight_file_open with the prefix
 * "model.layers.0.self_attn.", vkattn_weight_file_describe with num_heads set first) plus the
 * sinks' .npy, and run on the CPU reference. With "gpu", also on the device: the default path
 * (AUTO: fused), the unfused path, and for causal cases a KV cache per batch item fed the first
 * third of the tokens as a prompt and then one token at a time (vkattn_forward_cached), whose
 * outputs must be the fixture's rows too.
 *
 * Pass: max-abs error <= 1e-5 * max(1, max|reference output|), and no position where only one side
 * is finite.
 *
 * Usage: test_torch_variant_fixtures FIXTURES_DIR [cpu|gpu [CASE...]]; FIXTURES_DIR holds
 * cases.txt, one line per case:
 *   name heads kv_heads causal rope_theta rope_style(neox|none) window softcap alibi sinks query_len
 * query_len 0: self-attention over all S tokens; else the last query_len tokens are the queries
 * and all S the keys and values.
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
#define PREFIX "model.layers.0.self_attn."

typedef struct variant_case {
    char name[64];
    unsigned heads, kv_heads, window, alibi, sinks, query_len;
    int causal;
    double rope_theta, softcap;
    char rope_style[8];
} variant_case;

/* Everything one case needs, loaded from its files. */
typedef struct case_data {
    vkattn_weight_file *file;
    vkattn_layer_desc desc;
    vkattn_weights weights; /* the file's, with the sinks */
    vkattn_array hidden, output, sinks;
    float *query;           /* (B, L, E): the last L tokens of each batch item */
    uint32_t B, S, L, E;
    vkattn_host_forward_desc fwd; /* output left NULL */
    size_t out_n;
} case_data;

static const char *dir_g;

static int load_npy(const variant_case *c, const char *suffix, vkattn_array *a)
{
    return fixture_load_npy(dir_g, c->name, suffix, a);
}

static void case_data_free(case_data *d)
{
    vkattn_weight_file_destroy(d->file);
    vkattn_array_free(&d->hidden);
    vkattn_array_free(&d->output);
    vkattn_array_free(&d->sinks);
    free(d->query);
    memset(d, 0, sizeof *d);
}

/* Checks the files against the manifest and each other; fills the layer and forward descriptions.
 * Returns 1 when the case is ready to run. */
static int case_data_load(const variant_case *c, case_data *d)
{
    char path[1024];
    vkattn_error error = {0};
    const int failures_before = test_g.failures;
    memset(d, 0, sizeof *d);
    snprintf(path, sizeof path, "%s/%s.safetensors", dir_g, c->name);
    vkattn_status status = vkattn_weight_file_open(path, PREFIX, &d->file, &error);
    CHECK_MSG(status == VKATTN_OK, "%s: %s: %s", path, vkattn_status_name(status), error.message);
    if (status != VKATTN_OK) return 0;
    d->desc.num_heads = c->heads; /* first: describe derives num_kv_heads from it */
    vkattn_weight_file_describe(d->file, &d->desc);
    const uint32_t kv_heads = d->desc.num_kv_heads ? d->desc.num_kv_heads : d->desc.num_heads;
    CHECK_MSG(kv_heads == c->kv_heads, "%s: the file has %u K/V heads, the manifest says %u", c->name, kv_heads,
              c->kv_heads);
    d->desc.rope_theta = (float)c->rope_theta;
    d->desc.window = c->window;
    d->desc.softcap = (float)c->softcap;
    d->desc.alibi = (int)c->alibi;
    d->weights = *vkattn_weight_file_weights(d->file);
    if (!load_npy(c, "hidden", &d->hidden) || !load_npy(c, "output", &d->output)) return 0;
    if (c->sinks) {
        if (!load_npy(c, "sinks", &d->sinks)) return 0;
        CHECK_MSG(d->sinks.rank == 1 && d->sinks.dims[0] == c->heads && d->sinks.dtype == VKATTN_DTYPE_F32,
                  "%s: sinks are not f32 (H)", c->name);
        d->weights.sinks = d->sinks.data;
    }
    d->E = d->desc.embed_dim;
    d->B = d->hidden.dims[0], d->S = d->hidden.dims[1];
    d->L = c->query_len ? c->query_len : d->S;
    CHECK_MSG(d->hidden.rank == 3 && d->hidden.dtype == VKATTN_DTYPE_F32 && d->hidden.dims[2] == d->E,
              "%s: hidden is not f32 (B,S,%u)", c->name, d->E);
    CHECK_MSG(d->output.rank == 3 && d->output.dims[0] == d->B && d->output.dims[1] == d->L &&
                  d->output.dims[2] == d->E && d->L <= d->S,
              "%s: output is not (B,L,E)", c->name);
    if (test_g.failures != failures_before) return 0;

    d->out_n = (size_t)d->B * d->L * d->E;
    const float *hidden = d->hidden.data;
    d->fwd = (vkattn_host_forward_desc){.batch = d->B, .query_len = d->L, .query = hidden, .causal = c->causal};
    if (c->query_len) { /* the last L tokens attend over all S */
        d->query = malloc(d->out_n * sizeof(float));
        for (uint32_t b = 0; b < d->B; b++)
            memcpy(d->query + (size_t)b * d->L * d->E, hidden + ((size_t)b * d->S + d->S - d->L) * d->E,
                   (size_t)d->L * d->E * sizeof(float));
        d->fwd.query = d->query, d->fwd.key = hidden, d->fwd.key_len = d->S;
    }
    return 1;
}

static void compare(const variant_case *c, const case_data *d, const char *path, const float *out)
{
    fixture_check_output(c->name, path, out, d->output.data, d->out_n, TOL);
}

static void run_cpu(const variant_case *c, const case_data *d)
{
    float *out = calloc(d->out_n, sizeof *out);
    vkattn_host_forward_desc f = d->fwd;
    f.output = out;
    vkattn_error error = {0};
    vkattn_status status = vkattn_reference_forward(&d->desc, &d->weights, &f, &error);
    CHECK_MSG(status == VKATTN_OK, "%s: vkattn_reference_forward: %s: %s", c->name, vkattn_status_name(status),
              error.message);
    if (status == VKATTN_OK) compare(c, d, "cpu", out);
    free(out);
}

/* Each batch item through its own sequence of a KV cache: a prompt of a third of the tokens, then
 * one token per forward. */
static void run_cached(vkattn_context *ctx, vkattn_layer *layer, const variant_case *c, const case_data *d)
{
    const uint32_t D = d->E / c->heads, bs = 4, blocks = d->B * ((d->S + bs - 1) / bs);
    vkattn_kv_cache_desc kd = {.num_kv_heads = c->kv_heads, .head_dim = D, .num_blocks = blocks, .block_size = bs,
                               .max_sequences = d->B};
    vkattn_kv_cache *cache = NULL;
    vkattn_status status = vkattn_kv_cache_create(ctx, &kd, &cache);
    CHECK_MSG(status == VKATTN_OK, "%s: kv cache: %s", c->name, vkattn_context_last_error(ctx));
    if (status != VKATTN_OK) return;
    float *out = calloc(d->out_n, sizeof *out);
    const float *hidden = d->hidden.data;
    for (uint32_t b = 0; b < d->B && status == VKATTN_OK; b++) {
        for (uint32_t t = 0; t < d->S && status == VKATTN_OK;) {
            uint32_t n = t == 0 ? d->S / 3 + 1 : 1;
            vkattn_cached_forward_desc f = {.batch = 1, .seq_ids = &b, .new_tokens = &n,
                                            .query = hidden + ((size_t)b * d->S + t) * d->E,
                                            .output = out + ((size_t)b * d->S + t) * d->E};
            status = vkattn_forward_cached(layer, cache, &f);
            t += n;
        }
    }
    CHECK_MSG(status == VKATTN_OK, "%s: cached forward: %s", c->name, vkattn_context_last_error(ctx));
    if (status == VKATTN_OK) compare(c, d, "cached", out);
    free(out);
    vkattn_kv_cache_destroy(cache);
}

static void run_device(vkattn_context *ctx, const variant_case *c, const case_data *d)
{
    vkattn_layer *layer = NULL;
    vkattn_status status = vkattn_layer_create(ctx, &d->desc, &d->weights, &layer);
    CHECK_MSG(status == VKATTN_OK, "%s: vkattn_layer_create: %s: %s", c->name, vkattn_status_name(status),
              vkattn_context_last_error(ctx));
    if (status != VKATTN_OK) return;
    float *out = calloc(d->out_n, sizeof *out);
    const vkattn_path paths[2] = {VKATTN_PATH_AUTO, VKATTN_PATH_UNFUSED};
    for (int k = 0; k < 2; k++) {
        vkattn_host_forward_desc f = d->fwd;
        f.output = out;
        f.path = paths[k];
        status = vkattn_forward_host(layer, &f);
        CHECK_MSG(status == VKATTN_OK, "%s: vkattn_forward_host (%s): %s: %s", c->name, vkattn_path_name(paths[k]),
                  vkattn_status_name(status), vkattn_context_last_error(ctx));
        if (status == VKATTN_OK) compare(c, d, vkattn_path_name(paths[k]), out);
    }
    if (c->causal && !c->query_len) run_cached(ctx, layer, c, d);
    free(out);
    vkattn_layer_destroy(layer);
}

static int read_case(const char *line, variant_case *c)
{
    memset(c, 0, sizeof *c);
    int n = sscanf(line, "%63s %u %u %d %lf %7s %u %lf %u %u %u", c->name, &c->heads, &c->kv_heads, &c->causal,
                   &c->rope_theta, c->rope_style, &c->window, &c->softcap, &c->alibi, &c->sinks, &c->query_len);
    return n == 11 && (strcmp(c->rope_style, "none") == 0) == (c->rope_theta == 0);
}

FIXTURE_MAIN(variant_case)
