/* Turning a plan into commands: bind, push, dispatch, barrier; into the layer's own command buffer
 * (one submit, one wait) or a command buffer someone else submits (a vkattn_submission, the
 * application's). Descriptor sets come from a per-layer pool that is reset at the start of every
 * forward, which is why a layer runs one forward at a time. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/layer.h"
#include "format/quant.h"
#include "pipeline/dispatch.h"

/* Makes sure the descriptor pool can hand out one set per dispatch of the plan, then resets it. */
static vkattn_status prepare_descriptor_pool(vkattn_layer *layer, const vka_plan *plan)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    uint32_t sets = 0;
    for (uint32_t i = 0; i < plan->step_count; i++) sets += plan->steps[i].kind == VKA_STEP_DISPATCH;
    if (sets == 0) sets = 1;
    if (layer->descriptor_pool && layer->descriptor_sets >= sets) {
        VKA_VK(&ctx->dev, ctx->dev.vk.vkResetDescriptorPool(ctx->dev.device, layer->descriptor_pool, 0));
        return VKATTN_OK;
    }
    if (layer->descriptor_pool) ctx->dev.vk.vkDestroyDescriptorPool(ctx->dev.device, layer->descriptor_pool, NULL);
    layer->descriptor_pool = VK_NULL_HANDLE;
    layer->descriptor_sets = 0;
    uint32_t capacity = sets < 16 ? 16 : sets;
    VKA_TRY(vka_descriptor_pool_create(&ctx->dev, capacity, &layer->descriptor_pool));
    layer->descriptor_sets = capacity;
fail:
    return status;
}

/* Ensures each workspace buffer the plan needs exists and is large enough. */
static vkattn_status reserve_workspace(vkattn_layer *layer, const vka_plan *plan)
{
    for (int r = VKA_FIRST_WORKSPACE_ROLE; r < VKA_ROLE_COUNT; r++) {
        if (!plan->workspace_bytes[r]) continue;
        vkattn_status status = vka_buffer_reserve(&layer->ctx->dev, &layer->buffers[r], plan->workspace_bytes[r],
                                                  VKA_MEMORY_DEVICE, vka_role_name((vka_role)r));
        if (status != VKATTN_OK) return status;
    }
    return VKATTN_OK;
}

/* The texel view a binding is read through: the role's element type, 1 or 4 per texel; uint words
 * for a KV cache pool of a block format. */
static vka_view_format view_format(const vka_plan *plan, vka_role role, uint8_t view)
{
    if (role != VKA_ROLE_NONE && vka_dtype_is_block(plan->role_dtype[role])) return VKA_VIEW_R32UI;
    int half = plan->role_dtype[role] == VKATTN_DTYPE_F16 && role != VKA_ROLE_NONE;
    if (view == VKA_VIEW_VEC4) return half ? VKA_VIEW_RGBA16F : VKA_VIEW_RGBA32F;
    return half ? VKA_VIEW_R16F : VKA_VIEW_R32F;
}

/* One step's descriptor set: each role's buffer, through the plan's window, in the role's view
 * format. */
static vkattn_status make_step_set(vkattn_layer *layer, const vka_plan *plan, const vka_step *step,
                                   const vka_pipeline *pipeline, vka_buffer *const bound[VKA_ROLE_COUNT],
                                   VkDescriptorSet *out)
{
    vka_binding bindings[VKA_MAX_BINDINGS];
    for (uint32_t i = 0; i < step->binding_count; i++) {
        const vka_bind *bind = &step->bind[i];
        /* Unused slots get the placeholder whole; the others the plan's window. */
        int none = bind->role == VKA_ROLE_NONE;
        bindings[i] = (vka_binding){bound[bind->role], none ? 0 : bind->offset, none ? 0 : bind->range,
                                    view_format(plan, bind->role, bind->view)};
    }
    return vka_descriptor_set_make(&layer->ctx->dev, layer->descriptor_pool, pipeline, bindings, out);
}

/* Every dispatch step's pipeline (compiled now if new) and descriptor set, so that recording
 * itself cannot fail halfway through someone's command buffer. */
static vkattn_status make_step_sets(vkattn_layer *layer, const vka_plan *plan, vka_buffer *const bound[VKA_ROLE_COUNT])
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    if (layer->step_capacity < plan->step_count) {
        uint32_t n = plan->step_count;
        VkDescriptorSet *sets = vka_realloc(&ctx->dev.faults, layer->step_sets, n * sizeof *sets);
        if (sets) layer->step_sets = sets;
        const vka_pipeline **pipes = sets ? vka_realloc(&ctx->dev.faults, layer->step_pipelines, n * sizeof *pipes) : NULL;
        if (pipes) layer->step_pipelines = pipes;
        if (!sets || !pipes) return vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory recording a forward");
        layer->step_capacity = n;
    }
    for (uint32_t i = 0; i < plan->step_count; i++) {
        const vka_step *step = &plan->steps[i];
        if (step->kind != VKA_STEP_DISPATCH) continue;
        VKA_TRY(vka_pipeline_get(&ctx->dev, &ctx->pipelines, step->kernel, step->f16_out, step->spec,
                                 &layer->step_pipelines[i]));
        VKA_TRY(make_step_set(layer, plan, step, layer->step_pipelines[i], bound, &layer->step_sets[i]));
    }
