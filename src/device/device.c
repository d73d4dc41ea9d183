/* The device core's shared policy: Vulkan results to statuses, device loss, waits, and the
 * command lanes (pool, buffer, fence) every submitter uses. */
#include "device/device.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* How long any wait for the device may take before vkattn gives the device up (ns). */
#define VKA_FENCE_TIMEOUT_NS (600ull * 1000 * 1000 * 1000)

const char *vka_vk_result_name(VkResult result)
{
    switch (result) {
#define VKA_RESULT_CASE_(r)                                                                        \
    case r: return #r;
        VKA_RESULT_CASE_(VK_SUCCESS)
        VKA_RESULT_CASE_(VK_NOT_READY)
        VKA_RESULT_CASE_(VK_TIMEOUT)
        VKA_RESULT_CASE_(VK_INCOMPLETE)
        VKA_RESULT_CASE_(VK_ERROR_OUT_OF_HOST_MEMORY)
        VKA_RESULT_CASE_(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        VKA_RESULT_CASE_(VK_ERROR_INITIALIZATION_FAILED)
        VKA_RESULT_CASE_(VK_ERROR_DEVICE_LOST)
        VKA_RESULT_CASE_(VK_ERROR_MEMORY_MAP_FAILED)
        VKA_RESULT_CASE_(VK_ERROR_LAYER_NOT_PRESENT)
        VKA_RESULT_CASE_(VK_ERROR_EXTENSION_NOT_PRESENT)
        VKA_RESULT_CASE_(VK_ERROR_FEATURE_NOT_PRESENT)
        VKA_RESULT_CASE_(VK_ERROR_INCOMPATIBLE_DRIVER)
        VKA_RESULT_CASE_(VK_ERROR_TOO_MANY_OBJECTS)
        VKA_RESULT_CASE_(VK_ERROR_FORMAT_NOT_SUPPORTED)
        VKA_RESULT_CASE_(VK_ERROR_FRAGMENTED_POOL)
        VKA_RESULT_CASE_(VK_ERROR_OUT_OF_POOL_MEMORY)
        VKA_RESULT_CASE_(VK_ERROR_INVALID_SHADER_NV)
#undef VKA_RESULT_CASE_
    default: return "VkResult (unnamed)";
    }
}

vkattn_status vka_status_of_result(VkResult result)
{
    switch (result) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL: return VKATTN_ERROR_OUT_OF_DEVICE_MEMORY;
    case VK_ERROR_DEVICE_LOST: return VKATTN_ERROR_DEVICE_LOST;
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER: return VKATTN_ERROR_UNSUPPORTED;
    default: return VKATTN_ERROR_VULKAN;
    }
}

vkattn_status vka_vk_fail(vka_device *dev, VkResult result, const char *call, const char *file, int line)
{
    if (result == VK_ERROR_DEVICE_LOST) dev->lost = 1;
    /* The call text can be long; keep its function name only. */
    int name_len = (int)strcspn(call, "(");
    return vka_error_set(&dev->error, vka_status_of_result(result), "%.*s failed: %s (%s:%d)", name_len, call,
                         vka_vk_result_name(result), file, line);
}

vkattn_status vka_fail(vka_device *dev, vkattn_status status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(dev->error.message, sizeof dev->error.message, fmt, args);
    va_end(args);
    dev->error.status = status;
    return status;
}

VkResult vka_injected_result(const vka_device *dev)
{
    return dev->faults.vk_result ? (VkResult)dev->faults.vk_result : VK_ERROR_OUT_OF_DEVICE_MEMORY;
}

int vka_validation_message_ignored(const VkDebugUtilsMessengerCallbackDataEXT *data)
{
    return data && data->pMessageIdName && strcmp(data->pMessageIdName, "WARNING-vkGetDeviceProcAddr-device") == 0;
}

vkattn_status vka_check_alive(vka_device *dev)
{
    if (!dev->lost) return VKATTN_OK;
    return vka_fail(dev, VKATTN_ERROR_DEVICE_LOST,
                    "the Vulkan device of this context was lost; destroy the context and create a new one");
}

