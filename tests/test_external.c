/* vkattn on an application's Vulkan device (vkattn_vulkan.h): the application creates the instance
 * (with the validation layer and synchronization validation, its own messenger counting every
 * warning and error), the device and the queue, hands them to vkattn, records its own compute
 * dispatches around vkattn's forward in one command buffer (producer -> attention -> consumer)
 * with the barriers the header documents, and wraps its own buffers as tensors. Every result is
 * compared with the CPU reference; any validation message fails the test.
 *
 * The application here loads Vulkan the way a plugin would, through dlopen and
 * vkGetInstanceProcAddr, with its own function pointers. */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include <pthread.h>

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include "fault_sample.h"
#include "gpu_test.h"
#include "vkattn.h"
#include "vkattn_vulkan.h"

#include "app_scale_spv.h" /* tests/shaders/app_scale.comp, compiled by the build */
#include "api/context.h"  /* the fault injector, for the creation walk */

/* Tolerances of the GPU-vs-CPU tests (f32 storage): max-abs 1e-4 x max(1, max|ref|), NMSE 1e-9. */
static void check_close(const char *what, const float *got, const float *want, size_t n)
{
    test_error e = test_compare(got, want, n);
    double tol = 1e-4 * (e.ref_max > 1 ? e.ref_max : 1);
    printf("  %-44s max-abs %.2e  NMSE %.2e\n", what, e.max_abs, e.nmse);
    CHECK_MSG(e.nonfinite == 0 && e.max_abs <= tol && e.nmse <= 1e-9, "%s: max-abs %.3e (tolerance %.1e), NMSE %.3e",
              what, e.max_abs, tol, e.nmse);
}

/* ---------------------------------------------------------------------------------------------- */
/* The application: its own loader entry, instance, device, queue and one compute pipeline.       */

#define APP_INSTANCE_FNS(X)                                                                        \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)            \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)                \
    X(vkCreateDebugUtilsMessengerEXT) X(vkDestroyDebugUtilsMessengerEXT)
#define APP_DEVICE_FNS(X)                                                                          \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkCreateBuffer) X(vkDestroyBuffer)                    \
    X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory)     \
    X(vkMapMemory) X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateDescriptorSetLayout) \
    X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout)           \
    X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreateDescriptorPool)                     \
    X(vkDestroyDescriptorPool) X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets)               \
    X(vkCreateCommandPool) X(vkDestroyCommandPool) X(vkAllocateCommandBuffers)                     \
    X(vkBeginCommandBuffer) X(vkEndCommandBuffer) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets)  \
    X(vkCmdPushConstants) X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkQueueSubmit)                \
    X(vkCreateFence) X(vkDestroyFence) X(vkWaitForFences) X(vkResetFences) X(vkResetCommandBuffer) \
    X(vkResetDescriptorPool)

typedef struct app {
    void *lib;
    PFN_vkGetInstanceProcAddr gipa;
    PFN_vkCreateInstance vkCreateInstance;
    PFN_vkEnumerateInstanceLayerProperties vkEnumerateInstanceLayerProperties;
#define APP_MEMBER_(name) PFN_##name name;
    APP_INSTANCE_FNS(APP_MEMBER_)
    APP_DEVICE_FNS(APP_MEMBER_)
#undef APP_MEMBER_
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    int validation;
    uint32_t messages; /* validation warnings and errors */
    VkPhysicalDevice physical;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memory;
    vkattn_device_requirements req;
    VkDevice device;
    VkQueue queue;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    /* the scale kernel */
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool descriptors;
} app;

typedef struct app_push {
    uint32_t src_offset, dst_offset, count;
    float scale;
} app_push;

static VKAPI_ATTR VkBool32 VKAPI_CALL app_on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT type,
                                                     const VkDebugUtilsMessengerCallbackDataEXT *data, void *user)
{
    app *a = user;
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT &&
        (type & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) &&
        !vka_validation_message_ignored(data)) {
        a->messages++;
        printf("app: validation: %s\n", data && data->pMessage ? data->pMessage : "(no message)");
    }
    return VK_FALSE;
}

static int app_has_layer(app *a, const char *name)
{
    uint32_t n = 0;
    if (a->vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || !n) return 0;
    VkLayerProperties *layers = calloc(n, sizeof *layers);
    int found = 0;
    if (layers && a->vkEnumerateInstanceLayerProperties(&n, layers) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++) found |= strcmp(layers[i].layerName, name) == 0;
    free(layers);
    return found;
}

/* Instance with validation (if installed), the llvmpipe device, a device made as
 * vkattn_device_requirements_get says. 0 on success. */
