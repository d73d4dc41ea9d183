#version 450
/*
 * matmul.comp — C(M,N) = A(M,K) · B(N,K)^T + bias(N): the Q/K/V projections (one fused QKV
 * matmul for self-attention) and the output projection. B is a weight in PyTorch's (out, in)
 * layout, so both operands are read along K. A reduction longer than the loop budget is split
 * into parts: the first writes C, later ones add to it (the ACCUMULATE flag).
 *
 * Register-blocked, no shared memory: each invocation owns a TILE_A x TILE_B block of C and reads
 * its operands through texel views (VEC floats per fetch, the view format carries fp32 or fp16).
 * On lavapipe texel fetches are the fastest load path and register blocking is what counts
 * (../docs/KNOWN_ISSUES.md); tile sizes come from the device profile (src/device/tuning.c).
 *
 * Output: C element (m, n) lands where vka_matmul_push says, so the projections can write Q, K and
 * V head by head (each head's rows together) and leave room for the extra keys (bias_k, zero key)
 * after each head's real ones.
 * Grid: ceil(M/TILE_A) * ceil(N/TILE_B) invocations, WG_SIZE per workgroup.
 * Bindings: VKA_MATMUL_* (abi.h).
 * Loop trips per invocation: K + 1 (the reduction, in texels; tile loops unrolled).
 *
 * The SHARED_TILES build (kernel matmul_sm, every GPU tuning's fp32 projections) is the GPU-shaped
 * scalar twin of matmul_cm.comp, same contract and epilogue: a workgroup owns a TILE_A x TILE_B
 * block of C, each invocation a 4 x 4 register block of it (WG_SIZE = TILE_A * TILE_B / 16; rows
 * ty + i * TILE_A / 4 and columns tx + j * TILE_B / 4, so neighbouring invocations read
 * neighbouring shared words and write neighbouring columns of C). Per block of
 * TILE_K reduction elements its invocations stage A's and B's rows into shared memory in fp32
 * (no rounding), consecutive invocations reading consecutive texels of a row (coalesced), zero
 * past the matrix edges, transposed so that the block's FMA loop (unrolled) reads one k at a
 * time. Grid: ceil(M/TILE_A) * ceil(N/TILE_B) workgroups.
 * Loop trips per invocation: ceil(K / (TILE_K / VEC)) + 1, K in texels (the blocks).
 *
 * The MATVEC build (kernel matmul_vec, decoding's few rows on the GPU tunings) is a matrix-vector
 * product: a workgroup owns TILE_A x TILE_B of C, TILE_A the (at most 8) rows, and its WG
 * invocations stride the reduction together, invocation t taking texels t, t + WG, ... of each
 * row, so neighbouring invocations read neighbouring texels of W (coalesced) and W, the whole cost
 * of a decoding step's projections, streams once over many workgroups. The sums: subgroupAdd in
 * each subgroup, then the subgroups' sums through shared memory (the plan takes this build only
 * where compute shaders have subgroup arithmetic on subgroups of at least 4 lanes, so a workgroup
 * has at most WG / 4). Grid: ceil(M/TILE_A) * ceil(N/TILE_B) workgroups.
 * Loop trips per invocation: ceil(K / WG) + 1, K in texels (the sums' loop is unrolled).
 *
 * The MATVEC_STORAGE build (kernel matmul_vec_storage, the GPU tunings' choice where the reduction
 * and every row start on multiples of 8 elements: vec_storage) is the MATVEC build reading A and B from
 * storage buffers, a texel being 8 elements: one 16-byte load of fp16 (uvec4), two of fp32 (vec4),
 * as FLAGS' A_F16 and B_F16 say. On NVIDIA a texel fetch goes through the texture pipe (see
 * storage_texels.glsl); a wider load also halves the loop's trips and keeps twice the bytes in
 * flight per invocation.
 */
#ifdef MATVEC_STORAGE
#define MATVEC
#endif
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#ifdef MATVEC
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

#ifdef MATVEC_STORAGE
layout(std430, binding = VKA_MATMUL_A) readonly buffer A_ { vec4 a32[]; };
layout(std430, binding = VKA_MATMUL_A) readonly buffer AH_ { uvec4 a16[]; };
layout(std430, binding = VKA_MATMUL_B) readonly buffer B_ { vec4 b32[]; };
layout(std430, binding = VKA_MATMUL_B) readonly buffer BH_ { uvec4 b16[]; };
#else
layout(binding = VKA_MATMUL_A) uniform samplerBuffer A;
layout(binding = VKA_MATMUL_B) uniform samplerBuffer B;
#endif
layout(binding = VKA_MATMUL_BIAS) uniform samplerBuffer Bias;
#include "attention_common.glsl"
layout(std430, binding = VKA_MATMUL_C) buffer C_ { VKA_OUT_TYPE c[]; };
layout(push_constant) uniform Push { vka_matmul_push pc; };

