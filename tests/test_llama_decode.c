#define _POSIX_C_SOURCE 200809L /* popen */
/* The example tools/examples/llama_decode.c, run as the separate program it is, against float64
 * greedy decoding of a tiny random-weight Llama (tests/fixtures/llama_decode/<case>/, made by
 * tests/fixtures/make_llama_decode_fixture.py, whose docstring has the formulas):
 *
 *   vkattn_test_llama_decode CASE_DIR EXAMPLE CHECKPOINT_DTYPE KV_CACHE_DTYPE [shards]
 *
 * writes the case's config.json and a model.safetensors in CHECKPOINT_DTYPE (F32, BF16 or F16;
 * every value is exact in each) into a scratch directory (with `shards`, two shards split inside a
 * layer and the model.safetensors.index.json naming them, as Hugging Face saves a large model), each tensor made by model_fixtures.h's
 * scheme times its scale and checked against case.json's digest; runs EXAMPLE on it with the
 * case's prompt and --kv-cache-dtype KV_CACHE_DTYPE (f32 or f16); then requires the generated ids
 * to equal the reference's, one for one (its stop at an end-of-sequence token included), and each
 * step's logits to be within max-abs <= bound * max(1, max|reference row|):
 *   f32 cache  2e-5  (measured 4.2e-7 on lavapipe: fp32 attention and host math)
 *   f16 cache  2e-3  (measured 3.3e-4: keys and values rounded to 11 bits)
 * Exact ids are a fair demand only while no step's best two logits are closer than the error can
 * move them: the test checks that case.json's min_top2_gap exceeds twice the bound first. The
 * example exits non-zero on a validation message (GPU tests run with VKATTN_VALIDATION=1). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "../tools/compare.h"
#include "format/half.h"
#include "model_fixtures.h"
#include "test_tmp.h"
#include "test_util.h"
#include "vkattn.h"

enum { MAX_TENSORS = 128, MAX_TOKENS = 256 };

typedef struct tensor {
    const char *name;
    uint32_t rank, dims[2];
    float *values;
} tensor;

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long size;
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (text = malloc((size_t)size + 1)) && fread(text, 1, (size_t)size, f) == (size_t)size)
        text[size] = 0;
    else
        free(text), text = NULL;
    if (f) fclose(f);
    return text;
}

static size_t elems(const tensor *t) { return t->rank == 1 ? t->dims[0] : (size_t)t->dims[0] * t->dims[1]; }

/* Makes case.json's tensors (kind, scale, shape) and checks each digest; returns how many. */
static uint32_t make_tensors(const cJSON *list, tensor *out)
{
    uint32_t n = 0;
    const cJSON *t;
    cJSON_ArrayForEach(t, list) {
        tensor *x = &out[n];
        mf_kind kind = MF_KIND_WEIGHT;
        const cJSON *shape = cJSON_GetObjectItem(t, "shape");
        x->name = cJSON_GetObjectItem(t, "name")->valuestring;
        x->rank = (uint32_t)cJSON_GetArraySize(shape);
        CHECK_MSG(n < MAX_TENSORS && (x->rank == 1 || x->rank == 2), "%s: rank %u", x->name, x->rank);
        CHECK(mf_kind_parse(cJSON_GetObjectItem(t, "kind")->valuestring, &kind) == 0);
        if (test_g.failures) break;
        for (uint32_t d = 0; d < x->rank; d++) x->dims[d] = (uint32_t)cJSON_GetArrayItem(shape, (int)d)->valuedouble;
        float scale = (float)cJSON_GetObjectItem(t, "scale")->valuedouble;
        x->values = malloc(elems(x) * sizeof(float));
        mf_fill(x->name, kind, x->dims[x->rank - 1], x->values, elems(x));
        for (size_t i = 0; i < elems(x); i++) x->values[i] *= scale; /* a power of two: exact */
        uint64_t want = strtoull(cJSON_GetObjectItem(t, "digest")->valuestring, NULL, 0);
        CHECK_MSG(mf_digest(x->values, elems(x)) == want, "%s: digest differs from case.json's", x->name);
        n++;
    }
    return n;
}

