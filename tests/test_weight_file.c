/* Tests for loading one attention layer from a checkpoint (vkattn_weight_file_open): synthetic
 * Hugging Face style safetensors files written to a temporary folder, with a large unrelated tensor
 * made sparse (ftruncate) so that the file is 64 MiB on paper and costs nothing to write. Checks
 * every loaded element against what was written (F32, F16, BF16), that only the header and the
 * layer's tensors are read, the prefix and naming rules, the bias rules (Qwen2's missing o_proj.bias),
 * grouped-query widths and describe's num_kv_heads, and hostile files read through the file path.
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/half.h"
#include "io/checkpoint.h"
#include "io/io.h"
#include "problem/config.h"
#include "test_util.h"

static char dir_g[256];

/* ---- writing checkpoints ---------------------------------------------------------------------- */

#define CK_MAX 64

typedef struct ck_tensor {
    char name[128];
    const char *dtype; /* "F32", "F16", "BF16" */
    uint32_t rank, dims[2];
    int seed;          /* values: ck_value(seed, i); 0 = sparse zeros, never written */
} ck_tensor;

typedef struct ck_file {
    ck_tensor t[CK_MAX];
    size_t count;
    uint64_t header_len, size; /* set by ck_write */
    uint64_t begin[CK_MAX];    /* each tensor's offset in the file */
} ck_file;

static float ck_value(int seed, size_t i) { return (float)((int)((i * 7 + (size_t)seed * 13) % 29) - 14) * 0.0625f + (float)seed * 0.001953125f; }

static size_t dtype_width(const char *dtype) { return strcmp(dtype, "F32") == 0 ? 4 : 2; }

static size_t ck_count(const ck_tensor *t) { return t->rank == 1 ? t->dims[0] : (size_t)t->dims[0] * t->dims[1]; }

/* What a stored value reads back as after the dtype's rounding. */
static float ck_stored(const char *dtype, float v)
{
    if (strcmp(dtype, "F16") == 0) return vka_f16_to_f32(vka_f32_to_f16(v));
    if (strcmp(dtype, "BF16") == 0) return vka_bf16_to_f32(vka_f32_to_bf16(v));
    return v;
}

static void ck_add(ck_file *f, const char *prefix, const char *name, const char *dtype, uint32_t rank, uint32_t d0,
                   uint32_t d1, int seed)
{
    ck_tensor *t = &f->t[f->count++];
    snprintf(t->name, sizeof t->name, "%s%s", prefix, name);
    t->dtype = dtype;
    t->rank = rank;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->seed = seed;
}

/* One Hugging Face attention layer: q (E,E), k/v (kv,E), o (E,E); biases by the mask q,k,v,o = 1,2,4,8.
 * Seeds are base + 1.. so every tensor holds different values. */
static void ck_add_hf_layer(ck_file *f, const char *prefix, const char *dtype, uint32_t E, uint32_t kv, unsigned biases,
                            int base)
{
    ck_add(f, prefix, "k_proj.weight", dtype, 2, kv, E, base + 2); /* not in state_dict order */
    ck_add(f, prefix, "q_proj.weight", dtype, 2, E, E, base + 1);
    ck_add(f, prefix, "v_proj.weight", dtype, 2, kv, E, base + 3);
    ck_add(f, prefix, "o_proj.weight", dtype, 2, E, E, base + 4);
    if (biases & 1) ck_add(f, prefix, "q_proj.bias", dtype, 1, E, 0, base + 5);
    if (biases & 2) ck_add(f, prefix, "k_proj.bias", dtype, 1, kv, 0, base + 6);
    if (biases & 4) ck_add(f, prefix, "v_proj.bias", dtype, 1, kv, 0, base + 7);
    if (biases & 8) ck_add(f, prefix, "o_proj.bias", dtype, 1, E, 0, base + 8);
}

static const ck_tensor *ck_find(const ck_file *f, const char *name)
{
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}

static void put(int fd, const void *data, size_t n, uint64_t at)
{
    CHECK(pwrite(fd, data, n, (off_t)at) == (ssize_t)n);
}

/* Writes the file: header padded to 8 bytes, tensors tiled in order; sparse tensors only extend the
 * file. Returns the path in `path`. */
static void ck_write(ck_file *f, const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir_g, name);
    static char header[65536];
    size_t hl = (size_t)snprintf(header, sizeof header, "{\"__metadata__\":{\"format\":\"pt\"}");
    uint64_t at = 0;
    for (size_t i = 0; i < f->count; i++) {
        const ck_tensor *t = &f->t[i];
        uint64_t bytes = (uint64_t)ck_count(t) * dtype_width(t->dtype);
        char shape[48];
        if (t->rank == 1) snprintf(shape, sizeof shape, "%u", t->dims[0]);
        else snprintf(shape, sizeof shape, "%u,%u", t->dims[0], t->dims[1]);
        hl += (size_t)snprintf(header + hl, sizeof header - hl,
                               ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%llu,%llu]}", t->name, t->dtype,
                               shape, (unsigned long long)at, (unsigned long long)(at + bytes));
        f->begin[i] = at;
        at += bytes;
    }
    header[hl++] = '}';
    while (hl % 8) header[hl++] = ' ';
    f->header_len = hl;
    f->size = 8 + hl + at;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    if (fd < 0) return;
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    put(fd, len, 8, 0);
    put(fd, header, hl, 8);
    for (size_t i = 0; i < f->count; i++) {
        const ck_tensor *t = &f->t[i];
        if (!t->seed) continue;
        size_t n = ck_count(t), w = dtype_width(t->dtype);
        uint8_t *bytes = malloc(n * w);
        for (size_t e = 0; e < n; e++) {
            float v = ck_value(t->seed, e);
            uint32_t bits;
            if (w == 4) memcpy(&bits, &v, 4);
            else bits = strcmp(t->dtype, "F16") == 0 ? vka_f32_to_f16(v) : vka_f32_to_bf16(v);
            for (size_t k = 0; k < w; k++) bytes[e * w + k] = (uint8_t)(bits >> (8 * k));
        }
        put(fd, bytes, n * w, 8 + hl + f->begin[i]);
        free(bytes);
    }
    CHECK(ftruncate(fd, (off_t)f->size) == 0);
    close(fd);
}

/* A file with the given header text and `data_len` zero bytes after it. */
static void raw_write(const char *name, const char *header, size_t data_len, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir_g, name);
    FILE *out = fopen(path, "wb");
    CHECK(out != NULL);
    if (!out) return;
    size_t hl = strlen(header);
    for (int i = 0; i < 8; i++) fputc((int)((uint64_t)hl >> (8 * i)) & 0xff, out);
    fwrite(header, 1, hl, out);
    for (size_t i = 0; i < data_len; i++) fputc(0, out);
    fclose(out);
}

/* Compares `count` loaded floats with tensor `name` as written. */
static void check_values(const ck_file *f, const char *name, const float *got, size_t count)
{
    const ck_tensor *t = ck_find(f, name);
    CHECK_MSG(t != NULL && got != NULL, "%s: written %d, loaded %d", name, t != NULL, got != NULL);
    if (!t || !got) return;
    CHECK_MSG(ck_count(t) == count, "%s: %zu elements written, %zu expected", name, ck_count(t), count);
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) bad += got[i] != ck_stored(t->dtype, ck_value(t->seed, i));
    CHECK_MSG(bad == 0, "%s (%s): %zu of %zu values differ", name, t->dtype, bad, count);
}

static uint64_t ck_bytes(const ck_file *f, const char *name)
{
    const ck_tensor *t = ck_find(f, name);
    return t ? (uint64_t)ck_count(t) * dtype_width(t->dtype) : 0;
}

static int contains(const char *haystack, const char *needle) { return strstr(haystack, needle) != NULL; }

/* Opens `path` and expects `want`; on failure, that the message holds each needle. */
static vkattn_weight_file *open_expect(const char *path, const char *prefix, vkattn_status want, const char *needle1,
                                       const char *needle2)
{
    vkattn_weight_file *file = NULL;
    vkattn_error err = {0};
    vkattn_status got = vkattn_weight_file_open(path, prefix, &file, &err);
    CHECK_MSG(got == want, "%s [%s]: got %s, expected %s (%s)", path, prefix ? prefix : "NULL", vkattn_status_name(got),
              vkattn_status_name(want), err.message);
    if (got != VKATTN_OK) {
        CHECK(file == NULL);
        CHECK_MSG(contains(err.message, path), "message lacks the path: %s", err.message);
        if (needle1) CHECK_MSG(contains(err.message, needle1), "message '%s' lacks '%s'", err.message, needle1);
        if (needle2) CHECK_MSG(contains(err.message, needle2), "message '%s' lacks '%s'", err.message, needle2);
    }
    if (got == VKATTN_OK && want != VKATTN_OK) {
        vkattn_weight_file_destroy(file);
        file = NULL;
    }
    return file;
}

