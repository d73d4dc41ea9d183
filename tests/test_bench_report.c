/* The bench's reporting, without a GPU: the cost model against hand-computed FLOPs and bytes, the
 * roofline arithmetic of bench_derive, the JSON file (read back with the tools' own reader, every
 * field by name), the CSV rows, the SVG chart, bench --compare on files with known times, and the
 * JSON reader on hostile input. Records are built by hand; nothing here opens a Vulkan device. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <unistd.h>

#include "test_util.h"

#include "bench.h"
#include "json_read.h"

static char tmp_dir[64];

static void tmp_path(char *buf, size_t size, const char *name) { snprintf(buf, size, "%s/%s", tmp_dir, name); }

/* The whole content of a file (NUL-terminated, caller frees), or NULL. */
static char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *grown = realloc(buf, 2 * cap + 1);
        if (!grown) free(buf);
        buf = grown, cap *= 2;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    if (size) *size = n;
    return buf;
}

/* Everything written to a FILE* from tmpfile() so far (caller frees). */
static char *drain(FILE *f)
{
    long n = ftell(f);
    char *buf = malloc((size_t)(n > 0 ? n : 0) + 1);
    rewind(f);
    size_t got = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
    if (buf) buf[got] = '\0';
    return buf;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

#define VK_API(major, minor, patch) (((uint32_t)(major) << 22) | ((uint32_t)(minor) << 12) | (uint32_t)(patch))

static bench_run_info make_info(const char *device_name)
{
    bench_run_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.device.name, sizeof info.device.name, "%s", device_name);
    snprintf(info.device.driver_name, sizeof info.device.driver_name, "TestDriver");
    snprintf(info.device.driver_info, sizeof info.device.driver_info, "Mesa \"23.0\"\\dev");
    snprintf(info.device.kernel_profile, sizeof info.device.kernel_profile, "gpu");
    info.device.api_version = VK_API(1, 3, 230);
    info.device.type = VKATTN_DEVICE_DISCRETE_GPU;
    info.device.index = 1;
    info.peak = (vkattn_peak){.fp32_gflops = 1000, .fp16_gflops = 2000, .bandwidth_gbs = 100};
    info.min_time_s = 0.25;
    info.preset = "quick";
    return info;
}

/* A result with costs from the cost model, the forward taking `gpu_ms`, split evenly over the
 * stages the path runs (those with FLOPs or bytes). */
static bench_result make_result(uint32_t B, uint32_t L, uint32_t S, uint32_t E, uint32_t H, vkattn_path path,
                                double gpu_ms, double cpu_ms)
{
    bench_result r;
    memset(&r, 0, sizeof r);
    r.config = (bench_config){B, L, S, E, H, BENCH_MASK_NONE, path, VKATTN_DTYPE_F32};
    r.path_ran = path;
    r.repeats = 7, r.dispatches = 5, r.submits = 1;
    r.workspace_bytes = 12345678901ull; /* above 2^32: must survive the JSON round trip */
    r.gpu = (bench_time){gpu_ms, gpu_ms * 0.875};
    r.host = (bench_time){gpu_ms + 0.5, gpu_ms + 0.25};
    r.host_overhead = (bench_time){0.5, 0.25};
    r.cpu_ms = cpu_ms;
    vkattn_layer_desc d = {.embed_dim = E, .num_heads = H};
    vkattn_cost c;
    CHECK_STATUS(vkattn_forward_cost(&d, B, L, S == L ? 0 : S, path, VKATTN_WEIGHTS_NONE, &c), VKATTN_OK);
    r.flops = c.total_flops, r.bytes = c.total_bytes;
    int n = 0;
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) n += c.flops[s] > 0 || c.bytes[s] > 0;
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
        if (!(c.flops[s] > 0 || c.bytes[s] > 0)) continue;
        r.stages[s].present = 1;
        r.stages[s].time = (bench_time){gpu_ms / n, gpu_ms / n * 0.875};
        r.stages[s].flops = c.flops[s], r.stages[s].bytes = c.bytes[s];
    }
    return r;
}

/* ---------------------------------------------------------------------------------------------- */
/* Names, keys and the cost model                                                                 */
/* ---------------------------------------------------------------------------------------------- */

static void test_names_and_keys(void)
{
    CHECK(strcmp(bench_mask_name(BENCH_MASK_NONE), "none") == 0);
    CHECK(strcmp(bench_mask_name(BENCH_MASK_CAUSAL), "causal") == 0);
    CHECK(strcmp(bench_mask_name(BENCH_MASK_PADDING), "padding") == 0);
    CHECK(strcmp(bench_mask_name(BENCH_MASK_CAUSAL_PADDING), "causal+padding") == 0);
    char key[128];
    bench_config c = {1, 1024, 1024, 512, 8, BENCH_MASK_NONE, VKATTN_PATH_UNFUSED, VKATTN_DTYPE_F32};
    bench_config_key(&c, key, sizeof key);
    CHECK_MSG(strcmp(key, "B1_L1024_S1024_E512_H8_none_unfused_f32") == 0, "key %s", key);
    c = (bench_config){2, 7, 5, 64, 4, BENCH_MASK_CAUSAL_PADDING, VKATTN_PATH_FUSED, VKATTN_DTYPE_F16};
    bench_config_key(&c, key, sizeof key);
    CHECK_MSG(strcmp(key, "B2_L7_S5_E64_H4_causal+padding_fused_f16") == 0, "key %s", key);
    bench_config_key(&c, key, 8); /* truncated, still terminated */
    CHECK(strlen(key) == 7);
}

