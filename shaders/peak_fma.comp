#version 450
/*
 * peak_fma.comp — arithmetic ceiling: 8 independent chains of vec4 FMAs per invocation
 * (float32, or float16 when compiled with PEAK_FP16). 64 FLOPs per loop trip per invocation.
 * Grid: any; one result per invocation is stored so nothing is optimised away.
 * Bindings: 0 results.
 */
#extension GL_GOOGLE_include_directive : require
#include "abi.h"
#ifdef PEAK_FP16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define VEC4 f16vec4
#define SCALAR float16_t
#else
#define VEC4 vec4
#define SCALAR float
#endif

layout(local_size_x = 64) in;
layout(std430, binding = 0) writeonly buffer Out_ { vec4 results[]; };
layout(push_constant) uniform Push { vka_peak_push pc; };

void main()
{
    uint id = gl_GlobalInvocationID.x;
    VEC4 b = VEC4(SCALAR(pc.multiplier)), c = VEC4(SCALAR(pc.addend));
    VEC4 a0 = VEC4(SCALAR(id & 7u) * SCALAR(0.001)), a1 = a0 + VEC4(SCALAR(0.01)), a2 = a0 + VEC4(SCALAR(0.02)),
         a3 = a0 + VEC4(SCALAR(0.03)), a4 = a0 + VEC4(SCALAR(0.04)), a5 = a0 + VEC4(SCALAR(0.05)),
         a6 = a0 + VEC4(SCALAR(0.06)), a7 = a0 + VEC4(SCALAR(0.07));
    for (uint i = 0; i < pc.iterations; i++) {
        a0 = fma(a0, b, c), a1 = fma(a1, b, c), a2 = fma(a2, b, c), a3 = fma(a3, b, c);
        a4 = fma(a4, b, c), a5 = fma(a5, b, c), a6 = fma(a6, b, c), a7 = fma(a7, b, c);
    }
    results[id] = vec4(a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7);
}
