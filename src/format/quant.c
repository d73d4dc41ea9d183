/* ggml's Q8_0 and Q4_0 block formats on the host (see quant.h). The arithmetic follows ggml's
 * quantize_row_q8_0_ref / quantize_row_q4_0_ref step for step, in float, so that each rounding is
 * the one ggml (and the device's kv_append.comp) makes. */
#include "format/quant.h"

#include <math.h>

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
        /* x * id lies in [-8, 8] give or take an ulp, so the sums are in (0, 17): truncation is floor */
        const float lo = x[j] * id + 8.5f, hi = x[j + VKA_QUANT_BLOCK / 2] * id + 8.5f;
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

int vka_dtype_round_trip(vkattn_dtype dtype, float *x, size_t count)
{
    uint8_t block[VKA_Q8_0_BYTES];
    switch (dtype) {
    case VKATTN_DTYPE_F32: return 0;
    case VKATTN_DTYPE_F16:
        for (size_t i = 0; i < count; i++) x[i] = vka_f16_to_f32(vka_f32_to_f16(x[i]));
        return 0;
    case VKATTN_DTYPE_Q8_0:
    case VKATTN_DTYPE_Q4_0:
        if (count % VKA_QUANT_BLOCK) return -1;
        for (size_t i = 0; i < count; i += VKA_QUANT_BLOCK) {
            if (dtype == VKATTN_DTYPE_Q8_0) {
                vka_quantize_q8_0(x + i, block);
                vka_dequantize_q8_0(block, x + i);
            } else {
                vka_quantize_q4_0(x + i, block);
                vka_dequantize_q4_0(block, x + i);
            }
        }
        return 0;
    default: return -1;
    }
}
