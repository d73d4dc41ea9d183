/* Copies between host memory and buffers the host cannot map, through a staging buffer and one
 * command lane (each copy is submitted and waited for). */
#include "memory/transfer.h"

#include <string.h>

/* Chunk size of staged copies: bounds the staging buffer however large the tensor. */
#define VKA_STAGING_CHUNK ((VkDeviceSize)32 << 20)

typedef struct copy_region {
    VkBuffer src, dst;
    VkDeviceSize src_offset, dst_offset, size;
    int fill_zero; /* vkCmdFillBuffer(dst) instead of a copy */
} copy_region;

vkattn_status vka_transfer_create(vka_device *dev, vka_transfer *out)
{
    vka_transfer t = {.dev = dev};
    vkattn_status status = vka_commands_create(dev, &t.lane);
    if (status == VKATTN_OK) *out = t;
    return status;
}

void vka_transfer_destroy(vka_transfer *t)
{
    if (!t->dev) return;
    vka_buffer_destroy(t->dev, &t->staging);
    vka_commands_destroy(t->dev, &t->lane);
    memset(t, 0, sizeof *t);
}

vkattn_status vka_transfer_begin(vka_transfer *t, VkCommandBuffer *cmd)
{
    vkattn_status status = vka_commands_begin(t->dev, &t->lane);
    if (status == VKATTN_OK) *cmd = t->lane.cmd;
    return status;
}

vkattn_status vka_transfer_submit_wait(vka_transfer *t, const char *what)
{
    return vka_commands_submit_wait(t->dev, &t->lane, what);
}

static vkattn_status submit_copy(vka_transfer *t, const copy_region *region)
{
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vkattn_status status = vka_transfer_begin(t, &cmd);
    if (status != VKATTN_OK) return status;
    if (region->fill_zero) {
        t->dev->vk.vkCmdFillBuffer(cmd, region->dst, region->dst_offset, region->size, 0);
    } else {
        VkBufferCopy copy = {region->src_offset, region->dst_offset, region->size};
        t->dev->vk.vkCmdCopyBuffer(cmd, region->src, region->dst, 1, &copy);
    }
    return vka_transfer_submit_wait(t, "a buffer copy");
}

vkattn_status vka_buffer_fill_zero(vka_transfer *t, vka_buffer *buffer)
{
    if (buffer->mapped) {
        memset(buffer->mapped, 0, (size_t)buffer->size);
        return VKATTN_OK;
    }
    copy_region region = {.dst = buffer->buffer, .dst_offset = buffer->base, .size = buffer->size, .fill_zero = 1};
    return submit_copy(t, &region);
}

static vkattn_status reserve_staging(vka_transfer *t, VkDeviceSize bytes)
{
    VkDeviceSize want = bytes < VKA_STAGING_CHUNK ? bytes : VKA_STAGING_CHUNK;
    return vka_buffer_reserve(t->dev, &t->staging, want, VKA_MEMORY_STAGING, "the staging buffer");
}

vkattn_status vka_buffer_write(vka_transfer *t, vka_buffer *buffer, VkDeviceSize offset, const void *src,
                               size_t bytes)
{
    if (buffer->mapped) {
        memcpy((char *)buffer->mapped + offset, src, bytes);
        return VKATTN_OK;
    }
    vkattn_status status = reserve_staging(t, bytes);
    for (size_t done = 0; status == VKATTN_OK && done < bytes;) {
        size_t n = bytes - done < t->staging.size ? bytes - done : (size_t)t->staging.size;
        memcpy(t->staging.mapped, (const char *)src + done, n);
        copy_region region = {t->staging.buffer, buffer->buffer, 0, buffer->base + offset + done, n, 0};
        status = submit_copy(t, &region);
        done += n;
    }
    return status;
}

vkattn_status vka_buffer_read(vka_transfer *t, const vka_buffer *buffer, VkDeviceSize offset, void *dst,
                              size_t bytes)
{
    if (buffer->mapped) {
        memcpy(dst, (const char *)buffer->mapped + offset, bytes);
        return VKATTN_OK;
    }
    vkattn_status status = reserve_staging(t, bytes);
    for (size_t done = 0; status == VKATTN_OK && done < bytes;) {
        size_t n = bytes - done < t->staging.size ? bytes - done : (size_t)t->staging.size;
        copy_region region = {buffer->buffer, t->staging.buffer, buffer->base + offset + done, 0, n, 0};
        status = submit_copy(t, &region);
        if (status == VKATTN_OK) memcpy((char *)dst + done, t->staging.mapped, n);
        done += n;
    }
    return status;
}
