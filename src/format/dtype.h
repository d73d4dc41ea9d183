/* Facts about vkattn_dtype: element sizes, names, the block formats (Q8_0, Q4_0) and what a KV
 * cache may store. One home for them: the public vkattn_dtype_* functions and the internal sizes
 * of values in any dtype come from here. */
#ifndef VKA_DTYPE_H
#define VKA_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#include "abi.h" /* the block sizes, shared with the kernels */
#include "vkattn.h"

#define VKA_QUANT_BLOCK VKA_QUANT_VALUES /* 32 values per block of a block format */

/* 1 for the block formats (Q8_0, Q4_0), else 0. */
int vka_dtype_is_block(vkattn_dtype dtype);
/* 1 for what a KV cache may store: F32, F16, Q8_0, Q4_0. */
int vka_is_cache_dtype(vkattn_dtype dtype);
/* Bytes of one block of a block format; 0 for any other dtype. */
uint32_t vka_block_bytes(vkattn_dtype dtype);
/* Bytes of `count` values: count * the element size, or count / 32 blocks for a block format;
 * 0 when count is not a whole number of blocks or the dtype is not in the enum. */
uint64_t vka_dtype_bytes(vkattn_dtype dtype, uint64_t count);

/* Bytes of one pool of a KV cache holding `values` values of `dtype`: their bytes, plus for a
 * block format one spare word (abi.h: the kernels may read the word after a row's last 4 bytes). */
uint64_t vka_kv_pool_bytes(vkattn_dtype dtype, uint64_t values);

#endif