static void test_cost_cross_attention_unfused(void)
{
    /* B=2, L=3, S=5, E=4, H=2 (D=2), kdim=6, vdim=8, f32 (4 bytes), no attention weights.
     * FLOPs:
     *   qkv_projection 2·B·(L·E·E + S·kdim·E + S·vdim·E) = 4·(48 + 120 + 160)     = 1312
     *   out_projection 2·B·L·E·E                        = 2·2·3·16               =  192
     *   attention      4·B·H·L·S·D                      = 4·2·2·3·5·2            =  480
     *     scores and P·V half each                                               =  240 + 240
     *   total                                           = 1312 + 192 + 480       = 1984
     * Bytes (elements × 4):
     *   qkv_projection: inputs B·L·E + B·S·kdim + B·S·vdim = 24 + 60 + 80 = 164,
     *                   weights E·E + E·kdim + E·vdim + 3E (bias) = 16 + 24 + 32 + 12 = 84,
     *                   outputs Q, K, V: B·L·E + 2·B·S·E = 24 + 80 = 104 -> 352 · 4   = 1408
     *   out_projection: ctx B·L·E + W_O E·E + b_O E + out B·L·E = 24+16+4+24 = 68·4 =  272
     *   scores:  Q + K = B·L·E + B·S·E = 24 + 40 = 64 -> 256, scores B·H·L·S = 60 -> 240: 496
     *   softmax: read + write the scores 2·240                                       =  480
     *   pv:      P 240 + V B·S·E·4 = 160 + ctx B·L·E·4 = 96                          =  496
     *   total 1408 + 272 + 496 + 480 + 496                                           = 3152 */
    vkattn_layer_desc d = {.embed_dim = 4, .num_heads = 2, .kdim = 6, .vdim = 8};
    vkattn_cost c;
    CHECK_STATUS(vkattn_forward_cost(&d, 2, 3, 5, VKATTN_PATH_UNFUSED, VKATTN_WEIGHTS_NONE, &c), VKATTN_OK);
    CHECK(c.flops[VKATTN_STAGE_QKV_PROJECTION] == 1312);
    CHECK(c.flops[VKATTN_STAGE_SCORES] == 240);
    CHECK(c.flops[VKATTN_STAGE_SOFTMAX] == 0);
    CHECK(c.flops[VKATTN_STAGE_PV] == 240);
    CHECK(c.flops[VKATTN_STAGE_OUT_PROJECTION] == 192);
    CHECK(c.flops[VKATTN_STAGE_FUSED] == 0 && c.flops[VKATTN_STAGE_AVERAGE_HEADS] == 0);
    CHECK(c.total_flops == 1984);
    CHECK(c.bytes[VKATTN_STAGE_QKV_PROJECTION] == 1408);
    CHECK(c.bytes[VKATTN_STAGE_SCORES] == 496);
    CHECK(c.bytes[VKATTN_STAGE_SOFTMAX] == 480);
    CHECK(c.bytes[VKATTN_STAGE_PV] == 496);
    CHECK(c.bytes[VKATTN_STAGE_OUT_PROJECTION] == 272);
    CHECK(c.bytes[VKATTN_STAGE_AVERAGE_HEADS] == 0 && c.bytes[VKATTN_STAGE_FUSED] == 0);
    CHECK(c.total_bytes == 3152);
    /* AUTO counts as UNFUSED. */
    vkattn_cost a;
    CHECK_STATUS(vkattn_forward_cost(&d, 2, 3, 5, VKATTN_PATH_AUTO, VKATTN_WEIGHTS_NONE, &a), VKATTN_OK);
    CHECK(a.total_flops == 1984 && a.total_bytes == 3152);
}

static void test_cost_self_attention_fused_f16(void)
{
    /* B=1, L=S=8 (key_len 0 = self-attention), E=16, H=4 (D=4), f16 storage (2 bytes), fused.
     * FLOPs: qkv 2·1·(3·8·16·16) = 12288; out 2·8·16·16 = 4096; fused 4·1·4·8·8·4 = 4096;
     *        total 20480.
     * Bytes (elements × 2): qkv: the query read once B·L·E = 128, weights 3·256 + 3·16 = 816,
     *        Q, K, V out 3·128 = 384 -> 1328 · 2 = 2656; out: 128 + 256 + 16 + 128 = 528 · 2 = 1056;
     *        fused: Q, K, V read 3·128, ctx written 128 -> 512 · 2 = 1024; total 4736. */
    vkattn_layer_desc d = {.embed_dim = 16, .num_heads = 4, .storage = VKATTN_DTYPE_F16};
    vkattn_cost c;
    CHECK_STATUS(vkattn_forward_cost(&d, 1, 8, 0, VKATTN_PATH_FUSED, VKATTN_WEIGHTS_NONE, &c), VKATTN_OK);
    CHECK(c.flops[VKATTN_STAGE_QKV_PROJECTION] == 12288);
    CHECK(c.flops[VKATTN_STAGE_OUT_PROJECTION] == 4096);
    CHECK(c.flops[VKATTN_STAGE_FUSED] == 4096);
    CHECK(c.flops[VKATTN_STAGE_SCORES] == 0 && c.flops[VKATTN_STAGE_PV] == 0);
    CHECK(c.total_flops == 20480);
    CHECK(c.bytes[VKATTN_STAGE_QKV_PROJECTION] == 2656);
    CHECK(c.bytes[VKATTN_STAGE_OUT_PROJECTION] == 1056);
    CHECK(c.bytes[VKATTN_STAGE_FUSED] == 1024);
    CHECK(c.bytes[VKATTN_STAGE_SCORES] == 0 && c.bytes[VKATTN_STAGE_SOFTMAX] == 0);
    CHECK(c.total_bytes == 4736);
}

static void test_cost_averaged_weights_extra_keys(void)
{
    /* B=1, L=S=2, E=4, H=1 (D=4), f32, add_bias_kv and add_zero_attn (S' = 4), averaged weights.
     * FLOPs use S, not S': qkv 2·(3·2·4·4) = 192; out 2·2·16 = 64; attention 4·1·1·2·2·4 = 64
     *        (32 scores + 32 P·V); total 320.
     * Bytes (×4): qkv: 8 + (48 + 12) + 24 = 92 -> 368; out: 8 + 16 + 4 + 8 = 36 -> 144;
     *        probabilities B·H·L·S' = 8 -> 32 bytes;
     *        scores: Q + K (8 + 8)·4 = 64 + 32 = 96; softmax 2·32 = 64; pv: 32 + V 32 + ctx 32 = 96;
     *        average_heads: read P 32 + write and read-modify (2·B·L·S' = 16)·4 = 64 -> 96;
     *        total 368 + 144 + 96 + 64 + 96 + 96 = 864. */
    vkattn_layer_desc d = {.embed_dim = 4, .num_heads = 1, .add_bias_kv = 1, .add_zero_attn = 1};
    vkattn_cost c;
    CHECK_STATUS(vkattn_forward_cost(&d, 1, 2, 0, VKATTN_PATH_UNFUSED, VKATTN_WEIGHTS_AVERAGED, &c), VKATTN_OK);
    CHECK(c.flops[VKATTN_STAGE_QKV_PROJECTION] == 192);
    CHECK(c.flops[VKATTN_STAGE_SCORES] == 32 && c.flops[VKATTN_STAGE_PV] == 32);
    CHECK(c.flops[VKATTN_STAGE_OUT_PROJECTION] == 64);
    CHECK(c.flops[VKATTN_STAGE_AVERAGE_HEADS] == 0);
    CHECK(c.total_flops == 320);
    CHECK(c.bytes[VKATTN_STAGE_QKV_PROJECTION] == 368);
    CHECK(c.bytes[VKATTN_STAGE_OUT_PROJECTION] == 144);
    CHECK(c.bytes[VKATTN_STAGE_SCORES] == 96);
    CHECK(c.bytes[VKATTN_STAGE_SOFTMAX] == 64);
    CHECK(c.bytes[VKATTN_STAGE_PV] == 96);
    CHECK(c.bytes[VKATTN_STAGE_AVERAGE_HEADS] == 96);
    CHECK(c.total_bytes == 864);
    /* Per-head weights (1) add no averaging stage. */
    CHECK_STATUS(vkattn_forward_cost(&d, 1, 2, 0, VKATTN_PATH_UNFUSED, VKATTN_WEIGHTS_PER_HEAD, &c), VKATTN_OK);
    CHECK(c.bytes[VKATTN_STAGE_AVERAGE_HEADS] == 0 && c.total_bytes == 768);
}

