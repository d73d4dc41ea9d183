/* Today's model families as an application runs them: each family's real config.json
 * (tests/fixtures/models/<family>/) read by vkattn_model_config, its layer's weights written as a
 * BF16 safetensors checkpoint under their Hugging Face names (beside a neighbouring layer's and
 * the layer's own layernorm, which must not be picked up) and read back by vkattn_weight_file with
 * the prefix the config gives; then the layer on the CPU path, both device paths and the KV cache
 * token by token, each against the family's float64 fixture (make_model_fixtures.py, written from
 * Hugging Face's modeling and rope code). Consecutive cases on the same layer (the same weights)
 * share one checkpoint and one vkattn_layer.
 *
 * The fixtures are float64; vkattn_npy_read gives them as float32, whose rounding (6e-8
 * relative) is far below the tolerances. Tolerances, today's for fp32 against a double reference: NMSE <= 1e-10 and max-abs <= 1e-5 *
 * max(1, max|ref|) (the fixtures' angles are float64 products, vkattn's fp32 ones: case.json's
 * float32_angle_max_abs_change, at most 1.3e-6, is the share of that). The cache runs the cases
 * that start at position 0 (a cache starts there); a case's rows before first_row are fed as one
 * prompt chunk, the rest one token at a time.
 *
 * Usage: test_models FIXTURE_DIR [family]
 */
#define _POSIX_C_SOURCE 200809L

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test.h"
#include "model_fixtures.h"
#include "test_checkpoint.h"
#include "test_tmp.h"

#define NMSE_TOL 1e-10
#define REL_TOL 1e-5

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        text = NULL;
    }
    if (text) text[n] = '\0';
    fclose(f);
    return text;
}

/* ---- one case ---------------------------------------------------------------------------------- */

/* Compares rows [0, rows) of E values with the fixture's; returns 1 if within tolerance. */
static int compare_rows(const char *what, const float *got, const float *want, size_t rows, size_t E)
{
    double err2 = 0, ref2 = 0, max_abs = 0, ref_max = 0;
    size_t bad = 0;
    for (size_t i = 0; i < rows * E; i++) {
        if (!isfinite(got[i])) {
            bad++;
            continue;
        }
        double d = fabs((double)got[i] - want[i]);
        max_abs = d > max_abs ? d : max_abs;
        ref_max = fabs(want[i]) > ref_max ? fabs(want[i]) : ref_max;
        err2 += d * d;
        ref2 += (double)want[i] * want[i];
    }
    double nmse = ref2 > 0 ? err2 / ref2 : err2, tol_abs = REL_TOL * (ref_max > 1 ? ref_max : 1);
    int ok = bad == 0 && nmse <= NMSE_TOL && max_abs <= tol_abs;
    printf("    %-28s %4zu rows: max-abs %.3g nmse %.3g%s\n", what, rows, max_abs, nmse, ok ? "" : "  FAILED");
    CHECK_MSG(bad == 0, "%s: %zu outputs not finite", what, bad);
    CHECK_MSG(nmse <= NMSE_TOL, "%s: NMSE %.3g > %.1g", what, nmse, NMSE_TOL);
    CHECK_MSG(max_abs <= tol_abs, "%s: max-abs %.3g > %.3g", what, max_abs, tol_abs);
    return ok;
}

/* The KV cache, fed rows [0, first) as one prompt chunk and then one token at a time. */
static void run_cached(vkattn_context *ctx, vkattn_layer *layer, const vkattn_kv_cache_desc *base, const float *x,
                       uint32_t L, uint32_t E, uint32_t first, const float *want, const char *name)
{
    vkattn_kv_cache_desc cd = *base;
    cd.block_size = 16;
    cd.num_blocks = (L + 15) / 16;
    vkattn_kv_cache *cache = NULL;
    CHECK_STATUS(vkattn_kv_cache_create(ctx, &cd, &cache), VKATTN_OK);
    if (!cache) return;
    float *out = malloc((size_t)L * E * sizeof *out);
    for (uint32_t t = 0; t < L;) {
        uint32_t n = t == 0 && first > 0 ? first : 1;
        vkattn_cached_forward_desc fd = {.batch = 1, .new_tokens = &n, .query = x + (size_t)t * E,
                                         .output = out + (size_t)t * E};
        vkattn_status status = vkattn_forward_cached(layer, cache, &fd);
        CHECK_MSG(status == VKATTN_OK, "%s: cached forward at token %u: %s", name, t, vkattn_context_last_error(ctx));
        if (status != VKATTN_OK) break;
        t += n;
    }
    compare_rows("cache, token by token", out + (size_t)first * E, want, L - first, E);
    free(out);
    vkattn_kv_cache_destroy(cache);
}

