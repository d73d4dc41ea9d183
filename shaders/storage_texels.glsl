/*
 * storage_texels.glsl — operands read from storage buffers as bits, for the cooperative-matrix
 * kernels (a GPU's load path: on NVIDIA a texel fetch goes through the texture pipe, at a
 * fraction of the load units' throughput). A buffer is declared at one binding as fp32 texels of 4
 * (vec4) and as fp16 texels of 4 (two words, uvec2); a texel of one value (VEC 1) is a component of
 * those, so a binding starts on a multiple of 4 elements (vka_bind_vectors). Where fp16 rows start
 * on multiples of 8 elements, a kernel may also declare it as 8 halves (four words, uvec4: one
 * 16-byte load, bound from a multiple of 8 elements) and stage each load as two texels
 * (vka_texel8_f16).
 * Loading only moves bits (registers filled ahead of their use wait for nothing); staging
 * converts them to fp16.
 *
 * The includer declares the specialization constant VEC and enables 16-bit float arithmetic types.
 */

/* Texel t of the buffer seen as x32 (vec4) and x16 (uvec2), fp16 when `fp16`: fp32's four words,
 * or the four halves in x and y. (A macro: buffer arrays are not parameters.) */
#define VKA_TEXEL_BITS(x32, x16, fp16, t)                                                           \
    (VEC == 4 ? ((fp16) ? uvec4(x16[t], 0u, 0u) : floatBitsToUint(x32[t]))                          \
              : ((fp16) ? uvec4(((((t) & 2u) != 0u ? x16[(t) >> 2].y : x16[(t) >> 2].x) >> (((t) & 1u) * 16u)) & 0xffffu, \
                                0u, 0u, 0u)                                                         \
                        : uvec4(floatBitsToUint(x32[(t) >> 2][(t) & 3u]), 0u, 0u, 0u)))

/* Texel h (0 or 1) of a 16-byte load of 8 fp16 values, as fp16. */
f16vec4 vka_texel8_f16(uvec4 r, uint h)
{
    return h == 0 ? f16vec4(unpackFloat2x16(r.x), unpackFloat2x16(r.y))
                  : f16vec4(unpackFloat2x16(r.z), unpackFloat2x16(r.w));
}

/* A texel's bits as fp16 values (an fp32 one rounded; with VEC 1 the others are zero). */
f16vec4 vka_texel_f16(uvec4 r, bool fp16)
{
    if (VEC == 4) return fp16 ? f16vec4(unpackFloat2x16(r.x), unpackFloat2x16(r.y)) : f16vec4(uintBitsToFloat(r));
    return f16vec4(fp16 ? unpackFloat2x16(r.x).x : float16_t(uintBitsToFloat(r.x)), 0.0hf, 0.0hf, 0.0hf);
}
