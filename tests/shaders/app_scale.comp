#version 450
// The application's own kernel in tests/test_external.c: dst[i] = src[i] * scale, the producer
// before vkattn's forward and the consumer after it in one command buffer.
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) writeonly buffer Dst { float dst[]; };
layout(push_constant) uniform Push {
    uint src_offset; // in floats
    uint dst_offset;
    uint count;
    float scale;
} p;

void main()
{
    uint i = gl_GlobalInvocationID.x;
    if (i < p.count) dst[p.dst_offset + i] = src[p.src_offset + i] * p.scale;
}
