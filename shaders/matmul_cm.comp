#version 450
/*
 * matmul_cm.comp — C(M,N) = A(M,K) · B(N,K)^T + bias(N) on cooperative matrices
 * (VK_KHR_cooperative_matrix): matmul.comp's contract (vka_matmul_push, the output scatter, the
 * ACCUMULATE flag for later parts of a split reduction, fp16 or fp32 output) with fp16 operands and
 * fp32 sums. The plan picks it only under a tuning that asks for it (src/device/tuning.c).
 *
 * A workgroup of 2 x SUBGROUPS_N subgroups owns a TILE_A x TILE_B block of C. Per block of TILE_K reduction
 * elements its invocations stage A's and B's rows into shared memory, converted to fp16 (the one
 * rounding this path adds, see vkattn.h) and zero past the matrix edges, so that edge tiles need no
 * other care. Each subgroup then multiplies its (TILE_A/2) x (TILE_B/SUBGROUPS_N) part as MAT_M x MAT_N
 * accumulators from MAT_M x MAT_K fragments of A (row-major) and MAT_K x MAT_N fragments of B (B's
 * rows are the columns: column-major). With the PREFETCH flag the next block's texels are fetched
 * into registers before this block's multiplies and staged after them (software pipelining: GPU
 * GEMMs hide the loads' latency behind the matrix work so; on an H100 the Q/K/V projection took
 * 2.70 ms with it, 3.19 without: the tuning's cm_prefetch). With TWO_STAGES shared memory holds two blocks: block k + 1 is
 * staged into the other while block k multiplies, so each block takes one workgroup barrier instead
 * of two (its loads are always fetched a block ahead). The epilogue stores each
 * accumulator into the subgroup's scratch in shared memory; its invocations add the bias (and C,
 * with ACCUMULATE) and scatter the elements exactly as matmul.comp does. With DIRECT (where every
 * tile is whole, none crosses a batch item's rows or a block of C's columns and C's rows start on
 * 16 bytes: the plan's rule) each accumulator gets the bias on its elements (their columns read
 * from a loaded index matrix) and is stored whole into C by the driver's own store, converted to
 * fp16 with OUT_F16: no scratch, no per-element address (two runtime divisions each).
 *
 * Grid: ceil(M/TILE_A) * ceil(N/TILE_B) workgroups of WG_SIZE = 2 SUBGROUPS_N x the subgroup size; the pipeline
 * requires that size with full subgroups (src/pipeline/pipeline_cache.c).
 * Bindings: VKA_MATMUL_* (abi.h). Specialization: TILE_A, TILE_B (multiples of 2 MAT_M, SUBGROUPS_N MAT_N),
 * TILE_K (a multiple of MAT_K and of 8), MAT_M, MAT_N, MAT_K (the device's shape, MAT_K a multiple of
 * 8: the staged f16vec4 rows keep matrix offsets 16-byte aligned), VEC (elements per texel: 1, 4, or
 * 8 where A and B both hold fp16: one 16-byte load of 8 halves, staged as two f16vec4), FLAGS
 * (VKA_MATMUL_ACCUMULATE, VKA_MATMUL_PREFETCH, VKA_MATMUL_TWO_STAGES, VKA_MATMUL_DIRECT, and A_F16,
 * B_F16: the storage buffers' element types).
 * Loop trips per invocation: ceil(K / (TILE_K / VEC)) + 1, K in texels (the blocks; every other loop
 * has a constant count and is unrolled).
 */
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

/* A and B as storage buffers (storage_texels.glsl): fp32 or fp16 texels, as FLAGS' A_F16 and
 * B_F16 say. */
layout(std430, binding = VKA_MATMUL_A) readonly buffer A_ { vec4 a32[]; };
layout(std430, binding = VKA_MATMUL_A) readonly buffer AH_ { uvec2 a16[]; };
layout(std430, binding = VKA_MATMUL_A) readonly buffer AW_ { uvec4 a16x8[]; }; /* VEC 8 */
layout(std430, binding = VKA_MATMUL_B) readonly buffer B_ { vec4 b32[]; };
layout(std430, binding = VKA_MATMUL_B) readonly buffer BH_ { uvec2 b16[]; };
layout(std430, binding = VKA_MATMUL_B) readonly buffer BW_ { uvec4 b16x8[]; };
layout(binding = VKA_MATMUL_BIAS) uniform samplerBuffer Bias;
#include "attention_common.glsl"
#include "storage_texels.glsl"
layout(std430, binding = VKA_MATMUL_C) buffer C_ { VKA_OUT_TYPE c[]; };
layout(push_constant) uniform Push { vka_matmul_push pc; };

