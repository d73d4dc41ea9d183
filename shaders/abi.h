/*
 * abi.h — the contract between the C host code and the GLSL kernels, written once.
 *
 * Included by both languages: GLSL compiles it with VKA_GLSL defined (and gets uint32_t from
 * GL_EXT_shader_explicit_arithmetic_types_int32); C compiles it as a normal header. Every push
 * constant struct holds only 4-byte scalars, so the C layout and GLSL's std430 layout agree; the C
 * side checks sizes with _Static_assert (src/pipeline/kernels.c).
 *
 * Conventions shared by every kernel:
 *  - all offsets and strides are in elements (or texels), not bytes, counted from the start of
 *    the bound slice (a binding is a whole buffer, or a slice of one larger than the device's
 *    range); offsets are taken modulo 2^32, so an offset may count back from an absolute index
 *    (uint arithmetic wraps) and a kernel adds absolute indices times strides to it;
 *  - a dispatch is a 1-d list of workgroups folded into a 3-d grid to fit the device's
 *    maxComputeWorkGroupCount; kernels unfold it with vka_group_index() and return early for the
 *    padding: invocations past their own work (matmul, scores, P·V, fused), or whole workgroups
 *    at indices >= group_count where a workgroup shares barriers (softmax, average_heads).
 */
#ifndef VKA_ABI_H
#define VKA_ABI_H

#ifdef VKA_GLSL
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require
#extension GL_EXT_control_flow_attributes : require
#define VKA_STRUCT(name) struct name
#define VKA_STRUCT_END(name) ;
#else
#include <stdint.h>
#define VKA_STRUCT(name) typedef struct name
#define VKA_STRUCT_END(name) name;
#endif

/* Specialization constant ids. */
#define VKA_MAX_SPEC 18       /* every pipeline gets ids 0..17; a kernel reads the ones it declares */
#define VKA_MAX_BINDINGS 11   /* the most binding slots a kernel has (attn_fused) */
#define VKA_SPEC_WG_SIZE 0 /* invocations per workgroup (local_size_x) */
#define VKA_SPEC_TILE_A 1  /* kernel-specific register tile, see each .comp */
#define VKA_SPEC_TILE_B 2
#define VKA_SPEC_VEC 3     /* floats per texel fetch: 4 (RGBA views) or 1 (R views) */
#define VKA_SPEC_DV 4      /* texels per head row: D / VEC */
#define VKA_SPEC_ATTN_MASK 5 /* 1: compile the per-score attn_mask code in (it is slow to compile) */
#define VKA_SPEC_FLAGS 6     /* kernel-specific code compiled in or out (see each kernel's flags) */
#define VKA_SPEC_VARIANT 7   /* the attention variants compiled in (VKA_VARIANT_*; 0 = none, the default
                                kernels): scores, softmax, fused and paged attention */