/* A layer of a family loaded from its checkpoint: consecutive cases with the same weights (equal
 * layer_key) share it, so each checkpoint is written and read once. */
typedef struct loaded_layer {
    char key[4096]; /* layer_key of the case it was loaded for */
    vkattn_model_config *config;
    vkattn_model_info info;
    vkattn_layer_desc desc;
    vkattn_kv_cache_desc cache_desc;
    vkattn_weight_file *file;
    vkattn_layer *layer;
} loaded_layer;

static void unload(loaded_layer *ll)
{
    vkattn_layer_destroy(ll->layer);
    vkattn_weight_file_destroy(ll->file);
    vkattn_model_config_destroy(ll->config);
    memset(ll, 0, sizeof *ll);
}

/* The weights a case names (every tensor but the input: name, kind, shape, digest), with the layer:
 * equal keys, equal layers. */
static void layer_key(const cJSON *c, char *key, size_t size)
{
    size_t used = (size_t)snprintf(key, size, "%u", (uint32_t)cJSON_GetObjectItem(c, "layer")->valuedouble);
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(c, "tensors")) {
        if (strcmp(cJSON_GetObjectItem(t, "kind")->valuestring, "input") == 0 || used >= size) continue;
        const cJSON *shape = cJSON_GetObjectItem(t, "shape");
        used += (size_t)snprintf(key + used, size - used, ";%s:%s:%d:%d=%s", cJSON_GetObjectItem(t, "name")->valuestring,
                                 cJSON_GetObjectItem(t, "kind")->valuestring,
                                 (int)cJSON_GetArrayItem(shape, 0)->valuedouble,
                                 cJSON_GetArraySize(shape) > 1 ? (int)cJSON_GetArrayItem(shape, 1)->valuedouble : 1,
                                 cJSON_GetObjectItem(t, "digest")->valuestring);
    }
    CHECK_MSG(used < size, "a case's weights do not fit the layer key");
}

/* Tensor t of a case (name, kind, shape, digest), made by the fixtures' scheme and checked against
 * its digest: its values (malloc'd) and its shape (*rank; d[1] = 1 for a vector). */
static float *case_tensor(const cJSON *t, mf_kind kind, const char *case_name, uint32_t *rank, uint32_t d[2])
{
    const char *tname = cJSON_GetObjectItem(t, "name")->valuestring;
    const cJSON *shape = cJSON_GetObjectItem(t, "shape");
    *rank = (uint32_t)cJSON_GetArraySize(shape);
    d[0] = (uint32_t)cJSON_GetArrayItem(shape, 0)->valuedouble;
    d[1] = *rank == 2 ? (uint32_t)cJSON_GetArrayItem(shape, 1)->valuedouble : 1;
    size_t n = (size_t)d[0] * d[1];
    float *values = malloc(n * sizeof *values);
    CHECK_MSG(values != NULL, "%s: no memory for %s", case_name, tname);
    if (!values) return NULL;
    mf_fill(tname, kind, *rank == 2 ? d[1] : d[0], values, n);
    uint64_t digest = strtoull(cJSON_GetObjectItem(t, "digest")->valuestring, NULL, 0);
    CHECK_MSG(mf_digest(values, n) == digest, "%s: %s differs from the fixture's", case_name, tname);
    return values;
}

/* The layer a case runs on, from the family's config.json and a checkpoint of the case's weights
 * (each checked against its digest) beside decoys; ll->layer stays NULL where anything failed. */