/* A safetensors file of the tensors in `dtype` (F32, BF16 or F16): 1 on success. */
static int write_safetensors(const char *path, const tensor *t, uint32_t count, const char *dtype)
{
    size_t size = !strcmp(dtype, "F32") ? 4 : 2, cap = 256 * (size_t)count + 16, used = 0, offset = 0;
    char *header = malloc(cap);
    used += (size_t)snprintf(header, cap, "{");
    for (uint32_t i = 0; i < count; i++) {
        size_t bytes = elems(&t[i]) * size;
        char shape[48];
        if (t[i].rank == 1) snprintf(shape, sizeof shape, "[%u]", t[i].dims[0]);
        else snprintf(shape, sizeof shape, "[%u,%u]", t[i].dims[0], t[i].dims[1]);
        used += (size_t)snprintf(header + used, cap - used,
                                 "%s\"%s\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}", i ? "," : "",
                                 t[i].name, dtype, shape, offset, offset + bytes);
        offset += bytes;
    }
    used += (size_t)snprintf(header + used, cap - used, "}");
    while (used % 8) header[used++] = ' ';
    FILE *f = fopen(path, "wb");
    uint8_t le[8];
    for (int b = 0; b < 8; b++) le[b] = (uint8_t)((uint64_t)used >> (8 * b));
    int ok = f && fwrite(le, 1, 8, f) == 8 && fwrite(header, 1, used, f) == used;
    for (uint32_t i = 0; ok && i < count; i++)
        for (size_t j = 0; ok && j < elems(&t[i]); j++) {
            float v = t[i].values[j];
            uint32_t bits;
            memcpy(&bits, &v, sizeof bits);
            if (size == 2) bits = !strcmp(dtype, "BF16") ? bits >> 16 : vka_f32_to_f16(v); /* both exact here */
            uint8_t bytes[4] = {(uint8_t)bits, (uint8_t)(bits >> 8), (uint8_t)(bits >> 16), (uint8_t)(bits >> 24)};
            ok = fwrite(bytes, 1, size, f) == size;
        }
    free(header);
    return f && fclose(f) == 0 && ok;
}

/* Runs `command` and reads the ids it prints on one line; returns its exit status (-1 if it did not
 * run or did not exit). */