/* ---- (a) a big checkpoint: element by element, and bytes read -------------------------------- */

#define P0 "model.layers.0.self_attn."
#define P1 "model.layers.1.self_attn."

static void test_big_checkpoint(const char *dtype)
{
    const uint32_t E = 64, KV = 16; /* 8 heads of 8, 2 key/value heads */
    static ck_file f;
    memset(&f, 0, sizeof f);
    /* Hugging Face files list names sorted: the embedding comes first, 64 MiB of it. */
    uint32_t vocab = (64u << 20) / (1024 * (uint32_t)dtype_width(dtype));
    ck_add(&f, "", "model.embed_tokens.weight", dtype, 2, vocab, 1024, 0);
    ck_add(&f, "", "model.layers.0.input_layernorm.weight", dtype, 1, E, 0, 90);
    ck_add(&f, "", "model.layers.0.mlp.down_proj.weight", dtype, 2, E, 4 * E, 91);
    ck_add_hf_layer(&f, P0, dtype, E, KV, 15, 10);
    ck_add(&f, P0, "rotary_emb.inv_freq", "F32", 1, 4, 0, 92);
    ck_add_hf_layer(&f, P1, dtype, E, KV, 15, 20);
    ck_add(&f, "", "model.norm.weight", dtype, 1, E, 0, 93);
    char path[512], name[64];
    snprintf(name, sizeof name, "checkpoint_%s.safetensors", dtype);
    ck_write(&f, name, path, sizeof path);

    double t0 = test_now_s();
    vkattn_weight_file *file = open_expect(path, P1, VKATTN_OK, NULL, NULL);
    double ms = (test_now_s() - t0) * 1e3;
    if (!file) return;
    const vkattn_weights *w = vkattn_weight_file_weights(file);
    check_values(&f, P1 "q_proj.weight", w->q_proj_weight, (size_t)E * E);
    check_values(&f, P1 "k_proj.weight", w->k_proj_weight, (size_t)KV * E);
    check_values(&f, P1 "v_proj.weight", w->v_proj_weight, (size_t)KV * E);
    check_values(&f, P1 "o_proj.weight", w->out_proj_weight, (size_t)E * E);
    check_values(&f, P1 "o_proj.bias", w->out_proj_bias, E);
    CHECK(w->in_proj_bias != NULL && !w->in_proj_weight && !w->bias_k && !w->bias_v);
    if (w->in_proj_bias) {
        check_values(&f, P1 "q_proj.bias", w->in_proj_bias, E);
        check_values(&f, P1 "k_proj.bias", w->in_proj_bias + E, KV);
        check_values(&f, P1 "v_proj.bias", w->in_proj_bias + E + KV, KV);
    }
    vkattn_weight_file_info info;
    CHECK_STATUS(vkattn_weight_file_get_info(file, &info), VKATTN_OK);
    CHECK(info.naming == VKATTN_WEIGHT_NAMES_HF && strcmp(info.prefix, P1) == 0);
    CHECK(info.embed_dim == E && info.q_rows == E && info.kv_rows == KV && info.kdim == E && info.vdim == E);
    CHECK(info.out_bias_zero_filled == 0 && info.tensor_count == 8 && info.ignored_under_prefix == 0);
    CHECK(info.file_tensor_count == f.count && info.file_bytes == f.size);
    for (uint32_t i = 0; i < info.tensor_count; i++) {
        CHECK_MSG(ck_find(&f, info.tensor_names[i]) != NULL, "info names '%s'", info.tensor_names[i]);
        CHECK(strcmp(info.tensor_dtypes[i], dtype) == 0);
    }
    /* Exactly the length, the header and the layer's eight tensors. */
    uint64_t want = 8 + f.header_len;
    static const char *const layer[] = {"q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight",
                                        "q_proj.bias",   "k_proj.bias",   "v_proj.bias",   "o_proj.bias"};
    for (int i = 0; i < 8; i++) {
        char full[128];
        snprintf(full, sizeof full, "%s%s", P1, layer[i]);
        want += ck_bytes(&f, full);
    }
    CHECK_MSG(info.bytes_read == want, "read %llu bytes, expected %llu", (unsigned long long)info.bytes_read,
              (unsigned long long)want);
    CHECK(info.bytes_read * 100 < info.file_bytes);
    printf("  %s: read %llu of %llu bytes (%.4f%%) in %.2f ms\n", dtype, (unsigned long long)info.bytes_read,
           (unsigned long long)info.file_bytes, 100.0 * (double)info.bytes_read / (double)info.file_bytes, ms);

    vkattn_layer_desc d = {.num_heads = 8};
    vkattn_weight_file_describe(file, &d);
    CHECK(d.embed_dim == E && d.kdim == E && d.vdim == E && d.no_bias == 0 && d.add_bias_kv == 0);
    CHECK_MSG(d.num_kv_heads == 2, "num_kv_heads %u", d.num_kv_heads);
    vkattn_weight_file_destroy(file);

    /* Layer 0 has an extra tensor under its prefix, which is counted and left. */
    file = open_expect(path, "model.layers.0.self_attn", VKATTN_OK, NULL, NULL); /* without the final '.' */
    if (file) {
        CHECK_STATUS(vkattn_weight_file_get_info(file, &info), VKATTN_OK);
        CHECK(strcmp(info.prefix, P0) == 0 && info.ignored_under_prefix == 1);
        check_values(&f, P0 "q_proj.weight", vkattn_weight_file_weights(file)->q_proj_weight, (size_t)E * E);
        vkattn_weight_file_destroy(file);
    }
    /* Without a prefix the file holds two layers: refused, naming them. */
    open_expect(path, NULL, VKATTN_ERROR_FORMAT, "'" P0 "', '" P1 "'", "prefix");
    open_expect(path, "", VKATTN_ERROR_FORMAT, "one layer", NULL);
    remove(path);
}

static void test_big_checkpoints(void)
{
    test_big_checkpoint("F32");
    test_big_checkpoint("F16");
    test_big_checkpoint("BF16");
}

/* ---- (b) a prefix that matches nothing -------------------------------------------------------- */

static void test_prefix_not_found(void)
{
    static ck_file f;
    memset(&f, 0, sizeof f);
    for (int l = 0; l < 12; l++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, "model.layers.%d.self_attn.", l);
        ck_add_hf_layer(&f, prefix, "BF16", 8, 8, 0, 10 * l + 1);
    }
    char path[512];
    ck_write(&f, "twelve.safetensors", path, sizeof path);
    /* Natural order (2 before 10), four shown. */
    open_expect(path, "model.layers.12.self_attn.", VKATTN_ERROR_NOT_FOUND,
                "12 layers in the file: 'model.layers.0.self_attn.', 'model.layers.1.self_attn.', "
                "'model.layers.2.self_attn.', 'model.layers.3.self_attn.' and 8 more",
                "no attention layer has the prefix 'model.layers.12.self_attn.'");
    open_expect(path, "model.layers.1.", VKATTN_ERROR_NOT_FOUND, "'model.layers.0.self_attn.'", NULL);
    open_expect(path, "model.layers.1.self", VKATTN_ERROR_NOT_FOUND, "'model.layers.0.self_attn.'", NULL);
    vkattn_weight_file *file = open_expect(path, "model.layers.11.self_attn.", VKATTN_OK, NULL, NULL);
    if (file) {
        check_values(&f, "model.layers.11.self_attn.v_proj.weight", vkattn_weight_file_weights(file)->v_proj_weight, 64);
        vkattn_layer_desc d = {.num_heads = 2, .num_kv_heads = 5};
        vkattn_weight_file_describe(file, &d);
        CHECK(d.no_bias == 1 && d.num_kv_heads == 0);
        CHECK(vkattn_weight_file_weights(file)->in_proj_bias == NULL);
        vkattn_weight_file_destroy(file);
    }
    remove(path);

    /* A file with no attention layer at all says so. */
    memset(&f, 0, sizeof f);
    ck_add(&f, "", "model.embed_tokens.weight", "F32", 2, 4, 4, 1);
    ck_write(&f, "none.safetensors", path, sizeof path);
    open_expect(path, "model.layers.0.self_attn.", VKATTN_ERROR_NOT_FOUND, "0 layers in the file: none", NULL);
    open_expect(path, NULL, VKATTN_ERROR_NOT_FOUND, "o_proj.weight", NULL);
    remove(path);
}

/* ---- (c) a missing projection, (d) the bias rules --------------------------------------------- */

