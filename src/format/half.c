/* Conversions between float32 and the 16-bit float formats found in weight and array files. */
#include <string.h>

#include "format/half.h"

static float bits_to_f32(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t f32_to_bits(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

float vka_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    if (exponent == 0x1F) return bits_to_f32(sign | 0x7F800000u | (mantissa << 13));
    if (exponent == 0) {
        /* Zero or subnormal: mantissa * 2^-24, exact in float32. */
        float magnitude = (float)mantissa * 0x1p-24f;
        return sign ? -magnitude : magnitude;
    }
    /* Rebias the exponent from 15 to 127. */
    return bits_to_f32(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

/* Drops the low `shift` bits of `value`, rounding to nearest even. */
static uint32_t shift_round_even(uint32_t value, unsigned shift)
{
    uint32_t kept = value >> shift;
    uint32_t rest = value & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u))) kept++;
    return kept;
}

uint16_t vka_f32_to_f16(float f)
{
    uint32_t x = f32_to_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exponent = (x >> 23) & 0xFFu;
    uint32_t mantissa = x & 0x7FFFFFu;
    if (exponent == 0xFF) {
        if (mantissa == 0) return (uint16_t)(sign | 0x7C00u);
        return (uint16_t)(sign | 0x7E00u | (mantissa >> 13)); /* quiet, keeps the top payload bits */
    }
    int e = (int)exponent - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) {
        /* Below 2^-25 everything rounds to zero (2^-25 itself is a tie and rounds to even 0). */
        if (e < -10) return sign;
        /* Subnormal: units of 2^-24. A carry out of the mantissa gives the smallest normal, whose
         * encoding is exactly the next integer. */
        return (uint16_t)(sign | shift_round_even(mantissa | 0x800000u, (unsigned)(14 - e)));
    }
    /* A carry out of the mantissa moves into the exponent; out of exponent 30 it makes infinity. */
    uint32_t h = ((uint32_t)e << 10) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

float vka_bf16_to_f32(uint16_t b) { return bits_to_f32((uint32_t)b << 16); }

uint16_t vka_f32_to_bf16(float f)
{
    uint32_t x = f32_to_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x0040u);
    /* Round to nearest even; a carry into the exponent is the correct rounding (up to infinity). */
    x += 0x7FFFu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
