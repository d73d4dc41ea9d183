#include "pipeline/dispatch.h"

vkattn_status vka_descriptor_pool_create(vka_device *dev, uint32_t sets, VkDescriptorPool *out)
{
    vkattn_status status = VKATTN_OK;
    VkDescriptorPoolSize sizes[] = {
        {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, sets * VKA_MAX_BINDINGS},
        {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, sets * VKA_MAX_BINDINGS},
    };
    VkDescriptorPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
        .maxSets = sets,
        .poolSizeCount = 2,
        .pPoolSizes = sizes,
    };
    VKA_VK(dev, dev->vk.vkCreateDescriptorPool(dev->device, &info, NULL, out));
fail:
    return status;
}

vkattn_status vka_descriptor_set_make(vka_device *dev, VkDescriptorPool pool, const vka_pipeline *pipeline,
                                      const vka_binding *bindings, VkDescriptorSet *out)
{
    vkattn_status status = VKATTN_OK;
    VkDescriptorSetAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &pipeline->set_layout,
    };
    VkDescriptorSet set;
    VKA_VK(dev, dev->vk.vkAllocateDescriptorSets(dev->device, &alloc, &set));
    VkDescriptorBufferInfo infos[VKA_MAX_BINDINGS];
    VkBufferView views[VKA_MAX_BINDINGS];
    VkWriteDescriptorSet writes[VKA_MAX_BINDINGS];
    for (uint32_t i = 0; i < pipeline->bindings.count; i++) {
        const vka_binding *b = &bindings[i];
        VkDescriptorType type = pipeline->bindings.types[i];
        writes[i] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
            .dstBinding = i,
            .descriptorCount = 1,
            .descriptorType = type,
        };
        if (type == VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER || type == VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER) {
            VKA_TRY(vka_buffer_view(dev, b->buffer, b->format, b->offset, b->range, &views[i]));
            writes[i].pTexelBufferView = &views[i];
        } else {
            infos[i] = (VkDescriptorBufferInfo){b->buffer->buffer, b->buffer->base + b->offset,
                                                b->range ? b->range : b->buffer->size - b->offset};
            writes[i].pBufferInfo = &infos[i];
        }
    }
    dev->vk.vkUpdateDescriptorSets(dev->device, pipeline->bindings.count, writes, 0, NULL);
    *out = set;
fail:
    return status;
}

void vka_record_dispatch_set(vka_device *dev, VkCommandBuffer cmd, const vka_pipeline *pipeline, VkDescriptorSet set,
                             const void *push, const uint32_t groups[3])
{
    dev->vk.vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->pipeline);
    dev->vk.vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline->layout, 0, 1, &set, 0, NULL);
    dev->vk.vkCmdPushConstants(cmd, pipeline->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pipeline->push_size, push);
    dev->vk.vkCmdDispatch(cmd, groups[0], groups[1], groups[2]);
}

vkattn_status vka_record_dispatch(vka_device *dev, VkCommandBuffer cmd, VkDescriptorPool pool,
                                  const vka_pipeline *pipeline, const vka_binding *bindings, const void *push,
                                  const uint32_t groups[3])
{
    VkDescriptorSet set;
    vkattn_status status = vka_descriptor_set_make(dev, pool, pipeline, bindings, &set);
    if (status == VKATTN_OK) vka_record_dispatch_set(dev, cmd, pipeline, set, push, groups);
    return status;
}

void vka_record_barrier(vka_device *dev, VkCommandBuffer cmd)
{
    VkMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
    dev->vk.vkCmdPipelineBarrier(cmd, stages, stages, 0, 1, &barrier, 0, NULL, 0, NULL);
}