static int app_open(app *a)
{
    memset(a, 0, sizeof *a);
    a->lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) return fprintf(stderr, "no libvulkan.so.1\n"), 1;
    a->gipa = (PFN_vkGetInstanceProcAddr)dlsym(a->lib, "vkGetInstanceProcAddr");
    a->vkCreateInstance = (PFN_vkCreateInstance)a->gipa(NULL, "vkCreateInstance");
    a->vkEnumerateInstanceLayerProperties =
        (PFN_vkEnumerateInstanceLayerProperties)a->gipa(NULL, "vkEnumerateInstanceLayerProperties");

    a->validation = app_has_layer(a, "VK_LAYER_KHRONOS_validation");
    const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
    const char *extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                        .enabledValidationFeatureCount = 1,
                                        .pEnabledValidationFeatures = &sync};
    VkDebugUtilsMessengerCreateInfoEXT messenger = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = app_on_message,
        .pUserData = a,
    };
    VkApplicationInfo info = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "test_external",
                              .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pNext = a->validation ? &features : NULL,
                                .pApplicationInfo = &info,
                                .enabledLayerCount = a->validation ? 1 : 0,
                                .ppEnabledLayerNames = layers,
                                .enabledExtensionCount = a->validation ? 1 : 0,
                                .ppEnabledExtensionNames = extensions};
    if (a->vkCreateInstance(&ici, NULL, &a->instance) != VK_SUCCESS) return fprintf(stderr, "vkCreateInstance failed\n"), 1;
#define APP_LOAD_I_(name) a->name = (PFN_##name)a->gipa(a->instance, #name);
    APP_INSTANCE_FNS(APP_LOAD_I_)
#undef APP_LOAD_I_
    if (a->validation) a->vkCreateDebugUtilsMessengerEXT(a->instance, &messenger, NULL, &a->messenger);
    printf("app instance: validation %s\n", a->validation ? "on (with synchronization validation)" : "NOT installed");

    VkPhysicalDevice devices[16];
    uint32_t n = 16;
    a->vkEnumeratePhysicalDevices(a->instance, &n, devices);
    for (uint32_t i = 0; i < n && !a->physical; i++) {
        a->vkGetPhysicalDeviceProperties(devices[i], &a->props);
        if (strstr(a->props.deviceName, "llvmpipe")) a->physical = devices[i];
    }
    /* llvmpipe where it is listed (CI's drivers), else the first device (a GPU machine's) */
    if (!a->physical && n > 0) a->vkGetPhysicalDeviceProperties(a->physical = devices[0], &a->props);
    if (!a->physical) return fprintf(stderr, "no Vulkan device\n"), 1;
    a->vkGetPhysicalDeviceMemoryProperties(a->physical, &a->memory);

    vkattn_error err = {0};
    if (vkattn_device_requirements_get(a->gipa, a->instance, a->physical, &a->req, &err) != VKATTN_OK)
        return fprintf(stderr, "requirements: %s\n", err.message), 1;
    float priority = 1;
    VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                     .queueFamilyIndex = a->req.queue_family_index,
                                     .queueCount = 1,
                                     .pQueuePriorities = &priority};
    VkPhysicalDeviceVulkan12Features v12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .shaderFloat16 = (a->req.features & VKATTN_FEATURE_SHADER_FLOAT16) != 0};
    VkPhysicalDeviceVulkan11Features v11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &v12,
                                            .storageBuffer16BitAccess =
                                                (a->req.features & VKATTN_FEATURE_STORAGE_16BIT) != 0};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &v11,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &queue,
                              .enabledExtensionCount = a->req.extension_count,
                              .ppEnabledExtensionNames = a->req.extensions};
    if (a->vkCreateDevice(a->physical, &dci, NULL, &a->device) != VK_SUCCESS)
        return fprintf(stderr, "vkCreateDevice failed\n"), 1;
#define APP_LOAD_D_(name) a->name = (PFN_##name)a->vkGetDeviceProcAddr(a->device, #name);
    APP_DEVICE_FNS(APP_LOAD_D_)
#undef APP_LOAD_D_
    a->vkGetDeviceQueue(a->device, a->req.queue_family_index, 0, &a->queue);

    VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = a->req.queue_family_index};
    a->vkCreateCommandPool(a->device, &pci, NULL, &a->pool);
    VkCommandBufferAllocateInfo cai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = a->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1};
    a->vkAllocateCommandBuffers(a->device, &cai, &a->cmd);
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    a->vkCreateFence(a->device, &fci, NULL, &a->fence);

    VkShaderModuleCreateInfo smi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = sizeof app_scale_spv,
                                    .pCode = app_scale_spv};
    a->vkCreateShaderModule(a->device, &smi, NULL, &a->module);
    VkDescriptorSetLayoutBinding b[2] = {
        {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
        {1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL},
    };
    VkDescriptorSetLayoutCreateInfo dsl = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = 2,
                                           .pBindings = b};
    a->vkCreateDescriptorSetLayout(a->device, &dsl, NULL, &a->set_layout);
    VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(app_push)};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &a->set_layout,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &push};
    a->vkCreatePipelineLayout(a->device, &pli, NULL, &a->layout);
    VkComputePipelineCreateInfo cpi = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = a->module,
                  .pName = "main"},
        .layout = a->layout,
    };
    a->vkCreateComputePipelines(a->device, VK_NULL_HANDLE, 1, &cpi, NULL, &a->pipeline);
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 16};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 8,
                                      .poolSizeCount = 1,
                                      .pPoolSizes = &size};
    a->vkCreateDescriptorPool(a->device, &dpi, NULL, &a->descriptors);
    return 0;
}

