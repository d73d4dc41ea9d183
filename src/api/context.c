/* Context lifetime: instance (with optional validation), device choice, logical device, queue,
 * and the objects the rest of the library shares; or the same on an application's instance,
 * device and queue (vkattn_context_create_external), which are then never destroyed here. Setup
 * and teardown are mirror images. */
#include "api/context.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/coopmat_check.h"
#include "device/physical.h"
#include "pipeline/kernels.h"
#include "plan/matmul.h"
#include "plan/plan.h"
#include "vkattn_vulkan.h"

#define VKA_VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"
#define VKA_MAX_DEVICES 16

/* Counts validation warnings and errors so tests can fail on them; prints each one (but, inside
 * vkCreateDevice, those not about vkattn's calls: vka_validation_message_ignored). */
static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                            VkDebugUtilsMessageTypeFlagsEXT type,
                                                            const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                            void *user)
{
    vkattn_context *ctx = user;
    if ((type & (VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT)) &&
        severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT &&
        !(ctx->creating_device && vka_validation_message_ignored(data))) {
        ctx->validation_messages++;
        fprintf(stderr, "vkattn: validation %s: %s\n",
                severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning",
                data && data->pMessage ? data->pMessage : "(no message)");
    }
    return VK_FALSE;
}

/* The messenger of a context: warnings and errors go to on_validation_message with `ctx`. */
static VkDebugUtilsMessengerCreateInfoEXT messenger_info(vkattn_context *ctx, const void *next)
{
    return (VkDebugUtilsMessengerCreateInfoEXT){
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .pNext = next,
        .messageSeverity =
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation_message,
        .pUserData = ctx,
    };
}

/* 1 if the instance layer exists, 0 if not, -1 when out of memory asking. */
static int instance_has_layer(vka_faults *faults, const char *name)
{
    uint32_t count = 0;
    if (vkEnumerateInstanceLayerProperties(&count, NULL) != VK_SUCCESS || count == 0) return 0;
    VkLayerProperties *layers = vka_malloc(faults, count * sizeof *layers);
    if (!layers) return -1;
    int found = 0;
    if (vkEnumerateInstanceLayerProperties(&count, layers) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++) found = strcmp(layers[i].layerName, name) == 0;
    free(layers);
    return found;
}

/* 1 if the instance extension exists, 0 if not, -1 when out of memory asking. */
static int instance_has_extension(vka_faults *faults, const char *layer, const char *name)
{
    uint32_t count = 0;
    if (vkEnumerateInstanceExtensionProperties(layer, &count, NULL) != VK_SUCCESS || count == 0) return 0;
    VkExtensionProperties *exts = vka_malloc(faults, count * sizeof *exts);
    if (!exts) return -1;
    int found = 0;
    if (vkEnumerateInstanceExtensionProperties(layer, &count, exts) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++) found = strcmp(exts[i].extensionName, name) == 0;
    free(exts);
    return found;
}

/* The Vulkan version vkattn's own instance asks for: 1.3 where the loader has it (the
 * cooperative-matrix kernels are SPIR-V 1.6), else the loader's. Its devices are used at most at it. */
static uint32_t instance_api_version(void)
{
    uint32_t loader_version = volkGetInstanceVersion();
    return loader_version >= VK_API_VERSION_1_3   ? VK_API_VERSION_1_3
           : loader_version >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2
                                                  : VK_API_VERSION_1_1;
}

/* Creates the instance. With `ctx` and validation wanted (and installed), enables the Khronos layer
 * with synchronization validation and routes its messages to `ctx`. */
static vkattn_status create_instance(vkattn_context *ctx, int want_validation, VkInstance *out, int *validation_on,
                                     vkattn_error *error)
{
    const char *layers[1];
    const char *extensions[2];
    uint32_t layer_count = 0, extension_count = 0;
    vka_faults *faults = ctx ? &ctx->dev.faults : NULL;
    int has_layer = want_validation ? instance_has_layer(faults, VKA_VALIDATION_LAYER) : 0;
    int has_utils = has_layer > 0 ? instance_has_extension(faults, NULL, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) : 0;
    int portability = has_layer >= 0 && has_utils >= 0
                          ? instance_has_extension(faults, NULL, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)
                          : -1;
    if (has_layer < 0 || has_utils < 0 || portability < 0)
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory listing Vulkan layers");
    int validation = has_layer > 0 && has_utils > 0;
    if (validation) {
        layers[layer_count++] = VKA_VALIDATION_LAYER;
        extensions[extension_count++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    }
    /* MoltenVK and other non-conformant implementations are only listed with this extension. */
    VkInstanceCreateFlags flags = 0;
    if (portability) {
        extensions[extension_count++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
        flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }

    if (volkGetInstanceVersion() < VK_API_VERSION_1_1)
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED, "the Vulkan loader supports only Vulkan 1.0; vkattn needs 1.1");
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "vkattn",
        .pEngineName = "vkattn",
        .engineVersion = VK_MAKE_API_VERSION(0, VKATTN_VERSION_MAJOR, VKATTN_VERSION_MINOR, VKATTN_VERSION_PATCH),
        .apiVersion = instance_api_version(),
    };
    VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features = {
        .sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
        .enabledValidationFeatureCount = 1,
        .pEnabledValidationFeatures = enables,
    };
    /* Chained here, the messenger also reports on vkCreateInstance and vkDestroyInstance. */
    VkDebugUtilsMessengerCreateInfoEXT messenger = messenger_info(ctx, &features);
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validation ? &messenger : NULL,
        .flags = flags,
        .pApplicationInfo = &app,
        .enabledLayerCount = layer_count,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = extension_count,
        .ppEnabledExtensionNames = extensions,
    };
    VkResult r = faults && vka_fault_vk(faults) ? vka_injected_result(&ctx->dev) : vkCreateInstance(&info, NULL, out);
    if (r != VK_SUCCESS)
        return vka_error_set(error, r == VK_ERROR_INCOMPATIBLE_DRIVER ? VKATTN_ERROR_NO_DEVICE : vka_status_of_result(r),
                             "vkCreateInstance failed: %s", vka_vk_result_name(r));
    *validation_on = validation;
    return VKATTN_OK;
}