#if defined(SHARED_TILES) || defined(MATVEC)
/* C element (m, n) of the dispatch, in range: bias (first part), C's earlier parts, stored. */
void store(uint m, uint n, float value)
{
    if (pc.has_bias != 0) value += texelFetch(Bias, int(pc.bias_offset + n)).x;
    uint out_at = pc.c_offset + (m / pc.rows_per_batch) * pc.batch_stride + (m % pc.rows_per_batch) * pc.c_row +
                  (n / pc.c_col_block) * pc.c_block + n % pc.c_col_block;
    if ((FLAGS & VKA_MATMUL_ACCUMULATE) != 0) value += float(c[out_at]);
    c[out_at] = VKA_TO_OUT(value);
}
#endif

#ifdef MATVEC
const uint WG = gl_WorkGroupSize.x;
const uint OUTS = TILE_A * TILE_B;

shared float sums_s[OUTS * (WG / 4)]; /* each subgroup's sum of each output */

/* Texel t of A or B and the dot product of two texels: 8 elements as the two columns of a mat2x4
 * (storage buffers), or VEC elements of a vec4 (texel views). */
#ifdef MATVEC_STORAGE
#define VEC_TEXEL mat2x4
const bool A_HALF = (FLAGS & VKA_MATMUL_A_F16) != 0, B_HALF = (FLAGS & VKA_MATMUL_B_F16) != 0;
mat2x4 halves(uvec4 w) { return mat2x4(vka_texel8(w, 0u), vka_texel8(w, 1u)); }
mat2x4 load_a(uint t) { return A_HALF ? halves(a16[t]) : mat2x4(a32[2 * t], a32[2 * t + 1]); }
mat2x4 load_b(uint t) { return B_HALF ? halves(b16[t]) : mat2x4(b32[2 * t], b32[2 * t + 1]); }
float texel_dot(mat2x4 a, mat2x4 b) { return dot(a[0], b[0]) + dot(a[1], b[1]); }
#else
#define VEC_TEXEL vec4
vec4 load_a(uint t) { return vka_fetch(A, t); }
vec4 load_b(uint t) { return vka_fetch(B, t); }
float texel_dot(vec4 a, vec4 b) { return dot(a, b); }
#endif

void main()
{
    /* One workgroup per tile: padding workgroups of a folded grid leave whole, before the barrier. */
    uint tile = vka_group_index();
    if (tile >= (pc.M + TILE_A - 1) / TILE_A * pc.tiles_n) return;
    uint row0 = tile / pc.tiles_n * TILE_A, col0 = tile % pc.tiles_n * TILE_B;

    /* Rows and columns past the edge read the last valid one and are not stored. */
    uint arow[TILE_A], brow[TILE_B];
    [[unroll]] for (uint r = 0; r < TILE_A; r++) arow[r] = pc.a_offset + min(row0 + r, pc.M - 1) * pc.lda;
    [[unroll]] for (uint s = 0; s < TILE_B; s++) brow[s] = pc.b_offset + min(col0 + s, pc.N - 1) * pc.ldb;

    float acc[TILE_A][TILE_B];
    [[unroll]] for (uint r = 0; r < TILE_A; r++)
        [[unroll]] for (uint s = 0; s < TILE_B; s++) acc[r][s] = 0.0;
    for (uint k = gl_LocalInvocationID.x; k < pc.K; k += WG) {
        VEC_TEXEL a[TILE_A];
        [[unroll]] for (uint r = 0; r < TILE_A; r++) a[r] = load_a(arow[r] + k);
        [[unroll]] for (uint s = 0; s < TILE_B; s++) {
            VEC_TEXEL b = load_b(brow[s] + k);
            [[unroll]] for (uint r = 0; r < TILE_A; r++) acc[r][s] += texel_dot(a[r], b);
        }
    }

    [[unroll]] for (uint r = 0; r < TILE_A; r++)
        [[unroll]] for (uint s = 0; s < TILE_B; s++) {
            float sum = subgroupAdd(acc[r][s]);
            if (subgroupElect()) sums_s[(r * TILE_B + s) * (WG / 4) + gl_SubgroupID] = sum;
        }
    barrier(); /* every subgroup's sums are in shared memory */
    uint t = gl_LocalInvocationID.x;
    if (t < OUTS) {
        uint r = t / TILE_B, s = t % TILE_B;
        float value = 0.0;
        [[unroll]] for (uint g = 0; g < WG / 4; g++) /* unrolled: no loop trips */
            if (g < gl_NumSubgroups) value += sums_s[t * (WG / 4) + g];
        if (row0 + r < pc.M && col0 + s < pc.N) store(row0 + r, col0 + s, value);
    }
}
#elif defined(SHARED_TILES)
const uint WG = gl_WorkGroupSize.x;
const uint TX = TILE_B / 4, TY = TILE_A / 4; /* invocations across and down: TX * TY = WG */
const uint TK = TILE_K / VEC;                /* texels of a row per block */
const uint LDS = TILE_A + 4, LDB = TILE_B + 4; /* k-major rows, padded against bank conflicts on the stores */

shared float a_s[TILE_K * LDS];
shared float b_s[TILE_K * LDB];

/* Rows [row0, row0 + rows) of a texel view, texels [k0, k0 + TK) of each, into `tile` k-major:
 * tile[k * ld + r]; zeros past `limit` rows or K texels. (A macro: shared arrays are not
 * parameters.) */
