/* The GPU day's llama.cpp figures: ggml's flash attention (ggml_flash_attn_ext, the kernel
 * llama.cpp's Vulkan backend runs for attention) at the shapes tools/gpu-bench.sh times vkattn and
 * torch at. Built against Debian's libggml-dev and run with its Vulkan backend by
 * tools/gpu-pack.sh (not part of the CMake build: ggml is a peer, not a dependency).
 *   gpu_bench_ggml BACKEND.so [JSON | --check]
 * BACKEND.so: ggml's Vulkan backend (libggml-vulkan.so), device 0 (GGML_VK_VISIBLE_DEVICES picks
 * another; ggml skips CPU devices such as lavapipe unless it names them). First a check: small shapes
 * (causal and not, GQA, D = 64 and 128) against a float64 softmax(q·kᵀ·scale + mask)·v computed
 * here, so that no wrong result is timed; then each shape until 0.5 s have passed, the wall time of
 * one graph computation (submission and wait), fastest and median. FLOPs as vkattn counts them (the
 * whole score matrix, also when causal); a decoding step's GB/s over its K and V bytes. --check: the
 * check alone (on lavapipe the timed shapes take hours). Exits non-zero when the check fails. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

typedef struct {
    const char *name;
    int B, H, H_kv, D, L, S, causal;
} shape;

/* the shapes of tools/gpu_bench_torch.py and gpu-bench.sh's quick run */
static const shape timed[] = {
    {"prefill", 1, 32, 32, 128, 4096, 4096, 0},  {"prefill", 1, 32, 32, 128, 4096, 4096, 1},
    {"prefill", 4, 16, 16, 64, 2048, 2048, 0},   {"prefill", 4, 16, 16, 64, 2048, 2048, 1},
    {"prefill", 1, 16, 16, 256, 4096, 4096, 0},  {"prefill", 1, 16, 16, 256, 4096, 4096, 1},
    {"decode", 1, 32, 8, 128, 1, 8192, 0},       {"decode", 1, 32, 8, 128, 1, 32768, 0},
};
static const shape checked[] = {
    {"check", 1, 4, 2, 128, 37, 45, 1}, {"check", 2, 2, 2, 64, 17, 33, 0}, {"check", 1, 4, 1, 64, 1, 300, 0},
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / 16777216.0 * 2.0 - 1.0);
}

/* One shape's tensors, graph and backend buffer. */
typedef struct {
    struct ggml_context *ctx;
    struct ggml_cgraph *graph;
    struct ggml_tensor *q, *k, *v, *mask, *out;
    ggml_backend_buffer_t buffer;
} problem;

static void problem_free(problem *p)
{
    if (p->buffer) ggml_backend_buffer_free(p->buffer);
    if (p->ctx) ggml_free(p->ctx);
    memset(p, 0, sizeof *p);
}

/* q: [D, L, H, B] f32; k, v: [D, S, H_kv, B] f16; mask (causal, the end-aligned diagonal): [S, L]
 * f16 of 0 and -inf; out: [D, H, L, B] f32. Inputs random in [-1, 1), kept on the host in `hq`,
 * `hk`, `hv` (as float, k and v rounded to fp16) where asked. */
