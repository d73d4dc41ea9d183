/*
 * kv_quant.glsl — ggml's Q8_0 and Q4_0 blocks on the device: quantizing 32 values into a block
 * (kv_append.comp, into a storage buffer of uint words) and loading 4 values of one
 * (attn_paged.comp, through an R32UI texel view of the same words). The host's twin is
 * src/format/quant.c, which the CPU reference uses: the arithmetic here is the same, operation for
 * operation in fp32 (`precise`: no contraction into fma, no reassociation), so that both round
 * alike, but for the two divisions, which Vulkan need not round to nearest: kv_div does. The pool
 * layout is abi.h's ("The paged KV cache").
 *
 * The includer declares the specialization constant FLAGS (VKA_KV_Q4_0 set: Q4_0, else Q8_0).
 * Loops: all over fixed counts, unrolled; none counts in the loop model.
 */

bool kv_q4() { return (FLAGS & VKA_KV_Q4_0) != 0u; }
uint kv_block_bytes() { return kv_q4() ? VKA_Q4_0_BYTES : VKA_Q8_0_BYTES; }

/* ---- loading ------------------------------------------------------------------------------ */

/* The 4 values of quant word q, the first being value j of its block, times the block's scale
 * (x = d * q, or d * (q - 8): both products exact as the host's). */
vec4 kv_decode4(uint q, uint j, float scale)
{
    if (kv_q4()) {
        uvec4 n = (uvec4(q) >> (uvec4(0u, 8u, 16u, 24u) + (j >= 16u ? 4u : 0u))) & 0xFu;
        return (vec4(n) - 8.0) * scale;
    }
    int s = int(q);
    ivec4 b = ivec4(s << 24, s << 16, s << 8, s) >> 24; /* arithmetic shifts: signed bytes */
    return vec4(b) * scale;
}

uint kv_word(usamplerBuffer pool, uint i) { return texelFetch(pool, int(i)).x; }

/* Values 4t .. 4t + 3 of a row at byte `row` of a pool read as uint words: their block's fp16
 * scale, then 4 quant bytes (Q8_0) or the 4 nibbles of bytes j % 16 .. j % 16 + 3 (Q4_0: low
 * nibbles for values j < 16, high ones after), read as one little-endian uint at an even byte
 * offset (two words when it straddles them: the pool's spare word keeps the second in bounds).
 * In two halves, so that a kernel can fetch a block's words early and decode them later
 * (attn_paged.comp's prefetch): kv_fetch only loads (the scale's word, the quant word and the next,
 * always: in bounds by that spare word, and the neighbouring value's anyway), kv_decode only computes.
 * A kernel reading the words from a storage buffer fetches the words kv_scale_word and
 * kv_quant_word (and the next) name. */
uint kv_scale_word(uint row, uint t) { return (row + (t >> 3) * kv_block_bytes()) >> 2; }
uint kv_quant_word(uint row, uint t)
{
    uint at = row + (t >> 3) * kv_block_bytes(), j = (t & 7u) * 4u;
    return (at + 2u + (kv_q4() ? (j & 15u) : j)) >> 2;
}
uvec3 kv_fetch(usamplerBuffer pool, uint row, uint t)
{
    uint w = kv_quant_word(row, t);
    return uvec3(kv_word(pool, kv_scale_word(row, t)), kv_word(pool, w), kv_word(pool, w + 1u));
}

vec4 kv_decode(uvec3 words, uint row, uint t)
{
    uint at = row + (t >> 3) * kv_block_bytes(), j = (t & 7u) * 4u;
    float scale = unpackHalf2x16(words.x >> ((at & 2u) * 8u)).x;
    uint q_at = at + 2u + (kv_q4() ? (j & 15u) : j);
    uint q = (q_at & 2u) != 0u ? (words.y >> 16) | (words.z << 16) : words.y;
    return kv_decode4(q, j, scale);
}

vec4 kv_load(usamplerBuffer pool, uint row, uint t) { return kv_decode(kv_fetch(pool, row, t), row, t); }

/* ---- quantizing --------------------------------------------------------------------------- */

/* float32 to binary16 bits, to nearest even: src/io/half.c's vka_f32_to_f16, line for line (the
 * drivers' own conversions may round toward zero). */
