/* The bench's reporting, without a GPU: the cost model against hand-computed FLOPs and bytes, the
 * roofline arithmetic of bench_derive, the JSON file (read back through cJSON, every field by
 * name), the CSV rows, the chart (its content, then the PNG read back through cairo and the SVG),
 * bench --compare on files with known times, and the CLI's JSON reader on hostile input. Records
 * are built by hand; nothing here opens a Vulkan device. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <fontconfig/fontconfig.h>
#include <unistd.h>

#include "test_tmp.h"
#include "test_util.h"

#include "bench.h"
#include "bench_plot.h"
#include "cli_json.h"

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

static int same_rgb(rgb_color a, rgb_color b)
{
    return a.r == b.r && a.g == b.g && a.b == b.b;
}

#define VK_API(major, minor, patch) (((uint32_t)(major) << 22) | ((uint32_t)(minor) << 12) | (uint32_t)(patch))

static bench_run_info make_info(const char *device_name)
{
    bench_run_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.device.name, sizeof info.device.name, "%s", device_name);
    snprintf(info.device.driver_name, sizeof info.device.driver_name, "TestDriver");
    snprintf(info.device.driver_info, sizeof info.device.driver_info, "Mesa \"23.0\"\\dev");
    snprintf(info.device.tuning, sizeof info.device.tuning, "gpu");
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
    CHECK(strcmp(bench_mask_name(BENCH_MASK_FLOAT_CAUSAL), "float-causal") == 0);
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
    /* AUTO is resolved as a forward resolves it: fused without attention weights, unfused with. */
    vkattn_cost a, f;
    CHECK_STATUS(vkattn_forward_cost(&d, 2, 3, 5, VKATTN_PATH_AUTO, VKATTN_WEIGHTS_NONE, &a), VKATTN_OK);
    CHECK_STATUS(vkattn_forward_cost(&d, 2, 3, 5, VKATTN_PATH_FUSED, VKATTN_WEIGHTS_NONE, &f), VKATTN_OK);
    CHECK(a.total_flops == f.total_flops && a.total_bytes == f.total_bytes && a.flops[VKATTN_STAGE_FUSED] == 480);
    CHECK_STATUS(vkattn_forward_cost(&d, 2, 3, 5, VKATTN_PATH_AUTO, VKATTN_WEIGHTS_PER_HEAD, &a), VKATTN_OK);
    CHECK(a.total_flops == 1984 && a.flops[VKATTN_STAGE_FUSED] == 0);
}

/* H * D != E, grouped K/V, q/k norms and partial RoPE: B=1, L=S=2 self-attention, E=4, H=2,
 * head_dim 3 (I = H·D = 6), H_kv = 1 (Ik = 3), rope_dim 2, f32, fused.
 *   qkv projection 2·B·(L·E·I + S·E·Ik + S·E·Ik) = 2·(48 + 24 + 24)         = 192
 *   RoPE 3·B·(L·H + S·H_kv)·rope_dim = 3·(4 + 2)·2                          =  36 (bytes 2·4·12 = 96)
 *   norms 4·B·(L·I + S·Ik) = 4·18                                           =  72 (bytes 4·18 = 72, read
 *     once more than RoPE's pass reads them)
 *   out projection 2·B·L·I·E = 96;  attention 4·B·H·L·S·D = 96
 *   qkv bytes: (query 8 + weights 24 + 12 + 12 + biases 6 + 6 + Q, K, V 12 + 12) · 4 = 368, + 96 + 72 = 536 */
static void test_cost_head_dim_norms(void)
{
    vkattn_layer_desc d = {.embed_dim = 4, .num_heads = 2, .num_kv_heads = 1, .head_dim = 3, .rope_theta = 10000,
                           .rope_dim = 2, .qk_norm = VKATTN_QK_NORM_HEAD};
    vkattn_cost c;
    CHECK_STATUS(vkattn_forward_cost(&d, 1, 2, 0, VKATTN_PATH_FUSED, VKATTN_WEIGHTS_NONE, &c), VKATTN_OK);
    CHECK_MSG(c.flops[VKATTN_STAGE_QKV_PROJECTION] == 192 + 36 + 72, "qkv %g", c.flops[VKATTN_STAGE_QKV_PROJECTION]);
    CHECK(c.flops[VKATTN_STAGE_OUT_PROJECTION] == 96 && c.flops[VKATTN_STAGE_FUSED] == 96);
    CHECK_MSG(c.bytes[VKATTN_STAGE_QKV_PROJECTION] == 536, "qkv bytes %g", c.bytes[VKATTN_STAGE_QKV_PROJECTION]);
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
/* The JSON reader (cJSON, with the checks of cli_json.c)                                          */
/* ---------------------------------------------------------------------------------------------- */

/* Whether `obj` has a member `name` of a cJSON type (cJSON_Number, cJSON_String, cJSON_NULL, ...). */
static int has(const cJSON *obj, const char *name, int type)
{
    const cJSON *v = cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, name) : NULL;
    return v && (v->type & 0xFF) == type;
}

/* A number member, or 0 when missing. */
static double num(const cJSON *obj, const char *name)
{
    return cli_json_number(obj, name, NULL);
}

/* What the CLI relies on: scalars and escapes decoded, the first of duplicate names, numbers past
 * 2^32 exact, underflow to 0, lookups that answer only for the type asked. */
