/* Copies between host memory and buffers the host cannot map, through the context's staging
 * buffer and its one transfer command buffer (each copy is submitted and waited for). */
#include <string.h>

#include "device/context.h"
#include "memory/buffer.h"

/* Chunk size of staged copies: bounds the staging buffer however large the tensor. */
#define VKA_STAGING_CHUNK ((VkDeviceSize)32 << 20)
/* How long any wait for the device may take before vkattn gives the device up (ns). */
#define VKA_FENCE_TIMEOUT_NS (600ull * 1000 * 1000 * 1000)

vkattn_status vka_wait_fence(vkattn_context *ctx, VkFence fence, const char *what)
{
    VkResult r = ctx->vk.vkWaitForFences(ctx->device, 1, &fence, VK_TRUE, VKA_FENCE_TIMEOUT_NS);
    /* An injected failure comes after the real wait: the work has finished, as after a real
     * device loss that is reported late. */
    if (r == VK_SUCCESS && vka_fault_vk(&ctx->faults)) r = vka_injected_result(ctx);
    if (r == VK_TIMEOUT) {
        ctx->device_lost = 1;
        return vka_fail(ctx, VKATTN_ERROR_DEVICE_LOST, "%s did not finish within %llu s; the context is unusable",
                        what, VKA_FENCE_TIMEOUT_NS / 1000000000ull);
    }
    if (r != VK_SUCCESS) return vka_vk_fail(ctx, r, "vkWaitForFences", __FILE__, __LINE__);
    return VKATTN_OK;
}

typedef struct copy_region {
    VkBuffer src, dst;
    VkDeviceSize src_offset, dst_offset, size;
    int fill_zero; /* vkCmdFillBuffer(dst) instead of a copy */
} copy_region;

vkattn_status vka_transfer_begin(vkattn_context *ctx, VkCommandBuffer *cmd)
{
    vkattn_status status = VKATTN_OK;
    VKA_VK(ctx, ctx->vk.vkResetCommandBuffer(ctx->transfer_cmd, 0));
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VKA_VK(ctx, ctx->vk.vkBeginCommandBuffer(ctx->transfer_cmd, &begin));
    *cmd = ctx->transfer_cmd;
fail:
    return status;
}

vkattn_status vka_transfer_submit_wait(vkattn_context *ctx, const char *what)
{
    vkattn_status status = VKATTN_OK;
    VKA_VK(ctx, ctx->vk.vkEndCommandBuffer(ctx->transfer_cmd));
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &ctx->transfer_cmd,
    };
    VKA_VK(ctx, ctx->vk.vkResetFences(ctx->device, 1, &ctx->transfer_fence));
    VKA_VK(ctx, ctx->vk.vkQueueSubmit(ctx->queue, 1, &submit, ctx->transfer_fence));
    VKA_TRY(vka_wait_fence(ctx, ctx->transfer_fence, what));
fail:
    return status;
}

static vkattn_status submit_copy(vkattn_context *ctx, const copy_region *region)
{
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vkattn_status status = vka_transfer_begin(ctx, &cmd);
    if (status != VKATTN_OK) return status;
    if (region->fill_zero) {
        ctx->vk.vkCmdFillBuffer(cmd, region->dst, 0, VK_WHOLE_SIZE, 0);
    } else {
        VkBufferCopy copy = {region->src_offset, region->dst_offset, region->size};
        ctx->vk.vkCmdCopyBuffer(cmd, region->src, region->dst, 1, &copy);
    }
    return vka_transfer_submit_wait(ctx, "a buffer copy");
}

vkattn_status vka_buffer_fill_zero(vkattn_context *ctx, vka_buffer *buffer)
{
    if (buffer->mapped) {
        memset(buffer->mapped, 0, (size_t)buffer->size);
        return VKATTN_OK;
    }
    copy_region region = {.dst = buffer->buffer, .fill_zero = 1};
    return submit_copy(ctx, &region);
}

static vkattn_status reserve_staging(vkattn_context *ctx, VkDeviceSize bytes)
{
    VkDeviceSize want = bytes < VKA_STAGING_CHUNK ? bytes : VKA_STAGING_CHUNK;
    return vka_buffer_reserve(ctx, &ctx->staging, want, VKA_MEMORY_STAGING, "the staging buffer");
}

vkattn_status vka_buffer_write(vkattn_context *ctx, vka_buffer *buffer, VkDeviceSize offset, const void *src,
                               size_t bytes)
{
    if (buffer->mapped) {
        memcpy((char *)buffer->mapped + offset, src, bytes);
        return VKATTN_OK;
    }
    vkattn_status status = reserve_staging(ctx, bytes);
    for (size_t done = 0; status == VKATTN_OK && done < bytes;) {
        size_t n = bytes - done < ctx->staging.size ? bytes - done : (size_t)ctx->staging.size;
        memcpy(ctx->staging.mapped, (const char *)src + done, n);
        copy_region region = {ctx->staging.buffer, buffer->buffer, 0, offset + done, n, 0};
        status = submit_copy(ctx, &region);
        done += n;
    }
    return status;
}

vkattn_status vka_buffer_read(vkattn_context *ctx, const vka_buffer *buffer, VkDeviceSize offset, void *dst,
                              size_t bytes)
{
    if (buffer->mapped) {
        memcpy(dst, (const char *)buffer->mapped + offset, bytes);
        return VKATTN_OK;
    }
    vkattn_status status = reserve_staging(ctx, bytes);
    for (size_t done = 0; status == VKATTN_OK && done < bytes;) {
        size_t n = bytes - done < ctx->staging.size ? bytes - done : (size_t)ctx->staging.size;
        copy_region region = {buffer->buffer, ctx->staging.buffer, offset + done, 0, n, 0};
        status = submit_copy(ctx, &region);
        if (status == VKATTN_OK) memcpy((char *)dst + done, ctx->staging.mapped, n);
        done += n;
    }
    return status;
}
