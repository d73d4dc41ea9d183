/* Public device tensors: dense arrays in one buffer each, the library's own or (wrapped) the
 * application's. */
#include "api/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "format/dtype.h"

/* Checks dtype, rank and dims and computes the element and byte counts. */
static vkattn_status check_shape(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                 size_t *elems_out, size_t *bytes_out)
{
    size_t elem_size = vkattn_dtype_size(dtype);
    if (vka_dtype_is_block(dtype))
        return vka_fail(&ctx->dev, VKATTN_ERROR_DTYPE,
                        "a tensor holds elements (f32, f16, bool or i32): %s is a block format, for KV caches only",
                        vkattn_dtype_name(dtype));
    if (elem_size == 0) return vka_fail(&ctx->dev, VKATTN_ERROR_DTYPE, "tensor dtype %d is not a vkattn_dtype", (int)dtype);
    if (rank == 0 || rank > VKATTN_MAX_RANK)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "tensor rank %u is not in 1..%d", rank, VKATTN_MAX_RANK);
    if (!dims) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "tensor dims is NULL");
    size_t elems = 1, bytes;
    for (uint32_t i = 0; i < rank; i++) {
        if (dims[i] == 0) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "tensor dim %u is 0", i);
        if (!vka_mul_size(elems, dims[i], &elems))
            return vka_fail(&ctx->dev, VKATTN_ERROR_SIZE_OVERFLOW, "tensor element count overflows size_t");
    }
    if (!vka_mul_size(elems, elem_size, &bytes) || bytes > SIZE_MAX - 15)
        return vka_fail(&ctx->dev, VKATTN_ERROR_SIZE_OVERFLOW, "tensor byte size overflows size_t");
    *elems_out = elems;
    *bytes_out = bytes;
    return VKATTN_OK;
}

/* A tensor object (its buffer is set by the caller). */
static vkattn_status make_tensor(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                 size_t elems, size_t bytes, int mask_checked, vkattn_tensor **out)
{
    vkattn_tensor *t = vka_calloc(&ctx->dev.faults, 1, sizeof *t);
    if (!t) return vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a tensor");
    t->ctx = ctx;
    t->dtype = dtype;
    t->rank = rank;
    memcpy(t->dims, dims, rank * sizeof *dims);
    t->elems = elems;
    t->bytes = bytes;
    t->mask_checked = mask_checked;
    *out = t;
    return VKATTN_OK;
}

vkattn_status vka_tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                vkattn_tensor **out)
{
    size_t elems, bytes;
    vkattn_status status = check_shape(ctx, dtype, rank, dims, &elems, &bytes);
    if (status != VKATTN_OK) return status;
    char shape[96], what[128];
    vka_format_dims(shape, sizeof shape, dims, rank);
    snprintf(what, sizeof what, "a %s tensor %s", vkattn_dtype_name(dtype), shape);
    vka_buffer buffer;
    if ((status = vka_buffer_create(&ctx->dev, bytes, VKA_MEMORY_DEVICE, what, &buffer)) != VKATTN_OK) return status;
    /* memory the host maps was zeroed as it was mapped; a discrete GPU's is filled on the device
     * (the contents start zeroed, as promised, and a mask of zeros needs no check) */
    if (!buffer.mapped && (status = vka_buffer_fill_zero(&ctx->transfer, &buffer)) != VKATTN_OK) {
        vka_buffer_destroy(&ctx->dev, &buffer);
        return status;
    }
    vkattn_tensor *t = NULL;
    if ((status = make_tensor(ctx, dtype, rank, dims, elems, bytes, 1 /* zero-filled */, &t)) != VKATTN_OK) {
        vka_buffer_destroy(&ctx->dev, &buffer);
        return status;
    }
    t->buffer = buffer;
    *out = t;
    return VKATTN_OK;
}

static void destroy_child(vka_child *child) { vkattn_tensor_destroy(VKA_CONTAINER_OF(child, vkattn_tensor, child)); }

static vkattn_status tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                   vkattn_tensor **out)
{
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status != VKATTN_OK) return status;
    if (!out) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_tensor_create: out is NULL");
    if ((status = vka_tensor_create(ctx, dtype, rank, dims, out)) == VKATTN_OK)
        vka_context_adopt(ctx, &(*out)->child, destroy_child);
    return status;
}

