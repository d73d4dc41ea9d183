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
    /* Persistence (vkattn.h, "Pipeline cache"). */
    char *path;                        /* the cache file, NULL = none */
    vkattn_pipeline_cache_state state; /* what became of the data given at creation */
    size_t loaded_bytes;
    char note[sizeof(((vkattn_pipeline_cache_info *)0)->note)];
    int dirty;                         /* pipelines were created since the file was read or saved */
    int not_regular;                   /* the path is a FIFO, directory or device: never written over */
    int foreign;                       /* the file holds something else than vkattn's data (its first
                                          bytes are not the magic): never written over either */
    int file_known;                    /* the file holds the data below (file_size, file_checksum) */
    uint64_t file_size, file_checksum; /* of the Vulkan data in the file, to skip rewriting it */
} vka_pipeline_cache;

/* The bytes vkattn puts before the Vulkan pipeline cache data (pipeline_cache.c draws them). */
#define VKA_PIPELINE_CACHE_HEADER_BYTES 32
/* Data larger than this is ignored: no sane cache of vkattn's few dozen kernels comes near it. */
#define VKA_PIPELINE_CACHE_MAX_BYTES ((size_t)256 << 20)

/* Creates the VkPipelineCache, from the file at `path` or from `data` (`size` bytes) when either
 * is given and passes every check (else the cache starts empty and cache->note says why). NULL
 * for both: the VKATTN_PIPELINE_CACHE environment variable names the file, else there is none.
 * Fails only for what would fail without a cache file too: out of memory, a failed Vulkan call. */
vkattn_status vka_pipeline_cache_init(vka_device *dev, vka_pipeline_cache *cache, const char *path, const void *data,
                                      size_t size);
/* Saves the cache to its file, best effort (vka_pipeline_cache_save), then destroys every pipeline
 * and the VkPipelineCache. */
void vka_pipeline_cache_destroy(vka_device *dev, vka_pipeline_cache *cache);

/* Writes the cache file if pipelines were created since it was read or saved and the data
 * changed; VKATTN_OK when there is no file or nothing to write. */
vkattn_status vka_pipeline_cache_save(vka_device *dev, vka_pipeline_cache *cache);
/* vkattn_context_pipeline_cache_data: the two-call size query and copy. */
vkattn_status vka_pipeline_cache_data(vka_device *dev, vka_pipeline_cache *cache, void *data, size_t *size);

/* Checks pipeline cache data (vkattn header + Vulkan data) against a device before it may reach
 * the driver: 1 if it passes, else 0 with the reason in `why`. */
int vka_pipeline_cache_check(const uint8_t *data, size_t size, const VkPhysicalDeviceProperties *props, char *why,
                             size_t why_size);
/* The checksum vkattn's header keeps of the Vulkan data (64-bit FNV-1a). */
uint64_t vka_pipeline_cache_checksum(const uint8_t *bytes, size_t size);

/* The pipeline for (kernel, fp16-output build or not, spec), created if needed. *out stays valid
 * until the context goes. */
vkattn_status vka_pipeline_get(vka_device *dev, vka_pipeline_cache *cache, vka_kernel kernel, int f16_out,
                               const uint32_t spec[VKA_MAX_SPEC], const vka_pipeline **out);

/* A pipeline outside the registry, for the library's own one-off work (the cooperative-matrix
 * self-test at context creation): made through the VkPipelineCache, so that a later
 * vka_pipeline_get of the same kernel and spec finds the driver's work done, but neither counted
 * among the context's pipelines nor marking the cache file for writing (a context that ran no
 * forward leaves its file alone). Released with vka_pipeline_release. */
vkattn_status vka_pipeline_make(vka_device *dev, vka_pipeline_cache *cache, vka_kernel kernel, int f16_out,
                                const uint32_t spec[VKA_MAX_SPEC], vka_pipeline **out);
/* Destroys a pipeline from vka_pipeline_make; NULL is a no-op. */
void vka_pipeline_release(vka_device *dev, vka_pipeline *pipeline);

#endif
