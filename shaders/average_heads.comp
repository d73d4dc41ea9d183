#version 450
/*
 * average_heads.comp — head-averaged attention weights: for the heads of one chunk,
 * W[(b*L + i) * S_ext + j] += inv_heads * P[r(b,h,i), j]. W starts zeroed and chunks run in
 * order, so the sum over all heads accumulates without atomics.
 *
 * Grid: one invocation per (batch in chunk, query in chunk, key), WG_SIZE per workgroup.
 * Bindings: VKA_AVERAGE_* (abi.h); W is read and written.
 * Loop trips per invocation: H + 1.
 */
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(std430, binding = VKA_AVERAGE_P) readonly buffer P_ { float p[]; };
layout(std430, binding = VKA_AVERAGE_W) buffer W_ { float w[]; };
layout(push_constant) uniform Push { vka_average_push pc; };

void main()
{
    uint group = vka_group_index();
    if (group >= pc.group_count) return;
    uint index = group * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint j = index % pc.S_ext;
    uint rest = index / pc.S_ext;
    uint i_local = rest % pc.i_count;
    uint b = pc.b_begin + rest / pc.i_count;
    if (b >= pc.b_begin + pc.b_count) return;

    uint bh_end = pc.bh_begin + pc.bh_count;
    float sum = 0.0;
    for (uint h = 0; h < pc.H; h++) {
        uint bh = b * pc.H + h;
        if (bh < pc.bh_begin || bh >= bh_end) continue;
        sum += p[((bh - pc.bh_begin) * pc.i_count + i_local) * pc.S_ext + j];
    }
    uint out_index = (b * pc.L + pc.i_begin + i_local) * pc.S_ext + j;
    w[out_index] += sum * pc.inv_heads;
}
