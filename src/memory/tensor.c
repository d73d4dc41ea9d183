/* Public device tensors: dense arrays in one buffer each. */
#include "memory/tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "device/context.h"

vkattn_status vka_tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                vkattn_tensor **out)
{
    size_t elem_size = vkattn_dtype_size(dtype);
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
    if (!vka_mul_size(elems, elem_size, &bytes))
        return vka_fail(&ctx->dev, VKATTN_ERROR_SIZE_OVERFLOW, "tensor byte size overflows size_t");

    vkattn_tensor *t = vka_calloc(&ctx->dev.faults, 1, sizeof *t);
    if (!t) return vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a tensor");
    t->ctx = ctx;
    t->dtype = dtype;
    t->rank = rank;
    memcpy(t->dims, dims, rank * sizeof *dims);
    t->elems = elems;
    t->bytes = bytes;
    t->mask_checked = 1; /* zero-filled */
    char shape[96];
    vka_format_dims(shape, sizeof shape, dims, rank);
    char what[128];
    snprintf(what, sizeof what, "a %s tensor %s", vkattn_dtype_name(dtype), shape);
    vkattn_status status = vka_buffer_create(&ctx->dev, bytes, VKA_MEMORY_DEVICE, what, &t->buffer);
    if (status != VKATTN_OK) {
        free(t);
        return status;
    }
    *out = t;
    return VKATTN_OK;
}

vkattn_status vkattn_tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                   vkattn_tensor **out)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status != VKATTN_OK) return status;
    if (!out) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_tensor_create: out is NULL");
    return vka_tensor_create(ctx, dtype, rank, dims, out);
}

void vkattn_tensor_destroy(vkattn_tensor *t)
{
    if (!t) return;
    vka_buffer_destroy(&t->ctx->dev, &t->buffer);
    free(t);
}

vkattn_status vkattn_tensor_write(vkattn_tensor *t, const void *src, size_t bytes)
{
    if (!t) return VKATTN_ERROR_INVALID_ARGUMENT;
    vkattn_status status = vka_check_alive(&t->ctx->dev);
    if (status != VKATTN_OK) return status;
    if (!src) return vka_fail(&t->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_tensor_write: src is NULL");
    if (bytes != t->bytes)
        return vka_fail(&t->ctx->dev, VKATTN_ERROR_SHAPE, "vkattn_tensor_write: %zu bytes given, the tensor holds %zu", bytes,
                        t->bytes);
    t->mask_checked = 0;
    return vka_buffer_write(&t->ctx->transfer, &t->buffer, 0, src, bytes);
}

vkattn_status vkattn_tensor_read(const vkattn_tensor *t, void *dst, size_t bytes)
{
    if (!t) return VKATTN_ERROR_INVALID_ARGUMENT;
    vkattn_status status = vka_check_alive(&t->ctx->dev);
    if (status != VKATTN_OK) return status;
    if (!dst) return vka_fail(&t->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_tensor_read: dst is NULL");
    if (bytes != t->bytes)
        return vka_fail(&t->ctx->dev, VKATTN_ERROR_SHAPE, "vkattn_tensor_read: %zu bytes asked for, the tensor holds %zu",
                        bytes, t->bytes);
    return vka_buffer_read(&t->ctx->transfer, &t->buffer, 0, dst, bytes);
}

vkattn_dtype vkattn_tensor_dtype(const vkattn_tensor *t) { return t ? t->dtype : VKATTN_DTYPE_F32; }
uint32_t vkattn_tensor_rank(const vkattn_tensor *t) { return t ? t->rank : 0; }
uint32_t vkattn_tensor_dim(const vkattn_tensor *t, uint32_t i) { return t && i < t->rank ? t->dims[i] : 0; }
size_t vkattn_tensor_bytes(const vkattn_tensor *t) { return t ? t->bytes : 0; }
