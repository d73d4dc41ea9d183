#version 450
/*
 * attn_scores.comp — P[r, j] = q_i · k_j * scale + mask terms for one chunk of score rows (see
 * vka_scores_push in abi.h). Masked scores are -inf; the softmax turns them into zeros. Keys
 * j >= S are the extra keys (bias_k, then the zero key) and are never masked. Variants (VARIANT,
 * abi.h; compiled in only when on): softcap and the ALiBi bias transform each scaled score, a
 * sliding window masks keys before each row's window start (attention_common.glsl); the sink is
 * the softmax's.
 *
 * Register-blocked: invocation owns TILE_A queries x TILE_B keys of one (b, h) and reads Q and K
 * through texel views, DV texels of VEC floats per head row.
 * Grid: bh_count * tiles_i * tiles_j invocations, WG_SIZE per workgroup.
 * Bindings: VKA_SCORES_* (abi.h); the attn_mask binding is bytes or floats (two views of it).
 * Loop trips per invocation: DV + 1 (the Q·K^T loop over the head's texels; tile loops unrolled).
 */
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(binding = VKA_SCORES_Q) uniform samplerBuffer Q;
layout(binding = VKA_SCORES_K) uniform samplerBuffer K;
layout(std430, binding = VKA_SCORES_P) writeonly buffer P_ { float p[]; };
layout(std430, binding = VKA_SCORES_KEY_PADDING) readonly buffer Kpm_ { uint kpm[]; };
layout(std430, binding = VKA_SCORES_VALID_LENS) readonly buffer ValidLens_ { int valid_lens[]; };
layout(std430, binding = VKA_SCORES_ATTN_MASK) readonly buffer MaskBytes_ { uint mask_bytes[]; };
layout(std430, binding = VKA_SCORES_ATTN_MASK) readonly buffer MaskFloats_ { float mask_floats[]; };
layout(std430, binding = VKA_SCORES_HEAD_TERMS) readonly buffer HeadTerms_ { float head_terms[]; };
layout(push_constant) uniform Push { vka_scores_push pc; };
#define VKA_WITH_MASKS
#define VKA_WITH_VARIANTS
#include "attention_common.glsl"

void main()
{
    uint tile = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint per_head = pc.tiles_i * pc.tiles_j;
    uint bh_local = tile / per_head;
    if (bh_local >= pc.bh_count) return;
    uint tile_i = (tile % per_head) / pc.tiles_j, tile_j = tile % pc.tiles_j;
    uint bh = pc.bh_begin + bh_local, b = bh / pc.H, h = bh % pc.H;
    uint i_local0 = tile_i * TILE_A, j0 = tile_j * TILE_B;

    uint qrow[TILE_A], krow[TILE_B];
    [[unroll]] for (uint r = 0; r < TILE_A; r++) {
        uint i = pc.i_begin + min(i_local0 + r, pc.i_count - 1);
        qrow[r] = pc.q_offset + b * pc.q_batch + h * pc.q_head + i * pc.q_row;
    }
    [[unroll]] for (uint c = 0; c < TILE_B; c++)
        krow[c] = pc.k_offset + b * pc.kv_batch + h / pc.kv_group * pc.kv_head + min(j0 + c, pc.S_ext - 1) * pc.kv_row;

    float s[TILE_A][TILE_B];
    VKA_QK_TILE(s, qrow, krow);

    bool key_ok[TILE_B];
    [[unroll]] for (uint c = 0; c < TILE_B; c++)
        key_ok[c] = j0 + c >= pc.S || (pc.mask_flags & VKA_MASK_KEY_PADDING) == 0 || vka_key_visible(b, j0 + c);
    uint row_base = bh_local * pc.i_count;
    [[unroll]] for (uint r = 0; r < TILE_A; r++) {
        uint i_local = i_local0 + r;
        uint i = pc.i_begin + min(i_local, pc.i_count - 1), limit = vka_row_limit(b, i);
        int qk = int(i) + int(pc.S) - int(pc.L); /* the key index at the query's position */
        uint first = vka_window_start(qk);
        [[unroll]] for (uint c = 0; c < TILE_B; c++) {
            uint j = j0 + c;
            if (i_local < pc.i_count && j < pc.S_ext) {
                float value = vka_variant_score(s[r][c] * pc.scale, h, int(j) - qk);
                if (j < pc.S) {
                    value = key_ok[c] && j < limit && j >= first ? value : -1.0 / 0.0;
                    if (ATTN_MASK != 0 && (pc.mask_flags & VKA_MASK_ATTN) != 0)
                        value = vka_add_mask(value, vka_mask_term(b, h, i, j));
                }
                p[(row_base + i_local) * pc.S_ext + j] = value;
            }
        }
    }
}
