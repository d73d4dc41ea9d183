/* The device tensor behind the public vkattn_tensor handle. */
#ifndef VKA_TENSOR_H
#define VKA_TENSOR_H

#include "api/context.h"

struct vkattn_tensor {
    vkattn_context *ctx;
    vka_child child; /* in the context's list: a tensor the application made (a layer's own are not) */
    vkattn_dtype dtype;
    uint32_t rank;
    uint32_t dims[VKATTN_MAX_RANK];
    size_t elems, bytes;
    vka_buffer buffer; /* borrowed for a wrapped tensor */
    /* Its values were read and found fit for a float attn_mask (no NaN, no +inf) since it was
     * last written: a mask is inspected on its first use, not every tensor on every write. */
    int mask_checked;
    vka_user *user; /* the unfinished submission that uses it, if any */
};

/* Creates a tensor of rank <= 4 from a dims array, for the library's own use: it is not in the
 * context's list, so its owner destroys it (vkattn_tensor_create adopts it for the application). */
vkattn_status vka_tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                vkattn_tensor **out);

/* Copies host bytes into / out of the tensor at byte `offset` (checked by the caller). */
vkattn_status vka_tensor_write(vkattn_tensor *t, size_t offset, const void *src, size_t bytes);
vkattn_status vka_tensor_read(const vkattn_tensor *t, size_t offset, void *dst, size_t bytes);

/* VKATTN_ERROR_BUSY, with a message naming `what`, if the tensor belongs to an unfinished
 * submission; else VKATTN_OK. */
vkattn_status vka_tensor_check_free(const vkattn_tensor *t, const char *what);

#endif