static void test_cost_rejects_bad_arguments(void)
{
    vkattn_layer_desc d = {.embed_dim = 6, .num_heads = 4};
    vkattn_cost c;
    memset(&c, 0x5A, sizeof c);
    unsigned char before[sizeof c];
    memcpy(before, &c, sizeof c);
    CHECK_STATUS(vkattn_forward_cost(&d, 1, 4, 0, VKATTN_PATH_UNFUSED, VKATTN_WEIGHTS_NONE, &c), VKATTN_ERROR_INVALID_ARGUMENT);
    d.num_heads = 2;
    CHECK_STATUS(vkattn_forward_cost(&d, 0, 4, 0, VKATTN_PATH_UNFUSED, VKATTN_WEIGHTS_NONE, &c), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_forward_cost(&d, 1, 4, 0, VKATTN_PATH_UNFUSED, (vkattn_weights_kind)3, &c), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_forward_cost(NULL, 1, 4, 0, VKATTN_PATH_UNFUSED, VKATTN_WEIGHTS_NONE, &c), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(memcmp(before, &c, sizeof c) == 0); /* untouched on failure */
}

/* ---------------------------------------------------------------------------------------------- */
/* bench_derive                                                                                    */
/* ---------------------------------------------------------------------------------------------- */

static void test_derive_roofline(void)
{
    bench_result r;
    memset(&r, 0, sizeof r);
    vkattn_peak peak = {.fp32_gflops = 100, .bandwidth_gbs = 10};
    /* qkv: 2e9 FLOPs, 1e8 bytes in 100 ms -> 20 GFLOP/s, 1 GB/s; intensity 20 FLOP/byte allows
     *      200 GFLOP/s from memory, so compute bound at 100: 20 %. */
    r.stages[VKATTN_STAGE_QKV_PROJECTION] = (bench_stage_result){1, {100, 90}, 2e9, 1e8, 0, 0, 0};
    /* scores: 1e9 FLOPs, 1e9 bytes in 200 ms -> 5 GFLOP/s, 5 GB/s; intensity 1 -> memory bound
     *      at 10 GFLOP/s: 50 %. */
    r.stages[VKATTN_STAGE_SCORES] = (bench_stage_result){1, {200, 150}, 1e9, 1e9, 0, 0, 0};
    /* softmax: no FLOPs, 4e8 bytes in 50 ms -> 8 GB/s of 10: 80 %. */
    r.stages[VKATTN_STAGE_SOFTMAX] = (bench_stage_result){1, {50, 40}, 0, 4e8, 0, 0, 0};
    /* not present: left at zero even with a time */
    r.stages[VKATTN_STAGE_FUSED] = (bench_stage_result){0, {7, 7}, 1e9, 1e9, 0, 0, 0};
    /* total: 3e9 FLOPs, 1.5e9 bytes in 350 ms -> 8.5714 GFLOP/s, 4.2857 GB/s; intensity 2 ->
     *      bound 20 GFLOP/s: 42.857 %. */
    r.flops = 3e9, r.bytes = 1.5e9;
    r.gpu = (bench_time){350, 300};
    r.host_overhead = (bench_time){1.5, 1.25};
    bench_derive(&r, &peak);
    const bench_stage_result *q = &r.stages[VKATTN_STAGE_QKV_PROJECTION], *s = &r.stages[VKATTN_STAGE_SCORES];
    const bench_stage_result *m = &r.stages[VKATTN_STAGE_SOFTMAX], *f = &r.stages[VKATTN_STAGE_FUSED];
    CHECK_NEAR(q->gflops, 20, 1e-9);
    CHECK_NEAR(q->gbs, 1, 1e-12);
    CHECK_NEAR(q->roofline_pct, 20, 1e-9);
    CHECK_NEAR(s->gflops, 5, 1e-12);
    CHECK_NEAR(s->gbs, 5, 1e-12);
    CHECK_NEAR(s->roofline_pct, 50, 1e-9);
    CHECK_NEAR(m->gflops, 0, 0);
    CHECK_NEAR(m->gbs, 8, 1e-12);
    CHECK_NEAR(m->roofline_pct, 80, 1e-9);
    CHECK(f->gflops == 0 && f->gbs == 0 && f->roofline_pct == 0);
    CHECK_NEAR(r.gflops, 3e9 / 350e6, 1e-12);
    CHECK_NEAR(r.gbs, 1.5e9 / 350e6, 1e-12);
    CHECK_NEAR(r.roofline_pct, 100.0 * (3e9 / 350e6) / 20, 1e-9);
    /* The host overhead belongs to the caller. */
    CHECK(r.host_overhead.median_ms == 1.5 && r.host_overhead.min_ms == 1.25);
    CHECK(r.gpu.median_ms == 350 && q->time.median_ms == 100);
}

static void test_derive_without_peak(void)
{
    bench_result r;
    memset(&r, 0, sizeof r);
    r.stages[VKATTN_STAGE_PV] = (bench_stage_result){1, {4, 3}, 8e6, 2e6, 0, 0, 0};
    r.stages[VKATTN_STAGE_SOFTMAX] = (bench_stage_result){1, {2, 1}, 0, 2e6, 0, 0, 0};
    r.stages[VKATTN_STAGE_SCORES] = (bench_stage_result){1, {0, 0}, 8e6, 2e6, 0, 0, 0}; /* no time */
    r.flops = 16e6, r.bytes = 4e6;
    r.gpu = (bench_time){8, 7};
    vkattn_peak none = {0};
    bench_derive(&r, &none);
    CHECK_NEAR(r.stages[VKATTN_STAGE_PV].gflops, 2, 1e-12); /* 8e6 / (4 ms · 1e6) */
    CHECK_NEAR(r.stages[VKATTN_STAGE_PV].gbs, 0.5, 1e-12);
    CHECK(r.stages[VKATTN_STAGE_PV].roofline_pct == 0);
    CHECK(r.stages[VKATTN_STAGE_SOFTMAX].roofline_pct == 0);
    CHECK(r.stages[VKATTN_STAGE_SCORES].gflops == 0 && isfinite(r.stages[VKATTN_STAGE_SCORES].gbs));
    CHECK_NEAR(r.gflops, 2, 1e-12);
    CHECK(r.roofline_pct == 0);
}

/* ---------------------------------------------------------------------------------------------- */
/* The JSON reader                                                                                 */
/* ---------------------------------------------------------------------------------------------- */

static void test_json_reader_values(void)
{
    const char *text = " {\"a\": [1, -2.5e3, 0.125E+1, true, false, null, \"x\\\"\\\\\\n\\u0041\\u00e9\\/\"],\n"
                       "  \"b\": {}, \"c\": [], \"a\": 2, \"big\": 12345678901, \"tiny\": 1e-400}  ";
    char err[200];
    json_doc *doc = json_parse(text, strlen(text), err, sizeof err);
    CHECK_MSG(doc != NULL, "%s", err);
    if (!doc) return;
    const json_value *root = json_root(doc), *a = json_get(root, "a");
    CHECK(root->type == JSON_OBJECT && root->count == 6);
    CHECK(a && a->type == JSON_ARRAY && a->count == 7); /* the first "a" wins */
    const json_value *v = a ? a->child : NULL;
    CHECK(v && v->type == JSON_NUMBER && v->number == 1);
    v = v ? v->next : NULL;
    CHECK(v && v->number == -2500);
    v = v ? v->next : NULL;
    CHECK(v && v->number == 1.25);
    v = v ? v->next : NULL;
    CHECK(v && v->type == JSON_BOOL && v->boolean == 1);
    v = v ? v->next : NULL;
    CHECK(v && v->type == JSON_BOOL && v->boolean == 0);
    v = v ? v->next : NULL;
    CHECK(v && v->type == JSON_NULL);
    v = v ? v->next : NULL;
    CHECK(v && v->type == JSON_STRING && strcmp(v->string, "x\"\\\nA\xc3\xa9/") == 0);
    CHECK(v && v->next == NULL);
    CHECK(json_get(root, "b") && json_get(root, "b")->type == JSON_OBJECT && json_get(root, "b")->count == 0);
    CHECK(json_get(root, "c") && json_get(root, "c")->child == NULL);
    int ok = 0;
    CHECK(json_get_number(root, "big", &ok) == 12345678901.0 && ok);
    CHECK(json_get_number(root, "tiny", &ok) == 0 && ok);
    CHECK(json_get_number(root, "a", &ok) == 0 && !ok);
    CHECK(json_get_string(root, "a") == NULL && json_get(root, "missing") == NULL && json_get(NULL, "a") == NULL);
    json_free(doc);
    json_free(NULL);
}

static void test_json_reader_hostile(void)
{
    static const char *const bad[] = {
        "", "   ", "{", "[", "]", "[1,]", "[,1]", "{\"a\":}", "{\"a\" 1}", "{1:2}", "{\"a\":1,}", "\"abc",
        "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"", "\"\\u0000\"", "\"\\ud800\"", "\"\\", "01", "1.", ".5", "-", "+1",
        "1e", "1e+", "1e999", "-1e999", "tru", "nul", "falsey", "[1 2]", "{} x", "\"a\001b\"", "NaN", "Infinity",
        "[\"a\"\"b\"]", "{\"a\":1 \"b\":2}", "123456789012345678901234567890123456789012345678901234567890123456789"};
    char err[200];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        json_doc *doc = json_parse(bad[i], strlen(bad[i]), err, sizeof err);
        CHECK_MSG(doc == NULL, "accepted \"%s\"", bad[i]);
        CHECK_MSG(strstr(err, "line 1, column") == err, "message \"%s\" for \"%s\"", err, bad[i]);
        json_free(doc);
    }
    /* A NUL byte inside the text is not the end of it. */
    json_doc *doc = json_parse("[1,\0 2]", 7, err, sizeof err);
    CHECK(doc == NULL);
    json_free(doc);
    /* Nesting: JSON_READ_MAX_DEPTH levels are fine, one more is refused (no stack overflow). */
    static char deep[2 * 4096];
    const int depths[] = {JSON_READ_MAX_DEPTH, JSON_READ_MAX_DEPTH + 1, 4096};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        size_t depth = (size_t)depths[i];
        memset(deep, '[', depth);
        memset(deep + depth, ']', depth);
        doc = json_parse(deep, 2 * depth, err, sizeof err);
        CHECK_MSG((doc != NULL) == (depth <= JSON_READ_MAX_DEPTH), "depth %zu: %s", depth, doc ? "ok" : err);
        json_free(doc);
    }
    /* Line and column in messages. */
    const char *where = "{\n  \"a\": 1,\n  \"b\": x\n}";
    doc = json_parse(where, strlen(where), err, sizeof err);
    CHECK_MSG(doc == NULL && strstr(err, "line 3, column 8") == err, "%s", err);
    json_free(doc);
    CHECK(json_parse(NULL, 0, err, sizeof err) == NULL);
    doc = json_parse("1", 1, NULL, 0); /* err may be NULL */
    CHECK(doc != NULL);
    json_free(doc);
    CHECK(json_parse("[", 1, NULL, 0) == NULL);
    doc = json_parse("-0.5", 4, err, sizeof err);
    CHECK(doc && json_root(doc)->number == -0.5);
    json_free(doc);
}

