/* The cooperative-matrix self-tests (coopmat_check.h): two matmul_cm dispatches (fp32 and fp16
 * operands) at context creation, one attn_cm dispatch at the first plan that takes it, each
 * against float64. */
#include "api/coopmat_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "format/half.h"
#include "pipeline/dispatch.h"
#include "plan/matmul.h"

/* Operands: multiples of 1/8 in [-1, 1] from small patterns that differ between A, W and the
 * bias, so a transposed, shifted or mixed-up tile gives different numbers. */
static float a_value(uint32_t m, uint32_t k) { return (float)((int)((m * 7 + k * 3) % 17) - 8) / 8.0f; }
static float w_value(uint32_t n, uint32_t k) { return (float)((int)((n * 5 + k * 11 + 3) % 13) - 6) / 8.0f; }
static float bias_value(uint32_t n) { return (float)((int)(n % 9) - 4) / 8.0f; }

/* Element i of a mapped buffer of fp16 or fp32 values. */
static void put_value(vka_buffer *buffer, uint32_t f16, size_t i, float x)
{
    if (f16) ((uint16_t *)buffer->mapped)[i] = vka_f32_to_f16(x);
    else ((float *)buffer->mapped)[i] = x;
}

typedef struct check_buffers {
    vka_buffer a, w, bias, c;
} check_buffers;

/* Records and runs one dispatch of `pipeline` through `transfer` and waits for it. */
static vkattn_status run_dispatch(vka_device *dev, vka_transfer *transfer, const vka_pipeline *pipeline,
                                  const vka_binding *bindings, const void *push, const uint32_t groups[3],
                                  const char *what)
{
    vkattn_status status = VKATTN_OK;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd;
    VKA_TRY(vka_descriptor_pool_create(dev, 1, &pool));
    VKA_TRY(vka_transfer_begin(transfer, &cmd));
    VKA_TRY(vka_record_dispatch(dev, cmd, pool, pipeline, bindings, push, groups));
    VKA_TRY(vka_transfer_submit_wait(transfer, what));
fail:
    if (pool) dev->vk.vkDestroyDescriptorPool(dev->device, pool, NULL);
    return status;
}

/* A self-test's call that failed: a driver that cannot build or run the kernel is a finding about
 * the driver (a note "<kernel>self-test failed: ...", VKATTN_OK); running out of memory or losing
 * the device is returned as such, as anywhere else. */
static vkattn_status driver_verdict(vka_device *dev, vkattn_status status, const char *kernel, char *note,
                                    size_t note_size)
{
    if (status == VKATTN_OK || status == VKATTN_ERROR_OUT_OF_HOST_MEMORY ||
        status == VKATTN_ERROR_OUT_OF_DEVICE_MEMORY || status == VKATTN_ERROR_DEVICE_LOST)
        return status;
    snprintf(note, note_size, "%sself-test failed: %s", kernel, dev->error.message);
    return VKATTN_OK;
}

/* The largest error of C against float64, and where; C is M x N row-major. */
static double worst_error(const float *c, uint32_t M, uint32_t N, uint32_t K, uint32_t *at_m, uint32_t *at_n,
                          double *ref_at)
{
    double worst = -1;
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t n = 0; n < N; n++) {
            double ref = bias_value(n);
            for (uint32_t k = 0; k < K; k++) ref += (double)a_value(m, k) * w_value(n, k);
            double got = c[(size_t)m * N + n];
            /* NaN (an element never written) or an error beyond fp16's rounding of the result */
            double err = isnan(got) ? INFINITY : fabs(got - ref) / (fabs(ref) > 1 ? fabs(ref) : 1);
            if (err > worst) worst = err, *at_m = m, *at_n = n, *ref_at = ref;
        }
    return worst;
}

