#version 450
/*
 * attn_paged.comp — flash attention of a batch's new tokens over their sequences' paged KV cache:
 * continuous batching (each sequence its own count of new tokens and its own length), prefill and
 * decode in one kernel. Which rows and keys, and the addressing through the block tables: see
 * vka_paged_push in abi.h. The online softmax and the stores are attn_fused's
 * (attention_common.glsl); what differs is where rows and keys come from.
 *
 * An invocation's TILE_A rows are (query, head) pairs of one K/V head's group, so for decoding
 * (one query per sequence) the group's heads share each K/V row fetched: grouped-query attention
 * reads the cache once per K/V head, not once per query head. Keys past a row's position are
 * masked (bottom-right causal), keys past every row's position are never visited, and a visited
 * key's slot is always one the sequence wrote: stale data in free or unused slots is never read.
 *
 * The KV_QUANT build reads a cache of a block format (Q8_0 or Q4_0, by FLAGS): its pools are read
 * as uint words, krow / vrow are byte offsets, and each texel of 4 values is dequantized as it is
 * fetched (kv_quant.glsl), in the same loops.
 * Variants (VARIANT, abi.h) as in attn_fused.comp, at the tokens' own positions: a row at position
 * len - new + i; with a window its parts start at its rows' first window start, so a decoding step
 * visits at most `window` keys; a sink starts part 0's running softmax.
 *
 * The TREE build (VKA_PAGED_TREE: speculative decoding's token trees, any mask among the new
 * tokens) takes each new token's position from meta (a tree token's: the old length plus its
 * depth) and replaces the causal rule among the new tokens by the sequence's mask rows: a row sees
 * every cached key (within its window) and the new tokens its mask row allows, wherever they are,
 * so its keys run to the sequence's end. Keys that are new tokens sit at their meta positions for
 * the window and ALiBi.
 *
 * Grid: parts * seqs * H_kv * tiles invocations, WG_SIZE per workgroup.
 * Bindings: VKA_PAGED_* (abi.h).
 * Loop trips per invocation (the plan's model, src/plan/paged.c): the key-block loop, blocks + 1;
 * per block three loops over the DV texels of a head row (Q·K^T, rescale, P·V), DV + 1 each;
 * once each, a DV loop to clear the output and one to store. Tile loops are unrolled.
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(binding = VKA_PAGED_Q) uniform samplerBuffer Q;
#ifdef KV_QUANT
/* uint words (R32UI views): lavapipe compiles this kernel ~3x faster than with storage buffers */
layout(binding = VKA_PAGED_K) uniform usamplerBuffer K;
layout(binding = VKA_PAGED_V) uniform usamplerBuffer V;
#include "kv_quant.glsl"
#define VKA_FETCH_K(row, t) kv_load(K, row, t)
#define VKA_FETCH_V(row, t) kv_load(V, row, t)
#else
layout(binding = VKA_PAGED_K) uniform samplerBuffer K;
layout(binding = VKA_PAGED_V) uniform samplerBuffer V;
#endif
layout(std430, binding = VKA_PAGED_META) readonly buffer Meta_ { uint meta[]; };
layout(std430, binding = VKA_PAGED_STATE_O) writeonly buffer StateO_ { float state_o[]; };
layout(std430, binding = VKA_PAGED_STATE_O) writeonly buffer StateO4_ { vec4 state_o4[]; };
layout(std430, binding = VKA_PAGED_STATE_LSE) writeonly buffer StateLse_ { float state_lse[]; };
layout(std430, binding = VKA_PAGED_HEAD_TERMS) readonly buffer HeadTerms_ { float head_terms[]; };
layout(push_constant) uniform Push { vka_paged_push pc; };
#define VKA_WITH_VARIANTS
#include "attention_common.glsl"
layout(std430, binding = VKA_PAGED_CTX) writeonly buffer Ctx_ { VKA_OUT_TYPE ctx[]; };
layout(std430, binding = VKA_PAGED_CTX) writeonly buffer Ctx4_ { VKA_OUT_VEC4 ctx4[]; };

