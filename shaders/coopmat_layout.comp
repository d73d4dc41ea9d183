#version 450
/*
 * coopmat_layout.comp — which elements of a cooperative-matrix accumulator each invocation holds
 * (VK_KHR_cooperative_matrix leaves it to the implementation). One subgroup loads an fp32
 * MAT_M x MAT_N accumulator whose element (r, c) holds r x MAT_N + c, and each invocation writes
 * how many elements it holds, then each one's value. The host (src/device/matrix_rows.h) finds
 * in that whether each row's elements sit in aligned groups of lanes at the same element indices,
 * which is what attn_cm's softmax in registers needs, and with which constants.
 * Bindings: VKA_LAYOUT_OUT (abi.h). Specialization: WG_SIZE (the subgroup size: one subgroup),
 * MAT_M, MAT_N. Loop trips per invocation: MAT_M x MAT_N / WG_SIZE + 1, then its element count.
 */
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(std430, binding = VKA_LAYOUT_OUT) writeonly buffer Out_ { uint layout_out[]; };
layout(push_constant) uniform Push { vka_layout_push pc; };

shared float map_s[MAT_M * MAT_N];

void main()
{
    for (uint at = gl_LocalInvocationID.x; at < MAT_M * MAT_N; at += gl_WorkGroupSize.x) map_s[at] = float(at);
    barrier();
    coopmat<float, gl_ScopeSubgroup, MAT_M, MAT_N, gl_MatrixUseAccumulator> map;
    coopMatLoad(map, map_s, 0, MAT_N, gl_CooperativeMatrixLayoutRowMajor);
    uint base = gl_SubgroupInvocationID * pc.stride;
    layout_out[base] = uint(map.length());
    for (int e = 0; e < map.length(); e++) layout_out[base + 1 + uint(e)] = uint(map[e]);
}