vkattn_status vka_coopmat_self_test(vka_device *dev, vka_transfer *transfer, vka_pipeline_cache *pipelines,
                                    const vka_plan_limits *limits, const vka_tuning *tuning, int *passed, char *note,
                                    size_t note_size)
{
    vkattn_status status = VKATTN_OK;
    check_buffers b = {0};
    *passed = 0;
    const vka_matmul_cm_tile tile = vka_matmul_cm_tile_for(tuning, limits, tuning->cm_min_rows, 0);
    const vkattn_matrix_shape ms = limits->matrix_shape;
    if (!tile.wg) {
        snprintf(note, note_size, "self-test: no %ux%ux%u tile fits %u bytes of shared memory", ms.m, ms.n, ms.k,
                 limits->max_shared_bytes);
        return VKATTN_OK;
    }
    const uint32_t M = tile.tile_m, N = tile.tile_n, K = 2 * tile.tile_k;
    /* The plan's first-part, fp32-output pipelines for this tile, made outside the context's
     * registry (vka_pipeline_make): a forward under the tuning finds the driver's work in the
     * pipeline cache, and a context that runs no forward writes no cache file. Both builds the
     * plan uses: A and B of fp32 values in texels of 4, and of fp16 ones (an f16 layer's; the
     * values are exact in fp16), read as raw words, in texels of 8 with cm_wide_loads. */
    uint32_t spec[VKA_MAX_SPEC] = {[VKA_SPEC_WG_SIZE] = tile.wg, [VKA_SPEC_TILE_A] = M, [VKA_SPEC_TILE_B] = N,
                                   [VKA_SPEC_MAT_M] = ms.m, [VKA_SPEC_MAT_N] = ms.n,
                                   [VKA_SPEC_MAT_K] = ms.k, [VKA_SPEC_TILE_K] = tile.tile_k,
                                   [VKA_SPEC_SUBGROUPS_N] = tile.subgroups_n};
    vka_pipeline *pipeline = NULL;
    if (dev->faults.coopmat_check == VKA_FAULT_COOPMAT_FAIL) {
        status = vka_fail(dev, VKATTN_ERROR_VULKAN, "vkCreateComputePipelines failed: VK_ERROR_UNKNOWN (injected)");
        goto fail;
    }
    VKA_TRY(vka_buffer_create(dev, (VkDeviceSize)M * K * 4, VKA_MEMORY_STAGING, "the self-test's A", &b.a));
    VKA_TRY(vka_buffer_create(dev, (VkDeviceSize)N * K * 4, VKA_MEMORY_STAGING, "the self-test's W", &b.w));
    VKA_TRY(vka_buffer_create(dev, (VkDeviceSize)N * 4, VKA_MEMORY_STAGING, "the self-test's bias", &b.bias));
    VKA_TRY(vka_buffer_create(dev, (VkDeviceSize)M * N * 4, VKA_MEMORY_STAGING, "the self-test's C", &b.c));
    float *bias = b.bias.mapped, *c = b.c.mapped;
    for (uint32_t n = 0; n < N; n++) bias[n] = bias_value(n);
    const vka_binding bindings[VKA_MATMUL_BINDINGS] = {
        [VKA_MATMUL_A] = {&b.a, 0, 0, VKA_VIEW_RGBA32F}, [VKA_MATMUL_B] = {&b.w, 0, 0, VKA_VIEW_RGBA32F},
        [VKA_MATMUL_BIAS] = {&b.bias, 0, 0, VKA_VIEW_R32F}, [VKA_MATMUL_C] = {&b.c, 0, 0, VKA_VIEW_R32F}};
    for (int fp16 = 0; fp16 < 2; fp16++) {
        const uint32_t vec = fp16 && tuning->cm_wide_loads ? 8 : 4;
        const vka_matmul_push push = {.M = M, .N = N, .K = K / vec, .lda = K / vec, .ldb = K / vec, .c_row = N,
                                      .c_col_block = N, .rows_per_batch = M, .has_bias = 1, .tiles_n = 1};
        spec[VKA_SPEC_VEC] = vec;
        spec[VKA_SPEC_FLAGS] = vka_matmul_cm_flags(tuning, &tile) | (fp16 ? VKA_MATMUL_A_F16 | VKA_MATMUL_B_F16 : 0);
        VKA_TRY(vka_pipeline_make(dev, pipelines, VKA_KERNEL_MATMUL_CM, 0, spec, &pipeline));
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t k = 0; k < K; k++) put_value(&b.a, fp16, (size_t)m * K + k, a_value(m, k));
        for (uint32_t n = 0; n < N; n++)
            for (uint32_t k = 0; k < K; k++) put_value(&b.w, fp16, (size_t)n * K + k, w_value(n, k));
        for (size_t i = 0; i < (size_t)M * N; i++) c[i] = NAN;
        VKA_TRY(run_dispatch(dev, transfer, pipeline, bindings, &push, (const uint32_t[3]){1, 1, 1},
                             "the cooperative-matrix self-test")); /* C already holds NaN */
        vka_pipeline_release(dev, pipeline);
        pipeline = NULL;
        if (dev->faults.coopmat_check == VKA_FAULT_COOPMAT_WRONG) c[(size_t)(M / 2) * N + N / 3] += 0.25f;
        uint32_t at_m = 0, at_n = 0;
        double ref = 0, worst = worst_error(c, M, N, K, &at_m, &at_n, &ref);
        const double tolerance = 1.0 / 1024; /* fp16's rounding of the result, relative to max(1, |ref|) */
        if (worst > tolerance) {
            snprintf(note, note_size,
                     "self-test failed: a %ux%ux%u GEMM on %ux%ux%u matrices (%s operands) gave %g for %g at C[%u][%u]",
                     M, N, K, ms.m, ms.n, ms.k, fp16 ? "fp16" : "fp32", (double)c[(size_t)at_m * N + at_n], ref, at_m,
                     at_n);
            goto fail;
        }
    }
    *passed = 1;
