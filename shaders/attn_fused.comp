#version 450
/*
 * attn_fused.comp — flash attention: context = softmax(q K^T * scale + mask) V for TILE_A query
 * rows of one (b, h) per invocation over one range of keys, streamed in blocks of TILE_B with an
 * online softmax (running max m and sum l per row, fp32), so no L x S buffer exists.
 *
 * Which keys, and the softmax state carried between dispatches and merged across parts: see
 * vka_fused_push in abi.h. Masks as in attn_scores.comp (attention_common.glsl). Keys past every
 * row's limit (causal, valid lengths) are skipped whole; then the extra keys (never masked) are
 * visited. A masked key never contributes, even when its K or V row holds NaN or inf (a stale
 * cache slot): its score is replaced by -inf, not added to, and a zero probability skips its V
 * row. A row with no visible key gets a zero context (lse = -inf); a NaN score makes the row NaN.
 *
 * Variants (VARIANT, abi.h), compiled in only when on: softcap and the ALiBi bias transform each
 * scaled score (attention_common.glsl); a sliding window masks keys before each row's window start,
 * and an invocation's key range begins at its first row's window start (the plan sizes the parts
 * from there), so keys before every row's window are never visited; a sink starts the running
 * softmax of part 0's first chunk (the lse then includes it, the merge combines it once). A key
 * block whose attn_mask terms are all -inf for the invocation's rows is skipped whole.
 *
 * The SHARED_KV build (kernel attn_fused_shared, the GPU tunings') gives a workgroup WG x TILE_A
 * consecutive query rows of one (part, b, h): its invocations stage each block's K and V rows in
 * shared memory together (neighbouring texels on neighbouring invocations), and every invocation
 * reads them there (one address for the whole workgroup: a broadcast), where the texel-fetch build
 * has every invocation fetch every K and V texel itself (on a GPU the texture pipe then bounds
 * it, at about a fetch per four FMAs). The workgroup walks one key range, its first row's part
 * and chunk to the last key any of its rows sees; each row masks the keys it does not see. A
 * block an attn_mask hides from all of its rows is not staged (a vote in shared memory).
 *
 * Grid: parts * bh_count * ceil(i_count / TILE_A) invocations, WG_SIZE per workgroup (SHARED_KV:
 * parts * bh_count * ceil(i_count / (WG_SIZE * TILE_A)) workgroups).
 * Bindings: VKA_FUSED_* (abi.h).
 * Loop trips per invocation (the plan's model, src/plan/attention.c): the key-block loop, blocks + 1;
 * per block three loops over the DV texels of a head row (Q·K^T, rescale, P·V), DV + 1 each;
 * once each, a DV loop to clear the output, to load a carried state, and to store. Loops over
 * TILE_A, TILE_B and VEC are unrolled, as is SHARED_KV's staging (TILE_B x DV / WG_SIZE texels).
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(binding = VKA_FUSED_Q) uniform samplerBuffer Q;
layout(binding = VKA_FUSED_K) uniform samplerBuffer K;
layout(binding = VKA_FUSED_V) uniform samplerBuffer V;
layout(std430, binding = VKA_FUSED_KEY_PADDING) readonly buffer Kpm_ { uint kpm[]; };
layout(std430, binding = VKA_FUSED_VALID_LENS) readonly buffer ValidLens_ { int valid_lens[]; };
layout(std430, binding = VKA_FUSED_ATTN_MASK) readonly buffer MaskBytes_ { uint mask_bytes[]; };
layout(std430, binding = VKA_FUSED_ATTN_MASK) readonly buffer MaskFloats_ { float mask_floats[]; };
layout(std430, binding = VKA_FUSED_LSE_OUT) writeonly buffer Lse_ { float lse[]; };
layout(std430, binding = VKA_FUSED_STATE_O) buffer StateO_ { float state_o[]; };
layout(std430, binding = VKA_FUSED_STATE_O) buffer StateO4_ { vec4 state_o4[]; };
layout(std430, binding = VKA_FUSED_STATE_LSE) buffer StateLse_ { float state_lse[]; };
layout(std430, binding = VKA_FUSED_HEAD_TERMS) readonly buffer HeadTerms_ { float head_terms[]; };
layout(push_constant) uniform Push { vka_fused_push pc; };
#ifdef SHARED_KV
/* a block's K and V rows as bits, key c's texels at c x DV (krow / vrow hold c x DV); with an
 * attn_mask one more element of k_s, VOTES, whose word n % 3 is non-zero where one of the
 * workgroup's invocations sees a key of block n (word n + 2 is cleared during block n, after every
 * read of it as word n - 1). Only a masked build declares it: at D = 256 a block takes exactly
 * 32 KiB, the least a device has. */
