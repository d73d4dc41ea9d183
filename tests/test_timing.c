/* Timing on a device: each stage's time is the time between its own steps' timestamps (read back
 * from the layer, and checked against the plan's steps), each step's time and kernel
 * (vkattn_layer_last_step_times) the plan's and its timestamps', the dispatch count is the plan's, the
 * GPU time fits inside the host's submit-to-fence wait, the stage that does the most work takes
 * the most time (attention at long L and small E, the projections at short L and large E), and
 * the default path records no timestamps; the peak microkernels give positive figures. */
#include <math.h>

#include "api/layer.h"
#include "gpu_test.h"

static vkattn_context *ctx;

typedef struct timed_run {
    vkattn_layer *layer;
    test_weights tw;
    vkattn_forward_stats stats;
    double best_ms[VKATTN_STAGE_COUNT]; /* each stage's least time over the timed forwards */
} timed_run;

/* Warm forwards with timing on (the first one compiles kernels, which lavapipe times as work).
 * The machine is shared: a stage's time only ever grows by noise, so comparisons between stages
 * use each stage's minimum over several forwards. */
static void run_timed(const vkattn_layer_desc *d, uint32_t L, int causal, int average, timed_run *r)
{
    test_weights_make(&r->tw, d, 3);
    r->layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, d, &r->tw.w, &r->layer), VKATTN_OK);
    size_t n = (size_t)L * d->embed_dim;
    float *x = malloc(n * sizeof(float)), *y = malloc(n * sizeof(float));
    float *w = average ? malloc((size_t)L * L * sizeof(float)) : NULL;
    test_rng rng = test_rng_make(1);
    test_fill(&rng, x, n, 1.0f);
    vkattn_host_forward_desc f = {.batch = 1, .query_len = L, .query = x, .output = y, .causal = causal,
                                  .attn_weights = w, .average_weights = average};
    CHECK_STATUS(vkattn_layer_set_timing(r->layer, 1), VKATTN_OK);
    CHECK_STATUS(vkattn_forward_host(r->layer, &f), VKATTN_OK);
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) r->best_ms[s] = INFINITY;
    for (int i = 0; i < 5; i++) {
        CHECK_STATUS(vkattn_forward_host(r->layer, &f), VKATTN_OK);
        CHECK_STATUS(vkattn_layer_last_stats(r->layer, &r->stats), VKATTN_OK);
        for (int s = 0; s < VKATTN_STAGE_COUNT; s++) r->best_ms[s] = fmin(r->best_ms[s], r->stats.stage_ms[s]);
    }
    free(x), free(y), free(w);
}

static void finish(timed_run *r)
{
    vkattn_layer_destroy(r->layer);
    test_weights_free(&r->tw);
}

/* vkattn_layer_last_step_times against the layer's timestamps and plan: step k's kernel (as the
 * plan's trace names it), stage and ticks[k+1] - ticks[k]; its stages' sums the stats'; a smaller
 * capacity takes the first steps and still counts all; a NULL array with a capacity is refused. */
