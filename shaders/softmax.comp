#version 450
/*
 * softmax.comp — row-wise softmax in place: p_j = exp(s_j - max) / sum_k exp(s_k - max).
 * A row whose scores are all -inf (every key masked) becomes zeros, never NaN; a NaN score makes
 * the whole row NaN (IEEE propagation: bad input is not hidden). With VKA_VARIANT_SINK (VARIANT) the
 * row's head's sink logit s joins the denominator without a value: p_j = exp(s_j - m) /
 * (exp(s - m) + sum_k exp(s_k - m)), m the max over the scores and s (added once per row: in ROW,
 * and in NORMALIZE after the ranges' statistics are combined). A fully masked row is then zeros too.
 *
 * A row is cut into `ranges` key ranges, one workgroup each (see vka_softmax_push): with one range
 * the ROW mode does it all; longer rows (the loop budget) take a STATS pass that writes each
 * range's (max, sum of exp, NaN seen) and a NORMALIZE pass that combines them.
 *
 * Grid: rows * ranges workgroups. The reductions go through shared memory with a tree over the
 * workgroup (no subgroup width assumed); the workgroup size is a power of two.
 * Bindings: VKA_SOFTMAX_* (abi.h).
 * Loop trips per invocation (n = range_len / WG_SIZE rounded up, t = log2(WG_SIZE)):
 * ROW 3(n + 1) + 2(t + 1); STATS 2(n + 1) + 2(t + 1); NORMALIZE (ranges + 1) + (n + 1).
 */
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(std430, binding = VKA_SOFTMAX_P) buffer P_ { float p[]; };
layout(std430, binding = VKA_SOFTMAX_STATS_BUF) buffer Stats_ { float stats[]; };
layout(std430, binding = VKA_SOFTMAX_HEAD_TERMS) readonly buffer HeadTerms_ { float head_terms[]; };
layout(push_constant) uniform Push { vka_softmax_push pc; };

shared float red_value[gl_WorkGroupSize.x];
shared uint red_nan[gl_WorkGroupSize.x];

/* Adds the sink to a row's max m and sum of exp(s - m) (sum 0 when m is -inf). */
void add_sink(uint row, inout float m, inout float sum)
{
    if ((VARIANT & VKA_VARIANT_SINK) == 0) return;
    float sink = head_terms[2 * ((pc.bh_begin + row / pc.i_count) % pc.H) + 1];
    float m_new = max(m, sink); /* finite unless m is +inf */
    sum = (m == -1.0 / 0.0 ? 0.0 : sum * exp(m - m_new)) + exp(sink - m_new);
    m = m_new;
}

/* Max (ignoring NaN) and whether a NaN was seen, over the workgroup. */
void reduce_max(inout float m, inout uint saw_nan)
{
    uint t = gl_LocalInvocationID.x;
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
}

float reduce_sum(float x)
{
    uint t = gl_LocalInvocationID.x;
    red_value[t] = x;
    barrier();
    for (uint stride = gl_WorkGroupSize.x / 2; stride > 0; stride /= 2) {
        if (t < stride) red_value[t] += red_value[t + stride];
        barrier();
    }
    return red_value[0];
}

void main()
{
    uint group = vka_group_index();
    if (group >= pc.group_count) return;
    uint row = group / pc.ranges, range = group % pc.ranges;
    uint t = gl_LocalInvocationID.x;
    uint base = row * pc.S_ext;
    uint begin = range * pc.range_len, end = min(begin + pc.range_len, pc.S_ext);

    float m = -1.0 / 0.0;
    uint saw_nan = 0;
    float sum = 0.0;
    if (FLAGS == VKA_SOFTMAX_NORMALIZE) {
        /* The row's max over its ranges' maxima, then the sum of their rescaled sums. */
        uint first = row * pc.ranges * 3;
        for (uint c = 0; c < pc.ranges; c++) {
            float cm = stats[first + c * 3], cs = stats[first + c * 3 + 1];
            float m_new = max(m, cm);
            float m_ref = m_new == -1.0 / 0.0 ? 0.0 : m_new;
            sum = sum * exp(m - m_ref) + cs * exp(cm - m_ref);
            m = m_new;
            saw_nan |= uint(stats[first + c * 3 + 2] != 0.0);
        }
        if (saw_nan == 0 && m != 1.0 / 0.0) add_sink(row, m, sum);
    } else {
        for (uint j = begin + t; j < end; j += gl_WorkGroupSize.x) {
            float s = p[base + j];
            if (isnan(s)) saw_nan = 1;
            else m = max(m, s);
        }
        reduce_max(m, saw_nan);
        if (saw_nan == 0 && !isinf(m)) {
            float part = 0.0;
            for (uint j = begin + t; j < end; j += gl_WorkGroupSize.x) part += exp(p[base + j] - m);
            sum = reduce_sum(part);
        }
        if (FLAGS == VKA_SOFTMAX_ROW && saw_nan == 0 && m != 1.0 / 0.0) add_sink(row, m, sum);
        if (FLAGS == VKA_SOFTMAX_STATS) {
            if (t == 0) {
                uint at = (row * pc.ranges + range) * 3;
                stats[at] = m;
                stats[at + 1] = sum;
                stats[at + 2] = float(saw_nan != 0 || m == 1.0 / 0.0);
            }
            return;
        }
    }

    if (saw_nan != 0 || isinf(m)) {
        /* All keys masked (m = -inf): zeros. NaN or +inf scores: NaN, as the formula gives. */
        float fill = (saw_nan == 0 && m < 0.0) ? 0.0 : (0.0 / 0.0);
        for (uint j = begin + t; j < end; j += gl_WorkGroupSize.x) p[base + j] = fill;
        return;
    }
    float inv = 1.0 / sum;
    for (uint j = begin + t; j < end; j += gl_WorkGroupSize.x) p[base + j] = exp(p[base + j] - m) * inv;
}