static int run_example(const char *command, uint32_t *ids, uint32_t *count)
{
    FILE *p = popen(command, "r");
    if (!p) return -1;
    char line[8192] = "";
    if (!fgets(line, sizeof line, p)) line[0] = 0;
    *count = 0;
    for (char *s = line, *end; *count < MAX_TOKENS; s = end) {
        unsigned long id = strtoul(s, &end, 10);
        if (end == s) break;
        ids[(*count)++] = (uint32_t)id;
    }
    int status = pclose(p);
    return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The checkpoint as two shards split at tensor `split` (inside a layer) and their index. */
static int write_shards(const tensor *t, uint32_t count, uint32_t split, const char *dtype)
{
    char path[1100];
    test_tmp_path(path, sizeof path, "model-00001-of-00002.safetensors");
    int ok = write_safetensors(path, t, split, dtype);
    test_tmp_path(path, sizeof path, "model-00002-of-00002.safetensors");
    ok = ok && write_safetensors(path, t + split, count - split, dtype);
    test_tmp_path(path, sizeof path, "model.safetensors.index.json");
    FILE *f = fopen(path, "wb");
    ok = ok && f && fputs("{\"metadata\": {}, \"weight_map\": {", f) >= 0;
    for (uint32_t i = 0; ok && i < count; i++)
        ok = fprintf(f, "%s\n  \"%s\": \"model-0000%d-of-00002.safetensors\"", i ? "," : "", t[i].name, i < split ? 1 : 2) > 0;
    ok = ok && fputs("\n}}\n", f) >= 0;
    return f && fclose(f) == 0 && ok;
}

int main(int argc, char **argv)
{
    if ((argc != 5 && (argc != 6 || strcmp(argv[5], "shards"))) || (strcmp(argv[3], "F32") && strcmp(argv[3], "BF16") && strcmp(argv[3], "F16")) ||
        (strcmp(argv[4], "f32") && strcmp(argv[4], "f16"))) {
        fprintf(stderr, "usage: %s CASE_DIR EXAMPLE F32|BF16|F16 f32|f16 [shards]\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1], *example = argv[2], *dtype = argv[3], *kv = argv[4];
    const double bound = !strcmp(kv, "f32") ? 2e-5 : 2e-3;
    char path[1024], config[1100], weights[1100], logits[1100], command[8192];
    snprintf(path, sizeof path, "%s/case.json", dir);
    char *text = read_text(path);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!doc) return fprintf(stderr, "cannot read %s\n", path), 1;
    if (test_tmp_make("llama_decode") != 0) return 1;
    test_tmp_path(config, sizeof config, "config.json");
    test_tmp_path(weights, sizeof weights, "model.safetensors");
    test_tmp_path(logits, sizeof logits, "logits.npy");

    /* the model: config.json as it is, the checkpoint written in the asked dtype */
    static tensor tensors[MAX_TENSORS];
    uint32_t count = make_tensors(cJSON_GetObjectItem(doc, "tensors"), tensors);
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *config_text = read_text(path);
    FILE *f = config_text ? fopen(config, "wb") : NULL;
    CHECK_MSG(f && fputs(config_text, f) >= 0 && fclose(f) == 0, "cannot copy %s", path);
    free(config_text);
    const int shards = argc == 6;
    /* the split falls between two attention tensors of a layer in the middle: vkattn reads that
     * layer's attention from both shards */
    uint32_t split = count / 2;
    while (split + 1 < count && !(strstr(tensors[split - 1].name, "self_attn.") && strstr(tensors[split].name, "self_attn.")))
        split++;
    CHECK_MSG(split + 1 < count, "no two attention tensors follow each other in the case's list");
    CHECK_MSG(shards ? write_shards(tensors, count, split, dtype) : write_safetensors(weights, tensors, count, dtype),
              "cannot write the checkpoint in %s", test_tmp_dir);
    if (shards) printf("two shards, split before %s\n", tensors[split].name);
    for (uint32_t i = 0; i < count; i++) free(tensors[i].values);

    /* the example, with the case's prompt */
    uint32_t steps = (uint32_t)cJSON_GetObjectItem(doc, "max_new_tokens")->valuedouble;
    int used = snprintf(command, sizeof command, "'%s' --model '%s' --steps %u --kv-cache-dtype %s --logits '%s'",
                        example, test_tmp_dir, steps, kv, logits);
    const cJSON *id;
    cJSON_ArrayForEach(id, cJSON_GetObjectItem(doc, "prompt"))
        used += snprintf(command + used, sizeof command - (size_t)used, " %u", (unsigned)id->valuedouble);
    uint32_t got[MAX_TOKENS], got_count = 0;
    int status = test_g.failures ? -1 : run_example(command, got, &got_count);
    CHECK_MSG(status == 0, "%s: exit status %d", command, status);

    /* the ids, one for one */
    const cJSON *want = cJSON_GetObjectItem(doc, "tokens");
    uint32_t want_count = (uint32_t)cJSON_GetArraySize(want), matching = 0;
    while (matching < got_count && matching < want_count &&
           got[matching] == (uint32_t)cJSON_GetArrayItem(want, (int)matching)->valuedouble)
        matching++;
    CHECK_MSG(got_count == want_count && matching == want_count, "%u ids, %u expected; the first %u match", got_count,
              want_count, matching);

    /* the logits, step by step; exact ids need the best two logits farther apart than the error */
    vkattn_array g = {0}, r = {0};
    vkattn_error error = {0};
    snprintf(path, sizeof path, "%s/logits.npy", dir);
    CHECK_MSG(vkattn_npy_read(path, &r, &error) == VKATTN_OK, "%s", error.message);
    if (status == 0) CHECK_MSG(vkattn_npy_read(logits, &g, &error) == VKATTN_OK, "%s", error.message);
    double worst = 0, worst_ratio = 0, ref_max = 0;
    if (g.data && r.data && g.rank == 2 && r.rank == 2 && g.dims[0] == r.dims[0] && g.dims[1] == r.dims[1]) {
        for (uint32_t s = 0; s < r.dims[0]; s++) {
            size_t V = r.dims[1];
            compare_stats e = compare_arrays((const float *)g.data + s * V, (const float *)r.data + s * V, V);
            double limit = bound * (e.ref_max > 1 ? e.ref_max : 1);
            CHECK_MSG(e.nonfinite == 0 && e.max_abs <= limit, "step %u: logits max-abs %.3g > %.3g", s, e.max_abs, limit);
            if (e.max_abs > worst) worst = e.max_abs;
            if (e.max_abs / limit * bound > worst_ratio) worst_ratio = e.max_abs / limit * bound;
            if (e.ref_max > ref_max) ref_max = e.ref_max;
        }
    } else {
        CHECK_MSG(0, "logits: (%u, %u), expected (%u, %u)", g.dims[0], g.dims[1], r.dims[0], r.dims[1]);
    }
    double gap = cJSON_GetObjectItem(doc, "min_top2_gap")->valuedouble;
    CHECK_MSG(gap > 2 * bound * ref_max, "min_top2_gap %.3g: the bound %.3g x %.3g could reorder a step's best two",
              gap, bound, ref_max);
    printf("%s, %s checkpoint%s, %s cache: %u/%u ids match; logits max-abs %.3g (%.2g x max(1, max|row|); bound %.0e; "
           "min top-2 gap %.3g)\n",
           cJSON_GetObjectItem(doc, "name")->valuestring, dtype, shards ? " in two shards" : "", kv, matching, want_count, worst, worst_ratio, bound, gap);

    /* The F32 row also runs what a model's other files can say. generate() stops at
     * generation_config.json's eos_token_id: make the 8th id one; the ids end at its first
     * occurrence. A config.json of another width (hidden_size doubled, the heads as they are) is
     * refused by vkattn_weight_file_check before a layer reads past the checkpoint's arrays. */
    if (!strcmp(dtype, "F32") && status == 0 && want_count >= 8) {
        char generation[1100], err[1100], text2[256];
        test_tmp_path(generation, sizeof generation, "generation_config.json");
        test_tmp_path(err, sizeof err, "stderr.txt");
        uint32_t eos = (uint32_t)cJSON_GetArrayItem(want, 7)->valuedouble, stop = 0;
        while ((uint32_t)cJSON_GetArrayItem(want, (int)stop)->valuedouble != eos) stop++;
        snprintf(text2, sizeof text2, "{\"eos_token_id\": [%u]}\n", eos);
        f = fopen(generation, "wb");
        CHECK(f && fputs(text2, f) >= 0 && fclose(f) == 0);
        status = run_example(command, got, &got_count);
        matching = 0;
        while (matching < got_count && matching <= stop &&
               got[matching] == (uint32_t)cJSON_GetArrayItem(want, (int)matching)->valuedouble)
            matching++;
        CHECK_MSG(status == 0 && got_count == stop + 1 && matching == stop + 1,
                  "generation_config.json's eos %u: %u ids (exit %d), expected the reference's first %u", eos, got_count,
                  status, stop + 1);
        remove(generation);
        cJSON *cfg = NULL;
        snprintf(path, sizeof path, "%s/config.json", dir);
        char *cfg_text = read_text(path);
        if (cfg_text) cfg = cJSON_Parse(cfg_text);
        free(cfg_text);
        cJSON *hidden = cJSON_GetObjectItem(cfg, "hidden_size");
        CHECK(cJSON_IsNumber(hidden));
        if (cJSON_IsNumber(hidden)) cJSON_SetNumberValue(hidden, 2 * hidden->valuedouble);
        char *wide = cfg ? cJSON_Print(cfg) : NULL;
        f = wide ? fopen(config, "wb") : NULL;
        CHECK(f && fputs(wide, f) >= 0 && fclose(f) == 0);
        free(wide), cJSON_Delete(cfg);
        char redirected[9400];
        snprintf(redirected, sizeof redirected, "%s 2>'%s'", command, err);
        status = run_example(redirected, got, &got_count);
        char *said = read_text(err);
        CHECK_MSG(status == 1 && got_count == 0 && said && strstr(said, "rows in its output projection but the description's embed_dim"),
                  "hidden_size doubled: exit %d, %u ids, stderr: %s", status, got_count, said ? said : "(none)");
        free(said);
        remove(err);
        printf("generation_config.json's eos_token_id stops at id %u; a doubled hidden_size is refused\n", stop + 1);
    }

    vkattn_array_free(&g);
    vkattn_array_free(&r);
    cJSON_Delete(doc);
    remove(config), remove(weights), remove(logits);
    for (int i = 0; shards && i < 3; i++) {
        static const char *const names[] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                            "model.safetensors.index.json"};
        test_tmp_path(path, sizeof path, names[i]);
        remove(path);
    }
    test_tmp_remove();
    return test_finish();
}