fail:
    vka_pipeline_release(dev, pipeline);
    vka_buffer_destroy(dev, &b.c);
    vka_buffer_destroy(dev, &b.bias);
    vka_buffer_destroy(dev, &b.w);
    vka_buffer_destroy(dev, &b.a);
    return driver_verdict(dev, status, "", note, note_size);
}

vkattn_status vka_matrix_rows_probe(vka_device *dev, vka_transfer *transfer, vka_pipeline_cache *pipelines,
                                    const vka_plan_limits *limits, vka_matrix_rows *out, char *why, size_t why_size)
{
    vkattn_status status = VKATTN_OK;
    vka_buffer map = {0};
    vka_pipeline *pipeline = NULL;
    *out = (vka_matrix_rows){0};
    const vkattn_matrix_shape ms = limits->matrix_shape;
    const uint32_t sg = limits->subgroup_size, stride = 2 + ms.m * (ms.n + ms.k);
    uint32_t spec[VKA_MAX_SPEC] = {[VKA_SPEC_WG_SIZE] = sg, [VKA_SPEC_MAT_M] = ms.m, [VKA_SPEC_MAT_N] = ms.n,
                                   [VKA_SPEC_MAT_K] = ms.k};
    VKA_TRY(vka_buffer_create(dev, (VkDeviceSize)sg * stride * 4, VKA_MEMORY_STAGING, "the matrix layout's map", &map));
    memset(map.mapped, 0xff, (size_t)sg * stride * 4);
    VKA_TRY(vka_pipeline_make(dev, pipelines, VKA_KERNEL_COOPMAT_LAYOUT, 0, spec, &pipeline));
    const vka_binding bindings[1] = {[VKA_LAYOUT_OUT] = {&map, 0, 0, VKA_VIEW_R32F}};
    const vka_layout_push push = {.stride = stride};
    VKA_TRY(run_dispatch(dev, transfer, pipeline, bindings, &push, (const uint32_t[3]){1, 1, 1},
                         "the cooperative-matrix layout probe"));
    if (!vka_matrix_rows_from_map(map.mapped, sg, stride, ms.m, ms.n, out, why, why_size)) *out = (vka_matrix_rows){0};
    else if (!vka_matrix_a_from_map(map.mapped, sg, stride, ms.m, ms.n, ms.k, out, why, why_size)) {
        char a_why[128];
        snprintf(a_why, sizeof a_why, "%s", why);
        snprintf(why, why_size, "P through shared memory: %s", a_why);
    }
fail:
    vka_pipeline_release(dev, pipeline);
    vka_buffer_destroy(dev, &map);
    if (status != VKATTN_OK) *out = (vka_matrix_rows){0};
    return driver_verdict(dev, status, "layout probe ", why, why_size);
}