fail:
    return status;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* One timestamp before the first step and one after each: step k took ts[k+1] - ts[k]. */
static vkattn_status prepare_query_pool(vkattn_layer *layer, uint32_t queries)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    if (layer->query_pool && layer->query_capacity >= queries) return VKATTN_OK;
    if (layer->query_pool) ctx->dev.vk.vkDestroyQueryPool(ctx->dev.device, layer->query_pool, NULL);
    layer->query_pool = VK_NULL_HANDLE;
    layer->query_capacity = 0;
    VkQueryPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = queries,
    };
    VKA_VK(&ctx->dev, ctx->dev.vk.vkCreateQueryPool(ctx->dev.device, &info, NULL, &layer->query_pool));
    layer->query_capacity = queries;
fail:
    return status;
}

/* Reads the timestamps after the fence: each step's time into layer->step_times and its stage's
 * sum. Space first, so that a failure leaves the last forward's times as they were. */
static vkattn_status read_timestamps(vkattn_layer *layer, const vka_plan *plan, vkattn_forward_stats *stats)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    uint32_t n = plan->step_count + 1;
    if (layer->ticks_capacity < n) {
        uint64_t *bigger = vka_realloc(&ctx->dev.faults, layer->ticks, n * sizeof *bigger);
        if (!bigger) return vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory reading timestamps");
        layer->ticks = bigger;
        layer->ticks_capacity = n;
    }
    if (layer->step_times_capacity < plan->step_count) {
        vkattn_step_time *bigger = vka_realloc(&ctx->dev.faults, layer->step_times, plan->step_count * sizeof *bigger);
        if (!bigger) return vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory reading timestamps");
        layer->step_times = bigger;
        layer->step_times_capacity = plan->step_count;
    }
    uint64_t *ticks = layer->ticks;
    VKA_VK(&ctx->dev, ctx->dev.vk.vkGetQueryPoolResults(ctx->dev.device, layer->query_pool, 0, n, n * sizeof *ticks,
                                                        ticks, sizeof *ticks,
                                                        VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    for (uint32_t k = 0; k < plan->step_count; k++) {
        const vka_step *step = &plan->steps[k];
        const double ms = vka_ticks_ms(&ctx->dev, ticks[k], ticks[k + 1]);
        layer->step_times[k] = (vkattn_step_time){vka_step_name(step), step->stage, ms};
        stats->stage_ms[step->stage] += ms;
    }
    layer->step_time_count = plan->step_count;
    stats->gpu_ms = vka_ticks_ms(&ctx->dev, ticks[0], ticks[n - 1]);
    stats->timed = 1;
fail:
    return status;
}

/* Copies regions (in elements of the destination) from bind[0] to bind[1]. */
static void record_copy(vkattn_layer *layer, VkCommandBuffer cmd, const vka_plan *plan, const vka_step *step,
                        vka_buffer *const bound[VKA_ROLE_COUNT])
{
    VkBufferCopy regions[8];
    vka_role src = step->bind[0].role, dst = step->bind[1].role;
    uint64_t esize = vkattn_dtype_size(plan->role_dtype[dst]);
    for (uint32_t done = 0; done < step->copy_count;) {
        uint32_t n = 0;
        for (; n < 8 && done + n < step->copy_count; n++) {
            const vka_copy *c = &plan->copies[step->copy_first + done + n];
            regions[n] = (VkBufferCopy){bound[src]->base + c->src_offset * esize, bound[dst]->base + c->dst_offset * esize,
                                        c->count * esize};
        }
        layer->ctx->dev.vk.vkCmdCopyBuffer(cmd, bound[src]->buffer, bound[dst]->buffer, n, regions);
        done += n;
    }
}

/* Records the plan's steps into `cmd` (already begun), with a timestamp around each when timed.
 * Everything that can fail happened in prepare(). */
static void record_plan(vkattn_layer *layer, VkCommandBuffer cmd, const vka_plan *plan,
                        vka_buffer *const bound[VKA_ROLE_COUNT], int timed)
{
    vkattn_context *ctx = layer->ctx;
    const VkPipelineStageFlagBits after_all = VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
    if (timed) {
        ctx->dev.vk.vkCmdResetQueryPool(cmd, layer->query_pool, 0, plan->step_count + 1);
        ctx->dev.vk.vkCmdWriteTimestamp(cmd, after_all, layer->query_pool, 0);
    }
    for (uint32_t i = 0; i < plan->step_count; i++) {
        const vka_step *step = &plan->steps[i];
        if (step->barrier_before) vka_record_barrier(&ctx->dev, cmd);
        if (step->kind == VKA_STEP_ZERO) {
            const vka_buffer *b = bound[step->bind[0].role];
            ctx->dev.vk.vkCmdFillBuffer(cmd, b->buffer, b->base, b->size, 0);
        } else if (step->kind == VKA_STEP_COPY) {
            record_copy(layer, cmd, plan, step, bound);
        } else if (step->kind == VKA_STEP_WRITE) {
            const vka_buffer *b = bound[step->bind[0].role];
            ctx->dev.vk.vkCmdUpdateBuffer(cmd, b->buffer, b->base, (VkDeviceSize)step->copy_count * 4,
                                          plan->words + step->copy_first);
        } else {
            vka_record_dispatch_set(&ctx->dev, cmd, layer->step_pipelines[i], layer->step_sets[i], &step->push,
                                    step->groups);
        }
        if (timed) ctx->dev.vk.vkCmdWriteTimestamp(cmd, after_all, layer->query_pool, i + 1);
    }
}

/* Plans `p` into the layer and gets what recording it needs ready: the workspace, the descriptor
 * pool and every step's set and pipeline, the query pool when timed, and every role's buffer in
 * `bound` (the caller's tensors, the layer's own buffers, or the placeholder). Starts the stats
 * of the forward. */
static vkattn_status prepare(vkattn_layer *layer, const vka_problem *p, vka_buffer *caller[VKA_ROLE_COUNT],
                             int timed, vka_buffer *bound[VKA_ROLE_COUNT], vkattn_forward_stats *stats)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    VKA_TRY(vka_context_plan(ctx, p, &layer->plan));
    VKA_TRY(reserve_workspace(layer, &layer->plan));
    for (int r = 0; r < VKA_ROLE_COUNT; r++) {
        vka_buffer *b = r < VKA_FIRST_LAYER_ROLE ? caller[r] : &layer->buffers[r];
        bound[r] = b && b->buffer ? b : &ctx->dummy;
    }
    for (uint32_t i = 0; i < layer->plan.step_count; i++) {
        const vka_step *step = &layer->plan.steps[i];
        for (uint32_t j = 0; j < step->binding_count; j++) {
            vka_role role = step->bind[j].role;
            if (role != VKA_ROLE_NONE && bound[role] == &ctx->dummy)
                return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "internal: stage %s needs buffer %s, which is missing",
                                vkattn_stage_name(step->stage), vka_role_name(role));
        }
    }
    VKA_TRY(prepare_descriptor_pool(layer, &layer->plan));
    VKA_TRY(make_step_sets(layer, &layer->plan, bound));
    if (timed) VKA_TRY(prepare_query_pool(layer, layer->plan.step_count + 1));
    *stats = (vkattn_forward_stats){.path = layer->plan.path, .chunks = layer->plan.chunks,
                                    .workspace_bytes = vka_plan_workspace_total(&layer->plan)};
    for (uint32_t i = 0; i < layer->plan.step_count; i++) stats->dispatches += layer->plan.steps[i].kind == VKA_STEP_DISPATCH;
