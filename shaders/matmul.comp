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
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(binding = VKA_MATMUL_A) uniform samplerBuffer A;
layout(binding = VKA_MATMUL_B) uniform samplerBuffer B;
layout(binding = VKA_MATMUL_BIAS) uniform samplerBuffer Bias;
#include "attention_common.glsl"
layout(std430, binding = VKA_MATMUL_C) buffer C_ { VKA_OUT_TYPE c[]; };
layout(push_constant) uniform Push { vka_matmul_push pc; };

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
