/* The context: one Vulkan instance, one device, one compute queue, and what they are shared by
 * (pipelines, staging memory, the message of the last error). */
#ifndef VKA_CONTEXT_H
#define VKA_CONTEXT_H

#define VK_NO_PROTOTYPES
#include <volk.h>

#include "vkattn.h"
#include "common/alloc.h"
#include "common/error.h"
#include "device/loader.h"
#include "device/quirks.h"
#include "memory/buffer.h"
#include "pipeline/pipeline_cache.h"

/* What the plan and the memory code need to know about the device. */
typedef struct vka_device_caps {
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory;
    uint64_t max_storage_buffer_range;
    uint64_t max_memory_allocation_size;
    uint32_t subgroup_size;
    int storage_16bit;
    int unified_memory; /* device-local memory is also host-visible and coherent (CPU, integrated) */
    int timestamps;     /* the queue family can write timestamps */
    uint32_t timestamp_valid_bits;
    float timestamp_period_ns;
} vka_device_caps;

/* Milliseconds between two timestamps, counting only the valid bits (so a wrap is handled). */
static inline double vka_ticks_ms(const vka_device_caps *caps, uint64_t t0, uint64_t t1)
{
    uint64_t mask = caps->timestamp_valid_bits >= 64 ? ~0ull : (1ull << caps->timestamp_valid_bits) - 1;
    return (double)(((t1 & mask) - (t0 & mask)) & mask) * caps->timestamp_period_ns * 1e-6;
}

struct vkattn_context {
    vka_instance_fns ifn;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice physical;
    VkDevice device;
    struct VolkDeviceTable vk; /* every device-level call goes through this table */
    VkQueue queue;
    uint32_t queue_family;
    vka_device_caps caps;
    vkattn_device_info info;

    /* Host <-> device copies for memory the host cannot map. */
    VkCommandPool transfer_pool;
    VkCommandBuffer transfer_cmd;
    VkFence transfer_fence;
    vka_buffer staging;

    const vka_profile *profile; /* kernel shapes for this device (src/device/quirks.c) */
    uint32_t loop_budget;       /* loop trips per invocation the plan keeps to, 0 = unlimited */
    vka_buffer dummy; /* bound to descriptor slots a dispatch does not use */
    vka_pipeline_cache pipelines;

    vkattn_error error;
    vka_faults faults; /* test-only failure injection; unarmed in normal use */
    int device_lost;
    int validation_enabled;
    uint32_t validation_messages;
};

/* Records a failed Vulkan call in the context and maps it to a status. VK_ERROR_DEVICE_LOST marks
 * the context lost for good. */
vkattn_status vka_vk_fail(vkattn_context *ctx, VkResult result, const char *call, const char *file, int line);

/* The VkResult an armed fault injector substitutes for the call (which is then not made). */
VkResult vka_injected_result(const vkattn_context *ctx);

/* VKA_VK(ctx, vkCall(...)): on failure records the call and jumps to `fail` with `status` set. */
#define VKA_VK(ctx, call)                                                                          \
    do {                                                                                           \
        VkResult vk_result_ = vka_fault_vk(&(ctx)->faults) ? vka_injected_result(ctx) : (call);    \
        if (vk_result_ != VK_SUCCESS) {                                                            \
            status = vka_vk_fail((ctx), vk_result_, #call, __FILE__, __LINE__);                    \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Records a failure message in the context and returns `status`. */
vkattn_status vka_fail(vkattn_context *ctx, vkattn_status status, const char *fmt, ...) VKA_PRINTF(3, 4);

/* VKATTN_ERROR_DEVICE_LOST (with a message) if the context's device is lost, else VKATTN_OK. */
vkattn_status vka_check_alive(vkattn_context *ctx);

/* Creates a context whose fault injector is armed from the start (tests only). */
vkattn_status vka_context_create_with_faults(const vkattn_context_desc *desc, const vka_faults *faults,
                                             vkattn_context **out, vkattn_error *error);
/* Re-arms (or disarms, with zeros) a context's fault injector and resets its counters. */
void vka_context_set_faults(vkattn_context *ctx, const vka_faults *faults);

/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc. */
const char *vka_vk_result_name(VkResult result);

#endif
