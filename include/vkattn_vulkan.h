/*
 * vkattn_vulkan.h — vkattn inside an application's own Vulkan work.
 *
 * vkattn.h is free of Vulkan types; this header adds what an application that uses Vulkan itself
 * needs: give vkattn its instance, device and queue; record forwards into its own command
 * buffers; submit several forwards at once without waiting; wrap its VkBuffers as tensors.
 *
 * Include your Vulkan header first (<vulkan/vulkan.h>, or volk.h with VK_NO_PROTOTYPES): this
 * header needs only the types, and includes <vulkan/vulkan_core.h> itself when no Vulkan header
 * came before it.
 *
 * Sharing a device
 * ----------------
 *     vkattn_device_requirements req;
 *     vkattn_device_requirements_get(vkGetInstanceProcAddr, instance, physical, &req, NULL);
 *     // create the device with a queue of req.queue_family_index, req.extensions enabled, and
 *     // the features in req.features switched on (see vkattn_feature), then:
 *     vkattn_external_device ext = {
 *         .instance = instance, .physical_device = physical, .device = device,
 *         .queue_family_index = req.queue_family_index, .queue = queue,
 *         .get_instance_proc_addr = vkGetInstanceProcAddr,
 *         .api_version = VK_API_VERSION_1_2,   // what the instance was created with
 *         .features = req.features,            // what was switched on
 *     };
 *     vkattn_context *ctx;
 *     vkattn_context_create_external(&ext, &ctx, &err);
 *
 * vkattn never destroys what it was given: destroy the context first, then your device and
 * instance. Before destroying the context (or a layer, cache or tensor), wait for your submissions
 * of command buffers that hold its recorded forwards: vkattn waits for its own submits only, and
 * does not idle your device or queues (that would race with your other threads' submits). The
 * queue is used by vkattn's own submits (tensor reads and writes, vkattn_forward, submissions); if
 * other threads submit to it too, give queue_lock/queue_unlock. Validation is
 * the application's: its layers, its messenger (vkattn_context_desc.validation does not apply).
 *
 * Recording into your command buffer (vkattn_forward_record, vkattn_forward_cached_record)
 * ---------------------------------------------------------------------------------------
 * The forward is recorded, not run: its commands execute when you submit your command buffer (on a
 * queue of the context's queue family). vkattn records the barriers between its own steps; the
 * ones around it are yours:
 *   before: your writes of the inputs (and your reads of the outputs' old contents) must be made
 *           available and visible to VKATTN_PIPELINE_STAGES with VKATTN_ACCESS_READ | VKATTN_ACCESS_WRITE;
 *   after:  vkattn's writes of the outputs, from VKATTN_PIPELINE_STAGES with VKATTN_ACCESS_WRITE,
 *           to the stages and accesses that consume them.
 * One VkMemoryBarrier each way is enough (see tests/test_external.c); the source side of the
 * "before" barrier is whatever produced or read those bytes (a copy's VK_PIPELINE_STAGE_TRANSFER_BIT
 * and VK_ACCESS_TRANSFER_WRITE_BIT, a shader's write, ...). The layer's workspace and descriptor
 * sets are in use from the record until that submission completes: do not record, run or submit
 * the same layer again, nor destroy it, until then (another layer is fine: each has its own; this
 * is not checked: vkattn cannot see when your submission completes). A recorded plain forward's
 * command buffer stays valid until the next forward, record or submission of that layer,
 * vkattn_layer_set_head_mask on it, or the destruction of the layer or of any tensor the forward
 * uses (their descriptor sets and buffer views are rewritten or destroyed). To run a forward
 * again, record it again (its pipelines are built by then) rather than resubmitting the command
 * buffer: resubmission is not part of this contract (a float attn_mask written since would not be
 * checked again), and a recorded cached forward must never be resubmitted: its record advanced the
 * cache's sequences, so it would write the same slots again. A failed vkattn_forward_record
 * records nothing into `cmd`. A recorded forward is not timed; the layer's vkattn_layer_last_stats
 * then describes it with submits = 0 and timed = 0.
 *
 * Ordering with the application's own submissions
 * -----------------------------------------------
 * vkattn's own queue work (vkattn_tensor_read/write and their regions, vkattn_forward,
 * vkattn_forward_host, submissions) waits for nothing of the application's: before such a call
 * touches a tensor that the application's submitted work writes or reads (a wrapped buffer, or a
 * tensor used by a recorded forward), wait for that work (its fence, or vkQueueWaitIdle). Recording
 * a forward whose float attn_mask vkattn has not yet inspected (a vkattn tensor written by a
 * forward since) reads the mask back at record time through the queue, under queue_lock: do not
 * hold that lock while recording.
 */
