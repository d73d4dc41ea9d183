#version 450
/*
 * rope.comp — q and k made ready for attention, in place on the projected Q or K (head-major rows
 * of D elements): an optional RMS norm (VKA_ROPE_NORM: Qwen3's and Gemma 3's per head, OLMo 2's
 * over a whole row), then rotary position embedding. Pair p < pairs of a row holds dims
 * (p, p + pairs) (NeoX) or (2p, 2p + 1) (GPT-J); the row of token r is at position pos_offset + r
 * (or meta[pos_offset + r] with POSITIONS) and its pair is rotated by
 * angle = float(position) * inv_freq[p] (fp32, the host's table):
 * (x1, x2) -> (x1 c - x2 s, x2 c + x1 s), c and s being cos and sin times the attention factor.
 * GLSL only bounds sin/cos errors on [-pi, pi], so the angle is first reduced to that range
 * (Cody-Waite, 2pi in three parts; see reduce()).
 *
 * Grid: without a norm one invocation per (batch, head, row, pair); with NORM (each head's) one
 * invocation per (batch, head, row), looping over its D values twice (the sum of squares, then
 * each element scaled and each pair rotated by its first element's turn); with NORM_ROW one
 * workgroup per (batch, row), its invocations striding over the row's values, a tree over the
 * workgroup (a power of two) between the two passes.
 * Bindings: VKA_ROPE_* (abi.h); X is read and written (fp16 with OUT_F16).
 * Loop trips per invocation: none without a norm; NORM 2(D + 1); NORM_ROW (n = heads * D / WG_SIZE
 * rounded up, t = log2(WG_SIZE)) 2(n + 1) + (t + 1).
 */
#ifdef OUT_F16
#extension GL_EXT_shader_16bit_storage : require
#endif
#extension GL_GOOGLE_include_directive : require
#include "prelude.glsl"

layout(binding = VKA_ROPE_FREQ) uniform samplerBuffer Freq;
layout(std430, binding = VKA_ROPE_META) readonly buffer Meta_ { uint meta[]; };
#include "attention_common.glsl"
layout(std430, binding = VKA_ROPE_X) buffer X_ { VKA_OUT_TYPE x[]; };
layout(std430, binding = VKA_ROPE_NORM_W) readonly buffer NormW_ { float norm_w[]; };
layout(push_constant) uniform Push { vka_rope_push pc; };

shared float red_sum[gl_WorkGroupSize.x];

/* angle - k*2pi for the nearest integer k, with 2pi = C1 + C2 + C3. C1 and C2 have 8 and 7
 * significant bits, so k*C1 and k*C2 are exact for |k| < 2^16 (angles below about 4e5) even where
 * the implementation does not fuse fma (Vulkan allows that), and each step loses only its final
 * rounding; with a fused fma that holds for larger k too. C3 carries the rest of 2pi to within
 * 2e-14. */
float reduce(float angle)
{
    const float C1 = uintBitsToFloat(0x40c90000u); /* 6.28125 */
    const float C2 = uintBitsToFloat(0x3afe0000u); /* 0.0019378662109375 */
    const float C3 = uintBitsToFloat(0xb62bbbd3u); /* -2.5590314e-06 */
    const float INV_2PI = uintBitsToFloat(0x3e22f983u);
    precise float k = roundEven(angle * INV_2PI);
    precise float r = fma(-k, C1, angle);
    r = fma(-k, C2, r);
    r = fma(-k, C3, r);
    return r;
}

/* cos and sin of a pair's angle at `position`, times the attention factor. */
vec2 rotation(uint position, uint p)
{
    precise float angle = float(position) * texelFetch(Freq, int(p)).x;
    float a = reduce(angle);
    return vec2(cos(a), sin(a)) * pc.factor;
}

uint position_of(uint r)
{
    return (FLAGS & VKA_ROPE_POSITIONS) != 0 ? meta[pc.pos_offset + r] : pc.pos_offset + r;
}

