/* The device tensor behind the public vkattn_tensor handle. */
#ifndef VKA_TENSOR_H
#define VKA_TENSOR_H

#include "memory/buffer.h"

/* What the library knows about a float tensor's values (for masks that must not hold NaN/+inf). */
typedef enum vka_values_state {
    VKA_VALUES_UNKNOWN = 0,    /* written by the device: not inspected */
    VKA_VALUES_CHECKED_OK = 1, /* written from the host; no NaN, no +inf */
    VKA_VALUES_HAS_NAN_OR_POSINF = 2
} vka_values_state;

struct vkattn_tensor {
    vkattn_context *ctx;
    vkattn_dtype dtype;
    uint32_t rank;
    uint32_t dims[VKATTN_MAX_RANK];
    size_t elems, bytes;
    vka_buffer buffer;
    vka_values_state values;
    size_t first_bad;      /* index of the first NaN/+inf when values == HAS_NAN_OR_POSINF */
};

/* Creates a tensor of rank <= 4 from a dims array (internal callers use this too). */
vkattn_status vka_tensor_create(vkattn_context *ctx, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                                vkattn_tensor **out);

#endif
