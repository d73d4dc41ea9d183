#version 450
/*
 * coopmat_layout.comp — which elements of a cooperative-matrix accumulator, and of an A matrix,
 * each invocation holds (VK_KHR_cooperative_matrix leaves it to the implementation). One subgroup
 * loads an fp32 MAT_M x MAT_N accumulator whose element (r, c) holds r x MAT_N + c, and an fp16
 * MAT_M x MAT_K A matrix whose element (r, c) holds r x MAT_K + c (exact in fp16 below 2048); each
 * invocation writes, per matrix, how many elements it holds, then each one's value. The host
 * (src/device/matrix_rows.h) finds in that whether each row's elements sit in aligned groups of
 * lanes at the same element indices, which is what attn_cm's softmax in registers needs, and
 * whether an A matrix's elements are the accumulator's places in each invocation (P made into
 * A matrices in registers).
 * Bindings: VKA_LAYOUT_OUT (abi.h). Specialization: WG_SIZE (the subgroup size: one subgroup),
 * MAT_M, MAT_N, MAT_K. Loop trips per invocation: MAT_M x (MAT_N + MAT_K) / WG_SIZE + 2, then its
 * element counts + 2.
 */
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(std430, binding = VKA_LAYOUT_OUT) writeonly buffer Out_ { uint layout_out[]; };
layout(push_constant) uniform Push { vka_layout_push pc; };

shared float map_s[MAT_M * MAT_N];
shared float16_t a_map_s[MAT_M * MAT_K];

void main()
{
    for (uint at = gl_LocalInvocationID.x; at < MAT_M * MAT_N; at += gl_WorkGroupSize.x) map_s[at] = float(at);
    for (uint at = gl_LocalInvocationID.x; at < MAT_M * MAT_K; at += gl_WorkGroupSize.x) a_map_s[at] = float16_t(at);
    barrier();
    coopmat<float, gl_ScopeSubgroup, MAT_M, MAT_N, gl_MatrixUseAccumulator> map;
    coopMatLoad(map, map_s, 0, MAT_N, gl_CooperativeMatrixLayoutRowMajor);
    coopmat<float16_t, gl_ScopeSubgroup, MAT_M, MAT_K, gl_MatrixUseA> a_map;
    coopMatLoad(a_map, a_map_s, 0, MAT_K, gl_CooperativeMatrixLayoutRowMajor);
    uint base = gl_SubgroupInvocationID * pc.stride;
    layout_out[base] = uint(map.length());
    for (int e = 0; e < map.length(); e++) layout_out[base + 1 + uint(e)] = uint(map[e]);
    base += 1 + MAT_M * MAT_N;
    layout_out[base] = uint(a_map.length());
    for (int e = 0; e < a_map.length(); e++) layout_out[base + 1 + uint(e)] = uint(float(a_map[e]));
}
