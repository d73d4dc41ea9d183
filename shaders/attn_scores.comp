#version 450
/*
 * attn_scores.comp — P[r, j] = q_i · k_j * scale + mask terms for one chunk of score rows
 * (see vka_scores_push in abi.h). Masked scores are -inf; the softmax turns them into zeros.
 * Keys j >= S are the extra keys (bias_k, then the zero key) and are never masked.
 *
 * Grid: one workgroup per (bh, block of 8*TILE_A queries, block of 8*TILE_B keys); invocation t
 * owns TILE_A queries x TILE_B keys.
 * Bindings: 0 Q, 1 K, 2 extra keys, 3 P (out), 4 key_padding_mask (bytes), 5 valid_lens (int),
 *           6 attn_mask (bytes or floats, read through two views of one binding).
 */
#extension GL_GOOGLE_include_directive : require
#include "abi.h"

layout(local_size_x = 64) in;
layout(constant_id = VKA_SPEC_TILE_A) const uint TILE_A = 4;
layout(constant_id = VKA_SPEC_TILE_B) const uint TILE_B = 4;

layout(std430, binding = 0) readonly buffer Q_ { float q[]; };
layout(std430, binding = 1) readonly buffer K_ { float k[]; };
layout(std430, binding = 2) readonly buffer Extra_ { float extra[]; };
layout(std430, binding = 3) writeonly buffer P_ { float p[]; };
layout(std430, binding = 4) readonly buffer Kpm_ { uint kpm[]; };
layout(std430, binding = 5) readonly buffer ValidLens_ { int valid_lens[]; };
layout(std430, binding = 6) readonly buffer MaskBytes_ { uint mask_bytes[]; };
layout(std430, binding = 6) readonly buffer MaskFloats_ { float mask_floats[]; };
layout(push_constant) uniform Push { vka_scores_push pc; };

/* The additive term of the masks for (b, h, i, j < S): -inf if any mask excludes the key. */
float mask_term(uint b, uint h, uint i, uint j)
{
    uint f = pc.mask_flags;
    if ((f & VKA_MASK_CAUSAL) != 0 && j > i) return -1.0 / 0.0;
    if ((f & VKA_MASK_KEY_PADDING) != 0 && VKA_LOAD_BYTE(kpm, b * pc.S + j) != 0) return -1.0 / 0.0;
    if ((f & VKA_MASK_VALID_LENS_PER_BATCH) != 0 && int(j) >= valid_lens[b]) return -1.0 / 0.0;
    if ((f & VKA_MASK_VALID_LENS_PER_QUERY) != 0 && int(j) >= valid_lens[b * pc.L + i]) return -1.0 / 0.0;
    if ((f & (VKA_MASK_ATTN_BOOL | VKA_MASK_ATTN_FLOAT)) != 0) {
        uint idx = i * pc.S + j;
        if ((f & VKA_MASK_ATTN_PER_HEAD) != 0) idx += (b * pc.mask_heads + h) * pc.L * pc.S;
        if ((f & VKA_MASK_ATTN_BOOL) != 0) {
            if (VKA_LOAD_BYTE(mask_bytes, idx) != 0) return -1.0 / 0.0;
        } else {
            return mask_floats[idx];
        }
    }
    return 0.0;
}

void main()
{
    uint group = vka_group_index();
    if (group >= pc.group_count) return;
    uint t = gl_LocalInvocationID.x;
    uint tile_j = group % pc.tiles_j;
    uint rest = group / pc.tiles_j;
    uint tile_i = rest % pc.tiles_i;
    uint bh = pc.bh_begin + rest / pc.tiles_i;
    uint b = bh / pc.H, h = bh % pc.H;
    uint i_local0 = tile_i * (TILE_A * 8) + (t / 8) * TILE_A; /* relative to i_begin */
    uint j0 = tile_j * (TILE_B * 8) + (t % 8) * TILE_B;

    uint qrow[4], krow[4];
    for (uint r = 0; r < TILE_A; r++) {
        uint i = pc.i_begin + min(i_local0 + r, pc.i_count - 1);
        qrow[r] = pc.q_offset + (b * pc.L + i) * pc.q_stride + h * pc.D;
    }
    bool extra_key[4];
    for (uint s = 0; s < TILE_B; s++) {
        uint j = min(j0 + s, pc.S_ext - 1);
        extra_key[s] = j >= pc.S;
        krow[s] = extra_key[s] ? (j - pc.S) * pc.extra_stride + h * pc.D
                               : pc.k_offset + (b * pc.S + j) * pc.k_stride + h * pc.D;
    }

    float acc[4][4];
    for (uint r = 0; r < 4; r++)
        for (uint s = 0; s < 4; s++) acc[r][s] = 0.0;
    for (uint d = 0; d < pc.D; d++) {
        float qv[4], kv[4];
        for (uint r = 0; r < TILE_A; r++) qv[r] = q[qrow[r] + d];
        for (uint s = 0; s < TILE_B; s++) kv[s] = extra_key[s] ? extra[krow[s] + d] : k[krow[s] + d];
        for (uint r = 0; r < TILE_A; r++)
            for (uint s = 0; s < TILE_B; s++) acc[r][s] = fma(qv[r], kv[s], acc[r][s]);
    }

    uint row_base = (bh - pc.bh_begin) * pc.i_count;
    for (uint r = 0; r < TILE_A; r++) {
        uint i_local = i_local0 + r;
        if (i_local >= pc.i_count) break;
        uint i = pc.i_begin + i_local;
        for (uint s = 0; s < TILE_B; s++) {
            uint j = j0 + s;
            if (j >= pc.S_ext) break;
            float value = acc[r][s] * pc.scale;
            if (j < pc.S) value += mask_term(b, h, i, j);
            p[(row_base + i_local) * pc.S_ext + j] = value;
        }
    }
}