/* What becomes of the cooperative-matrix kernels on a device. */
typedef enum coopmat_state {
    COOPMAT_DEVICE_LACKS, /* the device cannot run them (physical.c's note says why) */
    COOPMAT_NOT_BUILT,    /* this build has none, or the loader is older than Vulkan 1.3 */
    COOPMAT_OFF,          /* turned off: VKATTN_COOPMAT=0 or vkattn_context_desc.no_cooperative_matrix */
    COOPMAT_ON
} coopmat_state;

/* Adds the build and the switches to the device's own verdict (vka_describe_device), and says
 * which of them decided; info's usable flag and note follow. `own_instance`: vkattn's instance,
 * whose version is the loader's (an application's instance is its own, and volk's globals are
 * not set up for it). */
static coopmat_state coopmat_decide(vkattn_device_info *info, int off_by_desc, int own_instance)
{
    if (!info->cooperative_matrix_usable) return COOPMAT_DEVICE_LACKS;
    const uint32_t *code;
    size_t bytes;
    const char *env = getenv("VKATTN_COOPMAT");
    coopmat_state state = COOPMAT_ON;
    const char *why = NULL;
    if (!vka_embedded_spirv(vka_kernel_get(VKA_KERNEL_MATMUL_CM)->spirv, &code, &bytes))
        state = COOPMAT_NOT_BUILT, why = "this build has no cooperative-matrix kernels (see VKATTN_GLSLANG_COOPMAT)";
    else if (own_instance && volkGetInstanceVersion() < VK_API_VERSION_1_3)
        state = COOPMAT_NOT_BUILT, why = "the Vulkan loader is older than 1.3";
    else if (env && strcmp(env, "0") == 0)
        state = COOPMAT_OFF, why = "turned off by VKATTN_COOPMAT=0";
    else if (off_by_desc)
        state = COOPMAT_OFF, why = "turned off by vkattn_context_desc.no_cooperative_matrix";
    info->cooperative_matrix_usable = state == COOPMAT_ON;
    snprintf(info->cooperative_matrix_note, sizeof info->cooperative_matrix_note, "%s", why ? why : "");
    return state;
}

/* Enumerates and describes every device of `instance` (at most VKA_MAX_DEVICES). */
static vkattn_status describe_all(const vka_instance_fns *fns, VkInstance instance, VkPhysicalDevice *devices,
                                  vkattn_device_info *infos, uint32_t *count, vkattn_error *error)
{
    uint32_t n = VKA_MAX_DEVICES;
    VkResult r = fns->vkEnumeratePhysicalDevices(instance, &n, devices);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE)
        return vka_error_set(error, vka_status_of_result(r), "vkEnumeratePhysicalDevices failed: %s",
                             vka_vk_result_name(r));
    for (uint32_t i = 0; i < n; i++) {
        vka_describe_device(fns, devices[i], i, &infos[i], NULL);
        coopmat_decide(&infos[i], 0, 1);
        /* the class follows the switches and the build, as a context's would */
        snprintf(infos[i].tuning, sizeof infos[i].tuning, "%s", vka_tuning_for(&infos[i], NULL)->name);
    }
    if (n > 0) infos[vka_default_device(infos, n)].is_default = 1;
    *count = n;
    return VKATTN_OK;
}

vkattn_status vkattn_list_devices(vkattn_device_info *infos, uint32_t capacity, uint32_t *count, vkattn_error *error)
{
    if (!count || (capacity > 0 && !infos))
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_list_devices: count is NULL, or infos is NULL with capacity > 0");
    vkattn_status status = vka_loader_init(error);
    if (status != VKATTN_OK) return status;
    VkInstance instance = VK_NULL_HANDLE;
    int validation_on = 0;
    status = create_instance(NULL, 0, &instance, &validation_on, error);
    if (status != VKATTN_OK) return status;

    vka_instance_fns fns;
    VkPhysicalDevice devices[VKA_MAX_DEVICES];
    vkattn_device_info all[VKA_MAX_DEVICES];
    uint32_t n = 0;
    status = vka_load_instance_functions(vka_loader_entry(), instance, &fns, error);
    if (status == VKATTN_OK) status = describe_all(&fns, instance, devices, all, &n, error);
    if (status == VKATTN_OK) {
        for (uint32_t i = 0; i < n && i < capacity; i++) infos[i] = all[i];
        *count = n;
    }
    PFN_vkDestroyInstance destroy = (PFN_vkDestroyInstance)vka_loader_entry()(instance, "vkDestroyInstance");
    if (destroy) destroy(instance, NULL);
    return status;
}

