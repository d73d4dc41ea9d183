/* Conversions between float32 and the 16-bit float formats (IEEE binary16, bfloat16) found in
 * weight files, arrays and fp16 storage. */
#ifndef VKA_HALF_H
#define VKA_HALF_H

#include <stdint.h>

/* IEEE binary16 to float32: exact, including subnormals, infinities and NaN payloads. */
float vka_f16_to_f32(uint16_t h);
/* float32 to binary16, rounding to nearest even; overflow gives infinity, NaN stays a (quiet) NaN. */
uint16_t vka_f32_to_f16(float f);
/* bfloat16 (the top 16 bits of a float32) to float32: exact. */
float vka_bf16_to_f32(uint16_t b);
/* float32 to bfloat16, rounding to nearest even; NaN stays a (quiet) NaN. */
uint16_t vka_f32_to_bf16(float f);

#endif
