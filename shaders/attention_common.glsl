/*
 * attention_common.glsl — pieces shared by the attention kernels (scores, P·V, fused), written once.
 *
 * The includer declares, before including: the push-constant block `pc` with fields L, S,
 * mask_flags and mask_heads; specialization constant VEC; and bindings named kpm (uint words),
 * valid_lens (int), mask_bytes (uint words) and mask_floats (float) when it uses vka_mask_term;
 * specialization constants TILE_A, TILE_B, DV and samplers Q, K when it uses VKA_QK_TILE.
 */

/* A texel as four floats; with VEC == 1 (R32F/R16F views) the unused lanes are zero, so dot
 * products over texels stay exact. (R views return (r, 0, 0, 1): w must be dropped.) */
vec4 vka_fetch(samplerBuffer t, uint index)
{
    vec4 v = texelFetch(t, int(index));
    return VEC == 4 ? v : vec4(v.x, 0.0, 0.0, 0.0);
}

/* s[r][c] = q_r · k_c over the DV texels of one head: the register tile of TILE_A queries by TILE_B
 * keys that the scores and fused kernels share. qrow/krow hold each row's first texel in the
 * samplers Q and K. (A macro: arrays sized by specialization constants make poor parameters.)
 * Loop trips: DV + 1 (the tile loops are unrolled). */
#define VKA_QK_TILE(s, qrow, krow)                                                                 \
    [[unroll]] for (uint r_ = 0; r_ < TILE_A; r_++)                                                \
        [[unroll]] for (uint c_ = 0; c_ < TILE_B; c_++) s[r_][c_] = 0.0;                           \
    for (uint d_ = 0; d_ < DV; d_++) {                                                             \
        vec4 q_[TILE_A];                                                                           \
        [[unroll]] for (uint r_ = 0; r_ < TILE_A; r_++) q_[r_] = vka_fetch(Q, qrow[r_] + d_);      \
        [[unroll]] for (uint c_ = 0; c_ < TILE_B; c_++) {                                          \
            vec4 k_ = vka_fetch(K, krow[c_] + d_);                                                 \
            [[unroll]] for (uint r_ = 0; r_ < TILE_A; r_++) s[r_][c_] += dot(q_[r_], k_);          \
        }                                                                                          \
    }

#ifdef VKA_WITH_MASKS
/* Masks, split by what they depend on so the kernels can hoist them (and so lavapipe's compiler
 * does not see the full mask logic unrolled once per score):
 *   row limit   causal and valid lengths: real keys j >= vka_row_limit(b, i) are excluded;
 *   key test    key padding: depends on (b, j) only;
 *   mask term   attn_mask: one value per (b, h, i, j).
 * Only the S real keys are masked; the extra keys (bias_k, zero key) never are. */
uint vka_row_limit(uint b, uint i)
{
    uint f = pc.mask_flags;
    int limit = int(pc.S);
    if ((f & VKA_MASK_CAUSAL) != 0) limit = min(limit, int(i) + 1);
    if ((f & VKA_MASK_VALID_LENS_PER_BATCH) != 0) limit = min(limit, valid_lens[b]);
    if ((f & VKA_MASK_VALID_LENS_PER_QUERY) != 0) limit = min(limit, valid_lens[b * pc.L + i]);
    return uint(max(limit, 0));
}

/* Whether key padding leaves key j of batch b visible. */
bool vka_key_visible(uint b, uint j)
{
    return VKA_LOAD_BYTE(kpm, b * pc.S + j) == 0;
}

float vka_mask_term(uint b, uint h, uint i, uint j)
{
    uint idx = i * pc.S + j;
    if ((pc.mask_flags & VKA_MASK_ATTN_PER_HEAD) != 0) idx += (b * pc.mask_heads + h) * pc.L * pc.S;
    if ((pc.mask_flags & VKA_MASK_ATTN_BOOL) != 0) return VKA_LOAD_BYTE(mask_bytes, idx) != 0 ? -1.0 / 0.0 : 0.0;
    return mask_floats[idx];
}

/* A score plus an attn_mask term. A -inf term replaces the score rather than being added to it, so
 * a masked key whose row holds NaN or inf (a stale cache slot, say) cannot leak into the row. */
float vka_add_mask(float score, float term)
{
    return term == -1.0 / 0.0 ? term : score + term;
}

const uint VKA_MASK_ATTN = VKA_MASK_ATTN_BOOL | VKA_MASK_ATTN_FLOAT;
#endif

/* Stores one activation element in the output buffer's dtype (OUT_F16 builds write float16). */
#ifdef OUT_F16
#define VKA_OUT_TYPE float16_t
#define VKA_OUT_VEC4 f16vec4
#define VKA_TO_OUT(x) float16_t(x)
#define VKA_TO_OUT_VEC4(x) f16vec4(x)
#else
#define VKA_OUT_TYPE float
#define VKA_OUT_VEC4 vec4
#define VKA_TO_OUT(x) (x)
#define VKA_TO_OUT_VEC4(x) (x)
#endif