static vkattn_status create_device(vkattn_context *ctx)
{
    vkattn_status status = VKATTN_OK;
    uint32_t timestamp_bits = 0;
    if (!vka_find_compute_queue(&ctx->dev.ifn, ctx->dev.physical, &ctx->dev.queue_family, &timestamp_bits))
        return vka_fail(&ctx->dev, VKATTN_ERROR_UNSUPPORTED, "device \"%s\" has no compute queue", ctx->dev.info.name);

    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = ctx->dev.queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    /* float16 arithmetic is core in Vulkan 1.2 (the peak microkernel uses it where present). */
    VkPhysicalDeviceShaderFloat16Int8Features float16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
        .shaderFloat16 = ctx->dev.info.shader_float16 ? VK_TRUE : VK_FALSE,
    };
    VkPhysicalDevice16BitStorageFeatures storage16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
        .pNext = ctx->dev.info.api_version >= VK_API_VERSION_1_2 ? &float16 : NULL,
        .storageBuffer16BitAccess = ctx->dev.info.storage_16bit ? VK_TRUE : VK_FALSE,
    };
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &storage16};
    const char *extensions[4];
    uint32_t extension_count = 0;
    /* Required wherever the implementation advertises it (MoltenVK). */
    if (vka_device_has_extension(&ctx->dev.ifn, ctx->dev.physical, "VK_KHR_portability_subset"))
        extensions[extension_count++] = "VK_KHR_portability_subset";
    /* The cooperative-matrix kernels (when usable, coopmat_decide): the extension and its feature,
     * the Vulkan memory model their SPIR-V declares (with device scope, which the other kernels'
     * Device-scope atomics need once the model is on), maintenance4 for their LocalSizeId workgroup
     * size (SPIR-V 1.6), and full subgroups of a required size, which their subgroup-scope
     * matrices are laid out over. */
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coopmat = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR, .cooperativeMatrix = VK_TRUE};
    VkPhysicalDeviceMaintenance4Features maintenance4 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES, .pNext = &coopmat, .maintenance4 = VK_TRUE};
    VkPhysicalDeviceSubgroupSizeControlFeatures size_control = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES, .pNext = &maintenance4,
        .subgroupSizeControl = VK_TRUE, .computeFullSubgroups = VK_TRUE};
    /* With the memory model on, Device-scope atomics (kv_append's quantized build) need its device
     * scope too, where the device has it (the validation layer: VUID-RuntimeSpirv-vulkanMemoryModel-06265). */
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES, .pNext = &size_control,
        .vulkanMemoryModel = VK_TRUE, .vulkanMemoryModelDeviceScope = VK_TRUE};
    if (ctx->dev.info.cooperative_matrix_usable) {
        float16.pNext = &memory_model;
        extensions[extension_count++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
    }
    /* VK_NV_cooperative_matrix2's row reductions, conversions and per-element operations, which
     * attn_cm2 keeps its softmax in the matrices with, where the device has all three and
     * VKATTN_COOPMAT2=1 asks for them: opt-in until attn_cm2 has run on a GPU (it has on Mesa 26
     * lavapipe only). */
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV coopmat2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV,
        .cooperativeMatrixReductions = VK_TRUE, .cooperativeMatrixConversions = VK_TRUE,
        .cooperativeMatrixPerElementOperations = VK_TRUE};
    const uint32_t matrix2_needed = VKATTN_MATRIX2_REDUCTIONS | VKATTN_MATRIX2_CONVERSIONS | VKATTN_MATRIX2_PER_ELEMENT;
    const char *matrix2_env = getenv("VKATTN_COOPMAT2");
    if (ctx->dev.info.cooperative_matrix_usable && (ctx->dev.info.cooperative_matrix2 & matrix2_needed) == matrix2_needed &&
        matrix2_env && strcmp(matrix2_env, "1") == 0) {
        coopmat.pNext = &coopmat2;
        extensions[extension_count++] = VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME;
        ctx->dev.matrix2 = 1;
    }
    /* The compiler's statistics of every pipeline (a tuning aid: registers and spills show what a
     * tile costs), asked for by VKATTN_PIPELINE_STATS=1. */
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pNext = features.pNext, .pipelineExecutableInfo = VK_TRUE};
    const char *stats_env = getenv("VKATTN_PIPELINE_STATS");
    if (stats_env && strcmp(stats_env, "1") == 0) {
        if (vka_device_has_extension(&ctx->dev.ifn, ctx->dev.physical, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
            features.pNext = &executable;
            extensions[extension_count++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
            ctx->dev.pipeline_stats = 1;
        } else
            fprintf(stderr, "vkattn: VKATTN_PIPELINE_STATS: %s has no VK_KHR_pipeline_executable_properties; no statistics\n",
                    ctx->dev.info.name);
    }
    VkDeviceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &features,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = extension_count,
        .ppEnabledExtensionNames = extensions,
    };
    ctx->creating_device = 1;
    VKA_VK(&ctx->dev, ctx->dev.ifn.vkCreateDevice(ctx->dev.physical, &info, NULL, &ctx->dev.device));
    ctx->creating_device = 0;
    vka_load_device_table(&ctx->dev.ifn, ctx->dev.device, &ctx->dev.vk);
    ctx->dev.vk.vkGetDeviceQueue(ctx->dev.device, ctx->dev.queue_family, 0, &ctx->dev.queue);
fail:
    ctx->creating_device = 0;
    return status;
}

static vkattn_status create_shared_objects(vkattn_context *ctx, const vkattn_context_desc *desc)
{
    vkattn_status status = VKATTN_OK;
    VKA_TRY(vka_transfer_create(&ctx->dev, &ctx->transfer));
    VKA_TRY(vka_buffer_create(&ctx->dev, 16, VKA_MEMORY_DEVICE, "the placeholder buffer", &ctx->dummy));
    VKA_TRY(vka_pipeline_cache_init(&ctx->dev, &ctx->pipelines, desc->pipeline_cache_path, desc->pipeline_cache_data,
                                    desc->pipeline_cache_size));
fail:
    return status;
}

void vka_context_set_faults(vkattn_context *ctx, const vka_faults *faults)
{
    vka_faults none = {0};
    ctx->dev.faults = faults ? *faults : none;
    ctx->dev.faults.host_calls = ctx->dev.faults.vk_calls = 0;
}

static int validation_wanted(vkattn_validation v)
{
    if (v == VKATTN_VALIDATION_ON) return 1;
    if (v == VKATTN_VALIDATION_OFF) return 0;
    const char *env = getenv("VKATTN_VALIDATION");
    return env && strcmp(env, "1") == 0;
}

vkattn_status vkattn_context_create(const vkattn_context_desc *desc, vkattn_context **out, vkattn_error *error)
{
    return vka_context_create_with_faults(desc, NULL, out, error);
}

