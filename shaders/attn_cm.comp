#version 450
/*
 * attn_cm.comp — attn_fused.comp's flash attention (FlashAttention-2 style) on cooperative matrices
 * (VK_KHR_cooperative_matrix): the same contract (vka_fused_push, its key parts and chunks, the
 * softmax state that attn_merge.comp combines, every mask, grouped-query heads, the variants,
 * VKA_FUSED_LOAD / STORE), with fp16 operands and fp32 sums. The plan picks it only under a tuning
 * that asks for it (src/device/tuning.c) and where the head dim is whole matrices.
 *
 * A workgroup of NSG subgroups owns TILE_A = NSG x RF x MAT_M query rows of one (b, h) and one key
 * part (or chunk of it): each subgroup RF row matrices of MAT_M rows (ROW_FRAGS; every K and V
 * matrix a subgroup loads from shared memory then feeds RF multiply-adds, as FlashAttention-2's
 * warps own 32 or more rows). Q is staged through shared memory once (in passes of TILE_K head dims
 * where the tile has more rows than two blocks of keys), rounded to fp16, and kept as each
 * subgroup's MAT_M x MAT_K fragments (RF x D / MAT_K of them). Per block of TILE_B keys the invocations
 * stage K's and V's rows into shared memory as fp16 (with FLAGS' VKA_FUSED_PREFETCH the next
 * block's rows are fetched into registers during this block's work, and staged from there at the
 * next block; with VKA_FUSED_TWO_STAGES shared memory holds two blocks and the next is staged into
 * the other during this one's work, fetched a block ahead: one workgroup barrier per block instead
 * of two); each subgroup computes its SGR x TILE_B scores (RF matrices of MAT_M rows)
 * S = Q·K^T (fp32 accumulators) and stores them to its scratch; ROW_LANES invocations per row apply
 * the scale, variants and masks (attention_common.glsl) to a share of its scores each, meet by
 * subgroup shuffles, and update the row's online softmax (reference m and sum l, fp32), writing the
 * probabilities as fp16 P. The running output O stays in accumulators (RF x D / MAT_N per subgroup): O
 * += P·V by cooperative multiply-add. KHR matrices have no row access, so the rows' rescale
 * factors reach O as a matrix (each row its factor) through the scratch, one component-wise
 * multiply per fragment and block. At the end O goes out through the scratch, times 1 / l.
 *
 * With FLAGS' VKA_FUSED_REG_SOFTMAX (where the device's accumulator layout allows: the host reads
 * it once per context with coopmat_layout.comp, device/matrix_rows.h) the scores stay in their
 * accumulators: KHR matrices say nothing of which element is which, but a matrix loaded from
 * (r, c) = r x MAT_N + c tells each invocation the row and column of each element it holds, and
 * on a layout where a row's elements sit at the same indices of an aligned group of ROW_LANES
 * invocations (element e in row class (e / ROW_RUN) % ROW_CLASSES) a row's max and sum are the
 * invocation's elements of one class, then XOR shuffles. Each invocation keeps a softmax state per
 * class, scales and masks its elements where they are, stores P a matrix at a time (fp16) and
 * scales O's elements by its classes' factors, and a stored state comes in and the
 * output goes out element by element where they are: no scratch per subgroup (so two staged
 * blocks fit where the scores would not). P still passes through shared memory (a KHR
 * accumulator cannot become an A operand), except with VKA_FUSED_REG_P: where the device's fp16
 * A matrix holds, in each invocation, the places its accumulator's elements hold (the host read
 * both layouts, device/matrix_rows.h), P's A matrices are copied from the score matrices'
 * elements in that order (A_FROM_ACC), as FlashAttention-2 keeps P in registers.
 *
 * The COOPMAT2 build (kernel attn_cm2, where the context enabled VK_NV_cooperative_matrix2's
 * reductions, conversions and per-element operations) keeps the softmax in the matrices: the
 * scale, variants and masks are a per-element function of each score's row and column
 * (cm2_score), the block's row max and the rows' sums are row reductions, the rescale factors and
 * P = exp(X - m) per element, and P is converted to an fp16 A matrix for P·V; the rows' running
 * m, l and NaN flag are matrices holding each row's value in all its columns, turned from and into
 * the per-row scalars once per workgroup (so the state, sinks and lse are the KHR build's); a row
 * turned NaN carries NaN in l. Only K and V pass through shared memory. It needs MAT_N = MAT_K (P,
 * M x N, becomes an M x K matrix) and an fp16 accumulator of M x N (the conversion's way; P is
 * rounded to fp16 per element first, so the conversions are exact). Mesa 26 lavapipe keeps more
 * than fp16 in these matrices and roundings (docs/KNOWN_ISSUES.md).
 *
 * Masked keys never contribute: a masked score becomes -inf (probability 0) whatever K held, and V
 * is staged with every non-finite element replaced by 0, so 0 x V adds nothing. A key whose V row
 * held NaN or inf and that a row does see with a non-zero probability makes that row's context NaN
 * (its P is NaN; where attn_fused.comp gives inf or NaN in the affected elements), its lse stays
 * the scores' (as the CPU path's). A row with no visible key gets a zero context (lse = -inf); a
 * NaN score makes the row NaN, lse too; the sink starts part 0's first chunk. With an attn_mask
 * (MAP: where the workgroup's key span fits one map and the loop budget leaves room) the
 * workgroup first maps its key blocks and visits only those the mask leaves open to one of its
 * rows; a block the mask leaves whole (all terms 0) skips the per-element mask reads.
 * The probabilities are rounded to fp16 before P·V, and l sums the rounded values.
 *
 * Grid: parts * bh_count * ceil(i_count / TILE_A) workgroups of WG_SIZE = NSG x the subgroup size;
 * the pipeline requires that size with full subgroups (src/pipeline/pipeline_cache.c) and subgroup
 * shuffles (the plan takes attn_fused on a device without them).
 * Bindings: VKA_FUSED_* (abi.h). Specialization: TILE_A (query rows, a multiple of ROW_FRAGS x MAT_M;
 * ROW_FRAGS: 1 in the COOPMAT2 build, whose row state is one matrix's), TILE_B
 * (keys per block, a multiple of MAT_N and MAT_K, at most 64: two words of bad-key bits), DV, VEC (4: D = 4 DV, a multiple of MAT_N and
 * MAT_K, which are multiples of 8: the staged f16vec4 rows keep matrix offsets 16-byte aligned), MAT_M, MAT_N, MAT_K, ROW_LANES (a power of two dividing the subgroup size and TILE_B;
 * REG_SOFTMAX: the layout's lanes a row), ROW_RUN and ROW_CLASSES (REG_SOFTMAX: the layout's
 * element classes), TILE_K (Q's head dims staged per pass), ATTN_MASK, FLAGS (VKA_FUSED_LOAD,
 * STORE, PREFETCH, TWO_STAGES, Q_F16, K_F16, V_F16: the storage buffers' element types, WIDE: all
 * three fp16, read two texels per 16-byte load, REG_SOFTMAX, REG_P and MAP), VARIANT, A_FROM_ACC (REG_P:
 * the accumulator element of each of an A matrix's, 4 bits each).
 * Loop trips per invocation: the key-block loop, blocks + 1 (a block more where the real keys end
 * and the extra ones begin); with MAP also the map's pass, blocks + 1, and next_visit's,
 * once a visit plus the map's words (src/plan/attention.c, vka_fused_cm_loop_trips); every other
 * loop has a constant count and is unrolled.
 */
#extension GL_KHR_cooperative_matrix : require
#ifdef COOPMAT2
#extension GL_NV_cooperative_matrix2 : require
#endif
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

/* Q, K and V as storage buffers (storage_texels.glsl): fp32 or fp16 texels, as FLAGS' Q_F16,
 * K_F16 and V_F16 say. */