/* ---------------------------------------------------------------------------------------------- */
/* JSON, CSV and SVG files                                                                         */
/* ---------------------------------------------------------------------------------------------- */

/* Two unfused configurations (one without a CPU run) and one fused. */
static uint32_t sample_results(bench_result *out, const vkattn_peak *peak)
{
    out[0] = make_result(1, 64, 64, 32, 4, VKATTN_PATH_UNFUSED, 2.0, 40.0);
    out[1] = make_result(1, 256, 256, 32, 4, VKATTN_PATH_UNFUSED, 8.0, -1);
    out[2] = make_result(1, 256, 256, 32, 4, VKATTN_PATH_FUSED, 4.0, -1);
    out[1].config.mask = BENCH_MASK_CAUSAL;
    for (int i = 0; i < 3; i++) bench_derive(&out[i], peak);
    return 3;
}

/* A string member, or "" when missing (so a broken writer fails checks instead of crashing). */
static const char *str(const json_value *obj, const char *name)
{
    const char *s = json_get_string(obj, name);
    return s ? s : "";
}

static int has(const json_value *obj, const char *name, json_type type)
{
    const json_value *v = json_get(obj, name);
    return v && v->type == type;
}

/* Every field of one bench_result in the JSON file, by name, and their values. */
static void check_json_result(const json_value *o, const bench_result *r, uint32_t i)
{
    static const char *const result_numbers[] = {
        "batch", "query_len", "key_len", "embed_dim", "heads", "repeats", "dispatches", "submits",
        "workspace_bytes", "gpu_ms_median", "gpu_ms_min", "host_ms_median", "host_ms_min", "host_overhead_ms_median",
        "host_overhead_ms_min", "flops", "bytes", "gflops", "gbs", "roofline_pct"};
    static const char *const result_strings[] = {"key", "mask", "path", "path_ran", "dtype"};
    static const char *const stage_numbers[] = {"ms_median", "ms_min", "flops", "bytes", "gflops", "gbs",
                                                "roofline_pct"};
    for (size_t k = 0; k < sizeof result_numbers / sizeof result_numbers[0]; k++)
        CHECK_MSG(has(o, result_numbers[k], JSON_NUMBER), "results[%u].%s", i, result_numbers[k]);
    for (size_t k = 0; k < sizeof result_strings / sizeof result_strings[0]; k++)
        CHECK_MSG(has(o, result_strings[k], JSON_STRING), "results[%u].%s", i, result_strings[k]);
    char key[128];
    bench_config_key(&r->config, key, sizeof key);
    CHECK(strcmp(str(o, "key"), key) == 0);
    CHECK(json_get_number(o, "query_len", NULL) == r->config.query_len);
    CHECK(strcmp(str(o, "mask"), bench_mask_name(r->config.mask)) == 0);
    CHECK(strcmp(str(o, "path"), vkattn_path_name(r->config.path)) == 0);
    CHECK(strcmp(str(o, "path_ran"), vkattn_path_name(r->path_ran)) == 0);
    CHECK(strcmp(str(o, "dtype"), "f32") == 0);
    CHECK(json_get_number(o, "workspace_bytes", NULL) == 12345678901.0);
    CHECK(json_get_number(o, "flops", NULL) == r->flops); /* exact */
    CHECK(json_get_number(o, "bytes", NULL) == r->bytes);
    CHECK(json_get_number(o, "gpu_ms_median", NULL) == r->gpu.median_ms);
    CHECK(json_get_number(o, "gpu_ms_min", NULL) == r->gpu.min_ms);
    CHECK(json_get_number(o, "host_overhead_ms_median", NULL) == 0.5);
    CHECK_NEAR(json_get_number(o, "gflops", NULL), r->gflops, 1e-5 * r->gflops);
    CHECK_NEAR(json_get_number(o, "roofline_pct", NULL), r->roofline_pct, 1e-5 * r->roofline_pct);
    const json_value *cpu = json_get(o, "cpu_ms");
    CHECK(cpu && (r->cpu_ms < 0 ? cpu->type == JSON_NULL : cpu->type == JSON_NUMBER && cpu->number == 40.0));
    const json_value *stages = json_get(o, "stages");
    uint32_t present = 0;
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) present += (uint32_t)r->stages[s].present;
    CHECK(stages && stages->type == JSON_ARRAY && stages->count == present);
    for (const json_value *st = stages ? stages->child : NULL; st; st = st->next) {
        CHECK(has(st, "stage", JSON_STRING));
        for (size_t k = 0; k < sizeof stage_numbers / sizeof stage_numbers[0]; k++)
            CHECK_MSG(has(st, stage_numbers[k], JSON_NUMBER), "results[%u].stages.%s", i, stage_numbers[k]);
        int found = 0;
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
            if (!r->stages[s].present || strcmp(str(st, "stage"), vkattn_stage_name(s))) continue;
            found = 1;
            CHECK(json_get_number(st, "flops", NULL) == r->stages[s].flops);
            CHECK(json_get_number(st, "bytes", NULL) == r->stages[s].bytes);
            double ms = r->stages[s].time.median_ms; /* 9 significant digits */
            CHECK_NEAR(json_get_number(st, "ms_median", NULL), ms, 1e-8 * ms);
        }
        CHECK(found);
    }
}