/* One pair per invocation. */
void rotate_pair()
{
    uint index = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= pc.count) return;
    uint p = index % pc.pairs;
    uint rest = index / pc.pairs;
    uint r = rest % pc.rows;
    rest /= pc.rows;
    uint h = rest % pc.heads, b = rest / pc.heads;
    uint base = pc.offset + b * pc.batch_stride + h * pc.head_stride + r * pc.row_stride;
    uint i1 = base + (pc.gptj != 0u ? 2u * p : p);
    uint i2 = base + (pc.gptj != 0u ? 2u * p + 1u : p + pc.pairs);
    vec2 cs = rotation(position_of(r), p);
    float x1 = float(x[i1]), x2 = float(x[i2]);
    x[i1] = VKA_TO_OUT(x1 * cs.x - x2 * cs.y);
    x[i2] = VKA_TO_OUT(x2 * cs.x + x1 * cs.y);
}

/* Scales x[at + d] and its pair (if d is a pair's first element) by inv_rms and the weights at w,
 * then rotates the pair; a pair's second element is its first's work. */
void normalize_element(uint at, uint w, uint d, float inv_rms, uint position)
{
    bool rotated = d < 2u * pc.pairs;
    bool first = rotated && (pc.gptj != 0u ? d % 2u == 0u : d < pc.pairs);
    if (rotated && !first) return;
    float x1 = float(x[at + d]) * inv_rms * norm_w[w + d];
    if (!rotated) {
        x[at + d] = VKA_TO_OUT(x1);
        return;
    }
    uint d2 = pc.gptj != 0u ? d + 1u : d + pc.pairs;
    float x2 = float(x[at + d2]) * inv_rms * norm_w[w + d2];
    vec2 cs = rotation(position, pc.gptj != 0u ? d / 2u : d);
    x[at + d] = VKA_TO_OUT(x1 * cs.x - x2 * cs.y);
    x[at + d2] = VKA_TO_OUT(x2 * cs.x + x1 * cs.y);
}

/* Each head's norm: one invocation per (batch, head, row) over its D values. Heads from k_first on
 * are K's (their weights at k_offset), so one dispatch serves Q and K where they share a layout. */
void normalize_head()
{
    uint index = vka_group_index() * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
    if (index >= pc.count) return;
    uint r = index % pc.rows, rest = index / pc.rows;
    uint h = rest % pc.heads, b = rest / pc.heads;
    uint at = pc.offset + b * pc.batch_stride + h * pc.head_stride + r * pc.row_stride;
    uint w = h >= pc.k_first ? pc.k_offset : pc.norm_offset;
    float sum = 0.0;
    for (uint d = 0; d < pc.dim; d++) {
        float v = float(x[at + d]);
        sum += v * v;
    }
    float inv_rms = inversesqrt(sum / float(pc.dim) + pc.eps);
    uint position = position_of(r);
    for (uint d = 0; d < pc.dim; d++) normalize_element(at, w, d, inv_rms, position);
}

/* A whole row's norm (ROW): one workgroup per (batch, row) over its heads' values, a tree over the
 * workgroup for the sum of squares. */
void normalize_row()
{
    uint group = vka_group_index();
    if (group >= pc.count) return; /* whole workgroups only: the rest share barriers */
    uint r = group % pc.rows, b = group / pc.rows;
    uint row_base = pc.offset + b * pc.batch_stride + r * pc.row_stride;
    uint n = pc.heads * pc.dim, t = gl_LocalInvocationID.x;
    float sum = 0.0;
    for (uint e = t; e < n; e += gl_WorkGroupSize.x) {
        float v = float(x[row_base + (e / pc.dim) * pc.head_stride + e % pc.dim]);
        sum += v * v;
    }
    red_sum[t] = sum;
    barrier();
    for (uint stride = gl_WorkGroupSize.x / 2; stride > 0; stride /= 2) {
        if (t < stride) red_sum[t] += red_sum[t + stride];
        barrier();
    }
    float inv_rms = inversesqrt(red_sum[0] / float(n) + pc.eps);
    uint position = position_of(r);
    for (uint e = t; e < n; e += gl_WorkGroupSize.x)
        normalize_element(row_base + (e / pc.dim) * pc.head_stride, pc.norm_offset + (e / pc.dim) * pc.dim,
                          e % pc.dim, inv_rms, position);
}

void main()
{
    if ((FLAGS & VKA_ROPE_NORM_ROW) != 0) normalize_row();
    else if ((FLAGS & VKA_ROPE_NORM) != 0) normalize_head();
    else rotate_pair();
}