layout(std430, binding = VKA_FUSED_Q) readonly buffer Q_ { vec4 q32[]; };
layout(std430, binding = VKA_FUSED_Q) readonly buffer QH_ { uvec2 q16[]; };
layout(std430, binding = VKA_FUSED_Q) readonly buffer QW_ { uvec4 q16x8[]; }; /* VKA_FUSED_WIDE */
layout(std430, binding = VKA_FUSED_K) readonly buffer K_ { vec4 k32[]; };
layout(std430, binding = VKA_FUSED_K) readonly buffer KH_ { uvec2 k16[]; };
layout(std430, binding = VKA_FUSED_K) readonly buffer KW_ { uvec4 k16x8[]; };
layout(std430, binding = VKA_FUSED_V) readonly buffer V_ { vec4 v32[]; };
layout(std430, binding = VKA_FUSED_V) readonly buffer VH_ { uvec2 v16[]; };
layout(std430, binding = VKA_FUSED_V) readonly buffer VW_ { uvec4 v16x8[]; };
layout(std430, binding = VKA_FUSED_KEY_PADDING) readonly buffer Kpm_ { uint kpm[]; };
layout(std430, binding = VKA_FUSED_VALID_LENS) readonly buffer ValidLens_ { int valid_lens[]; };
layout(std430, binding = VKA_FUSED_ATTN_MASK) readonly buffer MaskBytes_ { uint mask_bytes[]; };
layout(std430, binding = VKA_FUSED_ATTN_MASK) readonly buffer MaskFloats_ { float mask_floats[]; };
layout(std430, binding = VKA_FUSED_LSE_OUT) writeonly buffer Lse_ { float lse[]; };
layout(std430, binding = VKA_FUSED_STATE_O) buffer StateO_ { float state_o[]; };
layout(std430, binding = VKA_FUSED_STATE_LSE) buffer StateLse_ { float state_lse[]; };
layout(std430, binding = VKA_FUSED_HEAD_TERMS) readonly buffer HeadTerms_ { float head_terms[]; };
layout(push_constant) uniform Push { vka_fused_push pc; };
#define VKA_WITH_MASKS
#define VKA_WITH_VARIANTS
#include "attention_common.glsl"
#include "storage_texels.glsl"
layout(std430, binding = VKA_FUSED_CTX) writeonly buffer Ctx_ { VKA_OUT_TYPE ctx[]; };

const uint WG = gl_WorkGroupSize.x;
#ifdef COOPMAT2
const uint RF = 1;                         /* the COOPMAT2 build's row state is one matrix's (the plan's rule) */
#else
const uint RF = ROW_FRAGS;                 /* MAT_M-row matrices per subgroup: each K or V matrix loaded
                                              from shared memory feeds RF multiply-adds */
#endif
#define ACC coopmat<float, gl_ScopeSubgroup, MAT_M, MAT_N, gl_MatrixUseAccumulator>       /* fp32 sums */
#define ACC16 coopmat<float16_t, gl_ScopeSubgroup, MAT_M, MAT_N, gl_MatrixUseAccumulator> /* one rounded to fp16 */
#define A16 coopmat<float16_t, gl_ScopeSubgroup, MAT_M, MAT_K, gl_MatrixUseA>            /* an A operand: Q's, P's */
const uint SGR = RF * MAT_M;               /* query rows per subgroup */
const uint NSG = TILE_A / SGR;             /* subgroups per workgroup */
const uint SG = WG / NSG;                  /* invocations per subgroup */
const uint D = DV * VEC;                   /* head dim */
const uint QF = D / MAT_K;                 /* Q fragments per subgroup (the reduction of S) */
const uint OF = D / MAT_N;                 /* output fragments per subgroup (the columns of O) */
const uint KF = TILE_B / MAT_N;            /* score fragments per block */
const uint PF = TILE_B / MAT_K;            /* P fragments per block (the reduction of P·V) */
const uint FRAG = MAT_M * MAT_N;
const uint EPL = (FRAG + SG - 1) / SG;     /* elements of an output fragment per invocation */
const uint RPP = SG / ROW_LANES;           /* rows of the subgroup per pass of the softmax */
const uint RPL = (SGR + RPP - 1) / RPP;    /* passes: rows of the subgroup per invocation */
const uint KPL = TILE_B / ROW_LANES;       /* keys of a block per invocation in the softmax */
/* REG_SOFTMAX: the softmax on the score matrices' own elements. Element e of an accumulator lies
 * in row class (e / ROW_RUN) % ROW_CLASSES, each row held by an aligned group of ROW_LANES
 * invocations at the same element indices (device/matrix_rows.h, read from the device once); an
 * invocation keeps one softmax state per class and row matrix. Otherwise RPL rows per invocation,
 * as above. */
const bool REG = (FLAGS & VKA_FUSED_REG_SOFTMAX) != 0;
/* REG_P: P·V's A matrices made from the score matrices' own elements, element e of A from the
 * accumulator's element VKA_A_FROM_ACC(A_FROM_ACC, e) (the same place, as the host read the
 * layouts: device/matrix_rows.h; MAT_N = MAT_K, so S's matrix c is P's matrix c), where KHR
 * matrices otherwise take P through shared memory (an accumulator is no A operand) */
const uint REG_P_FLAGS = VKA_FUSED_REG_SOFTMAX | VKA_FUSED_REG_P;
/* the plan's rule repeated (N = K, at most 8 elements of 4 bits), so that the copies and the map
 * stay in bounds whatever the flags say; a product, not REG && ...: glslang 15 emits such a
 * spec constant after its first use in an array length */
const bool REG_P = uint((FLAGS & REG_P_FLAGS) == REG_P_FLAGS) * uint(MAT_N == MAT_K) * uint(EPL <= 8) != 0;
const uint NR = REG ? RF * ROW_CLASSES : RPL; /* rows of the subgroup this invocation keeps a state for
                                                 (REG: state m x ROW_CLASSES + k, matrix m's class k) */
const uint STRIDE4 = DV + 2;               /* f16vec4 per staged row: 16 bytes of padding against bank conflicts */
const uint PSTRIDE = TILE_B + 8;
const uint SSTRIDE = TILE_B + 4;           /* floats per row of scores: 16 bytes of padding (the scores' stores;
                                              the softmax's reads are spread by its key rotation) */
const uint QD = TILE_K > 0 && TILE_K < D ? TILE_K : D; /* Q's head dims staged per pass (the plan's) */
const uint QDV = QD / 4, QSTRIDE4 = QDV + 2;
const uint STAGES = 1 + ((FLAGS & VKA_FUSED_TWO_STAGES) != 0 ? 1 : 0); /* K/V blocks staged at once */
const uint KV_BLOCK = 2 * TILE_B * STRIDE4;  /* one block: K's rows, then V's */
const uint KV_SPACE = STAGES * KV_BLOCK, Q_SPACE = TILE_A * QSTRIDE4;

/* Staged rows as f16vec4, so that an invocation stages a texel with one 8-byte store (the matrix
 * loads count offsets and strides in these elements). */
shared f16vec4 kv_s[KV_SPACE > Q_SPACE ? KV_SPACE : Q_SPACE]; /* Q's rows, QD dims at a time; then per block
                                                                K's rows, V's after them */
/* each subgroup's scratch: a stored state on its way in, per block its scores then its rows' rescale
 * factors, at the end O on its way out. The REG build needs none of it (its invocations know each
 * element's row and column): one accumulator, the layout map every subgroup loads, so that two
 * staged blocks fit where the scores would not (128 x 32 at D = 128 in 48 KiB). */
shared float s_s[REG ? FRAG : TILE_A * SSTRIDE];
shared float16_t p_s[REG_P ? MAT_M * MAT_K : TILE_A * PSTRIDE]; /* the probabilities (REG_P: the A
                                                                     matrix's layout map, once) */
shared float alpha_s[TILE_A];                 /* each row's rescale factor for this block; at the end 1 / l */
shared float poison_s[TILE_A];                /* NaN for a row that saw a NaN score, else 0 */
shared uint real_end_s;                       /* the keys past every row's limit are masked for all */
const uint BW = (TILE_B + 31) / 32;          /* bad-key words per block (TILE_B <= 64: at most 2) */
shared uint bad_keys_s[3 * BW];               /* bit c % 32 of word c / 32: key c of the block held a non-finite V
                                                 element (block n's words at n % 3 x BW; block n - 1's cleared
                                                 during block n) */
/* With an attn_mask (and VKA_FUSED_MAP), the map of the workgroup's real key blocks (bit n % 32 of
 * word n / 32 for block n; the plan keeps them within VKA_FUSED_CM_MAP_BLOCKS): */
