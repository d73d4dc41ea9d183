/* ggml's Q8_0 and Q4_0 block formats on the host (see quant.h), and the conversions of fp32
 * values to and from every dtype that stores them (vkattn_dtype_from_f32 / _to_f32, round trips).
 * The arithmetic follows ggml's quantize_row_q8_0_ref / quantize_row_q4_0_ref step for step, in
 * float, so that each rounding is the one ggml (and the device's kv_append.comp) makes. */
#include "format/quant.h"

#include <math.h>
#include <string.h>

#include "format/half.h"

static void put_half(uint8_t *at, uint16_t h)
{
    at[0] = (uint8_t)(h & 0xFFu);
    at[1] = (uint8_t)(h >> 8);
}

static float get_half(const uint8_t *at) { return vka_f16_to_f32((uint16_t)(at[0] | at[1] << 8)); }

/* A block holding NaN or an infinity: d = NaN, every q = 0 (quant.h). */
static int poisoned(const float *x, uint8_t *block, uint32_t bytes)
{
    int bad = 0;
    for (int j = 0; j < VKA_QUANT_BLOCK; j++) bad |= !isfinite(x[j]);
    if (!bad) return 0;
    put_half(block, 0x7E00u);
    for (uint32_t i = 2; i < bytes; i++) block[i] = 0;
    return 1;
}

void vka_quantize_q8_0(const float x[VKA_QUANT_BLOCK], uint8_t block[VKA_Q8_0_BYTES])
{
    if (poisoned(x, block, VKA_Q8_0_BYTES)) return;
    float amax = 0.0f;
    for (int j = 0; j < VKA_QUANT_BLOCK; j++) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(block, vka_f32_to_f16(d));
    for (int j = 0; j < VKA_QUANT_BLOCK; j++) {
        const float scaled = x[j] * id;
        block[2 + j] = (uint8_t)(int8_t)roundf(scaled); /* roundf: halves away from zero; |q| <= 127 */
    }
}

void vka_dequantize_q8_0(const uint8_t block[VKA_Q8_0_BYTES], float y[VKA_QUANT_BLOCK])
{
    const float d = get_half(block);
    for (int j = 0; j < VKA_QUANT_BLOCK; j++) y[j] = (float)(int8_t)block[2 + j] * d;
}

void vka_quantize_q4_0(const float x[VKA_QUANT_BLOCK], uint8_t block[VKA_Q4_0_BYTES])
{
    if (poisoned(x, block, VKA_Q4_0_BYTES)) return;
    float amax = 0.0f, max = 0.0f; /* the first value of largest magnitude, with its sign */
    for (int j = 0; j < VKA_QUANT_BLOCK; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_half(block, vka_f32_to_f16(d));
    for (int j = 0; j < VKA_QUANT_BLOCK / 2; j++) {
        /* x * id lies in [-8, 8] give or take an ulp, so the sums are in (0, 17): truncation is floor.
         * The product and the sum in two statements: a compiler may fuse them within one expression
         * (clang's default on aarch64), and the device rounds both (kv_quant.glsl). */
        const float scaled_lo = x[j] * id, scaled_hi = x[j + VKA_QUANT_BLOCK / 2] * id;
        const float lo = scaled_lo + 8.5f, hi = scaled_hi + 8.5f;
        const int q_lo = (int)lo < 15 ? (int)lo : 15, q_hi = (int)hi < 15 ? (int)hi : 15;
        block[2 + j] = (uint8_t)(q_lo | q_hi << 4);
    }
}

void vka_dequantize_q4_0(const uint8_t block[VKA_Q4_0_BYTES], float y[VKA_QUANT_BLOCK])
{
    const float d = get_half(block);
    for (int j = 0; j < VKA_QUANT_BLOCK / 2; j++) {
        y[j] = (float)((block[2 + j] & 0x0F) - 8) * d;
        y[j + VKA_QUANT_BLOCK / 2] = (float)((block[2 + j] >> 4) - 8) * d;
    }
}

/* Whether the byte ranges overlap (the conversions read src while they write dst). */
static int overlap(const void *a, size_t a_bytes, const void *b, size_t b_bytes)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return x < y + b_bytes && y < x + a_bytes;
}