#define VKA_SPEC_MAT_M 8     /* cooperative-matrix kernels: the device's matrix shape (M x K times K x N), */
#define VKA_SPEC_MAT_N 9     /* from vkattn_device_info.cooperative_matrix_shapes */
#define VKA_SPEC_MAT_K 10
#define VKA_SPEC_TILE_K 11   /* cooperative-matrix kernels: reduction elements per block in shared memory
                               (attn_cm: Q's head dims, the reduction of S, staged per pass) */
#define VKA_SPEC_ROW_LANES 12 /* attn_cm: invocations that share a query row in the softmax */
#define VKA_SPEC_SUBGROUPS_N 13 /* matmul_cm: subgroups across a workgroup's tile of C (in two rows) */
#define VKA_SPEC_ROW_RUN 14     /* attn_cm with VKA_FUSED_REG_SOFTMAX: element e of an accumulator lies in */
#define VKA_SPEC_ROW_CLASSES 15 /* row class (e / ROW_RUN) % ROW_CLASSES (device/matrix_rows.h) */
#define VKA_SPEC_ROW_FRAGS 16   /* attn_cm: MAT_M-row matrices of query rows per subgroup */
#define VKA_SPEC_A_FROM_ACC 17  /* attn_cm with VKA_FUSED_REG_P: element e of an A matrix is element
                                   VKA_A_FROM_ACC(A_FROM_ACC, e) of the accumulator (device/matrix_rows.h) */

/* Attention variants (vkattn_layer_desc.window, softcap, alibi; vkattn_weights.sinks). Each is code
 * compiled in only when on. Positions: a row's query sits at key index `qk` (the key at its own
 * position): i + S - L for the nn.MHA forward (queries and keys end at the same position), its
 * position len - new + i for a cached forward. The per-head constants are the `head_terms` binding,
 * (H', 2) floats: head h's ALiBi slope at 2h, its sink logit at 2h + 1 (H' = the computed heads). */
#define VKA_VARIANT_WINDOW 1u  /* keys j < qk + 1 - window are masked (and skipped where whole blocks are) */
#define VKA_VARIANT_SOFTCAP 2u /* a scaled score x becomes softcap * tanh(x / softcap) */
#define VKA_VARIANT_ALIBI 4u   /* score += slope_h * (j - qk) */
#define VKA_VARIANT_SINK 8u    /* the softmax denominator gets exp(sink_h - max), with no value */

/* Mask flags of vka_scores_push.mask_flags (the fused kernel takes the same word). */
#define VKA_MASK_CAUSAL 1u
#define VKA_MASK_KEY_PADDING 2u
#define VKA_MASK_VALID_LENS_PER_BATCH 4u
#define VKA_MASK_VALID_LENS_PER_QUERY 8u
#define VKA_MASK_ATTN_BOOL 16u
#define VKA_MASK_ATTN_FLOAT 32u
#define VKA_MASK_ATTN_PER_HEAD 64u
#define VKA_MASK_CAUSAL_END 128u /* with CAUSAL: aligned at the end (bottom-right), keys j > qk masked,
                                    for layers with positions (RoPE, window, ALiBi) */

/* Loop trips. lavapipe ends every loop of an invocation once 65535 iterations have run in total,
 * across all its loops (docs/KNOWN_ISSUES.md), so the plan bounds each kernel's trips per
 * invocation from a model of its loops (each kernel's model sits beside its step builder in src/plan/). Loops over register tiles are
 * written [[unroll]] and cost nothing; every other loop of t trips counts t + 1. Each .comp says
 * which of its loops count. */

/* Units: kernels read activations and weights through texel views (the view format carries the
 * storage dtype), so read offsets and strides are in texels of VEC floats; written buffers and
 * everything else are in elements. */

/* matmul.comp: C(M,N) = A(M,K) · B(N,K)^T + bias(N), or C += A·B^T with the ACCUMULATE flag (a
 * later part of a reduction split to fit the loop budget; a flag, not a push constant, because
 * reading C makes lavapipe compile the kernel 2.5x slower). A row m at a_offset + m * lda (texels), B row n at
 * b_offset + n * ldb (texels), K texels of each. C element (m, n) at
 *   c_offset + (m / rows_per_batch) * batch_stride + (m % rows_per_batch) * c_row
 *            + (n / c_col_block) * c_block + n % c_col_block
 * (elements): row-major C has c_row = its row length and one column block; a head-major C (the
 * projected Q, K, V: (B, heads, rows, D)) has c_col_block = D and c_block = rows * D. */
#define VKA_MATMUL_A 0    /* texel view (matmul_cm, matmul_vec_storage: a storage buffer, see their flags) */
#define VKA_MATMUL_B 1    /* texel view (matmul_cm, matmul_vec_storage: a storage buffer) */
#define VKA_MATMUL_BIAS 2 /* texel view (R32F) */
#define VKA_MATMUL_C 3    /* storage buffer, fp16 with OUT_F16 */
#define VKA_MATMUL_BINDINGS 4
#define VKA_MATMUL_ACCUMULATE 1u /* VKA_SPEC_FLAGS */
#define VKA_MATMUL_PREFETCH 2u   /* VKA_SPEC_FLAGS of matmul_cm: the next block fetched during this one's multiplies */
#define VKA_MATMUL_A_F16 4u      /* VKA_SPEC_FLAGS of matmul_cm, matmul_vec_storage: A holds fp16 values (else fp32) */
#define VKA_MATMUL_B_F16 8u      /* VKA_SPEC_FLAGS of matmul_cm, matmul_vec_storage: B holds fp16 values (else fp32) */
#define VKA_MATMUL_TWO_STAGES 16u /* VKA_SPEC_FLAGS of matmul_cm: two staged blocks, one barrier per block */
#define VKA_MATMUL_DIRECT 32u     /* VKA_SPEC_FLAGS of matmul_cm: each accumulator stored whole into C (every tile
                                     whole, C's rows and blocks 16-byte aligned, no ACCUMULATE: the plan's rule) */
VKA_STRUCT(vka_matmul_push) {
    uint32_t M, N, K;            /* K in texels */
    uint32_t a_offset, lda;
    uint32_t b_offset, ldb;
    uint32_t bias_offset;
    uint32_t c_offset, c_row, c_col_block, c_block;
    uint32_t rows_per_batch, batch_stride;
    uint32_t has_bias;
    uint32_t tiles_n;
    uint32_t group_rows; /* matmul_cm, matmul_sm: tiles visited in groups of this many rows (VKA_TILE_ROW) */
} VKA_STRUCT_END(vka_matmul_push)

