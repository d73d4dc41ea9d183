/* Turning a plan into one command buffer: bind, push, dispatch, barrier; then one submit and one
 * wait. Descriptor sets come from a per-layer pool that is reset at the start of every forward. */
#include <stdlib.h>
#include <string.h>

#include "attention/layer.h"

static vka_plan_limits plan_limits(const vkattn_context *ctx)
{
    vka_plan_limits limits = {0};
    limits.max_storage_buffer_range = ctx->caps.max_storage_buffer_range;
    /* A single buffer must also fit one allocation. */
    if (ctx->caps.max_memory_allocation_size < limits.max_storage_buffer_range)
        limits.max_storage_buffer_range = ctx->caps.max_memory_allocation_size;
    for (int i = 0; i < 3; i++) limits.max_group_count[i] = ctx->caps.props.limits.maxComputeWorkGroupCount[i];
    /* Keep the unfused score buffer moderate on devices with huge ranges: chunks cost a few
     * dispatches, a multi-GiB workspace costs memory the application may need. */
    limits.scores_budget_bytes = (uint64_t)512 << 20;
    return limits;
}

static const char *role_name(vka_role role)
{
    static const char *const names[VKA_ROLE_COUNT] = {
        "none",      "query",     "key",       "value",   "key_padding_mask", "valid_lens", "attn_mask",
        "output",    "weights",   "w_in",      "w_k",     "w_v",              "b_in",       "w_out",
        "b_out",     "extra_k",   "extra_v",   "qkv",     "k_proj",           "v_proj",     "scores",
        "ctx",
    };
    return (unsigned)role < VKA_ROLE_COUNT ? names[role] : "unknown";
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
                                                  VKA_MEMORY_DEVICE, role_name((vka_role)r));
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

static vkattn_status record_dispatch(vkattn_layer *layer, const vka_step *step, const vka_pipeline *pipeline,
                                     const vka_buffer *const bound[VKA_ROLE_COUNT])
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    if (step->binding_count != pipeline->bindings.count)
        return vka_fail(ctx, VKATTN_ERROR_VULKAN, "internal: stage %s binds %u buffers, its kernel declares %u",
                        vka_stage_name(step->stage), step->binding_count, pipeline->bindings.count);
    VkDescriptorSetAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = layer->descriptor_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &pipeline->set_layout,
    };
    VkDescriptorSet set;
    VKA_VK(ctx, ctx->vk.vkAllocateDescriptorSets(ctx->device, &alloc, &set));
    VkDescriptorBufferInfo infos[VKA_MAX_BINDINGS];
    VkWriteDescriptorSet writes[VKA_MAX_BINDINGS];
    for (uint32_t i = 0; i < step->binding_count; i++) {
        const vka_buffer *b = bound[step->bindings[i]];
        infos[i] = (VkDescriptorBufferInfo){b->buffer, 0, b->size};
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = pipeline->bindings.types[i],
            .pBufferInfo = &infos[i],
        };
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

static vkattn_status record_plan(vkattn_layer *layer, const vka_plan *plan, const vka_buffer *const bound[VKA_ROLE_COUNT])
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
    for (uint32_t i = 0; i < plan->step_count; i++) {
        const vka_step *step = &plan->steps[i];
        if (step->barrier_before) record_barrier(ctx, cmd);
        if (step->kind == VKA_STEP_ZERO) {
            ctx->vk.vkCmdFillBuffer(cmd, bound[step->bindings[0]]->buffer, 0, VK_WHOLE_SIZE, 0);
            continue;
        }
        const vka_pipeline *pipeline;
        VKA_TRY(vka_pipeline_get(ctx, step->kernel, step->spec, &pipeline));
        VKA_TRY(record_dispatch(layer, step, pipeline, bound));
    }
    VKA_VK(ctx, ctx->vk.vkEndCommandBuffer(cmd));
fail:
    return status;
}

vkattn_status vka_layer_run(vkattn_layer *layer, const vka_problem *p, const vka_buffer *caller[VKA_ROLE_COUNT])
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = VKATTN_OK;
    vka_plan_limits limits = plan_limits(ctx);
    VKA_TRY(vka_plan_build(p, &limits, &layer->plan, &ctx->error));
    VKA_TRY(reserve_workspace(layer, &layer->plan));

    /* Resolve every role to a buffer: the caller's tensors, the layer's own, or the placeholder. */
    const vka_buffer *bound[VKA_ROLE_COUNT];
    for (int r = 0; r < VKA_ROLE_COUNT; r++) {
        const vka_buffer *b = r < VKA_ROLE_W_IN ? caller[r] : &layer->buffers[r];
        bound[r] = b && b->buffer ? b : &ctx->dummy;
    }
    for (uint32_t i = 0; i < layer->plan.step_count; i++) {
        const vka_step *step = &layer->plan.steps[i];
        for (uint32_t j = 0; j < step->binding_count; j++) {
            vka_role role = step->bindings[j];
            if (role != VKA_ROLE_NONE && bound[role] == &ctx->dummy)
                return vka_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "internal: stage %s needs buffer %s, which is missing",
                                vka_stage_name(step->stage), role_name(role));
        }
    }

    VKA_TRY(prepare_descriptor_pool(layer, &layer->plan));
    VKA_TRY(record_plan(layer, &layer->plan, bound));
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &layer->cmd,
    };
    VKA_VK(ctx, ctx->vk.vkResetFences(ctx->device, 1, &layer->fence));
    VKA_VK(ctx, ctx->vk.vkQueueSubmit(ctx->queue, 1, &submit, layer->fence));
    VKA_TRY(vka_wait_fence(ctx, layer->fence, "a forward"));
fail:
    return status;
}
