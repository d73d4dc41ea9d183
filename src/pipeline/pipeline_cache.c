#include "pipeline_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


vkattn_status vka_pipeline_cache_init(vka_device *dev, vka_pipeline_cache *cache)
{
    vkattn_status status = VKATTN_OK;
    memset(cache, 0, sizeof *cache);
    VkPipelineCacheCreateInfo info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    VKA_VK(dev, dev->vk.vkCreatePipelineCache(dev->device, &info, NULL, &cache->vk_cache));
fail:
    return status;
}

static void destroy_pipeline(vka_device *dev, vka_pipeline *p)
{
    if (!p) return;
    if (p->pipeline) dev->vk.vkDestroyPipeline(dev->device, p->pipeline, NULL);
    if (p->layout) dev->vk.vkDestroyPipelineLayout(dev->device, p->layout, NULL);
    if (p->set_layout) dev->vk.vkDestroyDescriptorSetLayout(dev->device, p->set_layout, NULL);
    free(p);
}

void vka_pipeline_cache_destroy(vka_device *dev, vka_pipeline_cache *cache)
{
    for (uint32_t i = 0; i < cache->count; i++) destroy_pipeline(dev, cache->items[i]);
    free(cache->items);
    if (cache->vk_cache) dev->vk.vkDestroyPipelineCache(dev->device, cache->vk_cache, NULL);
    memset(cache, 0, sizeof *cache);
}

static vkattn_status create_pipeline(vka_device *dev, VkPipelineCache vk_cache, vka_kernel kernel, int f16_out,
                                     const uint32_t spec[VKA_MAX_SPEC], vka_pipeline *p)
{
    vkattn_status status = VKATTN_OK;
    VkShaderModule module = VK_NULL_HANDLE;
    const vka_kernel_info *info = vka_kernel_get(kernel);
    const char *name = info ? (f16_out ? info->spirv_f16_out : info->spirv) : NULL;
    const uint32_t *code;
    size_t bytes;
    if (!name || !vka_embedded_spirv(name, &code, &bytes))
        return vka_fail(dev, VKATTN_ERROR_UNSUPPORTED, "kernel %d%s has no embedded SPIR-V (build mismatch)",
                        (int)kernel, f16_out ? " (fp16 output)" : "");
    int read = vka_spirv_bindings(code, bytes / 4, &dev->faults, &p->bindings);
    if (read < 0) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory reading kernel %s", name);
    if (read == 0) return vka_fail(dev, VKATTN_ERROR_VULKAN, "kernel %s: cannot read its bindings from SPIR-V", name);
    char why[160];
    if (!vka_kernel_check_layout(info, &p->bindings, why, sizeof why))
        return vka_fail(dev, VKATTN_ERROR_VULKAN, "internal: %s", why);
    p->kernel = kernel;
    p->f16_out = f16_out;
    memcpy(p->spec, spec, sizeof p->spec);
    p->push_size = info->push_size;

    VkDescriptorSetLayoutBinding bindings[VKA_MAX_BINDINGS];
    for (uint32_t i = 0; i < p->bindings.count; i++) {
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = i,
            .descriptorType = p->bindings.types[i],
            .descriptorCount = 1,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    }
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = p->bindings.count,
        .pBindings = bindings,
    };
    VKA_VK(dev, dev->vk.vkCreateDescriptorSetLayout(dev->device, &set_info, NULL, &p->set_layout));
    VkPushConstantRange push = {VK_SHADER_STAGE_COMPUTE_BIT, 0, info->push_size};
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &p->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &push,
    };
    VKA_VK(dev, dev->vk.vkCreatePipelineLayout(dev->device, &layout_info, NULL, &p->layout));

    VkShaderModuleCreateInfo module_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = bytes,
        .pCode = code,
    };
    VKA_VK(dev, dev->vk.vkCreateShaderModule(dev->device, &module_info, NULL, &module));
    VkSpecializationMapEntry entries[VKA_MAX_SPEC];
    for (uint32_t i = 0; i < VKA_MAX_SPEC; i++) entries[i] = (VkSpecializationMapEntry){i, i * 4, 4};
    VkSpecializationInfo spec_info = {VKA_MAX_SPEC, entries, sizeof p->spec, p->spec};
    VkComputePipelineCreateInfo pipeline_info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage =
            {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = module,
                .pName = "main",
                .pSpecializationInfo = &spec_info,
            },
        .layout = p->layout,
    };
    VkResult r = dev->vk.vkCreateComputePipelines(dev->device, vk_cache, 1, &pipeline_info, NULL,
                                                  &p->pipeline);
    if (r != VK_SUCCESS) {
        status = vka_vk_fail(dev, r, "vkCreateComputePipelines", __FILE__, __LINE__);
        size_t used = strlen(dev->error.message);
        snprintf(dev->error.message + used, sizeof dev->error.message - used, " in pipeline %s", name);
    }
fail:
    if (module) dev->vk.vkDestroyShaderModule(dev->device, module, NULL);
    return status;
}

vkattn_status vka_pipeline_get(vka_device *dev, vka_pipeline_cache *cache, vka_kernel kernel, int f16_out,
                               const uint32_t spec[VKA_MAX_SPEC], const vka_pipeline **out)
{
    for (uint32_t i = 0; i < cache->count; i++) {
        const vka_pipeline *p = cache->items[i];
        if (p->kernel == kernel && p->f16_out == f16_out && memcmp(p->spec, spec, sizeof p->spec) == 0) {
            *out = p;
            return VKATTN_OK;
        }
    }
    if (cache->count == cache->capacity) {
        uint32_t capacity = cache->capacity ? cache->capacity * 2 : 16;
        vka_pipeline **items = vka_realloc(&dev->faults, cache->items, capacity * sizeof *items);
        if (!items) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the pipeline cache");
        cache->items = items;
        cache->capacity = capacity;
    }
    vka_pipeline *p = vka_calloc(&dev->faults, 1, sizeof *p);
    if (!p) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a pipeline");
    vkattn_status status = create_pipeline(dev, cache->vk_cache, kernel, f16_out, spec, p);
    if (status != VKATTN_OK) {
        destroy_pipeline(dev, p);
        return status;
    }
    cache->items[cache->count++] = p;
    *out = p;
    return VKATTN_OK;
}
