/* vkattn_measure_peak: the device's arithmetic and memory ceilings, from microkernels timed with
 * timestamps. Each measurement grows its work until one run takes a measurable time, then keeps
 * the best of a few runs (the fastest run is the least disturbed one). */
#include <string.h>

#include "abi.h"
#include "api/context.h"
#include "pipeline/dispatch.h"

/* Groups of 64 invocations: enough to fill a big GPU, a few per core on lavapipe. */
#define PEAK_FMA_GROUPS 1024u
#define PEAK_FLOPS_PER_TRIP (VKA_PEAK_CHAINS * 4 * 2) /* vec4 FMAs per loop trip, shaders/peak_fma.comp */
#define PEAK_COPY_GROUPS 4096u
#define PEAK_RUNS 3

typedef struct peak_run {
    vkattn_context *ctx;
    VkDescriptorPool pool;
    VkQueryPool queries;
} peak_run;

/* Records one dispatch between two timestamps, submits, waits, returns its GPU time. */
static vkattn_status time_dispatch(peak_run *run, const vka_pipeline *p, vka_buffer *const *buffers,
                                   const vka_peak_push *push, uint32_t groups, double *ms)
{
    vka_device *dev = &run->ctx->dev;
    vka_transfer *lane = &run->ctx->transfer;
    vkattn_status status = VKATTN_OK;
    vka_binding bindings[VKA_MAX_BINDINGS];
    for (uint32_t i = 0; i < p->bindings.count; i++) bindings[i] = (vka_binding){buffers[i], 0, 0, VKA_VIEW_R32F};
    VKA_VK(dev, dev->vk.vkResetDescriptorPool(dev->device, run->pool, 0));
    VkCommandBuffer cmd;
    VKA_TRY(vka_transfer_begin(lane, &cmd));
    dev->vk.vkCmdResetQueryPool(cmd, run->queries, 0, 2);
    dev->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, run->queries, 0);
    VKA_TRY(vka_record_dispatch(dev, cmd, run->pool, p, bindings, push, (uint32_t[3]){groups, 1, 1}));
    dev->vk.vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, run->queries, 1);
    VKA_TRY(vka_transfer_submit_wait(lane, "a peak microkernel"));
    uint64_t ticks[2];
    VKA_VK(dev, dev->vk.vkGetQueryPoolResults(dev->device, run->queries, 0, 2, sizeof ticks, ticks, sizeof ticks[0],
                                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    *ms = vka_ticks_ms(dev, ticks[0], ticks[1]);
fail:
    return status;
}

/* FMA throughput in GFLOP/s: doubles the loop trips until a run takes a quarter of the budget, or
 * until the device's loop budget stops it (past that, lavapipe would cut the loop short and the
 * FLOPs counted here would not all run). */
static vkattn_status measure_fma(peak_run *run, vka_kernel kernel, vka_buffer *out, double budget_ms,
                                 double *gflops, double *best_ms)
{
    const vka_pipeline *p;
    uint32_t spec[VKA_MAX_SPEC] = {[VKA_SPEC_WG_SIZE] = VKA_PEAK_WG_SIZE};
    vkattn_status status = vka_pipeline_get(&run->ctx->dev, &run->ctx->pipelines, kernel, 0, spec, &p);
    if (status != VKATTN_OK) return status;
    vka_peak_push push = {.iterations = 16, .multiplier = 0.999f, .addend = 0.001f};
    vka_buffer *bufs[1] = {out};
    double ms = 0;
    const uint32_t most = run->ctx->loop_budget ? run->ctx->loop_budget - 1 : 1u << 30;
    if (push.iterations > most) push.iterations = most;
    for (;;) {
        if ((status = time_dispatch(run, p, bufs, &push, PEAK_FMA_GROUPS, &ms)) != VKATTN_OK) return status;
        if (ms >= budget_ms / 4 || push.iterations == most) break;
        uint64_t next = (uint64_t)push.iterations * (ms < budget_ms / 64 ? 8 : 2);
        push.iterations = next < most ? (uint32_t)next : most;
    }
    double best = ms;
    for (int r = 1; r < PEAK_RUNS; r++) {
        if ((status = time_dispatch(run, p, bufs, &push, PEAK_FMA_GROUPS, &ms)) != VKATTN_OK) return status;
        if (ms < best) best = ms;
    }
    double flops = (double)PEAK_FMA_GROUPS * VKA_PEAK_WG_SIZE * push.iterations * PEAK_FLOPS_PER_TRIP;
    *gflops = best > 0 ? flops / (best * 1e6) : 0;
    *best_ms = best;
    return VKATTN_OK;
}

static vkattn_status measure_copy(peak_run *run, vka_buffer *src, vka_buffer *dst, double *gbs,
                                  double *best_ms)
{
    const vka_pipeline *p;
    uint32_t spec[VKA_MAX_SPEC] = {[VKA_SPEC_WG_SIZE] = VKA_PEAK_WG_SIZE};
    vkattn_status status = vka_pipeline_get(&run->ctx->dev, &run->ctx->pipelines, VKA_KERNEL_PEAK_COPY, 0, spec, &p);
    if (status != VKATTN_OK) return status;
    vka_peak_push push = {.count = (uint32_t)(src->size / 16)};
    vka_buffer *bufs[2] = {src, dst};
    double best = 0, ms;
    for (int r = 0; r <= PEAK_RUNS; r++) { /* run 0 warms up (first touch of the pages) */
        if ((status = time_dispatch(run, p, bufs, &push, PEAK_COPY_GROUPS, &ms)) != VKATTN_OK) return status;
        if (r == 1 || (r > 1 && ms < best)) best = ms;
    }
    *gbs = best > 0 ? 2.0 * (double)push.count * 16 / (best * 1e6) : 0;
    *best_ms = best;
    return VKATTN_OK;
}

static vkattn_status measure_peak(vkattn_context *ctx, double seconds, vkattn_peak *out)
{
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status != VKATTN_OK) return status;
    if (!out) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_measure_peak: out is NULL");
    if (!ctx->dev.caps.timestamps)
        return vka_fail(&ctx->dev, VKATTN_ERROR_UNSUPPORTED, "device \"%s\" has no timestamps on its compute queue",
                        ctx->dev.info.name);
    double budget_ms = (seconds > 0 ? seconds : 1.0) * 1e3 / 3;

    peak_run run = {ctx, VK_NULL_HANDLE, VK_NULL_HANDLE};
    vka_buffer results = {0}, src = {0}, dst = {0};
    vkattn_peak peak = {0};
    VKA_TRY(vka_descriptor_pool_create(&ctx->dev, 1, &run.pool));
    VkQueryPoolCreateInfo queries = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 2};
    VKA_VK(&ctx->dev, ctx->dev.vk.vkCreateQueryPool(ctx->dev.device, &queries, NULL, &run.queries));

    VKA_TRY(vka_buffer_create(&ctx->dev, (VkDeviceSize)PEAK_FMA_GROUPS * VKA_PEAK_WG_SIZE * 16, VKA_MEMORY_DEVICE, "peak results", &results));
    VKA_TRY(measure_fma(&run, VKA_KERNEL_PEAK_FMA_F32, &results, budget_ms, &peak.fp32_gflops, &peak.fp32_ms));
    if (ctx->dev.info.shader_float16)
        VKA_TRY(measure_fma(&run, VKA_KERNEL_PEAK_FMA_F16, &results, budget_ms / 2, &peak.fp16_gflops, &peak.fp16_ms));
    /* Buffers well past any cache: 64 MiB each, or the range if smaller; a run of under a quarter
     * of a second gets smaller ones (seconds x 256 MiB, at least 1 MiB), whose figure then says
     * more about caches than memory. */
    VkDeviceSize bytes = (VkDeviceSize)64 << 20;
    if (seconds > 0 && seconds < 0.25) bytes = (VkDeviceSize)(seconds * (256 << 20)) / 16 * 16;
    if (bytes < (1u << 20)) bytes = 1u << 20;
    if (bytes > ctx->dev.info.max_storage_buffer_range) bytes = ctx->dev.info.max_storage_buffer_range / 16 * 16;
    VKA_TRY(vka_buffer_create(&ctx->dev, bytes, VKA_MEMORY_DEVICE, "peak copy source", &src));
    VKA_TRY(vka_buffer_create(&ctx->dev, bytes, VKA_MEMORY_DEVICE, "peak copy destination", &dst));
    VKA_TRY(measure_copy(&run, &src, &dst, &peak.bandwidth_gbs, &peak.bandwidth_ms));
    *out = peak;
fail:
    vka_buffer_destroy(&ctx->dev, &dst);
    vka_buffer_destroy(&ctx->dev, &src);
    vka_buffer_destroy(&ctx->dev, &results);
    if (run.queries) ctx->dev.vk.vkDestroyQueryPool(ctx->dev.device, run.queries, NULL);
    if (run.pool) ctx->dev.vk.vkDestroyDescriptorPool(ctx->dev.device, run.pool, NULL);
    return status;
}

vkattn_status vkattn_measure_peak(vkattn_context *ctx, double seconds, vkattn_peak *out)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(ctx, measure_peak(ctx, seconds, out));
}
