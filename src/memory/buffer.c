#include "buffer.h"

#include <stdlib.h>
#include <string.h>


/* Picks a memory type allowed by `type_bits` with all `required` flags, preferring `preferred`. */
static int find_memory_type(const VkPhysicalDeviceMemoryProperties *memory, uint32_t type_bits,
                            VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred)
{
    int fallback = -1;
    for (uint32_t i = 0; i < memory->memoryTypeCount; i++) {
        VkMemoryPropertyFlags flags = memory->memoryTypes[i].propertyFlags;
        if (!(type_bits & (1u << i)) || (flags & required) != required) continue;
        if ((flags & preferred) == preferred) return (int)i;
        if (fallback < 0) fallback = (int)i;
    }
    return fallback;
}

vkattn_status vka_buffer_create(vka_device *dev, VkDeviceSize size, vka_memory_use use, const char *what,
                                vka_buffer *out)
{
    vkattn_status status = VKATTN_OK;
    vka_buffer b = {0};
    if (size == 0) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "%s: buffer size is 0", what);
    if (size > dev->info.max_memory_allocation_size - 15)
        return vka_fail(dev, VKATTN_ERROR_DEVICE_LIMIT,
                        "%s needs %llu bytes, more than this device's maxMemoryAllocationSize (%llu)", what,
                        (unsigned long long)size, (unsigned long long)dev->info.max_memory_allocation_size);

    size = (size + 15) / 16 * 16;
    VkDeviceSize room = vka_buffer_room(size, dev->info.max_memory_allocation_size), bytes = size + room;
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = bytes,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                 VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                 VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VKA_VK(dev, dev->vk.vkCreateBuffer(dev->device, &info, NULL, &b.buffer));

    VkMemoryRequirements req;
    dev->vk.vkGetBufferMemoryRequirements(dev->device, b.buffer, &req);
    VkMemoryPropertyFlags required, preferred;
    if (use == VKA_MEMORY_STAGING) {
        required = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        preferred = required | VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    } else if (dev->caps.unified_memory) {
        /* CPU and integrated devices: map device memory directly, staging would only copy twice. */
        required = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        preferred = required | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    } else {
        required = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
        preferred = required;
    }
    int type = find_memory_type(&dev->caps.memory, req.memoryTypeBits, required, preferred);
    if (type < 0 && use == VKA_MEMORY_DEVICE) type = find_memory_type(&dev->caps.memory, req.memoryTypeBits, 0, 0);
    if (type < 0) {
        status = vka_fail(dev, VKATTN_ERROR_UNSUPPORTED, "%s: no suitable memory type", what);
        goto fail;
    }
    VkMemoryAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    VKA_VK(dev, dev->vk.vkAllocateMemory(dev->device, &alloc, NULL, &b.memory));
    VKA_VK(dev, dev->vk.vkBindBufferMemory(dev->device, b.buffer, b.memory, 0));
    b.size = size;
    b.room = room;

    VkMemoryPropertyFlags flags = dev->caps.memory.memoryTypes[type].propertyFlags;
    const VkMemoryPropertyFlags mappable = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    if ((flags & mappable) == mappable) {
        VKA_VK(dev, dev->vk.vkMapMemory(dev->device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped));
        memset(b.mapped, 0, (size_t)(size + room));
    }
    *out = b;
    return VKATTN_OK;
fail:
    vka_buffer_destroy(dev, &b);
    return status;
}

static const VkFormat view_formats[VKA_VIEW_FORMAT_COUNT] = {
    [VKA_VIEW_R32F] = VK_FORMAT_R32_SFLOAT,
    [VKA_VIEW_RGBA32F] = VK_FORMAT_R32G32B32A32_SFLOAT,
    [VKA_VIEW_R16F] = VK_FORMAT_R16_SFLOAT,
    [VKA_VIEW_RGBA16F] = VK_FORMAT_R16G16B16A16_SFLOAT,
    [VKA_VIEW_R32UI] = VK_FORMAT_R32_UINT,
};

/* Texel size in bytes of a view format. */
static uint32_t vka_view_texel_bytes(vka_view_format format)
{
    static const uint32_t bytes[VKA_VIEW_FORMAT_COUNT] = {4, 16, 2, 8, 4};
    return (unsigned)format < VKA_VIEW_FORMAT_COUNT ? bytes[format] : 0;
}