/* ---------------------------------------------------------------------------------------------- */
/* attn_cm                                                                                         */
/* ---------------------------------------------------------------------------------------------- */

/* Q: multiples of 1/8 in [-1, 1]; K: multiples of 1/8 in [-7/8, 7/8] times (4 + j) / 4, growing
 * along the keys, so that each row's max keeps rising and O is rescaled block after block; V:
 * multiples of 1/16 in [-1, 1]. K and V differ by K/V head g, every pattern by row and column, so
 * a transposed, shifted or mixed-up tile, or a query head on the wrong K/V head, gives different
 * numbers. All exact in fp16 (|K| < 17 in steps of 1/32). */
static float q_value(uint32_t h, uint32_t i, uint32_t d) { return (float)((int)((h * 5 + i * 7 + d * 3) % 17) - 8) / 8.0f; }
static float k_value(uint32_t g, uint32_t j, uint32_t d)
{
    return (float)(((int)((g * 4 + j * 3 + d * 5 + 1) % 15) - 7) * (int)(4 + j)) / 32.0f;
}
static float v_value(uint32_t g, uint32_t j, uint32_t d)
{
    return (float)((int)((g * 13 + j * 11 + d * 7 + 2) % 31) - 15) / 16.0f;
}

enum { CM_H = 4, CM_HKV = 2 }; /* query heads 0, 1 on K/V head 0; 2, 3 on K/V head 1 */


typedef struct cm_problem {
    uint32_t D, L, S, store;
    float scale;
} cm_problem;

typedef struct cm_buffers {
    vka_buffer q, k, v, kpm, ctx, state_o, state_lse;
} cm_buffers;

/* Key padding: every seventh key of the second half is masked, so that the first half's key blocks
 * are whole to the rows that see them (the kernels' path without per-key mask tests) and the later
 * ones take the mask tests; keys 0-2 stay, so every row sees some. */
static int key_padded(const cm_problem *c, uint32_t j) { return j >= c->S / 2 && j % 7 == 3; }

/* The float64 output and lse of row (h, i): causal aligned at the end (row i sees keys up to
 * i + S - L; S > L), the padded keys left out. `s`: S doubles, `o`: D. */
static double reference_row(const cm_problem *c, uint32_t h, uint32_t i, double *s, double *o)
{
    const uint32_t limit = i + (c->S - c->L) + 1, g = h / (CM_H / CM_HKV);
    double m = -INFINITY, l = 0;
    for (uint32_t j = 0; j < limit; j++) {
        double dot = 0;
        for (uint32_t d = 0; d < c->D; d++) dot += (double)q_value(h, i, d) * k_value(g, j, d);
        s[j] = key_padded(c, j) ? -INFINITY : dot * c->scale;
        if (s[j] > m) m = s[j];
    }
    for (uint32_t d = 0; d < c->D; d++) o[d] = 0;
    for (uint32_t j = 0; j < limit; j++) {
        double p = exp(s[j] - m);
        l += p;
        for (uint32_t d = 0; d < c->D; d++) o[d] += p * v_value(g, j, d);
    }
    for (uint32_t d = 0; d < c->D; d++) o[d] /= l;
    return m + log(l);
}

/* The largest error over every output element (and lse where stored), against float64; sets
 * `where` to describe the worst. `scratch`: S + D doubles. */