/* Tile t of a grid of tiles_m x tiles_n tiles of C when the tiles go in groups of g rows of tiles
 * (g <= 1: row by row): its row and column. Within a group consecutive tiles go down its rows,
 * then to its next column, so the workgroups that run at once share a few rows of A and a few
 * columns of W in the cache instead of sweeping all of W (grouped ordering, as Triton's GEMMs
 * order their blocks). Plain arithmetic, so C (tests) and GLSL read the same definition. */
#define VKA_TILE_GROUP(g) ((g) > 1u ? (g) : 1u)
#define VKA_TILE_GROUP_ROWS(t, tiles_m, tiles_n, g)                                                   \
    ((tiles_m) - (t) / (VKA_TILE_GROUP(g) * (tiles_n)) * VKA_TILE_GROUP(g) < VKA_TILE_GROUP(g)          \
         ? (tiles_m) - (t) / (VKA_TILE_GROUP(g) * (tiles_n)) * VKA_TILE_GROUP(g)                        \
         : VKA_TILE_GROUP(g))
#define VKA_TILE_ROW(t, tiles_m, tiles_n, g)                                                          \
    ((t) / (VKA_TILE_GROUP(g) * (tiles_n)) * VKA_TILE_GROUP(g) +                                        \
     (t) % (VKA_TILE_GROUP(g) * (tiles_n)) % VKA_TILE_GROUP_ROWS(t, tiles_m, tiles_n, g))
#define VKA_TILE_COL(t, tiles_m, tiles_n, g)                                                          \
    ((t) % (VKA_TILE_GROUP(g) * (tiles_n)) / VKA_TILE_GROUP_ROWS(t, tiles_m, tiles_n, g))

/* The chunk of score rows a scores/softmax/P·V/average dispatch covers: heads bh in
 * [bh_begin, bh_begin + bh_count) (bh = b*H + h), queries i in [i_begin, i_begin + i_count).
 * Score row r = (bh - bh_begin) * i_count + (i - i_begin) lives at r * S_ext in the P buffer.
 *
 * Projected Q, K and V are read through texel views, DV texels of VEC floats per head row:
 * Q row (b, h, i) at q_offset + b*q_batch + h*q_head + i*q_row, K row (b, h, j) at
 * k_offset + b*kv_batch + (h / kv_group)*kv_head + j*kv_row for every j < S_ext (the extra keys
 * were copied after each K/V head's S real ones), V row (b, h, j) at v_offset + the same.
 * kv_group is the number of query heads that share one K/V head (grouped-query attention:
 * H / H_kv; 1 for plain multi-head attention). The attention output
 * ctx (B*L, ctx_stride) holds the heads side by side: row (b, h, i) at
 * ctx_offset + (b*L + i) * ctx_stride + h*D (elements). */

/* attn_scores.comp: P[r, j] = scale * q_i · k_j + mask (masked = -inf; extra keys never masked). */
#define VKA_SCORES_Q 0           /* texel view */
#define VKA_SCORES_K 1           /* texel view */
#define VKA_SCORES_P 2           /* storage buffer, out */
#define VKA_SCORES_KEY_PADDING 3 /* bytes read as uint words */
#define VKA_SCORES_VALID_LENS 4  /* int */
#define VKA_SCORES_ATTN_MASK 5   /* bytes or floats */
#define VKA_SCORES_HEAD_TERMS 6  /* float (H', 2): ALiBi slopes, sinks (unused here) */
#define VKA_SCORES_BINDINGS 7
VKA_STRUCT(vka_scores_push) {
    uint32_t L, S, S_ext, H;
    uint32_t q_offset, q_batch, q_head, q_row;
    uint32_t k_offset, kv_batch, kv_head, kv_row;
    uint32_t bh_begin, bh_count, i_begin, i_count;
    float scale;
    uint32_t mask_flags;
    uint32_t mask_heads;         /* heads in a per-head attn_mask (its dim 0 is B * mask_heads) */
    uint32_t tiles_j, tiles_i;
    uint32_t kv_group;           /* query heads per K/V head */
    float softcap;               /* with VKA_VARIANT_SOFTCAP */
    uint32_t window;             /* with VKA_VARIANT_WINDOW */
} VKA_STRUCT_END(vka_scores_push)