fail:
    return status;
}

vkattn_status vka_layer_run(vkattn_layer *layer, const vka_problem *p, vka_buffer *caller[VKA_ROLE_COUNT])
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    vka_buffer *bound[VKA_ROLE_COUNT];
    vkattn_forward_stats stats;
    VKA_TRY(prepare(layer, p, caller, layer->timing, bound, &stats));
    double t0 = now_ms();
    VKA_TRY(vka_commands_begin(&ctx->dev, &layer->commands));
    record_plan(layer, layer->commands.cmd, &layer->plan, bound, layer->timing);
    double t1 = now_ms();
    VKA_TRY(vka_commands_submit_wait(&ctx->dev, &layer->commands, "a forward"));
    stats.submits = 1;
    stats.record_ms = t1 - t0;
    stats.submit_wait_ms = now_ms() - t1;
    if (layer->timing) VKA_TRY(read_timestamps(layer, &layer->plan, &stats));
    layer->stats = stats;
fail:
    return status;
}

vkattn_status vka_layer_record(vkattn_layer *layer, const vka_problem *p, vka_buffer *caller[VKA_ROLE_COUNT],
                               VkCommandBuffer cmd, vkattn_forward_stats *stats)
{
    vka_buffer *bound[VKA_ROLE_COUNT];
    vkattn_status status = prepare(layer, p, caller, 0, bound, stats);
    if (status != VKATTN_OK) return status;
    double t0 = now_ms();
    record_plan(layer, cmd, &layer->plan, bound, 0);
    stats->record_ms = now_ms() - t0;
    return VKATTN_OK;
}