static void test_json_file_fields(void)
{
    bench_run_info info = make_info("Test GPU & Co, rev. 2");
    bench_result r[3];
    uint32_t n = sample_results(r, &info.peak);
    char path[128], err[600];
    tmp_path(path, sizeof path, "results.json");
    CHECK(bench_write_json(path, &info, r, n) == 0);
    json_doc *doc = json_read_file(path, err, sizeof err);
    CHECK_MSG(doc != NULL, "%s", err);
    if (!doc) return;
    const json_value *root = json_root(doc), *dev = json_get(root, "device"), *peak = json_get(root, "peak");
    CHECK(has(root, "vkattn_version", JSON_STRING) &&
          strcmp(str(root, "vkattn_version"), vkattn_version_string()) == 0);
    /* bench_run_info: device, peak, min_time_s, preset */
    static const char *const device_strings[] = {"name", "driver_name", "driver_info", "api_version", "type",
                                                 "kernel_profile"};
    for (size_t i = 0; i < sizeof device_strings / sizeof device_strings[0]; i++)
        CHECK_MSG(has(dev, device_strings[i], JSON_STRING), "device.%s", device_strings[i]);
    CHECK(has(dev, "index", JSON_NUMBER) && json_get_number(dev, "index", NULL) == 1);
    CHECK(strcmp(str(dev, "name"), "Test GPU & Co, rev. 2") == 0);
    CHECK(strcmp(str(dev, "driver_info"), "Mesa \"23.0\"\\dev") == 0); /* quote and backslash escaped */
    CHECK(strcmp(str(dev, "api_version"), "1.3.230") == 0);
    CHECK(strcmp(str(dev, "type"), "discrete_gpu") == 0);
    CHECK(json_get_number(peak, "fp32_gflops", NULL) == 1000);
    CHECK(json_get_number(peak, "fp16_gflops", NULL) == 2000);
    CHECK(json_get_number(peak, "bandwidth_gbs", NULL) == 100);
    CHECK(has(root, "min_time_s", JSON_NUMBER) && json_get_number(root, "min_time_s", NULL) == 0.25);
    CHECK(strcmp(str(root, "preset"), "quick") == 0);

    /* bench_result: every field, by name */
    const json_value *results = json_get(root, "results");
    CHECK(results && results->type == JSON_ARRAY && results->count == n);
    uint32_t i = 0;
    for (const json_value *o = results ? results->child : NULL; o && i < n; o = o->next, i++)
        check_json_result(o, &r[i], i);
    json_free(doc);

    /* preset NULL is written as null; an empty result list is still a valid file */
    info.preset = NULL;
    CHECK(bench_write_json(path, &info, r, 0) == 0);
    doc = json_read_file(path, err, sizeof err);
    CHECK_MSG(doc != NULL, "%s", err);
    CHECK(doc && has(json_root(doc), "preset", JSON_NULL));
    CHECK(doc && json_get(json_root(doc), "results")->count == 0);
    json_free(doc);
    CHECK(bench_write_json("/nonexistent-dir/x.json", &info, r, n) != 0);
    remove(path);
}