static void test_missing_and_biases(void)
{
    static ck_file f;
    char path[512];

    memset(&f, 0, sizeof f);
    ck_add(&f, P0, "q_proj.weight", "F32", 2, 8, 8, 1);
    ck_add(&f, P0, "v_proj.weight", "F32", 2, 8, 8, 2);
    ck_add(&f, P0, "o_proj.weight", "F32", 2, 8, 8, 3);
    ck_write(&f, "no_k.safetensors", path, sizeof path);
    open_expect(path, P0, VKATTN_ERROR_NOT_FOUND, "'" P0 "k_proj.weight'", "missing");
    open_expect(path, NULL, VKATTN_ERROR_NOT_FOUND, "'" P0 "k_proj.weight'", NULL);
    remove(path);

    /* Qwen2: q/k/v biases, no o_proj.bias: the output bias loads as zeros. */
    memset(&f, 0, sizeof f);
    ck_add_hf_layer(&f, P0, "BF16", 16, 4, 7, 1);
    ck_write(&f, "qwen2.safetensors", path, sizeof path);
    vkattn_weight_file *file = open_expect(path, P0, VKATTN_OK, NULL, NULL);
    if (file) {
        const vkattn_weights *w = vkattn_weight_file_weights(file);
        CHECK(w->out_proj_bias != NULL && w->in_proj_bias != NULL);
        size_t nonzero = 0;
        for (int i = 0; w->out_proj_bias && i < 16; i++) nonzero += w->out_proj_bias[i] != 0.0f;
        CHECK(nonzero == 0);
        if (w->in_proj_bias) {
            check_values(&f, P0 "q_proj.bias", w->in_proj_bias, 16);
            check_values(&f, P0 "k_proj.bias", w->in_proj_bias + 16, 4);
            check_values(&f, P0 "v_proj.bias", w->in_proj_bias + 20, 4);
        }
        vkattn_weight_file_info info;
        CHECK_STATUS(vkattn_weight_file_get_info(file, &info), VKATTN_OK);
        CHECK(info.out_bias_zero_filled == 1 && info.tensor_count == 7 && info.kv_rows == 4);
        vkattn_layer_desc d = {.num_heads = 4};
        vkattn_weight_file_describe(file, &d);
        CHECK(d.no_bias == 0 && d.num_kv_heads == 1);
        vkattn_weight_file_destroy(file);
    }
    /* The same, without a prefix: the file holds one layer. */
    file = open_expect(path, NULL, VKATTN_OK, NULL, NULL);
    vkattn_weight_file_destroy(file);
    remove(path);

    /* Any other partial set names what is missing. */
    static const struct {
        unsigned biases;
        const char *present, *missing;
    } partial[] = {
        {1 | 8, "'" P0 "q_proj.bias', '" P0 "o_proj.bias' present", "'" P0 "k_proj.bias', '" P0 "v_proj.bias' missing"},
        {8, "'" P0 "o_proj.bias' present", "'" P0 "q_proj.bias', '" P0 "k_proj.bias', '" P0 "v_proj.bias' missing"},
        {1 | 2, "present", "'" P0 "v_proj.bias', '" P0 "o_proj.bias' missing"},
    };
    for (size_t c = 0; c < sizeof partial / sizeof partial[0]; c++) {
        memset(&f, 0, sizeof f);
        ck_add_hf_layer(&f, P0, "F16", 8, 8, partial[c].biases, 1);
        ck_write(&f, "partial.safetensors", path, sizeof path);
        open_expect(path, P0, VKATTN_ERROR_NOT_FOUND, partial[c].present, partial[c].missing);
        remove(path);
    }
}

/* ---- (e) grouped-query widths ------------------------------------------------------------------ */

static void test_grouped_query(void)
{
    static ck_file f;
    char path[512];
    memset(&f, 0, sizeof f);
    ck_add_hf_layer(&f, P0, "F32", 64, 16, 15, 1);
    ck_write(&f, "gqa.safetensors", path, sizeof path);
    vkattn_weight_file *file = open_expect(path, P0, VKATTN_OK, NULL, NULL);
    if (file) {
        /* num_heads -> num_kv_heads: D = 64 / H must divide the 16 key/value rows. */
        static const uint32_t cases[][2] = {{8, 2}, {16, 4}, {32, 8}, {64, 16}, {4, 1},
                                            {2, VKATTN_KV_HEADS_UNKNOWN}, {0, VKATTN_KV_HEADS_UNKNOWN},
                                            {3, VKATTN_KV_HEADS_UNKNOWN}};
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            vkattn_layer_desc d = {.num_heads = cases[c][0]};
            vkattn_weight_file_describe(file, &d);
            CHECK_MSG(d.num_kv_heads == cases[c][1], "H %u: num_kv_heads %u, expected %u", cases[c][0], d.num_kv_heads,
                      cases[c][1]);
            CHECK(d.num_heads == cases[c][0] && d.embed_dim == 64 && d.kdim == 64);
        }
        /* The weights know their rows: a description that forgets num_kv_heads is refused at the
         * layer's creation, naming it, rather than read past the 16 rows (issue 22). */
        const vkattn_weights *w = vkattn_weight_file_weights(file);
        CHECK(w->q_rows == 64 && w->kv_rows == 16);
        vka_layer_config cfg;
        vkattn_error err = {0};
        vkattn_layer_desc forgot = {.embed_dim = 64, .num_heads = 8, .no_bias = 0};
        CHECK_STATUS(vka_layer_config_resolve(&forgot, w, &cfg, &err), VKATTN_ERROR_SHAPE);
        CHECK_MSG(strstr(err.message, "W_K, W_V 16") && strstr(err.message, "num_kv_heads"), "%s", err.message);
        vkattn_layer_desc described = {.num_heads = 8};
        vkattn_weight_file_describe(file, &described);
        CHECK_STATUS(vka_layer_config_resolve(&described, w, &cfg, &err), VKATTN_OK);
        vkattn_weight_file_destroy(file);
    }
    remove(path);

    /* nn.MultiheadAttention's names with H_kv * D key/value rows, the layout vkattn_weights takes
     * in memory (issue 18: refused with "k_proj_weight has shape (32, 128) but out_proj.weight
     * says E = 128"): in_proj_bias of E + 2 * kv_rows, bias_k/bias_v of kv_rows. */
    memset(&f, 0, sizeof f);
    ck_add(&f, P0, "q_proj_weight", "F32", 2, 128, 128, 1);
    ck_add(&f, P0, "k_proj_weight", "F32", 2, 32, 128, 2);
    ck_add(&f, P0, "v_proj_weight", "F32", 2, 32, 128, 3);
    ck_add(&f, P0, "in_proj_bias", "F32", 1, 128 + 2 * 32, 0, 4);
    ck_add(&f, P0, "out_proj.weight", "F32", 2, 128, 128, 5);
    ck_add(&f, P0, "out_proj.bias", "F32", 1, 128, 0, 6);
    ck_write(&f, "torch_gqa.safetensors", path, sizeof path);
    file = open_expect(path, P0, VKATTN_OK, NULL, NULL);
    if (file) {
        const vkattn_weights *w = vkattn_weight_file_weights(file);
        check_values(&f, P0 "k_proj_weight", w->k_proj_weight, 32 * 128);
        check_values(&f, P0 "in_proj_bias", w->in_proj_bias, 192);
        vkattn_weight_file_info info;
        CHECK_STATUS(vkattn_weight_file_get_info(file, &info), VKATTN_OK);
        CHECK(info.naming == VKATTN_WEIGHT_NAMES_TORCH && info.kv_rows == 32 && info.embed_dim == 128);
        vkattn_layer_desc d = {.num_heads = 8};
        vkattn_weight_file_describe(file, &d);
        CHECK_MSG(d.num_kv_heads == 2 && d.kdim == 128 && !d.no_bias, "num_kv_heads %u", d.num_kv_heads);
        vkattn_weight_file_destroy(file);
    }
    remove(path);
    /* ... and a bias of the wrong length for those rows names both */
    f.t[3].dims[0] = 3 * 128;
    ck_write(&f, "torch_gqa_bias.safetensors", path, sizeof path);
    open_expect(path, P0, VKATTN_ERROR_FORMAT, "'" P0 "in_proj_bias' has shape (384)", "(192)");
    remove(path);

    /* Key/value rows that are no divisor of E, and k and v that disagree, are refused at load. */
    memset(&f, 0, sizeof f);
    ck_add_hf_layer(&f, P0, "F32", 64, 24, 0, 1);
    ck_write(&f, "gqa_bad.safetensors", path, sizeof path);
    open_expect(path, P0, VKATTN_ERROR_FORMAT, "'" P0 "k_proj.weight' has 24 rows", "must divide the query's H * D = 64");
    remove(path);
    memset(&f, 0, sizeof f);
    ck_add(&f, P0, "q_proj.weight", "F32", 2, 8, 8, 1);
    ck_add(&f, P0, "k_proj.weight", "F32", 2, 4, 8, 2);
    ck_add(&f, P0, "v_proj.weight", "F32", 2, 2, 8, 3);
    ck_add(&f, P0, "o_proj.weight", "F32", 2, 8, 8, 4);
    ck_write(&f, "kv_disagree.safetensors", path, sizeof path);
    open_expect(path, P0, VKATTN_ERROR_FORMAT, "'" P0 "v_proj.weight' has 2 rows but", NULL);
    remove(path);
    /* hidden_size != num_heads * head_dim (Gemma, Qwen3 0.6B): q (H*D, E), o (E, H*D), here with
     * H_kv = 1 (k and v of D rows); describe gives head_dim and num_kv_heads from num_heads. */
    memset(&f, 0, sizeof f);
    ck_add(&f, P0, "q_proj.weight", "F32", 2, 16, 8, 1);
    ck_add(&f, P0, "k_proj.weight", "F32", 2, 8, 8, 2);
    ck_add(&f, P0, "v_proj.weight", "F32", 2, 8, 8, 3);
    ck_add(&f, P0, "o_proj.weight", "F32", 2, 8, 16, 4);
    ck_write(&f, "head_dim.safetensors", path, sizeof path);
    file = open_expect(path, P0, VKATTN_OK, NULL, NULL);
    if (file) {
        vkattn_weight_file_info info;
        CHECK_STATUS(vkattn_weight_file_get_info(file, &info), VKATTN_OK);
        CHECK(info.embed_dim == 8 && info.q_rows == 16 && info.kv_rows == 8);
        vkattn_layer_desc d = {.num_heads = 2};
        vkattn_weight_file_describe(file, &d);
        CHECK_MSG(d.embed_dim == 8 && d.head_dim == 8 && d.num_kv_heads == 1, "head_dim %u, num_kv_heads %u", d.head_dim,
                  d.num_kv_heads);
        check_values(&f, P0 "o_proj.weight", vkattn_weight_file_weights(file)->out_proj_weight, 8 * 16);
        vkattn_weight_file_destroy(file);
    }
    remove(path);
}