uint kv_f32_to_f16(float f)
{
    uint x = floatBitsToUint(f);
    uint sign = (x >> 16) & 0x8000u, exponent = (x >> 23) & 0xFFu, mantissa = x & 0x7FFFFFu;
    if (exponent == 0xFFu) return sign | (mantissa == 0u ? 0x7C00u : 0x7E00u | (mantissa >> 13));
    int e = int(exponent) - 127 + 15;
    if (e >= 31) return sign | 0x7C00u;
    if (e <= 0) {
        if (e < -10) return sign;
        uint m = mantissa | 0x800000u, shift = uint(14 - e);
        uint kept = m >> shift, rest = m & ((1u << shift) - 1u), half_ = 1u << (shift - 1u);
        if (rest > half_ || (rest == half_ && (kept & 1u) != 0u)) kept++;
        return sign | kept;
    }
    uint h = (uint(e) << 10) | (mantissa >> 13), rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0u)) h++;
    return sign | h;
}

/* C's roundf: halves away from zero (GLSL's round() may go either way at a half). a - t is exact. */
int kv_roundf(float s)
{
    precise float a = abs(s), t = trunc(a);
    int r = int(t) + (a - t >= 0.5 ? 1 : 0);
    return s < 0.0 ? -r : r;
}

/* a - c * b for kv_div: Dekker's product c * b = p + e (Veltkamp's split of each factor into halves
 * of 12 bits) and a - p (exact: a and p are within a factor 2, Sterbenz), so the residual is exact
 * for c within a float of a / b, and rounded once further away, which kv_div's step and comparison
 * tolerate. Each step is an fp32 add, subtract or multiply, correctly rounded in Vulkan (to nearest:
 * every GPU's default, as the host's), and `precise` keeps them in this order (an fma is not
 * required to be fused). For operands in [0.25, 2]: nothing overflows or underflows. */
float kv_residual(float a, float b, float c)
{
    precise float p = c * b;
    precise float cs = 4097.0 * c, ch = cs - (cs - c), cl = c - ch;
    precise float bs = 4097.0 * b, bh = bs - (bs - b), bl = b - bh;
    precise float e = cl * bl - (((p - ch * bh) - cl * bh) - ch * bl);
    precise float r = (a - p) - e;
    return r;
}

/* a / b rounded to nearest, as C's division on the host (format/quant.c): Vulkan lets a division be
 * 2.5 ulp off (GPUs multiply by a reciprocal), and a scale one ulp off moves quant bytes away from the
 * host's and ggml's. On the significands (in [0.5, 1)): one Newton step on the residual, from the
 * driver's quotient stepped 4 floats down (so that the step does the same work on every driver:
 * lavapipe, where the tests run, divides exactly), lands a few millionths of an ulp from the
 * quotient, so on the nearest float but where the quotient lies that close to halfway between two:
 * of the float and its two neighbours, the one with the smallest exact residual is the nearest (no
 * test reaches that case; a quotient is never exactly halfway). The exponents go back on after,
 * exactly for a normal quotient. A subnormal a or b, which a driver may flush to zero in any
 * instruction, gives a signed zero: such a block's scale is 0 in fp16 anyway, so it decodes as the
 * host's, though its quant bytes may differ. The sign is set on the bits, so a zero a keeps the
 * quotient's sign (ggml's Q4_0 d of an all-zero block is -0). Finite a, b != 0. */
float kv_div(float a, float b)
{
    uint sign = (floatBitsToUint(a) ^ floatBitsToUint(b)) & 0x80000000u;
    if (a == 0.0) return uintBitsToFloat(sign);
    int ea, eb;
    float ma = frexp(abs(a), ea), mb = frexp(abs(b), eb);
    if (!(ma >= 0.5 && mb >= 0.5)) return uintBitsToFloat(sign); /* flushed: no Newton step from 0 */
    float q0 = uintBitsToFloat(floatBitsToUint(ma / mb) - 4u);
    precise float q = q0 + kv_residual(ma, mb, q0) / mb;
    float lo = uintBitsToFloat(floatBitsToUint(q) - 1u), hi = uintBitsToFloat(floatBitsToUint(q) + 1u);
    float r = abs(kv_residual(ma, mb, q)), r_lo = abs(kv_residual(ma, mb, lo)), r_hi = abs(kv_residual(ma, mb, hi));
    float nearest = r_lo < r ? lo : (r_hi < r ? hi : q);
    return uintBitsToFloat(floatBitsToUint(ldexp(nearest, ea - eb)) | sign);
}

