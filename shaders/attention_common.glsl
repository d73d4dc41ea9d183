/*
 * attention_common.glsl — pieces shared by the attention kernels (scores, P·V, fused, paged), written once.
 *
 * The includer declares, before including: the push-constant block `pc` with fields L, S,
 * mask_flags and mask_heads; specialization constant VEC; and bindings named kpm (uint words),
 * valid_lens (int), mask_bytes (uint words) and mask_floats (float) when it uses vka_mask_term;
 * specialization constants TILE_A, TILE_B, DV and samplers Q, K when it uses VKA_QK_TILE (and
 * sampler V for VKA_ONLINE_SOFTMAX_BLOCK). An includer whose keys and values are not texel views
 * defines VKA_FETCH_K(row, t) and VKA_FETCH_V(row, t) first: texel t (4 floats) of the row that
 * krow / vrow name.
 */

/* A texel as four floats; with VEC == 1 (R32F/R16F views) the unused lanes are zero, so dot
 * products over texels stay exact. (R views return (r, 0, 0, 1): w must be dropped.) */
vec4 vka_fetch(samplerBuffer t, uint index)
{
    vec4 v = texelFetch(t, int(index));
    return VEC == 4 ? v : vec4(v.x, 0.0, 0.0, 0.0);
}

/* Texel h (0 or 1) of a 16-byte storage-buffer load of 8 fp16 values (four words), as fp32: the
 * kernels that read storage buffers where texel views would pass through the texture pipe
 * (storage_texels.glsl's vka_texel8_f16 is the same for kernels that keep fp16) */
vec4 vka_texel8(uvec4 r, uint h)
{
    return h == 0u ? vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y)) : vec4(unpackHalf2x16(r.z), unpackHalf2x16(r.w));
}

#ifndef VKA_FETCH_K
#define VKA_FETCH_K(row, t) vka_fetch(K, (row) + (t))
#define VKA_FETCH_V(row, t) vka_fetch(V, (row) + (t))
#endif

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
            vec4 k_ = VKA_FETCH_K(krow[c_], d_);                                                   \
            [[unroll]] for (uint r_ = 0; r_ < TILE_A; r_++) s[r_][c_] += dot(q_[r_], k_);          \
        }                                                                                          \
    }

/* One block of TILE_B keys into the running softmax of TILE_A rows (the fused and paged kernels):
 * s[r][c] holds the scaled, masked scores (-inf where masked) and becomes the probabilities; m, l
 * (running max and sum), saw_nan and o (unnormalised output, DV texels per row) are updated; vrow
 * holds each key's first texel in sampler V. Branch-free (divergent branches cost both sides on
 * lavapipe's SIMD lanes): a row that has seen no visible key keeps m = -inf, l = 0 and o = 0, and a
 * zero probability (a masked key) skips the V row instead of multiplying it, so NaN or inf in a
 * masked key's V row cannot leak in. Loop trips: two DV loops, DV + 1 each. */
#define VKA_ONLINE_SOFTMAX_BLOCK(s, m, l, o, saw_nan, vrow)                                         \
    {                                                                                              \
        const float ninf_ = -1.0 / 0.0;                                                            \
        float alpha_[TILE_A];                                                                      \
        [[unroll]] for (uint r_ = 0; r_ < TILE_A; r_++) {                                          \
            float block_max_ = ninf_;                                                              \
            [[unroll]] for (uint c_ = 0; c_ < TILE_B; c_++) {                                      \
                saw_nan[r_] = saw_nan[r_] || isnan(s[r_][c_]);                                     \
                block_max_ = max(block_max_, s[r_][c_]);                                           \
            }                                                                                      \
            float m_new_ = max(m[r_], block_max_);                                                 \
            float m_ref_ = m_new_ == ninf_ ? 0.0 : m_new_; /* exp(-inf - -inf) would be NaN */     \
            alpha_[r_] = exp(m[r_] - m_ref_);                                                      \
            float sum_ = 0.0;                                                                      \
            [[unroll]] for (uint c_ = 0; c_ < TILE_B; c_++) {                                      \
                s[r_][c_] = exp(s[r_][c_] - m_ref_);                                               \
                sum_ += s[r_][c_];                                                                 \
            }                                                                                      \
            l[r_] = l[r_] * alpha_[r_] + sum_;                                                     \
            m[r_] = m_new_;                                                                        \
        }                                                                                          \
        for (uint d_ = 0; d_ < DV; d_++)                                                           \
            [[unroll]] for (uint r_ = 0; r_ < TILE_A; r_++) o[r_][d_] *= alpha_[r_];               \
        for (uint d_ = 0; d_ < DV; d_++) {                                                         \
            [[unroll]] for (uint c_ = 0; c_ < TILE_B; c_++) {                                      \
                vec4 v_ = VKA_FETCH_V(vrow[c_], d_);                                               \
                [[unroll]] for (uint r_ = 0; r_ < TILE_A; r_++)                                    \
                    o[r_][d_] += s[r_][c_] != 0.0 ? s[r_][c_] * v_ : vec4(0.0);                    \
            }                                                                                      \
        }                                                                                          \
    }

/* Writes TILE_A rows' outputs o / l (NaN for a row that saw a NaN score, zero for one that saw no
 * key): rows with valid[r] go to the softmax state (store_state: state_o / state_o4 at state[r]) or
 * to ctx at element out_row[r] (ctx / ctx4, the includer's output buffers). Loop trips: DV + 1. */
