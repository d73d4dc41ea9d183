/* The tensors of the model-family fixtures (tests/fixtures/models/, made by
 * tests/fixtures/make_model_fixtures.py), regenerated in C so that no weights need to be stored.
 *
 * Each family folder has config.json (the model's own, as published), case.json and one
 * <case>.npy per case: the attention layer's float64 output, (tokens, hidden_size). case.json lists,
 * per case, every tensor the layer uses: its Hugging Face name, kind, shape and digest. A test
 * makes each with mf_fill (or mf_fill_bf16), checks mf_digest against case.json's digest, runs the
 * layer and compares with the .npy. The generator's docstring gives the reference's formulas.
 *
 * The scheme (the generator follows it bit for bit):
 *   A tensor's values come from splitmix64 seeded with the FNV-1a 64 hash of its full name,
 *   e.g. "model.layers.3.self_attn.q_proj.weight" (the layer's input is "input"): one draw z per
 *   value, in row-major order of the Hugging Face shape ((out_features, in_features) for weights).
 *   With b = z >> 56 (0..255), u = (2b - 255) / 256 and n = z >> 57 (0..127):
 *     MF_KIND_WEIGHT      q/k/v/o_proj.weight, qkv_proj.weight   u * 2^-s, s = mf_weight_shift(in_features)
 *     MF_KIND_BIAS        *_proj.bias                            u / 16
 *     MF_KIND_NORM        q_norm/k_norm.weight used as w         (64 + n) / 128
 *     MF_KIND_NORM_GEMMA  Gemma's q_norm/k_norm.weight, used as (1 + w)   (n - 64) / 128
 *     MF_KIND_SINKS       gpt-oss self_attn.sinks                2u
 *     MF_KIND_INPUT       the layer's input (tokens, hidden_size)   u
 *   Every value has at most 8 significant bits, so it is exact in float32 and in bf16 (the C test
 *   may store the checkpoint as bf16 without changing a single value).
 *
 * Everything here is a pure function of its arguments; nothing allocates. */
#ifndef VKATTN_TEST_MODEL_FIXTURES_H
#define VKATTN_TEST_MODEL_FIXTURES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef enum mf_kind {
    MF_KIND_WEIGHT,
    MF_KIND_BIAS,
    MF_KIND_NORM,
    MF_KIND_NORM_GEMMA,
    MF_KIND_SINKS,
    MF_KIND_INPUT,
    MF_KIND_COUNT
} mf_kind;

/* The kind as case.json spells it ("weight", "bias", "norm", "norm_gemma", "sinks", "input"). */
static inline const char *mf_kind_name(mf_kind kind)
{
    static const char *const names[MF_KIND_COUNT] = {"weight", "bias", "norm", "norm_gemma", "sinks", "input"};
    return (unsigned)kind < MF_KIND_COUNT ? names[kind] : "?";
}

/* case.json's spelling back to the kind: 0 and *out set, or -1 for an unknown name. */
static inline int mf_kind_parse(const char *name, mf_kind *out)
{
    for (int k = 0; k < MF_KIND_COUNT; k++)
        if (strcmp(name, mf_kind_name((mf_kind)k)) == 0) {
            *out = (mf_kind)k;
            return 0;
        }
    return -1;
}

/* FNV-1a 64 of the bytes of `text` (without its terminator): a tensor stream's first state. */
static inline uint64_t mf_fnv1a64(const char *text)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}

/* splitmix64's output function (also the digest's mixer). */
static inline uint64_t mf_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Advances *state and returns the next splitmix64 draw. */
static inline uint64_t mf_splitmix64_next(uint64_t *state)
{
    *state += 0x9e3779b97f4a7c15ull;
    return mf_mix64(*state);
}

/* The weights' exponent: the least s with 4^s >= in_features, i.e. ceil(log2(in_features) / 2),
 * which keeps a projection's outputs near the size of its inputs. */
static inline unsigned mf_weight_shift(uint64_t in_features)
{
    unsigned s = 0;
    while (s < 31 && (1ull << (2 * s)) < in_features)
        s++;
    return s;
}

/* One value of `kind` from draw z; shift is mf_weight_shift(in_features) for weights, else ignored.
 * Every division is by a power of two, so the result is exact. */
static inline float mf_value(mf_kind kind, uint64_t z, unsigned shift)
{
    int u256 = 2 * (int)(z >> 56) - 255; /* u * 256: odd, -255..255 */
    int n = (int)(z >> 57);
    switch (kind) {
    case MF_KIND_WEIGHT: return (float)u256 / (float)(1ull << (8 + shift));
    case MF_KIND_BIAS: return (float)u256 / 4096.0f;
    case MF_KIND_NORM: return (float)(64 + n) / 128.0f;
    case MF_KIND_NORM_GEMMA: return (float)(n - 64) / 128.0f;
    case MF_KIND_SINKS: return (float)u256 / 128.0f;
    case MF_KIND_INPUT: return (float)u256 / 256.0f;
    case MF_KIND_COUNT: break;
    }
    return 0.0f;
}

/* Writes the first `count` values of the tensor `name` (row-major in its Hugging Face shape) to dst.
 * in_features: the shape's last dimension for MF_KIND_WEIGHT; ignored for the other kinds. */
static inline void mf_fill(const char *name, mf_kind kind, uint64_t in_features, float *dst, size_t count)
{
    uint64_t state = mf_fnv1a64(name);
    unsigned shift = mf_weight_shift(in_features);
    for (size_t i = 0; i < count; i++)
        dst[i] = mf_value(kind, mf_splitmix64_next(&state), shift);
}

/* The bf16 bit pattern of v: its float32 pattern's upper half, exact for every mf_value. */
static inline uint16_t mf_bf16_bits(float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return (uint16_t)(bits >> 16);
}

/* mf_fill, written as bf16 bit patterns. */
static inline void mf_fill_bf16(const char *name, mf_kind kind, uint64_t in_features, uint16_t *dst, size_t count)
{
    uint64_t state = mf_fnv1a64(name);
    unsigned shift = mf_weight_shift(in_features);
    for (size_t i = 0; i < count; i++)
        dst[i] = mf_bf16_bits(mf_value(kind, mf_splitmix64_next(&state), shift));
}

/* case.json's digest of a tensor: the sum, mod 2^64, of mf_mix64((i << 32) | bits_i) over its
 * values, bits_i being value i's float32 bit pattern. Compare with strtoull(digest, NULL, 16). */
static inline uint64_t mf_digest(const float *values, size_t count)
{
    uint64_t total = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t bits;
        memcpy(&bits, &values[i], sizeof bits);
        total += mf_mix64(((uint64_t)i << 32) | bits);
    }
    return total;
}

/* Writes "model.layers.<layer>.self_attn.<leaf>" (leaf e.g. "q_proj.weight", "sinks") to buf.
 * Returns 0, or -1 when buf (cap bytes) is too small; buf is always terminated when cap > 0. */
static inline int mf_layer_tensor_name(char *buf, size_t cap, unsigned layer, const char *leaf)
{
    int n = snprintf(buf, cap, "model.layers.%u.self_attn.%s", layer, leaf);
    return n >= 0 && (size_t)n < cap ? 0 : -1;
}

#endif