static void test_json_reader_values(void)
{
    const char *text = " {\"a\": [1, -2.5e3, true, null, \"x\\\"\\\\\\n\\u0041\\u00e9\\/\"],\n"
                       "  \"b\": {}, \"a\": 2, \"big\": 12345678901, \"tiny\": 1e-400}  ";
    char err[200];
    cJSON *root = cli_json_parse(text, strlen(text), err, sizeof err);
    CHECK_MSG(root != NULL, "%s", err);
    if (!root) return;
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, "a"), *v = cJSON_GetArrayItem(a, 4);
    CHECK(cJSON_GetArraySize(root) == 5 && cJSON_GetArraySize(a) == 5); /* the first "a" wins */
    CHECK(cJSON_GetArrayItem(a, 1)->valuedouble == -2500 && cJSON_IsTrue(cJSON_GetArrayItem(a, 2)));
    CHECK(cJSON_IsNull(cJSON_GetArrayItem(a, 3)));
    CHECK(cJSON_IsString(v) && strcmp(v->valuestring, "x\"\\\nA\xc3\xa9/") == 0);
    int ok = 0;
    CHECK(cli_json_number(root, "big", &ok) == 12345678901.0 && ok);
    CHECK(cli_json_number(root, "tiny", &ok) == 0 && ok); /* underflow to 0 is fine */
    CHECK(cli_json_number(root, "a", &ok) == 0 && !ok && cli_json_number(root, "missing", &ok) == 0 && !ok);
    CHECK(cli_json_string(root, "a") == NULL && cli_json_string(root, "missing") == NULL);
    CHECK(cli_json_string(NULL, "a") == NULL && cli_json_string(a, "a") == NULL); /* only objects have members */
    cJSON_Delete(root);
}

static void test_json_reader_hostile(void)
{
    /* cJSON itself accepts a few forms RFC 8259 forbids (leading zeros, "1.", control characters
     * in strings); these it does not, nor do the checks around it. */
    static const char *const bad[] = {
        "", "   ", "{", "[", "]", "[1,]", "[,1]", "{\"a\":}", "{\"a\" 1}", "{1:2}", "{\"a\":1,}", "\"abc",
        "\"\\x\"", "\"\\u12\"", "\"\\ud800\"", "\"\\", ".5", "-", "+1", "1e", "1e+", "tru", "nul", "falsey",
        "[1 2]", "{} x", "1 2", "NaN", "Infinity", "[\"a\"\"b\"]", "{\"a\":1 \"b\":2}"};
    char err[200];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = '\0';
        cJSON *root = cli_json_parse(bad[i], strlen(bad[i]), err, sizeof err);
        CHECK_MSG(root == NULL, "accepted \"%s\"", bad[i]);
        CHECK_MSG(strstr(err, "line 1, column") == err, "message \"%s\" for \"%s\"", err, bad[i]);
        cJSON_Delete(root);
    }
    /* Numbers that overflow a double: cJSON reads them as infinity, the checks refuse them. */
    static const char *const huge[] = {"1e999", "-1e999", "{\"a\": [0, 1e400]}"};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        cJSON *root = cli_json_parse(huge[i], strlen(huge[i]), err, sizeof err);
        CHECK_MSG(root == NULL && strstr(err, "too large"), "\"%s\": %s", huge[i], root ? "accepted" : err);
        cJSON_Delete(root);
    }
    /* A NUL byte inside the text is not whitespace, nor the end of it. */
    CHECK(cli_json_parse("[1,\0 2]", 7, err, sizeof err) == NULL && strstr(err, "line 1, column 4: a NUL byte"));
    CHECK(cli_json_parse("\"a\0b\"", 5, err, sizeof err) == NULL);
    /* Nesting: cJSON's limit (CJSON_NESTING_LIMIT) is fine, deeper is refused (no stack overflow). */
    static char deep[2 * 4096];
    const int depths[] = {CJSON_NESTING_LIMIT, CJSON_NESTING_LIMIT + 1, 4096};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        size_t depth = (size_t)depths[i];
        memset(deep, '[', depth);
        memset(deep + depth, ']', depth);
        cJSON *root = cli_json_parse(deep, 2 * depth, err, sizeof err);
        CHECK_MSG((root != NULL) == (depth <= CJSON_NESTING_LIMIT), "depth %zu: %s", depth, root ? "ok" : err);
        cJSON_Delete(root);
    }
    /* Line and column in messages. */
    const char *where = "{\n  \"a\": 1,\n  \"b\": x\n}";
    CHECK(cli_json_parse(where, strlen(where), err, sizeof err) == NULL);
    CHECK_MSG(strstr(err, "line 3, column 8") == err, "%s", err);
    CHECK(cli_json_parse(NULL, 0, err, sizeof err) == NULL);
    CHECK(cli_json_parse(where, (size_t)CLI_JSON_MAX_BYTES + 1, err, sizeof err) == NULL && strstr(err, "larger"));
    CHECK(cli_json_parse("[", 1, NULL, 0) == NULL);
    cJSON *root = cli_json_parse("-0.5", 4, NULL, 0); /* err may be NULL */
    CHECK(cJSON_IsNumber(root) && root->valuedouble == -0.5);
    cJSON_Delete(root);
    /* Files: missing, empty. */
    char path[300];
    test_tmp_path(path, sizeof path, "empty.json");
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    CHECK(cli_json_read_file(path, err, sizeof err) == NULL && strstr(err, "empty.json: empty file"));
    remove(path);
    CHECK(cli_json_read_file(path, err, sizeof err) == NULL && strstr(err, "cannot open"));
}

