#version 450
/*
 * rope.comp — rotary position embedding, in place on the projected Q or K (head-major rows of D
 * elements). Pair p < pairs of a row holds dims (p, p + pairs) (NeoX) or (2p, 2p + 1) (GPT-J);
 * the row of token r is at position pos_offset + r (or meta[pos_offset + r] with POSITIONS) and its pair is rotated by
 * angle = float(pos) * inv_freq[p] (fp32, the host's table): (x1, x2) -> (x1 c - x2 s, x2 c + x1 s).
 * GLSL only bounds sin/cos errors on [-pi, pi], so the angle is first reduced to that range
 * (Cody-Waite, 2pi in three parts; see reduce()).
 *
 * Grid: one invocation per (batch, head, row, pair), WG_SIZE per workgroup.
 * Bindings: VKA_ROPE_* (abi.h); X is read and written (fp16 with OUT_F16).
 * Loop trips per invocation: none (no loops).
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(binding = VKA_ROPE_FREQ) uniform samplerBuffer Freq;
layout(std430, binding = VKA_ROPE_META) readonly buffer Meta_ { uint meta[]; };
#include "attention_common.glsl"
layout(std430, binding = VKA_ROPE_X) buffer X_ { VKA_OUT_TYPE x[]; };
layout(push_constant) uniform Push { vka_rope_push pc; };

/* angle - k*2pi for the nearest integer k, with 2pi = C1 + C2 + C3. C1 and C2 have 8 and 7
 * significant bits, so k*C1 and k*C2 are exact for |k| < 2^16 (angles below about 4e5) even where
 * the implementation does not fuse fma (Vulkan allows that), and each step loses only its final
 * rounding; with a fused fma that holds for larger k too. C3 carries the rest of 2pi to within
 * 2e-14. */
float reduce(float angle)
{
    const float C1 = uintBitsToFloat(0x40c90000u); /* 6.28125 */
    const float C2 = uintBitsToFloat(0x3afe0000u); /* 0.0019378662109375 */
    const float C3 = uintBitsToFloat(0xb62bbbd3u); /* -2.5590314e-06 */
    const float INV_2PI = uintBitsToFloat(0x3e22f983u);
    precise float k = roundEven(angle * INV_2PI);
    precise float r = fma(-k, C1, angle);
    r = fma(-k, C2, r);
    r = fma(-k, C3, r);
    return r;
}

void main()
{
    uint index = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= pc.count) return;
    uint p = index % pc.pairs;
    uint rest = index / pc.pairs;
    uint r = rest % pc.rows;
    rest /= pc.rows;
    uint h = rest % pc.heads, b = rest / pc.heads;
    uint base = pc.offset + b * pc.batch_stride + h * pc.head_stride + r * pc.row_stride;
    uint i1 = base + (pc.gptj != 0u ? 2u * p : p);
    uint i2 = base + (pc.gptj != 0u ? 2u * p + 1u : p + pc.pairs);

    uint position = (FLAGS & VKA_ROPE_POSITIONS) != 0 ? meta[pc.pos_offset + r] : pc.pos_offset + r;
    precise float angle = float(position) * texelFetch(Freq, int(p)).x;
    float a = reduce(angle);
    float c = cos(a), s = sin(a);
    float x1 = float(x[i1]), x2 = float(x[i2]);
    x[i1] = VKA_TO_OUT(x1 * c - x2 * s);
    x[i2] = VKA_TO_OUT(x2 * c + x1 * s);
}