static int problem_make(problem *p, const shape *s, ggml_backend_t backend, float *hq, float *hk, float *hv)
{
    struct ggml_init_params ip = {.mem_size = 16 * ggml_tensor_overhead() + ggml_graph_overhead(), .no_alloc = true};
    memset(p, 0, sizeof *p);
    if (!(p->ctx = ggml_init(ip))) return 0;
    p->q = ggml_new_tensor_4d(p->ctx, GGML_TYPE_F32, s->D, s->L, s->H, s->B);
    p->k = ggml_new_tensor_4d(p->ctx, GGML_TYPE_F16, s->D, s->S, s->H_kv, s->B);
    p->v = ggml_new_tensor_4d(p->ctx, GGML_TYPE_F16, s->D, s->S, s->H_kv, s->B);
    p->mask = s->causal ? ggml_new_tensor_2d(p->ctx, GGML_TYPE_F16, s->S, s->L) : NULL;
    p->out = ggml_flash_attn_ext(p->ctx, p->q, p->k, p->v, p->mask, 1.0f / sqrtf((float)s->D), 0.0f, 0.0f);
    ggml_prec_set_acc(p->out, GGML_PREC_F32); /* fp32 sums, as vkattn and torch keep them */
    p->graph = ggml_new_graph(p->ctx);
    ggml_build_forward_expand(p->graph, p->out);
    if (!(p->buffer = ggml_backend_alloc_ctx_tensors(p->ctx, backend))) return 0;
    uint64_t seed = 0x5eed + (uint64_t)s->D * 131 + (uint64_t)s->S;
    const size_t nq = (size_t)s->D * s->L * s->H * s->B, nkv = (size_t)s->D * s->S * s->H_kv * s->B;
    float *f = malloc((nq > nkv ? nq : nkv) * sizeof *f);
    ggml_fp16_t *h = malloc(nkv * sizeof *h);
    if (!f || !h) return free(f), free(h), 0;
    for (size_t i = 0; i < nq; i++) f[i] = rnd(&seed);
    if (hq) memcpy(hq, f, nq * sizeof *f);
    ggml_backend_tensor_set(p->q, f, 0, nq * sizeof *f);
    for (int t = 0; t < 2; t++) {
        for (size_t i = 0; i < nkv; i++) f[i] = rnd(&seed);
        ggml_fp32_to_fp16_row(f, h, (int64_t)nkv);
        float *keep = t == 0 ? hk : hv;
        for (size_t i = 0; keep && i < nkv; i++) keep[i] = ggml_fp16_to_fp32(h[i]);
        ggml_backend_tensor_set(t == 0 ? p->k : p->v, h, 0, nkv * sizeof *h);
    }
    free(h);
    if (p->mask) {
        ggml_fp16_t *m = malloc((size_t)s->S * s->L * sizeof *m);
        if (!m) return free(f), 0;
        for (int i = 0; i < s->L; i++)
            for (int j = 0; j < s->S; j++)
                m[(size_t)i * s->S + j] = ggml_fp32_to_fp16(j <= i + s->S - s->L ? 0.0f : -INFINITY);
        ggml_backend_tensor_set(p->mask, m, 0, (size_t)s->S * s->L * sizeof *m);
        free(m);
    }
    free(f);
    return 1;
}