/* ---- today's families' names: q/k norms, a fused qkv_proj, sinks; exact prefixes ------------- */

static void test_family_names(void)
{
    static ck_file f;
    char path[512];
    vkattn_layer_desc d;
    /* Qwen3: per-head norms (D = 8 values each) beside H * D = 16 != E = 8; they load, and describe
     * says HEAD. */
    memset(&f, 0, sizeof f);
    ck_add(&f, P0, "q_proj.weight", "BF16", 2, 16, 8, 1);
    ck_add(&f, P0, "k_proj.weight", "BF16", 2, 8, 8, 2);
    ck_add(&f, P0, "v_proj.weight", "BF16", 2, 8, 8, 3);
    ck_add(&f, P0, "o_proj.weight", "BF16", 2, 8, 16, 4);
    ck_add(&f, P0, "q_norm.weight", "BF16", 1, 8, 0, 5);
    ck_add(&f, P0, "k_norm.weight", "BF16", 1, 8, 0, 6);
    ck_add(&f, "model.layers.0.", "input_layernorm.weight", "BF16", 1, 8, 0, 7); /* the layer's, not attention's */
    ck_write(&f, "qwen3.safetensors", path, sizeof path);
    vkattn_weight_file *file = open_expect(path, P0, VKATTN_OK, NULL, NULL);
    if (file) {
        d = (vkattn_layer_desc){.num_heads = 2};
        vkattn_weight_file_describe(file, &d);
        CHECK_MSG(d.head_dim == 8 && d.num_kv_heads == 1 && d.qk_norm == VKATTN_QK_NORM_HEAD,
                  "head_dim %u, num_kv_heads %u, qk_norm %d", d.head_dim, d.num_kv_heads, (int)d.qk_norm);
        check_values(&f, P0 "q_norm.weight", vkattn_weight_file_weights(file)->q_norm_weight, 8);
        check_values(&f, P0 "k_norm.weight", vkattn_weight_file_weights(file)->k_norm_weight, 8);
        d = (vkattn_layer_desc){.num_heads = 4}; /* D = 4: the norms' 8 values contradict it */
        vkattn_weight_file_describe(file, &d);
        CHECK(d.num_kv_heads == VKATTN_KV_HEADS_UNKNOWN);
        vkattn_weight_file_destroy(file);
    }
    remove(path);
    /* OLMo 2: norms over whole rows, E_q = 16 and kv_rows = 8 values */
    memset(&f, 0, sizeof f);
    ck_add(&f, P0, "q_proj.weight", "F32", 2, 16, 16, 1);
    ck_add(&f, P0, "k_proj.weight", "F32", 2, 8, 16, 2);
    ck_add(&f, P0, "v_proj.weight", "F32", 2, 8, 16, 3);
    ck_add(&f, P0, "o_proj.weight", "F32", 2, 16, 16, 4);
    ck_add(&f, P0, "q_norm.weight", "F32", 1, 16, 0, 5);
    ck_add(&f, P0, "k_norm.weight", "F32", 1, 8, 0, 6);
    ck_write(&f, "olmo2.safetensors", path, sizeof path);
    if ((file = open_expect(path, P0, VKATTN_OK, NULL, NULL))) {
        d = (vkattn_layer_desc){.num_heads = 4};
        vkattn_weight_file_describe(file, &d);
        CHECK_MSG(d.head_dim == 0 && d.num_kv_heads == 2 && d.qk_norm == VKATTN_QK_NORM_ROW,
                  "head_dim %u, num_kv_heads %u, qk_norm %d", d.head_dim, d.num_kv_heads, (int)d.qk_norm);
        check_values(&f, P0 "k_norm.weight", vkattn_weight_file_weights(file)->k_norm_weight, 8);
        vkattn_weight_file_destroy(file);
    }
    remove(path);
    /* Phi-3: one qkv_proj.weight (E_q + 2 kv_rows, E), split into W_Q, W_K, W_V; gpt-oss's sinks */
    memset(&f, 0, sizeof f);
    ck_add(&f, P0, "qkv_proj.weight", "F16", 2, 16 + 2 * 4, 8, 1);
    ck_add(&f, P0, "o_proj.weight", "F16", 2, 8, 16, 4);
    ck_add(&f, P0, "sinks", "F16", 1, 4, 0, 9);
    ck_write(&f, "phi3.safetensors", path, sizeof path);
    if ((file = open_expect(path, P0, VKATTN_OK, NULL, NULL))) {
        const vkattn_weights *w = vkattn_weight_file_weights(file);
        d = (vkattn_layer_desc){.num_heads = 4};
        vkattn_weight_file_describe(file, &d);
        CHECK_MSG(d.head_dim == 4 && d.num_kv_heads == 1 && d.qk_norm == VKATTN_QK_NORM_NONE, "head_dim %u, num_kv_heads %u",
                  d.head_dim, d.num_kv_heads);
        check_values(&f, P0 "qkv_proj.weight", w->q_proj_weight, 24 * 8); /* q, k, v back to back */
        CHECK(w->k_proj_weight == w->q_proj_weight + 16 * 8 && w->v_proj_weight == w->k_proj_weight + 4 * 8);
        check_values(&f, P0 "sinks", w->sinks, 4);
        d = (vkattn_layer_desc){.num_heads = 2}; /* 4 sinks: not 2 heads */
        vkattn_weight_file_describe(file, &d);
        CHECK(d.num_kv_heads == VKATTN_KV_HEADS_UNKNOWN);
        vkattn_weight_file_destroy(file);
    }
    remove(path);
    /* Refused: a fused projection beside separate ones, an odd remainder of rows, one norm
     * without the other, norms that are neither per head nor per row, LayerNorm-style q/k norms,
     * a fused projection's bias. */
    static const struct {
        const char *name, *extra, *needle;
        uint32_t d0, rank;
        vkattn_status want;
    } bad[] = {
        {"both_forms", "q_proj.weight", "both present", 16, 2, VKATTN_ERROR_FORMAT},
        {"qkv_rows", "", "qkv_proj.weight' has 23 rows", 0, 0, VKATTN_ERROR_FORMAT},
        {"lone_norm", "q_norm.weight", "come as a pair", 4, 1, VKATTN_ERROR_NOT_FOUND},
        {"layernorm", "q_layernorm.weight", "q_layernorm.weight', which vkattn does not apply", 4, 1,
         VKATTN_ERROR_UNSUPPORTED},
        {"fused_bias", "qkv_proj.bias", "qkv_proj.bias', which vkattn does not apply", 24, 1, VKATTN_ERROR_UNSUPPORTED},
        {"sinks_width", "sinks", "'" P0 "sinks' has 5 values", 5, 1, VKATTN_ERROR_FORMAT},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&f, 0, sizeof f);
        ck_add(&f, P0, "qkv_proj.weight", "F32", 2, strcmp(bad[i].name, "qkv_rows") == 0 ? 23 : 24, 8, 1);
        ck_add(&f, P0, "o_proj.weight", "F32", 2, 8, 16, 4);
        if (bad[i].extra[0]) ck_add(&f, P0, bad[i].extra, "F32", bad[i].rank, bad[i].d0, 8, 5);
        char name[64];
        snprintf(name, sizeof name, "bad_%s.safetensors", bad[i].name);
        ck_write(&f, name, path, sizeof path);
        open_expect(path, P0, bad[i].want, bad[i].needle, NULL);
        remove(path);
    }
    memset(&f, 0, sizeof f);
    ck_add_hf_layer(&f, P0, "F32", 16, 16, 0, 1);
    ck_add(&f, P0, "q_norm.weight", "F32", 1, 16, 0, 5);
    ck_add(&f, P0, "k_norm.weight", "F32", 1, 3, 0, 6);
    ck_write(&f, "norm_widths.safetensors", path, sizeof path);
    open_expect(path, P0, VKATTN_ERROR_FORMAT, "per head (D each", NULL);
    remove(path);
    /* Exact prefixes: layer 1 beside layer 10 and 15, with their layernorms; each prefix reads its
     * own layer (with or without its final '.'), never a neighbour's tensors. */
    memset(&f, 0, sizeof f);
    static const char *const layers[] = {"model.layers.1.self_attn.", "model.layers.10.self_attn.",
                                         "model.layers.15.self_attn."};
    for (int l = 0; l < 3; l++) {
        ck_add(&f, layers[l], "q_proj.weight", "F32", 2, 8, 8, 10 * l + 1);
        ck_add(&f, layers[l], "k_proj.weight", "F32", 2, 8, 8, 10 * l + 2);
        ck_add(&f, layers[l], "v_proj.weight", "F32", 2, 8, 8, 10 * l + 3);
        ck_add(&f, layers[l], "o_proj.weight", "F32", 2, 8, 8, 10 * l + 4);
        ck_add(&f, layers[l], "q_norm.weight", "F32", 1, 4, 0, 10 * l + 5);
        ck_add(&f, layers[l], "k_norm.weight", "F32", 1, 4, 0, 10 * l + 6);
    }
    ck_add(&f, "model.layers.1.", "post_attention_layernorm.weight", "F32", 1, 8, 0, 40);
    ck_add(&f, "model.layers.1.", "self_attn_layer_norm.weight", "F32", 1, 8, 0, 41);
    ck_write(&f, "neighbours.safetensors", path, sizeof path);
    static const char *const asked[] = {"model.layers.1.self_attn.", "model.layers.1.self_attn", "model.layers.15.self_attn."};
    static const int want_layer[] = {0, 0, 2};
    for (int a = 0; a < 3; a++) {
        if (!(file = open_expect(path, asked[a], VKATTN_OK, NULL, NULL))) continue;
        char name[96];
        snprintf(name, sizeof name, "%sq_norm.weight", layers[want_layer[a]]);
        check_values(&f, name, vkattn_weight_file_weights(file)->q_norm_weight, 4);
        snprintf(name, sizeof name, "%so_proj.weight", layers[want_layer[a]]);
        check_values(&f, name, vkattn_weight_file_weights(file)->out_proj_weight, 64);
        vkattn_weight_file_info info;
        CHECK(vkattn_weight_file_get_info(file, &info) == VKATTN_OK && info.tensor_count == 6 &&
              info.ignored_under_prefix == 0);
        vkattn_weight_file_destroy(file);
    }
    open_expect(path, "model.layers.1", VKATTN_ERROR_NOT_FOUND, "no attention layer has the prefix", NULL);
    remove(path);
}