vkattn_status vkattn_tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                   vkattn_tensor **out)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(ctx, tensor_create(ctx, dtype, rank, dims, out));
}

static vkattn_status tensor_wrap(vkattn_context *ctx, VkBuffer buffer, VkDeviceSize offset, vkattn_dtype dtype,
                                 uint32_t rank, const uint32_t *dims, vkattn_tensor **out)
{
    vka_device *dev = &ctx->dev;
    vkattn_status status = vka_check_alive(dev);
    if (status != VKATTN_OK) return status;
    if (!out) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_tensor_wrap: out is NULL");
    if (buffer == VK_NULL_HANDLE) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_tensor_wrap: buffer is VK_NULL_HANDLE");
    size_t elems, bytes;
    if ((status = check_shape(ctx, dtype, rank, dims, &elems, &bytes)) != VKATTN_OK) return status;
    const VkPhysicalDeviceLimits *limits = &dev->caps.props.limits;
    VkDeviceSize align = limits->minStorageBufferOffsetAlignment > limits->minTexelBufferOffsetAlignment
                             ? limits->minStorageBufferOffsetAlignment
                             : limits->minTexelBufferOffsetAlignment;
    if (align && offset % align)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_tensor_wrap: offset %llu is not a multiple of %llu (this device's storage and texel "
                        "buffer offset alignment)", (unsigned long long)offset, (unsigned long long)align);
    /* The buffer's own size is not queryable; its memory requirements are at least that large,
     * so a tensor past them is certainly out of bounds. */
    VkDeviceSize need = ((VkDeviceSize)bytes + 15) / 16 * 16;
    VkMemoryRequirements req;
    dev->vk.vkGetBufferMemoryRequirements(dev->device, buffer, &req);
    if (offset > req.size || need > req.size - offset)
        return vka_fail(dev, VKATTN_ERROR_SHAPE,
                        "vkattn_tensor_wrap: the tensor needs %llu bytes (its size rounded up to 16) from offset %llu of "
                        "the buffer, which holds at most %llu",
                        (unsigned long long)need, (unsigned long long)offset, (unsigned long long)req.size);
    vkattn_tensor *t = NULL;
    /* What the application writes is not seen here: a float mask in it is never inspected. */
    if ((status = make_tensor(ctx, dtype, rank, dims, elems, bytes, 1, &t)) != VKATTN_OK) return status;
    t->buffer = vka_buffer_borrow(buffer, offset, need);
    vka_context_adopt(ctx, &t->child, destroy_child);
    *out = t;
    return VKATTN_OK;
}

vkattn_status vkattn_tensor_wrap(vkattn_context *ctx, VkBuffer buffer, VkDeviceSize offset, vkattn_dtype dtype,
                                 uint32_t rank, const uint32_t *dims, vkattn_tensor **out)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(ctx, tensor_wrap(ctx, buffer, offset, dtype, rank, dims, out));
}

vkattn_status vkattn_tensor_vulkan_buffer(const vkattn_tensor *t, VkBuffer *buffer, VkDeviceSize *offset,
                                          VkDeviceSize *size)
{
    if (!t || !buffer) return VKATTN_ERROR_INVALID_ARGUMENT;
    *buffer = t->buffer.buffer;
    if (offset) *offset = t->buffer.base;
    if (size) *size = t->buffer.size;
    return VKATTN_OK;
}

void vkattn_tensor_destroy(vkattn_tensor *t)
{
    if (!t) return;
    /* Nothing may still use it on the device: its user is finished (or dropped) first. */
    if (t->user) t->user->release(t->user);
    vka_child_forget(&t->child);
    vka_buffer_destroy(&t->ctx->dev, &t->buffer);
    free(t);
}

vkattn_status vka_tensor_check_free(const vkattn_tensor *t, const char *what)
{
    if (!t->user) return VKATTN_OK;
    return vka_fail(&t->ctx->dev, VKATTN_ERROR_BUSY,
                    "%s is used by a submission that has not finished (vkattn_submission_wait or _poll first)", what);
}

