#version 450
/*
 * attn_fused.comp — flash attention: context = softmax(q K^T * scale + mask) V for TILE_A query
 * rows of one (b, h) per invocation, streaming the keys in blocks of TILE_B with an online
 * softmax (running max m and sum l per row, fp32), so no L x S buffer exists.
 *
 * Masks as in attn_scores.comp (attention_common.glsl). Keys past every row's limit (causal,
 * valid lengths) are skipped whole; then the extra keys (never masked) are visited. A row with no
 * visible key gets a zero context (and lse = -inf); a NaN score makes the row NaN.
 *
 * Grid: B*H * q_blocks invocations, WG_SIZE per workgroup.
 * Bindings: 0 Q, 1 K, 2 V (texel views: DV texels of VEC floats per head row), 3 ctx (out, fp16
 *           with OUT_F16), 4 key_padding_mask, 5 valid_lens, 6 attn_mask (bytes or floats),
 *           7 lse (float, written when has_lse).
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "abi.h"

layout(local_size_x_id = VKA_SPEC_WG_SIZE) in;
layout(constant_id = VKA_SPEC_TILE_A) const uint TILE_A = 8;
layout(constant_id = VKA_SPEC_TILE_B) const uint TILE_B = 16;
layout(constant_id = VKA_SPEC_VEC) const uint VEC = 4;
layout(constant_id = VKA_SPEC_DV) const uint DV = 16;
layout(constant_id = VKA_SPEC_ATTN_MASK) const uint ATTN_MASK = 1;

layout(binding = 0) uniform samplerBuffer Q;
layout(binding = 1) uniform samplerBuffer K;
layout(binding = 2) uniform samplerBuffer V;
layout(std430, binding = 4) readonly buffer Kpm_ { uint kpm[]; };
layout(std430, binding = 5) readonly buffer ValidLens_ { int valid_lens[]; };
layout(std430, binding = 6) readonly buffer MaskBytes_ { uint mask_bytes[]; };
layout(std430, binding = 6) readonly buffer MaskFloats_ { float mask_floats[]; };
layout(std430, binding = 7) writeonly buffer Lse_ { float lse[]; };
layout(push_constant) uniform Push { vka_fused_push pc; };
#define VKA_WITH_MASKS
#include "attention_common.glsl"
layout(std430, binding = 3) writeonly buffer Ctx_ { VKA_OUT_TYPE ctx[]; };
layout(std430, binding = 3) writeonly buffer Ctx4_ { VKA_OUT_VEC4 ctx4[]; };

void main()
{
    uint id = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint q_blocks = (pc.L + TILE_A - 1) / TILE_A;
    uint bh = id / q_blocks, block = id % q_blocks;
    if (bh >= pc.BH) return;
    uint b = bh / pc.H, h = bh % pc.H;
    uint i0 = block * TILE_A;

    /* The running softmax of TILE_A rows and their unnormalised outputs. Rows past L repeat the
     * last row (loads stay in bounds) and are not stored. */
    float m[TILE_A], l[TILE_A];
    bool saw_nan[TILE_A];
    vec4 o[TILE_A][DV];
    uint qrow[TILE_A], limit[TILE_A];
    uint real_end = 0;
    for (uint r = 0; r < TILE_A; r++) {
        uint i = min(i0 + r, pc.L - 1);
        m[r] = -1.0 / 0.0;
        l[r] = 0.0;
        saw_nan[r] = false;
        for (uint d = 0; d < DV; d++) o[r][d] = vec4(0.0);
        qrow[r] = pc.q_offset + (b * pc.q_rows + i) * pc.q_stride + h * DV;
        limit[r] = vka_row_limit(b, i);
        real_end = max(real_end, limit[r]); /* keys past every row's limit are masked for all */
    }

    /* The real keys, then the extra keys, in one loop so its body is compiled once. */
    uint blocks = (real_end + TILE_B - 1) / TILE_B, extra_blocks = (pc.extra_keys + TILE_B - 1) / TILE_B;
    for (uint n = 0; n < blocks + extra_blocks; n++) {
        bool real = n < blocks;
        uint j0 = real ? n * TILE_B : pc.S + (n - blocks) * TILE_B;
        uint end = real ? real_end : pc.S + pc.extra_keys;

        uint krow[TILE_B];
        for (uint c = 0; c < TILE_B; c++)
            krow[c] = pc.k_offset + (b * pc.kv_rows + min(j0 + c, end - 1)) * pc.k_stride + h * DV;
        float s[TILE_A][TILE_B];
        VKA_QK_TILE(s, qrow, krow);

        /* Scale and masks; invisible scores become -inf. */
        float key_term[TILE_B];
        for (uint c = 0; c < TILE_B; c++)
            key_term[c] = real && (pc.mask_flags & VKA_MASK_KEY_PADDING) != 0 && j0 + c < end ? vka_key_term(b, j0 + c)
                                                                                            : 0.0;
        for (uint r = 0; r < TILE_A; r++)
            for (uint c = 0; c < TILE_B; c++) {
                uint j = j0 + c;
                bool visible = j < end && (!real || j < limit[r]);
                s[r][c] = visible ? s[r][c] * pc.scale + key_term[c] : -1.0 / 0.0;
            }
        if (ATTN_MASK != 0 && real && (pc.mask_flags & VKA_MASK_ATTN) != 0)
            for (uint r = 0; r < TILE_A; r++)
                for (uint c = 0; c < TILE_B; c++)
                    if (j0 + c < end) s[r][c] += vka_mask_term(b, h, min(i0 + r, pc.L - 1), j0 + c);

        /* Online softmax, branch-free (divergent branches cost both sides on lavapipe's SIMD
         * lanes): a row that has seen no visible key keeps m = -inf, l = 0 and o = 0. */
        for (uint r = 0; r < TILE_A; r++) {
            float block_max = -1.0 / 0.0;
            for (uint c = 0; c < TILE_B; c++) {
                saw_nan[r] = saw_nan[r] || isnan(s[r][c]);
                block_max = max(block_max, s[r][c]);
            }
            float m_new = max(m[r], block_max);
            float m_ref = m_new == -1.0 / 0.0 ? 0.0 : m_new; /* exp(-inf - -inf) would be NaN */
            float alpha = exp(m[r] - m_ref);
            float sum = 0.0;
            for (uint c = 0; c < TILE_B; c++) {
                s[r][c] = exp(s[r][c] - m_ref);
                sum += s[r][c];
            }
            l[r] = l[r] * alpha + sum;
            m[r] = m_new;
            for (uint d = 0; d < DV; d++) o[r][d] *= alpha;
        }

        for (uint c = 0; c < TILE_B; c++) {
            uint vrow = pc.v_offset + (b * pc.kv_rows + min(j0 + c, end - 1)) * pc.v_stride + h * DV;
            for (uint d = 0; d < DV; d++) {
                vec4 v = vka_fetch(V, vrow + d);
                for (uint r = 0; r < TILE_A; r++) o[r][d] += s[r][c] * v;
            }
        }
    }

    for (uint r = 0; r < TILE_A; r++) {
        uint i = i0 + r;
        if (i >= pc.L) break;
        float inv = l[r] > 0.0 ? 1.0 / l[r] : 0.0;
        float poison = saw_nan[r] ? 0.0 / 0.0 : 0.0;
        uint out_row = (b * pc.L + i) * pc.ctx_stride + h * DV * VEC;
        /* Whole vec4 stores when rows are vec4-aligned: 4x fewer (scalarised) stores on lavapipe. */
        if (VEC == 4) {
            for (uint t = 0; t < DV; t++) ctx4[out_row / 4 + t] = VKA_TO_OUT_VEC4(o[r][t] * inv + poison);
        } else {
            for (uint t = 0; t < DV; t++) ctx[out_row + t] = VKA_TO_OUT(o[r][t].x * inv + poison);
        }
        if (pc.has_lse != 0) lse[bh * pc.L + i] = l[r] > 0.0 ? m[r] + log(l[r]) : -1.0 / 0.0;
    }
}