const uint MAP_WORDS = (FLAGS & VKA_FUSED_MAP) != 0 ? VKA_FUSED_CM_MAP_BLOCKS / 32 : 1;
shared uint open_s[MAP_WORDS];                /* a term of the block is not -inf for some row (NaN counts) */
shared uint nonzero_s[MAP_WORDS];             /* a term of the block is not 0 (NaN counts) */

/* A load: one texel of 4 values, or with VKA_FUSED_WIDE (Q, K and V all fp16, every row starting
 * on a multiple of 8 elements) two, 8 halves in one 16-byte load: half the load and staging
 * instructions. Rows are counted in texels of 4 either way. */
const bool WIDE = (FLAGS & VKA_FUSED_WIDE) != 0;
const uint LT = WIDE ? 2 : 1;                       /* texels per load */
const uint Q_TEXELS = (TILE_A * (QDV / LT) + WG - 1) / WG; /* loads of a pass of Q's tile per invocation */
const uint KV_TEXELS = (TILE_B * (DV / LT) + WG - 1) / WG; /* of a block's K (and V) rows */

const bool Q_HALF = (FLAGS & VKA_FUSED_Q_F16) != 0, K_HALF = (FLAGS & VKA_FUSED_K_F16) != 0;
const bool V_HALF = (FLAGS & VKA_FUSED_V_F16) != 0;
/* the bits of the load at texel t (even with WIDE) */
uvec4 load_q(uint t) { return WIDE ? q16x8[t >> 1] : VKA_TEXEL_BITS(q32, q16, Q_HALF, t); }
uvec4 load_k(uint t) { return WIDE ? k16x8[t >> 1] : VKA_TEXEL_BITS(k32, k16, K_HALF, t); }
uvec4 load_v(uint t) { return WIDE ? v16x8[t >> 1] : VKA_TEXEL_BITS(v32, v16, V_HALF, t); }
/* texel h of a load's bits as fp16 (h 1: a WIDE load's second) */
f16vec4 load_f16(uvec4 r, uint h, bool fp16)
{
    return WIDE ? vka_texel8_f16(r, h) : vka_texel_f16(r, fp16);
}

/* This invocation's loads of `count` rows of `width` texels (row r at texel row_of(r)) into `regs`
 * as bits, through `load`: load t of the rows (LT texels each), for t = i x WG + the invocation. */
#define FETCH(regs, load, count, width, row_of)                                                     \
    [[unroll]] for (uint i_ = 0; i_ < (count * (width / LT) + WG - 1) / WG; i_++) {                 \
        uint t_ = i_ * WG + gl_LocalInvocationID.x, w_ = width / LT;                                \
        if ((count * w_) % WG == 0 || t_ < count * w_) regs[i_] = load(row_of(t_ / w_) + t_ % w_ * LT); \
    }

/* The loads FETCH gave this invocation into staged rows base.. (`stride4` apart) as fp16, a
 * texel per f16vec4; non-finite elements become 0 and set row r's bit of block bad_word's words where
 * asked. (A macro: shared arrays are not parameters.) */
#define STAGE(regs, base, count, width, stride4, fp16, check_bad, bad_word)                         \
    [[unroll]] for (uint i_ = 0; i_ < (count * (width / LT) + WG - 1) / WG; i_++) {                 \
        uint t_ = i_ * WG + gl_LocalInvocationID.x, w_ = width / LT;                                \
        if ((count * w_) % WG == 0 || t_ < count * w_) {                                            \
            uint r_ = t_ / w_;                                                                      \
            [[unroll]] for (uint h_ = 0; h_ < LT; h_++) {                                           \
                f16vec4 v_ = load_f16(regs[i_], h_, fp16);                                          \
                if (check_bad) { /* after the rounding: beyond fp16's range is infinite too */      \
                    bvec4 bad_ = bvec4(uvec4(isnan(v_)) | uvec4(isinf(v_)));                        \
                    if (any(bad_)) atomicOr(bad_keys_s[(bad_word) * BW + r_ / 32], 1u << (r_ % 32)); \
                    v_ = mix(v_, f16vec4(0.0), bad_);                                               \
                }                                                                                   \
                kv_s[(base + r_) * stride4 + t_ % w_ * LT + h_] = v_;                               \
            }                                                                                       \
        }                                                                                           \
    }

/* Block n's bad-key words (the second 0 where a block has one), and whether key c is bad. */
uvec2 block_bad(uint n)
{
    uint at = n % 3 * BW;
    return uvec2(bad_keys_s[at], BW > 1 ? bad_keys_s[at + 1] : 0u);
}
bool key_bad(uvec2 bad, uint c) { return ((c < 32 ? bad.x : bad.y) >> (c % 32) & 1u) != 0u; }
/* The KHR builds' P for key c of a block with bad-key words `bad`: NaN for a key whose V held a
 * non-finite value (staged as 0) seen with a non-zero probability, so that the row's O turns NaN
 * while l and the lse stay the scores'; else p (`bad` is the workgroup's: most blocks skip the
 * per-key test). */
float16_t pv_weight(float16_t p, uvec2 bad, uint c)
{
    return (bad.x | bad.y) != 0u && p != float16_t(0.0) && key_bad(bad, c) ? float16_t(0.0 / 0.0) : p;
}

/* Query il's row (of i_count) of the stored state of (part, head) pair `pair` = part x bh_count +
 * the pair's head: D floats of state_o, one of state_lse. */
uint state_row(uint pair, uint il) { return pair * pc.i_count + il; }

/* Element col of query il's output for head h of batch item b: into the stored state's row st
 * (VKA_FUSED_STORE), else into the context. */
void store_output(uint st, uint il, uint b, uint h, uint col, float value)
{
    if ((FLAGS & VKA_FUSED_STORE) != 0) state_o[st * D + col] = value;
    else ctx[pc.ctx_offset + (b * pc.L + pc.i_begin + il) * pc.ctx_stride + h * D + col] = VKA_TO_OUT(value);
}

/* Whether a row sees the block of keys [j0, j0 + TILE_B) whole (no mask reaches into it: most
 * blocks of a long row), so that its scores skip the per-key mask tests, which cost a quarter of
 * the kernel's time on an H100. `end`: the keys' end for the block (real or extra keys); the row's
 * limit and first key (vka_row_limit, vka_window_start); `zero`: the attn_mask's terms of the
 * block are all 0 for the workgroup's rows (adding them changes no score). */
bool block_whole(uint j0, uint end, bool real, uint limit, uint first, bool zero)
{
    return j0 + TILE_B <= end && (!real || (j0 + TILE_B <= limit && j0 >= first &&
                                            (pc.mask_flags & VKA_MASK_KEY_PADDING) == 0 &&
                                            (ATTN_MASK == 0 || (pc.mask_flags & VKA_MASK_ATTN) == 0 || zero)));
}

/* The first block at or after block x that the workgroup visits: with an attn_mask (`mapped`) the
 * next real block its map marks open, else x (the extra keys' blocks are never masked). A real
 * block past the last open one gives real_blocks. Workgroup-uniform: the map is read only after
 * the barrier that ends its pass. The loop's trips over all calls of one workgroup are at most its
 * map's words. */
uint next_visit(uint x, uint real_blocks, bool mapped)
{
    if (!mapped || x >= real_blocks) return x;
    uint w = x / 32, last = (real_blocks - 1) / 32, bits = open_s[w] & (~0u << (x % 32));
    while (bits == 0u && w < last) bits = open_s[++w];
    return bits != 0u ? w * 32 + uint(findLSB(bits)) : real_blocks;
}

/* Score s of key j for the query row whose qk is i + S - L (query i; its limit and first key):
 * scaled, the variants applied, -inf where the row may not see the key, the attn_mask added. With
 * `whole` (block_whole) the mask tests are left out: the KHR builds call it with a constant or a
 * per-row value, so the tests compile out where the block is whole. */
float masked_score(float s, uint j, uint end, bool real, bool whole, uint b, uint h, uint limit, uint first, int qk)
{
    if (whole) return vka_variant_score(s * pc.scale, h, int(j) - qk);
    const uint i = uint(qk - int(pc.S) + int(pc.L));
    bool ok = j < end && (!real || (pc.mask_flags & VKA_MASK_KEY_PADDING) == 0 || vka_key_visible(b, j));
    ok = ok && (!real || (j < limit && j >= first));
    float x = ok ? vka_variant_score(s * pc.scale, h, int(j) - qk) : -1.0 / 0.0;
    if (ATTN_MASK != 0 && real && (pc.mask_flags & VKA_MASK_ATTN) != 0 && j < end)
        x = vka_add_mask(x, vka_mask_term(b, h, i, j));
    return x;
}