const uint VOTES = TILE_B * DV;
shared uvec4 k_s[VOTES + (ATTN_MASK != 0 ? 1 : 0)];
shared uvec4 v_s[TILE_B * DV];
#define VKA_FETCH_K(row, t) uintBitsToFloat(k_s[(row) + (t)])
#define VKA_FETCH_V(row, t) uintBitsToFloat(v_s[(row) + (t)])
#endif
#define VKA_WITH_MASKS
#define VKA_WITH_VARIANTS
#include "attention_common.glsl"
layout(std430, binding = VKA_FUSED_CTX) writeonly buffer Ctx_ { VKA_OUT_TYPE ctx[]; };
layout(std430, binding = VKA_FUSED_CTX) writeonly buffer Ctx4_ { VKA_OUT_VEC4 ctx4[]; };

void main()
{
    const uint WG = gl_WorkGroupSize.x;
    uint q_blocks = (pc.i_count + TILE_A - 1) / TILE_A;
#ifdef SHARED_KV
    /* a workgroup per (part, head, WG query tiles); its invocations past i_count repeat the last
     * row (they meet the barriers) and store nothing */
    uint group = vka_group_index(), groups = (q_blocks + WG - 1) / WG, rows = pc.bh_count * groups;
    uint part_index = group / rows;
    if (part_index >= pc.parts) return; /* a padding workgroup, whole */
    uint bh_local = (group % rows) / groups, il_first = (group % groups) * WG * TILE_A;
    uint il0 = il_first + gl_LocalInvocationID.x * TILE_A;
#else
    uint id = vka_group_index() * WG + gl_LocalInvocationID.x;
    uint rows = pc.bh_count * q_blocks;
    uint part_index = id / rows;
    if (part_index >= pc.parts) return;
    uint bh_local = (id % rows) / q_blocks, il0 = (id % q_blocks) * TILE_A;
#endif
    uint bh = pc.bh_begin + bh_local, b = bh / pc.H, h = bh % pc.H;
    const float neg_inf = -1.0 / 0.0;

    /* The running softmax of TILE_A rows and their unnormalised outputs. Rows past i_count repeat
     * the last row (loads stay in bounds) and are not stored. */
    float m[TILE_A], l[TILE_A];
    bool saw_nan[TILE_A];
    vec4 o[TILE_A][DV];
    uint qrow[TILE_A], limit[TILE_A], state[TILE_A], first[TILE_A];
    int qk[TILE_A]; /* the key index at the row's query position (the queries and keys end together) */
    uint real_end = 0;
    [[unroll]] for (uint r = 0; r < TILE_A; r++) {
        uint il = min(il0 + r, pc.i_count - 1), i = pc.i_begin + il;
        m[r] = neg_inf;
        l[r] = 0.0;
        saw_nan[r] = false;
        vka_sink_start(h, part_index == 0 && (FLAGS & VKA_FUSED_LOAD) == 0, m[r], l[r]);
        qrow[r] = pc.q_offset + b * pc.q_batch + h * pc.q_head + i * pc.q_row;
        limit[r] = vka_row_limit(b, i);
        real_end = max(real_end, limit[r]); /* keys past every row's limit are masked for all */
        qk[r] = int(i) + int(pc.S) - int(pc.L);
        first[r] = vka_window_start(qk[r]);
        state[r] = (part_index * pc.bh_count + bh_local) * pc.i_count + il;
    }
    for (uint d = 0; d < DV; d++)
        [[unroll]] for (uint r = 0; r < TILE_A; r++) o[r][d] = vec4(0.0);
    if ((FLAGS & VKA_FUSED_LOAD) != 0) {
        /* A stored state is (o normalised, lse): as a running state that is m = lse, l = 1. */
        [[unroll]] for (uint r = 0; r < TILE_A; r++) {
            float x = state_lse[state[r]];
            saw_nan[r] = isnan(x);
            bool any = !saw_nan[r] && x != neg_inf;
            m[r] = any ? x : neg_inf;
            l[r] = any ? 1.0 : 0.0;
        }
        for (uint d = 0; d < DV; d++)
            [[unroll]] for (uint r = 0; r < TILE_A; r++)
                o[r][d] = VEC == 4 ? state_o4[state[r] * DV + d] : vec4(state_o[state[r] * DV + d], 0.0, 0.0, 0.0);
    }

    /* This invocation's keys [k_lo, k_hi): the real ones some row can see, then the extra keys.
     * Parts count from the first row's window start (0 without a window): no row sees a key before.
     * SHARED_KV: the workgroup's first row's; its keys end where its last row's limit does, as
     * causal and per-batch lengths have it (they grow with the row; per-query lengths need not,
     * and each row masks its own keys past them). */
#ifdef SHARED_KV
    uint part = vka_window_start(int(pc.i_begin + il_first) + int(pc.S) - int(pc.L)) + part_index * pc.part_len;
    real_end = vka_row_limit_of(b, pc.i_begin + min(il_first + WG * TILE_A, pc.i_count) - 1,
                                pc.mask_flags & ~VKA_MASK_VALID_LENS_PER_QUERY);
#else
    uint part = first[0] + part_index * pc.part_len;
#endif
    uint k_lo = part + pc.chunk_begin;
    uint k_hi = min(min(k_lo + pc.chunk_len, part + pc.part_len), pc.S_ext);
    uint real_hi = min(k_hi, min(real_end, pc.S)), extra_lo = max(k_lo, pc.S);
    uint real_blocks = real_hi > k_lo ? (real_hi - k_lo + TILE_B - 1) / TILE_B : 0;
    uint extra_blocks = k_hi > extra_lo ? (k_hi - extra_lo + TILE_B - 1) / TILE_B : 0;
#ifdef SHARED_KV
    if (ATTN_MASK != 0 && gl_LocalInvocationID.x == 0) k_s[VOTES] = uvec4(0u);
    barrier(); /* cleared before the first block's votes */
#endif
    for (uint n = 0; n < real_blocks + extra_blocks; n++) {
        bool real = n < real_blocks;
        uint j0 = real ? k_lo + n * TILE_B : extra_lo + (n - real_blocks) * TILE_B;
        uint end = real ? real_hi : k_hi;

        /* The attn_mask's terms, read once: a block they hide whole from this invocation's rows
         * contributes nothing (a masked key never does), so its scores and values are skipped
         * (PyTorch's causal mask as a float attn_mask, nn.Transformer's square subsequent mask,
         * hides about half the blocks). Where the invocations of a SIMD group or subgroup all
         * skip, the branch skips the work (on lavapipe the mask's reads, a gather per term,
         * stay the larger cost: docs/PERFORMANCE.md); SHARED_KV: where all of the workgroup's
         * do, it stages nothing either. */
        const bool masked = ATTN_MASK != 0 && real && (pc.mask_flags & VKA_MASK_ATTN) != 0;
        float term[TILE_A][TILE_B];
        uint open = 1u;
        if (masked) {
            open = 0u;
            [[unroll]] for (uint r = 0; r < TILE_A; r++)
                [[unroll]] for (uint c = 0; c < TILE_B; c++) {
                    term[r][c] = vka_mask_term(b, h, pc.i_begin + min(il0 + r, pc.i_count - 1), min(j0 + c, end - 1));
                    open |= uint(j0 + c < end && term[r][c] != neg_inf);
                }
        }

        uint krow[TILE_B], vrow[TILE_B];
        uint kv_base = b * pc.kv_batch + h / pc.kv_group * pc.kv_head; /* K/V head h / kv_group */
#ifdef SHARED_KV
        if (masked && open != 0u) atomicOr(k_s[VOTES][n % 3], 1u);
        barrier(); /* the previous block's K and V are read; the votes are in */
        /* the same for the whole workgroup (`masked` is: real blocks come first), so the branch
         * and its barrier are uniform */
        const bool stage = !masked || k_s[VOTES][n % 3] != 0u;
        if (masked && gl_LocalInvocationID.x == 0) k_s[VOTES][(n + 2) % 3] = 0u;
        if (stage) {
            [[unroll]] for (uint e = 0; e < (TILE_B * DV + WG - 1) / WG; e++) {
                uint at = e * WG + gl_LocalInvocationID.x, c = at / DV;
                if ((TILE_B * DV) % WG == 0 || at < TILE_B * DV) {
                    uint row = kv_base + min(j0 + c, end - 1) * pc.kv_row + at % DV;
                    k_s[at] = floatBitsToUint(vka_fetch(K, pc.k_offset + row));
                    v_s[at] = floatBitsToUint(vka_fetch(V, pc.v_offset + row));
                }
            }
            barrier(); /* the block is staged */
        }
        [[unroll]] for (uint c = 0; c < TILE_B; c++) krow[c] = vrow[c] = c * DV;
#else
        [[unroll]] for (uint c = 0; c < TILE_B; c++) {
            uint row = kv_base + min(j0 + c, end - 1) * pc.kv_row;
            krow[c] = pc.k_offset + row;
            vrow[c] = pc.v_offset + row;
        }
#endif
        if (open != 0u) {
            float s[TILE_A][TILE_B];
            VKA_QK_TILE(s, qrow, krow);

            /* Scale and masks: an invisible score becomes -inf whatever the key held. */
            bool key_ok[TILE_B];
            [[unroll]] for (uint c = 0; c < TILE_B; c++)
                key_ok[c] = j0 + c < end &&
                            (!real || (pc.mask_flags & VKA_MASK_KEY_PADDING) == 0 || vka_key_visible(b, j0 + c));
            [[unroll]] for (uint r = 0; r < TILE_A; r++)
                [[unroll]] for (uint c = 0; c < TILE_B; c++)
                    s[r][c] = key_ok[c] && (!real || (j0 + c < limit[r] && j0 + c >= first[r]))
                                  ? vka_variant_score(s[r][c] * pc.scale, h, int(j0 + c) - qk[r])
                                  : neg_inf;
            if (masked)
                [[unroll]] for (uint r = 0; r < TILE_A; r++)
                    [[unroll]] for (uint c = 0; c < TILE_B; c++)
                        if (j0 + c < end) s[r][c] = vka_add_mask(s[r][c], term[r][c]);

            VKA_ONLINE_SOFTMAX_BLOCK(s, m, l, o, saw_nan, vrow);
        }
    }

    uint out_row[TILE_A];
    bool valid[TILE_A];
    const bool store_state = (FLAGS & VKA_FUSED_STORE) != 0;
    [[unroll]] for (uint r = 0; r < TILE_A; r++) {
        uint i = pc.i_begin + min(il0 + r, pc.i_count - 1);
        valid[r] = il0 + r < pc.i_count;
        out_row[r] = pc.ctx_offset + (b * pc.L + i) * pc.ctx_stride + h * DV * VEC;
        float row_lse = saw_nan[r] ? 0.0 / 0.0 : l[r] > 0.0 ? m[r] + log(l[r]) : neg_inf;
        if (valid[r]) {
            if (store_state) state_lse[state[r]] = row_lse;
            else if (pc.has_lse != 0) lse[bh * pc.L + i] = row_lse;
        }
    }
    VKA_STORE_ROWS(o, l, saw_nan, valid, state, out_row, store_state);
}
