#version 450
/*
 * kv_append.comp — appends the new tokens' K and V rows to the paged KV cache: each element from
 * the projected (and, for K, rotated) heads of the qkv workspace to the token's slot in the K and
 * V pools, converted to the cache's dtype. Layouts: vka_append_push and the paged cache in abi.h.
 * The KV_QUANT build quantizes instead: each invocation reads a block of 32 values of a K row and
 * of the V row beside it and writes both blocks (Q8_0 or Q4_0, by FLAGS; kv_quant.glsl).
 *
 * Grid: one invocation per (token, K/V head, element), or per (token, K/V head, block of 32) in the
 * KV_QUANT build; WG_SIZE per workgroup.
 * Bindings: VKA_APPEND_* (abi.h); the pools are written in fp16 by the OUT_F16 build, as uint
 * words by the KV_QUANT build.
 * Loop trips per invocation: none (no loops; the KV_QUANT build's loops over a block are unrolled).
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(binding = VKA_APPEND_SRC) uniform samplerBuffer Src;
layout(std430, binding = VKA_APPEND_META) readonly buffer Meta_ { uint meta[]; };
layout(push_constant) uniform Push { vka_append_push pc; };
#include "attention_common.glsl"

#ifdef KV_QUANT
/* Not writeonly: the word a block shares with its neighbour is written by atomics. */
layout(std430, binding = VKA_APPEND_K) buffer KPool_ { uint k_words[]; };
layout(std430, binding = VKA_APPEND_V) buffer VPool_ { uint v_words[]; };
#include "kv_quant.glsl"

void main()
{
    uint index = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= pc.count) return;
    uint blocks = pc.D / VKA_QUANT_VALUES;
    uint n = index % blocks, k = index / blocks % pc.H_kv, t = index / blocks / pc.H_kv;
    uint slot = meta[pc.slot_offset + t];
    uint row = (slot / pc.block_size * pc.H_kv + k) * pc.block_size + slot % pc.block_size;
    uint at = (row * blocks + n) * kv_block_bytes();
    uint src = k * pc.head_stride + t * pc.row_stride + n * VKA_QUANT_VALUES;
    float x[VKA_QUANT_VALUES];
    uint h[18];
    [[unroll]] for (uint j = 0; j < VKA_QUANT_VALUES; j++) x[j] = texelFetch(Src, int(pc.k_offset + src + j)).x;
    kv_quantize(x, h);
    VKA_KV_STORE_BLOCK(k_words, at, h);
    [[unroll]] for (uint j = 0; j < VKA_QUANT_VALUES; j++) x[j] = texelFetch(Src, int(pc.v_offset + src + j)).x;
    kv_quantize(x, h);
    VKA_KV_STORE_BLOCK(v_words, at, h);
}
#else
layout(std430, binding = VKA_APPEND_K) writeonly buffer KPool_ { VKA_OUT_TYPE k_pool[]; };
layout(std430, binding = VKA_APPEND_V) writeonly buffer VPool_ { VKA_OUT_TYPE v_pool[]; };

void main()
{
    uint index = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= pc.count) return;
    uint e = index % pc.D, k = index / pc.D % pc.H_kv, t = index / pc.D / pc.H_kv;
    uint slot = meta[pc.slot_offset + t];
    uint dst = ((slot / pc.block_size * pc.H_kv + k) * pc.block_size + slot % pc.block_size) * pc.D + e;
    uint src = k * pc.head_stride + t * pc.row_stride + e;
    k_pool[dst] = VKA_TO_OUT(texelFetch(Src, int(pc.k_offset + src)).x);
    v_pool[dst] = VKA_TO_OUT(texelFetch(Src, int(pc.v_offset + src)).x);
}
#endif