/* ---- namings: BART's out_proj, nn.MultiheadAttention under a prefix, mixes ------------------- */

static void test_namings(void)
{
    static ck_file f;
    char path[512];
    /* BART / CLIP / Whisper: q_proj.weight & co with out_proj. */
    memset(&f, 0, sizeof f);
    ck_add(&f, "", "model.encoder.layers.0.fc1.weight", "F16", 2, 8, 8, 9);
    ck_add(&f, "model.encoder.layers.0.self_attn.", "q_proj.weight", "F16", 2, 8, 8, 1);
    ck_add(&f, "model.encoder.layers.0.self_attn.", "k_proj.weight", "F16", 2, 8, 8, 2);
    ck_add(&f, "model.encoder.layers.0.self_attn.", "v_proj.weight", "F16", 2, 8, 8, 3);
    ck_add(&f, "model.encoder.layers.0.self_attn.", "out_proj.weight", "F16", 2, 8, 8, 4);
    ck_add(&f, "model.encoder.layers.0.self_attn.", "q_proj.bias", "F16", 1, 8, 0, 5);
    ck_add(&f, "model.encoder.layers.0.self_attn.", "k_proj.bias", "F16", 1, 8, 0, 6);
    ck_add(&f, "model.encoder.layers.0.self_attn.", "v_proj.bias", "F16", 1, 8, 0, 7);
    ck_add(&f, "model.encoder.layers.0.self_attn.", "out_proj.bias", "F16", 1, 8, 0, 8);
    ck_write(&f, "bart.safetensors", path, sizeof path);
    vkattn_weight_file *file = open_expect(path, "model.encoder.layers.0.self_attn.", VKATTN_OK, NULL, NULL);
    if (file) {
        const vkattn_weights *w = vkattn_weight_file_weights(file);
        check_values(&f, "model.encoder.layers.0.self_attn.out_proj.weight", w->out_proj_weight, 64);
        check_values(&f, "model.encoder.layers.0.self_attn.out_proj.bias", w->out_proj_bias, 8);
        check_values(&f, "model.encoder.layers.0.self_attn.v_proj.bias", w->in_proj_bias ? w->in_proj_bias + 16 : NULL, 8);
        vkattn_weight_file_info info;
        CHECK_STATUS(vkattn_weight_file_get_info(file, &info), VKATTN_OK);
        CHECK(info.naming == VKATTN_WEIGHT_NAMES_HF);
        vkattn_weight_file_destroy(file);
    }
    remove(path);

    /* nn.MultiheadAttention names under a caller's prefix, beside other tensors. */
    memset(&f, 0, sizeof f);
    ck_add(&f, "", "encoder.embed.weight", "F32", 2, 16, 4, 9);
    ck_add(&f, "encoder.layers.3.attn.", "in_proj_weight", "F32", 2, 12, 4, 1);
    ck_add(&f, "encoder.layers.3.attn.", "in_proj_bias", "F32", 1, 12, 0, 2);
    ck_add(&f, "encoder.layers.3.attn.", "out_proj.weight", "F32", 2, 4, 4, 3);
    ck_add(&f, "encoder.layers.3.attn.", "out_proj.bias", "F32", 1, 4, 0, 4);
    ck_add(&f, "encoder.layers.4.attn.", "in_proj_weight", "F32", 2, 12, 4, 5);
    ck_add(&f, "encoder.layers.4.attn.", "out_proj.weight", "F32", 2, 4, 4, 6);
    ck_write(&f, "torch_prefix.safetensors", path, sizeof path);
    file = open_expect(path, "encoder.layers.3.attn.", VKATTN_OK, NULL, NULL);
    if (file) {
        const vkattn_weights *w = vkattn_weight_file_weights(file);
        check_values(&f, "encoder.layers.3.attn.in_proj_weight", w->in_proj_weight, 48);
        check_values(&f, "encoder.layers.3.attn.in_proj_bias", w->in_proj_bias, 12);
        vkattn_weight_file_info info;
        CHECK_STATUS(vkattn_weight_file_get_info(file, &info), VKATTN_OK);
        CHECK(info.naming == VKATTN_WEIGHT_NAMES_TORCH && info.kv_rows == 4 && info.tensor_count == 4);
        vkattn_weight_file_destroy(file);
    }
    file = open_expect(path, "encoder.layers.4.attn.", VKATTN_OK, NULL, NULL);
    if (file) CHECK(vkattn_weight_file_weights(file)->in_proj_bias == NULL);
    vkattn_weight_file_destroy(file);
    remove(path);

    /* Two namings under one prefix. */
    static const struct {
        const char *a, *b, *needle;
    } mixes[] = {
        {"o_proj.weight", "in_proj_weight", "'" P0 "in_proj_weight' is nn.MultiheadAttention's"},
        {"o_proj.weight", "out_proj.weight", "both present"},
        {"out_proj.weight", "o_proj.bias", "'" P0 "o_proj.bias' is Hugging Face's"},
    };
    for (size_t c = 0; c < sizeof mixes / sizeof mixes[0]; c++) {
        memset(&f, 0, sizeof f);
        ck_add(&f, P0, "q_proj.weight", "F32", 2, 4, 4, 1);
        ck_add(&f, P0, "k_proj.weight", "F32", 2, 4, 4, 2);
        ck_add(&f, P0, "v_proj.weight", "F32", 2, 4, 4, 3);
        ck_add(&f, P0, mixes[c].a, "F32", 2, 4, 4, 4);
        uint32_t rank = strstr(mixes[c].b, "bias") ? 1 : 2;
        ck_add(&f, P0, mixes[c].b, "F32", rank, strcmp(mixes[c].b, "in_proj_weight") == 0 ? 12 : 4, 4, 5);
        ck_write(&f, "mixed.safetensors", path, sizeof path);
        open_expect(path, P0, VKATTN_ERROR_FORMAT, "mixed", mixes[c].needle);
        remove(path);
    }
}

