#version 450
/*
 * attn_merge.comp — combines the softmax states of the `parts` key parts of each row that
 * attn_fused.comp wrote side by side (layout: vka_fused_push in abi.h):
 *   lse = log sum_s exp(lse_s),   ctx = sum_s exp(lse_s - lse) * o_s
 * A part that saw no visible key has lse_s = -inf and weighs nothing; a row with none at all gets a
 * zero context and lse = -inf; a NaN in any part makes the row NaN.
 *
 * Grid: bh_count * i_count * DV invocations, one texel of a row's head slice each.
 * With RAGGED, rows are the paged forward's (attn_paged.comp): see VKA_MERGE_RAGGED.
 * Bindings: VKA_MERGE_* (abi.h).
 * Loop trips per invocation: two loops over the parts, parts + 1 each.
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(std430, binding = VKA_MERGE_STATE_O) readonly buffer StateO_ { float state_o[]; };
layout(std430, binding = VKA_MERGE_STATE_O) readonly buffer StateO4_ { vec4 state_o4[]; };
layout(std430, binding = VKA_MERGE_STATE_LSE) readonly buffer StateLse_ { float state_lse[]; };
layout(std430, binding = VKA_MERGE_LSE_OUT) writeonly buffer Lse_ { float lse[]; };
layout(std430, binding = VKA_MERGE_META) readonly buffer Meta_ { uint meta[]; };
layout(push_constant) uniform Push { vka_merge_push pc; };
#include "attention_common.glsl"
layout(std430, binding = VKA_MERGE_CTX) writeonly buffer Ctx_ { VKA_OUT_TYPE ctx[]; };
layout(std430, binding = VKA_MERGE_CTX) writeonly buffer Ctx4_ { VKA_OUT_VEC4 ctx4[]; };

void main()
{
    uint id = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint t = id % DV, row = id / DV;
    if (row >= pc.bh_count * pc.i_count) return;
    uint bh_local = row / pc.i_count, il = row % pc.i_count;
    uint bh = pc.bh_begin + bh_local, b = bh / pc.H, h = bh % pc.H, i = pc.i_begin + il;
    uint part_stride = pc.bh_count * pc.i_count; /* state rows between one part and the next */
    const float neg_inf = -1.0 / 0.0;
    uint out_first = b * pc.L; /* the ctx row of the row's query 0 */
    if ((FLAGS & VKA_MERGE_RAGGED) != 0) {
        if (i >= meta[b * VKA_SEQ_WORDS + VKA_SEQ_NEW]) return; /* past the sequence's new tokens */
        out_first = meta[b * VKA_SEQ_WORDS + VKA_SEQ_Q_START];
    }

    float top = neg_inf;
    bool saw_nan = false;
    for (uint s = 0; s < pc.parts; s++) {
        float x = state_lse[s * part_stride + row];
        saw_nan = saw_nan || isnan(x);
        top = isnan(x) ? top : max(top, x);
    }
    float ref = top == neg_inf ? 0.0 : top; /* exp(-inf - -inf) would be NaN */
    float sum = 0.0;
    vec4 acc = vec4(0.0);
    for (uint s = 0; s < pc.parts; s++) {
        uint state = s * part_stride + row;
        float w = isnan(state_lse[state]) ? 0.0 : exp(state_lse[state] - ref);
        vec4 o = VEC == 4 ? state_o4[state * DV + t] : vec4(state_o[state * DV + t], 0.0, 0.0, 0.0);
        /* a part too far below the top adds nothing, but its NaN elements (a non-finite value a
         * row saw, which attn_cm leaves in o with the lse the scores') still poison the row */
        acc += w != 0.0 ? w * o : mix(vec4(0.0), o, isnan(o));
        sum += w;
    }
    vec4 value = (sum > 0.0 ? acc / sum : vec4(0.0)) + (saw_nan ? 0.0 / 0.0 : 0.0);
    uint out_row = pc.ctx_offset + (out_first + i) * pc.ctx_stride + h * DV * VEC;
    if (VEC == 4) ctx4[out_row / 4 + t] = VKA_TO_OUT_VEC4(value);
    else ctx[out_row + t] = VKA_TO_OUT(value.x);
    if (t == 0 && pc.has_lse != 0) lse[bh * pc.L + i] = saw_nan ? 0.0 / 0.0 : top == neg_inf ? neg_inf : top + log(sum);
}