/* The loop budget the plan keeps to: the caller's or VKATTN_LOOP_BUDGET, capped at the device's. */
static vkattn_status resolve_loop_budget(vkattn_context *ctx, uint32_t requested)
{
    const char *env = getenv("VKATTN_LOOP_BUDGET");
    if (!requested && env && *env) {
        char *end;
        unsigned long long value = strtoull(env, &end, 10);
        if (*end || value == 0 || value > UINT32_MAX)
            return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT,
                            "VKATTN_LOOP_BUDGET=\"%s\" is not a loop-trip count from 1 to 4294967295", env);
        requested = (uint32_t)value;
    }
    uint32_t device = ctx->dev.info.loop_budget;
    ctx->loop_budget = requested && (!device || requested < device) ? requested : device;
    ctx->dev.info.loop_budget = ctx->loop_budget;
    return VKATTN_OK;
}

/* A zeroed context with empty object lists. */
static vkattn_context *context_alloc(const vka_faults *faults)
{
    vkattn_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return NULL;
    vka_context_set_faults(ctx, faults);
    vka_list_init(&ctx->children);
    return ctx;
}

/* The kernel tuning: the one asked for (the description's, else VKATTN_TUNING), else the device's
 * class; a tuning the device cannot run is refused. */
static vkattn_status choose_tuning(vkattn_context *ctx, const vkattn_context_desc *desc, coopmat_state coopmat)
{
    const char *tuning = desc->tuning, *tuning_source = "tuning";
    if (!tuning && (tuning = getenv("VKATTN_TUNING")) && !*tuning) tuning = NULL;
    if (tuning && tuning != desc->tuning) tuning_source = "VKATTN_TUNING";
    vkattn_device_info *info = &ctx->dev.info;
    char why[600];
    if (vka_tuning_parse(info, tuning ? tuning : "", &ctx->tuning_own, &ctx->tuning_forced, why, sizeof why))
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "%s \"%.64s\": %s", tuning_source, tuning, why);
    ctx->tuning = &ctx->tuning_own;
    size_t changes = vka_tuning_changes(ctx->tuning, info, why, sizeof why);
    if (changes) ctx->tuning_forced = 1; /* the fields stay set, as a named class stays */
    /* A forced cooperative-matrix class on a device or build that cannot run its kernels is refused;
     * turned off, it runs with the plain matmul (the switch is there to route around a driver). */
    if (ctx->tuning->cm_frags_m && (coopmat == COOPMAT_DEVICE_LACKS || coopmat == COOPMAT_NOT_BUILT))
        return vka_fail(&ctx->dev, VKATTN_ERROR_UNSUPPORTED,
                        "%s \"%s\" needs cooperative matrices, which device \"%s\" cannot give vkattn: %s",
                        tuning_source, ctx->tuning->name, info->name,
                        info->cooperative_matrix ? info->cooperative_matrix_note : "no VK_KHR_cooperative_matrix");
    if (vka_tuning_refusal(ctx->tuning, info, why, sizeof why))
        return vka_fail(&ctx->dev, VKATTN_ERROR_UNSUPPORTED, "%s \"%s\" cannot run on device \"%s\": %s", tuning_source,
                        ctx->tuning->name, info->name, why);
    char name[64];
    snprintf(name, sizeof name, "%.16s, %zu field%s set", ctx->tuning->name, changes, changes == 1 ? "" : "s");
    snprintf(info->tuning, sizeof info->tuning, "%.31s", changes ? name : ctx->tuning->name);
    return VKATTN_OK;
}

/* The cooperative-matrix kernels' subgroup size on this context: the tuning's choice where they
 * are enabled (pipelines require it, plans make workgroups of it), else none. */
static void set_matrix_subgroup(vkattn_context *ctx)
{
    ctx->dev.matrix_subgroup =
        ctx->dev.info.cooperative_matrix_usable ? vka_matrix_subgroup_for(ctx->tuning, &ctx->dev.info) : 0;
}

/* Where cooperative matrices are enabled: the self-test (coopmat_check.h), with the tile of the
 * context's tuning, or of the "coopmat" class where the tuning has none. A wrong answer or a
 * failed call turns them off for the context, with the reason in the device's note, and a class
 * chosen for them gives way to the device's class without them; a forced tuning stays, with the
 * plain matmul (as with VKATTN_COOPMAT=0). */
static vkattn_status check_coopmat(vkattn_context *ctx)
{
    vkattn_device_info *info = &ctx->dev.info;
    const vka_tuning *t = ctx->tuning->cm_frags_m ? ctx->tuning : vka_tuning_for(info, "coopmat");
    char note[sizeof info->cooperative_matrix_note] = "";
    int passed = 0;
    const vka_plan_limits limits = vka_context_plan_limits(ctx);
    /* a tuning string's tile that this device cannot hold leaves the projections to the next
     * kernel; the matrices are checked with the class's own tile */
    if (t == ctx->tuning && !vka_matmul_cm_tile_for(t, &limits, t->cm_min_rows, 0).wg) t = vka_tuning_for(info, t->name);
    vkattn_status status =
        vka_coopmat_self_test(&ctx->dev, &ctx->transfer, &ctx->pipelines, &limits, t, &passed, note, sizeof note);
    if (status == VKATTN_ERROR_DEVICE_LOST)
        return vka_fail(&ctx->dev, status, "the cooperative-matrix self-test lost the device (%s); VKATTN_COOPMAT=0 "
                        "leaves cooperative matrices alone", ctx->dev.error.message);
    if (status != VKATTN_OK) return status;
    info->cooperative_matrix_checked = passed;
    if (passed) {
        /* the accumulators' rows, for attn_cm's softmax in registers (none: in shared memory),
         * where the context's tuning would take that build */
        if (!ctx->tuning->cm_attn_subgroups || !ctx->tuning->cm_attn_reg_softmax) return VKATTN_OK;
        status = vka_matrix_rows_probe(&ctx->dev, &ctx->transfer, &ctx->pipelines, &limits, &ctx->dev.matrix_rows,
                                       ctx->dev.matrix_rows_note, sizeof ctx->dev.matrix_rows_note);
        if (status == VKATTN_ERROR_DEVICE_LOST)
            return vka_fail(&ctx->dev, status, "the cooperative-matrix layout probe lost the device (%s); "
                            "VKATTN_COOPMAT=0 leaves cooperative matrices alone", ctx->dev.error.message);
        return status;
    }
    info->cooperative_matrix_usable = 0;
    ctx->dev.matrix2 = 0;
    snprintf(info->cooperative_matrix_note, sizeof info->cooperative_matrix_note, "%s", note);
    if (!ctx->tuning_forced) {
        ctx->tuning = vka_tuning_for(info, NULL);
        snprintf(info->tuning, sizeof info->tuning, "%s", ctx->tuning->name);
    }
    set_matrix_subgroup(ctx);
    return VKATTN_OK;
}

