/* vkattn against PyTorch for grouped-query attention and rotary embeddings: every case in
 * tests/fixtures/torch_gqa/ (made by make_gqa_rope_fixtures.py: Hugging Face's attention written out
 * in torch 1.13, computed in float64 on the float32 weights and inputs, stored as float32) is loaded
 * through the public file API (vkattn_weight_file_open with the prefix "model.layers.0.self_attn.",
 * vkattn_weight_file_describe with num_heads set first, so it finds num_kv_heads) and run on the
 * CPU reference; with "gpu", also on the device through the default path (VKATTN_PATH_AUTO: the
 * fused kernel, since no attention weights are asked for).
 *
 * Pass: max-abs error <= 1e-5 * max(1, max|reference output|) on the output, and no position where
 * only one side is finite. The reference is float64 rounded once to float32, so a correct fp32
 * device path lands ~1e-7 from it for |values| <= 1, and the double CPU reference closer still.
 *
 * Cases with RoPE (rope_style neox or gptj) set vkattn_layer_desc.rope_theta/rope_dim/rope_style
 * and vkattn_host_forward_desc.rope_offset from the manifest.
 *
 * Usage: test_torch_gqa_fixtures FIXTURES_DIR [cpu|gpu [CASE...]]
 *   cpu (the default) runs the CPU reference only; gpu runs it and the device's default path.
 *   Naming cases runs only those. FIXTURES_DIR holds cases.txt, one line per case:
 *     name heads kv_heads causal rope_theta rope_dim rope_style(neox|gptj|none) rope_offset
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

typedef struct gqa_case {
    char name[64];
    unsigned heads, kv_heads, rope_dim, rope_offset;
    int causal;
    double rope_theta;
    char rope_style[8]; /* neox, gptj, none */
} gqa_case;

/* Everything one case needs, loaded from its files. */
typedef struct case_data {
    vkattn_weight_file *file;
    vkattn_layer_desc desc;
    vkattn_array query, output;
    vkattn_host_forward_desc fwd; /* output left NULL */
    size_t out_n;
} case_data;

static const char *dir_g;

static int has_rope(const gqa_case *c) { return strcmp(c->rope_style, "none") != 0; }

static int load_npy(const gqa_case *c, const char *suffix, vkattn_array *a)
{
    return fixture_load_npy(dir_g, c->name, suffix, a);
}

static void case_data_free(case_data *d)
{
    vkattn_weight_file_destroy(d->file);
    vkattn_array_free(&d->query);
    vkattn_array_free(&d->output);
    memset(d, 0, sizeof *d);
}

/* Sets the RoPE fields of d->desc and d->fwd from the manifest. */
static void set_rope(const gqa_case *c, case_data *d)
{
    d->desc.rope_theta = (float)c->rope_theta;
    d->desc.rope_dim = c->rope_dim;
    d->desc.rope_style = strcmp(c->rope_style, "gptj") == 0 ? VKATTN_ROPE_GPTJ : VKATTN_ROPE_NEOX;
    d->fwd.rope_offset = c->rope_offset;
}

/* Checks the files against the manifest and each other; fills d->desc and d->fwd. Returns 1 when
 * the case is ready to run, 0 on a failure. */
static int case_data_load(const gqa_case *c, case_data *d)
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
    CHECK_MSG(d->desc.num_heads == c->heads && kv_heads == c->kv_heads,
              "%s: the file describes H=%u, H_kv=%u (num_kv_heads %u); the manifest says H=%u, H_kv=%u", c->name,
              d->desc.num_heads, kv_heads, d->desc.num_kv_heads, c->heads, c->kv_heads);
    CHECK_MSG(strcmp(c->rope_style, "none") == 0 || strcmp(c->rope_style, "neox") == 0 ||
                  strcmp(c->rope_style, "gptj") == 0,
              "%s: unknown rope_style '%s'", c->name, c->rope_style);

    if (!load_npy(c, "query", &d->query) || !load_npy(c, "output", &d->output)) return 0;
    const uint32_t E = d->desc.embed_dim;
    const uint32_t B = d->query.dims[0], L = d->query.dims[1];
    CHECK_MSG(d->query.rank == 3 && d->query.dtype == VKATTN_DTYPE_F32 && d->query.dims[2] == E,
              "%s: query is not f32 (B,L,%u)", c->name, E);
    CHECK_MSG(d->output.rank == 3 && d->output.dtype == VKATTN_DTYPE_F32 && d->output.dims[0] == B &&
                  d->output.dims[1] == L && d->output.dims[2] == E,
              "%s: output is not f32 (B,L,E)", c->name);
    if (has_rope(c)) {
        const uint32_t D = c->heads ? E / c->heads : 0;
        CHECK_MSG(c->rope_theta > 0 && c->rope_dim > 0 && c->rope_dim % 2 == 0 && c->rope_dim <= D,
                  "%s: rope_theta %g, rope_dim %u (D=%u)", c->name, c->rope_theta, c->rope_dim, D);
    }
    if (test_g.failures != failures_before) return 0; /* run nothing on a mismatched shape */

    d->out_n = (size_t)B * L * E;
    d->fwd = (vkattn_host_forward_desc){
        .batch = B,
        .query_len = L,
        .key_len = L,
        .query = d->query.data, /* self-attention: keys and values are the query */
        .causal = c->causal,
    };
    if (has_rope(c)) set_rope(c, d);
    return 1;
}

static void compare(const gqa_case *c, const case_data *d, const char *path, const float *out)
{
    fixture_check_output(c->name, path, out, d->output.data, d->out_n, TOL);
}

static void run_cpu(const gqa_case *c, const case_data *d)
{
    float *out = calloc(d->out_n, sizeof *out);
    vkattn_host_forward_desc f = d->fwd;
    f.output = out;
    vkattn_error error = {0};
    vkattn_status status = vkattn_reference_forward(&d->desc, vkattn_weight_file_weights(d->file), &f, &error);
    CHECK_MSG(status == VKATTN_OK, "%s: vkattn_reference_forward: %s: %s", c->name, vkattn_status_name(status),
              error.message);
    if (status == VKATTN_OK) compare(c, d, "cpu", out);
    free(out);
}

static void run_device(vkattn_context *ctx, const gqa_case *c, const case_data *d)
{
    vkattn_layer *layer = NULL;
    vkattn_status status = vkattn_layer_create(ctx, &d->desc, vkattn_weight_file_weights(d->file), &layer);
    CHECK_MSG(status == VKATTN_OK, "%s: vkattn_layer_create: %s: %s", c->name, vkattn_status_name(status),
              vkattn_context_last_error(ctx));
    if (status != VKATTN_OK) return;
    float *out = calloc(d->out_n, sizeof *out);
    vkattn_host_forward_desc f = d->fwd;
    f.output = out;
    f.path = VKATTN_PATH_AUTO;
    status = vkattn_forward_host(layer, &f);
    CHECK_MSG(status == VKATTN_OK, "%s: vkattn_forward_host (auto): %s: %s", c->name, vkattn_status_name(status),
              vkattn_context_last_error(ctx));
    if (status == VKATTN_OK) compare(c, d, "auto", out);
    free(out);
    vkattn_layer_destroy(layer);
}

static int read_case(const char *line, gqa_case *c)
{
    memset(c, 0, sizeof *c);
    int n = sscanf(line, "%63s %u %u %d %lf %u %7s %u", c->name, &c->heads, &c->kv_heads, &c->causal,
                   &c->rope_theta, &c->rope_dim, c->rope_style, &c->rope_offset);
    return n == 8;
}

FIXTURE_MAIN(gqa_case)