vkattn_status vka_wait_fence(vka_device *dev, VkFence fence, const char *what)
{
    VkResult r = dev->vk.vkWaitForFences(dev->device, 1, &fence, VK_TRUE, VKA_FENCE_TIMEOUT_NS);
    /* An injected failure comes after the real wait: the work has finished, as after a real
     * device loss that is reported late. */
    if (r == VK_SUCCESS && vka_fault_vk(&dev->faults)) r = vka_injected_result(dev);
    if (r == VK_TIMEOUT) {
        dev->lost = 1;
        return vka_fail(dev, VKATTN_ERROR_DEVICE_LOST, "%s did not finish within %llu s; the context is unusable",
                        what, VKA_FENCE_TIMEOUT_NS / 1000000000ull);
    }
    if (r != VK_SUCCESS) return vka_vk_fail(dev, r, "vkWaitForFences", __FILE__, __LINE__);
    return VKATTN_OK;
}

double vka_ticks_ms(const vka_device *dev, uint64_t t0, uint64_t t1)
{
    uint32_t bits = dev->caps.timestamp_valid_bits;
    uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    return (double)(((t1 & mask) - (t0 & mask)) & mask) * dev->info.timestamp_period_ns * 1e-6;
}

vkattn_status vka_commands_create(vka_device *dev, vka_commands *out)
{
    vkattn_status status = VKATTN_OK;
    vka_commands c = {0};
    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = dev->queue_family,
    };
    VKA_VK(dev, dev->vk.vkCreateCommandPool(dev->device, &pool, NULL, &c.pool));
    VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = c.pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    VKA_VK(dev, dev->vk.vkAllocateCommandBuffers(dev->device, &alloc, &c.cmd));
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VKA_VK(dev, dev->vk.vkCreateFence(dev->device, &fence, NULL, &c.fence));
    *out = c;
    return VKATTN_OK;
fail:
    vka_commands_destroy(dev, &c);
    return status;
}

void vka_commands_destroy(vka_device *dev, vka_commands *c)
{
    if (c->fence) dev->vk.vkDestroyFence(dev->device, c->fence, NULL);
    if (c->pool) dev->vk.vkDestroyCommandPool(dev->device, c->pool, NULL); /* frees the buffer */
    memset(c, 0, sizeof *c);
}

vkattn_status vka_commands_begin(vka_device *dev, vka_commands *c)
{
    /* After a loss the last submission's fence may never signal: its command buffer stays pending
     * and must not be reset or recorded again. */
    vkattn_status status = vka_check_alive(dev);
    if (status != VKATTN_OK) return status;
    VKA_VK(dev, dev->vk.vkResetCommandBuffer(c->cmd, 0));
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    VKA_VK(dev, dev->vk.vkBeginCommandBuffer(c->cmd, &begin));
fail:
    return status;
}

vkattn_status vka_queue_submit(vka_device *dev, const VkSubmitInfo *submit, VkFence fence)
{
    vkattn_status status = VKATTN_OK;
    /* An application that shares its queue serialises every thread's submits with its own lock. */
    if (dev->queue_lock.lock) dev->queue_lock.lock(dev->queue_lock.user);
    VkResult r = vka_fault_vk(&dev->faults) ? vka_injected_result(dev) : dev->vk.vkQueueSubmit(dev->queue, 1, submit, fence);
    if (dev->queue_lock.unlock) dev->queue_lock.unlock(dev->queue_lock.user);
    if (r != VK_SUCCESS) status = vka_vk_fail(dev, r, "vkQueueSubmit", __FILE__, __LINE__);
    return status;
}

vkattn_status vka_commands_submit(vka_device *dev, vka_commands *c)
{
    vkattn_status status = VKATTN_OK;
    VKA_VK(dev, dev->vk.vkEndCommandBuffer(c->cmd));
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &c->cmd,
    };
    VKA_VK(dev, dev->vk.vkResetFences(dev->device, 1, &c->fence));
    VKA_TRY(vka_queue_submit(dev, &submit, c->fence));
fail:
    return status;
}

vkattn_status vka_commands_submit_wait(vka_device *dev, vka_commands *c, const char *what)
{
    vkattn_status status = vka_commands_submit(dev, c);
    return status == VKATTN_OK ? vka_wait_fence(dev, c->fence, what) : status;
}
