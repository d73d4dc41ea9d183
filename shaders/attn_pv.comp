#version 450
/*
 * attn_pv.comp — context = P · V per head, written straight into the concatenated-heads layout
 * ctx (B, L, H*D): ctx[(b*L + i) * ctx_stride + h*D + d] = sum_j P[r, j] * v_j[d].
 *
 * Register-blocked: invocation owns TILE_A queries x TILE_B texels (TILE_B * VEC dims) of one
 * (b, h); P is read through an R32F view, V through a texel view (fp32 or fp16).
 * Grid: bh_count * tiles_i * tiles_d invocations, WG_SIZE per workgroup.
 * Bindings: 0 P, 1 V (texel views), 2 ctx (storage buffer, fp16 with OUT_F16).
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "abi.h"

layout(local_size_x_id = VKA_SPEC_WG_SIZE) in;
layout(constant_id = VKA_SPEC_TILE_A) const uint TILE_A = 8;
layout(constant_id = VKA_SPEC_TILE_B) const uint TILE_B = 4;
layout(constant_id = VKA_SPEC_VEC) const uint VEC = 4;
layout(constant_id = VKA_SPEC_DV) const uint DV = 16;

layout(binding = 0) uniform samplerBuffer P;
layout(binding = 1) uniform samplerBuffer V;
#include "attention_common.glsl"
layout(std430, binding = 2) writeonly buffer Ctx_ { VKA_OUT_TYPE ctx[]; };
layout(push_constant) uniform Push { vka_pv_push pc; };

void main()
{
    uint tile = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint per_head = pc.tiles_i * pc.tiles_d;
    uint bh_local = tile / per_head;
    if (bh_local >= pc.bh_count) return;
    uint tile_i = (tile % per_head) / pc.tiles_d, tile_d = tile % pc.tiles_d;
    uint bh = pc.bh_begin + bh_local, b = bh / pc.H, h = bh % pc.H;
    uint i_local0 = tile_i * TILE_A, t0 = tile_d * TILE_B;

    uint prow[TILE_A];
    for (uint r = 0; r < TILE_A; r++) prow[r] = (bh_local * pc.i_count + min(i_local0 + r, pc.i_count - 1)) * pc.S_ext;
    uint vcol = h * DV; /* t0 < DV; texels past the row's end read its last one and are not stored */

    vec4 acc[TILE_A][TILE_B];
    for (uint r = 0; r < TILE_A; r++)
        for (uint t = 0; t < TILE_B; t++) acc[r][t] = vec4(0.0);
    for (uint j = 0; j < pc.S_ext; j++) {
        float w[TILE_A];
        for (uint r = 0; r < TILE_A; r++) w[r] = texelFetch(P, int(prow[r] + j)).x;
        uint vrow = pc.v_offset + (b * pc.kv_rows + j) * pc.v_stride + vcol;
        for (uint t = 0; t < TILE_B; t++) {
            vec4 v = vka_fetch(V, vrow + min(t0 + t, DV - 1));
            for (uint r = 0; r < TILE_A; r++) acc[r][t] += w[r] * v;
        }
    }

    for (uint r = 0; r < TILE_A; r++) {
        uint i_local = i_local0 + r;
        if (i_local >= pc.i_count) break;
        uint out_row = (b * pc.L + pc.i_begin + i_local) * pc.ctx_stride + h * DV * VEC;
        for (uint t = 0; t < TILE_B; t++) {
            if (t0 + t >= DV) break;
            for (uint e = 0; e < VEC; e++) ctx[out_row + (t0 + t) * VEC + e] = VKA_TO_OUT(acc[r][t][e]);
        }
    }
}