static void app_close(app *a)
{
    if (a->device) {
        a->vkDestroyDescriptorPool(a->device, a->descriptors, NULL);
        a->vkDestroyPipeline(a->device, a->pipeline, NULL);
        a->vkDestroyPipelineLayout(a->device, a->layout, NULL);
        a->vkDestroyDescriptorSetLayout(a->device, a->set_layout, NULL);
        a->vkDestroyShaderModule(a->device, a->module, NULL);
        a->vkDestroyFence(a->device, a->fence, NULL);
        a->vkDestroyCommandPool(a->device, a->pool, NULL);
        a->vkDestroyDevice(a->device, NULL);
    }
    if (a->messenger) a->vkDestroyDebugUtilsMessengerEXT(a->instance, a->messenger, NULL);
    if (a->instance) a->vkDestroyInstance(a->instance, NULL);
    /* The library stays loaded: vkattn's own loader handle (volk) may still refer to it. */
}

/* A host-visible buffer of the application's, usable by vkattn (VKATTN_BUFFER_USAGE). */
typedef struct app_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    float *data;
    VkDeviceSize size;
} app_buffer;

static app_buffer app_buffer_make(app *a, VkDeviceSize size)
{
    app_buffer b = {.size = size};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage = VKATTN_BUFFER_USAGE,
                              .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    a->vkCreateBuffer(a->device, &bci, NULL, &b.buffer);
    VkMemoryRequirements req;
    a->vkGetBufferMemoryRequirements(a->device, b.buffer, &req);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = 0;
    while (type < a->memory.memoryTypeCount &&
           (!(req.memoryTypeBits & (1u << type)) || (a->memory.memoryTypes[type].propertyFlags & want) != want))
        type++;
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = type};
    a->vkAllocateMemory(a->device, &mai, NULL, &b.memory);
    a->vkBindBufferMemory(a->device, b.buffer, b.memory, 0);
    void *p = NULL;
    a->vkMapMemory(a->device, b.memory, 0, VK_WHOLE_SIZE, 0, &p);
    b.data = p;
    memset(b.data, 0, (size_t)size);
    return b;
}

static void app_buffer_free(app *a, app_buffer *b)
{
    a->vkDestroyBuffer(a->device, b->buffer, NULL);
    a->vkFreeMemory(a->device, b->memory, NULL); /* also unmaps */
}

/* Records dst[dst_offset + i] = src[src_offset + i] * scale for i < count (offsets in floats). */
static void app_scale(app *a, VkBuffer src, uint32_t src_offset, VkBuffer dst, uint32_t dst_offset, uint32_t count,
                      float scale)
{
    VkDescriptorSetAllocateInfo dai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                       .descriptorPool = a->descriptors,
                                       .descriptorSetCount = 1,
                                       .pSetLayouts = &a->set_layout};
    VkDescriptorSet set;
    a->vkAllocateDescriptorSets(a->device, &dai, &set);
    VkDescriptorBufferInfo infos[2] = {{src, 0, VK_WHOLE_SIZE}, {dst, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w[2];
    for (int i = 0; i < 2; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = (uint32_t)i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &infos[i]};
    a->vkUpdateDescriptorSets(a->device, 2, w, 0, NULL);
    app_push push = {src_offset, dst_offset, count, scale};
    a->vkCmdBindPipeline(a->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->pipeline);
    a->vkCmdBindDescriptorSets(a->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->layout, 0, 1, &set, 0, NULL);
    a->vkCmdPushConstants(a->cmd, a->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof push, &push);
    a->vkCmdDispatch(a->cmd, (count + 63) / 64, 1, 1);
}

/* One memory barrier: the documented hand-over between the application's work and vkattn's. */
static void app_barrier(app *a, VkPipelineStageFlags src_stages, VkAccessFlags src_access, VkPipelineStageFlags dst_stages,
                        VkAccessFlags dst_access)
{
    VkMemoryBarrier barrier = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                               .srcAccessMask = src_access,
                               .dstAccessMask = dst_access};
    a->vkCmdPipelineBarrier(a->cmd, src_stages, dst_stages, 0, 1, &barrier, 0, NULL, 0, NULL);
}

static void app_begin(app *a)
{
    a->vkResetDescriptorPool(a->device, a->descriptors, 0);
    a->vkResetCommandBuffer(a->cmd, 0);
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    a->vkBeginCommandBuffer(a->cmd, &begin);
}

static void app_submit_wait(app *a)
{
    a->vkEndCommandBuffer(a->cmd);
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &a->cmd};
    a->vkResetFences(a->device, 1, &a->fence);
    CHECK(a->vkQueueSubmit(a->queue, 1, &submit, a->fence) == VK_SUCCESS);
    CHECK(a->vkWaitForFences(a->device, 1, &a->fence, VK_TRUE, UINT64_MAX) == VK_SUCCESS);
}

/* ---------------------------------------------------------------------------------------------- */
/* The context on the application's device.                                                       */

typedef struct queue_lock {
    pthread_mutex_t mutex;
    int locks, unlocks;
} queue_lock;

static void lock_queue(void *user)
{
    queue_lock *q = user;
    pthread_mutex_lock(&q->mutex);
    q->locks++;
}

static void unlock_queue(void *user)
{
    queue_lock *q = user;
    q->unlocks++;
    pthread_mutex_unlock(&q->mutex);
}

static vkattn_external_device external_of(const app *a, queue_lock *q)
{
    return (vkattn_external_device){.instance = a->instance,
                                    .physical_device = a->physical,
                                    .device = a->device,
                                    .queue_family_index = a->req.queue_family_index,
                                    .queue = a->queue,
                                    .get_instance_proc_addr = a->gipa,
                                    .api_version = VK_API_VERSION_1_2,
                                    .features = a->req.features,
                                    .queue_lock = q ? lock_queue : NULL,
                                    .queue_unlock = q ? unlock_queue : NULL,
                                    .queue_lock_user = q};
}

