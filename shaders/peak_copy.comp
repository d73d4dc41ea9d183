#version 450
/*
 * peak_copy.comp — memory ceiling: a grid-stride copy of `count` vec4s from one buffer to another
 * (16 bytes read + 16 written per element).
 * Bindings: VKA_PEAK_SRC, VKA_PEAK_DST (abi.h).
 * Loop trips per invocation: ceil(count / invocations) + 1.
 */
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(std430, binding = VKA_PEAK_SRC) readonly buffer Src_ { vec4 src[]; };
layout(std430, binding = VKA_PEAK_DST) writeonly buffer Dst_ { vec4 dst[]; };
layout(push_constant) uniform Push { vka_peak_push pc; };

void main()
{
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) dst[i] = src[i];
}
