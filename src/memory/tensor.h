/* The device tensor behind the public vkattn_tensor handle. */
#ifndef VKA_TENSOR_H
#define VKA_TENSOR_H

#include "memory/buffer.h"

struct vkattn_tensor {
    vkattn_context *ctx;
    vkattn_dtype dtype;
    uint32_t rank;
    uint32_t dims[VKATTN_MAX_RANK];
    size_t elems, bytes;
    vka_buffer buffer;
    /* Its values were read and found fit for a float attn_mask (no NaN, no +inf) since it was
     * last written: a mask is inspected on its first use, not every tensor on every write. */
    int mask_checked;
};

/* Creates a tensor of rank <= 4 from a dims array (internal callers use this too). */
vkattn_status vka_tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                vkattn_tensor **out);

#endif