/* A host forward on the application's device agrees with the CPU reference; every vkattn submit
 * went through the application's queue lock; vkattn's context reports no validation of its own
 * (the application's messenger sees everything). */
static void test_external_context(app *a)
{
    CHECK(a->req.api_version == VK_API_VERSION_1_1);
    printf("  requirements: queue family %u, %u extensions, features 0x%x\n", a->req.queue_family_index,
           a->req.extension_count, a->req.features);
    queue_lock q = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    vkattn_external_device ext = external_of(a, &q);
    vkattn_context *ctx = NULL;
    vkattn_error err = {0};
    CHECK_STATUS(vkattn_context_create_external(&ext, &ctx, &err), VKATTN_OK);
    if (!ctx) return;
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    CHECK_MSG(strcmp(info.name, a->props.deviceName) == 0, "%s, the application's %s", info.name, a->props.deviceName);
    CHECK(info.storage_16bit == ((a->req.features & VKATTN_FEATURE_STORAGE_16BIT) != 0));
    CHECK(!vkattn_context_validation_enabled(ctx));

    const uint32_t B = 2, L = 7, E = 32;
    vkattn_layer_desc ld = {.embed_dim = E, .num_heads = 4};
    test_weights tw;
    test_weights_make(&tw, &ld, 11);
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
    size_t n = (size_t)B * L * E;
    float *x = malloc(n * sizeof *x), *got = calloc(n, sizeof *got), *want = calloc(n, sizeof *want);
    test_rng rng = test_rng_make(5);
    test_fill(&rng, x, n, 1.0f);
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .query = x, .output = got, .causal = 1};
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    f.output = want;
    CHECK_STATUS(vkattn_reference_forward(&ld, &tw.w, &f, &err), VKATTN_OK);
    check_close("host forward on the application's device", got, want, n);
    CHECK_MSG(q.locks > 0 && q.locks == q.unlocks, "queue lock taken %d times, released %d", q.locks, q.unlocks);
    printf("  vkattn's submits through the application's queue lock: %d\n", q.locks);
    vkattn_layer_destroy(layer);
    vkattn_context_destroy(ctx);
    /* The application's device is still alive and usable: its own work runs after vkattn left. */
    app_buffer b = app_buffer_make(a, 256);
    for (int i = 0; i < 8; i++) b.data[i] = (float)i;
    app_begin(a);
    app_scale(a, b.buffer, 0, b.buffer, 16, 8, 3.0f);
    app_submit_wait(a);
    CHECK(b.data[16 + 5] == 15.0f);
    app_buffer_free(a, &b);
    free(x), free(got), free(want);
    test_weights_free(&tw);
}

/* producer -> attention -> consumer in one command buffer of the application's:
 *   the app scales its input into a wrapped query buffer (x2),
 *   vkattn's self-attention (fused) reads it and writes a vkattn tensor,
 *   the app scales that tensor's buffer (got through vkattn_tensor_vulkan_buffer) into its result (x0.5);
 * then a cross-attention with key and value wrapped at non-zero offsets of one buffer and the
 * per-head attention weights (unfused path) written into a wrapped buffer at an offset. */