/* What follows the device's description, for both kinds of context: the kernel tuning, the loop
 * budget, the Vulkan 1.1 check, then (`make_device`) the logical device, then the shared objects
 * and, where cooperative matrices are enabled, their self-test. */
static vkattn_status context_finish(vkattn_context *ctx, const vkattn_context_desc *desc, int make_device)
{
    vkattn_status status = VKATTN_OK;
    if (ctx->dev.faults.hide_16bit_storage) ctx->dev.info.storage_16bit = 0;
    vkattn_device_info *info = &ctx->dev.info;
    coopmat_state coopmat = coopmat_decide(info, desc->no_cooperative_matrix, make_device);
    if (!make_device && coopmat == COOPMAT_ON) { /* an application's device: its features are its own */
        info->cooperative_matrix_usable = 0;
        coopmat = COOPMAT_OFF;
        snprintf(info->cooperative_matrix_note, sizeof info->cooperative_matrix_note,
                 "not enabled on an application's device");
    }
    VKA_TRY(choose_tuning(ctx, desc, coopmat));
    set_matrix_subgroup(ctx);
    VKA_TRY(resolve_loop_budget(ctx, desc->loop_budget));
    if (info->api_version < VK_API_VERSION_1_2) /* float controls: core from 1.2, no extension enabled before */
        ctx->dev.caps.preserve_inf_nan_f32 = ctx->dev.caps.preserve_inf_nan_f16 = 0;
    if (ctx->dev.info.api_version < VK_API_VERSION_1_1) {
        status = vka_fail(&ctx->dev, VKATTN_ERROR_UNSUPPORTED, "device \"%s\" supports only Vulkan 1.0; vkattn needs 1.1",
                          ctx->dev.info.name);
        goto fail;
    }
    if (make_device) VKA_TRY(create_device(ctx));
    VKA_TRY(create_shared_objects(ctx, desc));
    if (info->cooperative_matrix_usable) VKA_TRY(check_coopmat(ctx));
fail:
    return status;
}

/* The switches read from the environment say 0 or 1 (or are unset or empty): "off" or "false"
 * in VKATTN_COOPMAT would otherwise leave the extension on without a word. */
static vkattn_status check_env_switches(vkattn_error *error)
{
    static const char *const names[] = {"VKATTN_VALIDATION", "VKATTN_COOPMAT", "VKATTN_COOPMAT2", "VKATTN_PIPELINE_STATS"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v && strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
            return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "%s=\"%.64s\" is neither 0 nor 1", names[i], v);
    }
    return VKATTN_OK;
}

/* The pipeline cache comes from a file or from the caller's bytes, not both. */
static vkattn_status check_pipeline_cache_options(const vkattn_context_desc *desc, vkattn_error *error)
{
    if (desc->pipeline_cache_path && desc->pipeline_cache_data)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "pipeline_cache_path and pipeline_cache_data are both given; give one");
    if (!desc->pipeline_cache_data != !desc->pipeline_cache_size)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "pipeline_cache_data is %s but pipeline_cache_size is %zu",
                             desc->pipeline_cache_data ? "given" : "NULL", desc->pipeline_cache_size);
    return VKATTN_OK;
}

vkattn_status vka_context_create_with_faults(const vkattn_context_desc *desc, const vka_faults *faults,
                                             vkattn_context **out, vkattn_error *error)
{
    vkattn_context_desc defaults = {0};
    if (!desc) desc = &defaults;
    if (!out) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_context_create: out is NULL");
    if ((unsigned)desc->validation > VKATTN_VALIDATION_OFF)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "validation %d is not a vkattn_validation",
                             (int)desc->validation);
    vkattn_status status = check_pipeline_cache_options(desc, error);
    if (status == VKATTN_OK) status = check_env_switches(error);
    if (status != VKATTN_OK) return status;
    status = vka_loader_init(error);
    if (status != VKATTN_OK) return status;

    vkattn_context *ctx = context_alloc(faults);
    if (!ctx) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a context");

    VKA_TRY(create_instance(ctx, validation_wanted(desc->validation), &ctx->dev.instance, &ctx->validation_enabled,
                            &ctx->dev.error));
    VKA_TRY(vka_load_instance_functions(vka_loader_entry(), ctx->dev.instance, &ctx->dev.ifn, &ctx->dev.error));
    if (ctx->validation_enabled && ctx->dev.ifn.vkCreateDebugUtilsMessengerEXT) {
        VkDebugUtilsMessengerCreateInfoEXT info = messenger_info(ctx, NULL);
        VKA_VK(&ctx->dev, ctx->dev.ifn.vkCreateDebugUtilsMessengerEXT(ctx->dev.instance, &info, NULL, &ctx->messenger));
    }

    VkPhysicalDevice devices[VKA_MAX_DEVICES];
    vkattn_device_info infos[VKA_MAX_DEVICES];
    uint32_t count = 0, chosen = 0;
    VKA_TRY(describe_all(&ctx->dev.ifn, ctx->dev.instance, devices, infos, &count, &ctx->dev.error));
    const char *request = desc->device, *source = "the device name";
    if (!request) {
        request = getenv("VKATTN_DEVICE");
        source = "VKATTN_DEVICE";
    }
    VKA_TRY(vka_select_device(infos, count, request, source, &chosen, &ctx->dev.error));
    ctx->dev.physical = devices[chosen];
    vka_describe_device(&ctx->dev.ifn, ctx->dev.physical, chosen, &ctx->dev.info, &ctx->dev.caps);
    ctx->dev.info.is_default = infos[chosen].is_default;
    /* What the instance allows, not what the device could do (as for an application's instance). */
    if ((ctx->dev.info.api_version & ~0xFFFu) > instance_api_version()) ctx->dev.info.api_version = instance_api_version();
    VKA_TRY(context_finish(ctx, desc, 1));
    *out = ctx;
    return VKATTN_OK;