#ifndef VKATTN_VULKAN_H
#define VKATTN_VULKAN_H

#if !defined(VULKAN_CORE_H_)
#include <vulkan/vulkan_core.h>
#endif

#include "vkattn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The stages and accesses of everything a recorded forward does to tensors: compute dispatches
 * (texel-buffer reads, storage-buffer writes) and transfers (copies, fills). */
#define VKATTN_PIPELINE_STAGES (VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT)
#define VKATTN_ACCESS_READ (VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT)
#define VKATTN_ACCESS_WRITE (VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT)

/* The usage a VkBuffer given to vkattn_tensor_wrap must have been created with. */
#define VKATTN_BUFFER_USAGE                                                                        \
    (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |                 \
     VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT)

/* Device features vkattn can use when the application switched them on. */
typedef enum vkattn_feature {
    /* VkPhysicalDevice16BitStorageFeatures::storageBuffer16BitAccess (core in Vulkan 1.1):
     * fp16 layer storage and fp16 outputs. Without it F16 layers fall back to F32. */
    VKATTN_FEATURE_STORAGE_16BIT = 1u << 0,
    /* VkPhysicalDeviceShaderFloat16Int8Features::shaderFloat16 (core in Vulkan 1.2): the fp16
     * arithmetic microkernel of vkattn_measure_peak. */
    VKATTN_FEATURE_SHADER_FLOAT16 = 1u << 1
} vkattn_feature;

/* What to create a device with for vkattn's fast paths. A device that switches on
 * VkPhysicalDeviceVulkanMemoryModelFeatures::vulkanMemoryModel for its own shaders must switch on
 * vulkanMemoryModelDeviceScope too: the quantized KV cache's appends (Q8_0, Q4_0) use device-scope
 * atomics, which the memory model without it forbids (VUID-RuntimeSpirv-vulkanMemoryModel-06265).
 * vkattn cannot see the features an application enabled, so this is not checked. */
typedef struct vkattn_device_requirements {
    uint32_t queue_family_index;  /* a family with compute (and timestamps, where one has them) */
    uint32_t api_version;         /* the lowest instance apiVersion vkattn works with (1.1) */
    uint32_t extension_count;
    const char *extensions[4];    /* device extensions to enable (VK_KHR_portability_subset where
                                     the implementation advertises it) */
    uint32_t features;            /* vkattn_feature bits this device has: switch them on */
} vkattn_device_requirements;

/* Fills `out` for `physical_device` of `instance`, asking through `get_instance_proc_addr`.
 * VKATTN_ERROR_UNSUPPORTED if the device has no compute queue or only Vulkan 1.0. */
vkattn_status vkattn_device_requirements_get(PFN_vkGetInstanceProcAddr get_instance_proc_addr, VkInstance instance,
                                             VkPhysicalDevice physical_device, vkattn_device_requirements *out,
                                             vkattn_error *error);