static void test_record(app *a)
{
    vkattn_external_device ext = external_of(a, NULL);
    vkattn_context *ctx = NULL;
    vkattn_error err = {0};
    CHECK_STATUS(vkattn_context_create_external(&ext, &ctx, &err), VKATTN_OK);
    if (!ctx) return;
    const uint32_t B = 2, L = 9, S = 12, E = 32, H = 4, kdim = 24, vdim = 20;
    const size_t nq = (size_t)B * L * E, nk = (size_t)B * S * kdim, nv = (size_t)B * S * vdim, nw = (size_t)B * H * L * S;
    vkattn_layer_desc self_desc = {.embed_dim = E, .num_heads = H};
    vkattn_layer_desc cross_desc = {.embed_dim = E, .num_heads = H, .kdim = kdim, .vdim = vdim};
    test_weights ws, wc;
    test_weights_make(&ws, &self_desc, 21);
    test_weights_make(&wc, &cross_desc, 22);
    vkattn_layer *self = NULL, *cross = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &self_desc, &ws.w, &self), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_create(ctx, &cross_desc, &wc.w, &cross), VKATTN_OK);

    /* The application's buffers: its input, the query vkattn reads, its result; key and value at
     * offsets 256 and 256 + 16 * ceil(nk / 4) of one buffer; the weights at offset 512. */
    app_buffer input = app_buffer_make(a, nq * 4), query = app_buffer_make(a, nq * 4), result = app_buffer_make(a, nq * 4);
    const VkDeviceSize k_at = 256, v_at = k_at + (nk * 4 + 255) / 256 * 256;
    app_buffer kv = app_buffer_make(a, v_at + nv * 4 + 16), weights = app_buffer_make(a, 512 + nw * 4 + 16);
    test_rng rng = test_rng_make(9);
    test_fill(&rng, input.data, nq, 1.0f);
    test_fill(&rng, kv.data + k_at / 4, nk, 1.0f);
    test_fill(&rng, kv.data + v_at / 4, nv, 1.0f);

    vkattn_tensor *tq = NULL, *tk = NULL, *tv = NULL, *tw = NULL, *out = NULL, *out2 = NULL;
    CHECK_STATUS(vkattn_tensor_wrap(ctx, query.buffer, 0, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, E}, &tq), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_wrap(ctx, kv.buffer, k_at, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, S, kdim}, &tk), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_wrap(ctx, kv.buffer, v_at, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, S, vdim}, &tv), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_wrap(ctx, weights.buffer, 512, VKATTN_DTYPE_F32, 4, (uint32_t[]){B, H, L, S}, &tw),
                 VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, E}, &out), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, E}, &out2), VKATTN_OK);
    VkBuffer out_buffer = VK_NULL_HANDLE;
    VkDeviceSize out_offset = 1, out_size = 0;
    CHECK_STATUS(vkattn_tensor_vulkan_buffer(out, &out_buffer, &out_offset, &out_size), VKATTN_OK);
    CHECK(out_buffer != VK_NULL_HANDLE && out_offset % 4 == 0 && out_size >= nq * 4);

    app_begin(a);
    app_scale(a, input.buffer, 0, query.buffer, 0, (uint32_t)nq, 2.0f);
    app_barrier(a, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VKATTN_PIPELINE_STAGES,
                VKATTN_ACCESS_READ | VKATTN_ACCESS_WRITE);
    vkattn_forward_desc fs = {.query = tq, .output = out, .causal = 1, .path = VKATTN_PATH_FUSED};
    CHECK_STATUS(vkattn_forward_record(self, &fs, a->cmd), VKATTN_OK);
    vkattn_forward_desc fc = {.query = tq, .key = tk, .value = tv, .output = out2, .attn_weights = tw};
    CHECK_STATUS(vkattn_forward_record(cross, &fc, a->cmd), VKATTN_OK);
    app_barrier(a, VKATTN_PIPELINE_STAGES, VKATTN_ACCESS_WRITE, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                VK_ACCESS_SHADER_READ_BIT);
    app_scale(a, out_buffer, (uint32_t)(out_offset / 4), result.buffer, 0, (uint32_t)nq, 0.5f);
    app_barrier(a, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VKATTN_PIPELINE_STAGES,
                VK_ACCESS_SHADER_WRITE_BIT | VKATTN_ACCESS_WRITE, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    /* Nothing ran yet: recording only records. */
    CHECK(result.data[0] == 0.0f && result.data[nq - 1] == 0.0f);
    app_submit_wait(a);

    float *q2 = malloc(nq * 4), *want = malloc(nq * 4), *want2 = malloc(nq * 4), *want_w = malloc(nw * 4);
    float *got2 = malloc(nq * 4);
    for (size_t i = 0; i < nq; i++) q2[i] = 2.0f * input.data[i];
    vkattn_host_forward_desc hs = {.batch = B, .query_len = L, .query = q2, .output = want, .causal = 1};
    CHECK_STATUS(vkattn_reference_forward(&self_desc, &ws.w, &hs, &err), VKATTN_OK);
    for (size_t i = 0; i < nq; i++) want[i] *= 0.5f;
    check_close("producer -> self-attention -> consumer", result.data, want, nq);
    vkattn_host_forward_desc hc = {.batch = B, .query_len = L, .key_len = S, .query = q2, .key = kv.data + k_at / 4,
                                   .value = kv.data + v_at / 4, .output = want2, .attn_weights = want_w};
    CHECK_STATUS(vkattn_reference_forward(&cross_desc, &wc.w, &hc, &err), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_read(out2, got2, nq * 4), VKATTN_OK);
    check_close("cross-attention on wrapped key/value at offsets", got2, want2, nq);
    check_close("attention weights into a wrapped buffer at 512", weights.data + 128, want_w, nw);
    /* The bytes around the wrapped windows are untouched. */
    CHECK(weights.data[127] == 0.0f && weights.data[128 + nw] == 0.0f);
    vkattn_forward_stats st;
    CHECK_STATUS(vkattn_layer_last_stats(cross, &st), VKATTN_OK);
    CHECK(st.path == VKATTN_PATH_UNFUSED && !st.timed && st.submits == 0);

    /* Region reads and writes of a wrapped tensor go through vkattn's own queue. */
    float four[4] = {1, 2, 3, 4}, back[4] = {0};
    CHECK_STATUS(vkattn_tensor_write_region(tq, 8 * 4, four, sizeof four), VKATTN_OK);
    CHECK(query.data[8] == 1.0f && query.data[11] == 4.0f);
    CHECK_STATUS(vkattn_tensor_read_region(tk, 4, back, 8), VKATTN_OK);
    CHECK(back[0] == kv.data[k_at / 4 + 1] && back[1] == kv.data[k_at / 4 + 2]);

    vkattn_tensor_destroy(tq), vkattn_tensor_destroy(tk), vkattn_tensor_destroy(tv), vkattn_tensor_destroy(tw);
    vkattn_tensor_destroy(out), vkattn_tensor_destroy(out2);
    vkattn_layer_destroy(self), vkattn_layer_destroy(cross);
    vkattn_context_destroy(ctx);
    /* vkattn_tensor_destroy left the application's buffers alone: they are still usable. */
    app_begin(a);
    app_scale(a, kv.buffer, (uint32_t)(k_at / 4), kv.buffer, 0, 4, 1.0f);
    app_submit_wait(a);
    CHECK(kv.data[0] == kv.data[k_at / 4]);
    app_buffer_free(a, &input), app_buffer_free(a, &query), app_buffer_free(a, &result);
    app_buffer_free(a, &kv), app_buffer_free(a, &weights);
    free(q2), free(want), free(want2), free(want_w), free(got2);
    test_weights_free(&ws), test_weights_free(&wc);
}