/* Numbers that are not finite are written as null; a write that fails says why. */
static void test_json_writer(void)
{
    cJSON *root = cJSON_CreateObject();
    CHECK(cli_json_add_number(root, "nan", NAN) && cli_json_add_number(root, "inf", -INFINITY));
    CHECK(cli_json_add_number(root, "x", 0.1) && cli_json_add_number(root, "big", 12345678901.0));
    char path[300], err[600];
    test_tmp_path(path, sizeof path, "w.json");
    CHECK(cli_json_write_file(root, path, err, sizeof err) == 0);
    cJSON *back = cli_json_read_file(path, err, sizeof err);
    CHECK_MSG(back != NULL, "%s", err);
    CHECK(has(back, "nan", cJSON_NULL) && has(back, "inf", cJSON_NULL));
    CHECK(num(back, "x") == 0.1 && num(back, "big") == 12345678901.0);
    cJSON_Delete(back);
    remove(path);
    CHECK(cli_json_write_file(root, "/nonexistent-dir/x.json", err, sizeof err) == 1 && strstr(err, "cannot create"));
    if (access("/dev/full", W_OK) == 0)
        CHECK(cli_json_write_file(root, "/dev/full", err, sizeof err) == 1 && strstr(err, "No space"));
    cJSON_Delete(root);
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
static const char *str(const cJSON *obj, const char *name)
{
    const char *s = cli_json_string(obj, name);
    return s ? s : "";
}

/* Every field of one bench_result in the JSON file, by name, and their values. */
static void check_json_result(const cJSON *o, const bench_result *r, uint32_t i)
{
    static const char *const result_numbers[] = {
        "batch", "query_len", "key_len", "embed_dim", "heads", "repeats", "dispatches", "submits",
        "workspace_bytes", "gpu_ms_median", "gpu_ms_min", "host_ms_median", "host_ms_min", "host_overhead_ms_median",
        "host_overhead_ms_min", "flops", "bytes", "gflops", "gbs", "roofline_pct"};
    static const char *const result_strings[] = {"key", "mask", "path", "path_ran", "dtype"};
    static const char *const stage_numbers[] = {"ms_median", "ms_min", "flops", "bytes", "gflops", "gbs",
                                                "roofline_pct"};
    for (size_t k = 0; k < sizeof result_numbers / sizeof result_numbers[0]; k++)
        CHECK_MSG(has(o, result_numbers[k], cJSON_Number), "results[%u].%s", i, result_numbers[k]);
    for (size_t k = 0; k < sizeof result_strings / sizeof result_strings[0]; k++)
        CHECK_MSG(has(o, result_strings[k], cJSON_String), "results[%u].%s", i, result_strings[k]);
    char key[128];
    bench_config_key(&r->config, key, sizeof key);
    CHECK(strcmp(str(o, "key"), key) == 0);
    CHECK(num(o, "query_len") == r->config.query_len);
    CHECK(strcmp(str(o, "mask"), bench_mask_name(r->config.mask)) == 0);
    CHECK(strcmp(str(o, "path"), vkattn_path_name(r->config.path)) == 0);
    CHECK(strcmp(str(o, "path_ran"), vkattn_path_name(r->path_ran)) == 0);
    CHECK(strcmp(str(o, "dtype"), "f32") == 0);
    CHECK(num(o, "workspace_bytes") == 12345678901.0);
    CHECK(num(o, "flops") == r->flops); /* exact */
    CHECK(num(o, "bytes") == r->bytes);
    CHECK(num(o, "gpu_ms_median") == r->gpu.median_ms);
    CHECK(num(o, "gpu_ms_min") == r->gpu.min_ms);
    CHECK(num(o, "host_overhead_ms_median") == 0.5);
    CHECK_NEAR(num(o, "gflops"), r->gflops, 1e-5 * r->gflops);
    CHECK_NEAR(num(o, "roofline_pct"), r->roofline_pct, 1e-5 * r->roofline_pct);
    CHECK(r->cpu_ms < 0 ? has(o, "cpu_ms", cJSON_NULL) : has(o, "cpu_ms", cJSON_Number) && num(o, "cpu_ms") == 40.0);
    const cJSON *stages = cJSON_GetObjectItemCaseSensitive(o, "stages"), *st;
    uint32_t present = 0;
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) present += (uint32_t)r->stages[s].present;
    CHECK(cJSON_IsArray(stages) && cJSON_GetArraySize(stages) == (int)present);
    cJSON_ArrayForEach(st, stages) {
        CHECK(has(st, "stage", cJSON_String));
        for (size_t k = 0; k < sizeof stage_numbers / sizeof stage_numbers[0]; k++)
            CHECK_MSG(has(st, stage_numbers[k], cJSON_Number), "results[%u].stages.%s", i, stage_numbers[k]);
        int found = 0;
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
            if (!r->stages[s].present || strcmp(str(st, "stage"), vkattn_stage_name(s))) continue;
            found = 1;
            CHECK(num(st, "flops") == r->stages[s].flops);
            CHECK(num(st, "bytes") == r->stages[s].bytes);
            double ms = r->stages[s].time.median_ms; /* 9 significant digits */
            CHECK_NEAR(num(st, "ms_median"), ms, 1e-8 * ms);
        }
        CHECK(found);
    }
}

