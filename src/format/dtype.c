/* Sizes and names of the dtypes (format/dtype.h, and vkattn_dtype_* of the public API). */
#include "format/dtype.h"

size_t vkattn_dtype_size(vkattn_dtype dtype)
{
    switch (dtype) {
    case VKATTN_DTYPE_F32: return 4;
    case VKATTN_DTYPE_F16: return 2;
    case VKATTN_DTYPE_BOOL: return 1;
    case VKATTN_DTYPE_I32: return 4;
    case VKATTN_DTYPE_Q8_0:
    case VKATTN_DTYPE_Q4_0: return 0; /* block formats: vkattn_dtype_row_size */
    }
    return 0;
}

size_t vkattn_dtype_row_size(vkattn_dtype dtype, size_t count)
{
    uint64_t bytes = vka_dtype_bytes(dtype, count);
    return bytes <= SIZE_MAX ? (size_t)bytes : 0;
}

const char *vkattn_dtype_name(vkattn_dtype dtype)
{
    switch (dtype) {
    case VKATTN_DTYPE_F32: return "f32";
    case VKATTN_DTYPE_F16: return "f16";
    case VKATTN_DTYPE_BOOL: return "bool";
    case VKATTN_DTYPE_I32: return "i32";
    case VKATTN_DTYPE_Q8_0: return "q8_0";
    case VKATTN_DTYPE_Q4_0: return "q4_0";
    }
    return "unknown";
}

int vka_dtype_is_block(vkattn_dtype dtype) { return dtype == VKATTN_DTYPE_Q8_0 || dtype == VKATTN_DTYPE_Q4_0; }

int vka_is_cache_dtype(vkattn_dtype dtype)
{
    return dtype == VKATTN_DTYPE_F32 || dtype == VKATTN_DTYPE_F16 || vka_dtype_is_block(dtype);
}

uint32_t vka_block_bytes(vkattn_dtype dtype)
{
    return dtype == VKATTN_DTYPE_Q8_0 ? VKA_Q8_0_BYTES : dtype == VKATTN_DTYPE_Q4_0 ? VKA_Q4_0_BYTES : 0;
}

uint64_t vka_dtype_bytes(vkattn_dtype dtype, uint64_t count)
{
    if (vka_dtype_is_block(dtype))
        return count % VKA_QUANT_BLOCK ? 0 : count / VKA_QUANT_BLOCK * vka_block_bytes(dtype);
    return count * vkattn_dtype_size(dtype);
}

uint64_t vka_kv_pool_bytes(vkattn_dtype dtype, uint64_t values)
{
    return vka_dtype_bytes(dtype, values) + (vka_dtype_is_block(dtype) ? 4 : 0);
}