static double cm_worst_error(const cm_problem *c, const cm_buffers *b, int f16_out, double *scratch, char *where,
                             size_t where_size)
{
    double worst = -1, *o = scratch + c->S;
    for (uint32_t h = 0; h < CM_H; h++)
        for (uint32_t i = 0; i < c->L; i++) {
            double lse = reference_row(c, h, i, scratch, o);
            const size_t st = (size_t)h * c->L + i; /* one part: state row (bh, i) */
            for (uint32_t d = 0; d <= c->D; d++) {
                double got, ref = d < c->D ? o[d] : lse;
                if (d == c->D && !c->store) break;
                if (d == c->D) got = ((const float *)b->state_lse.mapped)[st];
                else if (c->store) got = ((const float *)b->state_o.mapped)[st * c->D + d];
                else if (f16_out) got = vka_f16_to_f32(((const uint16_t *)b->ctx.mapped)[(size_t)i * CM_H * c->D + h * c->D + d]);
                else got = ((const float *)b->ctx.mapped)[(size_t)i * CM_H * c->D + h * c->D + d];
                double err = isnan(got) ? INFINITY : fabs(got - ref);
                if (err > worst) {
                    worst = err;
                    snprintf(where, where_size, "%g for %g at %s[head %u][row %u][%u]", got, ref,
                             d == c->D ? "lse" : "out", h, i, d == c->D ? 0 : d);
                }
            }
        }
    return worst;
}

/* The step's pipeline where its masks and variants are off (a plain forward's own), the state
 * written where the step writes it, K/V fetched as it fetches them and Q, K, V of its element
 * types; the first chunk of a part never loads one. */
static void self_test_spec(const vka_step *step, uint32_t spec[VKA_MAX_SPEC])
{
    memcpy(spec, step->spec, sizeof step->spec);
    spec[VKA_SPEC_ATTN_MASK] = 0, spec[VKA_SPEC_VARIANT] = 0;
    spec[VKA_SPEC_FLAGS] &= VKA_FUSED_STORE | VKA_FUSED_PREFETCH | VKA_FUSED_TWO_STAGES | VKA_FUSED_Q_F16 |
                           VKA_FUSED_K_F16 | VKA_FUSED_V_F16 | VKA_FUSED_WIDE | VKA_FUSED_REG_SOFTMAX | VKA_FUSED_REG_P;
}

uint64_t vka_attn_cm_variant(const vka_step *step)
{
    uint32_t spec[VKA_MAX_SPEC];
    self_test_spec(step, spec);
    /* FNV-1a over the kernel, the output type (fp16 only where no state is stored) and the spec */
    uint64_t h = 14695981039346656037ull;
    const uint32_t words[2] = {(uint32_t)step->kernel,
                               (uint32_t)(step->f16_out && !(spec[VKA_SPEC_FLAGS] & VKA_FUSED_STORE))};
    for (int i = 0; i < 2 + VKA_MAX_SPEC; i++) {
        uint32_t w = i < 2 ? words[i] : spec[i - 2];
        for (int byte = 0; byte < 4; byte++) h = (h ^ ((w >> (8 * byte)) & 0xffu)) * 1099511628211ull;
    }
    return h;
}

