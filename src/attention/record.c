/* Turning a plan into one command buffer: bind, push, dispatch, barrier; then one submit and one
 * wait. Descriptor sets come from a per-layer pool that is reset at the start of every forward. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "attention/layer.h"

static vka_plan_limits plan_limits(const vkattn_context *ctx)
{
    vka_plan_limits limits = {0};
    limits.max_storage_buffer_range = ctx->caps.max_storage_buffer_range;
    /* A single buffer must also fit one allocation. */
    if (ctx->caps.max_memory_allocation_size < limits.max_storage_buffer_range)
        limits.max_storage_buffer_range = ctx->caps.max_memory_allocation_size;
    for (int i = 0; i < 3; i++) limits.max_group_count[i] = ctx->caps.props.limits.maxComputeWorkGroupCount[i];
    limits.max_texel_elements = ctx->caps.props.limits.maxTexelBufferElements;
    limits.texel_offset_alignment = ctx->caps.props.limits.minTexelBufferOffsetAlignment;
    limits.storage_offset_alignment = ctx->caps.props.limits.minStorageBufferOffsetAlignment;
    limits.max_buffer_bytes = ctx->caps.max_memory_allocation_size;
    limits.loop_budget = ctx->loop_budget;
    limits.profile = ctx->profile;
    limits.faults = (vka_faults *)&ctx->faults;
    /* Keep the unfused score buffer moderate on devices with huge ranges: chunks cost a few
     * dispatches, a multi-GiB workspace costs memory the application may need. */
    limits.scores_budget_bytes = (uint64_t)512 << 20;
    /* The fused path's split-key states: enough for a long prefill's parts, far below the scores. */
    limits.state_budget_bytes = (uint64_t)64 << 20;
    return limits;
}

/* Makes sure the descriptor pool can hand out one set per dispatch of the plan, then resets it. */
static vkattn_status prepare_descriptor_pool(vkattn_layer *layer, const vka_plan *plan)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    uint32_t sets = 0;
    for (uint32_t i = 0; i < plan->step_count; i++) sets += plan->steps[i].kind == VKA_STEP_DISPATCH;
    if (sets == 0) sets = 1;
    if (layer->descriptor_pool && layer->descriptor_sets >= sets) {
        VKA_VK(ctx, ctx->vk.vkResetDescriptorPool(ctx->device, layer->descriptor_pool, 0));
        return VKATTN_OK;
    }
    if (layer->descriptor_pool) ctx->vk.vkDestroyDescriptorPool(ctx->device, layer->descriptor_pool, NULL);
    layer->descriptor_pool = VK_NULL_HANDLE;
    layer->descriptor_sets = 0;
    uint32_t capacity = sets < 16 ? 16 : sets;
    VkDescriptorPoolSize sizes[] = {
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, capacity * VKA_MAX_BINDINGS},
        {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, capacity * VKA_MAX_BINDINGS},
    };
    VkDescriptorPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = capacity,
        .poolSizeCount = 2,
        .pPoolSizes = sizes,
    };
    VKA_VK(ctx, ctx->vk.vkCreateDescriptorPool(ctx->device, &info, NULL, &layer->descriptor_pool));
    layer->descriptor_sets = capacity;
fail:
    return status;
}

/* Ensures each workspace buffer the plan needs exists and is large enough. */
static vkattn_status reserve_workspace(vkattn_layer *layer, const vka_plan *plan)
{
    for (int r = VKA_FIRST_WORKSPACE_ROLE; r < VKA_ROLE_COUNT; r++) {
        if (!plan->workspace_bytes[r]) continue;
        vkattn_status status = vka_buffer_reserve(layer->ctx, &layer->buffers[r], plan->workspace_bytes[r],
                                                  VKA_MEMORY_DEVICE, vka_role_name((vka_role)r));
        if (status != VKATTN_OK) return status;
    }
    return VKATTN_OK;
}

/* Every earlier write (shader or fill) is visible to every later read or write. The unfused
 * stages depend on each other in sequence, so one global memory barrier is exact enough. */
static void record_barrier(vkattn_context *ctx, VkCommandBuffer cmd)
{
    VkMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    ctx->vk.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, NULL, 0, NULL);
}

/* The texel view a binding is read through: the role's element type, 1 or 4 per texel. */
static vka_view_format view_format(const vka_plan *plan, vka_role role, uint8_t view)
{
    int half = plan->role_dtype[role] == VKATTN_DTYPE_F16 && role != VKA_ROLE_NONE;
    if (view == VKA_VIEW_VEC4) return half ? VKA_VIEW_RGBA16F : VKA_VIEW_RGBA32F;
    return half ? VKA_VIEW_R16F : VKA_VIEW_R32F;
}