static void test_csv_rows(void)
{
    bench_run_info info = make_info("Test GPU & Co, rev. 2");
    bench_result r[3];
    uint32_t n = sample_results(r, &info.peak);
    char path[128];
    tmp_path(path, sizeof path, "results.csv");
    CHECK(bench_write_csv(path, &info, r, n) == 0);
    char *text = slurp(path, NULL);
    CHECK(text != NULL);
    if (!text) return;
    int expected = 1; /* the header */
    for (uint32_t i = 0; i < n; i++) {
        expected++; /* total */
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) expected += r[i].stages[s].present;
    }
    CHECK_MSG(count_lines(text) == expected, "%d lines, expected %d", count_lines(text), expected);
    const char *header = "device,key,batch,query_len,key_len,embed_dim,heads,mask,path,path_ran,dtype,stage,ms_median,"
                         "ms_min,flops,bytes,gflops,gbs,roofline_pct,share_pct,host_overhead_ms_median,cpu_ms\n";
    CHECK(strncmp(text, header, strlen(header)) == 0);
    /* the device name holds a comma, so it is quoted */
    CHECK(strstr(text, "\n\"Test GPU & Co, rev. 2\",B1_L64_S64_E32_H4_none_unfused_f32,1,64,64,32,4,none,unfused,"
                       "unfused,f32,total,2,") != NULL);
    CHECK(strstr(text, ",B1_L256_S256_E32_H4_none_fused_f32,1,256,256,32,4,none,fused,fused,f32,fused,") != NULL);
    CHECK(strstr(text, ",softmax,") != NULL);
    /* every row has as many fields as the header (no field holds a quote here) */
    int header_fields = 1;
    for (const char *p = text; *p != '\n'; p++) header_fields += *p == ',';
    for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
        int fields = 1, quoted = 0;
        for (const char *p = line; *p != '\n'; p++) {
            if (*p == '"') quoted = !quoted;
            else if (*p == ',' && !quoted) fields++;
        }
        CHECK(fields == header_fields);
    }
    free(text);
    remove(path);
}

static void test_plot_svg(void)
{
    bench_run_info info = make_info("Test GPU & Co, rev. 2");
    bench_result r[3];
    uint32_t n = sample_results(r, &info.peak);
    /* Only .svg names are accepted (vkattn bench checks before its sweep). */
    CHECK(bench_plot_path_ok("a.svg") && bench_plot_path_ok("dir/A.SVG"));
    CHECK(!bench_plot_path_ok("a.png") && !bench_plot_path_ok("svg") && !bench_plot_path_ok(".svg") &&
          !bench_plot_path_ok("a.svgz"));
    char path[128];
    tmp_path(path, sizeof path, "chart.svg");
    CHECK(bench_write_plot(path, &info, r, n) == 0);
    char *svg = slurp(path, NULL);
    CHECK(svg != NULL);
    if (!svg) return;
    CHECK(strncmp(svg, "<svg", 4) == 0);
    CHECK(strstr(svg, "Test GPU &amp; Co, rev. 2") != NULL); /* the device, XML-escaped */
    CHECK(strstr(svg, "TestDriver") != NULL);
    CHECK(strstr(svg, "<polyline") != NULL);
    CHECK(strstr(svg, "unfused total") != NULL && strstr(svg, "fused fused") != NULL);
    CHECK(strstr(svg, "unfused qkv_projection") != NULL);
    CHECK(strstr(svg, "softmax") == NULL); /* no FLOPs, no GFLOP/s */
    CHECK(strstr(svg, "and per mask") != NULL);   /* the masks differ: series are split by them */
    CHECK(strstr(svg, ">64<") != NULL && strstr(svg, ">256<") != NULL); /* x ticks at the L present */
    CHECK(strstr(svg, "</svg>") != NULL);
    /* The sample's peak (1000 GFLOP/s) is far above tiny shapes' figures: named, not drawn. */
    CHECK(strstr(svg, "off the scale") != NULL && strstr(svg, "stroke-dasharray=\"6,4\"") == NULL);
    free(svg);

    /* A peak within 20x of the data is drawn as a dashed line. */
    info.peak.fp32_gflops = 2.0 * r[0].gflops;
    CHECK(bench_write_plot(path, &info, r, n) == 0);
    svg = slurp(path, NULL);
    CHECK(svg && strstr(svg, "stroke-dasharray=\"6,4\"") != NULL && strstr(svg, "off the scale") == NULL);
    free(svg);

    /* A CPU device says so. */
    info.device.type = VKATTN_DEVICE_CPU;
    CHECK(bench_write_plot(path, &info, r, 1) == 0);
    svg = slurp(path, NULL);
    CHECK(svg && strstr(svg, "not GPU figures") != NULL);
    free(svg);
    CHECK(bench_write_plot(path, &info, r, 0) == 0); /* nothing to plot is not an error */

    /* E and S vary: series split by them and labelled; x is the query length. */
    bench_result g[4] = {make_result(1, 64, 128, 32, 4, VKATTN_PATH_UNFUSED, 1, -1),
                         make_result(1, 128, 128, 32, 4, VKATTN_PATH_UNFUSED, 2, -1),
                         make_result(1, 64, 128, 64, 4, VKATTN_PATH_UNFUSED, 3, -1),
                         make_result(1, 128, 128, 64, 4, VKATTN_PATH_UNFUSED, 4, -1)};
    for (int i = 0; i < 4; i++) bench_derive(&g[i], &info.peak);
    CHECK(bench_write_plot(path, &info, g, 4) == 0);
    svg = slurp(path, NULL);
    CHECK(svg && strstr(svg, "and per E, S") && strstr(svg, "unfused total E=32 S=128") &&
          strstr(svg, "unfused total E=64 S=128") && strstr(svg, "query length L"));
    /* one polyline per series: (total + 4 stages with FLOPs) x 2 values of E */
    int polylines = 0;
    for (const char *p = svg; p && (p = strstr(p, "<polyline")); p++) polylines++;
    CHECK_MSG(polylines == 10, "%d polylines", polylines);
    free(svg);
    remove(path);

    tmp_path(path, sizeof path, "chart.png");
    CHECK(bench_write_plot(path, &info, r, n) != 0);
    FILE *f = fopen(path, "r");
    CHECK(f == NULL); /* nothing written */
    if (f) fclose(f);
}