const uint WG = gl_WorkGroupSize.x;
const uint SUBGROUPS = 2 * SUBGROUPS_N;
const uint SG = WG / SUBGROUPS;            /* invocations per subgroup */
const uint FM = TILE_A / (2 * MAT_M);      /* accumulators per subgroup, down */
const uint FN = TILE_B / (SUBGROUPS_N * MAT_N); /* and across */
const uint TK = TILE_K / VEC;              /* texels of a row per block */
const uint STRIDE4 = TILE_K / 4 + 2;       /* f16vec4 per staged row: 16 bytes of padding against bank conflicts */
const uint FRAG = MAT_M * MAT_N;
const uint EPL = (FRAG + SG - 1) / SG;     /* elements of an accumulator per invocation, as the devices
                                              spread them (DIRECT checks it) */
/* the plan's rule repeated: a part that adds to C goes through the scatter */
const bool DIRECT = (FLAGS & (VKA_MATMUL_DIRECT | VKA_MATMUL_ACCUMULATE)) == VKA_MATMUL_DIRECT;
#define ACC coopmat<float, gl_ScopeSubgroup, MAT_M, MAT_N, gl_MatrixUseAccumulator>

/* Staged rows as f16vec4, so that an invocation stages a texel of 4 with one 8-byte store (the
 * matrix loads count offsets and strides in these elements); STAGES blocks of them */
const uint STAGES = 1 + ((FLAGS & VKA_MATMUL_TWO_STAGES) != 0 ? 1 : 0);
const uint A_BLOCK = TILE_A * STRIDE4, B_BLOCK = TILE_B * STRIDE4;
shared f16vec4 a_s[STAGES * A_BLOCK];
shared f16vec4 b_s[STAGES * B_BLOCK];
shared float c_s[SUBGROUPS * FRAG];        /* one accumulator per subgroup, on its way out (DIRECT: the
                                              index matrix, once) */

const uint A_FETCH = (TILE_A * TK + WG - 1) / WG; /* texels of A's block per invocation */
const uint B_FETCH = (TILE_B * TK + WG - 1) / WG;

const bool A_HALF = (FLAGS & VKA_MATMUL_A_F16) != 0, B_HALF = (FLAGS & VKA_MATMUL_B_F16) != 0;
/* a texel's bits: with VEC 8 its 8 halves (the plan takes VEC 8 only where A and B hold fp16) */
uvec4 load_a(uint t) { return VEC == 8 ? a16x8[t] : VKA_TEXEL_BITS(a32, a16, A_HALF, t); }
uvec4 load_b(uint t) { return VEC == 8 ? b16x8[t] : VKA_TEXEL_BITS(b32, b16, B_HALF, t); }

/* This invocation's texels of rows [row0, row0 + rows) of A or B (`load`), texels [k0, k0 + TK)
 * of each, into `regs`; zeros past `limit` rows or K texels (so a block past the end is all zeros). */
#define FETCH(regs, load, offset, ld, row0, rows, limit, k0)                                        \
    [[unroll]] for (uint i_ = 0; i_ < (rows * TK + WG - 1) / WG; i_++) {                            \
        uint t_ = i_ * WG + gl_LocalInvocationID.x, r_ = t_ / TK, kt_ = t_ % TK;                    \
        regs[i_] = uvec4(0u);                                                                       \
        if (((rows * TK) % WG == 0 || t_ < rows * TK) && (row0) + r_ < (limit) && (k0) + kt_ < pc.K) \
            regs[i_] = load((offset) + ((row0) + r_) * (ld) + (k0) + kt_);                          \
    }

/* The texels FETCH gave this invocation into `tile` from element `base` on, as fp16 (texels of
 * one value: element t % TK of the row). (A macro: shared arrays are not parameters.) */
#define STAGE(tile, base, regs, rows, fp16)                                                         \
    [[unroll]] for (uint i_ = 0; i_ < (rows * TK + WG - 1) / WG; i_++) {                            \
        uint t_ = i_ * WG + gl_LocalInvocationID.x;                                                 \
        if ((rows * TK) % WG == 0 || t_ < rows * TK) {                                              \
            if (VEC == 8) {                                                                         \
                uint at_ = (base) + (t_ / TK) * STRIDE4 + 2 * (t_ % TK);                            \
                tile[at_] = vka_texel8_f16(regs[i_], 0);                                            \
                tile[at_ + 1] = vka_texel8_f16(regs[i_], 1);                                        \
            } else {                                                                                \
                f16vec4 v_ = vka_texel_f16(regs[i_], fp16);                                         \
                if (VEC == 4) tile[(base) + (t_ / TK) * STRIDE4 + t_ % TK] = v_;                    \
                else tile[(base) + (t_ / TK) * STRIDE4 + (t_ % TK) / 4][(t_ % TK) % 4] = v_.x;      \
            }                                                                                       \
        }                                                                                           \
    }