static void test_json_file_fields(void)
{
    bench_run_info info = make_info("Test GPU & Co, rev. 2");
    bench_result r[3];
    uint32_t n = sample_results(r, &info.peak);
    char path[300], err[600];
    test_tmp_path(path, sizeof path, "results.json");
    CHECK(bench_write_json(path, &info, r, n) == 0);
    cJSON *root = cli_json_read_file(path, err, sizeof err);
    CHECK_MSG(root != NULL, "%s", err);
    if (!root) return;
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    const cJSON *peak = cJSON_GetObjectItemCaseSensitive(root, "peak");
    CHECK(has(root, "vkattn_version", cJSON_String) &&
          strcmp(str(root, "vkattn_version"), vkattn_version_string()) == 0);
    /* bench_run_info: device, peak, min_time_s, preset */
    static const char *const device_strings[] = {"name", "driver_name", "driver_info", "api_version", "type",
                                                 "tuning"};
    for (size_t i = 0; i < sizeof device_strings / sizeof device_strings[0]; i++)
        CHECK_MSG(has(dev, device_strings[i], cJSON_String), "device.%s", device_strings[i]);
    CHECK(has(dev, "index", cJSON_Number) && num(dev, "index") == 1);
    CHECK(strcmp(str(dev, "name"), "Test GPU & Co, rev. 2") == 0);
    CHECK(strcmp(str(dev, "driver_info"), "Mesa \"23.0\"\\dev") == 0); /* quote and backslash escaped */
    CHECK(strcmp(str(dev, "api_version"), "1.3.230") == 0);
    CHECK(strcmp(str(dev, "type"), "discrete_gpu") == 0);
    CHECK(num(peak, "fp32_gflops") == 1000);
    CHECK(num(peak, "fp16_gflops") == 2000);
    CHECK(num(peak, "bandwidth_gbs") == 100);
    CHECK(has(root, "min_time_s", cJSON_Number) && num(root, "min_time_s") == 0.25);
    CHECK(strcmp(str(root, "preset"), "quick") == 0);

    /* bench_result: every field, by name */
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results"), *o;
    CHECK(cJSON_IsArray(results) && cJSON_GetArraySize(results) == (int)n);
    uint32_t i = 0;
    cJSON_ArrayForEach(o, results) {
        if (i < n) check_json_result(o, &r[i], i);
        i++;
    }
    cJSON_Delete(root);

    /* preset NULL is written as null; an empty result list is still a valid file */
    info.preset = NULL;
    CHECK(bench_write_json(path, &info, r, 0) == 0);
    root = cli_json_read_file(path, err, sizeof err);
    CHECK_MSG(root != NULL, "%s", err);
    CHECK(has(root, "preset", cJSON_NULL));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(root, "results")) == 0 &&
          has(root, "results", cJSON_Array));
    cJSON_Delete(root);
    CHECK(bench_write_json("/nonexistent-dir/x.json", &info, r, n) != 0);
    remove(path);
}