static void load_layer(vkattn_context *ctx, const char *dir, const char *family, const cJSON *c, const char *key,
                       const char *tmp, loaded_layer *ll)
{
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    const uint32_t layer_n = (uint32_t)cJSON_GetObjectItem(c, "layer")->valuedouble;
    snprintf(ll->key, sizeof ll->key, "%s", key);

    /* the config's description of the layer, and where its weights are */
    char path[1024], prefix[64];
    snprintf(path, sizeof path, "%s/%s/config.json", dir, family);
    vkattn_error err = {0};
    CHECK_MSG(vkattn_model_config_open(path, &ll->config, &err) == VKATTN_OK, "%s: %s", path, err.message);
    if (!ll->config) return;
    vkattn_status status =
        vkattn_model_config_layer(ll->config, layer_n, &ll->desc, &ll->cache_desc, prefix, sizeof prefix, &err);
    CHECK_MSG(status == VKATTN_OK, "%s/%s: layer %u: %s", family, name, layer_n, err.message);
    if (status != VKATTN_OK) return;
    vkattn_model_config_get_info(ll->config, &ll->info);

    /* the checkpoint: the case's weights, checked against their digests, and decoys */
    checkpoint ck = {0};
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(c, "tensors")) {
        const char *tname = cJSON_GetObjectItem(t, "name")->valuestring;
        mf_kind kind = MF_KIND_WEIGHT;
        CHECK(mf_kind_parse(cJSON_GetObjectItem(t, "kind")->valuestring, &kind) == 0);
        if (kind == MF_KIND_INPUT) continue;
        uint32_t rank, d[2];
        free(case_tensor(t, kind, name, &rank, d));
        CHECK_MSG(strncmp(tname, prefix, strlen(prefix)) == 0, "%s: %s is not under the config's prefix %s", name,
                  tname, prefix);
        ck_add(&ck, tname, kind, rank, d[0], d[1]);
    }
    char decoy[160];
    snprintf(decoy, sizeof decoy, "model.layers.%u.input_layernorm.weight", layer_n);
    ck_add(&ck, decoy, MF_KIND_NORM, 1, ll->desc.embed_dim, 1);
    snprintf(decoy, sizeof decoy, "model.layers.%u5.self_attn.q_proj.weight", layer_n); /* layer 15 beside 1 */
    ck_add(&ck, decoy, MF_KIND_WEIGHT, 2, 8, ll->desc.embed_dim);
    char ck_path[512];
    snprintf(ck_path, sizeof ck_path, "%s/%s_%s.safetensors", tmp, family, name);
    CHECK(ck_write(&ck, ck_path));
    ck_free(&ck);
    CHECK_MSG(vkattn_weight_file_open(ck_path, prefix, &ll->file, &err) == VKATTN_OK, "%s: %s", name, err.message);
    remove(ck_path);
    if (!ll->file) return;
    /* the file agrees with the config on every width; sinks where the family has them */
    vkattn_layer_desc from_file = {.num_heads = ll->desc.num_heads};
    vkattn_weight_file_describe(ll->file, &from_file);
    CHECK_MSG(from_file.embed_dim == ll->desc.embed_dim && from_file.no_bias == ll->desc.no_bias &&
                  (from_file.num_kv_heads ? from_file.num_kv_heads : ll->desc.num_heads) == ll->desc.num_kv_heads &&
                  from_file.qk_norm == ll->desc.qk_norm,
              "%s: the checkpoint and config.json disagree", name);
    CHECK((vkattn_weight_file_weights(ll->file)->sinks != NULL) == ll->info.attention_sinks);
    /* as an application checks the config's description against the tensors */
    CHECK_MSG(vkattn_weight_file_check(ll->file, &ll->desc, &err) == VKATTN_OK, "%s: %s", name, err.message);

    ll->desc.host_weights = VKATTN_HOST_WEIGHTS_BORROW; /* the CPU path reads the file's arrays */
    CHECK_MSG(vkattn_layer_create(ctx, &ll->desc, vkattn_weight_file_weights(ll->file), &ll->layer) == VKATTN_OK,
              "%s: %s", name, vkattn_context_last_error(ctx));
}