/* attn_pv.comp: ctx row (b, h, i) = sum_j P[r, j] v_j over the keys j in [j_begin, j_begin + j_count)
 * (D = DV * VEC, from the specialization constants). Long rows are split into key ranges summed in
 * order through an fp32 accumulator `acc` laid out like ctx (its own acc_offset). Flags
 * (VKA_SPEC_FLAGS): ACC_IN adds the accumulator's contents, ACC_OUT writes there instead of ctx. */
#define VKA_PV_P 0   /* texel view (R32F) */
#define VKA_PV_V 1   /* texel view */
#define VKA_PV_CTX 2 /* storage buffer, fp16 with OUT_F16 */
#define VKA_PV_ACC 3 /* storage buffer, fp32 */
#define VKA_PV_BINDINGS 4
#define VKA_PV_ACC_IN 1u
#define VKA_PV_ACC_OUT 2u
VKA_STRUCT(vka_pv_push) {
    uint32_t L, S_ext, H;
    uint32_t v_offset, kv_batch, kv_head, kv_row;
    uint32_t ctx_offset, ctx_stride, acc_offset;
    uint32_t bh_begin, bh_count, i_begin, i_count;
    uint32_t j_begin, j_count;
    uint32_t tiles_d, tiles_i;
    uint32_t kv_group;           /* query heads per K/V head */
} VKA_STRUCT_END(vka_pv_push)

/* attn_fused.comp: flash attention over a range of keys. One invocation owns TILE_A query rows of
 * one (b, h) and streams its keys in blocks of TILE_B with an online softmax; nothing of size
 * L x S is stored. Rows: bh in [bh_begin, +bh_count), i in [i_begin, +i_count).
 *
 * Keys: the key sequence j in [0, S_ext) (S real keys, then the extra keys) is cut into `parts`
 * parts of part_len keys, which run side by side (grid = parts x rows); within its part an
 * invocation visits [chunk_begin, chunk_begin + chunk_len) (relative to the part's start). A
 * long part is visited by several dispatches in turn, the softmax state carried between them.
 *
 * The softmax state of a row is its normalised partial output o (D floats) and log-sum-exp:
 * state row (s, bh - bh_begin, i - i_begin) at index ((s * bh_count + bh_local) * i_count + i_local)
 * in `state_lse`, times D in `state_o`. Flags (VKA_SPEC_FLAGS, compiled in only where used: a
 * buffer the kernel may both read and write makes lavapipe compile it ~3x slower): LOAD (start
 * from the stored state of its part), STORE (write the state, not ctx). Without STORE the
 * invocation writes its ctx rows and, with has_lse, lse[bh * L + i]. Parts are combined by
 * attn_merge.comp. Q, K, V and ctx are addressed as the comment above the scores kernel says. */
#define VKA_FUSED_LOAD 1u
#define VKA_FUSED_STORE 2u
#define VKA_FUSED_PREFETCH 4u /* attn_cm: the next block's K and V fetched during this one's matrix work */
#define VKA_FUSED_Q_F16 8u    /* attn_cm: Q holds fp16 values (else fp32; Q, K, V are storage buffers there) */
#define VKA_FUSED_K_F16 16u   /* attn_cm: K holds fp16 values */
#define VKA_FUSED_V_F16 32u   /* attn_cm: V holds fp16 values */
#define VKA_FUSED_TWO_STAGES 64u /* attn_cm: two staged K/V blocks, one workgroup barrier per block */
#define VKA_FUSED_WIDE 128u      /* attn_cm: Q, K, V fp16 read 8 values (two texels) per 16-byte load */
#define VKA_FUSED_REG_SOFTMAX 256u /* attn_cm: the softmax on the score matrices' elements in registers,
                                    rows met by XOR shuffles over ROW_LANES (device/matrix_rows.h) */
#define VKA_FUSED_REG_P 512u       /* attn_cm with REG_SOFTMAX: P made into A matrices from the score
                                      matrices' own elements (A_FROM_ACC), not through shared memory */