static vkattn_status record_dispatch(vkattn_layer *layer, const vka_plan *plan, const vka_step *step,
                                     const vka_pipeline *pipeline, vka_buffer *const bound[VKA_ROLE_COUNT])
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    if (step->binding_count != pipeline->bindings.count)
        return vka_fail(ctx, VKATTN_ERROR_VULKAN, "internal: stage %s binds %u buffers, its kernel declares %u",
                        vkattn_stage_name(step->stage), step->binding_count, pipeline->bindings.count);
    VkDescriptorSetAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = layer->descriptor_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &pipeline->set_layout,
    };
    VkDescriptorSet set;
    VKA_VK(ctx, ctx->vk.vkAllocateDescriptorSets(ctx->device, &alloc, &set));
    VkDescriptorBufferInfo infos[VKA_MAX_BINDINGS];
    VkBufferView views[VKA_MAX_BINDINGS];
    VkWriteDescriptorSet writes[VKA_MAX_BINDINGS];
    for (uint32_t i = 0; i < step->binding_count; i++) {
        const vka_bind *bind = &step->bind[i];
        vka_buffer *b = bound[bind->role];
        /* Unused slots get the placeholder whole; the others the plan's window. */
        VkDeviceSize offset = bind->role == VKA_ROLE_NONE ? 0 : bind->offset;
        VkDeviceSize range = bind->role == VKA_ROLE_NONE ? b->size : bind->range;
        VkDescriptorType type = pipeline->bindings.types[i];
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = type,
        };
        if (type == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER || type == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER) {
            vka_view_format format = view_format(plan, bind->role, bind->view);
            if (bind->role == VKA_ROLE_NONE) range = 0;
            VKA_TRY(vka_buffer_view(ctx, b, format, offset, range, &views[i]));
            writes[i].pTexelBufferView = &views[i];
        } else {
            infos[i] = (VkDescriptorBufferInfo){b->buffer, offset, range};
            writes[i].pBufferInfo = &infos[i];
        }
    }
    ctx->vk.vkUpdateDescriptorSets(ctx->device, step->binding_count, writes, 0, NULL);
    VkCommandBuffer cmd = layer->cmd;
    ctx->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->pipeline);
    ctx->vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->layout, 0, 1, &set, 0, NULL);
    ctx->vk.vkCmdPushConstants(cmd, pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pipeline->push_size,
                               &step->push);
    ctx->vk.vkCmdDispatch(cmd, step->groups[0], step->groups[1], step->groups[2]);
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
    if (layer->query_pool) ctx->vk.vkDestroyQueryPool(ctx->device, layer->query_pool, NULL);
    layer->query_pool = VK_NULL_HANDLE;
    layer->query_capacity = 0;
    VkQueryPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = queries,
    };
    VKA_VK(ctx, ctx->vk.vkCreateQueryPool(ctx->device, &info, NULL, &layer->query_pool));
    layer->query_capacity = queries;
fail:
    return status;
}