VkDeviceSize vka_buffer_room(VkDeviceSize size, VkDeviceSize max_allocation)
{
    if (max_allocation < size || max_allocation - size < 2 * VKA_VIEW_ROOM) return 0;
    VkDeviceSize bytes = size + VKA_VIEW_ROOM;
    return (bytes & (bytes - 1)) == 0 ? VKA_VIEW_ROOM + 16 : VKA_VIEW_ROOM;
}

VkDeviceSize vka_view_range(VkDeviceSize size, VkDeviceSize room, VkDeviceSize offset, VkDeviceSize range,
                            VkDeviceSize texel, uint64_t max_texels)
{
    if (offset + range + texel <= size) return range; /* bytes after it may be another binding's */
    VkDeviceSize grown = range;
    while (((grown & 0xff) == 0 || ((grown >> 8) & 0xff) == 0) && offset + grown + texel <= size + room &&
           (grown + texel) / texel <= max_texels)
        grown += texel;
    return (grown & 0xff) && ((grown >> 8) & 0xff) ? grown : range;
}

vkattn_status vka_buffer_view(vka_device *dev, vka_buffer *b, vka_view_format format, VkDeviceSize offset,
                              VkDeviceSize range, VkBufferView *out)
{
    vkattn_status status = VKATTN_OK;
    VkDeviceSize texel = vka_view_texel_bytes(format);
    if (offset > b->size) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "internal: a view starts past its buffer");
    if (range == 0) range = (b->size - offset) / texel * texel;
    for (uint32_t i = 0; i < b->view_count; i++) {
        const vka_view *v = &b->views[i];
        if (v->format == format && v->offset == offset && v->range == range) {
            *out = v->view;
            return VKATTN_OK;
        }
    }
    const uint64_t max_texels = dev->caps.props.limits.maxTexelBufferElements;
    if (range / texel > max_texels)
        return vka_fail(dev, VKATTN_ERROR_DEVICE_LIMIT, "a %llu-byte view has %llu texels, more than maxTexelBufferElements (%u)",
                        (unsigned long long)range, (unsigned long long)(range / texel),
                        dev->caps.props.limits.maxTexelBufferElements);
    if (b->view_count == b->view_capacity) {
        uint32_t capacity = b->view_capacity ? b->view_capacity * 2 : 4;
        vka_view *views = vka_realloc(&dev->faults, b->views, capacity * sizeof *views);
        if (!views) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a buffer view");
        b->views = views;
        b->view_capacity = capacity;
    }
    VkBufferViewCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
        .buffer = b->buffer,
        .format = view_formats[format],
        .offset = b->base + offset,
        .range = vka_view_range(b->size, b->room, offset, range, texel, max_texels),
    };
    vka_view *v = &b->views[b->view_count];
    VKA_VK(dev, dev->vk.vkCreateBufferView(dev->device, &info, NULL, &v->view));
    v->format = format, v->offset = offset, v->range = range;
    b->view_count++;
    *out = v->view;
fail:
    return status;
}

vka_buffer vka_buffer_borrow(VkBuffer buffer, VkDeviceSize base, VkDeviceSize size)
{
    return (vka_buffer){.buffer = buffer, .base = base, .size = size, .borrowed = 1};
}

void vka_buffer_destroy(vka_device *dev, vka_buffer *b)
{
    for (uint32_t i = 0; i < b->view_count; i++) dev->vk.vkDestroyBufferView(dev->device, b->views[i].view, NULL);
    free(b->views);
    if (b->buffer && !b->borrowed) dev->vk.vkDestroyBuffer(dev->device, b->buffer, NULL);
    if (b->memory) dev->vk.vkFreeMemory(dev->device, b->memory, NULL); /* also unmaps */
    memset(b, 0, sizeof *b);
}

vkattn_status vka_buffer_reserve(vka_device *dev, vka_buffer *buffer, VkDeviceSize size, vka_memory_use use,
                                 const char *what)
{
    if (buffer->buffer && buffer->size >= size) return VKATTN_OK;
    vka_buffer_destroy(dev, buffer);
    return vka_buffer_create(dev, size, use, what, buffer);
}