void main()
{
    uint id = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint H_kv = pc.H / pc.kv_group;
    uint per_part = pc.seqs * H_kv * pc.tiles;
    uint part_index = id / per_part;
    if (part_index >= pc.parts) return;
    uint tile = id % pc.tiles, kvh = id / pc.tiles % H_kv, b = id % per_part / (pc.tiles * H_kv);
    uint q_start = meta[b * VKA_SEQ_WORDS + VKA_SEQ_Q_START], n_new = meta[b * VKA_SEQ_WORDS + VKA_SEQ_NEW];
    uint len = meta[b * VKA_SEQ_WORDS + VKA_SEQ_LEN], table = meta[b * VKA_SEQ_WORDS + VKA_SEQ_TABLE];
    uint i_end = min(pc.i_begin + pc.i_count, n_new);
    uint rows = i_end > pc.i_begin ? (i_end - pc.i_begin) * pc.kv_group : 0, r0 = tile * TILE_A;
    if (r0 >= rows) return; /* a sequence with fewer new tokens than the longest */
    const float neg_inf = -1.0 / 0.0;
    const bool tree = (FLAGS & VKA_PAGED_TREE) != 0;
    uint old = len - n_new; /* keys below are cached, the others are this forward's new tokens */
    uint mask_at = tree ? meta[b * VKA_SEQ_WORDS + VKA_SEQ_MASK] : 0u, mask_words = (n_new + 31u) / 32u;

    /* Rows past `rows` repeat the last one (loads stay in bounds) and are not stored. */
    float m[TILE_A], l[TILE_A];
    bool saw_nan[TILE_A], valid[TILE_A];
    vec4 o[TILE_A][DV];
    uint qrow[TILE_A], limit[TILE_A], state[TILE_A], out_row[TILE_A], head[TILE_A], first[TILE_A], mrow[TILE_A];
    int qk[TILE_A]; /* the row's position */
    uint real_end = 0, k_first = len;
    [[unroll]] for (uint r = 0; r < TILE_A; r++) {
        uint rr = min(r0 + r, rows - 1), i = pc.i_begin + rr / pc.kv_group, h = kvh * pc.kv_group + rr % pc.kv_group;
        m[r] = neg_inf;
        l[r] = 0.0;
        saw_nan[r] = false;
        vka_sink_start(h, part_index == 0, m[r], l[r]);
        valid[r] = r0 + r < rows;
        head[r] = h;
        qrow[r] = h * pc.q_head + (q_start + i) * pc.q_row;
        uint pos = tree ? meta[pc.pos_offset + q_start + i] : old + i;
        qk[r] = int(pos);
        limit[r] = tree ? len : pos + 1; /* causal: its own position, and every key before it */
        first[r] = vka_window_start(int(pos));
        mrow[r] = mask_at + i * mask_words;
        real_end = max(real_end, limit[r]);
        k_first = min(k_first, first[r]);
        state[r] = ((part_index * pc.seqs + b) * pc.H + h) * pc.i_count + (i - pc.i_begin);
        out_row[r] = (q_start + i) * pc.ctx_stride + h * DV * VEC;
    }
    for (uint d = 0; d < DV; d++)
        [[unroll]] for (uint r = 0; r < TILE_A; r++) o[r][d] = vec4(0.0);

    /* Parts count from the rows' first window start (0 without a window): no row sees a key before. */
    uint k_lo = k_first + part_index * pc.part_len, k_hi = min(k_lo + pc.part_len, real_end);
    uint blocks = k_hi > k_lo ? (k_hi - k_lo + TILE_B - 1) / TILE_B : 0;
    for (uint n = 0; n < blocks; n++) {
        uint j0 = k_lo + n * TILE_B;
        uint krow[TILE_B], jn[TILE_B];
        int kpos[TILE_B]; /* the key's position: its index, or a new token's meta position (TREE) */
        [[unroll]] for (uint c = 0; c < TILE_B; c++) {
            uint j = min(j0 + c, k_hi - 1);
            uint block = meta[table + j / pc.block_size];
            krow[c] = block * pc.block_stride + kvh * pc.kv_head + (j % pc.block_size) * pc.kv_row;
            jn[c] = j >= old ? j - old : 0u;
            kpos[c] = tree && j >= old ? int(meta[pc.pos_offset + q_start + jn[c]]) : int(j);
        }
        float s[TILE_A][TILE_B];
        VKA_QK_TILE(s, qrow, krow);
        [[unroll]] for (uint r = 0; r < TILE_A; r++)
            [[unroll]] for (uint c = 0; c < TILE_B; c++) {
                bool seen = j0 + c < k_hi && j0 + c < limit[r] && kpos[c] >= int(first[r]);
                if (tree) {
                    uint bits = meta[mrow[r] + jn[c] / 32u];
                    seen = seen && (j0 + c < old || ((bits >> (jn[c] % 32u)) & 1u) != 0u);
                }
                s[r][c] = seen ? vka_variant_score(s[r][c] * pc.scale, head[r], kpos[c] - qk[r]) : neg_inf;
            }
        VKA_ONLINE_SOFTMAX_BLOCK(s, m, l, o, saw_nan, krow); /* V rows sit where K rows do */
    }

    const bool store_state = (FLAGS & VKA_FUSED_STORE) != 0;
    [[unroll]] for (uint r = 0; r < TILE_A; r++)
        if (valid[r] && store_state) state_lse[state[r]] = saw_nan[r] ? 0.0 / 0.0 : l[r] > 0.0 ? m[r] + log(l[r]) : neg_inf;
    VKA_STORE_ROWS(o, l, saw_nan, valid, state, out_row, store_state);
}
