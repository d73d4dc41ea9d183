#version 450
/*
 * attn_pv.comp — context = P · V per head, written straight into the concatenated-heads layout
 * ctx (B, L, H*D): ctx[(b*L + i) * ctx_stride + h*D + d] = sum_j P[r, j] * v_j[h*D + d].
 * Values j >= S are the extra values (bias_v, then the zero value).
 *
 * Grid: one workgroup per (bh, block of 8*TILE_A queries, block of 8*TILE_B head dims);
 * invocation t owns TILE_A queries x TILE_B dims.
 * Bindings: 0 P, 1 V, 2 extra values, 3 ctx (out).
 */
#extension GL_GOOGLE_include_directive : require
#include "abi.h"

layout(local_size_x = 64) in;
layout(constant_id = VKA_SPEC_TILE_A) const uint TILE_A = 4;
layout(constant_id = VKA_SPEC_TILE_B) const uint TILE_B = 4;

layout(std430, binding = 0) readonly buffer P_ { float p[]; };
layout(std430, binding = 1) readonly buffer V_ { float v[]; };
layout(std430, binding = 2) readonly buffer Extra_ { float extra[]; };
layout(std430, binding = 3) writeonly buffer Ctx_ { float ctx[]; };
layout(push_constant) uniform Push { vka_pv_push pc; };

void main()
{
    uint group = vka_group_index();
    if (group >= pc.group_count) return;
    uint t = gl_LocalInvocationID.x;
    uint tile_d = group % pc.tiles_d;
    uint rest = group / pc.tiles_d;
    uint tile_i = rest % pc.tiles_i;
    uint bh = pc.bh_begin + rest / pc.tiles_i;
    uint b = bh / pc.H, h = bh % pc.H;
    uint i_local0 = tile_i * (TILE_A * 8) + (t / 8) * TILE_A;
    uint d0 = tile_d * (TILE_B * 8) + (t % 8) * TILE_B;

    uint prow[4];
    uint row_base = (bh - pc.bh_begin) * pc.i_count;
    for (uint r = 0; r < TILE_A; r++) prow[r] = (row_base + min(i_local0 + r, pc.i_count - 1)) * pc.S_ext;
    uint dcol[4];
    for (uint s = 0; s < TILE_B; s++) dcol[s] = h * pc.D + min(d0 + s, pc.D - 1);

    float acc[4][4];
    for (uint r = 0; r < 4; r++)
        for (uint s = 0; s < 4; s++) acc[r][s] = 0.0;
    for (uint j = 0; j < pc.S_ext; j++) {
        float pv[4], vv[4];
        for (uint r = 0; r < TILE_A; r++) pv[r] = p[prow[r] + j];
        if (j < pc.S) {
            uint vrow = pc.v_offset + (b * pc.S + j) * pc.v_stride;
            for (uint s = 0; s < TILE_B; s++) vv[s] = v[vrow + dcol[s]];
        } else {
            uint erow = (j - pc.S) * pc.extra_stride;
            for (uint s = 0; s < TILE_B; s++) vv[s] = extra[erow + dcol[s]];
        }
        for (uint r = 0; r < TILE_A; r++)
            for (uint s = 0; s < TILE_B; s++) acc[r][s] = fma(pv[r], vv[s], acc[r][s]);
    }

    for (uint r = 0; r < TILE_A; r++) {
        uint i_local = i_local0 + r;
        if (i_local >= pc.i_count) break;
        uint out_row = (b * pc.L + pc.i_begin + i_local) * pc.ctx_stride + h * pc.D;
        for (uint s = 0; s < TILE_B; s++) {
            uint d = d0 + s;
            if (d < pc.D) ctx[out_row + d] = acc[r][s];
        }
    }
}