static void test_table(void)
{
    bench_run_info info = make_info("Test GPU & Co, rev. 2");
    bench_result r[3];
    uint32_t n = sample_results(r, &info.peak);
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f) return;
    bench_print_table(f, &info, r, n);
    char *text = drain(f);
    fclose(f);
    CHECK(text && strstr(text, "Test GPU & Co, rev. 2") && strstr(text, "Vulkan 1.3.230"));
    CHECK(text && strstr(text, "TestDriver") && strstr(text, "fp32 1000.0 GFLOP/s"));
    CHECK(text && strstr(text, "kernels: gpu profile"));
    CHECK(text && strstr(text, "qkv_projection") && strstr(text, "softmax") && strstr(text, "fused"));
    CHECK(text && strstr(text, "20.0x")); /* CPU 40 ms / GPU 2 ms */
    for (const char *line = text; text && *line; line = strchr(line, '\n') + 1)
        CHECK_MSG(strchr(line, '\n') - line <= 120, "line longer than 120 columns: %.60s...", line);
    free(text);
}

/* ---------------------------------------------------------------------------------------------- */
/* bench --compare                                                                                 */
/* ---------------------------------------------------------------------------------------------- */

/* The numbers after the first line that starts with `label` (after `indent` spaces). */
static int scan_row(const char *text, const char *after, const char *label, double *old_ms, double *new_ms,
                    double *ratio)
{
    const char *p = after ? strstr(text, after) : text;
    size_t n = strlen(label);
    for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        const char *q = p;
        while (*q == ' ') q++;
        if (strncmp(q, label, n) == 0 && q[n] == ' ')
            return sscanf(q + n, "%lf %lf %lf", old_ms, new_ms, ratio) == 3;
    }
    return 0;
}

/* Runs bench_compare into a buffer (caller frees); its error messages go to /dev/null so that the
 * many malformed files below do not flood the log. */
static char *run_compare(const char *old_path, const char *new_path, int *rc)
{
    FILE *f = tmpfile();
    if (!f) return NULL;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    FILE *null = fopen("/dev/null", "w");
    if (saved >= 0 && null) dup2(fileno(null), STDERR_FILENO);
    *rc = bench_compare(f, old_path, new_path);
    fflush(stderr);
    if (saved >= 0) dup2(saved, STDERR_FILENO), close(saved);
    if (null) fclose(null);
    char *text = drain(f);
    fclose(f);
    return text;
}

/* OLD from "Test GPU" with the gpu kernel profile, NEW from `new_device` with `new_profile`. */
static void write_compare_files(const char *old_path, const char *new_path, const char *new_device,
                                const char *new_profile)
{
    bench_run_info info = make_info("Test GPU");
    bench_result o[4], n[4];
    /* whole-forward ratios old/new: 10/5 = 2, 3/6 = 0.5, 4/1 = 4; geometric mean 4^(1/3) */
    o[0] = make_result(1, 64, 64, 32, 4, VKATTN_PATH_UNFUSED, 10, -1);
    o[1] = make_result(1, 128, 128, 32, 4, VKATTN_PATH_UNFUSED, 3, -1);
    o[2] = make_result(1, 256, 256, 32, 4, VKATTN_PATH_FUSED, 4, -1);
    o[3] = make_result(1, 512, 512, 32, 4, VKATTN_PATH_UNFUSED, 9, -1); /* only in OLD */
    n[0] = make_result(1, 64, 64, 32, 4, VKATTN_PATH_UNFUSED, 5, -1);
    n[1] = make_result(1, 128, 128, 32, 4, VKATTN_PATH_UNFUSED, 6, -1);
    n[2] = make_result(1, 256, 256, 32, 4, VKATTN_PATH_FUSED, 1, -1);
    n[3] = make_result(1, 1024, 1024, 32, 4, VKATTN_PATH_UNFUSED, 9, -1); /* only in NEW */
    /* stage ratios for the first configuration: qkv 4/1 = 4, pv 0.5/2 = 0.25 */
    o[0].stages[VKATTN_STAGE_QKV_PROJECTION].time.median_ms = 4;
    n[0].stages[VKATTN_STAGE_QKV_PROJECTION].time.median_ms = 1;
    o[0].stages[VKATTN_STAGE_PV].time.median_ms = 0.5;
    n[0].stages[VKATTN_STAGE_PV].time.median_ms = 2;
    CHECK(bench_write_json(old_path, &info, o, 4) == 0);
    snprintf(info.device.name, sizeof info.device.name, "%s", new_device);
    snprintf(info.device.kernel_profile, sizeof info.device.kernel_profile, "%s", new_profile);
    CHECK(bench_write_json(new_path, &info, n, 4) == 0);
}

static void test_compare_ratios(void)
{
    char old_path[128], new_path[128];
    tmp_path(old_path, sizeof old_path, "old.json");
    tmp_path(new_path, sizeof new_path, "new.json");
    write_compare_files(old_path, new_path, "Test GPU", "gpu");
    int rc = -1;
    char *text = run_compare(old_path, new_path, &rc);
    CHECK(rc == 0 && text != NULL);
    if (!text) return;
    double a, b, ratio;
    CHECK(scan_row(text, NULL, "B1_L64_S64_E32_H4_none_unfused_f32", &a, &b, &ratio));
    CHECK(a == 10 && b == 5);
    CHECK_NEAR(ratio, 2, 1e-3);
    CHECK(scan_row(text, NULL, "B1_L128_S128_E32_H4_none_unfused_f32", &a, &b, &ratio));
    CHECK_NEAR(ratio, 0.5, 1e-3);
    CHECK(scan_row(text, NULL, "B1_L256_S256_E32_H4_none_fused_f32", &a, &b, &ratio));
    CHECK_NEAR(ratio, 4, 1e-3);
    CHECK(scan_row(text, "B1_L64_S64_E32_H4_none_unfused_f32", "qkv_projection", &a, &b, &ratio));
    CHECK(a == 4 && b == 1);
    CHECK_NEAR(ratio, 4, 1e-3);
    CHECK(scan_row(text, "B1_L64_S64_E32_H4_none_unfused_f32", "pv", &a, &b, &ratio));
    CHECK_NEAR(ratio, 0.25, 1e-3);
    CHECK(scan_row(text, "B1_L256_S256_E32_H4_none_fused_f32", "fused", &a, &b, &ratio));
    CHECK_NEAR(ratio, 4, 1e-3); /* the fused stage took the whole 4 ms vs 1 ms, split over 3 stages */
    const char *gm = strstr(text, "geometric mean");
    double mean = 0;
    CHECK(gm && sscanf(strchr(gm, ':') + 1, "%lf", &mean) == 1);
    CHECK_NEAR(mean, cbrt(4.0), 1e-3);
    CHECK(strstr(text, "configurations: ") != NULL && strstr(text, "over 3 configurations") != NULL);
    CHECK(strstr(text, "only in") && strstr(text, "old.json: B1_L512_S512_E32_H4_none_unfused_f32"));
    CHECK(strstr(text, "new.json: B1_L1024_S1024_E32_H4_none_unfused_f32"));
    CHECK(strstr(text, "WARNING") == NULL);
    CHECK(strstr(text, "kernels gpu") != NULL && strstr(text, "different kernel profiles") == NULL);
    CHECK(scan_row(text, NULL, "B1_L512_S512_E32_H4_none_unfused_f32", &a, &b, &ratio) == 0);
    free(text);
    remove(old_path), remove(new_path);
}