/* Reads the timestamps after the fence and attributes each step's time to its stage. */
static vkattn_status read_timestamps(vkattn_layer *layer, const vka_plan *plan, vkattn_forward_stats *stats)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    uint32_t n = plan->step_count + 1;
    uint64_t *ticks = vka_malloc(&ctx->faults, n * sizeof *ticks);
    if (!ticks) return vka_fail(ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory reading timestamps");
    VKA_VK(ctx, ctx->vk.vkGetQueryPoolResults(ctx->device, layer->query_pool, 0, n, n * sizeof *ticks, ticks,
                                              sizeof *ticks, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    for (uint32_t k = 0; k < plan->step_count; k++)
        stats->stage_ms[plan->steps[k].stage] += vka_ticks_ms(&ctx->caps, ticks[k], ticks[k + 1]);
    stats->gpu_ms = vka_ticks_ms(&ctx->caps, ticks[0], ticks[n - 1]);
    stats->timed = 1;
fail:
    free(ticks);
    return status;
}

/* Copies regions (in elements of the destination) from bind[0] to bind[1]. */
static vkattn_status record_copy(vkattn_layer *layer, const vka_plan *plan, const vka_step *step,
                                 vka_buffer *const bound[VKA_ROLE_COUNT])
{
    VkBufferCopy regions[8];
    vka_role src = step->bind[0].role, dst = step->bind[1].role;
    uint64_t esize = vkattn_dtype_size(plan->role_dtype[dst]);
    for (uint32_t done = 0; done < step->copy_count;) {
        uint32_t n = 0;
        for (; n < 8 && done + n < step->copy_count; n++) {
            const vka_copy *c = &plan->copies[step->copy_first + done + n];
            regions[n] = (VkBufferCopy){c->src_offset * esize, c->dst_offset * esize, c->count * esize};
        }
        layer->ctx->vk.vkCmdCopyBuffer(layer->cmd, bound[src]->buffer, bound[dst]->buffer, n, regions);
        done += n;
    }
    return VKATTN_OK;
}

static vkattn_status record_plan(vkattn_layer *layer, const vka_plan *plan, vka_buffer *const bound[VKA_ROLE_COUNT])
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    VkCommandBuffer cmd = layer->cmd;
    VKA_VK(ctx, ctx->vk.vkResetCommandBuffer(cmd, 0));
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VKA_VK(ctx, ctx->vk.vkBeginCommandBuffer(cmd, &begin));
    const int timed = layer->profiling;
    const VkPipelineStageFlagBits after_all = VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
    if (timed) {
        ctx->vk.vkCmdResetQueryPool(cmd, layer->query_pool, 0, plan->step_count + 1);
        ctx->vk.vkCmdWriteTimestamp(cmd, after_all, layer->query_pool, 0);
    }
    for (uint32_t i = 0; i < plan->step_count; i++) {
        const vka_step *step = &plan->steps[i];
        if (step->barrier_before) record_barrier(ctx, cmd);
        if (step->kind == VKA_STEP_ZERO) {
            ctx->vk.vkCmdFillBuffer(cmd, bound[step->bind[0].role]->buffer, 0, VK_WHOLE_SIZE, 0);
        } else if (step->kind == VKA_STEP_COPY) {
            VKA_TRY(record_copy(layer, plan, step, bound));
        } else {
            const vka_pipeline *pipeline;
            VKA_TRY(vka_pipeline_get(ctx, step->kernel, step->f16_out, step->spec, &pipeline));
            VKA_TRY(record_dispatch(layer, plan, step, pipeline, bound));
        }
        if (timed) ctx->vk.vkCmdWriteTimestamp(cmd, after_all, layer->query_pool, i + 1);
    }
    VKA_VK(ctx, ctx->vk.vkEndCommandBuffer(cmd));
fail:
    return status;
}

vkattn_status vka_layer_run(vkattn_layer *layer, const vka_problem *p, vka_buffer *caller[VKA_ROLE_COUNT])
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    vka_plan_limits limits = plan_limits(ctx);
    VKA_TRY(vka_plan_build(p, &limits, &layer->plan, &ctx->error));
    VKA_TRY(reserve_workspace(layer, &layer->plan));

    /* Resolve every role to a buffer: the caller's tensors, the layer's own, or the placeholder. */
    vka_buffer *bound[VKA_ROLE_COUNT];
    for (int r = 0; r < VKA_ROLE_COUNT; r++) {
        vka_buffer *b = r < VKA_FIRST_LAYER_ROLE ? caller[r] : &layer->buffers[r];
        bound[r] = b && b->buffer ? b : &ctx->dummy;
    }
    for (uint32_t i = 0; i < layer->plan.step_count; i++) {
        const vka_step *step = &layer->plan.steps[i];
        for (uint32_t j = 0; j < step->binding_count; j++) {
            vka_role role = step->bind[j].role;
            if (role != VKA_ROLE_NONE && bound[role] == &ctx->dummy)
                return vka_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "internal: stage %s needs buffer %s, which is missing",
                                vkattn_stage_name(step->stage), vka_role_name(role));
        }
    }

    VKA_TRY(prepare_descriptor_pool(layer, &layer->plan));
    if (layer->profiling) VKA_TRY(prepare_query_pool(layer, layer->plan.step_count + 1));
    vkattn_forward_stats stats = {.path = layer->plan.path, .submits = 1, .chunks = layer->plan.chunks,
                                  .workspace_bytes = vka_plan_workspace_total(&layer->plan)};
    for (uint32_t i = 0; i < layer->plan.step_count; i++) stats.dispatches += layer->plan.steps[i].kind == VKA_STEP_DISPATCH;

    double t0 = now_ms();
    VKA_TRY(record_plan(layer, &layer->plan, bound));
    double t1 = now_ms();
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &layer->cmd,
    };
    VKA_VK(ctx, ctx->vk.vkResetFences(ctx->device, 1, &layer->fence));
    VKA_VK(ctx, ctx->vk.vkQueueSubmit(ctx->queue, 1, &submit, layer->fence));
    VKA_TRY(vka_wait_fence(ctx, layer->fence, "a forward"));
    stats.record_ms = t1 - t0;
    stats.submit_wait_ms = now_ms() - t1;
    if (layer->profiling) VKA_TRY(read_timestamps(layer, &layer->plan, &stats));
    layer->stats = stats;
fail:
    return status;
}
