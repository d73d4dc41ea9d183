/* Describing physical devices and choosing one (by index, by name, or the default ranking). */
#include "physical.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "device/tuning.h"

static vkattn_device_type device_type(VkPhysicalDeviceType type)
{
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return VKATTN_DEVICE_INTEGRATED_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return VKATTN_DEVICE_DISCRETE_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return VKATTN_DEVICE_VIRTUAL_GPU;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return VKATTN_DEVICE_CPU;
    default: return VKATTN_DEVICE_OTHER;
    }
}

static int has_extension(const vka_instance_fns *fns, VkPhysicalDevice device, const char *name)
{
    uint32_t count = 0;
    if (fns->vkEnumerateDeviceExtensionProperties(device, NULL, &count, NULL) != VK_SUCCESS || count == 0) return 0;
    VkExtensionProperties *props = malloc(count * sizeof *props);
    if (!props) return 0;
    int found = 0;
    if (fns->vkEnumerateDeviceExtensionProperties(device, NULL, &count, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++) found = strcmp(props[i].extensionName, name) == 0;
    free(props);
    return found;
}

int vka_device_has_extension(const vka_instance_fns *fns, VkPhysicalDevice device, const char *name)
{
    return has_extension(fns, device, name);
}

/* The device's first 16 queue families (no device has more); returns how many. */
static uint32_t queue_families(const vka_instance_fns *fns, VkPhysicalDevice device, VkQueueFamilyProperties families[16])
{
    uint32_t count = 0;
    fns->vkGetPhysicalDeviceQueueFamilyProperties(device, &count, NULL);
    if (count > 16) count = 16;
    fns->vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families);
    return count;
}

int vka_queue_family(const vka_instance_fns *fns, VkPhysicalDevice device, uint32_t family,
                     VkQueueFamilyProperties *out)
{
    VkQueueFamilyProperties families[16];
    if (family >= queue_families(fns, device, families)) return 0;
    *out = families[family];
    return 1;
}

int vka_find_compute_queue(const vka_instance_fns *fns, VkPhysicalDevice device, uint32_t *family,
                           uint32_t *timestamp_bits)
{
    VkQueueFamilyProperties families[16];
    uint32_t count = queue_families(fns, device, families);
    int best = -1;
    for (uint32_t i = 0; i < count; i++) {
        if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) || families[i].queueCount == 0) continue;
        /* Prefer a family with timestamps: stage timing needs them. */
        if (best < 0 || (families[i].timestampValidBits > 0 && families[best].timestampValidBits == 0)) best = (int)i;
    }
    if (best < 0) return 0;
    *family = (uint32_t)best;
    *timestamp_bits = families[best].timestampValidBits;
    return 1;
}

/* The device's compute units (SMs, CUs, shader cores) where an extension tells: NVIDIA's SM
 * count, AMD's CUs (engines x arrays x CUs per array), Arm's shader cores; 0 elsewhere. */
static uint32_t count_compute_units(const vka_instance_fns *fns, VkPhysicalDevice device)
{
    VkPhysicalDeviceShaderSMBuiltinsPropertiesNV nv = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
    VkPhysicalDeviceShaderCorePropertiesAMD amd = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
    VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM arm = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_BUILTINS_PROPERTIES_ARM};
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    if (has_extension(fns, device, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) props2.pNext = &nv;
    else if (has_extension(fns, device, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) props2.pNext = &amd;
    else if (has_extension(fns, device, VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME)) props2.pNext = &arm;
    else return 0;
    fns->vkGetPhysicalDeviceProperties2(device, &props2);
    if (props2.pNext == &nv) return nv.shaderSMCount;
    if (props2.pNext == &amd)
        return amd.shaderEngineCount * amd.shaderArraysPerEngineCount * amd.computeUnitsPerShaderArray;
    return arm.shaderCoreCount;
}

/* The cooperative-matrix shapes vkattn's kernels use (fp16 A and B, fp32 C and result, subgroup
 * scope), from the driver's list. */
static void coopmat_shapes(const vka_instance_fns *fns, VkPhysicalDevice device, vkattn_device_info *info)
{
    /* every entry the driver lists (NVIDIA's run to dozens with its integer, bf16 and fp8 types: a
     * fixed array could cut off the fp16 one) */
    uint32_t count = 0;
    if (!fns->vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR ||
        fns->vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(device, &count, NULL) != VK_SUCCESS || count == 0)
        return;
    VkCooperativeMatrixPropertiesKHR *props = calloc(count, sizeof *props);
    if (!props) return;
    for (uint32_t i = 0; i < count; i++)
        props[i] = (VkCooperativeMatrixPropertiesKHR){.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR};
    VkResult r = fns->vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR(device, &count, props);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) count = 0;
    for (uint32_t i = 0; i < count && info->cooperative_matrix_shape_count < VKATTN_MAX_MATRIX_SHAPES; i++) {
        const VkCooperativeMatrixPropertiesKHR *c = &props[i];
        if (c->AType != VK_COMPONENT_TYPE_FLOAT16_KHR || c->BType != VK_COMPONENT_TYPE_FLOAT16_KHR ||
            c->CType != VK_COMPONENT_TYPE_FLOAT32_KHR || c->ResultType != VK_COMPONENT_TYPE_FLOAT32_KHR ||
            c->scope != VK_SCOPE_SUBGROUP_KHR || c->saturatingAccumulation)
            continue;
        info->cooperative_matrix_shapes[info->cooperative_matrix_shape_count++] =
            (vkattn_matrix_shape){c->MSize, c->NSize, c->KSize};
    }
    free(props);
}