/* Quantizes 32 values into a block's halfwords h[0 .. kv_block_bytes() / 2), the rest of h zero:
 * h[0] the fp16 scale, then the quant bytes two by two (little-endian). As ggml: Q8_0 d = amax / 127,
 * q = roundf(x * id); Q4_0 d = m / -8 (m the first value of largest magnitude), q = min(15,
 * trunc(x * id + 8.5)); id = 1 / d in fp32, 0 when d is 0. A block holding NaN or an infinity
 * stores d = NaN and q = 0 (format/quant.h). */
void kv_quantize(float x[VKA_QUANT_VALUES], out uint h[18])
{
    bool bad = false;
    float amax = 0.0, m = 0.0;
    [[unroll]] for (uint j = 0; j < VKA_QUANT_VALUES; j++) {
        bad = bad || isnan(x[j]) || isinf(x[j]);
        if (amax < abs(x[j])) {
            amax = abs(x[j]);
            m = x[j];
        }
    }
    float d = kv_q4() ? kv_div(m, -8.0) : kv_div(amax, 127.0);
    float id = d != 0.0 ? kv_div(1.0, d) : 0.0;
    uint q[VKA_QUANT_VALUES];
    [[unroll]] for (uint j = 0; j < VKA_QUANT_VALUES; j++) {
        precise float s = x[j] * id;
        precise float t = s + 8.5;
        uint v = kv_q4() ? min(15u, uint(int(t))) : uint(kv_roundf(s)) & 0xFFu;
        q[j] = bad ? 0u : v;
    }
    [[unroll]] for (uint i = 0; i < 18; i++) h[i] = 0u;
    h[0] = bad ? 0x7E00u : kv_f32_to_f16(d);
    if (kv_q4()) {
        [[unroll]] for (uint i = 0; i < 8; i++)
            h[1 + i] = (q[2 * i] | q[2 * i + 16] << 4) | (q[2 * i + 1] | q[2 * i + 17] << 4) << 8;
    } else {
        [[unroll]] for (uint i = 0; i < 16; i++) h[1 + i] = q[2 * i] | q[2 * i + 1] << 8;
    }
}

/* Writes a block's halfwords h at byte `at` (even) of the uint array `words`. Its words are
 * stored whole but one: the word it shares with the neighbouring block (its first when `at` is not
 * a multiple of 4, else its last), which another invocation may be writing at the same time, gets
 * only its own half, by atomics (clear, then set). The block spans kv_block_bytes() / 2 + 1 (odd)
 * halfwords' worth of words: 9 (Q8_0) or 5 (Q4_0). */
#define VKA_KV_STORE_BLOCK(words, at, h)                                                            \
    {                                                                                              \
        uint hw_ = (at) >> 1, words_ = (kv_block_bytes() / 2u + 1u) / 2u;                          \
        bool odd_ = (hw_ & 1u) != 0u;                                                              \
        [[unroll]] for (uint i_ = 0; i_ < 9u; i_++) {                                              \
            if (i_ < words_) {                                                                     \
                /* odd: halves (2i - 1, 2i) of the block, the first one the neighbour's */         \
                uint lo_ = odd_ ? (i_ == 0u ? 0u : h[max(2u * i_, 1u) - 1u]) : h[2u * i_];          \
                uint hi_ = odd_ ? h[2u * i_] : h[2u * i_ + 1u];                                    \
                uint word_ = lo_ | hi_ << 16, at_ = (hw_ >> 1) + i_;                               \
                if (odd_ ? i_ == 0u : i_ == words_ - 1u) {                                         \
                    atomicAnd(words[at_], odd_ ? 0x0000FFFFu : 0xFFFF0000u);                       \
                    atomicOr(words[at_], word_);                                                   \
                } else {                                                                           \
                    words[at_] = word_;                                                            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
