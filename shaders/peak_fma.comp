#version 450
/*
 * peak_fma.comp — arithmetic ceiling: VKA_PEAK_CHAINS independent chains of vec4 FMAs per
 * invocation (float32, or float16 when compiled with PEAK_FP16), 8 * VKA_PEAK_CHAINS FLOPs per loop
 * trip. Many independent chains matter: on lavapipe 8 chains reach only ~70% of what 32 do, since
 * each vec4 FMA becomes a few SIMD FMAs whose latency must be hidden.
 * Grid: any; one result per invocation is stored so nothing is optimised away.
 * Bindings: VKA_PEAK_OUT (abi.h).
 * Loop trips per invocation: iterations + 1 (the chain loops are unrolled).
 */
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"
#ifdef PEAK_FP16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define VEC4 f16vec4
#define SCALAR float16_t
#else
#define VEC4 vec4
#define SCALAR float
#endif

layout(std430, binding = VKA_PEAK_OUT) writeonly buffer Out_ { vec4 results[]; };
layout(push_constant) uniform Push { vka_peak_push pc; };

void main()
{
    uint id = gl_GlobalInvocationID.x;
    VEC4 b = VEC4(SCALAR(pc.multiplier)), c = VEC4(SCALAR(pc.addend));
    VEC4 a[VKA_PEAK_CHAINS];
    [[unroll]] for (uint k = 0; k < VKA_PEAK_CHAINS; k++) a[k] = VEC4(SCALAR(float(id & 7u) * 0.001 + float(k) * 0.01));
    for (uint i = 0; i < pc.iterations; i++)
        [[unroll]] for (uint k = 0; k < VKA_PEAK_CHAINS; k++) a[k] = fma(a[k], b, c);
    VEC4 sum = VEC4(SCALAR(0));
    [[unroll]] for (uint k = 0; k < VKA_PEAK_CHAINS; k++) sum += a[k];
    results[id] = vec4(sum);
}