typedef struct vkattn_external_device {
    VkInstance instance;                          /* created with apiVersion >= 1.1 */
    VkPhysicalDevice physical_device;
    VkDevice device;
    uint32_t queue_family_index;                  /* must support compute */
    VkQueue queue;                                /* of that family */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr; /* the application's loader entry point */
    uint32_t api_version;                         /* the instance's apiVersion; 0 = VK_API_VERSION_1_1 */
    uint32_t features;                            /* vkattn_feature bits enabled on `device`; 0 = none */
    /* Optional: called around each of vkattn's vkQueueSubmit calls when other threads submit to
     * the same queue (Vulkan requires submits to one queue to be externally synchronized). */
    void (*queue_lock)(void *user);
    void (*queue_unlock)(void *user);
    void *queue_lock_user;
    /* Optional: tuning and loop_budget as in vkattn_context_create (device and validation do not
     * apply). NULL = defaults. */
    const vkattn_context_desc *options;
} vkattn_external_device;

/* A context on the application's device. On failure *out is untouched and `error` (may be NULL)
 * holds the reason; nothing of the application's is changed. */
vkattn_status vkattn_context_create_external(const vkattn_external_device *device, vkattn_context **out,
                                             vkattn_error *error);

/* Records the forward `desc` describes into `cmd`, a primary command buffer in the recording
 * state, allocated from a pool of the context's queue family on the context's device. Checks,
 * plans and compiles what it needs now; the work runs when the application submits `cmd`. See
 * the header comment for the barriers owed and how long the layer stays in use. The CPU path
 * cannot be recorded (VKATTN_ERROR_UNSUPPORTED). */
vkattn_status vkattn_forward_record(vkattn_layer *layer, const vkattn_forward_desc *desc, VkCommandBuffer cmd);

/* Records a forward through a KV cache (vkattn_forward_cached's, on device tensors only: host
 * arrays are VKATTN_ERROR_INVALID_ARGUMENT) into `cmd`, with vkattn_forward_record's barrier
 * contract (the query and output tensors are its inputs and outputs; the cache's pools and
 * sequence table are vkattn's own and need no barrier of yours). The call commits the forward to
 * the cache: its sequences' lengths advance now, so the next token's forward may be recorded
 * after it. If `cmd` is never submitted, or its submission fails, roll each sequence back with
 * vkattn_kv_cache_truncate to its length before this call. Until the submission has completed,
 * the cache is in use like the layer: record, run or add no other forward of it, and do not fork,
 * truncate, free or destroy it. A failed call records nothing and changes no sequence. */
vkattn_status vkattn_forward_cached_record(vkattn_layer *layer, vkattn_kv_cache *cache,
                                           const vkattn_cached_forward_desc *desc, VkCommandBuffer cmd);

/* A tensor over bytes [offset, offset + size) of the application's `buffer`, where size is the
 * tensor's bytes rounded up to 16 (kernels read whole 16-byte words). The buffer must belong to
 * the context's device, have memory bound and have been created with VKATTN_BUFFER_USAGE (these
 * three are not checked: Vulkan cannot report a buffer's device, usage or binding); offset
 * must be a multiple of the device's storage and texel buffer offset alignments. vkattn checks
 * the range against the buffer's VkMemoryRequirements.size (VKATTN_ERROR_SHAPE beyond it), which
 * a driver may round up past the buffer's own size: the range must lie inside the VkBuffer. An
 * output given as a wrapped tensor must not overlap another argument's bytes (checked). The VkBuffer
 * stays the application's: vkattn_tensor_destroy forgets it. The library cannot see what the
 * application writes into it, so a float attn_mask wrapped this way is not checked for NaN/+inf. */
vkattn_status vkattn_tensor_wrap(vkattn_context *ctx, VkBuffer buffer, VkDeviceSize offset, vkattn_dtype dtype,
                                 uint32_t rank, const uint32_t *dims, vkattn_tensor **out);

/* The VkBuffer a tensor lives in, where its bytes start and how many there are (its size rounded
 * up to 16), for the application's own commands on it (barriers as for vkattn_forward_record). */
vkattn_status vkattn_tensor_vulkan_buffer(const vkattn_tensor *tensor, VkBuffer *buffer, VkDeviceSize *offset,
                                          VkDeviceSize *size);

#ifdef __cplusplus
}
#endif

#endif