/* Bad descriptions of the application's device, and bad wraps and records: clear errors, nothing
 * of the application's changed (the test goes on using its device). */
static void test_external_errors(app *a)
{
    vkattn_context *ctx = NULL;
    vkattn_error err = {0};
    vkattn_external_device ext = external_of(a, NULL);
    CHECK_STATUS(vkattn_context_create_external(NULL, &ctx, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_context_create_external(&ext, NULL, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_external_device bad = ext;
    bad.queue = VK_NULL_HANDLE;
    CHECK_STATUS(vkattn_context_create_external(&bad, &ctx, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "queue is not given") != NULL);
    bad = ext, bad.queue_lock = lock_queue;
    CHECK_STATUS(vkattn_context_create_external(&bad, &ctx, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "queue_unlock") != NULL);
    bad = ext, bad.api_version = VK_API_VERSION_1_0;
    CHECK_STATUS(vkattn_context_create_external(&bad, &ctx, &err), VKATTN_ERROR_UNSUPPORTED);
    bad = ext, bad.queue_family_index = 99;
    CHECK_STATUS(vkattn_context_create_external(&bad, &ctx, &err), VKATTN_ERROR_UNSUPPORTED);
    CHECK(strstr(err.message, "queue family 99") != NULL);
    bad = ext, bad.features = 1u << 7;
    CHECK_STATUS(vkattn_context_create_external(&bad, &ctx, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_context_desc validate = {.validation = VKATTN_VALIDATION_ON};
    bad = ext, bad.options = &validate;
    CHECK_STATUS(vkattn_context_create_external(&bad, &ctx, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_context_desc unknown_tuning = {.tuning = "no-such-tuning"};
    bad = ext, bad.options = &unknown_tuning;
    CHECK_STATUS(vkattn_context_create_external(&bad, &ctx, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(ctx == NULL);
    vkattn_device_requirements req;
    CHECK_STATUS(vkattn_device_requirements_get(a->gipa, a->instance, VK_NULL_HANDLE, &req, &err),
                 VKATTN_ERROR_INVALID_ARGUMENT);

    CHECK_STATUS(vkattn_context_create_external(&ext, &ctx, &err), VKATTN_OK);
    if (!ctx) return;
    app_buffer b = app_buffer_make(a, 4096);
    vkattn_tensor *t = NULL;
    const uint32_t dims[3] = {1, 4, 8};
    CHECK_STATUS(vkattn_tensor_wrap(ctx, b.buffer, 4, VKATTN_DTYPE_F32, 3, dims, &t), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "alignment") != NULL);
    CHECK_STATUS(vkattn_tensor_wrap(ctx, b.buffer, 0, VKATTN_DTYPE_F32, 3, (uint32_t[]){64, 64, 8}, &t),
                 VKATTN_ERROR_SHAPE);
    /* an offset near 2^64: the message names it and the size, no wrapped byte range */
    CHECK_STATUS(vkattn_tensor_wrap(ctx, b.buffer, UINT64_MAX - 15, VKATTN_DTYPE_F32, 3, dims, &t), VKATTN_ERROR_SHAPE);
    CHECK_MSG(strstr(vkattn_context_last_error(ctx), "128 bytes") &&
                  strstr(vkattn_context_last_error(ctx), "offset 18446744073709551600"),
              "message \"%s\"", vkattn_context_last_error(ctx));
    CHECK_STATUS(vkattn_tensor_wrap(ctx, VK_NULL_HANDLE, 0, VKATTN_DTYPE_F32, 3, dims, &t), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_tensor_wrap(ctx, b.buffer, 0, VKATTN_DTYPE_F32, 0, dims, &t), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(t == NULL);
    CHECK_STATUS(vkattn_tensor_wrap(ctx, b.buffer, 0, VKATTN_DTYPE_F32, 3, dims, &t), VKATTN_OK);
    /* Region copies: whole elements inside the tensor only. */
    float v[4] = {0};
    CHECK_STATUS(vkattn_tensor_write_region(t, 2, v, 4), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_tensor_write_region(t, 124, v, 8), VKATTN_ERROR_SHAPE);
    CHECK_STATUS(vkattn_tensor_read_region(t, 0, NULL, 4), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_tensor_write(t, v, 16), VKATTN_ERROR_SHAPE);
    CHECK(strstr(vkattn_context_last_error(ctx), "_region") != NULL);

    vkattn_layer_desc ld = {.embed_dim = 8, .num_heads = 2};
    test_weights tw;
    test_weights_make(&tw, &ld, 3);
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
    vkattn_tensor *out = NULL;
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &out), VKATTN_OK);
    vkattn_forward_desc f = {.query = t, .output = out};
    CHECK_STATUS(vkattn_forward_record(layer, &f, VK_NULL_HANDLE), VKATTN_ERROR_INVALID_ARGUMENT);
    f.path = VKATTN_PATH_CPU;
    app_begin(a);
    CHECK_STATUS(vkattn_forward_record(layer, &f, a->cmd), VKATTN_ERROR_UNSUPPORTED);
    f.path = VKATTN_PATH_AUTO;
    f.output = t; /* the output may not be an input */
    CHECK_STATUS(vkattn_forward_record(layer, &f, a->cmd), VKATTN_ERROR_INVALID_ARGUMENT);
    app_submit_wait(a); /* an empty command buffer: the failed records recorded nothing */
    vkattn_layer_destroy(layer);
    /* Tensors left alive are destroyed with the context (the wrapped one forgets the buffer). */
    vkattn_context_destroy(ctx);
    app_begin(a);
    app_scale(a, b.buffer, 0, b.buffer, 64, 4, 1.0f);
    app_submit_wait(a);
    app_buffer_free(a, &b);
    test_weights_free(&tw);
}

/* A record that fails at any of its failure points (host allocation or Vulkan call, in a fresh
 * context so that pipelines and pools are made inside the record) leaves the application's
 * command buffer as it was: the producer and consumer around it run, and the validation layer
 * sees nothing invalid (the reviewer's half-recorded forward would be an invalid descriptor set). */
static void test_record_faults(app *a)
{
    vkattn_external_device ext = external_of(a, NULL);
    vkattn_layer_desc ld = {.embed_dim = 16, .num_heads = 2};
    test_weights tw;
    test_weights_make(&tw, &ld, 31);
    const uint32_t dims[3] = {1, 4, 16};
    app_buffer buf = app_buffer_make(a, 1024);
    uint64_t points[2] = {0, 0}; /* host, Vulkan: counted on an unarmed record */
    const fault_sample sample = fault_sample_from_env(); /* every point, or CI's sample */
    int bad = 0;
    for (int kind = -1; kind < 2; kind++) {
        for (uint64_t n = kind < 0 ? 1 : sample.first; kind < 0 ? n == 1 : n <= points[kind];
             n += kind < 0 ? 1 : sample.stride) {
            vkattn_context *ctx = NULL;
            CHECK_STATUS(vkattn_context_create_external(&ext, &ctx, NULL), VKATTN_OK);
            if (!ctx) break;
            vkattn_layer *layer = NULL;
            vkattn_tensor *q = NULL, *y = NULL;
            CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
            CHECK_STATUS(vkattn_tensor_wrap(ctx, buf.buffer, 0, VKATTN_DTYPE_F32, 3, dims, &q), VKATTN_OK);
            CHECK_STATUS(vkattn_tensor_wrap(ctx, buf.buffer, 256, VKATTN_DTYPE_F32, 3, dims, &y), VKATTN_OK);
            for (int i = 0; i < 64; i++) buf.data[i] = 0.25f * (float)(i % 7), buf.data[192 + i] = 0.0f;
            vka_faults f = {0};
            if (kind == 0) f.host_fail_at = n;
            if (kind == 1) f.vk_fail_at = n;
            vka_context_set_faults(ctx, &f);
            app_begin(a);
            app_scale(a, buf.buffer, 0, buf.buffer, 128, 64, 2.0f); /* producer: 2x of [0, 64) into [128, 192) */
            app_barrier(a, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VKATTN_PIPELINE_STAGES,
                        VKATTN_ACCESS_READ | VKATTN_ACCESS_WRITE);
            vkattn_forward_desc fd = {.query = q, .output = y};
            vkattn_status st = vkattn_forward_record(layer, &fd, a->cmd);
            if (kind >= 0) {
                /* The layer runs a forward of its own before the application submits: had the
                 * failed record left commands behind, their descriptor sets would now be reset
                 * under the application's command buffer. */
                vka_context_set_faults(ctx, NULL);
                vkattn_tensor *q2 = NULL, *y2 = NULL;
                CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &q2), VKATTN_OK);
                CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &y2), VKATTN_OK);
                vkattn_forward_desc own = {.query = q2, .output = y2};
                CHECK_STATUS(vkattn_forward(layer, &own), VKATTN_OK);
            }
            uint32_t messages_before = a->messages;
            app_barrier(a, VKATTN_PIPELINE_STAGES, VKATTN_ACCESS_WRITE, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                        VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
            app_scale(a, buf.buffer, 128, buf.buffer, 192, 64, 0.5f); /* consumer of the producer's output */
            app_submit_wait(a);
            if (kind < 0) {
                CHECK_STATUS(st, VKATTN_OK);
                points[0] = ctx->dev.faults.host_calls, points[1] = ctx->dev.faults.vk_calls;
            } else {
                vkattn_status want = kind == 0 ? VKATTN_ERROR_OUT_OF_HOST_MEMORY : VKATTN_ERROR_OUT_OF_DEVICE_MEMORY;
                if (st != want) {
                    bad++;
                    printf("  record fault %d at point %llu gave %s\n", kind, (unsigned long long)n, vkattn_status_name(st));
                }
            }
            int consumed = 1;
            for (int i = 0; i < 64; i++) consumed &= buf.data[192 + i] == buf.data[i];
            if (!consumed || a->messages != messages_before) {
                bad++;
                printf("  record fault %d at point %llu: consumer %s, %u validation messages\n", kind,
                       (unsigned long long)n, consumed ? "ok" : "wrong", a->messages - messages_before);
            }
            vka_context_set_faults(ctx, NULL);
            vkattn_layer_destroy(layer);
            vkattn_context_destroy(ctx); /* takes the wrapped tensors (forgetting the buffer) */
        }
    }
    CHECK_MSG(bad == 0, "%d failure points misbehaved", bad);
    CHECK_MSG(points[1] > 0, "the unarmed record made no Vulkan call to fail");
    printf("  %llu host allocation and %llu Vulkan call points of a first record%s\n", (unsigned long long)points[0],
           (unsigned long long)points[1], fault_sample_note(sample));
    app_buffer_free(a, &buf);
    test_weights_free(&tw);
}

/* Every host allocation and Vulkan call of vkattn_context_create_external failed in turn: the
 * right status, no context, nothing leaked (sanitizer build), the application's device untouched. */
static void test_external_create_faults(app *a)
{
    vkattn_external_device ext = external_of(a, NULL);
    vkattn_context *ctx = NULL;
    CHECK_STATUS(vka_context_create_external_with_faults(&ext, NULL, &ctx, NULL), VKATTN_OK);
    if (!ctx) return;
    uint64_t host_points = ctx->dev.faults.host_calls, vk_points = ctx->dev.faults.vk_calls;
    vkattn_context_destroy(ctx);
    int bad = 0;
    for (uint64_t n = 1; n <= host_points + vk_points; n++) {
        vka_faults f = {0};
        if (n <= host_points) f.host_fail_at = n;
        else f.vk_fail_at = n - host_points;
        vkattn_error err = {0};
        ctx = NULL;
        vkattn_status s = vka_context_create_external_with_faults(&ext, &f, &ctx, &err);
        vkattn_status want = n <= host_points ? VKATTN_ERROR_OUT_OF_HOST_MEMORY : VKATTN_ERROR_OUT_OF_DEVICE_MEMORY;
        if (s != want || ctx || !err.message[0]) {
            bad++;
            printf("  fault at point %llu gave %s (%s)\n", (unsigned long long)n, vkattn_status_name(s), err.message);
        }
        vkattn_context_destroy(ctx);
    }
    CHECK_MSG(bad == 0, "%d failure points misbehaved", bad);
    printf("  %llu host allocation and %llu Vulkan call points of create_external\n", (unsigned long long)host_points,
           (unsigned long long)vk_points);
    /* The application's device still works. */
    app_buffer b = app_buffer_make(a, 256);
    b.data[0] = 2.0f;
    app_begin(a);
    app_scale(a, b.buffer, 0, b.buffer, 4, 1, 2.0f);
    app_submit_wait(a);
    CHECK(b.data[4] == 4.0f);
    app_buffer_free(a, &b);
}

/* `coopmat_tuning` (label coopmat): VKATTN_TUNING=coopmat on an application's device, the process's
 * first vkattn call. Its context runs the class without matrices (an application's device keeps its
 * features); on a device without them, the refusal names the device. It once named "the Vulkan
 * loader is older than 1.3" (volk's globals, never set up for an application's instance: an outside
 * review). Exit 77 (skipped) where the device has no cooperative matrices. */
static int coopmat_tuning(app *a)
{
    queue_lock q = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    vkattn_external_device ext = external_of(a, &q);
    vkattn_context *ctx = NULL;
    vkattn_error err = {0};
    vkattn_status status = vkattn_context_create_external(&ext, &ctx, &err);
    printf("  coopmat tuning on the application's device: %s %s\n", vkattn_status_name(status), err.message);
    CHECK_MSG(!strstr(err.message, "loader"), "%s", err.message);
    int skip = status != VKATTN_OK;
    if (skip) CHECK_STATUS(status, VKATTN_ERROR_UNSUPPORTED);
    if (ctx) {
        vkattn_device_info info;
        vkattn_context_device(ctx, &info);
        printf("  tuning %s; cooperative matrices: %s\n", info.tuning, info.cooperative_matrix_note);
        CHECK(strncmp(info.tuning, "coopmat", 7) == 0 && !info.cooperative_matrix_usable &&
              strstr(info.cooperative_matrix_note, "not enabled on an application's device"));
        vkattn_context_destroy(ctx);
    }
    CHECK_MSG(a->messages == 0, "%u validation messages on the application's instance (above)", a->messages);
    app_close(a);
    int failed = test_finish();
    return failed ? failed : skip ? 77 : 0;
}

int main(int argc, char **argv)
{
    gpu_test_pin_drivers();
    const int tuning = argc > 1 && strcmp(argv[1], "coopmat_tuning") == 0;
    if (tuning) setenv("VKATTN_TUNING", "coopmat", 1);
    app a;
    if (app_open(&a)) {
        app_close(&a);
        return 1;
    }
    if (tuning) return coopmat_tuning(&a);
    RUN_TEST_WITH(test_external_context, &a);
    RUN_TEST_WITH(test_record, &a);
    RUN_TEST_WITH(test_external_errors, &a);
    RUN_TEST_WITH(test_record_faults, &a);
    RUN_TEST_WITH(test_external_create_faults, &a);
    CHECK_MSG(a.messages == 0, "%u validation messages on the application's instance (above)", a.messages);
    app_close(&a);
    return test_finish();
}