vkattn_status vka_attn_cm_self_test(vka_device *dev, vka_transfer *transfer, vka_pipeline_cache *pipelines,
                                    vka_buffer *dummy, const vka_step *step, int *passed, char *note, size_t note_size)
{
    vkattn_status status = VKATTN_OK;
    cm_buffers b = {0};
    double *scratch = NULL;
    *passed = 0;
    uint32_t spec[VKA_MAX_SPEC];
    self_test_spec(step, spec);
    const uint32_t tile_q = spec[VKA_SPEC_TILE_A], tile_k = spec[VKA_SPEC_TILE_B], vec = spec[VKA_SPEC_VEC];
    /* Two query tiles (the second partial), and more keys than queries: at least three key blocks,
     * the last partial. */
    const uint32_t D = spec[VKA_SPEC_DV] * vec, L = tile_q + 3;
    const cm_problem c = {.D = D, .L = L, .S = (L > 2 * tile_k ? L : 2 * tile_k) + 3,
                          .store = (spec[VKA_SPEC_FLAGS] & VKA_FUSED_STORE) != 0, .scale = 1.0f / sqrtf((float)D)};
    const int f16_out = step->f16_out && !c.store;
    const vka_pipeline *pipeline = NULL;
    const int reg = (step->spec[VKA_SPEC_FLAGS] & VKA_FUSED_REG_SOFTMAX) != 0;
    const int reg_p = (step->spec[VKA_SPEC_FLAGS] & VKA_FUSED_REG_P) != 0;
    char kernel[64]; /* the build, as the notes name it */
    snprintf(kernel, sizeof kernel, "%s%s", vka_kernel_get(step->kernel)->spirv,
             reg_p ? " (softmax and P in registers)" : reg ? " (softmax in registers)" : "");
    const int fault = step->kernel == VKA_KERNEL_FUSED_CM2 && dev->faults.attn_cm2_check ? dev->faults.attn_cm2_check
                      : reg_p && dev->faults.attn_cm_reg_p_check                         ? dev->faults.attn_cm_reg_p_check
                      : reg && dev->faults.attn_cm_reg_check                             ? dev->faults.attn_cm_reg_check
                                                                                         : dev->faults.attn_cm_check;
    if (fault == VKA_FAULT_COOPMAT_FAIL) {
        status = vka_fail(dev, VKATTN_ERROR_VULKAN, "vkCreateComputePipelines failed: VK_ERROR_UNKNOWN (injected)");
        goto fail;
    }
    VKA_TRY(vka_pipeline_get(dev, pipelines, step->kernel, f16_out, spec, &pipeline));
    const VkDeviceSize q_bytes = (VkDeviceSize)CM_H * c.L * c.D * 4, kv_bytes = (VkDeviceSize)CM_HKV * c.S * c.D * 4;
    const VkDeviceSize rows = (VkDeviceSize)CM_H * c.L;
    VKA_TRY(vka_buffer_create(dev, q_bytes, VKA_MEMORY_STAGING, "the attention self-test's Q", &b.q));
    VKA_TRY(vka_buffer_create(dev, kv_bytes, VKA_MEMORY_STAGING, "the attention self-test's K", &b.k));
    VKA_TRY(vka_buffer_create(dev, kv_bytes, VKA_MEMORY_STAGING, "the attention self-test's V", &b.v));
    VKA_TRY(vka_buffer_create(dev, (c.S + 3) / 4 * 4, VKA_MEMORY_STAGING, "the attention self-test's key padding", &b.kpm));
    VKA_TRY(vka_buffer_create(dev, rows * c.D * 4, VKA_MEMORY_STAGING, "the attention self-test's output", &b.ctx));
    if (c.store) {
        VKA_TRY(vka_buffer_create(dev, rows * c.D * 4, VKA_MEMORY_STAGING, "the attention self-test's state", &b.state_o));
        VKA_TRY(vka_buffer_create(dev, rows * 4, VKA_MEMORY_STAGING, "the attention self-test's lse", &b.state_lse));
    }
    /* Q as (L, H, D) rows, K and V as (S, H_kv, D), each in the element type the step reads (the
     * values are exact in fp16); unwritten outputs NaN */
    const uint32_t flags = spec[VKA_SPEC_FLAGS];
    for (uint32_t i = 0; i < c.L; i++)
        for (uint32_t h = 0; h < CM_H; h++)
            for (uint32_t d = 0; d < c.D; d++)
                put_value(&b.q, flags & VKA_FUSED_Q_F16, ((size_t)i * CM_H + h) * c.D + d, q_value(h, i, d));
    for (uint32_t j = 0; j < c.S; j++)
        for (uint32_t g = 0; g < CM_HKV; g++)
            for (uint32_t d = 0; d < c.D; d++) {
                const size_t at = ((size_t)j * CM_HKV + g) * c.D + d;
                put_value(&b.k, flags & VKA_FUSED_K_F16, at, k_value(g, j, d));
                put_value(&b.v, flags & VKA_FUSED_V_F16, at, v_value(g, j, d));
            }
    uint8_t *kpm = b.kpm.mapped; /* a byte per key, nonzero where padded */
    for (uint32_t j = 0; j < (c.S + 3) / 4 * 4; j++) kpm[j] = j < c.S && key_padded(&c, j);
    memset(b.ctx.mapped, 0xff, (size_t)(rows * c.D * 4)); /* NaN as fp32 and as fp16 */
    if (c.store) memset(b.state_o.mapped, 0xff, (size_t)(rows * c.D * 4)), memset(b.state_lse.mapped, 0xff, (size_t)(rows * 4));

    const uint32_t DV = c.D / vec;
    const vka_fused_push push = {
        .L = c.L, .S = c.S, .S_ext = c.S, .H = CM_H, .bh_begin = 0, .bh_count = CM_H, .i_begin = 0,
        .i_count = c.L, .q_offset = 0, .q_batch = c.L * CM_H * DV, .q_head = DV, .q_row = CM_H * DV,
        .k_offset = 0, .v_offset = 0, .kv_batch = c.S * CM_HKV * DV, .kv_head = DV, .kv_row = CM_HKV * DV,
        .ctx_offset = 0, .ctx_stride = CM_H * c.D, .scale = c.scale,
        .mask_flags = VKA_MASK_CAUSAL | VKA_MASK_CAUSAL_END | VKA_MASK_KEY_PADDING, .mask_heads = CM_H,
        .parts = 1, .part_len = c.S, .chunk_begin = 0, .chunk_len = c.S, .has_lse = 0, .kv_group = CM_H / CM_HKV};
    const vka_binding bindings[VKA_FUSED_BINDINGS] = {
        [VKA_FUSED_Q] = {&b.q, 0, 0, VKA_VIEW_RGBA32F}, [VKA_FUSED_K] = {&b.k, 0, 0, VKA_VIEW_RGBA32F},
        [VKA_FUSED_V] = {&b.v, 0, 0, VKA_VIEW_RGBA32F}, [VKA_FUSED_CTX] = {&b.ctx, 0, 0, VKA_VIEW_R32F},
        [VKA_FUSED_KEY_PADDING] = {&b.kpm, 0, 0, VKA_VIEW_R32F}, [VKA_FUSED_VALID_LENS] = {dummy, 0, 0, VKA_VIEW_R32F},
        [VKA_FUSED_ATTN_MASK] = {dummy, 0, 0, VKA_VIEW_R32F}, [VKA_FUSED_LSE_OUT] = {dummy, 0, 0, VKA_VIEW_R32F},
        [VKA_FUSED_STATE_O] = {c.store ? &b.state_o : dummy, 0, 0, VKA_VIEW_R32F},
        [VKA_FUSED_STATE_LSE] = {c.store ? &b.state_lse : dummy, 0, 0, VKA_VIEW_R32F},
        [VKA_FUSED_HEAD_TERMS] = {dummy, 0, 0, VKA_VIEW_R32F}};
    const uint32_t groups[3] = {CM_H * ((c.L + tile_q - 1) / tile_q), 1, 1};
    VKA_TRY(run_dispatch(dev, transfer, pipeline, bindings, &push, groups, "the attention self-test"));
    if (fault == VKA_FAULT_COOPMAT_WRONG) {
        float *out = c.store ? b.state_o.mapped : b.ctx.mapped;
        if (f16_out) ((uint16_t *)b.ctx.mapped)[c.D + 3] ^= 0x2000; /* a wrong exponent bit */
        else out[c.D + 3] += 0.25f;
    }
    char where[160];
    /* fp16 probabilities (2^-11 relative) and an fp16 output (2^-11 of |V| <= 1), with room */
    const double tolerance = 1.0 / 256;
    scratch = vka_malloc(&dev->faults, ((size_t)c.S + c.D) * sizeof *scratch);
    if (!scratch) {
        status = vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of host memory for the attention self-test");
        goto fail;
    }
    double worst = cm_worst_error(&c, &b, f16_out, scratch, where, sizeof where);
    if (worst <= tolerance) *passed = 1;
    else
        snprintf(note, note_size, "%s self-test failed: head dim %u gave %s", kernel, c.D, where);
fail:
    free(scratch);
    vka_buffer_destroy(dev, &b.state_lse);
    vka_buffer_destroy(dev, &b.state_o);
    vka_buffer_destroy(dev, &b.ctx);
    vka_buffer_destroy(dev, &b.kpm);
    vka_buffer_destroy(dev, &b.v);
    vka_buffer_destroy(dev, &b.k);
    vka_buffer_destroy(dev, &b.q);
    strncat(kernel, " ", sizeof kernel - strlen(kernel) - 1);
    return driver_verdict(dev, status, kernel, note, note_size);
}