/* max |ggml - float64 reference| over one checked shape, scaled by max(1, |ref|) */
static double check_shape(const shape *s, ggml_backend_t backend)
{
    const size_t nq = (size_t)s->D * s->L * s->H * s->B, nkv = (size_t)s->D * s->S * s->H_kv * s->B;
    float *q = malloc(nq * sizeof *q), *k = malloc(nkv * sizeof *k), *v = malloc(nkv * sizeof *v),
          *out = malloc(nq * sizeof *out);
    double *w = malloc((size_t)s->S * sizeof *w), worst = INFINITY;
    problem p;
    if (q && k && v && out && w && problem_make(&p, s, backend, q, k, v) &&
        ggml_backend_graph_compute(backend, p.graph) == GGML_STATUS_SUCCESS) {
        ggml_backend_tensor_get(p.out, out, 0, nq * sizeof *out);
        worst = 0;
        const double scale = 1.0 / sqrt((double)s->D);
        for (int b = 0; b < s->B; b++)
            for (int hd = 0; hd < s->H; hd++)
                for (int i = 0; i < s->L; i++) {
                    const int g = hd / (s->H / s->H_kv), last = s->causal ? i + s->S - s->L : s->S - 1;
                    const float *qi = q + (((size_t)b * s->H + hd) * s->L + i) * s->D;
                    double top = -INFINITY, sum = 0;
                    for (int j = 0; j <= last; j++) {
                        const float *kj = k + (((size_t)b * s->H_kv + g) * s->S + j) * s->D;
                        double dot = 0;
                        for (int d = 0; d < s->D; d++) dot += (double)qi[d] * kj[d];
                        w[j] = dot * scale;
                        top = w[j] > top ? w[j] : top;
                    }
                    for (int j = 0; j <= last; j++) sum += (w[j] = exp(w[j] - top));
                    /* out [D, H, L, B]: row i's head hd at ((b * L + i) * H + hd) * D */
                    const float *got = out + (((size_t)b * s->L + i) * s->H + hd) * s->D;
                    for (int d = 0; d < s->D; d++) {
                        double ref = 0;
                        for (int j = 0; j <= last; j++)
                            ref += w[j] * v[(((size_t)b * s->H_kv + g) * s->S + j) * s->D + d];
                        ref /= sum;
                        double e = fabs(got[d] - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
                        worst = e > worst || isnan(e) ? e : worst;
                    }
                }
        problem_free(&p);
    }
    free(q), free(k), free(v), free(out), free(w);
    return worst;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BACKEND.so [JSON | --check]  (BACKEND.so: ggml's libggml-vulkan.so)\n", argv[0]);
        return 2;
    }
    ggml_backend_reg_t reg = ggml_backend_load(argv[1]);
    ggml_backend_dev_t dev = reg && ggml_backend_reg_dev_count(reg) ? ggml_backend_reg_dev_get(reg, 0) : NULL;
    ggml_backend_t backend = dev ? ggml_backend_dev_init(dev, NULL) : NULL;
    if (!backend) {
        fprintf(stderr, "gpu_bench_ggml: no device from %s\n", argv[1]);
        return 1;
    }
    printf("ggml backend %s: %s (ggml_flash_attn_ext, fp32 sums, K and V fp16, q fp32)\n",
           ggml_backend_dev_name(dev), ggml_backend_dev_description(dev));
    int failed = 0;
    for (size_t i = 0; i < sizeof checked / sizeof checked[0]; i++) {
        const shape *s = &checked[i];
        double e = check_shape(s, backend);
        int ok = e <= 5e-3; /* fp16 P and V (ggml's kernels round P to fp16) against float64 */
        failed |= !ok;
        printf("check  B=%d H=%d H_kv=%d D=%d L=%d S=%d%s: max error %.3g (bound 5e-3)  %s\n", s->B, s->H, s->H_kv,
               s->D, s->L, s->S, s->causal ? " causal" : "", e, ok ? "ok" : "FAILED");
    }
    if (failed) {
        fprintf(stderr, "gpu_bench_ggml: ggml's result is wrong on this device: nothing timed\n");
        ggml_backend_free(backend);
        return 1;
    }
    fflush(stdout);
    const int check_only = argc > 2 && strcmp(argv[2], "--check") == 0;
    FILE *json = argc > 2 && !check_only ? fopen(argv[2], "w") : NULL;
    if (argc > 2 && !check_only && !json) perror(argv[2]);
    if (json) fprintf(json, "{\"backend\": \"%s\", \"results\": [", ggml_backend_dev_description(dev));
    for (size_t i = 0; !check_only && i < sizeof timed / sizeof timed[0]; i++) {
        const shape *s = &timed[i];
        problem p;
        if (!problem_make(&p, s, backend, NULL, NULL, NULL)) {
            printf("%s B=%d H=%d D=%d: could not allocate\n", s->name, s->B, s->H, s->D);
            problem_free(&p);
            continue;
        }
        double times[4096], total = 0;
        int n = 0;
        for (int w = 0; w < 3; w++) ggml_backend_graph_compute(backend, p.graph);
        while ((total < 0.5 || n < 5) && n < 4096) {
            double t0 = now();
            if (ggml_backend_graph_compute(backend, p.graph) != GGML_STATUS_SUCCESS) break;
            times[n] = now() - t0;
            total += times[n++];
        }
        problem_free(&p);
        if (!n) {
            printf("%s B=%d H=%d D=%d: the computation failed\n", s->name, s->B, s->H, s->D);
            continue;
        }
        for (int a = 1; a < n; a++) /* insertion sort: fastest first */
            for (int b = a; b > 0 && times[b] < times[b - 1]; b--) {
                double t = times[b];
                times[b] = times[b - 1], times[b - 1] = t;
            }
        const double best = times[0], median = times[n / 2];
        const double flops = 4.0 * s->B * s->H * (double)s->L * s->S * s->D;
        const double bytes = 2.0 * 2 * s->B * s->H_kv * (double)s->S * s->D; /* K and V, fp16 */
        if (s->L == 1)
            printf("ggml decode S=%5d (%d heads over %d K/V heads, D=%d)  %.4f ms (median %.4f)  %7.0f GB/s\n", s->S,
                   s->H, s->H_kv, s->D, best * 1e3, median * 1e3, bytes / best * 1e-9);
        else
            printf("ggml sdpa B=%d H=%d D=%3d L=S=%5d%s  %.3f ms (median %.3f)  %9.1f GFLOP/s\n", s->B, s->H, s->D,
                   s->L, s->causal ? " causal" : "       ", best * 1e3, median * 1e3, flops / best * 1e-9);
        if (json)
            fprintf(json, "%s\n  {\"kind\": \"%s\", \"B\": %d, \"H\": %d, \"H_kv\": %d, \"D\": %d, \"L\": %d, \"S\": %d, "
                          "\"causal\": %s, \"ms_min\": %.6f, \"ms_median\": %.6f, \"repeats\": %d}",
                    i ? "," : "", s->name, s->B, s->H, s->H_kv, s->D, s->L, s->S, s->causal ? "true" : "false",
                    best * 1e3, median * 1e3, n);
        fflush(stdout);
    }
    if (json) fprintf(json, "\n]}\n"), fclose(json);
    ggml_backend_free(backend);
    return 0;
}
