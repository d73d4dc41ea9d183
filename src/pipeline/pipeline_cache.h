/* A device's compute pipelines, created on first use and kept until the cache goes: lavapipe
 * compiles each pipeline with LLVM, so nothing on a hot path may create one twice. */
#ifndef VKA_PIPELINE_CACHE_H
#define VKA_PIPELINE_CACHE_H

#include "device/device.h"
#include "pipeline/kernels.h"
#include "pipeline/spirv_reflect.h"

typedef struct vka_pipeline {
    vka_kernel kernel;
    int f16_out;
    uint32_t spec[VKA_MAX_SPEC];
    vka_binding_layout bindings;
    uint32_t push_size;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
} vka_pipeline;

typedef struct vka_pipeline_cache {
    VkPipelineCache vk_cache;
    vka_pipeline **items; /* individually allocated: pointers handed out stay valid */
    uint32_t count, capacity;
} vka_pipeline_cache;

vkattn_status vka_pipeline_cache_init(vka_device *dev, vka_pipeline_cache *cache);
void vka_pipeline_cache_destroy(vka_device *dev, vka_pipeline_cache *cache);

/* The pipeline for (kernel, fp16-output build or not, spec), created if needed. *out stays valid
 * until the context goes. */
vkattn_status vka_pipeline_get(vka_device *dev, vka_pipeline_cache *cache, vka_kernel kernel, int f16_out,
                               const uint32_t spec[VKA_MAX_SPEC], const vka_pipeline **out);

#endif
