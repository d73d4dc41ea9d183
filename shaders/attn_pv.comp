#version 450
/*
 * attn_pv.comp — context = P · V per head, written straight into the concatenated-heads layout
 * ctx (B, L, H*D): ctx[(b*L + i) * ctx_stride + h*D + d] = sum_j P[r, j] * v_j[d], over one range
 * of keys (rows longer than the loop budget are summed range by range through an fp32
 * accumulator, see vka_pv_push). A zero probability (a masked key) skips its V row, so NaN or inf
 * in a masked value row stays out.
 *
 * Register-blocked: invocation owns TILE_A queries x TILE_B texels (TILE_B * VEC dims) of one
 * (b, h); P is read through an R32F view, V through a texel view (fp32 or fp16).
 * Grid: bh_count * tiles_i * tiles_d invocations, WG_SIZE per workgroup.
 * Bindings: VKA_PV_* (abi.h).
 * Loop trips per invocation: j_count + 1 (the key loop; tile loops unrolled).
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(binding = VKA_PV_P) uniform samplerBuffer P;
layout(binding = VKA_PV_V) uniform samplerBuffer V;
layout(std430, binding = VKA_PV_ACC) buffer Acc_ { float acc_buf[]; };
#include "attention_common.glsl"
layout(std430, binding = VKA_PV_CTX) writeonly buffer Ctx_ { VKA_OUT_TYPE ctx[]; };
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
    [[unroll]] for (uint r = 0; r < TILE_A; r++)
        prow[r] = (bh_local * pc.i_count + min(i_local0 + r, pc.i_count - 1)) * pc.S_ext;
    /* K/V head h / kv_group; t0 < DV; texels past the row's end read its last one, unstored */
    uint vhead = pc.v_offset + b * pc.kv_batch + h / pc.kv_group * pc.kv_head;

    vec4 acc[TILE_A][TILE_B];
    [[unroll]] for (uint r = 0; r < TILE_A; r++)
        [[unroll]] for (uint t = 0; t < TILE_B; t++) acc[r][t] = vec4(0.0);
    for (uint j = pc.j_begin; j < pc.j_begin + pc.j_count; j++) {
        float w[TILE_A];
        [[unroll]] for (uint r = 0; r < TILE_A; r++) w[r] = texelFetch(P, int(prow[r] + j)).x;
        uint vrow = vhead + j * pc.kv_row;
        [[unroll]] for (uint t = 0; t < TILE_B; t++) {
            vec4 v = vka_fetch(V, vrow + min(t0 + t, DV - 1));
            [[unroll]] for (uint r = 0; r < TILE_A; r++) acc[r][t] += w[r] != 0.0 ? w[r] * v : vec4(0.0);
        }
    }

    [[unroll]] for (uint r = 0; r < TILE_A; r++) {
        uint i_local = i_local0 + r;
        uint out_row = (b * pc.L + pc.i_begin + i_local) * pc.ctx_stride + h * DV * VEC;
        [[unroll]] for (uint t = 0; t < TILE_B; t++) {
            [[unroll]] for (uint e = 0; e < VEC; e++) {
                uint at = out_row + (t0 + t) * VEC + e;
                if (i_local < pc.i_count && t0 + t < DV) {
                    float value = acc[r][t][e];
                    if ((FLAGS & VKA_PV_ACC_IN) != 0) value += acc_buf[pc.acc_offset + at];
                    if ((FLAGS & VKA_PV_ACC_OUT) != 0) acc_buf[pc.acc_offset + at] = value;
                    else ctx[pc.ctx_offset + at] = VKA_TO_OUT(value);
                }
            }
        }
    }
}