/* The subgroup's accumulators += the staged block at a_s[a_base], b_s[b_base] */
#define MULTIPLY(a_base, b_base)                                                                    \
    [[unroll]] for (uint ks = 0; ks < TILE_K / MAT_K; ks++) {                                       \
        coopmat<float16_t, gl_ScopeSubgroup, MAT_M, MAT_K, gl_MatrixUseA> fa[FM];                   \
        coopmat<float16_t, gl_ScopeSubgroup, MAT_K, MAT_N, gl_MatrixUseB> fb[FN];                   \
        [[unroll]] for (uint i = 0; i < FM; i++)                                                    \
            coopMatLoad(fa[i], a_s, (a_base) + (sg_row + i * MAT_M) * STRIDE4 + ks * MAT_K / 4, STRIDE4, \
                        gl_CooperativeMatrixLayoutRowMajor);                                        \
        [[unroll]] for (uint j = 0; j < FN; j++)                                                    \
            coopMatLoad(fb[j], b_s, (b_base) + (sg_col + j * MAT_N) * STRIDE4 + ks * MAT_K / 4, STRIDE4, \
                        gl_CooperativeMatrixLayoutColumnMajor);                                     \
        [[unroll]] for (uint i = 0; i < FM; i++)                                                    \
            [[unroll]] for (uint j = 0; j < FN; j++)                                                \
                acc[i * FN + j] = coopMatMulAdd(fa[i], fb[j], acc[i * FN + j]);                     \
    }

