#version 450
/*
 * matmul.comp — C(M,N) = A(M,K) · B(N,K)^T + bias(N): the Q/K/V projections (one fused QKV
 * matmul for self-attention) and the output projection. B is a weight in PyTorch's (out, in)
 * layout, so both operands are read along K.
 *
 * Grid: one workgroup per (TILE_A*8) x (TILE_B*8) block of C; invocation t of a 64-wide group owns
 * a TILE_A x TILE_B register block (rows (t/8)*TILE_A.., cols (t%8)*TILE_B..).
 * Bindings: 0 A, 1 B, 2 bias, 3 C (all float storage buffers).
 * Specialization: VKA_SPEC_TILE_A rows and VKA_SPEC_TILE_B columns per invocation (<= 4 each).
 */
#extension GL_GOOGLE_include_directive : require
#include "abi.h"

layout(local_size_x = 64) in;
layout(constant_id = VKA_SPEC_TILE_A) const uint TILE_A = 4;
layout(constant_id = VKA_SPEC_TILE_B) const uint TILE_B = 4;

layout(std430, binding = 0) readonly buffer A_ { float a[]; };
layout(std430, binding = 1) readonly buffer B_ { float b[]; };
layout(std430, binding = 2) readonly buffer Bias_ { float bias[]; };
layout(std430, binding = 3) writeonly buffer C_ { float c[]; };
layout(push_constant) uniform Push { vka_matmul_push pc; };

void main()
{
    uint group = vka_group_index();
    if (group >= pc.group_count) return;
    uint t = gl_LocalInvocationID.x;
    uint row0 = (group / pc.tiles_n) * (TILE_A * 8) + (t / 8) * TILE_A;
    uint col0 = (group % pc.tiles_n) * (TILE_B * 8) + (t % 8) * TILE_B;

    float acc[4][4];
    for (uint r = 0; r < 4; r++)
        for (uint s = 0; s < 4; s++) acc[r][s] = 0.0;

    /* Clamp out-of-range rows/columns to the last valid one: loads stay in bounds and the
     * results are simply not stored. */
    uint arow[4], brow[4];
    for (uint r = 0; r < TILE_A; r++) arow[r] = pc.a_offset + min(row0 + r, pc.M - 1) * pc.lda;
    for (uint s = 0; s < TILE_B; s++) brow[s] = pc.b_offset + min(col0 + s, pc.N - 1) * pc.ldb;

    for (uint k = 0; k < pc.K; k++) {
        float av[4], bv[4];
        for (uint r = 0; r < TILE_A; r++) av[r] = a[arow[r] + k];
        for (uint s = 0; s < TILE_B; s++) bv[s] = b[brow[s] + k];
        for (uint r = 0; r < TILE_A; r++)
            for (uint s = 0; s < TILE_B; s++) acc[r][s] = fma(av[r], bv[s], acc[r][s]);
    }

    for (uint s = 0; s < TILE_B; s++) {
        uint col = col0 + s;
        if (col >= pc.N) break;
        float bias_value = pc.has_bias != 0 ? bias[pc.bias_offset + col] : 0.0;
        for (uint r = 0; r < TILE_A; r++) {
            uint row = row0 + r;
            if (row < pc.M) c[pc.c_offset + row * pc.ldc + col] = acc[r][s] + bias_value;
        }
    }
}