static void check_step_times(const timed_run *r)
{
    const vka_plan *plan = &r->layer->plan;
    uint32_t n = 0;
    CHECK_STATUS(vkattn_layer_last_step_times(r->layer, NULL, 0, &n), VKATTN_OK);
    CHECK_MSG(n == plan->step_count, "%u step times, the plan has %u steps", n, plan->step_count);
    vkattn_step_time *t = calloc(n + 1, sizeof *t);
    if (!t) return;
    t[n].ms = -1; /* past the count: untouched */
    uint32_t m = 0;
    CHECK_STATUS(vkattn_layer_last_step_times(r->layer, t, n + 1, &m), VKATTN_OK);
    CHECK(m == n && t[n].ms == -1);
    double sum[VKATTN_STAGE_COUNT] = {0};
    for (uint32_t k = 0; k < n && k < plan->step_count; k++) {
        const vka_step *step = &plan->steps[k];
        const char *want = step->kind == VKA_STEP_ZERO    ? "fill"
                           : step->kind == VKA_STEP_COPY  ? "copy"
                           : step->kind == VKA_STEP_WRITE ? "write"
                                                          : vka_kernel_get(step->kernel)->spirv;
        const double ms = vka_ticks_ms(&ctx->dev, r->layer->ticks[k], r->layer->ticks[k + 1]);
        CHECK_MSG(t[k].kernel && strcmp(t[k].kernel, want) == 0 && t[k].stage == step->stage && t[k].ms == ms,
                  "step %u: %s, %s, %.6f ms; the plan's %s, %s, %.6f ms", k + 1, t[k].kernel ? t[k].kernel : "(null)",
                  vkattn_stage_name(t[k].stage), t[k].ms, want, vkattn_stage_name(step->stage), ms);
        sum[t[k].stage] += t[k].ms;
    }
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++)
        CHECK_MSG(fabs(sum[s] - r->stats.stage_ms[s]) <= 1e-9 * (1 + sum[s]), "stage %s: steps %.6f ms, stats %.6f ms",
                  vkattn_stage_name((vkattn_stage)s), sum[s], r->stats.stage_ms[s]);
    vkattn_step_time first = {0};
    CHECK_STATUS(vkattn_layer_last_step_times(r->layer, &first, 1, &m), VKATTN_OK);
    CHECK(m == n && n > 0 && first.kernel == t[0].kernel && first.ms == t[0].ms);
    CHECK_STATUS(vkattn_layer_last_step_times(r->layer, NULL, 1, &m), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "times is NULL") != NULL);
    CHECK_STATUS(vkattn_layer_last_step_times(r->layer, t, n, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "count is NULL") != NULL); /* not the message before */
    vkattn_forward_stats stats;
    CHECK_STATUS(vkattn_layer_last_stats(r->layer, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "vkattn_layer_last_stats: out is NULL") != NULL);
    CHECK_STATUS(vkattn_layer_last_stats(NULL, &stats), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_layer_last_step_times(NULL, t, n, &m), VKATTN_ERROR_INVALID_ARGUMENT);
    free(t);
}

/* Stage times against the layer's own timestamps and plan: step k took ticks[k+1] - ticks[k]. */
static void check_attribution(const timed_run *r)
{
    const vka_plan *plan = &r->layer->plan;
    const vkattn_forward_stats *st = &r->stats;
    double want[VKATTN_STAGE_COUNT] = {0};
    uint32_t dispatches = 0;
    for (uint32_t k = 0; k < plan->step_count; k++) {
        want[plan->steps[k].stage] += vka_ticks_ms(&ctx->dev, r->layer->ticks[k], r->layer->ticks[k + 1]);
        dispatches += plan->steps[k].kind == VKA_STEP_DISPATCH;
    }
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++)
        CHECK_MSG(fabs(st->stage_ms[s] - want[s]) <= 1e-9 * (1 + want[s]), "stage %s: %.6f ms, its steps %.6f ms",
                  vkattn_stage_name((vkattn_stage)s), st->stage_ms[s], want[s]);
    CHECK_MSG(st->dispatches == dispatches, "%u dispatches reported, the plan has %u", st->dispatches, dispatches);
    double span = vka_ticks_ms(&ctx->dev, r->layer->ticks[0], r->layer->ticks[plan->step_count]);
    CHECK_MSG(fabs(st->gpu_ms - span) <= 1e-9 * (1 + span), "gpu %.6f ms, first to last timestamp %.6f ms", st->gpu_ms,
              span);
    /* The GPU work happens between submit and the fence: within the host's wait (+ clock noise). */
    CHECK_MSG(st->gpu_ms <= st->submit_wait_ms + 0.05, "GPU %.3f ms > host submit+wait %.3f ms", st->gpu_ms,
              st->submit_wait_ms);
    CHECK(st->timed == 1 && st->submits == 1 && st->workspace_bytes > 0);
    check_step_times(r);
}