void main()
{
    /* One workgroup per tile: padding workgroups of a folded grid leave whole, before any barrier. */
    uint tile = vka_group_index();
    uint tiles_m = (pc.M + TILE_A - 1) / TILE_A;
    if (tile >= tiles_m * pc.tiles_n) return;
    /* tiles in groups of pc.group_rows rows (abi.h): the workgroups running at once share A and W in the cache */
    uint row0 = VKA_TILE_ROW(tile, tiles_m, pc.tiles_n, pc.group_rows) * TILE_A;
    uint col0 = VKA_TILE_COL(tile, tiles_m, pc.tiles_n, pc.group_rows) * TILE_B;
    uint sg = gl_SubgroupID, lane = gl_SubgroupInvocationID;
    uint sg_row = (sg / SUBGROUPS_N) * FM * MAT_M, sg_col = (sg % SUBGROUPS_N) * FN * MAT_N;

    ACC acc[FM * FN];
    [[unroll]] for (uint f = 0; f < FM * FN; f++)
        acc[f] = ACC(0.0);

    /* PREFETCH: block k0 + TK's loads are in flight while block k0 multiplies (past K: zeros,
     * unused); without it each block is fetched right before it is staged. TWO_STAGES: block k0 is
     * staged at a_s[cur x A_BLOCK], b_s[cur x B_BLOCK]; block k0 + TK is fetched before block k0's
     * multiplies and staged after them into the other stage, whose last readers (block k0 - TK)
     * finished before the previous barrier. */
    const bool prefetch = (FLAGS & VKA_MATMUL_PREFETCH) != 0, two_stages = STAGES == 2;
    uvec4 a_next[A_FETCH], b_next[B_FETCH];
#define FETCH_BLOCK(k0)                                                                             \
    {                                                                                               \
        FETCH(a_next, load_a, pc.a_offset, pc.lda, row0, TILE_A, pc.M, k0)                          \
        FETCH(b_next, load_b, pc.b_offset, pc.ldb, col0, TILE_B, pc.N, k0)                          \
    }
#define STAGE_BLOCK(stage)                                                                          \
    {                                                                                               \
        STAGE(a_s, (stage) * A_BLOCK, a_next, TILE_A, A_HALF)                                       \
        STAGE(b_s, (stage) * B_BLOCK, b_next, TILE_B, B_HALF)                                       \
    }
    FETCH_BLOCK(0)
    if (two_stages) {
        STAGE_BLOCK(0)
        barrier(); /* the first block is whole */
    }
    uint cur = 0;
    for (uint k0 = 0; k0 < pc.K; k0 += TK) {
        if (two_stages) {
            FETCH_BLOCK(k0 + TK)
        } else {
            if (!prefetch && k0 > 0) FETCH_BLOCK(k0)
            STAGE_BLOCK(0)
            barrier(); /* the tiles are whole before any subgroup reads them */
            if (prefetch) FETCH_BLOCK(k0 + TK)
        }
        MULTIPLY(cur * A_BLOCK, cur * B_BLOCK)
        if (two_stages) { /* the next block (past K: zeros, unused) into the other stage */
            cur ^= 1;
            STAGE_BLOCK(cur)
        }
        barrier(); /* every subgroup is done with the block before it is overwritten (two stages: and
                      the next is whole) */
    }

    if (DIRECT) { /* the plan's rule: this tile is whole, each matrix in one batch item and block of columns */
        /* each accumulator element's column, from a matrix whose element (r, c) holds r x MAT_N + c
         * (KHR matrices do not say which element is where): loaded here, so that it takes no
         * registers during the blocks (the last block's barrier is behind every subgroup) */
        [[unroll]] for (uint e = 0; e < (FRAG + WG - 1) / WG; e++) {
            uint at = e * WG + gl_LocalInvocationID.x;
            if (FRAG % WG == 0 || at < FRAG) c_s[at] = float(at);
        }
        barrier();
        ACC map;
        coopMatLoad(map, c_s, 0, MAT_N, gl_CooperativeMatrixLayoutRowMajor);
        /* a device holding another count of elements an invocation than EPL would leave some
         * without their bias: its outputs turn NaN instead (loud, not wrong by a little) */
        const float held = map.length() == int(EPL) ? 1.0 : 0.0 / 0.0;
        [[unroll]] for (uint i = 0; i < FM; i++) {
            [[unroll]] for (uint j = 0; j < FN; j++) {
                uint m = row0 + sg_row + i * MAT_M, n = col0 + sg_col + j * MAT_N;
                ACC r = acc[i * FN + j] * held;
                if (pc.has_bias != 0) /* element operations only under the branch */
                    [[unroll]] for (uint e = 0; e < EPL; e++)
                        r[e] += texelFetch(Bias, int(pc.bias_offset + n + uint(map[e]) % MAT_N)).x;
                uint out_at = pc.c_offset + (m / pc.rows_per_batch) * pc.batch_stride +
                              (m % pc.rows_per_batch) * pc.c_row + (n / pc.c_col_block) * pc.c_block + n % pc.c_col_block;
#ifdef OUT_F16
                coopMatStore(coopmat<float16_t, gl_ScopeSubgroup, MAT_M, MAT_N, gl_MatrixUseAccumulator>(r), c, out_at,
                             pc.c_row, gl_CooperativeMatrixLayoutRowMajor);
#else
                coopMatStore(r, c, out_at, pc.c_row, gl_CooperativeMatrixLayoutRowMajor);
#endif
            }
        }
        return;
    }
    [[unroll]] for (uint i = 0; i < FM; i++) {
        [[unroll]] for (uint j = 0; j < FN; j++) {
            coopMatStore(acc[i * FN + j], c_s, sg * FRAG, MAT_N, gl_CooperativeMatrixLayoutRowMajor);
            subgroupBarrier(); /* the stored accumulator is visible to the subgroup's invocations */
            [[unroll]] for (uint e = 0; e < (FRAG + SG - 1) / SG; e++) {
                uint at = e * SG + lane;
                uint m = row0 + sg_row + i * MAT_M + at / MAT_N, n = col0 + sg_col + j * MAT_N + at % MAT_N;
                if ((FRAG % SG == 0 || at < FRAG) && m < pc.M && n < pc.N) {
                    float value = c_s[sg * FRAG + at];
                    if (pc.has_bias != 0) value += texelFetch(Bias, int(pc.bias_offset + n)).x;
                    uint out_at = pc.c_offset + (m / pc.rows_per_batch) * pc.batch_stride +
                                  (m % pc.rows_per_batch) * pc.c_row + (n / pc.c_col_block) * pc.c_block +
                                  n % pc.c_col_block;
                    if ((FLAGS & VKA_MATMUL_ACCUMULATE) != 0) value += float(c[out_at]);
                    c[out_at] = VKA_TO_OUT(value);
                }
            }
            subgroupBarrier(); /* read before the next accumulator overwrites the scratch */
        }
    }
}