/* Same device, other kernel profile: a note, no warning, ratios as usual. */
static void test_compare_profile_mismatch(void)
{
    char old_path[128], new_path[128];
    tmp_path(old_path, sizeof old_path, "old.json");
    tmp_path(new_path, sizeof new_path, "new.json");
    write_compare_files(old_path, new_path, "Test GPU", "lavapipe");
    int rc = -1;
    char *text = run_compare(old_path, new_path, &rc);
    CHECK(rc == 0);
    CHECK(text && strstr(text, "note: different kernel profiles (gpu and lavapipe)") && !strstr(text, "WARNING"));
    double a, b, ratio;
    CHECK(text && scan_row(text, NULL, "B1_L64_S64_E32_H4_none_unfused_f32", &a, &b, &ratio));
    CHECK_NEAR(ratio, 2, 1e-3);
    free(text);
    remove(old_path), remove(new_path);
}

static void test_compare_device_mismatch(void)
{
    char old_path[128], new_path[128];
    tmp_path(old_path, sizeof old_path, "old.json");
    tmp_path(new_path, sizeof new_path, "new.json");
    write_compare_files(old_path, new_path, "llvmpipe (LLVM 15.0.6, 256 bits)", "gpu");
    int rc = -1;
    char *text = run_compare(old_path, new_path, &rc);
    CHECK(rc == 0);
    CHECK(text && strstr(text, "WARNING") && strstr(text, "ratios across devices are not meaningful"));
    CHECK(text && strstr(text, "Test GPU") && strstr(text, "llvmpipe (LLVM 15.0.6, 256 bits)"));
    free(text);
    remove(old_path), remove(new_path);
}

static void write_text(const char *path, const char *text, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(text, 1, size, f) == size);
    fclose(f);
}

static void test_compare_bad_files(void)
{
    char good[128], broken[128], missing[128];
    tmp_path(good, sizeof good, "good.json");
    tmp_path(broken, sizeof broken, "broken.json");
    tmp_path(missing, sizeof missing, "missing.json");
    write_compare_files(good, broken, "Test GPU", "gpu");
    size_t size = 0;
    char *text = slurp(good, &size);
    CHECK(text != NULL && size > 100);
    if (!text) return;
    int rc = -1;
    char *out;
    /* Every truncation of a valid file fails cleanly (the file ends in "}\n": the last byte only is
     * optional), and so does any single corrupted byte that breaks the grammar. */
    for (size_t cut = 0; cut + 1 < size; cut += cut < 200 ? 1 : 37) {
        write_text(broken, text, cut);
        out = run_compare(good, broken, &rc);
        CHECK_MSG(rc == 1, "truncated at %zu: rc %d", cut, rc);
        free(out);
    }
    write_text(broken, text, size - 1);
    free(run_compare(good, broken, &rc));
    CHECK(rc == 0);
    test_rng rng = test_rng_make(7);
    char *mutated = malloc(size);
    for (int i = 0; mutated && i < 200; i++) {
        memcpy(mutated, text, size);
        size_t at = (size_t)((test_rng_float(&rng) + 1) * 0.5 * (double)size) % size;
        mutated[at] = (char)(int)((test_rng_float(&rng) + 1) * 128);
        write_text(broken, mutated, size);
        free(run_compare(good, broken, &rc)); /* any outcome but a crash */
        CHECK(rc == 0 || rc == 1);
    }
    free(mutated);
    static const char *const garbage[] = {"garbage", "[]", "{\"device\": {\"name\": \"x\"}}",
                                          "{\"device\": {\"name\": \"x\"}, \"results\": [{\"key\": 1}]}",
                                          "{\"device\": {\"name\": \"x\"}, \"results\": [{\"key\": \"k\", "
                                          "\"gpu_ms_median\": \"fast\", \"stages\": []}]}",
                                          "{\"device\": {\"name\": \"x\"}, \"results\": [{\"key\": \"k\", "
                                          "\"gpu_ms_median\": 1, \"stages\": [{\"stage\": 3}]}]}"};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        write_text(broken, garbage[i], strlen(garbage[i]));
        free(run_compare(good, broken, &rc));
        CHECK_MSG(rc == 1, "garbage %zu accepted", i);
        free(run_compare(broken, good, &rc));
        CHECK_MSG(rc == 1, "garbage %zu accepted as OLD", i);
    }
    /* Well-formed but no key in common: an error too. */
    const char *other = "{\"device\": {\"name\": \"Test GPU\"}, \"results\": [{\"key\": \"k\", "
                        "\"gpu_ms_median\": 1, \"stages\": []}]}";
    write_text(broken, other, strlen(other));
    out = run_compare(good, broken, &rc);
    CHECK(rc == 1 && out && strstr(out, "only in"));
    free(out);
    free(run_compare(good, missing, &rc));
    CHECK(rc == 1);
    free(run_compare(missing, good, &rc));
    CHECK(rc == 1);
    free(text);
    remove(good), remove(broken);
}

int main(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/vkattn_bench_test_XXXXXX");
    const char *env = getenv("TMPDIR");
    if (env && strlen(env) + 30 < sizeof tmp_dir) snprintf(tmp_dir, sizeof tmp_dir, "%s/vkattn_bench_XXXXXX", env);
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN_TEST(test_names_and_keys);
    RUN_TEST(test_cost_cross_attention_unfused);
    RUN_TEST(test_cost_self_attention_fused_f16);
    RUN_TEST(test_cost_averaged_weights_extra_keys);
    RUN_TEST(test_cost_rejects_bad_arguments);
    RUN_TEST(test_derive_roofline);
    RUN_TEST(test_derive_without_peak);
    RUN_TEST(test_json_reader_values);
    RUN_TEST(test_json_reader_hostile);
    RUN_TEST(test_json_file_fields);
    RUN_TEST(test_csv_rows);
    RUN_TEST(test_plot_svg);
    RUN_TEST(test_table);
    RUN_TEST(test_compare_ratios);
    RUN_TEST(test_compare_device_mismatch);
    RUN_TEST(test_compare_profile_mismatch);
    RUN_TEST(test_compare_bad_files);
    rmdir(tmp_dir);
    return test_finish();
}
