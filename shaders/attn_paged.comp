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
 * fetched (kv_quant.glsl), in the same loops (the LANES build: where it is used, see below).
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
 *
 * The LANES build (kernels attn_paged_lanes and attn_paged_quant_lanes: the GPU tunings) shapes the
 * same work for a GPU: a workgroup of WG invocations per (part, sequence, K/V head, row tile), and
 * TILE_B of them (a group) per key: each reads DV / TILE_B texels of the key's row, so a group
 * reads a row whole and the workgroup WG / TILE_B rows side by side, coalesced (a texel view's
 * rows interleaved, invocation g taking texels g, g + TILE_B, ...: each fetch reads the group's
 * neighbouring texels; a block format's contiguous, so that each invocation's texels share
 * their blocks' scales); the group's partial dot products meet by subgroup shuffles. A block's scores go through shared
 * memory; every invocation runs the online softmax over them, then owns texels lane,
 * lane + WG, ... of the rows' outputs and reads the V rows the same coalesced way, fetched
 * with the block's K (their loads need no score). The block formats' groups of DV / TILE_B
 * texels are whole blocks of 32 values at D = 128. With FLAGS' VKA_PAGED_PREFETCH the next
 * block's K and V rows are fetched into registers before this block's scores are made, so a
 * workgroup always has a block's loads in flight (software pipelining: without it each block
 * waits a whole memory latency, then computes with nothing in flight); a block format's rows are
 * held as their words and dequantized at use. The KV_STORAGE_LANES build (attn_paged_lanes_storage,
 * the GPU tunings' choice for fp16 and fp32 caches at head dims that are multiples of 4) is the
 * LANES build reading K and V rows from storage buffers, a texel of 4 values per load, instead of
 * through texel fetches; the pools' dtype comes with FLAGS (VKA_PAGED_POOL_F16); the
 * KV_QUANT_STORAGE_LANES build (attn_paged_quant_lanes_storage) reads a block format's words so. With
 * VKA_PAGED_WIDE_K (fp16, a share of an even count of texels) an invocation's share of a K row is
 * read 8 halves per 16-byte load: loads g, g + TILE_B, ... of the row's, two texels each; with
 * VKA_PAGED_WIDE_V V rows too, by sets of DV / 2 invocations (a row's loads), each set adding
 * every SETS-th key of a block, the sets' sums added in shared memory after the last block.
 * With FLAGS' VKA_PAGED_Q_SHARED the row tile's queries are staged in shared memory once (TILE_A x
 * DV texels) and every block's scores read them there, not through a texel fetch per block.
 * Grid: parts * seqs * H_kv * tiles workgroups.
 * Loop trips per invocation: the key-block loop, blocks + 1 (the rest is unrolled).
 */
#ifdef KV_QUANT_LANES
#define KV_QUANT
#define LANES
#endif
#ifdef KV_STORAGE_LANES
#define KV_STORAGE
#define LANES
#endif
#ifdef KV_QUANT_STORAGE_LANES
#define KV_QUANT
#define KV_STORAGE
#define LANES
#endif
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#ifdef LANES
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(binding = VKA_PAGED_Q) uniform samplerBuffer Q;
#if defined(KV_QUANT) && defined(KV_STORAGE)
/* uint words of storage buffers (the GPU classes' lanes build, attn_paged_quant_lanes_storage) */
layout(std430, binding = VKA_PAGED_K) readonly buffer K_ { uint K_u[]; };
layout(std430, binding = VKA_PAGED_V) readonly buffer V_ { uint V_u[]; };
#include "kv_quant.glsl"
#define KV_RAW uvec3
#define KV_FETCH_RAW(pool, row, t) \
    uvec3(pool##_u[kv_scale_word(row, t)], pool##_u[kv_quant_word(row, t)], pool##_u[kv_quant_word(row, t) + 1u])
#define KV_DECODE(words, row, t) kv_decode(words, row, t)
#elif defined(KV_QUANT)
/* uint words (R32UI views): lavapipe compiles this kernel ~3x faster than with storage buffers */
layout(binding = VKA_PAGED_K) uniform usamplerBuffer K;
layout(binding = VKA_PAGED_V) uniform usamplerBuffer V;
#include "kv_quant.glsl"
#define VKA_FETCH_K(row, t) kv_load(K, row, t)
#define VKA_FETCH_V(row, t) kv_load(V, row, t)
/* The LANES build's fetch in two halves (kv_quant.glsl): the words of texel t of a row, then its values */
#define KV_RAW uvec3
#define KV_FETCH_RAW(pool, row, t) kv_fetch(pool, row, t)
#define KV_DECODE(words, row, t) kv_decode(words, row, t)
#elif defined(KV_STORAGE)
/* Texel t of a row from a storage buffer (a GPU's load path; on NVIDIA a texel fetch takes the
 * texture pipe): the pool declared as fp32 texels (vec4) and as fp16 ones (two words, uvec2),
 * VKA_PAGED_POOL_F16 saying which it holds. A texel is held as its bits and converted at use. */
layout(std430, binding = VKA_PAGED_K) readonly buffer K_ { vec4 K_f[]; };
layout(std430, binding = VKA_PAGED_K) readonly buffer KH_ { uvec2 K_h[]; };
layout(std430, binding = VKA_PAGED_V) readonly buffer V_ { vec4 V_f[]; };
layout(std430, binding = VKA_PAGED_V) readonly buffer VH_ { uvec2 V_h[]; };
const bool POOL_F16 = (FLAGS & VKA_PAGED_POOL_F16) != 0u;
#define KV_RAW uvec4
#define KV_FETCH_RAW(pool, row, t) \
    (POOL_F16 ? uvec4(pool##_h[(row) + (t)], 0u, 0u) : floatBitsToUint(pool##_f[(row) + (t)]))
#define KV_DECODE(bits, row, t) (POOL_F16 ? vka_texel8(bits, 0u) : uintBitsToFloat(bits))
/* With VKA_PAGED_WIDE_K (WIDE_V) an fp16 K (V) row is read 8 halves, two texels, per 16-byte load */
layout(std430, binding = VKA_PAGED_K) readonly buffer KW_ { uvec4 K_w[]; };
layout(std430, binding = VKA_PAGED_V) readonly buffer VW_ { uvec4 V_w[]; };
const bool WIDE_K = (FLAGS & VKA_PAGED_WIDE_K) != 0u, WIDE_V = (FLAGS & VKA_PAGED_WIDE_V) != 0u;
#define KV_WIDE_LOADS
/* A load of `pool` starting at texel `texel` of a row (wide: of two texels), and its texel h */
#define KV_FETCH_LOAD(pool, wide, row, texel) ((wide) ? pool##_w[((row) + (texel)) / 2u] : KV_FETCH_RAW(pool, row, texel))
#define KV_DECODE_LOAD(bits, wide, row, texel, h) ((wide) ? vka_texel8(bits, h) : KV_DECODE(bits, row, texel))
#else
#define KV_RAW vec4
#define KV_FETCH_RAW(pool, row, t) vka_fetch(pool, (row) + (t))
#define KV_DECODE(texel, row, t) (texel)
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

/* A key's score for one row: -inf where the row may not see key j (past the part's end k_hi, past
 * its causal limit, before its window start, or outside its tree mask row), else scaled and
 * through the variants. kpos and jn are the key's position and new-token index. */
float paged_score(float dot_qk, uint j, uint k_hi, uint limit, uint first, int kpos, int qpos, uint h, uint old, uint jn,
                  uint mrow)
{
    bool seen = j < k_hi && j < limit && kpos >= int(first);
    if ((FLAGS & VKA_PAGED_TREE) != 0u) {
        uint bits = meta[mrow + jn / 32u];
        seen = seen && (j < old || ((bits >> (jn % 32u)) & 1u) != 0u);
    }
    return seen ? vka_variant_score(dot_qk * pc.scale, h, kpos - qpos) : -1.0 / 0.0;
}

/* The row tile of work item `item` (part, sequence, K/V head, tile): leaves when the item is past
 * the grid or its sequence has fewer rows; else each row's query, position, causal limit, window
 * start, state and output place, the running softmax started (a sink for part 0), and the part's
 * keys [k_lo, k_hi). Rows past `rows` repeat the last one (loads stay in bounds) and are not
 * stored. (A macro: the rows' arrays are sized by specialization constants.) */
#define PAGED_ROWS(item)                                                                                      \
    uint H_kv = pc.H / pc.kv_group;                                                                           \
    uint per_part = pc.seqs * H_kv * pc.tiles;                                                                \
    uint part_index = (item) / per_part;                                                                      \
    if (part_index >= pc.parts) return;                                                                       \
    uint tile = (item) % pc.tiles, kvh = (item) / pc.tiles % H_kv, b = (item) % per_part / (pc.tiles * H_kv); \
    uint q_start = meta[b * VKA_SEQ_WORDS + VKA_SEQ_Q_START], n_new = meta[b * VKA_SEQ_WORDS + VKA_SEQ_NEW];  \
    uint len = meta[b * VKA_SEQ_WORDS + VKA_SEQ_LEN], table = meta[b * VKA_SEQ_WORDS + VKA_SEQ_TABLE];        \
    uint i_end = min(pc.i_begin + pc.i_count, n_new);                                                         \
    uint rows = i_end > pc.i_begin ? (i_end - pc.i_begin) * pc.kv_group : 0, r0 = tile * TILE_A;              \
    if (r0 >= rows) return; /* a sequence with fewer new tokens than the longest */                          \
    const float neg_inf = -1.0 / 0.0;                                                                         \
    const bool tree = (FLAGS & VKA_PAGED_TREE) != 0;                                                          \
    uint old = len - n_new; /* keys below are cached, the others are this forward's new tokens */            \
    uint mask_at = tree ? meta[b * VKA_SEQ_WORDS + VKA_SEQ_MASK] : 0u, mask_words = (n_new + 31u) / 32u;      \
    float m[TILE_A], l[TILE_A];                                                                               \
    bool saw_nan[TILE_A], valid[TILE_A];                                                                      \
    uint qrow[TILE_A], limit[TILE_A], state[TILE_A], out_row[TILE_A], head[TILE_A], first[TILE_A], mrow[TILE_A]; \
    int qk[TILE_A]; /* the row's position */                                                                  \
    uint real_end = 0, k_first = len;                                                                         \
    [[unroll]] for (uint r = 0; r < TILE_A; r++) {                                                            \
        uint rr = min(r0 + r, rows - 1), i = pc.i_begin + rr / pc.kv_group, h = kvh * pc.kv_group + rr % pc.kv_group; \
        m[r] = neg_inf;                                                                                       \
        l[r] = 0.0;                                                                                           \
        saw_nan[r] = false;                                                                                   \
        vka_sink_start(h, part_index == 0, m[r], l[r]);                                                       \
        valid[r] = r0 + r < rows;                                                                             \
        head[r] = h;                                                                                          \
        qrow[r] = h * pc.q_head + (q_start + i) * pc.q_row;                                                   \
        uint pos = tree ? meta[pc.pos_offset + q_start + i] : old + i;                                        \
        qk[r] = int(pos);                                                                                     \
        limit[r] = tree ? len : pos + 1; /* causal: its own position, and every key before it */             \
        first[r] = vka_window_start(int(pos));                                                                \
        mrow[r] = mask_at + i * mask_words;                                                                   \
        real_end = max(real_end, limit[r]);                                                                   \
        k_first = min(k_first, first[r]);                                                                     \
        state[r] = ((part_index * pc.seqs + b) * pc.H + h) * pc.i_count + (i - pc.i_begin);                   \
        out_row[r] = (q_start + i) * pc.ctx_stride + h * DV * VEC;                                            \
    }                                                                                                         \
    /* Parts count from the rows' first window start (0 without a window): no row sees a key before. */      \
    uint k_lo = k_first + part_index * pc.part_len, k_hi = min(k_lo + pc.part_len, real_end);

/* Key j's row in the pools (texels, or bytes for a block format), its new-token index and position. */
#define PAGED_KEY(j, krow, jn, kpos)                                                              \
    uint krow = meta[table + (j) / pc.block_size] * pc.block_stride + kvh * pc.kv_head +         \
                ((j) % pc.block_size) * pc.kv_row;                                                \
    uint jn = (j) >= old ? (j) - old : 0u;                                                        \
    int kpos = tree && (j) >= old ? int(meta[pc.pos_offset + q_start + jn]) : int(j);

#ifndef LANES
void main()
{
    uint id = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    PAGED_ROWS(id)
    vec4 o[TILE_A][DV];
    for (uint d = 0; d < DV; d++)
        [[unroll]] for (uint r = 0; r < TILE_A; r++) o[r][d] = vec4(0.0);

    uint blocks = k_hi > k_lo ? (k_hi - k_lo + TILE_B - 1) / TILE_B : 0;
    for (uint n = 0; n < blocks; n++) {
        uint j0 = k_lo + n * TILE_B;
        uint krow[TILE_B], jn[TILE_B];
        int kpos[TILE_B]; /* the key's position: its index, or a new token's meta position (TREE) */
        [[unroll]] for (uint c = 0; c < TILE_B; c++) {
            uint j = min(j0 + c, k_hi - 1);
            PAGED_KEY(j, row_, jn_, kpos_)
            krow[c] = row_, jn[c] = jn_, kpos[c] = kpos_;
        }
        float s[TILE_A][TILE_B];
        VKA_QK_TILE(s, qrow, krow);
        [[unroll]] for (uint r = 0; r < TILE_A; r++)
            [[unroll]] for (uint c = 0; c < TILE_B; c++)
                s[r][c] = paged_score(s[r][c], j0 + c, k_hi, limit[r], first[r], kpos[c], qk[r], head[r], old, jn[c],
                                      mrow[r]);
        VKA_ONLINE_SOFTMAX_BLOCK(s, m, l, o, saw_nan, krow); /* V rows sit where K rows do */
    }

    const bool store_state = (FLAGS & VKA_FUSED_STORE) != 0;
    [[unroll]] for (uint r = 0; r < TILE_A; r++)
        if (valid[r] && store_state) state_lse[state[r]] = saw_nan[r] ? 0.0 / 0.0 : l[r] > 0.0 ? m[r] + log(l[r]) : neg_inf;
    VKA_STORE_ROWS(o, l, saw_nan, valid, state, out_row, store_state);
}
#else
const uint WG = gl_WorkGroupSize.x;
const uint BK = WG / TILE_B;             /* keys per block: a group of TILE_B invocations each */
const uint SLICE = DV / TILE_B;          /* texels of a key row per invocation */
const uint OWN = (DV + WG - 1) / WG;     /* output texels per invocation */

shared float s_s[TILE_A * BK]; /* the block's scores */

/* Texel t of invocation g's share of a key row (see the top of the file). */
#ifdef KV_QUANT
#define SLICE_TEXEL(g, t) ((g) * SLICE + (t))
#else
#define SLICE_TEXEL(g, t) ((t) * TILE_B + (g))
#endif
#ifndef KV_WIDE_LOADS
const bool WIDE_K = false, WIDE_V = false; /* (the fp16 storage build's: loads of two texels) */
#define KV_FETCH_LOAD(pool, wide, row, texel) KV_FETCH_RAW(pool, row, texel)
#define KV_DECODE_LOAD(bits, wide, row, texel, h) KV_DECODE(bits, row, texel)
#endif
/* K: the share is read in K_LOADS loads of KT texels each (WIDE_K: two, interleaved as the texels
 * are); load t's first texel. */
const uint KT = WIDE_K ? 2u : 1u;
const uint K_LOADS = SLICE / KT;
#define K_TEXEL(g, t) (WIDE_K ? 2u * ((t) * TILE_B + (g)) : SLICE_TEXEL(g, t))
/* V: an invocation adds V_LOADS loads of VT texels of each of V_KEYS keys of a block to its HELD
 * texels of each row's output: texels lane, lane + WG, ... of every key; with WIDE_V the
 * workgroup's lanes form SETS sets of DV / 2 (2 WG / DV of them), set s adding keys s, s + SETS, ...
 * of each block, its lane w load w of their rows (texels 2w and 2w + 1), and the sets' sums meet in
 * shared memory at the end. */
const uint VT = WIDE_V ? 2u : 1u, V_LOADS = WIDE_V ? 1u : OWN, HELD = V_LOADS * VT;
const uint SETS = WIDE_V ? 2u * WG / DV : 1u, V_KEYS = BK / SETS;
#define V_TEXEL(t, h) (WIDE_V ? 2u * v_w + (h) : lane + (t) * WG)
/* Rows of texels in shared memory: with VKA_PAGED_Q_SHARED the row tile's queries, staged once, that
 * every block reads from here instead of fetching each texel again (a key's group reads its own
 * texels, every group the same); after the last block, with WIDE_V, the V sets' sums. */
const bool Q_SHARED = (FLAGS & VKA_PAGED_Q_SHARED) != 0u;
const uint Q_ROWS = Q_SHARED ? TILE_A * DV : 1u, O_ROWS = WIDE_V ? SETS * TILE_A * DV : 1u;
shared vec4 s_rows[Q_ROWS > O_ROWS ? Q_ROWS : O_ROWS];

void main()
{
    uint lane = gl_LocalInvocationID.x;
    PAGED_ROWS(vka_group_index())
    vec4 o[TILE_A][HELD];
    [[unroll]] for (uint r = 0; r < TILE_A; r++)
        [[unroll]] for (uint t = 0; t < HELD; t++) o[r][t] = vec4(0.0);
    uint v_set = WIDE_V ? lane / (DV / 2u) : 0u, v_w = WIDE_V ? lane % (DV / 2u) : 0u;
    if (Q_SHARED) {
        [[unroll]] for (uint r = 0; r < TILE_A; r++)
            [[unroll]] for (uint t = 0; t < OWN; t++) {
                uint d = lane + t * WG;
                if (OWN * WG == DV || d < DV) s_rows[r * DV + d] = vka_fetch(Q, qrow[r] + d);
            }
        barrier(); /* (the whole workgroup is here: PAGED_ROWS leaves or stays per workgroup) */
    }

    /* This invocation's key of a block, and its slice: counted through its subgroup, so that a key's
     * TILE_B lanes are neighbours there whatever order the driver gives local ids. Not by
     * gl_SubgroupSize: this pipeline does not fix the size, and a driver may then report a
     * subgroup larger than the one it runs, the rest inactive (Intel's ANV: 32 while running 16;
     * SubgroupId * SubgroupSize + SubgroupLocalInvocationId then skips ids and leaves keys
     * unscored). Every subgroup holds WG / gl_NumSubgroups invocations: WG (the tuning's
     * paged_lanes, 32) is a power of two, as subgroups are. */
    uint sub_lane = gl_SubgroupID * (WG / gl_NumSubgroups) + gl_SubgroupInvocationID;
    uint c = sub_lane / TILE_B, g = sub_lane % TILE_B;
    uint blocks = k_hi > k_lo ? (k_hi - k_lo + BK - 1) / BK : 0;
    /* Block n's rows into registers: the V texels this invocation adds for the block's keys, and
     * its slice of key c's K row. V's loads need no score, so they are in flight while the scores
     * are made (not one latency after); with PREFETCH both are the next block's, fetched before
     * this block's work. A block format's rows are held as fetched (its words, and each row's
     * offset: v_at, k_at) and dequantized where they are used, so that no arithmetic waits on them
     * early (the texel formats' rows are their values; the offsets go unused). */
    const bool prefetch = (FLAGS & VKA_PAGED_PREFETCH) != 0;
    KV_RAW v_in[V_KEYS][V_LOADS], k_in[K_LOADS];
    uint v_at[V_KEYS], k_at;
#define FETCH_KV(n_)                                                                                \
    {                                                                                               \
        uint f0_ = k_lo + (n_) * BK;                                                                \
        [[unroll]] for (uint i = 0; i < V_KEYS; i++) {                                              \
            uint jv = min(f0_ + v_set + i * SETS, k_hi - 1);                                        \
            PAGED_KEY(jv, vrow, jn_v, kpos_v) /* V rows sit where K rows do */                     \
            v_at[i] = vrow;                                                                         \
            [[unroll]] for (uint t = 0; t < V_LOADS; t++) {                                         \
                uint d = V_TEXEL(t, 0);                                                             \
                v_in[i][t] = WIDE_V || OWN * WG == DV || d < DV ? KV_FETCH_LOAD(V, WIDE_V, vrow, d) \
                                                                : KV_RAW(0);                        \
            }                                                                                       \
        }                                                                                           \
        uint jk = min(f0_ + c, k_hi - 1);                                                           \
        PAGED_KEY(jk, krow, jn_k, kpos_k)                                                           \
        k_at = krow;                                                                                \
        [[unroll]] for (uint t = 0; t < K_LOADS; t++)                                               \
            k_in[t] = KV_FETCH_LOAD(K, WIDE_K, krow, K_TEXEL(g, t));                                \
    }
    if (prefetch && blocks > 0) FETCH_KV(0)
    for (uint n = 0; n < blocks; n++) {
        uint j0 = k_lo + n * BK;
        if (!prefetch) FETCH_KV(n)
        KV_RAW v_blk[V_KEYS][V_LOADS], k_blk[K_LOADS]; /* this block's (copies: the arrays are spec-sized) */
        uint v_blk_at[V_KEYS], k_blk_at = k_at;
        [[unroll]] for (uint i = 0; i < V_KEYS; i++) {
            v_blk_at[i] = v_at[i];
            [[unroll]] for (uint t = 0; t < V_LOADS; t++) v_blk[i][t] = v_in[i][t];
        }
        [[unroll]] for (uint t = 0; t < K_LOADS; t++) k_blk[t] = k_in[t];
        if (prefetch && n + 1 < blocks) FETCH_KV(n + 1)
        {
            uint j = min(j0 + c, k_hi - 1);
            PAGED_KEY(j, krow, jn, kpos) /* (krow unused here: its row came with FETCH_KV) */
            float part[TILE_A];
            [[unroll]] for (uint r = 0; r < TILE_A; r++) part[r] = 0.0;
            [[unroll]] for (uint t = 0; t < K_LOADS; t++)
                [[unroll]] for (uint h = 0; h < KT; h++) {
                    uint e = K_TEXEL(g, t) + h;
                    vec4 k = KV_DECODE_LOAD(k_blk[t], WIDE_K, k_blk_at, e, h);
                    [[unroll]] for (uint r = 0; r < TILE_A; r++)
                        part[r] += dot(Q_SHARED ? s_rows[r * DV + e] : vka_fetch(Q, qrow[r] + e), k);
                }
            /* the group's slices meet: its TILE_B invocations are neighbours in one subgroup (at most 4:
             * the plan's bound, which every subgroup holds where it takes this build; the steps past 4
             * serve a plan that allows more on wider subgroups) */
            [[unroll]] for (uint r = 0; r < TILE_A; r++) {
                if (TILE_B > 1) part[r] += subgroupShuffleXor(part[r], 1u);
                if (TILE_B > 2) part[r] += subgroupShuffleXor(part[r], 2u);
                if (TILE_B > 4) part[r] += subgroupShuffleXor(part[r], 4u);
                if (TILE_B > 8) part[r] += subgroupShuffleXor(part[r], 8u);
            }
            if (g == 0)
                [[unroll]] for (uint r = 0; r < TILE_A; r++)
                    s_s[r * BK + c] = paged_score(part[r], j0 + c, k_hi, limit[r], first[r], kpos, qk[r], head[r], old,
                                                  jn, mrow[r]);
        }
        barrier(); /* the block's scores are whole */

        /* The online softmax, in every invocation alike (attention_common's rules: a row with no
         * visible key keeps m = -inf, l = 0, o = 0; a zero probability skips its V row). */
        float alpha[TILE_A], m_ref[TILE_A];
        [[unroll]] for (uint r = 0; r < TILE_A; r++) {
            float block_max = neg_inf;
            [[unroll]] for (uint i = 0; i < BK; i++) {
                float x = s_s[r * BK + i];
                saw_nan[r] = saw_nan[r] || isnan(x);
                block_max = max(block_max, x);
            }
            float m_new = max(m[r], block_max);
            m_ref[r] = m_new == neg_inf ? 0.0 : m_new; /* exp(-inf - -inf) would be NaN */
            alpha[r] = exp(m[r] - m_ref[r]);
            l[r] *= alpha[r];
            m[r] = m_new;
            [[unroll]] for (uint t = 0; t < HELD; t++) o[r][t] *= alpha[r];
        }
        if (SETS > 1) /* each set adds some of the keys; every invocation sums all their probabilities */
            [[unroll]] for (uint i = 0; i < BK; i++)
                [[unroll]] for (uint r = 0; r < TILE_A; r++) l[r] += exp(s_s[r * BK + i] - m_ref[r]);
        [[unroll]] for (uint i = 0; i < V_KEYS; i++) {
            float p[TILE_A];
            [[unroll]] for (uint r = 0; r < TILE_A; r++) {
                p[r] = exp(s_s[r * BK + v_set + i * SETS] - m_ref[r]);
                if (SETS == 1) l[r] += p[r];
            }
            [[unroll]] for (uint t = 0; t < V_LOADS; t++)
                [[unroll]] for (uint h = 0; h < VT; h++) {
                    vec4 v = KV_DECODE_LOAD(v_blk[i][t], WIDE_V, v_blk_at[i], V_TEXEL(t, h), h);
                    [[unroll]] for (uint r = 0; r < TILE_A; r++)
                        o[r][t * VT + h] += p[r] != 0.0 ? p[r] * v : vec4(0.0);
                }
        }
        barrier(); /* every invocation has read the scores before the next block writes them */
    }
#undef FETCH_KV

    /* Each row's output texels lane, lane + WG, ...: with WIDE_V the sets' sums, added in shared
     * memory (the last block's barrier is behind every read of the staged queries there) */
    vec4 res[TILE_A][OWN];
    if (WIDE_V) {
        [[unroll]] for (uint r = 0; r < TILE_A; r++)
            [[unroll]] for (uint h = 0; h < 2u; h++) s_rows[(v_set * TILE_A + r) * DV + V_TEXEL(0, h)] = o[r][h];
        barrier();
    }
    [[unroll]] for (uint r = 0; r < TILE_A; r++)
        [[unroll]] for (uint t = 0; t < OWN; t++) {
            uint d = min(lane + t * WG, DV - 1u);
            if (WIDE_V) {
                res[r][t] = vec4(0.0);
                [[unroll]] for (uint s = 0; s < SETS; s++) res[r][t] += s_rows[(s * TILE_A + r) * DV + d];
            } else {
                res[r][t] = o[r][min(t, HELD - 1u)];
            }
        }

    const bool store_state = (FLAGS & VKA_FUSED_STORE) != 0;
    [[unroll]] for (uint r = 0; r < TILE_A; r++) {
        if (lane == 0 && valid[r] && store_state)
            state_lse[state[r]] = saw_nan[r] ? 0.0 / 0.0 : l[r] > 0.0 ? m[r] + log(l[r]) : neg_inf;
        float inv = l[r] > 0.0 ? 1.0 / l[r] : 0.0, poison = saw_nan[r] ? 0.0 / 0.0 : 0.0;
        [[unroll]] for (uint t = 0; t < OWN; t++) {
            uint d = lane + t * WG;
            if (!valid[r] || (OWN * WG != DV && d >= DV)) continue;
            vec4 value = res[r][t] * inv + poison;
            if (store_state) {
                if (VEC == 4) state_o4[state[r] * DV + d] = value;
                else state_o[state[r] * DV + d] = value.x;
            } else if (VEC == 4) {
                ctx4[out_row[r] / 4 + d] = VKA_TO_OUT_VEC4(value);
            } else {
                ctx[out_row[r] + d] = VKA_TO_OUT(value.x);
            }
        }
    }
}
#endif