fail:
    if (error) *error = ctx->dev.error;
    vkattn_context_destroy(ctx);
    return status;
}

/* The checks of an application's device description that need no Vulkan call. */
static vkattn_status check_external(const vkattn_external_device *ext, vkattn_context **out, vkattn_error *error)
{
    const char *fn = "vkattn_context_create_external";
    if (!ext || !out) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", fn, ext ? "out" : "device");
    const char *missing = !ext->instance ? "instance" : !ext->physical_device ? "physical_device"
                        : !ext->device ? "device" : !ext->queue ? "queue"
                        : !ext->get_instance_proc_addr ? "get_instance_proc_addr" : NULL;
    if (missing) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "%s: %s is not given", fn, missing);
    if (!ext->queue_lock != !ext->queue_unlock)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "%s: give both queue_lock and queue_unlock, or neither", fn);
    uint32_t api = ext->api_version ? ext->api_version : VK_API_VERSION_1_1;
    if (api < VK_API_VERSION_1_1)
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED, "%s: the instance was made for Vulkan %u.%u; vkattn needs 1.1",
                             fn, VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api));
    if (ext->features & ~(uint32_t)(VKATTN_FEATURE_STORAGE_16BIT | VKATTN_FEATURE_SHADER_FLOAT16))
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "%s: features 0x%x has bits that are no vkattn_feature", fn,
                             ext->features);
    const vkattn_context_desc *o = ext->options;
    if (o && (o->device || o->validation))
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "%s: options.device and options.validation do not apply to an application's device (its "
                             "validation layers are its own)", fn);
    vkattn_status status = o ? check_pipeline_cache_options(o, error) : VKATTN_OK;
    return status == VKATTN_OK ? check_env_switches(error) : status;
}

vkattn_status vka_context_create_external_with_faults(const vkattn_external_device *ext, const vka_faults *faults,
                                                      vkattn_context **out, vkattn_error *error)
{
    vkattn_status status = check_external(ext, out, error);
    if (status != VKATTN_OK) return status;
    vkattn_context_desc defaults = {0};
    const vkattn_context_desc *desc = ext->options ? ext->options : &defaults;
    vkattn_context *ctx = context_alloc(faults);
    if (!ctx) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a context");
    vka_device *dev = &ctx->dev;
    dev->external = 1;
    dev->instance = ext->instance;
    dev->physical = ext->physical_device;
    dev->device = ext->device;
    dev->queue = ext->queue;
    dev->queue_family = ext->queue_family_index;
    dev->queue_lock.lock = ext->queue_lock;
    dev->queue_lock.unlock = ext->queue_unlock;
    dev->queue_lock.user = ext->queue_lock_user;
    VKA_TRY(vka_load_instance_functions(ext->get_instance_proc_addr, dev->instance, &dev->ifn, &dev->error));
    vka_describe_device(&dev->ifn, dev->physical, 0, &dev->info, &dev->caps);
    dev->info.index = UINT32_MAX; /* not chosen from a list */
    /* What the application's instance and device allow, not what the hardware could do. */
    uint32_t api = ext->api_version ? ext->api_version : VK_API_VERSION_1_1;
    if (api < dev->info.api_version) dev->info.api_version = api;
    dev->info.storage_16bit &= (ext->features & VKATTN_FEATURE_STORAGE_16BIT) != 0;
    dev->info.shader_float16 &= (ext->features & VKATTN_FEATURE_SHADER_FLOAT16) != 0;
    VkQueueFamilyProperties family;
    if (!vka_queue_family(&dev->ifn, dev->physical, dev->queue_family, &family) ||
        !(family.queueFlags & VK_QUEUE_COMPUTE_BIT)) {
        status = vka_fail(dev, VKATTN_ERROR_UNSUPPORTED, "queue family %u of \"%s\" %s", dev->queue_family, dev->info.name,
                          vka_queue_family(&dev->ifn, dev->physical, dev->queue_family, &family) ? "has no compute"
                                                                                                 : "does not exist");
        goto fail;
    }
    dev->caps.timestamp_valid_bits = family.timestampValidBits;
    dev->caps.timestamps = family.timestampValidBits > 0 && dev->caps.props.limits.timestampPeriod > 0;
    dev->info.timestamp_period_ns = dev->caps.timestamps ? dev->caps.props.limits.timestampPeriod : 0.0f;
    vka_load_device_table(&dev->ifn, dev->device, &dev->vk);
    VKA_TRY(context_finish(ctx, desc, 0));
    *out = ctx;
    return VKATTN_OK;
fail:
    if (error) *error = ctx->dev.error;
    vkattn_context_destroy(ctx);
    return status;
}

vkattn_status vkattn_context_create_external(const vkattn_external_device *ext, vkattn_context **out,
                                             vkattn_error *error)
{
    return vka_context_create_external_with_faults(ext, NULL, out, error);
}