static void test_csv_rows(void)
{
    bench_run_info info = make_info("Test GPU & Co, rev. 2");
    bench_result r[3];
    uint32_t n = sample_results(r, &info.peak);
    char path[300];
    test_tmp_path(path, sizeof path, "results.csv");
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

/* The chart's content: series, labels, ticks and notes, before anything is drawn. */
static void test_plot_content(void)
{
    bench_run_info info = make_info("Test GPU & Co, rev. 2");
    bench_result r[3];
    uint32_t n = sample_results(r, &info.peak);
    /* .png and .svg names are accepted (vkattn bench checks before its sweep), nothing else. */
    CHECK(bench_plot_path_ok("a.svg") && bench_plot_path_ok("dir/A.SVG") && bench_plot_path_ok("a.png") &&
          bench_plot_path_ok("B.PnG"));
    CHECK(!bench_plot_path_ok("a.gif") && !bench_plot_path_ok("svg") && !bench_plot_path_ok(".svg") &&
          !bench_plot_path_ok("a.svgz") && !bench_plot_path_ok("a.png.txt"));
    bench_plot p;
    CHECK(bench_plot_build(&info, r, n, &p) == 0);
    CHECK(strstr(p.title, "Test GPU & Co, rev. 2") && strstr(p.device, "TestDriver") && p.cpu_note[0] == '\0');
    CHECK(p.width == BENCH_PLOT_WIDTH && p.height >= BENCH_PLOT_MIN_HEIGHT);
    CHECK(strcmp(p.legend[1], "and per mask") == 0); /* the masks differ: series are split by them */
    const char *wanted[] = {"unfused total none", "unfused qkv_projection none", "unfused total causal",
                            "fused total none", "fused fused none"};
    for (size_t w = 0; w < sizeof wanted / sizeof wanted[0]; w++) {
        int found = 0;
        for (uint32_t k = 0; k < p.ns; k++) found += strcmp(p.series[k].label, wanted[w]) == 0;
        CHECK_MSG(found == 1, "series \"%s\" found %d times", wanted[w], found);
    }
    for (uint32_t k = 0; k < p.ns; k++) CHECK(!strstr(p.series[k].label, "softmax")); /* no FLOPs, no GFLOP/s */
    CHECK(p.ns >= 2 && !same_rgb(p.series[0].color, p.series[1].color) && !p.series[0].dashed);
    /* Points: sorted by L within a series, inside the plot area. */
    for (uint32_t k = 0; k < p.ns; k++)
        for (uint32_t i = p.series[k].first; i < p.series[k].first + p.series[k].n; i++) {
            const plot_point *pt = &p.points[i];
            double x = bench_plot_x(&p, pt->l), y = bench_plot_y(&p, pt->gflops);
            CHECK(pt->series == k && (i == p.series[k].first || pt->l > p.points[i - 1].l));
            CHECK(x > p.left && x < p.right && y > p.top && y <= p.bottom);
        }
    CHECK(p.nticks == 2 && p.ticks[0].l == 64 && p.ticks[1].l == 256 && p.ticks[0].labelled && p.ticks[1].labelled);
    CHECK(strstr(p.xlabel, "sequence length L") != NULL);
    /* The sample's peak (1000 GFLOP/s) is far above tiny shapes' figures: named, not drawn. */
    CHECK(!p.peak_drawn && strstr(p.note, "off the scale") != NULL);
    bench_plot_free(&p);

    /* A peak within 20x of the data is drawn as a dashed line; a CPU device says so. */
    info.peak.fp32_gflops = 2.0 * r[0].gflops;
    info.device.type = VKATTN_DEVICE_CPU;
    CHECK(bench_plot_build(&info, r, n, &p) == 0);
    CHECK(p.peak_drawn && strstr(p.note, "dashed: measured fp32 peak") && !strstr(p.note, "off the scale"));
    CHECK(p.ytop >= p.peak && strstr(p.cpu_note, "not GPU figures") != NULL);
    bench_plot_free(&p);
    CHECK(bench_plot_build(&info, r, 0, &p) == 0 && p.ns == 0 && p.np == 0); /* nothing to plot */
    bench_plot_free(&p);

    /* E and S vary: series split by them and labelled; x is the query length. */
    bench_result g[4] = {make_result(1, 64, 128, 32, 4, VKATTN_PATH_UNFUSED, 1, -1),
                         make_result(1, 128, 128, 32, 4, VKATTN_PATH_UNFUSED, 2, -1),
                         make_result(1, 64, 128, 64, 4, VKATTN_PATH_UNFUSED, 3, -1),
                         make_result(1, 128, 128, 64, 4, VKATTN_PATH_UNFUSED, 4, -1)};
    for (int i = 0; i < 4; i++) bench_derive(&g[i], &info.peak);
    CHECK(bench_plot_build(&info, g, 4, &p) == 0);
    CHECK(strcmp(p.legend[1], "and per E, S") == 0 && strstr(p.xlabel, "query length L"));
    CHECK(strcmp(p.series[0].label, "unfused total E=32 S=128") == 0);
    int e64 = 0;
    for (uint32_t k = 0; k < p.ns; k++) e64 += strcmp(p.series[k].label, "unfused total E=64 S=128") == 0;
    CHECK(e64 == 1);
    /* one series per (total + 4 stages with FLOPs) x 2 values of E, two points each */
    CHECK_MSG(p.ns == 10 && p.np == 20, "%u series, %u points", p.ns, p.np);
    bench_plot_free(&p);
}

/* A light well-formedness check of XML: every element closed, in order (entities are not checked). */
static int xml_balanced(const char *xml)
{
    const char *open[64];
    size_t len[64], depth = 0;
    for (const char *p = strchr(xml, '<'); p; p = strchr(p + 1, '<')) {
        const char *end = strchr(p, '>');
        if (!end) return 0;
        if (p[1] == '?' || p[1] == '!') continue;
        if (p[1] == '/') {
            size_t n = strcspn(p + 2, " >");
            if (!depth || len[depth - 1] != n || strncmp(open[depth - 1], p + 2, n) != 0) return 0;
            depth--;
        } else if (end[-1] != '/') {
            if (depth == 64) return 0;
            open[depth] = p + 1, len[depth++] = strcspn(p + 1, " >\n");
        }
    }
    return depth == 0;
}

/* The pixel at (x, y) of a cairo RGB24 image; black outside it. */
static rgb_color image_pixel(cairo_surface_t *img, double fx, double fy)
{
    rgb_color c = {0, 0, 0};
    int64_t x = (int64_t)floor(fx), y = (int64_t)floor(fy);
    if (cairo_surface_status(img) != CAIRO_STATUS_SUCCESS || x < 0 || y < 0 ||
        x >= cairo_image_surface_get_width(img) || y >= cairo_image_surface_get_height(img))
        return c;
    uint32_t v = ((const uint32_t *)(cairo_image_surface_get_data(img) + y * cairo_image_surface_get_stride(img)))[x];
    c.r = (uint8_t)(v >> 16), c.g = (uint8_t)(v >> 8), c.b = (uint8_t)v;
    return c;
}

/* --plot x.png: an 8-bit RGB PNG of the chart's size, read back through cairo, with each series'
 * colour on its legend marker and the last series' colour on its points. */
static void test_plot_png(void)
{
    bench_run_info info = make_info("Test GPU & Co, rev. 2");
    bench_result r[3];
    uint32_t n = sample_results(r, &info.peak);
    info.peak.fp32_gflops = 2.0 * r[0].gflops; /* drawn: a dashed line */
    bench_plot p;
    CHECK(bench_plot_build(&info, r, n, &p) == 0);
    char path[300];
    test_tmp_path(path, sizeof path, "chart.png");
    CHECK(bench_write_plot(path, &info, r, n) == 0);
    unsigned char head[26] = {0};
    FILE *f = fopen(path, "rb");
    CHECK(f && fread(head, 1, sizeof head, f) == sizeof head && memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0);
    if (f) fclose(f);
    CHECK(head[24] == 8 && head[25] == 2); /* 8-bit RGB */
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    CHECK(cairo_surface_status(img) == CAIRO_STATUS_SUCCESS);
    cairo_surface_flush(img);
    const int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
    CHECK_MSG(w == (int)p.width && h == (int)p.height, "%d x %d, expected %u x %u", w, h, p.width, p.height);
    CHECK(same_rgb(image_pixel(img, 3, 3), (rgb_color){255, 255, 255}));
    for (uint32_t k = 0; k < p.ns; k++) {
        double x, y;
        bench_plot_legend_at(&p, k, &x, &y);
        CHECK_MSG(same_rgb(image_pixel(img, x, y), p.series[k].color), "legend marker of series %u", k);
    }
    const plot_series *last = &p.series[p.ns - 1];
    for (uint32_t i = last->first; i < last->first + last->n; i++)
        CHECK(same_rgb(image_pixel(img, bench_plot_x(&p, p.points[i].l), bench_plot_y(&p, p.points[i].gflops)),
                       last->color));
    /* The peak line: dashes 6 on, 4 off, from the left edge. */
    double y = bench_plot_y(&p, p.peak);
    rgb_color on = image_pixel(img, p.left + 2, y), off = image_pixel(img, p.left + 8, y);
    CHECK_MSG(on.r < 64 && off.r > 128, "peak line: %u at a dash, %u in a gap", on.r, off.r);
    cairo_surface_destroy(img);
    bench_plot_free(&p);
    remove(path);
}

/* --plot x.svg: a well-formed SVG document of the chart's size, with the series' lines and text
 * (as glyph outlines: cairo writes no <text>); other names and bad directories are refused. */
static void test_plot_svg(void)
{
    bench_run_info info = make_info("Test GPU & Co, rev. 2");
    bench_result r[3];
    uint32_t n = sample_results(r, &info.peak);
    bench_plot p;
    CHECK(bench_plot_build(&info, r, n, &p) == 0);
    char path[300], size[64];
    test_tmp_path(path, sizeof path, "chart.svg");
    CHECK(bench_write_plot(path, &info, r, n) == 0);
    char *svg = slurp(path, NULL);
    CHECK(svg != NULL);
    if (svg) {
        snprintf(size, sizeof size, "width=\"%upx\" height=\"%upx\"", p.width, p.height);
        CHECK(strncmp(svg, "<?xml", 5) == 0 && strstr(svg, "<svg") && strstr(svg, size));
        CHECK(xml_balanced(svg));
        CHECK(strstr(svg, "</svg>") != NULL && strstr(svg, "<use xlink:href=\"#glyph") != NULL);
        /* Each total has a thick legend sample, and a thick line when it has two points or more. */
        int expected = 0, lines = 0;
        for (uint32_t k = 0; k < p.ns; k++) expected += p.series[k].stage < 0 ? 1 + (p.series[k].n > 1) : 0;
        for (const char *q = svg; (q = strstr(q, "fill:none;stroke-width:2.5")); q++) lines++;
        CHECK_MSG(lines == expected && expected >= 3, "%d thick lines, expected %d", lines, expected);
        CHECK(strstr(svg, "stroke-dasharray:6,4") == NULL); /* the peak is off the scale */
        /* Colours repeat after 12 series, and the repeats are dashed. */
        CHECK(p.ns > 12 && p.series[12].dashed && same_rgb(p.series[12].color, p.series[0].color));
        CHECK(strstr(svg, "stroke-dasharray:5,3") != NULL);
    }
    free(svg);
    info.peak.fp32_gflops = 2.0 * r[0].gflops;
    CHECK(bench_write_plot(path, &info, r, n) == 0);
    svg = slurp(path, NULL);
    CHECK(svg && strstr(svg, "stroke-dasharray:6,4") != NULL && xml_balanced(svg));
    free(svg);
    remove(path);
    bench_plot_free(&p);

    test_tmp_path(path, sizeof path, "chart.gif");
    CHECK(bench_write_plot(path, &info, r, n) != 0);
    FILE *f = fopen(path, "r");
    CHECK(f == NULL); /* nothing written */
    if (f) fclose(f);
    CHECK(bench_write_plot("/nonexistent-dir/chart.svg", &info, r, n) != 0);
    CHECK(bench_write_plot("/nonexistent-dir/chart.png", &info, r, n) != 0);
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
    CHECK(text && strstr(text, "tuning: gpu"));
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

/* Runs bench_compare into a buffer (caller frees); its error messages are captured and dropped so
 * that the many malformed files below do not flood the log. */
static char *run_compare(const char *old_path, const char *new_path, int *rc)
{
    static char dropped[1 << 12];
    FILE *f = tmpfile();
    if (!f) return NULL;
    test_capture c;
    test_capture_begin(&c, 1);
    *rc = bench_compare(f, old_path, new_path);
    test_capture_end(&c, dropped, sizeof dropped);
    char *text = drain(f);
    fclose(f);
    return text;
}

/* OLD from "Test GPU" with the gpu tuning, NEW from `new_device` with `new_tuning`. */
static void write_compare_files(const char *old_path, const char *new_path, const char *new_device,
                                const char *new_tuning)
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
    snprintf(info.device.tuning, sizeof info.device.tuning, "%s", new_tuning);
    CHECK(bench_write_json(new_path, &info, n, 4) == 0);
}

static void test_compare_ratios(void)
{
    char old_path[300], new_path[300];
    test_tmp_path(old_path, sizeof old_path, "old.json");
    test_tmp_path(new_path, sizeof new_path, "new.json");
    write_compare_files(old_path, new_path, "Test GPU", "gpu");
    int rc = -1;
    char *text = run_compare(old_path, new_path, &rc);
    CHECK(rc == 0 && text != NULL);
    if (!text) return;
    double a = 0, b = 0, ratio = 0;
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
    CHECK(strstr(text, "kernels gpu") != NULL && strstr(text, "different tunings") == NULL);
    CHECK(scan_row(text, NULL, "B1_L512_S512_E32_H4_none_unfused_f32", &a, &b, &ratio) == 0);
    free(text);
    remove(old_path), remove(new_path);
}

/* Same device, other tuning: a note, no warning, ratios as usual. */
static void test_compare_tuning_mismatch(void)
{
    char old_path[300], new_path[300];
    test_tmp_path(old_path, sizeof old_path, "old.json");
    test_tmp_path(new_path, sizeof new_path, "new.json");
    write_compare_files(old_path, new_path, "Test GPU", "lavapipe");
    int rc = -1;
    char *text = run_compare(old_path, new_path, &rc);
    CHECK(rc == 0);
    CHECK(text && strstr(text, "note: different tunings (gpu and lavapipe)") && !strstr(text, "WARNING"));
    double a = 0, b = 0, ratio = 0;
    CHECK(text && scan_row(text, NULL, "B1_L64_S64_E32_H4_none_unfused_f32", &a, &b, &ratio));
    CHECK_NEAR(ratio, 2, 1e-3);
    free(text);
    remove(old_path), remove(new_path);
}

static void test_compare_device_mismatch(void)
{
    char old_path[300], new_path[300];
    test_tmp_path(old_path, sizeof old_path, "old.json");
    test_tmp_path(new_path, sizeof new_path, "new.json");
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
    char good[300], broken[300], missing[300];
    test_tmp_path(good, sizeof good, "good.json");
    test_tmp_path(broken, sizeof broken, "broken.json");
    test_tmp_path(missing, sizeof missing, "missing.json");
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

/* A decode run's JSON (bench --preset decode --json) as bench_decode.c writes it: the layer, then
 * one point per (context, cache format, kv_splits) with times `t` (ms) for the GPU step, QKV,
 * attention, output and the host's step; a window adds to the key. */
/* `from`, where not NULL: its first occurrence in the file's text replaced by `to`. */
static void write_decode_file(const char *path, const char *device, unsigned window, const double t[2][5],
                              const char *from, const char *to)
{
    char text[2048];
    int n = snprintf(text, sizeof text,
                     "{\"vkattn_version\": \"0.5.0\", \"device\": {\"name\": \"%s\", \"type\": \"cpu\", "
                     "\"tuning\": \"lavapipe\"}, \"preset\": \"decode\", \"layer\": {\"embed_dim\": 512, "
                     "\"heads\": 8, \"kv_heads\": 2, \"head_dim\": 64, \"rope_theta\": 10000, \"block_size\": 16, "
                     "\"window\": %u}, \"points\": [",
                     device, window);
    for (int i = 0; i < 2; i++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "%s{\"cache_dtype\": \"f16\", \"ctx\": 2048, \"kv_splits\": %d, \"steps\": 9, "
                      "\"gpu_ms_median\": %g, \"qkv_projection_ms\": %g, \"attention_ms\": %g, "
                      "\"out_projection_ms\": %g, \"ms_per_token_median\": %g}",
                      i ? ", " : "", i, t[i][0], t[i][1], t[i][2], t[i][3], t[i][4]);
    snprintf(text + n, sizeof text - (size_t)n, "]}\n");
    char *at = from ? strstr(text, from) : NULL;
    if (at) {
        char rest[2048];
        snprintf(rest, sizeof rest, "%s", at + strlen(from));
        snprintf(at, sizeof text - (size_t)(at - text), "%s%s", to, rest);
    }
    CHECK_MSG(!from || at, "\"%s\" is not in the decode file", from);
    write_text(path, text, strlen(text));
}

/* Decode runs compare point by point, keyed by layer, format, context and kv_splits. */
static void test_compare_decode(void)
{
    char old_path[300], new_path[300], broken[300], sweep[300];
    test_tmp_path(old_path, sizeof old_path, "decode_old.json");
    test_tmp_path(new_path, sizeof new_path, "decode_new.json");
    test_tmp_path(broken, sizeof broken, "decode_broken.json");
    test_tmp_path(sweep, sizeof sweep, "sweep.json");
    const double old_t[2][5] = {{1.0, 0.25, 0.5, 0.125, 2.0}, {4.0, 0.25, 3.0, 0.125, 5.0}};
    const double new_t[2][5] = {{0.5, 0.25, 0.25, 0.125, 1.0}, {8.0, 0.5, 6.0, 0.25, 10.0}};
    write_decode_file(old_path, "llvmpipe", 0, old_t, NULL, NULL);
    write_decode_file(new_path, "llvmpipe", 0, new_t, NULL, NULL);
    int rc = -1;
    char *text = run_compare(old_path, new_path, &rc);
    CHECK(rc == 0 && text != NULL);
    if (!text) return;
    double a = 0, b = 0, ratio = 0;
    const char *auto_key = "decode_E512_H8_Hkv2_D64_f16_ctx2048_split_auto", *one = "decode_E512_H8_Hkv2_D64_f16_ctx2048_split_1";
    CHECK(scan_row(text, NULL, auto_key, &a, &b, &ratio) && a == 1.0 && b == 0.5);
    CHECK_NEAR(ratio, 2, 1e-3);
    CHECK(scan_row(text, auto_key, "attention", &a, &b, &ratio) && a == 0.5 && b == 0.25);
    CHECK_NEAR(ratio, 2, 1e-3);
    CHECK(scan_row(text, auto_key, "host ms/token", &a, &b, &ratio) && a == 2.0 && b == 1.0);
    CHECK(scan_row(text, NULL, one, &a, &b, &ratio) && a == 4.0 && b == 8.0);
    CHECK_NEAR(ratio, 0.5, 1e-3);
    CHECK(scan_row(text, one, "qkv_projection", &a, &b, &ratio));
    CHECK_NEAR(ratio, 0.5, 1e-3);
    const char *gm = strstr(text, "geometric mean");
    double mean = 0;
    CHECK(gm && sscanf(strchr(gm, ':') + 1, "%lf", &mean) == 1);
    CHECK_NEAR(mean, 1.0, 1e-3);
    free(text);

    /* another window is another layer: no point in common */
    write_decode_file(new_path, "llvmpipe", 256, new_t, NULL, NULL);
    text = run_compare(old_path, new_path, &rc);
    CHECK(rc == 1 && text && strstr(text, "decode_E512_H8_Hkv2_D64_window256_f16_ctx2048_split_auto"));
    free(text);
    /* a sweep's file against a decode run's: no key in common */
    write_compare_files(sweep, broken, "Test GPU", "gpu");
    free(run_compare(sweep, old_path, &rc));
    CHECK(rc == 1);
    /* malformed decode files fail with a message, never a crash */
    static const char *const bad_files[] = {
        "{\"device\": {\"name\": \"x\"}, \"preset\": \"decode\", \"points\": []}",
        "{\"device\": {\"name\": \"x\"}, \"preset\": \"decode\", \"layer\": {\"embed_dim\": 1, \"heads\": 1, "
        "\"kv_heads\": 1, \"head_dim\": 1, \"window\": 0}, \"points\": {}}",
        "{\"device\": {\"name\": \"x\"}, \"preset\": \"decode\", \"layer\": {\"embed_dim\": 1, \"heads\": 1, "
        "\"kv_heads\": 1, \"head_dim\": 1, \"window\": 0}, \"points\": [{\"cache_dtype\": \"f16\", \"ctx\": 2}]}",
        "{\"device\": {\"name\": \"x\"}, \"preset\": \"decode\", \"layer\": {\"embed_dim\": 1, \"heads\": 1, "
        "\"kv_heads\": 1, \"head_dim\": 1, \"window\": 0}, \"points\": [{\"cache_dtype\": \"f16\", \"ctx\": 2, "
        "\"kv_splits\": 0, \"gpu_ms_median\": 1, \"qkv_projection_ms\": \"x\"}]}",
    };
    for (size_t i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++) {
        write_text(broken, bad_files[i], strlen(bad_files[i]));
        free(run_compare(old_path, broken, &rc));
        CHECK_MSG(rc == 1, "bad decode file %zu accepted", i);
    }
    /* key fields that are not whole 32-bit counts: each file is refused when it is read (nothing is
     * printed); 512.4 would print as 512, 256.4 as 256, 1.25 as 1 (the old file's key), 1e300 as
     * 301 digits, -0.4 as -0 */
    static const struct {
        const char *from, *to;
        unsigned window; /* both files' */
    } bad_counts[] = {
        {"\"embed_dim\": 512", "\"embed_dim\": 512.4", 0}, {"\"window\": 256", "\"window\": 256.4", 256},
        {"\"window\": 0", "\"window\": -0.4", 0},         {"\"ctx\": 2048", "\"ctx\": 2048.25", 0},
        {"\"kv_splits\": 1", "\"kv_splits\": 1.25", 0},   {"\"ctx\": 2048", "\"ctx\": 1e300", 0},
    };
    for (size_t i = 0; i < sizeof bad_counts / sizeof bad_counts[0]; i++) {
        write_decode_file(old_path, "llvmpipe", bad_counts[i].window, old_t, NULL, NULL);
        write_decode_file(broken, "llvmpipe", bad_counts[i].window, new_t, bad_counts[i].from, bad_counts[i].to);
        text = run_compare(old_path, broken, &rc);
        CHECK_MSG(rc == 1 && text && text[0] == '\0', "a decode file with %s accepted:\n%s", bad_counts[i].to,
                  text ? text : "");
        free(text);
    }
    remove(old_path), remove(new_path), remove(broken), remove(sweep);
}

int main(void)
{
    if (test_tmp_make("bench")) return 1;
    RUN_TEST(test_names_and_keys);
    RUN_TEST(test_cost_cross_attention_unfused);
    RUN_TEST(test_cost_self_attention_fused_f16);
    RUN_TEST(test_cost_head_dim_norms);
    RUN_TEST(test_cost_averaged_weights_extra_keys);
    RUN_TEST(test_cost_rejects_bad_arguments);
    RUN_TEST(test_derive_roofline);
    RUN_TEST(test_derive_without_peak);
    RUN_TEST(test_json_reader_values);
    RUN_TEST(test_json_reader_hostile);
    RUN_TEST(test_json_file_fields);
    RUN_TEST(test_csv_rows);
    RUN_TEST(test_json_writer);
    RUN_TEST(test_plot_content);
    RUN_TEST(test_plot_png);
    RUN_TEST(test_plot_svg);
    RUN_TEST(test_table);
    RUN_TEST(test_compare_ratios);
    RUN_TEST(test_compare_device_mismatch);
    RUN_TEST(test_compare_tuning_mismatch);
    RUN_TEST(test_compare_bad_files);
    RUN_TEST(test_compare_decode);
    test_tmp_remove();
    /* cairo's font caches and fontconfig's configuration live until exit: released here, or
     * LeakSanitizer reports them. */
    cairo_debug_reset_static_data();
    FcFini();
    return test_finish();
}