static void test_unfused_stages(void)
{
    vkattn_layer_desc d = {.embed_dim = 64, .num_heads = 4};
    timed_run r;
    run_timed(&d, 96, 1, 1, &r); /* averaged weights: the unfused path */
    CHECK(r.stats.path == VKATTN_PATH_UNFUSED);
    const vkattn_stage ran[] = {VKATTN_STAGE_QKV_PROJECTION, VKATTN_STAGE_SCORES, VKATTN_STAGE_SOFTMAX,
                                VKATTN_STAGE_AVERAGE_HEADS, VKATTN_STAGE_PV, VKATTN_STAGE_OUT_PROJECTION};
    for (size_t i = 0; i < sizeof ran / sizeof ran[0]; i++)
        CHECK_MSG(r.stats.stage_ms[ran[i]] > 0, "stage %s took %g ms", vkattn_stage_name(ran[i]),
                  r.stats.stage_ms[ran[i]]);
    CHECK(r.stats.stage_ms[VKATTN_STAGE_FUSED] == 0);
    check_attribution(&r);
    finish(&r);
}

/* Where the work is, the time is: attention (4·L²·D per head) dwarfs the projections at
 * L = 1024, E = 32 (16x the FLOPs), and the projections dwarf attention at L = 64, E = 2048 (48x,
 * and 1.6 GFLOP of QKV projection: on a GPU, 50 MFLOP took no longer than a dispatch's overhead). */
static void test_time_follows_work(void)
{
    timed_run r;
    vkattn_layer_desc narrow = {.embed_dim = 32, .num_heads = 1};
    run_timed(&narrow, 1024, 0, 0, &r);
    CHECK(r.stats.path == VKATTN_PATH_FUSED);
    check_attribution(&r);
    const double *ms = r.best_ms;
    CHECK_MSG(ms[VKATTN_STAGE_FUSED] > ms[VKATTN_STAGE_QKV_PROJECTION] + ms[VKATTN_STAGE_OUT_PROJECTION],
              "L=1024 E=32: attention %.3f ms, projections %.3f + %.3f ms (least of 5)", ms[VKATTN_STAGE_FUSED],
              ms[VKATTN_STAGE_QKV_PROJECTION], ms[VKATTN_STAGE_OUT_PROJECTION]);
    finish(&r);
    vkattn_layer_desc wide = {.embed_dim = 2048, .num_heads = 16};
    run_timed(&wide, 64, 0, 0, &r);
    check_attribution(&r);
    CHECK_MSG(ms[VKATTN_STAGE_QKV_PROJECTION] > ms[VKATTN_STAGE_FUSED], "L=64 E=2048: projection %.3f ms, attention %.3f ms (least of 5)",
              ms[VKATTN_STAGE_QKV_PROJECTION], ms[VKATTN_STAGE_FUSED]);
    finish(&r);
}

static void test_small_shapes_dispatch_count(void)
{
    /* Small self-attention on the default (fused) path: the Q/K/V projection, the fused kernel,
     * the output projection. */
    vkattn_layer_desc d = {.embed_dim = 32, .num_heads = 2};
    for (uint32_t L = 1; L <= 16; L *= 2) {
        timed_run r;
        run_timed(&d, L, 0, 0, &r);
        CHECK_MSG(r.stats.dispatches == 3, "L=%u: %u dispatches", L, r.stats.dispatches);
        check_attribution(&r);
        finish(&r);
    }
}

static void test_timing_off_by_default(void)
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
    CHECK(st.dispatches == 3);
    uint32_t n = 99;
    CHECK_STATUS(vkattn_layer_last_step_times(layer, NULL, 0, &n), VKATTN_OK);
    CHECK(n == 0);
    /* timed, then not: the untimed forward has no step times */
    CHECK_STATUS(vkattn_layer_set_timing(layer, 1), VKATTN_OK);
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_last_step_times(layer, NULL, 0, &n), VKATTN_OK);
    CHECK(n == 3);
    CHECK_STATUS(vkattn_layer_set_timing(layer, 0), VKATTN_OK);
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_last_step_times(layer, NULL, 0, &n), VKATTN_OK);
    CHECK(n == 0);
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
    RUN_TEST(test_unfused_stages);
    RUN_TEST(test_time_follows_work);
    RUN_TEST(test_small_shapes_dispatch_count);
    RUN_TEST(test_timing_off_by_default);
    RUN_TEST(test_peak_positive);
    gpu_test_finish_context(ctx);
    return test_finish();
}