vkattn_status vkattn_device_requirements_get(PFN_vkGetInstanceProcAddr entry, VkInstance instance,
                                             VkPhysicalDevice physical, vkattn_device_requirements *out,
                                             vkattn_error *error)
{
    if (!entry || !instance || !physical || !out)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "vkattn_device_requirements_get: get_instance_proc_addr, instance, physical_device and out "
                             "are all required");
    vka_instance_fns fns;
    vkattn_status status = vka_load_instance_functions(entry, instance, &fns, error);
    if (status != VKATTN_OK) return status;
    vkattn_device_info info;
    vka_describe_device(&fns, physical, 0, &info, NULL);
    vkattn_device_requirements r = {.api_version = VK_API_VERSION_1_1};
    uint32_t timestamp_bits;
    if (!vka_find_compute_queue(&fns, physical, &r.queue_family_index, &timestamp_bits))
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED, "device \"%s\" has no compute queue", info.name);
    if (info.api_version < VK_API_VERSION_1_1)
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED, "device \"%s\" supports only Vulkan 1.0; vkattn needs 1.1",
                             info.name);
    if (vka_device_has_extension(&fns, physical, "VK_KHR_portability_subset"))
        r.extensions[r.extension_count++] = "VK_KHR_portability_subset";
    if (info.storage_16bit) r.features |= VKATTN_FEATURE_STORAGE_16BIT;
    if (info.shader_float16) r.features |= VKATTN_FEATURE_SHADER_FLOAT16;
    *out = r;
    return VKATTN_OK;
}

vka_plan_limits vka_context_plan_limits(const vkattn_context *ctx)
{
    /* The device's description already holds the context's loop budget and, where they are
     * enabled and passed the self-test, cooperative matrices (cooperative_matrix_usable). */
    vka_plan_limits limits = vka_plan_limits_of(&ctx->dev.info, ctx->tuning);
    for (int i = 0; i < 3; i++) limits.max_group_count[i] = ctx->dev.caps.props.limits.maxComputeWorkGroupCount[i];
    /* every kernel's workgroup is one-dimensional; one that requires its subgroup size (the
     * cooperative-matrix kernels) holds at most maxComputeWorkgroupSubgroups of them */
    if (ctx->dev.caps.props.limits.maxComputeWorkGroupSize[0] < limits.max_workgroup_invocations)
        limits.max_workgroup_invocations = ctx->dev.caps.props.limits.maxComputeWorkGroupSize[0];
    if (ctx->dev.caps.max_workgroup_subgroups && limits.subgroup_size)
        limits.max_matrix_workgroup = limits.subgroup_size * ctx->dev.caps.max_workgroup_subgroups;
    limits.max_texel_elements = ctx->dev.caps.props.limits.maxTexelBufferElements;
    limits.texel_offset_alignment = ctx->dev.caps.props.limits.minTexelBufferOffsetAlignment;
    limits.storage_offset_alignment = ctx->dev.caps.props.limits.minStorageBufferOffsetAlignment;
    limits.subgroup_sums = ctx->dev.caps.subgroup_sums;
    limits.no_fused_cm = ctx->attn_cm_verdict < 0;
    limits.matrix2 = ctx->dev.matrix2; /* cleared wherever the matrices are turned off */
    limits.matrix_rows = ctx->dev.matrix_rows; /* ditto */
    limits.loop_budget = ctx->loop_budget;
    limits.faults = (vka_faults *)&ctx->dev.faults;
    /* A context's own state budget (tests lower it to reach the chunked path); else the default. */
    if (ctx->state_budget_bytes) limits.state_budget_bytes = ctx->state_budget_bytes;
    if (ctx->binding_bytes && ctx->binding_bytes < limits.max_storage_buffer_range)
        limits.max_storage_buffer_range = ctx->binding_bytes;
    return limits;
}

enum { ATTN_CM_CHECKED = sizeof ((vkattn_context *)0)->attn_cm_checked / sizeof(uint64_t) };

/* Whether a build of attn_cm passed its self-test on this context (among the last it remembers). */
static int attn_cm_checked(const vkattn_context *ctx, uint64_t variant)
{
    for (uint32_t k = 0; k < ctx->attn_cm_checked_count && k < ATTN_CM_CHECKED; k++)
        if (ctx->attn_cm_checked[k] == variant) return 1;
    return 0;
}

vkattn_status vka_context_plan(vkattn_context *ctx, const vka_problem *p, vka_plan *plan)
{
    vkattn_device_info *info = &ctx->dev.info;
    for (;;) {
        vka_plan_limits limits = vka_context_plan_limits(ctx);
        vkattn_status status = vka_plan_build(p, &limits, plan, &ctx->dev.error);
        if (status != VKATTN_OK || ctx->attn_cm_verdict < 0) return status;
        /* Each attn_cm step of a build not yet tested on this context (each build once: a driver
         * may get one specialization wrong and not another) runs its self-test; the plan is made
         * again only where one failed. */
        const vka_step *failed = NULL;
        for (uint32_t i = 0; !failed && i < plan->step_count; i++) {
            const vka_step *st = &plan->steps[i];
            if (st->kind != VKA_STEP_DISPATCH || (st->kernel != VKA_KERNEL_FUSED_CM && st->kernel != VKA_KERNEL_FUSED_CM2))
                continue;
            const uint64_t variant = vka_attn_cm_variant(st);
            if (attn_cm_checked(ctx, variant)) continue;
            char note[sizeof info->cooperative_matrix_note] = "";
            int passed = 0;
            status = vka_attn_cm_self_test(&ctx->dev, &ctx->transfer, &ctx->pipelines, &ctx->dummy, st, &passed, note,
                                           sizeof note);
            if (status != VKATTN_OK) return status; /* out of memory or a lost device: no verdict yet */
            if (passed) {
                ctx->attn_cm_verdict = 1;
                ctx->attn_cm_checked[ctx->attn_cm_checked_count++ % ATTN_CM_CHECKED] = variant;
            } else {
                snprintf(info->cooperative_matrix_note, sizeof info->cooperative_matrix_note, "%s", note);
                failed = st;
            }
        }
        if (!failed) return VKATTN_OK;
        /* attn_cm2 failed: plan again on attn_cm, which then has its own test; attn_cm with P in
         * registers: plan again with P through shared memory; with its softmax in registers:
         * plan again with it in shared memory; attn_cm so: attn_fused from now on */
        if (failed->kernel == VKA_KERNEL_FUSED_CM2) ctx->dev.matrix2 = 0;
        else if (failed->spec[VKA_SPEC_FLAGS] & VKA_FUSED_REG_P) {
            ctx->dev.matrix_rows.a_from_acc = 0, ctx->dev.matrix_rows.a_elements = 0;
            snprintf(ctx->dev.matrix_rows_note, sizeof ctx->dev.matrix_rows_note,
                     "attn_cm's build with P in registers failed its self-test");
        } else if (failed->spec[VKA_SPEC_FLAGS] & VKA_FUSED_REG_SOFTMAX) {
            ctx->dev.matrix_rows = (vka_matrix_rows){0};
            snprintf(ctx->dev.matrix_rows_note, sizeof ctx->dev.matrix_rows_note,
                     "attn_cm's build with its softmax in registers failed its self-test");
        } else ctx->attn_cm_verdict = -1;
    }
}