/* ---- (f) hostile files through the file path, (g) the old API ---------------------------------- */

#define ENTRY(name, dtype, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":[" shape "],\"data_offsets\":[" #b "," #e "]}"
#define HF(p, b) \
    "{" ENTRY(p "q_proj.weight", "F32", "1,1", 0, 4) "," ENTRY(p "k_proj.weight", "F32", "1,1", 4, 8) "," \
    ENTRY(p "v_proj.weight", "F32", "1,1", 8, 12) "," ENTRY(p "o_proj.weight", "F32", "1,1", 12, 16) b "}"

static void test_hostile_files(void)
{
    static const struct {
        const char *name, *header;
        size_t data_len;
        vkattn_status want;
        const char *needle;
    } cases[] = {
        {"valid", HF("a.", ""), 16, VKATTN_OK, NULL},
        {"offsets past the end of the file", HF("a.", "," ENTRY("big", "F32", "1000000000", 16, 4000000016)), 16,
         VKATTN_ERROR_FORMAT, "beyond"},
        {"overlapping tensors", HF("a.", "," ENTRY("x", "F32", "2", 8, 16)), 16, VKATTN_ERROR_FORMAT, "overlap"},
        {"shape and bytes disagree", HF("a.", "," ENTRY("x", "F32", "3", 16, 20)), 20, VKATTN_ERROR_FORMAT,
         "span 4 bytes"},
        {"hole before an unrelated tensor", HF("a.", "," ENTRY("x", "F32", "1", 20, 24)), 24, VKATTN_ERROR_FORMAT,
         "belong to no tensor"},
        {"trailing bytes", HF("a.", ""), 17, VKATTN_ERROR_FORMAT, "after the last tensor"},
        {"truncated header", "{", 0, VKATTN_ERROR_FORMAT, "end of the text"},
        {"bias shape", HF("a.", "," ENTRY("a.q_proj.bias", "F32", "2", 16, 24) "," ENTRY("a.k_proj.bias", "F32", "1", 24, 28)
                                 "," ENTRY("a.v_proj.bias", "F32", "1", 28, 32)), 32, VKATTN_ERROR_FORMAT,
         "'a.q_proj.bias' has shape (2)"},
        {"I8 projection", "{" ENTRY("a.q_proj.weight", "I8", "1,1", 0, 1) "," ENTRY("a.k_proj.weight", "F32", "1,1", 1, 5)
                          "," ENTRY("a.v_proj.weight", "F32", "1,1", 5, 9) "," ENTRY("a.o_proj.weight", "F32", "1,1", 9, 13) "}",
         13, VKATTN_ERROR_FORMAT, "dtype I8"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char path[512];
        raw_write("hostile.safetensors", cases[c].header, cases[c].data_len, path, sizeof path);
        vkattn_weight_file *file = open_expect(path, "a.", cases[c].want, cases[c].needle, NULL);
        vkattn_weight_file_destroy(file);
        remove(path);
    }
    /* A file shorter than its length field, and one that does not exist. */
    char path[512];
    snprintf(path, sizeof path, "%s/short.safetensors", dir_g);
    FILE *out = fopen(path, "wb");
    if (out) fwrite("\x10\0\0", 1, 3, out), fclose(out);
    open_expect(path, NULL, VKATTN_ERROR_FORMAT, "shorter than the 8-byte", NULL);
    out = fopen(path, "wb");
    if (out) fwrite("\x64\0\0\0\0\0\0\0{}", 1, 10, out), fclose(out);
    open_expect(path, NULL, VKATTN_ERROR_FORMAT, "header length 100 runs past the end of the 10-byte file", NULL);
    out = fopen(path, "wb"); /* a config.json given as the checkpoint */
    if (out) fputs("{\n  \"architectures\": [\"Qwen3ForCausalLM\"]\n}\n", out), fclose(out);
    open_expect(path, NULL, VKATTN_ERROR_FORMAT, "not a safetensors file? It starts \"{\\x0a  \"arc\"", NULL);
    remove(path);
    open_expect(path, NULL, VKATTN_ERROR_IO, "cannot open", NULL);
    vkattn_weight_file *file = NULL;
    CHECK_STATUS(vkattn_weight_file_open(NULL, NULL, &file, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_weight_file_open(path, NULL, NULL, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_weight_file_info info;
    CHECK_STATUS(vkattn_weight_file_get_info(NULL, &info), VKATTN_ERROR_INVALID_ARGUMENT);
}

static void test_old_api(void)
{
    /* An nn.MultiheadAttention state_dict with a common prefix, through vkattn_weight_file_load. */
    static ck_file f;
    memset(&f, 0, sizeof f);
    ck_add(&f, "attn.", "in_proj_weight", "BF16", 2, 12, 4, 1);
    ck_add(&f, "attn.", "in_proj_bias", "BF16", 1, 12, 0, 2);
    ck_add(&f, "attn.", "out_proj.weight", "BF16", 2, 4, 4, 3);
    ck_add(&f, "attn.", "out_proj.bias", "BF16", 1, 4, 0, 4);
    char path[512];
    ck_write(&f, "mha.safetensors", path, sizeof path);
    vkattn_weight_file *file = NULL;
    vkattn_error err = {0};
    CHECK_STATUS(vkattn_weight_file_load(path, &file, &err), VKATTN_OK);
    if (file) {
        const vkattn_weights *w = vkattn_weight_file_weights(file);
        check_values(&f, "attn.in_proj_weight", w->in_proj_weight, 48);
        check_values(&f, "attn.in_proj_bias", w->in_proj_bias, 12);
        check_values(&f, "attn.out_proj.weight", w->out_proj_weight, 16);
        check_values(&f, "attn.out_proj.bias", w->out_proj_bias, 4);
        vkattn_layer_desc d = {.num_heads = 2, .num_kv_heads = 2};
        vkattn_weight_file_describe(file, &d);
        CHECK(d.embed_dim == 4 && d.kdim == 4 && d.vdim == 4 && d.no_bias == 0 && d.num_kv_heads == 0);
        vkattn_weight_file_destroy(file);
    }
    /* The same file through a pipe (no pread): read whole, as before. */
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/pipe.safetensors", dir_g);
    if (mkfifo(fifo, 0600) == 0) {
        fflush(NULL); /* or the child's exit would print this process's buffered output again */
        pid_t pid = fork();
        if (pid == 0) {
            FILE *in = fopen(path, "rb"), *out = fopen(fifo, "wb");
            int c;
            while (in && out && (c = fgetc(in)) != EOF) fputc(c, out);
            if (out) fclose(out); /* _exit flushes nothing */
            _exit(0);
        }
        file = open_expect(fifo, "attn", VKATTN_OK, NULL, NULL);
        if (file) check_values(&f, "attn.out_proj.bias", vkattn_weight_file_weights(file)->out_proj_bias, 4);
        vkattn_weight_file_destroy(file);
        int st;
        CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
        remove(fifo);
    }
    remove(path);
}

/* ---- (g2) a description checked against the file ------------------------------------------------ */

static void test_check_description(void)
{
    static ck_file f;
    memset(&f, 0, sizeof f);
    ck_add_hf_layer(&f, P0, "BF16", 64, 16, 15, 1); /* 8 heads of 8, 2 key/value heads, biases */
    ck_add(&f, P0, "q_norm.weight", "BF16", 1, 8, 0, 20);
    ck_add(&f, P0, "k_norm.weight", "BF16", 1, 8, 0, 21);
    char path[512];
    ck_write(&f, "check.safetensors", path, sizeof path);
    vkattn_weight_file *file = open_expect(path, P0, VKATTN_OK, NULL, NULL);
    if (!file) return;
    vkattn_layer_desc good = {.num_heads = 8};
    vkattn_weight_file_describe(file, &good);
    vkattn_error err = {0};
    CHECK_STATUS(vkattn_weight_file_check(file, &good, &err), VKATTN_OK);
    /* What a config of another model would say: each field alone. */
    static const struct {
        const char *what, *needle;
    } cases[] = {
        {"embed_dim", "has 64 rows in its output projection but the description's embed_dim is 128"},
        {"kdim", "has 64 columns in its key projection but the description's kdim is 32"},
        {"head_dim", "has 64 rows in its query projection but the description's num_heads x head dim is 128"},
        {"num_heads", "has 64 rows in its query projection but the description's num_heads x head dim is 32"},
        {"num_kv_heads", "has 16 rows in its key/value projections but the description's num_kv_heads x head dim is 32"},
        {"qk_norm", "has 8 values in q_norm.weight but the description's q/k norm width (qk_norm) is 64"},
        {"no_bias", "has biases but the description's no_bias is 1"},
        {"add_bias_kv", "has no bias_k and bias_v but the description's add_bias_kv is 1"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        vkattn_layer_desc d = good;
        const char *w = cases[c].what;
        if (!strcmp(w, "embed_dim")) d.embed_dim = 128;
        if (!strcmp(w, "kdim")) d.kdim = 32;
        if (!strcmp(w, "head_dim")) d.head_dim = 16;
        if (!strcmp(w, "num_heads")) d.num_heads = 4, d.num_kv_heads = 2, d.head_dim = 8;
        if (!strcmp(w, "num_kv_heads")) d.num_kv_heads = 4;
        if (!strcmp(w, "qk_norm")) d.qk_norm = VKATTN_QK_NORM_ROW;
        if (!strcmp(w, "no_bias")) d.no_bias = 1;
        if (!strcmp(w, "add_bias_kv")) d.add_bias_kv = 1;
        CHECK_STATUS(vkattn_weight_file_check(file, &d, &err), VKATTN_ERROR_SHAPE);
        CHECK_MSG(contains(err.message, cases[c].needle) && contains(err.message, P0), "%s: %s", w, err.message);
    }
    vkattn_layer_desc zero = good;
    zero.num_heads = 0;
    CHECK_STATUS(vkattn_weight_file_check(file, &zero, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_weight_file_check(NULL, &good, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_weight_file_check(file, NULL, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_weight_file_destroy(file);
    remove(path);
}

/* ---- (h) a checkpoint split into shards, with its index --------------------------------------- */

#define SHARDS 3
#define SHARD_DIR "sharded"

/* Writes `text` to <dir_g>/<name>; returns the path in `path`. */
static void text_write(const char *name, const char *text, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s", dir_g, name);
    FILE *out = fopen(path, "wb");
    CHECK(out != NULL);
    if (out) fputs(text, out), fclose(out);
}

/* The index of `files` (shard s is model-0000<s+1>-of-00003.safetensors), as Hugging Face writes it,
 * with `extra` (",\"name\": \"shard\"" or "") appended to the weight_map. */
static void index_write(ck_file *const *files, const char *extra, char *path, size_t cap)
{
    static char text[65536];
    uint64_t total = 0;
    for (int s = 0; s < SHARDS; s++) total += files[s]->size;
    size_t n = (size_t)snprintf(text, sizeof text, "{\n  \"metadata\": {\"total_size\": %llu},\n  \"weight_map\": {",
                                (unsigned long long)total);
    const char *sep = "";
    for (int s = 0; s < SHARDS; s++)
        for (size_t i = 0; i < files[s]->count; i++, sep = ",")
            n += (size_t)snprintf(text + n, sizeof text - n, "%s\n    \"%s\": \"model-0000%d-of-00003.safetensors\"", sep,
                                  files[s]->t[i].name, s + 1);
    snprintf(text + n, sizeof text - n, "%s\n  }\n}\n", extra);
    text_write(SHARD_DIR "/model.safetensors.index.json", text, path, cap);
}

static void test_sharded(void)
{
    const uint32_t E = 32, KV = 8;
    static ck_file shard[SHARDS];
    ck_file *files[SHARDS] = {&shard[0], &shard[1], &shard[2]};
    memset(shard, 0, sizeof shard);
    /* Layer 1 spans the first two shards, as layers do at a shard's end. */
    ck_add(&shard[0], "", "model.embed_tokens.weight", "BF16", 2, 4096, 1024, 0); /* 8 MiB, sparse */
    ck_add_hf_layer(&shard[0], P0, "BF16", E, KV, 7, 10);
    ck_add(&shard[0], P1, "q_proj.weight", "BF16", 2, E, E, 21);
    ck_add(&shard[0], P1, "k_proj.weight", "BF16", 2, KV, E, 22);
    ck_add(&shard[1], P1, "v_proj.weight", "BF16", 2, KV, E, 23);
    ck_add(&shard[1], P1, "o_proj.weight", "BF16", 2, E, E, 24);
    ck_add(&shard[1], P1, "q_norm.weight", "F32", 1, 4, 0, 25);
    ck_add(&shard[1], P1, "k_norm.weight", "F32", 1, 4, 0, 26);
    ck_add_hf_layer(&shard[1], "model.layers.2.self_attn.", "F16", E, KV, 0, 30);
    ck_add(&shard[2], "", "model.norm.weight", "BF16", 1, E, 0, 40);
    char dir[300], path[512], index[512];
    snprintf(dir, sizeof dir, "%s/" SHARD_DIR, dir_g);
    CHECK(mkdir(dir, 0700) == 0);
    for (int s = 0; s < SHARDS; s++) {
        char name[96];
        snprintf(name, sizeof name, SHARD_DIR "/model-0000%d-of-00003.safetensors", s + 1);
        ck_write(&shard[s], name, path, sizeof path);
    }
    index_write(files, "", index, sizeof index);

    /* Layer 1 through the index and through its folder: every value, and only the shards' headers
     * and the layer's tensors read. */
    const char *const ways[2] = {index, dir};
    for (int way = 0; way < 2; way++) {
        vkattn_weight_file *file = open_expect(ways[way], P1, VKATTN_OK, NULL, NULL);
        if (!file) continue;
        const vkattn_weights *w = vkattn_weight_file_weights(file);
        check_values(&shard[0], P1 "q_proj.weight", w->q_proj_weight, (size_t)E * E);
        check_values(&shard[0], P1 "k_proj.weight", w->k_proj_weight, (size_t)KV * E);
        check_values(&shard[1], P1 "v_proj.weight", w->v_proj_weight, (size_t)KV * E);
        check_values(&shard[1], P1 "o_proj.weight", w->out_proj_weight, (size_t)E * E);
        check_values(&shard[1], P1 "q_norm.weight", w->q_norm_weight, 4);
        check_values(&shard[1], P1 "k_norm.weight", w->k_norm_weight, 4);
        vkattn_weight_file_info info;
        CHECK_STATUS(vkattn_weight_file_get_info(file, &info), VKATTN_OK);
        uint64_t want = 0, size = 0, tensors = 0;
        for (int s = 0; s < SHARDS; s++) want += 8 + shard[s].header_len, size += shard[s].size, tensors += shard[s].count;
        static const char *const layer[] = {"q_proj.weight", "k_proj.weight", "v_proj.weight", "o_proj.weight",
                                            "q_norm.weight", "k_norm.weight"};
        for (int i = 0; i < 6; i++) {
            char full[128];
            snprintf(full, sizeof full, "%s%s", P1, layer[i]);
            want += ck_bytes(&shard[i < 2 ? 0 : 1], full);
        }
        CHECK_MSG(info.bytes_read == want && info.file_bytes == size && info.file_tensor_count == tensors,
                  "read %llu bytes of %llu, %llu tensors; expected %llu of %llu, %llu", (unsigned long long)info.bytes_read,
                  (unsigned long long)info.file_bytes, (unsigned long long)info.file_tensor_count,
                  (unsigned long long)want, (unsigned long long)size, (unsigned long long)tensors);
        CHECK(info.tensor_count == 6 && strcmp(info.prefix, P1) == 0);
        vkattn_layer_desc d = {.num_heads = 8};
        vkattn_weight_file_describe(file, &d);
        CHECK(d.embed_dim == E && d.num_kv_heads == 2 && d.qk_norm == VKATTN_QK_NORM_HEAD && d.no_bias == 1);
        vkattn_weight_file_destroy(file);
    }
    vkattn_weight_file *file = open_expect(index, "model.layers.2.self_attn.", VKATTN_OK, NULL, NULL);
    if (file) check_values(&shard[1], "model.layers.2.self_attn.o_proj.weight",
                           vkattn_weight_file_weights(file)->out_proj_weight, (size_t)E * E);
    vkattn_weight_file_destroy(file);
    /* A shard that changed size between its header's read and its tensors'. */
    st_checkpoint ck;
    vkattn_error err = {0};
    uint8_t *text = NULL;
    size_t size = 0;
    CHECK_STATUS(vka_read_file(index, 1 << 20, &text, &size, &err), VKATTN_OK);
    CHECK_STATUS(vka_st_checkpoint_index(&ck, index, text, size, &err), VKATTN_OK);
    free(text);
    if (err.status == VKATTN_OK) {
        snprintf(path, sizeof path, "%s/model-00002-of-00003.safetensors", dir);
        CHECK(truncate(path, (off_t)shard[1].size + 8) == 0);
        const st_tensor *t = NULL;
        for (size_t i = 0; i < ck.header.count && !t; i++)
            if (ck.header.tensors[i].file == 1) t = &ck.header.tensors[i]; /* shards are numbered in name order */
        uint8_t bytes[4096];
        CHECK(t != NULL && t->end - t->begin <= sizeof bytes);
        if (t && t->end - t->begin <= sizeof bytes) CHECK_STATUS(vka_st_checkpoint_read(&ck, t, bytes, &err), VKATTN_ERROR_IO);
        CHECK_MSG(contains(err.message, "model-00002-of-00003.safetensors: was ") && contains(err.message, "did it change"),
                  "%s", err.message);
        CHECK(truncate(path, (off_t)shard[1].size) == 0);
        vka_st_checkpoint_close(&ck);
    }
    /* The layers of every shard are found, and listed. */
    open_expect(index, NULL, VKATTN_ERROR_FORMAT, "'" P0 "', '" P1 "', 'model.layers.2.self_attn.'", NULL);
    open_expect(index, "model.layers.3.", VKATTN_ERROR_NOT_FOUND, "3 layers in the file", NULL);

    /* An index that is stale for other tensors loads (the shards say what they hold, as
     * transformers reads them); one that is malformed, or names shards outside the folder or
     * missing, is refused. */
    static const struct {
        const char *extra, *needle;
        vkattn_status want;
    } extras[] = {
        {",\"model.layers.9.mlp.up_proj.weight\": \"model-00003-of-00003.safetensors\"", NULL, VKATTN_OK},
        {",\"model.norm.weight\": \"model-00001-of-00003.safetensors\"", "'model.norm.weight' is listed twice",
         VKATTN_ERROR_FORMAT},
        {",\"x\": \"../model-00001-of-00003.safetensors\"", "not absolute, no '..'", VKATTN_ERROR_FORMAT},
        {",\"x\": \"/etc/model.safetensors\"", "not absolute, no '..'", VKATTN_ERROR_FORMAT},
        {",\"x\": \"\"", "not absolute, no '..'", VKATTN_ERROR_FORMAT},
        {",\"x\": 3", "must map to a shard's file name", VKATTN_ERROR_FORMAT},
        {",\"x\": \"model-00004-of-00003.safetensors\"", "model-00004-of-00003.safetensors: cannot open", VKATTN_ERROR_IO},
        {",\"x\": \"model.safetensors.index.json\"", "model.safetensors.index.json: safetensors: header length",
         VKATTN_ERROR_FORMAT},
        {",\"x\": \"fifo\"", "fifo: not a regular file", VKATTN_ERROR_IO},
    };
    snprintf(path, sizeof path, "%s/fifo", dir);
    CHECK(mkfifo(path, 0600) == 0); /* opened without blocking, then refused */
    for (size_t c = 0; c < sizeof extras / sizeof extras[0]; c++) {
        index_write(files, extras[c].extra, index, sizeof index);
        vkattn_weight_file_destroy(open_expect(index, P1, extras[c].want, extras[c].needle, NULL));
    }
    remove(path);
    /* A shard holds a tensor the index leaves out, or puts in another shard: loads. The same
     * tensor in two shards does not. */
    static ck_file listed;
    listed = shard[2];
    ck_add(&shard[2], "", "lm_head.weight", "BF16", 2, 4, 4, 41);
    ck_write(&shard[2], SHARD_DIR "/model-00003-of-00003.safetensors", path, sizeof path);
    index_write((ck_file *const[SHARDS]){&shard[0], &shard[1], &listed}, "", index, sizeof index);
    vkattn_weight_file_destroy(open_expect(index, P1, VKATTN_OK, NULL, NULL));
    index_write((ck_file *const[SHARDS]){&shard[0], &shard[1], &listed},
                ",\"lm_head.weight\": \"model-00002-of-00003.safetensors\"", index, sizeof index);
    vkattn_weight_file_destroy(open_expect(index, P1, VKATTN_OK, NULL, NULL));
    ck_add(&shard[2], P1, "o_proj.weight", "BF16", 2, E, E, 42);
    ck_write(&shard[2], SHARD_DIR "/model-00003-of-00003.safetensors", path, sizeof path);
    open_expect(index, P1, VKATTN_ERROR_FORMAT,
                "'" P1 "o_proj.weight' is in both model-00002-of-00003.safetensors and model-00003-of-00003.safetensors",
                NULL);
    /* A shard's own faults name it. */
    shard[2] = listed;
    raw_write(SHARD_DIR "/model-00003-of-00003.safetensors", "{\"model.norm.weight\":{\"dtype\":\"BF16\",\"shape\":[32],"
                                                             "\"data_offsets\":[0,64]}}", 60, path, sizeof path);
    index_write(files, "", index, sizeof index);
    open_expect(index, P1, VKATTN_ERROR_FORMAT, "model-00003-of-00003.safetensors: safetensors: tensor 'model.norm.weight'",
                "beyond");
    remove(path);

    /* Hostile index texts. */
    static const struct {
        const char *text, *needle;
    } texts[] = {
        {"{\"metadata\": {}}", "no \"weight_map\""},
        {"{\"weight_map\": []}", "\"weight_map\" must be an object"},
        {"{\"weight_map\": {}}", "lists no tensors"},
        {"{\"weight_map\": {\"a\": \"b\"}, \"weight_map\": {\"a\": \"b\"}}", "appears twice"},
        {"{\"weight_map\": {\"a\": \"b\\u0000c\"}}", "not absolute"},
        {"{\"weight_map\": {\"a\": \"b\"}", "safetensors index"},
        {"[1]", "safetensors index"},
    };
    for (size_t c = 0; c < sizeof texts / sizeof texts[0]; c++) {
        text_write(SHARD_DIR "/model.safetensors.index.json", texts[c].text, index, sizeof index);
        open_expect(index, P1, VKATTN_ERROR_FORMAT, texts[c].needle, NULL);
    }
    remove(index);
    /* A folder with neither file; with model.safetensors, that file. */
    open_expect(dir, P1, VKATTN_ERROR_IO, "a folder without model.safetensors or model.safetensors.index.json", NULL);
    ck_write(&shard[1], SHARD_DIR "/model.safetensors", path, sizeof path);
    file = open_expect(dir, "model.layers.2.self_attn.", VKATTN_OK, NULL, NULL);
    if (file) check_values(&shard[1], "model.layers.2.self_attn.v_proj.weight",
                           vkattn_weight_file_weights(file)->v_proj_weight, (size_t)KV * E);
    vkattn_weight_file_destroy(file);
    remove(path);
    for (int s = 0; s < SHARDS; s++) {
        snprintf(path, sizeof path, "%s/model-0000%d-of-00003.safetensors", dir, s + 1);
        remove(path);
    }
    CHECK(rmdir(dir) == 0);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir_g, sizeof dir_g, "%s/vkattn_test_weight_file_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir_g)) {
        perror("mkdtemp");
        return 1;
    }
    RUN_TEST(test_big_checkpoints);
    RUN_TEST(test_prefix_not_found);
    RUN_TEST(test_missing_and_biases);
    RUN_TEST(test_grouped_query);
    RUN_TEST(test_family_names);
    RUN_TEST(test_namings);
    RUN_TEST(test_hostile_files);
    RUN_TEST(test_old_api);
    RUN_TEST(test_sharded);
    RUN_TEST(test_check_description);
    if (rmdir(dir_g) != 0) {
        fprintf(stderr, "test_weight_file: %s was not left empty\n", dir_g);
        test_g.failures++;
    }
    return test_finish();
}