/* The checks both directions share, given the fp32 side and the dtype's (packed) side: `bytes` is
 * what the packed side holds. */
static vkattn_status check_convert(vkattn_dtype dtype, const void *floats, const void *packed, size_t count,
                                   size_t *bytes)
{
    if (!vka_is_cache_dtype(dtype)) return VKATTN_ERROR_DTYPE;
    if (vka_dtype_is_block(dtype) && count % VKA_QUANT_BLOCK) return VKATTN_ERROR_SHAPE;
    if (count > SIZE_MAX / sizeof(float)) return VKATTN_ERROR_INVALID_ARGUMENT;
    *bytes = (size_t)vka_dtype_bytes(dtype, count);
    if (count && (!floats || !packed)) return VKATTN_ERROR_INVALID_ARGUMENT;
    if (count && !(dtype == VKATTN_DTYPE_F32 && floats == packed) &&
        overlap(floats, count * sizeof(float), packed, *bytes))
        return VKATTN_ERROR_INVALID_ARGUMENT;
    return VKATTN_OK;
}

vkattn_status vkattn_dtype_from_f32(vkattn_dtype dtype, const float *src, size_t count, void *dst)
{
    size_t bytes = 0;
    vkattn_status status = check_convert(dtype, src, dst, count, &bytes);
    if (status != VKATTN_OK || !count) return status;
    uint8_t *out = dst;
    switch (dtype) {
    case VKATTN_DTYPE_F32: memmove(dst, src, bytes); break;
    case VKATTN_DTYPE_F16:
        for (size_t i = 0; i < count; i++) put_half(out + 2 * i, vka_f32_to_f16(src[i]));
        break;
    default: /* the block formats */
        for (size_t i = 0; i < count; i += VKA_QUANT_BLOCK, out += vka_block_bytes(dtype)) {
            if (dtype == VKATTN_DTYPE_Q8_0) vka_quantize_q8_0(src + i, out);
            else vka_quantize_q4_0(src + i, out);
        }
    }
    return VKATTN_OK;
}

vkattn_status vkattn_dtype_to_f32(vkattn_dtype dtype, const void *src, size_t count, float *dst)
{
    size_t bytes = 0;
    vkattn_status status = check_convert(dtype, dst, src, count, &bytes);
    if (status != VKATTN_OK || !count) return status;
    const uint8_t *in = src;
    switch (dtype) {
    case VKATTN_DTYPE_F32: memmove(dst, src, bytes); break;
    case VKATTN_DTYPE_F16:
        for (size_t i = 0; i < count; i++) dst[i] = get_half(in + 2 * i);
        break;
    default:
        for (size_t i = 0; i < count; i += VKA_QUANT_BLOCK, in += vka_block_bytes(dtype)) {
            if (dtype == VKATTN_DTYPE_Q8_0) vka_dequantize_q8_0(in, dst + i);
            else vka_dequantize_q4_0(in, dst + i);
        }
    }
    return VKATTN_OK;
}

int vka_dtype_round_trip(vkattn_dtype dtype, float *x, size_t count)
{
    /* through the conversions above, a block of 32 values at a time (they do not work in place) */
    uint8_t stored[VKA_QUANT_BLOCK * sizeof(float)];
    if (!vka_is_cache_dtype(dtype) || (vka_dtype_is_block(dtype) && count % VKA_QUANT_BLOCK)) return -1;
    for (size_t i = 0; i < count; i += VKA_QUANT_BLOCK) {
        size_t n = count - i < VKA_QUANT_BLOCK ? count - i : VKA_QUANT_BLOCK;
        if (vkattn_dtype_from_f32(dtype, x + i, n, stored) != VKATTN_OK ||
            vkattn_dtype_to_f32(dtype, stored, n, x + i) != VKATTN_OK)
            return -1;
    }
    return 0;
}
