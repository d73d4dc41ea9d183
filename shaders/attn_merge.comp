#version 450
/*
 * attn_merge.comp — combines the softmax states of the `parts` key parts of each row that
 * attn_fused.comp wrote side by side (layout: vka_fused_push in abi.h):
 *   lse = log sum_s exp(lse_s),   ctx = sum_s exp(lse_s - lse) * o_s
 * A part that saw no visible key has lse_s = -inf and weighs nothing; a row with none at all gets a
 * zero context and lse = -inf; a NaN in any part makes the row NaN.
 *
 * An item is one texel of a row's head slice. TILE_B invocations (part lanes) share an item: lane
 * k takes parts k, k + TILE_B, ...; their maxima, then their sums, meet through shared memory, so
 * a decoding step's hundred parts are a few loads deep instead of a hundred (the GPU tunings).
 * TILE_B = 1 (lavapipe): one invocation walks every part, no shared memory, no barrier.
 * A workgroup holds WG / TILE_B items, neighbouring texels on neighbouring invocations (a part's
 * row is read coalesced).
 * Grid: ceil(items / (WG / TILE_B)) workgroups, items = bh_count * i_count * DV.
 * With RAGGED, rows are the paged forward's (attn_paged.comp): see VKA_MERGE_RAGGED.
 * Bindings: VKA_MERGE_* (abi.h).
 * Loop trips per invocation: two loops over its parts, ceil(parts / TILE_B) + 1 each; with part
 * lanes two more over them, TILE_B + 1 each.
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

const uint LANES = TILE_B;                   /* part lanes per item */
const uint ITEMS = gl_WorkGroupSize.x / LANES; /* items per workgroup */

/* each invocation's maximum (NaN: it saw one), then its sums; item it's lane k at k * ITEMS + it */
shared float s_top[gl_WorkGroupSize.x];
shared vec4 s_acc[gl_WorkGroupSize.x];
shared float s_sum[gl_WorkGroupSize.x];

void main()
{
    uint local = gl_LocalInvocationID.x, it = local % ITEMS, lane = local / ITEMS;
    uint id = vka_group_index() * ITEMS + it;
    uint t = id % DV, row = id / DV;
    /* an item past the rows still meets its workgroup's barriers (with part lanes), loading nothing */
    bool live = row < pc.bh_count * pc.i_count;
    uint bh_local = row / pc.i_count, il = row % pc.i_count;
    uint bh = pc.bh_begin + bh_local, b = bh / pc.H, h = bh % pc.H, i = pc.i_begin + il;
    uint part_stride = pc.bh_count * pc.i_count; /* state rows between one part and the next */
    const float neg_inf = -1.0 / 0.0;
    uint out_first = b * pc.L; /* the ctx row of the row's query 0 */
    if ((FLAGS & VKA_MERGE_RAGGED) != 0 && live) {
        live = i < meta[b * VKA_SEQ_WORDS + VKA_SEQ_NEW]; /* else past the sequence's new tokens */
        out_first = meta[b * VKA_SEQ_WORDS + VKA_SEQ_Q_START];
    }
    if (LANES == 1 && !live) return;

    float top = neg_inf;
    bool saw_nan = false;
    for (uint s = lane; live && s < pc.parts; s += LANES) {
        float x = state_lse[s * part_stride + row];
        saw_nan = saw_nan || isnan(x);
        top = isnan(x) ? top : max(top, x);
    }
    if (LANES > 1) {
        s_top[local] = saw_nan ? 0.0 / 0.0 : top;
        barrier();
        [[unroll]] for (uint k = 0; k < LANES; k++) {
            float x = s_top[k * ITEMS + it];
            saw_nan = saw_nan || isnan(x);
            top = isnan(x) ? top : max(top, x);
        }
    }
    float ref = top == neg_inf ? 0.0 : top; /* exp(-inf - -inf) would be NaN */
    float sum = 0.0;
    vec4 acc = vec4(0.0);
    for (uint s = lane; live && s < pc.parts; s += LANES) {
        uint state = s * part_stride + row;
        float w = isnan(state_lse[state]) ? 0.0 : exp(state_lse[state] - ref);
        vec4 o = VEC == 4 ? state_o4[state * DV + t] : vec4(state_o[state * DV + t], 0.0, 0.0, 0.0);
        /* a part too far below the top adds nothing, but its NaN elements (a non-finite value a
         * row saw, which attn_cm leaves in o with the lse the scores') still poison the row */
        acc += w != 0.0 ? w * o : mix(vec4(0.0), o, isnan(o));
        sum += w;
    }
    if (LANES > 1) {
        s_acc[local] = acc;
        s_sum[local] = sum;
        barrier();
        if (lane != 0) return; /* lane 0 stores the item */
        [[unroll]] for (uint k = 1; k < LANES; k++) {
            acc += s_acc[k * ITEMS + it];
            sum += s_sum[k * ITEMS + it];
        }
    }
    if (!live) return;
    vec4 value = (sum > 0.0 ? acc / sum : vec4(0.0)) + (saw_nan ? 0.0 / 0.0 : 0.0);
    uint out_row = pc.ctx_offset + (out_first + i) * pc.ctx_stride + h * DV * VEC;
    if (VEC == 4) ctx4[out_row / 4 + t] = VKA_TO_OUT_VEC4(value);
    else ctx[out_row + t] = VKA_TO_OUT(value.x);
    if (t == 0 && pc.has_lse != 0) lse[bh * pc.L + i] = saw_nan ? 0.0 / 0.0 : top == neg_inf ? neg_inf : top + log(sum);
}
