/* The block formats of ggml/llama.cpp that a KV cache may store (VKATTN_DTYPE_Q8_0, _Q4_0), on the
 * host: one block of 32 values quantized and dequantized exactly as ggml's reference code does (the
 * sizes of values in any dtype are in format/dtype.h). The CPU reference rounds k and v through these
 * (vkattn_host_forward_desc.kv_cache_dtype), the tests check them against hand-computed blocks, and
 * shaders/kv_append.comp and attn_paged.comp implement the same arithmetic on the device.
 *
 * A block is bytes, little-endian, no padding (ggml's block_q8_0 and block_q4_0):
 *   Q8_0, 34 bytes: fp16 d = max|x| / 127, then 32 int8 q = roundf(x * (1/d)); x ~ d * q.
 *   Q4_0, 18 bytes: fp16 d = m / -8 where m is the value of largest magnitude (the first such, with
 *                   its sign), then 16 bytes of 4-bit q = min(15, trunc(x * (1/d) + 8.5)): value j
 *                   (j < 16) in the low nibble of byte j, value j + 16 in its high nibble; x ~ d * (q - 8).
 * 1/d is taken of d in fp32 (0 when d is 0); dequantization multiplies by d rounded to fp16. A block
 * holding NaN or an infinity (which ggml leaves undefined) stores d = NaN and every q = 0, so it
 * dequantizes to NaN throughout. */
#ifndef VKA_QUANT_H
#define VKA_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "format/dtype.h"

void vka_quantize_q8_0(const float x[VKA_QUANT_BLOCK], uint8_t block[VKA_Q8_0_BYTES]);
void vka_dequantize_q8_0(const uint8_t block[VKA_Q8_0_BYTES], float y[VKA_QUANT_BLOCK]);
void vka_quantize_q4_0(const float x[VKA_QUANT_BLOCK], uint8_t block[VKA_Q4_0_BYTES]);
void vka_dequantize_q4_0(const uint8_t block[VKA_Q4_0_BYTES], float y[VKA_QUANT_BLOCK]);

/* Replaces `count` values by what storing them as `dtype` and loading them back gives: F32
 * unchanged, F16 rounded to nearest even, Q8_0 / Q4_0 block by block (count a multiple of 32).
 * Returns 0, or -1 (nothing changed) for any other dtype or a count that is not whole blocks. */
int vka_dtype_round_trip(vkattn_dtype dtype, float *x, size_t count);

#endif