static void run_case(vkattn_context *ctx, const char *dir, const char *family, const cJSON *c, const char *tmp,
                     loaded_layer *ll)
{
    const char *name = cJSON_GetObjectItem(c, "name")->valuestring;
    const uint32_t layer_n = (uint32_t)cJSON_GetObjectItem(c, "layer")->valuedouble;
    const uint32_t L = (uint32_t)cJSON_GetObjectItem(c, "tokens")->valuedouble;
    const uint32_t start = (uint32_t)cJSON_GetObjectItem(c, "start_position")->valuedouble;
    const cJSON *first_item = cJSON_GetObjectItem(c, "first_row");
    const uint32_t first = first_item ? (uint32_t)first_item->valuedouble : 0;
    char key[sizeof ll->key];
    layer_key(c, key, sizeof key);
    const int reused = ll->layer && strcmp(key, ll->key) == 0; /* a failed load is tried again */
    printf("  %s/%s: layer %u, %u tokens from position %u%s\n", family, name, layer_n, L, start,
           reused ? " (the previous case's layer)" : "");
    if (!reused) {
        unload(ll);
        load_layer(ctx, dir, family, c, key, tmp, ll);
    }

    /* the case's input, checked against its digest */
    float *x = NULL;
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(c, "tensors")) {
        mf_kind kind = MF_KIND_WEIGHT;
        CHECK(mf_kind_parse(cJSON_GetObjectItem(t, "kind")->valuestring, &kind) == 0);
        uint32_t rank, d[2];
        if (kind == MF_KIND_INPUT && !x) x = case_tensor(t, kind, name, &rank, d);
    }
    CHECK_MSG(x != NULL, "%s: no input", name);

    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", dir, family, cJSON_GetObjectItem(c, "output")->valuestring);
    vkattn_array want = {0};
    vkattn_error err = {0};
    CHECK_MSG(vkattn_npy_read(path, &want, &err) == VKATTN_OK, "%s", err.message);
    CHECK(want.dtype == VKATTN_DTYPE_F32 && want.rank == 2 && want.dims[0] == L - first &&
          want.dims[1] == ll->desc.embed_dim);

    if (ll->layer && x && want.data) {
        const uint32_t E = ll->desc.embed_dim;
        float *out = malloc((size_t)L * E * sizeof *out);
        static const vkattn_path paths[] = {VKATTN_PATH_CPU, VKATTN_PATH_UNFUSED, VKATTN_PATH_FUSED};
        for (size_t p = 0; p < 3; p++) {
            vkattn_host_forward_desc f = {.batch = 1, .query_len = L, .query = x, .output = out, .causal = 1,
                                          .rope_offset = start, .path = paths[p]};
            vkattn_status status = vkattn_forward_host(ll->layer, &f);
            CHECK_MSG(status == VKATTN_OK, "%s/%s: %s", name, vkattn_path_name(paths[p]), vkattn_context_last_error(ctx));
            if (status == VKATTN_OK)
                compare_rows(vkattn_path_name(paths[p]), out + (size_t)first * E, want.data, L - first, E);
        }
        if (start == 0) run_cached(ctx, ll->layer, &ll->cache_desc, x, L, E, first, want.data, name);
        free(out);
    }
    vkattn_array_free(&want);
    free(x);
}

static void run_family(vkattn_context *ctx, const char *dir, const char *family, const char *tmp)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/case.json", dir, family);
    char *text = read_text(path);
    CHECK_MSG(text != NULL, "cannot read %s", path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    free(text);
    loaded_layer ll = {0};
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(root, "cases")) run_case(ctx, dir, family, c, tmp, &ll);
    unload(&ll);
    cJSON_Delete(root);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR [family]\n", argv[0]);
        return 2;
    }
    static const char *const families[] = {"llama3", "qwen3",   "gemma3", "gemma2", "gpt_oss", "mistral_nemo",
                                           "phi3_5", "phi4_mini", "olmo2", "smollm3"};
    if (test_tmp_make("test_models") != 0) return 1;
    const char *tmp = test_tmp_dir;
    vkattn_context *ctx = gpu_test_context();
    int ran = 0;
    for (size_t i = 0; i < sizeof families / sizeof families[0]; i++) {
        if (argc > 2 && strcmp(argv[2], families[i]) != 0) continue;
        run_family(ctx, argv[1], families[i], tmp);
        ran++;
    }
    CHECK_MSG(ran > 0, "unknown family %s", argc > 2 ? argv[2] : "");
    gpu_test_finish_context(ctx);
    test_tmp_remove();
    return test_finish();
}