#define STAGE(tile, ld, view, offset, stride, row0, rows, limit, k0)                                \
    [[unroll]] for (uint i_ = 0; i_ < (rows * TK + WG - 1) / WG; i_++) {                            \
        uint t_ = i_ * WG + gl_LocalInvocationID.x;                                                 \
        if ((rows * TK) % WG == 0 || t_ < rows * TK) {                                              \
            uint r_ = t_ / TK, kt_ = t_ % TK;                                                       \
            vec4 v_ = vec4(0.0);                                                                    \
            if ((row0) + r_ < (limit) && (k0) + kt_ < pc.K)                                         \
                v_ = vka_fetch(view, (offset) + ((row0) + r_) * (stride) + (k0) + kt_);             \
            [[unroll]] for (uint e_ = 0; e_ < VEC; e_++) tile[(kt_ * VEC + e_) * ld + r_] = v_[e_];  \
        }                                                                                           \
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
    uint tx = gl_LocalInvocationID.x % TX, ty = gl_LocalInvocationID.x / TX;

    float acc[4][4];
    [[unroll]] for (uint i = 0; i < 4; i++)
        [[unroll]] for (uint j = 0; j < 4; j++) acc[i][j] = 0.0;

    for (uint k0 = 0; k0 < pc.K; k0 += TK) {
        STAGE(a_s, LDS, A, pc.a_offset, pc.lda, row0, TILE_A, pc.M, k0)
        STAGE(b_s, LDB, B, pc.b_offset, pc.ldb, col0, TILE_B, pc.N, k0)
        barrier(); /* the tiles are whole before any invocation reads them */
        [[unroll]] for (uint k = 0; k < TILE_K; k++) {
            float a[4], b[4];
            [[unroll]] for (uint i = 0; i < 4; i++) a[i] = a_s[k * LDS + ty + i * TY];
            [[unroll]] for (uint j = 0; j < 4; j++) b[j] = b_s[k * LDB + tx + j * TX];
            [[unroll]] for (uint i = 0; i < 4; i++)
                [[unroll]] for (uint j = 0; j < 4; j++) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier(); /* every invocation is done with the tiles before the next block overwrites them */
    }

    [[unroll]] for (uint i = 0; i < 4; i++) {
        uint m = row0 + ty + i * TY;
        [[unroll]] for (uint j = 0; j < 4; j++) {
            uint n = col0 + tx + j * TX;
            if (m < pc.M && n < pc.N) store(m, n, acc[i][j]);
        }
    }
}
#else
void main()
{
    uint tile = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    uint tile_m = tile / pc.tiles_n, tile_n = tile % pc.tiles_n;
    uint row0 = tile_m * TILE_A, col0 = tile_n * TILE_B;
    if (row0 >= pc.M) return;

    /* Rows and columns past the edge read the last valid one and are not stored. */
    uint arow[TILE_A], brow[TILE_B];
    [[unroll]] for (uint r = 0; r < TILE_A; r++) arow[r] = pc.a_offset + min(row0 + r, pc.M - 1) * pc.lda;
    [[unroll]] for (uint s = 0; s < TILE_B; s++) brow[s] = pc.b_offset + min(col0 + s, pc.N - 1) * pc.ldb;

    float acc[TILE_A][TILE_B];
    [[unroll]] for (uint r = 0; r < TILE_A; r++)
        [[unroll]] for (uint s = 0; s < TILE_B; s++) acc[r][s] = 0.0;
    for (uint k = 0; k < pc.K; k++) {
        vec4 a[TILE_A];
        [[unroll]] for (uint r = 0; r < TILE_A; r++) a[r] = vka_fetch(A, arow[r] + k);
        [[unroll]] for (uint s = 0; s < TILE_B; s++) {
            vec4 b = vka_fetch(B, brow[s] + k);
            /* One accumulator update per four products: fewer spills of the big tile. */
            [[unroll]] for (uint r = 0; r < TILE_A; r++) acc[r][s] += dot(a[r], b);
        }
    }

    uint col_at[TILE_B];
    [[unroll]] for (uint s = 0; s < TILE_B; s++) {
        uint n = col0 + s;
        col_at[s] = (n / pc.c_col_block) * pc.c_block + n % pc.c_col_block;
    }
    [[unroll]] for (uint r = 0; r < TILE_A; r++) {
        uint m = row0 + r;
        uint out_row = pc.c_offset + (m / pc.rows_per_batch) * pc.batch_stride + (m % pc.rows_per_batch) * pc.c_row;
        [[unroll]] for (uint s = 0; s < TILE_B; s++) {
            if (m < pc.M && col0 + s < pc.N) {
                float value = acc[r][s];
                if (pc.has_bias != 0) value += texelFetch(Bias, int(pc.bias_offset + col0 + s)).x;
                if ((FLAGS & VKA_MATMUL_ACCUMULATE) != 0) value += float(c[out_row + col_at[s]]);
                c[out_row + col_at[s]] = VKA_TO_OUT(value);
            }
        }
    }
}
#endif