/* Key t of an invocation's share of a block in the softmax: t x ROW_LANES + rot, modulo the
 * block (rot < TILE_B: its lane of the row, plus the row's rotation). */
uint rotated_key(uint t, uint rot)
{
    uint c = t * ROW_LANES + rot;
    return c >= TILE_B ? c - TILE_B : c;
}

/* acc[at + m x step] = S for the subgroup's row matrix m (each of RF) and the block's keys
 * c * MAT_N..: Q·K^T, K's rows as the columns of B (column-major), the block staged at kv_s[kv0];
 * each K matrix loaded once for the RF row matrices. Both builds. */
#define BLOCK_SCORES(acc, at, step, c)                                                              \
    [[unroll]] for (uint f_ = 0; f_ < QF; f_++) {                                                   \
        coopmat<float16_t, gl_ScopeSubgroup, MAT_K, MAT_N, gl_MatrixUseB> kf_;                      \
        coopMatLoad(kf_, kv_s, kv0 + (c) * MAT_N * STRIDE4 + f_ * MAT_K / 4, STRIDE4,              \
                    gl_CooperativeMatrixLayoutColumnMajor);                                         \
        [[unroll]] for (uint m_ = 0; m_ < RF; m_++)                                                 \
            acc[(at) + m_ * (step)] = coopMatMulAdd(qf[m_ * QF + f_], kf_, acc[(at) + m_ * (step)]); \
    }

/* o[m x OF + f] += P·V for output columns f * MAT_N.. of each row matrix m, P as the subgroup's A
 * matrices pf (PF per row matrix); each V matrix loaded once for the RF row matrices. Both builds. */
#define ADD_PV(f)                                                                                   \
    [[unroll]] for (uint c_ = 0; c_ < PF; c_++) {                                                   \
        coopmat<float16_t, gl_ScopeSubgroup, MAT_K, MAT_N, gl_MatrixUseB> vf_;                      \
        coopMatLoad(vf_, kv_s, kv0 + (TILE_B + c_ * MAT_K) * STRIDE4 + (f) * MAT_N / 4, STRIDE4,   \
                    gl_CooperativeMatrixLayoutRowMajor);                                            \
        [[unroll]] for (uint m_ = 0; m_ < RF; m_++)                                                 \
            o[m_ * OF + (f)] = coopMatMulAdd(pf[m_ * PF + c_], vf_, o[m_ * OF + (f)]);              \
    }

#ifdef COOPMAT2
/* The per-element and reduction functions of the COOPMAT2 build (GL_NV_cooperative_matrix2 calls
 * them with an element's row and column in its matrix). */
float cm2_max(const in float a, const in float b) { return max(a, b); }
float cm2_add(const in float a, const in float b) { return a + b; }
float cm2_max_of(const in uint row, const in uint col, const in float a, const in float b) { return max(a, b); }
float cm2_exp_sub(const in uint row, const in uint col, const in float a, const in float b) { return exp(a - b); }
/* the probability rounded to fp16 (as P·V takes it; l sums these) */
float cm2_probability(const in uint row, const in uint col, const in float x, const in float m)
{
    return float(float16_t(exp(x - m)));
}
/* exp(-inf - -inf) would be NaN: a row that has seen no key takes 0 as its reference */
float cm2_reference(const in uint row, const in uint col, const in float m) { return m == -1.0 / 0.0 ? 0.0 : m; }

/* Score (row, col) of a fragment whose first key is j0 and whose first row is il_first (of
 * i_count): masked_score with the mask tests, the row's limit and first key derived here (a
 * per-element operation has no per-row state). */
float cm2_score(const in uint row, const in uint col, const in float s, const in uint j0, const in uint il_first,
                const in uint b, const in uint h, const in uint end, const in uint real)
{
    uint i = pc.i_begin + min(il_first + row, pc.i_count - 1);
    int qk = int(i) + int(pc.S) - int(pc.L);
    return masked_score(s, j0 + col, end, real != 0, false, b, h, vka_row_limit(b, i), vka_window_start(qk), qk);
}

/* p as the row's sum counts it: NaN where the score is NaN, so that l (and the lse) carries the
 * row's NaN flag */
float cm2_counted(const in uint row, const in uint col, const in float p, const in float x)
{
    return isnan(x) ? 0.0 / 0.0 : p;
}
/* p as P·V takes it: NaN for a key whose V held a non-finite value (bit c0 + col of `bad`) seen
 * with a non-zero probability, so that the row's O turns NaN (its V was staged as 0) while l and
 * the lse, which depend on the scores alone, stay as the scores make them */
float cm2_weight(const in uint row, const in uint col, const in float p, const in uint bad, const in uint c0)
{
    return p != 0.0 && (bad & (1u << (c0 + col))) != 0 ? 0.0 / 0.0 : p;
}
#endif

