/* The device tensor behind the public vkattn_tensor handle. */
#ifndef VKA_TENSOR_H
#define VKA_TENSOR_H

#include "common/list.h"
#include "memory/buffer.h"

struct vkattn_tensor {
    vkattn_context *ctx;
    vka_link link; /* in ctx->tensors */
    vkattn_dtype dtype;
    uint32_t rank;
    uint32_t dims[VKATTN_MAX_RANK];
    size_t elems, bytes;
    vka_buffer buffer; /* borrowed for a wrapped tensor */
    /* Its values were read and found fit for a float attn_mask (no NaN, no +inf) since it was
     * last written: a mask is inspected on its first use, not every tensor on every write. */
    int mask_checked;
    struct vkattn_submission *submission; /* the unfinished submission that uses it, if any */
};

/* Creates a tensor of rank <= 4 from a dims array (internal callers use this too). */
vkattn_status vka_tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                vkattn_tensor **out);

/* Copies host bytes into / out of the tensor at byte `offset` (checked by the caller). */
vkattn_status vka_tensor_write(vkattn_tensor *t, size_t offset, const void *src, size_t bytes);
vkattn_status vka_tensor_read(const vkattn_tensor *t, size_t offset, void *dst, size_t bytes);

/* VKATTN_ERROR_BUSY, with a message naming `what`, if the tensor belongs to an unfinished
 * submission; else VKATTN_OK. */
vkattn_status vka_tensor_check_free(const vkattn_tensor *t, const char *what);

#endif
