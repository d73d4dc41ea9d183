/* The device core: one Vulkan device and its queue, what it can do, and the policy every Vulkan
 * call shares: a failed call becomes a status with a message, a lost device (or a wait that never
 * ends) is lost for good, and tests can make any call fail. Memory and pipelines build on this;
 * the context (context.h) composes them on top. */
#ifndef VKA_DEVICE_H
#define VKA_DEVICE_H

#define VK_NO_PROTOTYPES
#include <volk.h>

#include "vkattn.h"
#include "common/alloc.h"
#include "common/error.h"
#include "device/loader.h"
#include "device/matrix_rows.h"

/* The Vulkan-typed facts of the device beside its public description (vkattn_device_info). */
typedef struct vka_device_caps {
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory;
    int unified_memory; /* device-local memory is also host-visible and coherent (CPU, integrated) */
    int timestamps;     /* the queue family can write timestamps */
    uint32_t timestamp_valid_bits;
    int vulkan_memory_model; /* vulkanMemoryModel: the cooperative-matrix kernels' SPIR-V needs it */
    int subgroup_sums;       /* subgroup arithmetic and shuffles in compute shaders on subgroups of at
                                least 4 lanes (matmul_vec's sums, attn_paged_lanes's key groups) */
    uint32_t max_workgroup_subgroups; /* maxComputeWorkgroupSubgroups: a pipeline that requires a subgroup
                                         size has at most this many per workgroup (0: not reported) */
    /* fp32 / fp16 infinities, NaNs and signed zeros a kernel may ask the driver to keep (Vulkan 1.2's
     * shaderSignedZeroInfNanPreserveFloat32 / 16; cleared by the context where it uses the device
     * below 1.2): every module asks (src/pipeline/spirv_patch.h) */
    int preserve_inf_nan_f32, preserve_inf_nan_f16;
} vka_device_caps;

typedef struct vka_device {
    vka_instance_fns ifn;
    VkInstance instance;
    VkPhysicalDevice physical;
    VkDevice device;
    struct VolkDeviceTable vk; /* every device-level call goes through this table */
    VkQueue queue;
    uint32_t queue_family;
    vkattn_device_info info;
    vka_device_caps caps;
    uint32_t matrix_subgroup;  /* the subgroup size cooperative-matrix pipelines require (the tuning's
                                  choice, vka_matrix_subgroup_for; 0 where they are not enabled) */
    int pipeline_stats;        /* VKATTN_PIPELINE_STATS=1 on a device with VK_KHR_pipeline_executable_properties:
                                  pipelines capture their statistics, printed as they are made */
    int matrix2;               /* VK_NV_cooperative_matrix2's reductions, conversions and per-element
                                  operations are enabled (attn_cm2) */
    vka_matrix_rows matrix_rows; /* how the accumulators' rows lie in a subgroup (read after the
                                    self-test where the tuning takes attn_cm's softmax in registers;
                                    zeros: not read, not of the form, or that build failed its
                                    self-test) */
    char matrix_rows_note[160];  /* why matrix_rows is zeros, or its a_elements, where the probe ran ("" otherwise) */
    struct {                   /* the application's lock around submits to a shared queue */
        void (*lock)(void *user), (*unlock)(void *user);
        void *user;
    } queue_lock;
    int external;              /* instance, device and queue are the application's, not ours */
    vkattn_error error;        /* the last failure's message */
    vka_faults faults;         /* test-only failure injection; unarmed in normal use */
    int lost;                  /* VK_ERROR_DEVICE_LOST seen, or a wait timed out */
} vka_device;

/* Records a failed Vulkan call in the device and maps it to a status. VK_ERROR_DEVICE_LOST marks
 * the device lost for good. */
vkattn_status vka_vk_fail(vka_device *dev, VkResult result, const char *call, const char *file, int line);

/* The VkResult an armed fault injector substitutes for the call (which is then not made). */
VkResult vka_injected_result(const vka_device *dev);

/* VKA_VK(dev, vkCall(...)): on failure records the call and jumps to `fail` with `status` set. */
#define VKA_VK(dev, call)                                                                          \
    do {                                                                                           \
        VkResult vk_result_ = vka_fault_vk(&(dev)->faults) ? vka_injected_result(dev) : (call);    \
        if (vk_result_ != VK_SUCCESS) {                                                            \
            status = vka_vk_fail((dev), vk_result_, #call, __FILE__, __LINE__);                    \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Records a failure message in the device and returns `status`. */
vkattn_status vka_fail(vka_device *dev, vkattn_status status, const char *fmt, ...) VKA_PRINTF(3, 4);

/* Validation messages that are not about the calls of the program that receives them, which the
 * messengers drop: WARNING-vkGetDeviceProcAddr-device, raised inside vkCreateDevice when a part of
 * the stack below the application asks vkGetDeviceProcAddr for an instance-level function (seen
 * with NVIDIA's 580 driver and the 1.4.309 layer; KhronosGroup/Vulkan-ValidationLayers#8048 on
 * AMD's). vkattn's own table (volk) asks for device-level functions only; vkattn drops it only
 * while its vkCreateDevice runs. */
int vka_validation_message_ignored(const VkDebugUtilsMessengerCallbackDataEXT *data);

/* VKATTN_ERROR_DEVICE_LOST (with a message) if the device is lost, else VKATTN_OK. */
vkattn_status vka_check_alive(vka_device *dev);

/* Waits for `fence` with vkattn's one timeout; a timeout or a lost device marks the device lost,
 * since the work still in flight can then be neither reused nor freed safely. */
vkattn_status vka_wait_fence(vka_device *dev, VkFence fence, const char *what);

/* The status a VkResult stands for (out of memory, device lost, unsupported, else VULKAN). */
vkattn_status vka_status_of_result(VkResult result);

/* "VK_ERROR_OUT_OF_DEVICE_MEMORY" etc. */
const char *vka_vk_result_name(VkResult result);

/* Milliseconds between two timestamps, counting only the valid bits (so a wrap is handled). */
double vka_ticks_ms(const vka_device *dev, uint64_t t0, uint64_t t1);

/* One lane of work: a command pool, its primary command buffer and a fence. */
typedef struct vka_commands {
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
} vka_commands;

vkattn_status vka_commands_create(vka_device *dev, vka_commands *out);
void vka_commands_destroy(vka_device *dev, vka_commands *commands);
/* Resets the command buffer and begins it for one submission. */
vkattn_status vka_commands_begin(vka_device *dev, vka_commands *commands);
/* Ends the command buffer and submits it on the device's queue, signalling its fence. */
vkattn_status vka_commands_submit(vka_device *dev, vka_commands *commands);
/* The same, then waits for it; `what` names the work in a timeout message. */
vkattn_status vka_commands_submit_wait(vka_device *dev, vka_commands *commands, const char *what);

/* vkQueueSubmit of one batch on the device's queue, inside the application's queue lock if it
 * gave one. */
vkattn_status vka_queue_submit(vka_device *dev, const VkSubmitInfo *submit, VkFence fence);

#endif
