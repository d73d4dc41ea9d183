/* The cooperative-matrix self-test (coopmat_check.h): one matmul_cm dispatch against float64. */
#include "api/coopmat_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pipeline/dispatch.h"
#include "plan/matmul.h"

/* Operands: multiples of 1/8 in [-1, 1] from small patterns that differ between A, W and the
 * bias, so a transposed, shifted or mixed-up tile gives different numbers. */
static float a_value(uint32_t m, uint32_t k) { return (float)((int)((m * 7 + k * 3) % 17) - 8) / 8.0f; }
static float w_value(uint32_t n, uint32_t k) { return (float)((int)((n * 5 + k * 11 + 3) % 13) - 6) / 8.0f; }
static float bias_value(uint32_t n) { return (float)((int)(n % 9) - 4) / 8.0f; }

typedef struct check_buffers {
    vka_buffer a, w, bias, c;
} check_buffers;

/* Records and runs the one dispatch; C must already hold NaN. */
static vkattn_status run_dispatch(vka_device *dev, vka_transfer *transfer, const vka_pipeline *pipeline,
                                  check_buffers *b, const vka_matmul_push *push)
{
    vkattn_status status = VKATTN_OK;
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd;
    const uint32_t groups[3] = {1, 1, 1};
    vka_binding bindings[VKA_MATMUL_BINDINGS] = {
        [VKA_MATMUL_A] = {&b->a, 0, 0, VKA_VIEW_RGBA32F}, [VKA_MATMUL_B] = {&b->w, 0, 0, VKA_VIEW_RGBA32F},
        [VKA_MATMUL_BIAS] = {&b->bias, 0, 0, VKA_VIEW_R32F}, [VKA_MATMUL_C] = {&b->c, 0, 0, VKA_VIEW_R32F}};
    VKA_TRY(vka_descriptor_pool_create(dev, 1, &pool));
    VKA_TRY(vka_transfer_begin(transfer, &cmd));
    VKA_TRY(vka_record_dispatch(dev, cmd, pool, pipeline, bindings, push, groups));
    VKA_TRY(vka_transfer_submit_wait(transfer, "the cooperative-matrix self-test"));
fail:
    if (pool) dev->vk.vkDestroyDescriptorPool(dev->device, pool, NULL);
    return status;
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
    const vka_matmul_cm_tile tile = vka_matmul_cm_tile_for(tuning, limits, tuning->cm_min_rows);
    const vkattn_matrix_shape ms = limits->matrix_shape;
    if (!tile.wg) {
        snprintf(note, note_size, "self-test: no %ux%ux%u tile fits %u bytes of shared memory", ms.m, ms.n, ms.k,
                 limits->max_shared_bytes);
        return VKATTN_OK;
    }
    const uint32_t M = tile.tile_m, N = tile.tile_n, K = 2 * tile.tile_k, vec = 4;
    /* The plan's first-part, fp32-output pipeline for this tile, made outside the context's
     * registry (vka_pipeline_make): a forward under the tuning finds the driver's work in the
     * pipeline cache, and a context that runs no forward writes no cache file. */
    uint32_t spec[VKA_MAX_SPEC] = {[VKA_SPEC_WG_SIZE] = tile.wg, [VKA_SPEC_TILE_A] = M, [VKA_SPEC_TILE_B] = N,
                                   [VKA_SPEC_VEC] = vec, [VKA_SPEC_MAT_M] = ms.m, [VKA_SPEC_MAT_N] = ms.n,
                                   [VKA_SPEC_MAT_K] = ms.k, [VKA_SPEC_TILE_K] = tile.tile_k};
    vka_pipeline *pipeline = NULL;
    if (dev->faults.coopmat_check == VKA_FAULT_COOPMAT_FAIL) {
        status = vka_fail(dev, VKATTN_ERROR_VULKAN, "vkCreateComputePipelines failed: VK_ERROR_UNKNOWN (injected)");
        goto fail;
    }
    VKA_TRY(vka_pipeline_make(dev, pipelines, VKA_KERNEL_MATMUL_CM, 0, spec, &pipeline));
    VKA_TRY(vka_buffer_create(dev, (VkDeviceSize)M * K * 4, VKA_MEMORY_STAGING, "the self-test's A", &b.a));
    VKA_TRY(vka_buffer_create(dev, (VkDeviceSize)N * K * 4, VKA_MEMORY_STAGING, "the self-test's W", &b.w));
    VKA_TRY(vka_buffer_create(dev, (VkDeviceSize)N * 4, VKA_MEMORY_STAGING, "the self-test's bias", &b.bias));
    VKA_TRY(vka_buffer_create(dev, (VkDeviceSize)M * N * 4, VKA_MEMORY_STAGING, "the self-test's C", &b.c));
    float *a = b.a.mapped, *w = b.w.mapped, *bias = b.bias.mapped, *c = b.c.mapped;
    for (uint32_t m = 0; m < M; m++)
        for (uint32_t k = 0; k < K; k++) a[(size_t)m * K + k] = a_value(m, k);
    for (uint32_t n = 0; n < N; n++) {
        bias[n] = bias_value(n);
        for (uint32_t k = 0; k < K; k++) w[(size_t)n * K + k] = w_value(n, k);
    }
    for (size_t i = 0; i < (size_t)M * N; i++) c[i] = NAN;
    const vka_matmul_push push = {.M = M, .N = N, .K = K / vec, .lda = K / vec, .ldb = K / vec, .c_row = N,
                                  .c_col_block = N, .rows_per_batch = M, .has_bias = 1, .tiles_n = 1};
    VKA_TRY(run_dispatch(dev, transfer, pipeline, &b, &push));
    if (dev->faults.coopmat_check == VKA_FAULT_COOPMAT_WRONG) c[(size_t)(M / 2) * N + N / 3] += 0.25f;
    uint32_t at_m = 0, at_n = 0;
    double ref = 0, worst = worst_error(c, M, N, K, &at_m, &at_n, &ref);
    const double tolerance = 1.0 / 1024; /* fp16's rounding of the result, relative to max(1, |ref|) */
    if (worst <= tolerance) {
        *passed = 1;
    } else {
        snprintf(note, note_size, "self-test failed: a %ux%ux%u GEMM on %ux%ux%u matrices gave %g for %g at C[%u][%u]",
                 M, N, K, ms.m, ms.n, ms.k, (double)c[(size_t)at_m * N + at_n], ref, at_m, at_n);
    }
fail:
    vka_pipeline_release(dev, pipeline);
    vka_buffer_destroy(dev, &b.c);
    vka_buffer_destroy(dev, &b.bias);
    vka_buffer_destroy(dev, &b.w);
    vka_buffer_destroy(dev, &b.a);
    /* A driver that cannot build or run the kernel is a finding about the driver; running out of
     * memory or losing the device ends the context's creation as anywhere else. */
    if (status != VKATTN_OK && status != VKATTN_ERROR_OUT_OF_HOST_MEMORY &&
        status != VKATTN_ERROR_OUT_OF_DEVICE_MEMORY && status != VKATTN_ERROR_DEVICE_LOST) {
        snprintf(note, note_size, "self-test failed: %s", dev->error.message);
        return VKATTN_OK;
    }
    return status;
}