#define VKA_FUSED_MAP 1024u        /* attn_cm with an attn_mask: map the key blocks first, visit the open
                                      ones (where the loop budget leaves room for the map's loops) */
/* attn_cm with an attn_mask: the most real key blocks one workgroup visits, so that its map of them
 * (which blocks the mask leaves open to some row, which it leaves whole) fits in shared memory,
 * two bits a block */
#define VKA_FUSED_CM_MAP_BLOCKS 1024u
#define VKA_FUSED_Q 0            /* texel view (attn_cm: a storage buffer) */
#define VKA_FUSED_K 1            /* texel view (attn_cm: a storage buffer) */
#define VKA_FUSED_V 2            /* texel view (attn_cm: a storage buffer) */
#define VKA_FUSED_CTX 3          /* storage buffer, out, fp16 with OUT_F16 */
#define VKA_FUSED_KEY_PADDING 4  /* bytes read as uint words */
#define VKA_FUSED_VALID_LENS 5   /* int */
#define VKA_FUSED_ATTN_MASK 6    /* bytes or floats */
#define VKA_FUSED_LSE_OUT 7      /* float */
#define VKA_FUSED_STATE_O 8      /* float, read with LOAD, written with STORE */
#define VKA_FUSED_STATE_LSE 9    /* float */
#define VKA_FUSED_HEAD_TERMS 10  /* float (H', 2): ALiBi slopes, sinks */
#define VKA_FUSED_BINDINGS 11
VKA_STRUCT(vka_fused_push) {
    uint32_t L, S, S_ext, H;
    uint32_t bh_begin, bh_count, i_begin, i_count;
    uint32_t q_offset, q_batch, q_head, q_row;
    uint32_t k_offset, v_offset, kv_batch, kv_head, kv_row;
    uint32_t ctx_offset, ctx_stride;
    float scale;
    uint32_t mask_flags, mask_heads;
    uint32_t parts, part_len, chunk_begin, chunk_len;
    uint32_t has_lse;
    uint32_t kv_group;           /* query heads per K/V head */
    float softcap;               /* with VKA_VARIANT_SOFTCAP */
    uint32_t window;             /* with VKA_VARIANT_WINDOW */
} VKA_STRUCT_END(vka_fused_push)

/* attn_merge.comp: combines the states of `parts` parts of each row (layout as in attn_fused)
 * into ctx (and lse with has_lse): lse = log sum_s exp(lse_s), o = sum_s exp(lse_s - lse) o_s.
 * One invocation per texel of a row's head slice. */
#define VKA_MERGE_STATE_O 0   /* float */
#define VKA_MERGE_STATE_LSE 1 /* float */
#define VKA_MERGE_CTX 2       /* storage buffer, out, fp16 with OUT_F16 */
#define VKA_MERGE_LSE_OUT 3   /* float */
#define VKA_MERGE_META 4      /* uint, with RAGGED: the paged forward's sequences (see attn_paged) */
#define VKA_MERGE_BINDINGS 5
#define VKA_MERGE_RAGGED 1u   /* VKA_SPEC_FLAGS: rows (b, h, i) of the paged forward: row i of
                                 sequence b exists only below its new-token count, and its ctx row
                                 is the sequence's first row plus i (not b * L + i) */
VKA_STRUCT(vka_merge_push) {
    uint32_t L, H;
    uint32_t bh_begin, bh_count, i_begin, i_count;
    uint32_t parts;
    uint32_t ctx_offset, ctx_stride;
    uint32_t has_lse;
} VKA_STRUCT_END(vka_merge_push)

/* The paged KV cache (vkattn_kv_cache) and the forwards through it.
 *
 * Pools: K and V each (num_blocks, H_kv, block_size, D) in the cache's dtype; token `slot`
 * (= block * block_size + offset) of K/V head k is row (block * H_kv + k) * block_size + offset.
 * A row of a block format (Q8_0, Q4_0) is its D / 32 ggml blocks back to back, no padding:
 *
 *   row r at byte r * (D / 32) * B,  B = VKA_Q8_0_BYTES (34) or VKA_Q4_0_BYTES (18)
 *   +-------+----------------------------+-------+------------------
 *   | d f16 | 32 int8 q (Q8_0)           | d f16 | ...   block 1 of the row, then row r + 1
 *   |       | 16 bytes of nibbles (Q4_0) |       |
 *   +-------+----------------------------+-------+------------------
 *
 * exactly ggml's block_q8_0 / block_q4_0 arrays (a pool block per K/V head is a ggml tensor of
 * shape (D, block_size) in that type), so rows copy to and from ggml's caches byte for byte. B is
 * even but not a multiple of 4, so a block starts on an even byte: the kernels read and write the
 * pools as uint words (no 8- or 16-bit storage needed; kv_append through a storage buffer,
 * attn_paged through R32UI texel views), a block's first or last halfword sharing a word with its
 * neighbour (kv_quant.glsl). A quantized pool keeps one spare word after its last block, so that a
 * 4-byte read at an even offset may always fetch the word after. The kernels'
 * KV_QUANT builds take the format from VKA_SPEC_FLAGS (VKA_KV_Q4_0 set: Q4_0, else Q8_0), and
 * their pool offsets and strides are in bytes.
 * A forward's `meta` buffer (uint) holds, per sequence b of its batch, VKA_SEQ_WORDS words at
 * b * VKA_SEQ_WORDS, then the sequences' block tables, then per new token (t < T, the tokens of
 * the batch one sequence after another) its position, then per new token its slot, then (a
 * forward with a mask among the new tokens, VKA_PAGED_TREE) each sequence's mask: n rows of
 * ceil(n / 32) words for its n new tokens, bit j % 32 of word j / 32 of row i set when new token
 * i may attend to new token j. A token's slot is always the sequence's length before the forward
 * plus its index; its position is that too, unless the forward gave depths (a tree's tokens). */
#define VKA_SEQ_Q_START 0 /* the sequence's first row among the T new tokens */
#define VKA_SEQ_NEW 1     /* its new tokens this forward */
#define VKA_SEQ_LEN 2     /* its length with them: the keys it attends over */
#define VKA_SEQ_TABLE 3   /* where its block table (block ids, in order) starts in meta */
#define VKA_SEQ_MASK 4    /* where its mask rows start in meta (VKA_PAGED_TREE; else 0) */
#define VKA_SEQ_WORDS 5
#define VKA_QUANT_VALUES 32  /* values per block of a block format */
#define VKA_Q8_0_BYTES 34
#define VKA_Q4_0_BYTES 18
#define VKA_KV_Q4_0 4u       /* VKA_SPEC_FLAGS of the KV_QUANT builds: the pools hold Q4_0 (else Q8_0) */
#define VKA_PAGED_TREE 8u    /* VKA_SPEC_FLAGS of attn_paged: a mask among each sequence's new tokens
                                (meta's mask rows) replaces the causal rule among them, and the
                                tokens' positions are meta's (see attn_paged below) */
#define VKA_PAGED_PREFETCH 16u /* VKA_SPEC_FLAGS of attn_paged_lanes and attn_paged_quant_lanes: the
                                  next block's K and V rows (a block format's words) fetched during
                                  this one's work */
#define VKA_PAGED_POOL_F16 32u /* VKA_SPEC_FLAGS of attn_paged_lanes_storage: the pools hold fp16 (else fp32) */
#define VKA_PAGED_WIDE_K 128u /* VKA_SPEC_FLAGS of attn_paged_lanes_storage: fp16 K rows read 8 halves
                                  (two texels) per 16-byte load */
#define VKA_PAGED_WIDE_V 256u /* VKA_SPEC_FLAGS of attn_paged_lanes_storage: fp16 V rows read 8 halves
                                  per 16-byte load, by sets of lanes each adding some of a block's keys */
#define VKA_PAGED_Q_SHARED 64u /* VKA_SPEC_FLAGS of the lanes builds: the row tile's queries staged in
                                  shared memory once, read there by every block */

/* kv_append.comp: K and V rows of the new tokens (the projected, rotated K/V heads of the qkv
 * workspace: head k, token t at k_offset (v_offset) + k * head_stride + t * row_stride, elements)
 * into the pools at each token's slot, converted to the cache's dtype (OUT_F16 builds write fp16).
 * count = T * H_kv * D invocations, one element each; the KV_QUANT build quantizes a block of 32
 * values per invocation (count = T * H_kv * D / 32) and writes it as kv_quant.glsl says. */
#define VKA_APPEND_SRC 0  /* texel view (R) */
#define VKA_APPEND_META 1 /* uint */
#define VKA_APPEND_K 2    /* storage buffer, out */
#define VKA_APPEND_V 3    /* storage buffer, out */
#define VKA_APPEND_BINDINGS 4
VKA_STRUCT(vka_append_push) {
    uint32_t H_kv, D;
    uint32_t k_offset, v_offset, head_stride, row_stride;
    uint32_t slot_offset;        /* meta index of token 0's slot */
    uint32_t block_size;
    uint32_t count;
} VKA_STRUCT_END(vka_append_push)

/* attn_paged.comp: flash attention of the new tokens over their sequences' cached keys (the pools,
 * through the block tables), bottom-right causal: query i of sequence b sits at position
 * len - new + i and sees keys [0, len - new + i]. One invocation owns TILE_A rows of one
 * (sequence, K/V head): the pairs (i, h) of its kv_group query heads, so that K/V rows are read
 * once for the whole group (row r: i = i_begin + r / kv_group, h = k * kv_group + r % kv_group).
 * Queries of each sequence in [i_begin, i_begin + i_count) (cut so that split states fit), keys
 * in `parts` parts of part_len side by side (split-KV), merged by attn_merge (RAGGED) from the
 * state layout of attn_fused with bh = b * H + h, rows i - i_begin. Q row (t, h) at
 * h * q_head + t * q_row (texels of the qkv workspace); ctx row t at t * ctx_stride. K/V row of
 * token j of head k: block * block_stride + k * kv_head + (j % block_size) * kv_row, texels,
 * block = the table's entry j / block_size (in bytes for a block format, whose rows the KV_QUANT
 * build reads as uint words and dequantizes). Flags: VKA_FUSED_STORE (write the state, not ctx),
 * VKA_KV_Q4_0, VKA_PAGED_TREE: new token i sits at position meta[pos_offset + t] (t its row among
 * the T new tokens) and sees the cached keys (j < len - new, key j at position j) and those new
 * tokens j its mask row allows (at their meta positions); the window and ALiBi take positions. */
#define VKA_PAGED_Q 0         /* texel view */
#define VKA_PAGED_K 1         /* texel view, the cache's dtype; R32UI words for a block format;
                                 attn_paged_lanes_storage: a storage buffer */
#define VKA_PAGED_V 2         /* as K */
#define VKA_PAGED_CTX 3       /* storage buffer, out, fp16 with OUT_F16 */
#define VKA_PAGED_META 4      /* uint */
#define VKA_PAGED_STATE_O 5   /* float, written with STORE */
#define VKA_PAGED_STATE_LSE 6 /* float */
#define VKA_PAGED_HEAD_TERMS 7 /* float (H, 2): ALiBi slopes, sinks */
#define VKA_PAGED_BINDINGS 8
VKA_STRUCT(vka_paged_push) {
    uint32_t seqs, H, kv_group;
    uint32_t i_begin, i_count;
    uint32_t q_head, q_row;
    uint32_t block_stride, kv_head, kv_row, block_size;
    uint32_t ctx_stride;
    float scale;
    uint32_t parts, part_len;
    uint32_t tiles;              /* row tiles per (sequence, K/V head): ceil(kv_group * i_count / TILE_A) */
    float softcap;               /* with VKA_VARIANT_SOFTCAP */
    uint32_t window;             /* with VKA_VARIANT_WINDOW */
    uint32_t pos_offset;         /* with VKA_PAGED_TREE: meta index of token 0's position */
} VKA_STRUCT_END(vka_paged_push)

/* softmax.comp: rows of S_ext scores become probabilities, in place. A row is cut into `ranges`
 * key ranges of range_len keys side by side, one workgroup each (grid = rows x ranges). The mode is
 * VKA_SPEC_FLAGS: ROW (one range: the whole softmax in one pass), STATS (write each range's max and
 * sum of exp to `stats`), NORMALIZE (combine the row's range stats, then write the range's
 * probabilities). */
#define VKA_SOFTMAX_ROW 0u
#define VKA_SOFTMAX_STATS 1u
#define VKA_SOFTMAX_NORMALIZE 2u
#define VKA_SOFTMAX_P 0     /* float, read and written */
#define VKA_SOFTMAX_STATS_BUF 1 /* float: (max, sum, nan flag) per (row, range) */
#define VKA_SOFTMAX_HEAD_TERMS 2 /* float (H', 2): the sinks, with VKA_VARIANT_SINK */
#define VKA_SOFTMAX_BINDINGS 3
VKA_STRUCT(vka_softmax_push) {
    uint32_t rows, S_ext;
    uint32_t ranges, range_len;
    uint32_t group_count;        /* rows * ranges */
    uint32_t H, bh_begin, i_count; /* the rows' heads: row r is head (bh_begin + r / i_count) % H */
} VKA_STRUCT_END(vka_softmax_push)

/* average_heads.comp: W[(b*L + i) * S_ext + j] += inv_heads * sum of P rows of batch b's heads in
 * the chunk. */
#define VKA_AVERAGE_P 0 /* float */
#define VKA_AVERAGE_W 1 /* float, read and written */
#define VKA_AVERAGE_BINDINGS 2
VKA_STRUCT(vka_average_push) {
    uint32_t H, L, S_ext;
    uint32_t bh_begin, bh_count, i_begin, i_count;
    uint32_t b_begin, b_count;   /* batches the chunk touches */
    float inv_heads;
    uint32_t group_count;
} VKA_STRUCT_END(vka_average_push)

/* rope.comp: the projected Q or K made ready for attention, in place on head-major rows: an RMS
 * norm (NORM: each head's; NORM_ROW: a whole row's), then rotary position embedding. Row r of head
 * h of batch item b starts at offset + b*batch_stride + h*head_stride + r*row_stride (elements)
 * and sits at position pos_offset + r (or as VKA_ROPE_POSITIONS says); its `pairs` pairs are
 * (p, p + pairs) or, with gptj, (2p, 2p + 1), rotated by float(position) * freq[p], cos and sin
 * scaled by `factor`. count: invocations, batches*heads*rows*pairs without a norm and
 * batches*heads*rows with NORM; workgroups, batches*rows, with NORM_ROW. A norm is
 * x * rsqrt(mean(x^2) + eps) * w: NORM's w for head h at k_offset + d from head k_first on (K's
 * heads, where one dispatch serves Q and K) and at norm_offset + d before; NORM_ROW's at
 * norm_offset + h*dim + d. */
#define VKA_ROPE_X 0    /* storage buffer, read and written, fp16 with OUT_F16 */
#define VKA_ROPE_FREQ 1 /* texel view (R32F): inv_freq, `pairs` floats */
#define VKA_ROPE_META 2 /* uint, with POSITIONS */
#define VKA_ROPE_NORM_W 3 /* fp32 norm weights, with NORM or NORM_ROW */
#define VKA_ROPE_BINDINGS 4
#define VKA_ROPE_POSITIONS 1u /* VKA_SPEC_FLAGS: row r is at position meta[pos_offset + r] (the
                                 paged forward's tokens), not pos_offset + r */
#define VKA_ROPE_NORM 2u      /* VKA_SPEC_FLAGS: each head's RMS norm before rotating */
#define VKA_ROPE_NORM_ROW 4u  /* VKA_SPEC_FLAGS: the whole row's RMS norm before rotating */
VKA_STRUCT(vka_rope_push) {
    uint32_t offset, batch_stride, head_stride, row_stride;
    uint32_t heads, rows, pairs;
    uint32_t pos_offset;
    uint32_t gptj;
    uint32_t count;
    uint32_t dim;         /* elements of a head row (D) */
    uint32_t norm_offset; /* where the (first) heads' norm weights start */
    uint32_t k_first;     /* NORM: the first head whose weights are at k_offset (heads: none) */
    uint32_t k_offset;
    float eps;            /* with a norm */
    float factor;         /* the attention factor cos and sin are scaled by */
} VKA_STRUCT_END(vka_rope_push)

/* peak_fma.comp and peak_copy.comp: the microkernels behind vkattn_measure_peak. */
#define VKA_PEAK_WG_SIZE 64      /* local_size_x of both */
#define VKA_PEAK_CHAINS 32       /* independent vec4 FMA chains per invocation */
#define VKA_PEAK_OUT 0           /* peak_fma: one vec4 per invocation */
#define VKA_PEAK_SRC 0           /* peak_copy */
#define VKA_PEAK_DST 1
VKA_STRUCT(vka_peak_push) {
    uint32_t iterations; /* FMA loop trips */
    uint32_t count;      /* vec4 elements to copy */
    float multiplier, addend;
} VKA_STRUCT_END(vka_peak_push)

/* coopmat_layout.comp: which elements of an fp32 accumulator matrix and of an fp16 A matrix each
 * invocation holds (one subgroup; src/device/matrix_rows.h reads it). */
/* attn_cm's REG_SOFTMAX on such a layout: element e's row class, class k's first element (C and
 * GLSL: test_plan runs the kernel's reduction on made-up layouts with these) */
#define VKA_ROW_CLASS(e, run, classes) ((e) / (run) % (classes))
#define VKA_CLASS_ELEMENT(k, run) ((k) * (run))
/* the accumulator element at the place of an A matrix's element e: 4 bits each, up to 8 elements */
#define VKA_A_FROM_ACC(word, e) (((word) >> (4u * (e))) & 15u)
#define VKA_LAYOUT_OUT 0 /* per invocation `stride` words: the accumulator's element count, then each
                            element's r x MAT_N + c; from word 1 + MAT_M x MAT_N on the same for the
                            A matrix (MAT_M x MAT_K, r x MAT_K + c) */
VKA_STRUCT(vka_layout_push) {
    uint32_t stride; /* words per invocation: 2 + MAT_M x (MAT_N + MAT_K) */
} VKA_STRUCT_END(vka_layout_push)

#ifdef VKA_GLSL
/* The linear workgroup index of a folded 3-d grid. */
uint vka_group_index()
{
    return gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
}

/* Byte `index` of a buffer of bytes read as uint words (bool masks): no 8-bit storage needed. */
#define VKA_LOAD_BYTE(words, index) (((words)[(index) >> 2] >> (((index) & 3u) * 8u)) & 0xFFu)
#endif

#endif
