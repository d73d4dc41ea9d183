/* Profiling on a device: per-stage timestamps are positive, add up to the forward's GPU time, and
 * that time fits inside the host's submit-to-fence wait; the default path records no timestamps;
 * forward statistics report dispatches and workspace; the peak microkernels give positive figures.
 * No test here asserts a speed. */
#include "gpu_test.h"

static vkattn_context *ctx;

static void run_profiled(const vkattn_layer_desc *d, uint32_t B, uint32_t L, int causal, int average,
                         vkattn_forward_stats *stats)
{
    test_weights tw;
    test_weights_make(&tw, d, 3);
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, d, &tw.w, &layer), VKATTN_OK);
    size_t n = (size_t)B * L * d->embed_dim;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    float *w = average ? malloc((size_t)B * L * L * sizeof(float)) : NULL;
    test_rng rng = test_rng_make(1);
    test_fill(&rng, x, n, 1.0f);
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .query = x, .output = y, .causal = causal,
                                  .attn_weights = w, .average_weights = average};
    CHECK_STATUS(vkattn_layer_set_profiling(layer, 1), VKATTN_OK);
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_last_stats(layer, stats), VKATTN_OK);
    vkattn_layer_destroy(layer);
    free(x), free(y), free(w);
    test_weights_free(&tw);
}

static void test_stage_times_add_up(void)
{
    vkattn_layer_desc d = {.embed_dim = 64, .num_heads = 4};
    vkattn_forward_stats st;
    run_profiled(&d, 2, 96, 1, 1, &st);
    CHECK(st.timed == 1);
    CHECK(st.path == VKATTN_PATH_UNFUSED);
    double sum = 0;
    const vkattn_stage ran[] = {VKATTN_STAGE_QKV_PROJECTION, VKATTN_STAGE_SCORES, VKATTN_STAGE_SOFTMAX,
                                VKATTN_STAGE_AVERAGE_HEADS, VKATTN_STAGE_PV, VKATTN_STAGE_OUT_PROJECTION};
    for (size_t i = 0; i < sizeof ran / sizeof ran[0]; i++)
        CHECK_MSG(st.stage_ms[ran[i]] > 0, "stage %s took %g ms", vkattn_stage_name(ran[i]), st.stage_ms[ran[i]]);
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
        CHECK(st.stage_ms[s] >= 0);
        sum += st.stage_ms[s];
    }
    CHECK(st.stage_ms[VKATTN_STAGE_FUSED] == 0);
    /* Stages partition the first-to-last timestamp interval (rounding only). */
    CHECK_MSG(sum <= st.gpu_ms * (1 + 1e-9) + 1e-6, "stages %.6f ms > forward %.6f ms", sum, st.gpu_ms);
    CHECK_MSG(sum >= st.gpu_ms * (1 - 1e-9) - 1e-6, "stages %.6f ms < forward %.6f ms", sum, st.gpu_ms);
    /* The GPU work happens between submit and the fence: within the host's wait (+ clock noise). */
    CHECK_MSG(st.gpu_ms <= st.submit_wait_ms + 0.05, "GPU %.3f ms > host submit+wait %.3f ms", st.gpu_ms,
              st.submit_wait_ms);
    CHECK(st.record_ms > 0 && st.submit_wait_ms > 0);
    CHECK(st.submits == 1);
    CHECK(st.workspace_bytes > 0);
}

static void test_small_shapes_dispatch_count(void)
{
    /* Small self-attention: fused QKV, scores, softmax, P·V, output projection. */
    vkattn_layer_desc d = {.embed_dim = 32, .num_heads = 2};
    for (uint32_t L = 1; L <= 16; L *= 2) {
        vkattn_forward_stats st;
        run_profiled(&d, 1, L, 0, 0, &st);
        CHECK_MSG(st.dispatches <= 6, "L=%u: %u dispatches", L, st.dispatches);
        CHECK(st.submits == 1);
    }
}

static void test_profiling_off_by_default(void)
{
    vkattn_layer_desc d = {.embed_dim = 16, .num_heads = 2};
    test_weights tw;
    test_weights_make(&tw, &d, 4);
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &d, &tw.w, &layer), VKATTN_OK);
    float x[3 * 16] = {0}, y[3 * 16];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 3, .query = x, .output = y};
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    vkattn_forward_stats st;
    CHECK_STATUS(vkattn_layer_last_stats(layer, &st), VKATTN_OK);
    CHECK(st.timed == 0 && st.gpu_ms == 0);
    CHECK(st.path == VKATTN_PATH_FUSED);
    CHECK(st.dispatches == 3); /* fused QKV projection, fused attention, output projection */
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

static void test_peak_positive(void)
{
    vkattn_peak peak;
    CHECK_STATUS(vkattn_measure_peak(ctx, 0.2, &peak), VKATTN_OK);
    CHECK(peak.fp32_gflops > 0 && peak.bandwidth_gbs > 0);
    CHECK(peak.fp32_ms > 0 && peak.bandwidth_ms > 0);
    CHECK_STATUS(vkattn_measure_peak(ctx, 0.2, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
}

int main(void)
{
    ctx = gpu_test_context();
    RUN_TEST(test_stage_times_add_up);
    RUN_TEST(test_small_shapes_dispatch_count);
    RUN_TEST(test_profiling_off_by_default);
    RUN_TEST(test_peak_positive);
    gpu_test_finish_context(ctx);
    return test_finish();
}