void main()
{
    /* One workgroup per (part, head, query tile): padding workgroups of a folded grid leave whole,
     * before any barrier. Query tiles go last first, every head's before the next tile: under a
     * causal mask the later rows see the most keys, and a GPU starts workgroups roughly in order,
     * so the longest start first and the last wave is the short ones (as FlashAttention-2 orders
     * its blocks); neighbouring heads (a GQA group's K and V) run side by side. */
    uint group = vka_group_index();
    uint q_blocks = (pc.i_count + TILE_A - 1) / TILE_A;
    uint tiles = pc.bh_count * q_blocks;
    uint part_index = group / tiles;
    if (part_index >= pc.parts) return;
    uint bh_local = group % tiles % pc.bh_count, il0 = (q_blocks - 1 - group % tiles / pc.bh_count) * TILE_A;
    uint bh = pc.bh_begin + bh_local, b = bh / pc.H, h = bh % pc.H;
    uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    const float neg_inf = -1.0 / 0.0;
    const bool load_state = (FLAGS & VKA_FUSED_LOAD) != 0, store_state = (FLAGS & VKA_FUSED_STORE) != 0;

    /* REG: which row and column of an accumulator each of this invocation's elements is, from a
     * matrix whose element (r, c) holds r x MAT_N + c, which the workgroup writes into s_s:
     * class k's row, and element e's column. The layout was read by another pipeline: where this
     * one's differs from what the constants say (each element in its class's row, a class's row
     * the same across the row's lanes), every row turns NaN, so the build fails its self-test
     * and the shared-memory softmax takes over, rather than answers going wrong. */
    const uint scratch = sg * SGR * SSTRIDE; /* the subgroup's part of s_s (not REG) */
    uint class_row[ROW_CLASSES], elem_col[EPL];
    /* a row's group and class hold MAT_N elements, the classes' runs tile the elements */
    bool layout_ok = !REG || (EPL % (ROW_RUN * ROW_CLASSES) == 0 && EPL / ROW_CLASSES * ROW_LANES == MAT_N);
    if (REG) /* the map, one for every subgroup (read after the barrier below); REG_P: A's too */
        [[unroll]] for (uint e = 0; e < (FRAG + WG - 1) / WG; e++) {
            uint at = e * WG + gl_LocalInvocationID.x;
            if (FRAG % WG == 0 || at < FRAG) s_s[at] = float(at);
            if (REG_P && (FRAG % WG == 0 || at < FRAG)) p_s[at] = float16_t(at); /* M x K = M x N, exact below 2048 */
        }
    if (gl_LocalInvocationID.x == 0) real_end_s = 0;
    if (gl_LocalInvocationID.x < 3 * BW) bad_keys_s[gl_LocalInvocationID.x] = 0;
    [[unroll]] for (uint e = 0; e < (MAP_WORDS + WG - 1) / WG; e++) {
        uint at = e * WG + gl_LocalInvocationID.x;
        if (MAP_WORDS % WG == 0 || at < MAP_WORDS) open_s[at] = 0, nonzero_s[at] = 0;
    }
    barrier();
    if (REG) {
        ACC map;
        coopMatLoad(map, s_s, 0, MAT_N, gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint e = 0; e < EPL; e++) elem_col[e] = uint(map[e]) % MAT_N;
        [[unroll]] for (uint k = 0; k < ROW_CLASSES; k++)
            class_row[k] = uint(map[min(VKA_CLASS_ELEMENT(k, ROW_RUN), EPL - 1)]) / MAT_N;
        [[unroll]] for (uint e = 0; e < EPL; e++)
            layout_ok = layout_ok && uint(map[e]) / MAT_N == class_row[VKA_ROW_CLASS(e, ROW_RUN, ROW_CLASSES)];
        [[unroll]] for (uint k = 0; k < ROW_CLASSES; k++)
            [[unroll]] for (uint d = 1; d < ROW_LANES; d *= 2)
                layout_ok = layout_ok && subgroupShuffleXor(class_row[k], d) == class_row[k];
        if (REG_P) { /* each of A's elements at the place of the accumulator element it comes from */
            A16 a_map;
            coopMatLoad(a_map, p_s, 0, MAT_K, gl_CooperativeMatrixLayoutRowMajor);
            layout_ok = layout_ok && a_map.length() == int(EPL);
            [[unroll]] for (uint e = 0; e < EPL; e++)
                layout_ok = layout_ok && uint(float(a_map[e])) == uint(map[VKA_A_FROM_ACC(A_FROM_ACC, e)]);
        }
        [[unroll]] for (uint d = 1; d < SG; d *= 2) /* the whole subgroup's verdict (shuffles: no vote needed) */
            layout_ok = subgroupShuffleXor(uint(layout_ok), d) != 0 && layout_ok;
    }

    /* The running softmax of this invocation's rows: ROW_LANES invocations share each row, row
     * SG_ROW(k) of the subgroup's (lane / ROW_LANES + k * RPP; REG: row matrix k / ROW_CLASSES's
     * row of class k % ROW_CLASSES), each holding the row's state. Rows past i_count repeat the
     * last row (loads stay in bounds) and are not stored. */
#define SG_ROW(k) (REG ? (k) / ROW_CLASSES * MAT_M + class_row[(k) % ROW_CLASSES] : lane / ROW_LANES + (k) * RPP)
    float m[NR], l[NR];
    bool saw_nan[NR];
    uint limit[NR], first[NR], state[NR];
    int qk[NR];
    [[unroll]] for (uint k = 0; k < NR; k++) {
        /* r past the subgroup's rows (a pass not whole) shadows its last row and stores nothing */
        uint r = SG_ROW(k), row = sg * SGR + min(r, SGR - 1);
        uint il = min(il0 + row, pc.i_count - 1), i = pc.i_begin + il;
        m[k] = neg_inf;
        l[k] = 0.0;
        saw_nan[k] = !layout_ok;
        vka_sink_start(h, part_index == 0 && !load_state, m[k], l[k]);
        limit[k] = vka_row_limit(b, i);
        qk[k] = int(i) + int(pc.S) - int(pc.L);
        first[k] = vka_window_start(qk[k]);
        state[k] = state_row(part_index * pc.bh_count + bh_local, il);
        if (r < SGR) atomicMax(real_end_s, limit[k]);
        if (r < SGR && load_state) {
            /* A stored state is (o normalised, lse): as a running state that is m = lse, l = 1. */
            float x = state_lse[state[k]];
            saw_nan[k] = isnan(x);
            bool seen = !saw_nan[k] && x != neg_inf;
            m[k] = seen ? x : neg_inf;
            l[k] = seen ? 1.0 : 0.0;
        }
    }

    /* Q's rows of the tile into fp16 fragments, kept for every block: QD head dims of every row
     * at a time (the plan's: all D unless the tile has more query rows than two blocks of keys,
     * whose space they share), each pass's fragments loaded before the next pass overwrites it. */
    uint q_base = pc.q_offset + b * pc.q_batch + h * pc.q_head;
    A16 qf[RF * QF]; /* row matrix m's at m x QF */
    [[unroll]] for (uint qp = 0; qp < D / QD; qp++) {
#define Q_ROW(r) (q_base + (pc.i_begin + min(il0 + (r), pc.i_count - 1)) * pc.q_row + qp * QDV)
        if (qp > 0) barrier(); /* the last pass's fragments are loaded */
        uvec4 q_in[Q_TEXELS];
        FETCH(q_in, load_q, TILE_A, QDV, Q_ROW)
        STAGE(q_in, 0, TILE_A, QDV, QSTRIDE4, Q_HALF, false, 0)
        barrier(); /* the pass is staged (the first: real_end_s is final too) */
        [[unroll]] for (uint mi = 0; mi < RF; mi++)
            [[unroll]] for (uint f = 0; f < QD / MAT_K; f++)
                coopMatLoad(qf[mi * QF + qp * (QD / MAT_K) + f], kv_s, (sg * SGR + mi * MAT_M) * QSTRIDE4 + f * MAT_K / 4,
                            QSTRIDE4, gl_CooperativeMatrixLayoutRowMajor);
    }
    uint real_end = real_end_s;

    /* The running output, O = sum of p x V over the keys so far (p relative to the row's m), as
     * accumulators: o[m x OF + f] holds columns f * MAT_N.. of the subgroup's row matrix m. A
     * stored state comes in through the subgroup's scratch (REG: each element from its row and
     * column). */
    ACC o[RF * OF];
    [[unroll]] for (uint mf = 0; mf < RF * OF; mf++) {
        const uint mi = mf / OF, f = mf % OF;
        o[mf] = ACC(0.0);
        if (load_state && REG) {
            [[unroll]] for (uint e = 0; e < EPL; e++)
                o[mf][e] = state_o[state[mi * ROW_CLASSES + VKA_ROW_CLASS(e, ROW_RUN, ROW_CLASSES)] * D + f * MAT_N +
                                   elem_col[e]];
        } else if (load_state) {
            [[unroll]] for (uint e = 0; e < EPL; e++) {
                uint at = e * SG + lane, row = sg * SGR + mi * MAT_M + at / MAT_N;
                uint st = state_row(part_index * pc.bh_count + bh_local, min(il0 + row, pc.i_count - 1));
                if (FRAG % SG == 0 || at < FRAG) s_s[scratch + at] = state_o[st * D + f * MAT_N + at % MAT_N];
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            coopMatLoad(o[mf], s_s, scratch, MAT_N, gl_CooperativeMatrixLayoutRowMajor);
            subgroupBarrier(); /* loaded before the next fragment overwrites the scratch */
        }
    }
    barrier(); /* every subgroup has its Q fragments before K overwrites them */

#ifdef COOPMAT2
    /* The rows' running state as matrices, each row's value in all its columns (through the
     * scratch): m, and l, NaN where the row has turned NaN. */
    ACC mm, ll;
#define ROWS_TO_MATRIX(dst, value)                                                                  \
    [[unroll]] for (uint k = 0; k < RPL; k++) {                                                     \
        uint r = lane / ROW_LANES + k * RPP;                                                        \
        if (r < SGR && lane % ROW_LANES == 0) alpha_s[sg * SGR + r] = (value);                      \
    }                                                                                               \
    subgroupMemoryBarrierShared();                                                                  \
    subgroupBarrier();                                                                              \
    [[unroll]] for (uint e = 0; e < EPL; e++) {                                                     \
        uint at = e * SG + lane;                                                                    \
        if (FRAG % SG == 0 || at < FRAG) s_s[scratch + at] = alpha_s[sg * SGR + at / MAT_N];        \
    }                                                                                               \
    subgroupMemoryBarrierShared();                                                                  \
    subgroupBarrier();                                                                              \
    coopMatLoad(dst, s_s, scratch, MAT_N, gl_CooperativeMatrixLayoutRowMajor);                      \
    subgroupBarrier();
    ROWS_TO_MATRIX(mm, m[k])
    ROWS_TO_MATRIX(ll, saw_nan[k] ? 0.0 / 0.0 : l[k])
#endif

    /* The workgroup's keys [k_lo, k_hi): the real ones some row can see, then the extra keys. Parts
     * count from the first row's window start (0 without a window): no row sees a key before. */
    uint part = vka_window_start(int(pc.i_begin + il0) + int(pc.S) - int(pc.L)) + part_index * pc.part_len;
    uint k_lo = part + pc.chunk_begin;
    uint k_hi = min(min(k_lo + pc.chunk_len, part + pc.part_len), pc.S_ext);
    uint real_hi = min(k_hi, min(real_end, pc.S)), extra_lo = max(k_lo, pc.S);
    uint real_blocks = real_hi > k_lo ? (real_hi - k_lo + TILE_B - 1) / TILE_B : 0;
    uint extra_blocks = k_hi > extra_lo ? (k_hi - extra_lo + TILE_B - 1) / TILE_B : 0;
    uint kv_base = b * pc.kv_batch + h / pc.kv_group * pc.kv_head; /* K/V head h / kv_group */
    const uint blocks = real_blocks + extra_blocks;
#define BLOCK_J0(n) ((n) < real_blocks ? k_lo + (n) * TILE_B : extra_lo + ((n) - real_blocks) * TILE_B)
#define BLOCK_END(n) ((n) < real_blocks ? real_hi : k_hi)

    /* An attn_mask's map: one pass over the terms of the workgroup's rows marks each real block
     * that some row may see (a term that is not -inf: NaN and +inf count) and each whose terms are
     * not all 0. The blocks loop visits the open ones only: a masked key never contributes, so a
     * block the mask hides from every row changes nothing (the upper half of a causal mask given
     * as a float mask, other documents' keys); and a block whose terms are all 0 (a bool mask:
     * all visible) takes the whole path, its terms read here only. The trip counts stay the
     * workgroup's: no matrix operation sits under a branch (docs/KNOWN_ISSUES.md). */
    const bool mapped = (FLAGS & VKA_FUSED_MAP) != 0 && ATTN_MASK != 0 && (pc.mask_flags & VKA_MASK_ATTN) != 0;
    if (mapped) {
        const uint TERMS = TILE_A * TILE_B; /* a block's terms for the workgroup's rows, key-fastest */
        for (uint n = 0; n < real_blocks; n++) {
            uint j0 = k_lo + n * TILE_B;
            bool open = false, nonzero = false;
            [[unroll]] for (uint e = 0; e < (TERMS + WG - 1) / WG; e++) {
                uint t = e * WG + gl_LocalInvocationID.x, j = j0 + t % TILE_B;
                if ((TERMS % WG == 0 || t < TERMS) && j < real_hi) {
                    float term = vka_mask_term(b, h, pc.i_begin + min(il0 + t / TILE_B, pc.i_count - 1), j);
                    open = open || term != neg_inf;
                    nonzero = nonzero || term != 0.0;
                }
            }
            /* the subgroup's verdict first (shuffles: no vote needed), then one atomic a subgroup */
            uint seen = (open ? 1u : 0u) | (nonzero ? 2u : 0u);
            [[unroll]] for (uint d = 1; d < SG; d *= 2) seen |= subgroupShuffleXor(seen, d);
            if (lane == 0u && (seen & 1u) != 0u) atomicOr(open_s[n / 32], 1u << (n % 32));
            if (lane == 0u && (seen & 2u) != 0u) atomicOr(nonzero_s[n / 32], 1u << (n % 32));
        }
        barrier(); /* the map is whole */
    }

    /* K's and V's rows of a block (the last key repeated past the end) into registers. PREFETCH:
     * block n + 1's are fetched once block n is staged, so their loads are in flight during block
     * n's matrix work (software pipelining, as FlashAttention-2 overlaps its K/V loads); without
     * it each block is fetched right before it is staged. */
    const bool prefetch = (FLAGS & VKA_FUSED_PREFETCH) != 0;
    uvec4 k_in[KV_TEXELS], v_in[KV_TEXELS];
    uint fetch_j0 = 0, fetch_end = 1; /* the block FETCH_BLOCK last fetched */
#define K_ROW(c) (pc.k_offset + kv_base + min(fetch_j0 + (c), fetch_end - 1) * pc.kv_row)
#define V_ROW(c) (pc.v_offset + kv_base + min(fetch_j0 + (c), fetch_end - 1) * pc.kv_row)
#define FETCH_BLOCK(n)                                                                              \
    {                                                                                               \
        fetch_j0 = BLOCK_J0(n), fetch_end = BLOCK_END(n);                                           \
        FETCH(k_in, load_k, TILE_B, DV, K_ROW)                                                      \
        FETCH(v_in, load_v, TILE_B, DV, V_ROW)                                                      \
    }
    /* Block n's K and V rows go to kv_s[stage x KV_BLOCK] (stage n % 2 with TWO_STAGES, else 0),
     * its bad-key bits to words n % 3 x BW.., which block n - 3 read and the end of block n - 2 cleared.
     * TWO_STAGES: block n + 1 is fetched before block n's matrix work and staged after it, into the
     * other stage, whose last reader (block n - 1) finished before the previous barrier. */
    const bool two_stages = STAGES == 2;
#define STAGE_BLOCK(n)                                                                              \
    {                                                                                               \
        uint rows_ = (two_stages ? (n) % 2 : 0) * 2 * TILE_B;                                       \
        STAGE(k_in, rows_, TILE_B, DV, STRIDE4, K_HALF, false, 0)                                   \
        STAGE(v_in, rows_ + TILE_B, TILE_B, DV, STRIDE4, V_HALF, true, (n) % 3)                     \
    }
    /* Visit n takes block `cur` (n counts the visits: the stages and bad-key words rotate by it),
     * the next visit block `next` (blocks: none). */
    uint cur = next_visit(0, real_blocks, mapped);
    if ((prefetch || two_stages) && cur < blocks) FETCH_BLOCK(cur)
    if (two_stages && cur < blocks) {
        STAGE_BLOCK(0)
        barrier(); /* the first block is staged */
    }
    for (uint n = 0; cur < blocks; n++) {
        const uint next = next_visit(cur + 1, real_blocks, mapped);
        bool real = cur < real_blocks;
        uint j0 = BLOCK_J0(cur), end = BLOCK_END(cur);
        bool zero = mapped && real && (nonzero_s[cur / 32] >> (cur % 32) & 1u) == 0u;
        uint kv0 = (two_stages ? n % 2 : 0) * KV_BLOCK;
        if (two_stages) {
            if (next < blocks) FETCH_BLOCK(next)
        } else {
            if (!prefetch) FETCH_BLOCK(cur)
            STAGE_BLOCK(n)
            barrier(); /* the block is staged */
            if (prefetch && next < blocks) FETCH_BLOCK(next)
        }

#ifndef COOPMAT2
        A16 pf[RF * PF]; /* P's A matrices: row matrix m's at m x PF + c */
        if (REG) {
            /* S = Q·K^T kept in registers; per element its score X (scale, variants, masks), each
             * class's block max (over the invocation's elements of the class, then XOR shuffles
             * across the row's ROW_LANES invocations), the row's new reference and rescale factor,
             * P = exp(X - m) rounded to fp16 into P's A matrices (REG_P) or p_s a matrix at a time,
             * the rows' sums the same way as the max, O rescaled on its elements. What the shared-memory build below does,
             * without the scores' and the factors' trips through the scratch. */
            ACC sc[RF * KF]; /* m x KF + c */
            [[unroll]] for (uint mc = 0; mc < RF * KF; mc++)
                sc[mc] = ACC(0.0);
            [[unroll]] for (uint c = 0; c < KF; c++) {
                BLOCK_SCORES(sc, c, KF, c)
            }
            uvec2 bad = block_bad(n);
            /* state k = m x ROW_CLASSES + the class: row matrix m's rows of that class */
            float cmax[NR], csum[NR], mref[NR], calpha[NR];
            bool cnan[NR], whole[NR], all_whole = true;
            [[unroll]] for (uint k = 0; k < NR; k++) {
                whole[k] = block_whole(j0, end, real, limit[k], first[k], zero);
                all_whole = all_whole && whole[k];
                cmax[k] = neg_inf, csum[k] = 0.0, cnan[k] = false;
            }
            /* X (x_of, from the element's score sc[mc][e] and key j) per element and the classes'
             * block maxima. RAW: a plain score (no softcap, no ALiBi) of a block every row of the
             * invocation sees whole is s x scale, and max(s) x scale is max(s x scale) (scale > 0:
             * problem/config.c; rounding is monotone), so the scores stay as Q·K^T made them and P
             * below takes the scale into its FMA. Otherwise where all its rows see the block whole
             * one branch with the mask tests compiled out, rather than a test per element. (The
             * branches hold element operations only.) */
#define MASK_SCORES(x_of)                                                                           \
    [[unroll]] for (uint mc = 0; mc < RF * KF; mc++) {                                              \
        [[unroll]] for (uint e = 0; e < EPL; e++) {                                                 \
            uint k = mc / KF * ROW_CLASSES + VKA_ROW_CLASS(e, ROW_RUN, ROW_CLASSES);                \
            uint j = j0 + mc % KF * MAT_N + elem_col[e];                                            \
            float x = (x_of);                                                                       \
            cnan[k] = cnan[k] || isnan(x);                                                          \
            cmax[k] = max(cmax[k], x);                                                              \
            sc[mc][e] = x;                                                                          \
        }                                                                                           \
    }
            const bool raw = (VARIANT & (VKA_VARIANT_SOFTCAP | VKA_VARIANT_ALIBI)) == 0 && all_whole;
            if (raw) {
                MASK_SCORES(sc[mc][e])
                [[unroll]] for (uint k = 0; k < NR; k++) cmax[k] *= pc.scale;
            } else if (all_whole) {
                MASK_SCORES(masked_score(sc[mc][e], j, end, real, true, b, h, limit[k], first[k], qk[k]))
            } else {
                MASK_SCORES(masked_score(sc[mc][e], j, end, real, whole[k], b, h, limit[k], first[k], qk[k]))
            }
#undef MASK_SCORES
            [[unroll]] for (uint k = 0; k < NR; k++) {
                [[unroll]] for (uint d = 1; d < ROW_LANES; d *= 2) cmax[k] = max(cmax[k], subgroupShuffleXor(cmax[k], d));
                float m_new = max(m[k], cmax[k]);
                mref[k] = m_new == neg_inf ? 0.0 : m_new; /* exp(-inf - -inf) would be NaN */
                calpha[k] = exp(m[k] - mref[k]);
                m[k] = m_new;
            }
            /* P = exp(X - m) = exp2(X log2(e) - m log2(e)) (RAW: X = s x scale, folded into the
             * same FMA) rounded to fp16, written back into the score matrix; REG_P: copied into
             * P's A matrix element by element (KF = PF), else stored whole, converted to fp16
             * (exact; the conversion keeps each element's row and column): the driver's own store
             * for a matrix, where element stores took one 16-bit store at a computed address each.
             * One store for both kinds of block: `raw` is each invocation's own, and a
             * cooperative store must not sit under a branch the subgroup may split on. */
            const float LOG2E = 1.4426950408889634;
            float cc = raw ? pc.scale * LOG2E : LOG2E, m2[NR];
            [[unroll]] for (uint k = 0; k < NR; k++) m2[k] = mref[k] * LOG2E;
            [[unroll]] for (uint mc = 0; mc < RF * KF; mc++) {
                [[unroll]] for (uint e = 0; e < EPL; e++) {
                    uint k = mc / KF * ROW_CLASSES + VKA_ROW_CLASS(e, ROW_RUN, ROW_CLASSES);
                    uint col = mc % KF * MAT_N + elem_col[e];
                    float16_t p = float16_t(exp2(fma(sc[mc][e], cc, -m2[k])));
                    csum[k] += float(p);
                    sc[mc][e] = float(pv_weight(p, bad, col));
                }
                if (REG_P)
                    [[unroll]] for (uint e = 0; e < EPL; e++) pf[mc][e] = float16_t(sc[mc][VKA_A_FROM_ACC(A_FROM_ACC, e)]);
                else
                    coopMatStore(ACC16(sc[mc]), p_s, (sg * SGR + mc / KF * MAT_M) * PSTRIDE + mc % KF * MAT_N, PSTRIDE,
                                 gl_CooperativeMatrixLayoutRowMajor);
            }
            /* a butterfly: every invocation of the row adds the same numbers in the same pairs */
            [[unroll]] for (uint k = 0; k < NR; k++) {
                [[unroll]] for (uint d = 1; d < ROW_LANES; d *= 2) {
                    csum[k] += subgroupShuffleXor(csum[k], d);
                    cnan[k] = subgroupShuffleXor(uint(cnan[k]), d) != 0 || cnan[k];
                }
                l[k] = l[k] * calpha[k] + csum[k];
                saw_nan[k] = saw_nan[k] || cnan[k];
            }
            /* O x alpha on the elements, and only where some row of the invocation has a new
             * maximum (a factor of 1 leaves O as it is; past a row's first blocks its maximum
             * seldom moves): element operations, each invocation's own, so that the branch holds
             * no cooperative operation (Mesa 26 lavapipe got those wrong under one: KNOWN_ISSUES) */
            bool moved = false;
            [[unroll]] for (uint k = 0; k < NR; k++) moved = moved || calpha[k] != 1.0;
            if (moved)
                [[unroll]] for (uint mf = 0; mf < RF * OF; mf++)
                    [[unroll]] for (uint e = 0; e < EPL; e++)
                        o[mf][e] *= calpha[mf / OF * ROW_CLASSES + VKA_ROW_CLASS(e, ROW_RUN, ROW_CLASSES)];
            if (!REG_P) {
                subgroupMemoryBarrierShared();
                subgroupBarrier(); /* P is visible to the subgroup */
            }
        } else {
            /* S = Q·K^T for the subgroup's rows, through its scratch for the softmax below. */
            [[unroll]] for (uint c = 0; c < KF; c++) {
                ACC acc[RF];
                [[unroll]] for (uint mi = 0; mi < RF; mi++)
                    acc[mi] = ACC(0.0);
                BLOCK_SCORES(acc, 0, 1, c)
                [[unroll]] for (uint mi = 0; mi < RF; mi++)
                    coopMatStore(acc[mi], s_s, scratch + mi * MAT_M * SSTRIDE + c * MAT_N, SSTRIDE,
                                 gl_CooperativeMatrixLayoutRowMajor);
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier(); /* the scores are visible to the subgroup's invocations */

            /* The online softmax, ROW_LANES invocations per row, meeting by XOR shuffles: scale, variants
             * and masks (an invisible score becomes -inf whatever the key held), then P as fp16 and the
             * row's rescale factor. A row's invocations take keys lane % ROW_LANES + t x ROW_LANES,
             * rotated by ROW_LANES x the row, so that a subgroup's reads of the scores fall in distinct
             * banks (32 lanes, 2 per row; 32-key blocks in rows of 32 or 36 floats: 16- or 2-way conflicts unrotated;
             * the padding is for the matrix stores, 8-way without it). */
            uvec2 bad = block_bad(n);
            [[unroll]] for (uint k = 0; k < RPL; k++) {
                uint r = SG_ROW(k), row = sg * SGR + min(r, SGR - 1);
                float s[KPL];
                float block_max = neg_inf;
                bool nan = false;
                uint rot = (ROW_LANES * r + lane % ROW_LANES) % TILE_B;
                /* the row's whole blocks take the loop without the mask tests (one branch per row) */
#define ROW_SCORES(WHOLE)                                                                           \
    [[unroll]] for (uint t = 0; t < KPL; t++) {                                                     \
        uint c = rotated_key(t, rot);                                                               \
        float x = masked_score(s_s[row * SSTRIDE + c], j0 + c, end, real, WHOLE, b, h, limit[k],     \
                               first[k], qk[k]);                                                    \
        nan = nan || isnan(x);                                                                      \
        block_max = max(block_max, x);                                                              \
        s[t] = x;                                                                                   \
    }
                if (block_whole(j0, end, real, limit[k], first[k], zero)) {
                    ROW_SCORES(true)
                } else {
                    ROW_SCORES(false)
                }
                [[unroll]] for (uint d = 1; d < ROW_LANES; d *= 2)
                    block_max = max(block_max, subgroupShuffleXor(block_max, d));
                float m_new = max(m[k], block_max);
                float m_ref = m_new == neg_inf ? 0.0 : m_new; /* exp(-inf - -inf) would be NaN */
                float alpha = exp(m[k] - m_ref), sum = 0.0;
                [[unroll]] for (uint t = 0; t < KPL; t++) {
                    uint c = rotated_key(t, rot);
                    float16_t p = float16_t(exp(s[t] - m_ref));
                    sum += float(p);
                    if (r < SGR) p_s[row * PSTRIDE + c] = pv_weight(p, bad, c);
                }
                /* a butterfly: every invocation of the row adds the same numbers in the same pairs */
                [[unroll]] for (uint d = 1; d < ROW_LANES; d *= 2) {
                    sum += subgroupShuffleXor(sum, d);
                    nan = subgroupShuffleXor(uint(nan), d) != 0 || nan;
                }
                l[k] = l[k] * alpha + sum;
                m[k] = m_new;
                saw_nan[k] = saw_nan[k] || nan;
                if (r < SGR && lane % ROW_LANES == 0) alpha_s[row] = alpha;
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier(); /* P and the factors are visible; the scores are read */

            /* O = O x alpha (alpha as a matrix, one row per query, through the scratch: one
             * component-wise multiply per fragment), then O += P·V. No branch around the matrix
             * operations: Mesa 26 lavapipe got O wrong with them under a condition, even one the whole
             * subgroup took alike (docs/KNOWN_ISSUES.md). */
            /* (row matrix m's factors at m x FRAG: the scratch holds SGR rows of at least MAT_N) */
            [[unroll]] for (uint e = 0; e < (RF * FRAG + SG - 1) / SG; e++) {
                uint at = e * SG + lane;
                if ((RF * FRAG) % SG == 0 || at < RF * FRAG) s_s[scratch + at] = alpha_s[sg * SGR + at / MAT_N];
            }
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            ACC a[RF]; /* each row's rescale factor */
            [[unroll]] for (uint mi = 0; mi < RF; mi++)
                coopMatLoad(a[mi], s_s, scratch + mi * FRAG, MAT_N, gl_CooperativeMatrixLayoutRowMajor);
            [[unroll]] for (uint mf = 0; mf < RF * OF; mf++) o[mf] = o[mf] * a[mf / OF];
        }
        if (!REG_P)
            [[unroll]] for (uint mc = 0; mc < RF * PF; mc++)
                coopMatLoad(pf[mc], p_s, (sg * SGR + mc / PF * MAT_M) * PSTRIDE + mc % PF * MAT_K, PSTRIDE,
                            gl_CooperativeMatrixLayoutRowMajor);
        [[unroll]] for (uint f = 0; f < OF; f++) {
            ADD_PV(f)
        }
#else
        /* The block in registers: per fragment of MAT_N keys S = Q·K^T, its masked scores X and
         * their row max; then the rows' new reference, the rescale factors, P = exp(X - m) rounded
         * to fp16 (l sums the rounded values), and O = O x alpha + P·V. Row values live in
         * matrices with the value in every column of its row (mm, ll); a row turned NaN has l NaN.
         * No branch around a matrix operation (docs/KNOWN_ISSUES.md). */
        uvec2 bad = block_bad(n);
        ACC xs[KF], block_max = ACC(-1.0 / 0.0);
        [[unroll]] for (uint c = 0; c < KF; c++) {
            ACC acc[1] = {ACC(0.0)};
            BLOCK_SCORES(acc, 0, 1, c)
            coopMatPerElementNV(xs[c], acc[0], cm2_score, j0 + c * MAT_N, il0 + sg * SGR, b, h, end, uint(real));
            ACC row_max;
            coopMatReduceNV(row_max, xs[c], gl_CooperativeMatrixReduceRowNV, cm2_max);
            coopMatPerElementNV(block_max, block_max, cm2_max_of, row_max);
        }
        ACC m_new, m_ref, alpha, sum = ACC(0.0);
        coopMatPerElementNV(m_new, mm, cm2_max_of, block_max);
        coopMatPerElementNV(m_ref, m_new, cm2_reference);
        coopMatPerElementNV(alpha, mm, cm2_exp_sub, m_ref);
        A16 pf[PF];
        [[unroll]] for (uint c = 0; c < KF; c++) {
            ACC p, weight, counted, row_sum;
            coopMatPerElementNV(p, xs[c], cm2_probability, m_ref);
            /* a fragment's keys lie in one word (MAT_N divides 32, or the block holds at most 32 keys:
             * the plan's rule) */
            coopMatPerElementNV(weight, p, cm2_weight, c * MAT_N < 32 ? bad.x : bad.y, c * MAT_N % 32);
            pf[c] = A16(ACC16(weight)); /* exact */
            coopMatPerElementNV(counted, p, cm2_counted, xs[c]);
            coopMatReduceNV(row_sum, counted, gl_CooperativeMatrixReduceRowNV, cm2_add);
            sum = sum + row_sum;
        }
        ll = ll * alpha + sum;
        mm = m_new;
        [[unroll]] for (uint f = 0; f < OF; f++) {
            o[f] = o[f] * alpha;
            ADD_PV(f)
        }
#endif
        /* block n - 1's word, read before the last barrier, for block n + 2 */
        if (gl_LocalInvocationID.x < BW) bad_keys_s[(n + 2) % 3 * BW + gl_LocalInvocationID.x] = 0;
        if (two_stages && next < blocks) STAGE_BLOCK(n + 1)
        barrier(); /* every subgroup is done with the block before the next is staged (two stages: and the
                      next is staged) */
        cur = next;
    }

#ifdef COOPMAT2
    /* back to each row's scalars */
#define MATRIX_TO_ROWS(src, value, TYPE)                                                            \
    coopMatStore(src, s_s, scratch, MAT_N, gl_CooperativeMatrixLayoutRowMajor);                     \
    subgroupMemoryBarrierShared();                                                                  \
    subgroupBarrier();                                                                              \
    [[unroll]] for (uint k = 0; k < RPL; k++)                                                       \
        value = TYPE(s_s[scratch + min(lane / ROW_LANES + k * RPP, SGR - 1) * MAT_N]);              \
    subgroupBarrier();
    MATRIX_TO_ROWS(mm, m[k], float)
    MATRIX_TO_ROWS(ll, l[k], float)
    [[unroll]] for (uint k = 0; k < RPL; k++) saw_nan[k] = isnan(l[k]);
#endif

    /* Each row's lse (or state), and 1 / l for the output; then the outputs, a fragment at a time
     * through the scratch (REG: each element from where it is, its row's 1 / l and NaN its class's). */
    float inv_l[NR], poison[NR];
    [[unroll]] for (uint k = 0; k < NR; k++) {
        inv_l[k] = l[k] > 0.0 ? 1.0 / l[k] : 0.0;
        poison[k] = saw_nan[k] ? 0.0 / 0.0 : 0.0;
        uint r = SG_ROW(k), row = sg * SGR + r;
        if (r < SGR && lane % ROW_LANES == 0) {
            uint il = il0 + row, i = pc.i_begin + min(il, pc.i_count - 1);
            float row_lse = saw_nan[k] ? 0.0 / 0.0 : l[k] > 0.0 ? m[k] + log(l[k]) : neg_inf;
            if (il < pc.i_count) {
                if (store_state) state_lse[state[k]] = row_lse;
                else if (pc.has_lse != 0) lse[bh * pc.L + i] = row_lse;
            }
            if (!REG) alpha_s[row] = inv_l[k], poison_s[row] = poison[k];
        }
    }
    if (REG) {
        [[unroll]] for (uint mf = 0; mf < RF * OF; mf++) {
            [[unroll]] for (uint e = 0; e < EPL; e++) {
                uint k = mf / OF * ROW_CLASSES + VKA_ROW_CLASS(e, ROW_RUN, ROW_CLASSES), il = il0 + sg * SGR + SG_ROW(k);
                if (il < pc.i_count)
                    store_output(state[k], il, b, h, mf % OF * MAT_N + elem_col[e], o[mf][e] * inv_l[k] + poison[k]);
            }
        }
        return;
    }
    subgroupMemoryBarrierShared();
    subgroupBarrier();
    [[unroll]] for (uint mf = 0; mf < RF * OF; mf++) {
        coopMatStore(o[mf], s_s, scratch, MAT_N, gl_CooperativeMatrixLayoutRowMajor);
        subgroupMemoryBarrierShared();
        subgroupBarrier(); /* the fragment is visible */
        [[unroll]] for (uint e = 0; e < EPL; e++) {
            uint at = e * SG + lane, row = sg * SGR + mf / OF * MAT_M + at / MAT_N, il = il0 + row;
            if ((FRAG % SG == 0 || at < FRAG) && il < pc.i_count)
                store_output(state_row(part_index * pc.bh_count + bh_local, il), il, b, h, mf % OF * MAT_N + at % MAT_N,
                             s_s[scratch + at] * alpha_s[row] + poison_s[row]);
        }
        subgroupBarrier(); /* read before the next fragment overwrites the scratch */
    }
}