void vka_context_adopt(vkattn_context *ctx, vka_child *child, void (*destroy)(vka_child *self))
{
    child->destroy = destroy;
    vka_list_push(&ctx->children, &child->link);
}

/* Destroys the objects still made from the context, newest first (see vka_child). */
static void destroy_children(vkattn_context *ctx)
{
    if (!ctx->children.next) return; /* a context that failed before its list existed */
    while (!vka_list_empty(&ctx->children)) {
        vka_child *child = VKA_CONTAINER_OF(ctx->children.next, vka_child, link);
        child->destroy(child);
    }
}

void vkattn_context_destroy(vkattn_context *ctx)
{
    if (!ctx) return;
    vka_device *dev = &ctx->dev;
    destroy_children(ctx);
    if (dev->device) {
        /* Nothing may still run when objects go; a lost device has nothing left to wait for. An
         * application's device is not idled (that would wait for, and race with, its own queues):
         * all of vkattn's own submits have been waited for by now. */
        if (!dev->lost && !dev->external) dev->vk.vkDeviceWaitIdle(dev->device);
        vka_pipeline_cache_destroy(dev, &ctx->pipelines);
        vka_buffer_destroy(dev, &ctx->dummy);
        vka_transfer_destroy(&ctx->transfer);
        if (!dev->external) dev->vk.vkDestroyDevice(dev->device, NULL);
    }
    if (ctx->messenger) dev->ifn.vkDestroyDebugUtilsMessengerEXT(dev->instance, ctx->messenger, NULL);
    if (dev->instance && !dev->external) {
        PFN_vkDestroyInstance destroy = dev->ifn.vkDestroyInstance;
        if (!destroy) destroy = (PFN_vkDestroyInstance)vka_loader_entry()(dev->instance, "vkDestroyInstance");
        if (destroy) destroy(dev->instance, NULL);
    }
    free(ctx);
}

const char *vkattn_context_last_error(const vkattn_context *ctx) { return ctx ? ctx->dev.error.message : ""; }

static vkattn_status context_device(vkattn_context *ctx, vkattn_device_info *out)
{
    if (!out) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_context_device: out is NULL");
    *out = ctx->dev.info;
    return VKATTN_OK;
}

vkattn_status vkattn_context_device(const vkattn_context *ctx, vkattn_device_info *out)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    /* guarded: a plan's attn_cm self-test may write the note (vka_context_plan) */
    VKA_GUARDED((vkattn_context *)ctx, context_device((vkattn_context *)ctx, out));
}

uint32_t vkattn_context_validation_messages(const vkattn_context *ctx) { return ctx ? ctx->validation_messages : 0; }

static vkattn_status pipeline_cache_info(vkattn_context *ctx, vkattn_pipeline_cache_info *out)
{
    if (!out)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_context_pipeline_cache_info: out is NULL");
    const vka_pipeline_cache *cache = &ctx->pipelines;
    *out = (vkattn_pipeline_cache_info){.state = cache->state, .loaded_bytes = cache->loaded_bytes,
                                        .pipelines = cache->count, .has_file = cache->path != NULL};
    memcpy(out->note, cache->note, sizeof out->note);
    return VKATTN_OK;
}

vkattn_status vkattn_context_pipeline_cache_info(const vkattn_context *ctx, vkattn_pipeline_cache_info *out)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    /* The guard's flag and the message are the mutable fields a reader touches: the context is
     * otherwise read only. */
    VKA_GUARDED((vkattn_context *)ctx, pipeline_cache_info((vkattn_context *)ctx, out));
}

static vkattn_status pipeline_cache_data(vkattn_context *ctx, void *data, size_t *size)
{
    if (!size)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_context_pipeline_cache_data: size is NULL");
    vkattn_status status = vka_check_alive(&ctx->dev);
    return status != VKATTN_OK ? status : vka_pipeline_cache_data(&ctx->dev, &ctx->pipelines, data, size);
}

vkattn_status vkattn_context_pipeline_cache_data(vkattn_context *ctx, void *data, size_t *size)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(ctx, pipeline_cache_data(ctx, data, size));
}

static vkattn_status save_pipeline_cache(vkattn_context *ctx)
{
    vkattn_status status = vka_check_alive(&ctx->dev);
    return status != VKATTN_OK ? status : vka_pipeline_cache_save(&ctx->dev, &ctx->pipelines);
}

vkattn_status vkattn_context_save_pipeline_cache(vkattn_context *ctx)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(ctx, save_pipeline_cache(ctx));
}

int vkattn_context_validation_enabled(const vkattn_context *ctx) { return ctx ? ctx->validation_enabled : 0; }