vkattn_status vka_tensor_write(vkattn_tensor *t, size_t offset, const void *src, size_t bytes)
{
    t->mask_checked = 0;
    return vka_buffer_write(&t->ctx->transfer, &t->buffer, offset, src, bytes);
}

vkattn_status vka_tensor_read(const vkattn_tensor *t, size_t offset, void *dst, size_t bytes)
{
    return vka_buffer_read(&t->ctx->transfer, &t->buffer, offset, dst, bytes);
}

/* The checks a copy between the host and bytes [offset, offset + bytes) of `t` needs. `whole`:
 * the call copies the whole tensor. */
static vkattn_status check_copy(const vkattn_tensor *t, const char *fn, const void *host, size_t offset, size_t bytes,
                                int whole)
{
    vka_device *dev = &t->ctx->dev;
    vkattn_status status = vka_check_alive(dev);
    if (status != VKATTN_OK) return status;
    if ((status = vka_tensor_check_free(t, "the tensor")) != VKATTN_OK) return status;
    if (!host) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "%s: the host pointer is NULL", fn);
    if (whole && bytes != t->bytes)
        return vka_fail(dev, VKATTN_ERROR_SHAPE,
                        "%s: %zu bytes given, the tensor holds %zu (the _region calls copy part of it)", fn, bytes,
                        t->bytes);
    size_t esize = vkattn_dtype_size(t->dtype);
    if (offset % esize || bytes % esize)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "%s: offset %zu and size %zu must be whole %s elements (multiples of %zu bytes)", fn, offset,
                        bytes, vkattn_dtype_name(t->dtype), esize);
    if (offset > t->bytes || bytes > t->bytes - offset) /* (an end past SIZE_MAX is said so, not wrapped) */
        return vka_fail(dev, VKATTN_ERROR_SHAPE, "%s: %zu bytes from byte %zu are past the tensor's %zu", fn, bytes,
                        offset, t->bytes);
    return VKATTN_OK;
}

static vkattn_status tensor_write(vkattn_tensor *t, const char *fn, size_t offset, const void *src, size_t bytes,
                                  int whole)
{
    vkattn_status status = check_copy(t, fn, src, offset, bytes, whole);
    return status == VKATTN_OK && bytes ? vka_tensor_write(t, offset, src, bytes) : status;
}

static vkattn_status tensor_read(const vkattn_tensor *t, const char *fn, size_t offset, void *dst, size_t bytes,
                                 int whole)
{
    vkattn_status status = check_copy(t, fn, dst, offset, bytes, whole);
    return status == VKATTN_OK && bytes ? vka_tensor_read(t, offset, dst, bytes) : status;
}

vkattn_status vkattn_tensor_write(vkattn_tensor *t, const void *src, size_t bytes)
{
    if (!t) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(t->ctx, tensor_write(t, "vkattn_tensor_write", 0, src, bytes, 1));
}

vkattn_status vkattn_tensor_read(const vkattn_tensor *t, void *dst, size_t bytes)
{
    if (!t) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(t->ctx, tensor_read(t, "vkattn_tensor_read", 0, dst, bytes, 1));
}

vkattn_status vkattn_tensor_write_region(vkattn_tensor *t, size_t offset, const void *src, size_t bytes)
{
    if (!t) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(t->ctx, tensor_write(t, "vkattn_tensor_write_region", offset, src, bytes, 0));
}

vkattn_status vkattn_tensor_read_region(const vkattn_tensor *t, size_t offset, void *dst, size_t bytes)
{
    if (!t) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(t->ctx, tensor_read(t, "vkattn_tensor_read_region", offset, dst, bytes, 0));
}

vkattn_dtype vkattn_tensor_dtype(const vkattn_tensor *t) { return t ? t->dtype : VKATTN_DTYPE_F32; }
uint32_t vkattn_tensor_rank(const vkattn_tensor *t) { return t ? t->rank : 0; }
uint32_t vkattn_tensor_dim(const vkattn_tensor *t, uint32_t i) { return t && i < t->rank ? t->dims[i] : 0; }
size_t vkattn_tensor_bytes(const vkattn_tensor *t) { return t ? t->bytes : 0; }