#define VKA_STORE_ROWS(o, l, saw_nan, valid, state, out_row, store_state)                           \
    {                                                                                              \
        float inv_[TILE_A], poison_[TILE_A];                                                       \
        [[unroll]] for (uint r_ = 0; r_ < TILE_A; r_++) {                                          \
            inv_[r_] = l[r_] > 0.0 ? 1.0 / l[r_] : 0.0;                                            \
            poison_[r_] = saw_nan[r_] ? 0.0 / 0.0 : 0.0;                                           \
        }                                                                                          \
        for (uint d_ = 0; d_ < DV; d_++) {                                                         \
            [[unroll]] for (uint r_ = 0; r_ < TILE_A; r_++) {                                      \
                vec4 value_ = o[r_][d_] * inv_[r_] + poison_[r_];                                  \
                /* whole vec4 stores when rows are vec4-aligned: 4x fewer stores on lavapipe */    \
                if (valid[r_] && store_state) {                                                    \
                    if (VEC == 4) state_o4[state[r_] * DV + d_] = value_;                          \
                    else state_o[state[r_] * DV + d_] = value_.x;                                  \
                } else if (valid[r_]) {                                                            \
                    if (VEC == 4) ctx4[out_row[r_] / 4 + d_] = VKA_TO_OUT_VEC4(value_);            \
                    else ctx[out_row[r_] + d_] = VKA_TO_OUT(value_.x);                             \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }

#ifdef VKA_WITH_MASKS
/* Masks, split by what they depend on so the kernels can hoist them (and so lavapipe's compiler
 * does not see the full mask logic unrolled once per score):
 *   row limit   causal and valid lengths: real keys j >= vka_row_limit(b, i) are excluded
 *               (vka_row_limit_of: under the mask flags f);
 *   key test    key padding: depends on (b, j) only;
 *   mask term   attn_mask: one value per (b, h, i, j).
 * Only the S real keys are masked; the extra keys (bias_k, zero key) never are. */
uint vka_row_limit_of(uint b, uint i, uint f)
{
    int limit = int(pc.S);
    /* Top-left (PyTorch) by default; at the end, the key at the query's own position (qk) is the
     * last one it sees. */
    int shift = (f & VKA_MASK_CAUSAL_END) != 0 ? int(pc.S) - int(pc.L) : 0;
    if ((f & VKA_MASK_CAUSAL) != 0) limit = min(limit, int(i) + shift + 1);
    if ((f & VKA_MASK_VALID_LENS_PER_BATCH) != 0) limit = min(limit, valid_lens[b]);
    if ((f & VKA_MASK_VALID_LENS_PER_QUERY) != 0) limit = min(limit, valid_lens[b * pc.L + i]);
    return uint(max(limit, 0));
}
uint vka_row_limit(uint b, uint i) { return vka_row_limit_of(b, i, pc.mask_flags); }

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

#ifdef VKA_WITH_VARIANTS
/* The attention variants (abi.h, VKA_VARIANT_*). The includer declares the specialization constant
 * VARIANT, the binding head_terms (float) and push-constant fields softcap and window. With VARIANT
 * 0 every function here is the identity or a constant, and the compiler drops it. */

/* tanh(y) to about 1.5e-7 relative, finite for every y (tanh(+-inf) = +-1) and NaN for NaN: a Taylor
 * series below |y| = 0.3, where 1 - e^(-2|y|) would cancel, else (1 - e^(-2|y|)) / (1 + e^(-2|y|)). */
float vka_tanh(float y)
{
    float y2 = y * y, e = exp(-2.0 * abs(y));
    float series = y * (1.0 + y2 * (-1.0 / 3.0 + y2 * (2.0 / 15.0 + y2 * (-17.0 / 315.0 + y2 * (62.0 / 2835.0)))));
    float t = (1.0 - e) / (1.0 + e);
    return abs(y) < 0.3 ? series : y < 0.0 ? -t : t;
}

/* A scaled score x of head h for the key `rel` positions after the row's query (negative before):
 * soft-capped, then ALiBi's bias added. */
float vka_variant_score(float x, uint h, int rel)
{
    if ((VARIANT & VKA_VARIANT_SOFTCAP) != 0) x = pc.softcap * vka_tanh(x / pc.softcap);
    if ((VARIANT & VKA_VARIANT_ALIBI) != 0) x += head_terms[2 * h] * float(rel);
    return x;
}

/* The first key a row sees through the window, for the row whose query is at key index `qk`: keys
 * j <= qk - window are masked. 0 without a window. */
uint vka_window_start(int qk)
{
    if ((VARIANT & VKA_VARIANT_WINDOW) == 0 || qk < 0) return 0u;
    return uint(qk) + 1u > pc.window ? uint(qk) + 1u - pc.window : 0u;
}

/* A sink joins a row's online softmax as one more key whose value is zero: the running state starts
 * at m = sink_h, l = 1 (o stays zero). `first` must hold for exactly one of a row's key ranges (the
 * first chunk of the first part), so that the sink is counted once however the keys are split. */
void vka_sink_start(uint h, bool first, inout float m, inout float l)
{
    if ((VARIANT & VKA_VARIANT_SINK) != 0 && first) {
        m = head_terms[2 * h + 1];
        l = 1.0;
    }
}
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