/* VK_NV_cooperative_matrix2's features as VKATTN_MATRIX2_* bits. */
static uint32_t matrix2_bits(const VkPhysicalDeviceCooperativeMatrix2FeaturesNV *f)
{
    return (f->cooperativeMatrixWorkgroupScope ? VKATTN_MATRIX2_WORKGROUP_SCOPE : 0) |
           (f->cooperativeMatrixFlexibleDimensions ? VKATTN_MATRIX2_FLEXIBLE_DIMENSIONS : 0) |
           (f->cooperativeMatrixReductions ? VKATTN_MATRIX2_REDUCTIONS : 0) |
           (f->cooperativeMatrixConversions ? VKATTN_MATRIX2_CONVERSIONS : 0) |
           (f->cooperativeMatrixPerElementOperations ? VKATTN_MATRIX2_PER_ELEMENT : 0) |
           (f->cooperativeMatrixTensorAddressing ? VKATTN_MATRIX2_TENSOR_ADDRESSING : 0) |
           (f->cooperativeMatrixBlockLoads ? VKATTN_MATRIX2_BLOCK_LOADS : 0);
}

/* Whether the device has what vkattn's cooperative-matrix kernels need (the build and the switches
 * are the context's to add: api/context.c); the note says what is missing. Their SPIR-V is 1.6
 * (Vulkan 1.3) with the Vulkan memory model, fp16 arithmetic and a workgroup size set by a
 * specialization constant (LocalSizeId: maintenance4), and they require full subgroups of the
 * device's subgroup size. */
static void coopmat_usable(vkattn_device_info *info, int memory_model_and_maintenance4)
{
    const char *missing = !info->cooperative_matrix                  ? "none"
                        : info->cooperative_matrix_shape_count == 0  ? "no fp16 x fp16 -> fp32 subgroup shape"
                        : info->api_version < VK_API_VERSION_1_3     ? "needs Vulkan 1.3"
                        : !info->shader_float16                      ? "needs shaderFloat16"
                        : !memory_model_and_maintenance4             ? "needs vulkanMemoryModel (device scope) and maintenance4"
                        : !info->subgroup_size_control               ? "needs subgroup size control with full subgroups"
                                                                     : NULL;
    info->cooperative_matrix_usable = missing == NULL;
    snprintf(info->cooperative_matrix_note, sizeof info->cooperative_matrix_note, "%s", missing ? missing : "");
}

