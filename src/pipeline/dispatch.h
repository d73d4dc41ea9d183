/* Recording compute work: the one place that turns a pipeline, its buffer bindings and push
 * constants into descriptor writes and a dispatch, and the barrier between dependent steps.
 * The attention plan's recorder and the peak microkernels both go through it. */
#ifndef VKA_DISPATCH_H
#define VKA_DISPATCH_H

#include "memory/buffer.h"
#include "pipeline/pipeline_cache.h"

/* One binding: bytes [offset, offset + range) of a buffer (range 0 = to its end), seen as a
 * storage buffer or, where the kernel declares a texel buffer, through a view of `format`. */
typedef struct vka_binding {
    vka_buffer *buffer;
    VkDeviceSize offset, range;
    vka_view_format format;
} vka_binding;

/* A descriptor pool for `sets` dispatches of up to VKA_MAX_BINDINGS bindings each. */
vkattn_status vka_descriptor_pool_create(vka_device *dev, uint32_t sets, VkDescriptorPool *out);

/* A descriptor set from `pool` (which must have one left) holding the pipeline's bindings. */
vkattn_status vka_descriptor_set_make(vka_device *dev, VkDescriptorPool pool, const vka_pipeline *pipeline,
                                      const vka_binding *bindings, VkDescriptorSet *out);
/* Records bind, push and one dispatch of `groups` workgroups with a set made above; cannot fail,
 * so a recorder that makes every set first never leaves a half-recorded command buffer. */
void vka_record_dispatch_set(vka_device *dev, VkCommandBuffer cmd, const vka_pipeline *pipeline, VkDescriptorSet set,
                             const void *push, const uint32_t groups[3]);
/* Both of the above in one: for recorders whose command buffer is their own. */
vkattn_status vka_record_dispatch(vka_device *dev, VkCommandBuffer cmd, VkDescriptorPool pool,
                                  const vka_pipeline *pipeline, const vka_binding *bindings, const void *push,
                                  const uint32_t groups[3]);

/* Every earlier shader or transfer write is visible to every later shader or transfer access. */
void vka_record_barrier(vka_device *dev, VkCommandBuffer cmd);

#endif
