#version 450
/*
 * softmax.comp — row-wise softmax in place: p_j = exp(s_j - max) / sum_k exp(s_k - max).
 * A row whose scores are all -inf (every key masked) becomes zeros, never NaN; a NaN score makes
 * the whole row NaN (IEEE propagation: bad input is not hidden).
 *
 * Grid: one workgroup per row. The reductions go through shared memory with a tree over the
 * workgroup (no subgroup width assumed); the workgroup size is a power of two.
 * Bindings: 0 P (read and written).
 * Specialization: VKA_SPEC_WG_SIZE invocations per workgroup.
 */
#extension GL_GOOGLE_include_directive : require
#include "abi.h"

layout(local_size_x_id = VKA_SPEC_WG_SIZE) in;

layout(std430, binding = 0) buffer P_ { float p[]; };
layout(push_constant) uniform Push { vka_softmax_push pc; };

shared float red_value[gl_WorkGroupSize.x];
shared uint red_nan[gl_WorkGroupSize.x];

void main()
{
    uint row = vka_group_index();
    if (row >= pc.group_count) return;
    uint t = gl_LocalInvocationID.x;
    uint n = pc.S_ext;
    uint base = row * n;

    float m = -1.0 / 0.0;
    uint saw_nan = 0;
    for (uint j = t; j < n; j += gl_WorkGroupSize.x) {
        float s = p[base + j];
        if (isnan(s)) saw_nan = 1;
        else m = max(m, s);
    }
    red_value[t] = m;
    red_nan[t] = saw_nan;
    barrier();
    for (uint stride = gl_WorkGroupSize.x / 2; stride > 0; stride /= 2) {
        if (t < stride) {
            red_value[t] = max(red_value[t], red_value[t + stride]);
            red_nan[t] |= red_nan[t + stride];
        }
        barrier();
    }
    m = red_value[0];
    saw_nan = red_nan[0];
    barrier(); /* everyone has read the results before red_value is reused */

    if (saw_nan != 0 || isinf(m)) {
        /* All keys masked (m = -inf): zeros. NaN or +inf scores: NaN, as the formula gives. */
        float fill = (saw_nan == 0 && m < 0.0) ? 0.0 : (0.0 / 0.0);
        for (uint j = t; j < n; j += gl_WorkGroupSize.x) p[base + j] = fill;
        return;
    }

    float sum = 0.0;
    for (uint j = t; j < n; j += gl_WorkGroupSize.x) sum += exp(p[base + j] - m);
    red_value[t] = sum;
    barrier();
    for (uint stride = gl_WorkGroupSize.x / 2; stride > 0; stride /= 2) {
        if (t < stride) red_value[t] += red_value[t + stride];
        barrier();
    }
    float inv = 1.0 / red_value[0];
    for (uint j = t; j < n; j += gl_WorkGroupSize.x) p[base + j] = exp(p[base + j] - m) * inv;
}