void vka_describe_device(const vka_instance_fns *fns, VkPhysicalDevice device, uint32_t index,
                         vkattn_device_info *info, vka_device_caps *caps)
{
    VkPhysicalDeviceDriverProperties driver = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
                                                   .pNext = &m3};
    VkPhysicalDeviceProperties2 props2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &subgroup};
    VkPhysicalDeviceFloatControlsProperties float_controls = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES};
    VkPhysicalDeviceProperties base;
    fns->vkGetPhysicalDeviceProperties(device, &base);
    int has_driver_props =
        base.apiVersion >= VK_API_VERSION_1_2 || has_extension(fns, device, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
    if (has_driver_props) m3.pNext = &driver;
    /* Float controls: core in Vulkan 1.2 (vkattn enables no extension for them on 1.1) */
    if (base.apiVersion >= VK_API_VERSION_1_2) driver.pNext = &float_controls;
    fns->vkGetPhysicalDeviceProperties2(device, &props2);
    uint32_t compute_units = count_compute_units(fns, device);

    /* Subgroup size control: core in Vulkan 1.3 (the extension's structures are the same). */
    int has_size_control = base.apiVersion >= VK_API_VERSION_1_3 ||
                           has_extension(fns, device, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
    VkPhysicalDeviceSubgroupSizeControlProperties size_control = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
    if (has_size_control) {
        VkPhysicalDeviceProperties2 more = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                            .pNext = &size_control};
        fns->vkGetPhysicalDeviceProperties2(device, &more);
    }

    VkPhysicalDevice16BitStorageFeatures storage16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
    VkPhysicalDeviceFeatures2 features = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &storage16};
    VkPhysicalDeviceShaderFloat16Int8Features float16 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
    VkPhysicalDeviceVulkanMemoryModelFeatures memory_model = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES, .pNext = &float16};
    VkPhysicalDeviceMaintenance4Features maintenance4 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES};
    VkPhysicalDeviceSubgroupSizeControlFeatures size_control_features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coopmat = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
    const void **tail = (const void **)&float16.pNext;
    if (base.apiVersion >= VK_API_VERSION_1_2) storage16.pNext = &memory_model;
    if (has_size_control) *tail = &size_control_features, tail = (const void **)&size_control_features.pNext;
    if (base.apiVersion >= VK_API_VERSION_1_3) *tail = &maintenance4, tail = (const void **)&maintenance4.pNext;
    VkPhysicalDeviceCooperativeMatrix2FeaturesNV coopmat2 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
    int has_coopmat = has_extension(fns, device, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (has_coopmat) *tail = &coopmat, tail = (const void **)&coopmat.pNext;
    int has_coopmat2 = has_coopmat && has_extension(fns, device, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
    if (has_coopmat2) *tail = &coopmat2;
    fns->vkGetPhysicalDeviceFeatures2(device, &features);

    VkPhysicalDeviceMemoryProperties memory;
    fns->vkGetPhysicalDeviceMemoryProperties(device, &memory);

    const VkPhysicalDeviceProperties *p = &props2.properties;
    memset(info, 0, sizeof *info);
    info->index = index;
    info->type = device_type(p->deviceType);
    snprintf(info->name, sizeof info->name, "%s", p->deviceName);
    if (has_driver_props) {
        snprintf(info->driver_name, sizeof info->driver_name, "%s", driver.driverName);
        snprintf(info->driver_info, sizeof info->driver_info, "%s", driver.driverInfo);
    }
    info->api_version = p->apiVersion;
    info->driver_version = p->driverVersion;
    info->vendor_id = p->vendorID;
    info->device_id = p->deviceID;
    info->max_storage_buffer_range = p->limits.maxStorageBufferRange;
    /* maxMemoryAllocationSize is at least 1 GiB wherever Vulkan 1.1 is; 0 means the driver left it out. */
    info->max_memory_allocation_size = m3.maxMemoryAllocationSize ? m3.maxMemoryAllocationSize : 1ull << 30;
    info->max_shared_memory_bytes = p->limits.maxComputeSharedMemorySize;
    info->max_workgroup_invocations = p->limits.maxComputeWorkGroupInvocations;
    for (int i = 0; i < 3; i++) info->max_workgroup_count[i] = p->limits.maxComputeWorkGroupCount[i];
    info->subgroup_size = subgroup.subgroupSize;
    info->subgroup_size_min = size_control.minSubgroupSize ? size_control.minSubgroupSize : subgroup.subgroupSize;
    info->subgroup_size_max = size_control.maxSubgroupSize ? size_control.maxSubgroupSize : subgroup.subgroupSize;
    info->subgroup_size_control = size_control_features.subgroupSizeControl && size_control_features.computeFullSubgroups &&
                                  (size_control.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
    info->compute_units = compute_units;
    info->storage_16bit = storage16.storageBuffer16BitAccess != 0;
    info->shader_float16 = float16.shaderFloat16 != 0;
    info->cooperative_matrix = has_coopmat && coopmat.cooperativeMatrix;
    if (info->cooperative_matrix) coopmat_shapes(fns, device, info);
    if (has_coopmat2) info->cooperative_matrix2 = matrix2_bits(&coopmat2);
    /* With the memory model enabled, Device-scope atomics (kv_append's quantizing build) need its
     * device scope too, so the cooperative-matrix kernels ask for both. */
    coopmat_usable(info, memory_model.vulkanMemoryModel && memory_model.vulkanMemoryModelDeviceScope &&
                             maintenance4.maintenance4);

    int unified = 1, any_local = 0;
    for (uint32_t i = 0; i < memory.memoryHeapCount; i++) {
        if (!(memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
        if (memory.memoryHeaps[i].size > info->device_local_heap_bytes)
            info->device_local_heap_bytes = memory.memoryHeaps[i].size;
    }
    for (uint32_t i = 0; i < memory.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = memory.memoryTypes[i].propertyFlags;
        if (!(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) continue;
        any_local = 1;
        if (!(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) || !(f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) unified = 0;
    }

    uint32_t family, timestamp_bits = 0;
    int has_queue = vka_find_compute_queue(fns, device, &family, &timestamp_bits);
    info->timestamp_period_ns = has_queue && timestamp_bits > 0 ? p->limits.timestampPeriod : 0.0f;
    snprintf(info->tuning, sizeof info->tuning, "%s", vka_tuning_for(info, NULL)->name);
    info->loop_budget = vka_device_loop_budget(info);

    if (caps) {
        memset(caps, 0, sizeof *caps);
        caps->props = *p;
        caps->memory = memory;
        /* Only devices without dedicated video memory count as unified: on a discrete GPU the
         * host-visible device-local heap is a small BAR window, not the place for big tensors. */
        caps->unified_memory = any_local && unified &&
                               (info->type == VKATTN_DEVICE_CPU || info->type == VKATTN_DEVICE_INTEGRATED_GPU);
        caps->timestamps = info->timestamp_period_ns > 0.0f;
        caps->timestamp_valid_bits = timestamp_bits;
        caps->vulkan_memory_model = memory_model.vulkanMemoryModel != 0;
        caps->max_workgroup_subgroups = size_control.maxComputeWorkgroupSubgroups;
        caps->preserve_inf_nan_f32 = float_controls.shaderSignedZeroInfNanPreserveFloat32 != 0;
        caps->preserve_inf_nan_f16 = float_controls.shaderSignedZeroInfNanPreserveFloat16 != 0;
        caps->subgroup_sums = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                              (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
                              (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) &&
                              info->subgroup_size_min >= 4;
    }
}

static int type_rank(vkattn_device_type type)
{
    switch (type) {
    case VKATTN_DEVICE_DISCRETE_GPU: return 0;
    case VKATTN_DEVICE_INTEGRATED_GPU: return 1;
    case VKATTN_DEVICE_VIRTUAL_GPU: return 2;
    case VKATTN_DEVICE_CPU: return 3;
    default: return 4;
    }
}

uint32_t vka_default_device(const vkattn_device_info *infos, uint32_t count)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < count; i++)
        if (type_rank(infos[i].type) < type_rank(infos[best].type)) best = i;
    return best;
}

static int contains_case_insensitive(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *h = haystack; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return n == 0;
}

vkattn_status vka_select_device(const vkattn_device_info *infos, uint32_t count, const char *request,
                                const char *source, uint32_t *out, vkattn_error *error)
{
    if (count == 0) return vka_error_set(error, VKATTN_ERROR_NO_DEVICE, "no Vulkan device found");
    if (!request || !*request) {
        *out = vka_default_device(infos, count);
        return VKATTN_OK;
    }
    char names[384] = ""; /* for the messages: which devices there are */
    for (uint32_t i = 0; i < count; i++) {
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%u: %s", i ? ", " : "", i, infos[i].name);
    }
    char *end = NULL;
    unsigned long index = strtoul(request, &end, 10);
    if (isdigit((unsigned char)request[0]) && end && *end == '\0') {
        if (index >= count)
            return vka_error_set(error, VKATTN_ERROR_NO_DEVICE,
                                 "%s asks for device %lu but there %s only %u device%s (%s)", source, index,
                                 count == 1 ? "is" : "are", count, count == 1 ? "" : "s", names);
        *out = (uint32_t)index;
        return VKATTN_OK;
    }
    for (uint32_t i = 0; i < count; i++) {
        if (contains_case_insensitive(infos[i].name, request)) {
            *out = i;
            return VKATTN_OK;
        }
    }
    return vka_error_set(error, VKATTN_ERROR_NO_DEVICE, "%s \"%s\" matches no device (have %s)", source, request,
                         names);
}
