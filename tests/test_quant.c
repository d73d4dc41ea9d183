/* The KV cache's block formats (ggml's Q8_0 and Q4_0) on the host, against blocks computed by hand:
 * the bytes a block of 32 values quantizes to and the values it dequantizes to, for zeros, ties,
 * all-negative blocks, a largest-magnitude value that is negative (Q4_0 keeps its sign), the
 * nibble order, fp16 rounding of the scale and non-finite values; then the sizes the API reports
 * and the CPU reference's emulation of a quantized cache (vkattn_host_forward_desc.kv_cache_dtype). */
#include <math.h>
#include <string.h>

#include "io/io.h"
#include "format/quant.h"
#include "test_util.h"

static void check_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        CHECK_MSG(got[i] == want[i], "%s: byte %zu is 0x%02x, expected 0x%02x", what, i, got[i], want[i]);
}

static void check_values(const float *got, const float *want, const char *what)
{
    for (int j = 0; j < 32; j++)
        CHECK_MSG(got[j] == want[j] || (isnan(got[j]) && isnan(want[j])), "%s: value %d is %.9g, expected %.9g", what, j,
                  (double)got[j], (double)want[j]);
}

static void test_q8_0_zeros(void)
{
    float x[32] = {0}, y[32], want[32] = {0};
    uint8_t b[34], expect[34] = {0}; /* d = 0, id = 0: every q = 0 */
    vka_quantize_q8_0(x, b);
    check_bytes(b, expect, 34, "q8_0 zeros");
    vka_dequantize_q8_0(b, y);
    check_values(y, want, "q8_0 zeros");
}

/* amax = 127: d = 1 (fp16 0x3C00) and 1/d = 1, so q = roundf(x): halves go away from zero. */
static void test_q8_0_ties(void)
{
    float x[32] = {127, 2.5f, -2.5f, 0.5f, -0.5f, -127, 1.49f, -1.5f, 126.5f, 0.49999997f};
    uint8_t b[34], expect[34] = {0x00, 0x3C, 127, 3, 0xFD /* -3 */, 1, 0xFF /* -1 */, 0x81 /* -127 */,
                                 1, 0xFE /* -2 */, 127, 0};
    float want[32] = {127, 3, -3, 1, -1, -127, 1, -2, 127, 0};
    float y[32];
    vka_quantize_q8_0(x, b);
    check_bytes(b, expect, 34, "q8_0 ties");
    vka_dequantize_q8_0(b, y);
    check_values(y, want, "q8_0 ties");
}

/* All negative, amax = 63.5: d = 0.5 (fp16 0x3800), 1/d = 2, q = roundf(2x). x_j = -(2 + 1.75 j)
 * makes 2x_j = -(4 + 3.5 j): whole for even j, a tie (away from zero) for odd j; x_31 = -63.5. */
static void test_q8_0_all_negative(void)
{
    float x[32], want[32], y[32];
    uint8_t b[34], expect[34] = {0x00, 0x38};
    for (int j = 0; j < 32; j++) {
        x[j] = j == 31 ? -63.5f : -(2.0f + 1.75f * j);
        int q = j == 31 ? -127 : -(4 + (7 * j + 1) / 2); /* -(4 + 3.5 j) rounded away from zero */
        expect[2 + j] = (uint8_t)(int8_t)q;
        want[j] = q * 0.5f;
    }
    CHECK(expect[2 + 1] == (uint8_t)(int8_t)-8 && expect[2 + 2] == (uint8_t)(int8_t)-11); /* -7.5 -> -8, -11 */
    vka_quantize_q8_0(x, b);
    check_bytes(b, expect, 34, "q8_0 all negative");
    vka_dequantize_q8_0(b, y);
    check_values(y, want, "q8_0 all negative");
}

/* amax = 1: d = 1/127 = 0.0078740157 in fp32, 0.00787353515625 in fp16 (2^-7 * (1 + 8/1024),
 * bits 0x2008). Quantization uses the fp32 d (1 -> 127, 0.5 -> 63.5 -> 64); loads use the fp16 d. */
static void test_q8_0_scale_rounding(void)
{
    float x[32] = {1.0f, 0.5f, -0.25f}, y[32];
    uint8_t b[34];
    vka_quantize_q8_0(x, b);
    CHECK(b[0] == 0x08 && b[1] == 0x20);
    CHECK(b[2] == 127 && b[3] == 64 && b[4] == (uint8_t)(int8_t)-32); /* -31.75 -> -32 */
    vka_dequantize_q8_0(b, y);
    CHECK(y[0] == 127 * 0.00787353515625f && y[1] == 64 * 0.00787353515625f && y[2] == -32 * 0.00787353515625f);
    CHECK(y[0] == 0.99993896484375f);
}

static void test_q4_0_zeros(void)
{
    float x[32] = {0}, y[32], want[32] = {0};
    /* max stays 0: d = 0 / -8 = -0 (fp16 0x8000, as ggml stores it), id = 0: q = trunc(0 + 8.5) = 8 */
    uint8_t b[18], expect[18] = {0x00, 0x80};
    for (int i = 2; i < 18; i++) expect[i] = 0x88;
    vka_quantize_q4_0(x, b);
    check_bytes(b, expect, 18, "q4_0 zeros");
    vka_dequantize_q4_0(b, y);
    check_values(y, want, "q4_0 zeros");
}

/* The largest magnitude is negative, -16: d = -16 / -8 = 2 (fp16 0x4000), 1/d = 0.5,
 * q = min(15, trunc(x / 2 + 8.5)). */
static void test_q4_0_negative_max(void)
{
    float x[32] = {0}, y[32];
    /* j:           0    1   2   3    4     5    6    7   8  */
    const float v[] = {14, 15.9f, 1, -1, 3, -16, 2.9f, -3, 0.9f};
    const int q[] = {15, 15, 9, 8, 10, 0, 9, 7, 8}; /* 15.5, 16.45 -> 15, 9, 8, 10, 0.5, 9.95, 7, 8.95 */
    for (int j = 0; j < 9; j++) x[j] = v[j];
    uint8_t b[18];
    vka_quantize_q4_0(x, b);
    CHECK(b[0] == 0x00 && b[1] == 0x40);
    for (int j = 0; j < 16; j++) {
        int lo = j < 9 ? q[j] : 8; /* values 16..31 are 0: q = 8 in every high nibble */
        CHECK_MSG(b[2 + j] == (uint8_t)(lo | 8 << 4), "q4_0 negative max: byte %d is 0x%02x, expected 0x%02x", j,
                  b[2 + j], lo | 8 << 4);
    }
    vka_dequantize_q4_0(b, y);
    for (int j = 0; j < 32; j++) CHECK(y[j] == (float)(((j < 9 ? q[j] : 8) - 8) * 2));
    CHECK(y[5] == -16 && y[0] == 14 && y[1] == 14); /* the max is exact; 15.9 clamps to 7 * 2 */
}

/* The first value of largest magnitude keeps its sign: 8 before -8 gives d = 8 / -8 = -1
 * (fp16 0xBC00), 1/d = -1: q = min(15, trunc(8.5 - x)); -8 lands at 16.5 and clamps to 15. */
static void test_q4_0_first_max_wins(void)
{
    float x[32] = {0}, y[32];
    x[3] = 8, x[20] = -8, x[7] = -7.5f, x[8] = 0.5f;
    uint8_t b[18];
    vka_quantize_q4_0(x, b);
    CHECK(b[0] == 0x00 && b[1] == 0xBC);
    CHECK(b[2 + 3] == (0 | 8 << 4));   /* x3 = 8 -> 0.5 -> 0; x19 = 0 -> 8 */
    CHECK(b[2 + 4] == (8 | 15 << 4));  /* x4 = 0 -> 8; x20 = -8 -> 16.5 -> 15 */
    CHECK(b[2 + 7] == (15 | 8 << 4));  /* x7 = -7.5 -> 16 -> 15 */
    CHECK(b[2 + 8] == (8 | 8 << 4));   /* x8 = 0.5 -> 8.0 -> 8 */
    vka_dequantize_q4_0(b, y);
    CHECK(y[3] == 8 && y[20] == -7 && y[7] == -7 && y[8] == 0 && y[0] == 0);
}

/* Value j < 16 in the low nibble of byte j, value j + 16 in its high nibble. With max = -8
 * (d = 1, 1/d = 1), q = trunc(x + 8.5): x = q - 8 comes back exactly. The pattern gives values j
 * and j + 16 different q. */
static int nibble_pattern(int j) { return (7 * j + 3 * (j / 16)) % 16; }

static void test_q4_0_nibble_order(void)
{
    float x[32], y[32];
    for (int j = 0; j < 32; j++) x[j] = (float)(nibble_pattern(j) - 8); /* x_0 = -8: the max */
    uint8_t b[18];
    vka_quantize_q4_0(x, b);
    CHECK(b[0] == 0x00 && b[1] == 0x3C);
    for (int j = 0; j < 16; j++) {
        uint8_t want = (uint8_t)(nibble_pattern(j) | nibble_pattern(j + 16) << 4);
        CHECK_MSG(b[2 + j] == want, "nibble order: byte %d is 0x%02x, expected 0x%02x", j, b[2 + j], want);
    }
    CHECK(b[2 + 1] == 0xA7); /* value 1: q 7 (low); value 17: q (119 + 3) % 16 = 10 (high) */
    vka_dequantize_q4_0(b, y);
    check_values(y, x, "q4_0 nibble order");
}

/* NaN or an infinity in a block: d = NaN (0x7E00), every q = 0; the block loads as NaN. */
static void test_non_finite_blocks(void)
{
    float x[32] = {1, 2, 3}, y[32], nan32[32];
    for (int j = 0; j < 32; j++) nan32[j] = NAN;
    uint8_t b8[34], b4[18];
    x[9] = NAN;
    vka_quantize_q8_0(x, b8);
    CHECK(b8[0] == 0x00 && b8[1] == 0x7E && b8[2] == 0 && b8[33] == 0);
    vka_dequantize_q8_0(b8, y);
    check_values(y, nan32, "q8_0 with a NaN");
    x[9] = -INFINITY;
    vka_quantize_q4_0(x, b4);
    CHECK(b4[0] == 0x00 && b4[1] == 0x7E && b4[2] == 0 && b4[17] == 0);
    vka_dequantize_q4_0(b4, y);
    check_values(y, nan32, "q4_0 with -inf");
}

static void test_sizes_and_names(void)
{
    CHECK(vkattn_dtype_size(VKATTN_DTYPE_Q8_0) == 0 && vkattn_dtype_size(VKATTN_DTYPE_Q4_0) == 0);
    CHECK(vkattn_dtype_row_size(VKATTN_DTYPE_Q8_0, 128) == 4 * 34);
    CHECK(vkattn_dtype_row_size(VKATTN_DTYPE_Q4_0, 128) == 4 * 18);
    CHECK(vkattn_dtype_row_size(VKATTN_DTYPE_Q8_0, 100) == 0); /* not whole blocks */
    CHECK(vkattn_dtype_row_size(VKATTN_DTYPE_F16, 100) == 200);
    CHECK(vkattn_dtype_row_size(VKATTN_DTYPE_F32, 3) == 12);
    CHECK(vkattn_dtype_row_size((vkattn_dtype)99, 32) == 0);
    CHECK(strcmp(vkattn_dtype_name(VKATTN_DTYPE_Q8_0), "q8_0") == 0);
    CHECK(strcmp(vkattn_dtype_name(VKATTN_DTYPE_Q4_0), "q4_0") == 0);
    float x[64] = {1.0f / 3};
    CHECK(vka_dtype_round_trip(VKATTN_DTYPE_Q8_0, x, 40) == -1 && x[0] == 1.0f / 3); /* not whole blocks */
    CHECK(vka_dtype_round_trip(VKATTN_DTYPE_I32, x, 64) == -1);
    CHECK(vka_dtype_round_trip(VKATTN_DTYPE_F16, x, 1) == 0 && x[0] == 0.333251953125f);
    /* arrays hold elements: a block format cannot be written as .npy */
    uint8_t raw[34] = {0}, *npy = NULL;
    size_t size = 0;
    vkattn_array a = {.dtype = VKATTN_DTYPE_Q8_0, .rank = 1, .dims = {32}, .data = raw, .bytes = 34};
    vkattn_error error = {0};
    CHECK_STATUS(vka_npy_encode(&a, &npy, &size, &error), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(npy == NULL && strstr(error.message, "block format") != NULL);
}

/* The public conversions (vkattn_dtype_from_f32 / _to_f32) against hand-computed bit patterns:
 * fp16's rounding to nearest even, overflow, subnormals, signed zero and NaN; a Q8_0 block's bytes
 * (test_q8_0_ties' block) and its values; then what they refuse, leaving dst as it was. */
static void test_public_conversions(void)
{
    /* 1 + 2^-11 is a tie between 1 and 1 + 2^-10: to even, 1 (0x3C00); 1 + 3 * 2^-11 to 1 + 2^-9
     * (0x3C02); 65504 is the largest half, 65520 rounds to infinity; 2^-24 the least subnormal,
     * 2^-26 rounds to +0 */
    const float x[9] = {1.0f + 0x1p-11f, 1.0f + 0x3p-11f, 65504.0f, 65520.0f, -0.0f, 0x1p-24f, 0x1p-26f,
                        -2.5f, NAN};
    const uint16_t want[9] = {0x3C00, 0x3C02, 0x7BFF, 0x7C00, 0x8000, 0x0001, 0x0000, 0xC100, 0};
    uint8_t h[18];
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_F16, x, 9, h), VKATTN_OK);
    for (int i = 0; i < 8; i++) {
        uint16_t got = (uint16_t)(h[2 * i] | h[2 * i + 1] << 8); /* little-endian, as the device reads it */
        CHECK_MSG(got == want[i], "f16 of %.9g is 0x%04x, expected 0x%04x", (double)x[i], got, want[i]);
    }
    uint16_t nan_bits = (uint16_t)(h[16] | h[17] << 8);
    CHECK_MSG((nan_bits & 0x7C00) == 0x7C00 && (nan_bits & 0x3FF) != 0, "NaN became 0x%04x", nan_bits);
    float back[9];
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_F16, h, 9, back), VKATTN_OK);
    const float back_want[8] = {1.0f, 1.0f + 0x1p-9f, 65504.0f, INFINITY, -0.0f, 0x1p-24f, 0.0f, -2.5f};
    for (int i = 0; i < 8; i++)
        CHECK_MSG(back[i] == back_want[i] && signbit(back[i]) == signbit(back_want[i]), "f16 back: %d is %.9g", i,
                  (double)back[i]);
    CHECK(isnan(back[8]));

    /* a Q8_0 block: test_q8_0_ties' (d = 1, q = roundf(x)) */
    float q[32] = {127, 2.5f, -2.5f, 0.5f, -0.5f, -127, 1.49f, -1.5f, 126.5f, 0.49999997f}, qy[32];
    const uint8_t qwant[34] = {0x00, 0x3C, 127, 3, 0xFD, 1, 0xFF, 0x81, 1, 0xFE, 127, 0};
    uint8_t qb[34];
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_Q8_0, q, 32, qb), VKATTN_OK);
    check_bytes(qb, qwant, 34, "vkattn_dtype_from_f32 q8_0");
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_Q8_0, qb, 32, qy), VKATTN_OK);
    const float qywant[32] = {127, 3, -3, 1, -1, -127, 1, -2, 127, 0};
    check_values(qy, qywant, "vkattn_dtype_to_f32 q8_0");
    /* F32 is a copy, in place too */
    float c[2] = {1.5f, -7.0f};
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_F32, c, 2, c), VKATTN_OK);
    CHECK(c[0] == 1.5f && c[1] == -7.0f);

    /* refused, dst untouched */
    uint8_t keep[34];
    memset(keep, 0xAB, sizeof keep);
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_Q4_0, q, 31, keep), VKATTN_ERROR_SHAPE);
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_BOOL, q, 4, keep), VKATTN_ERROR_DTYPE);
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_I32, q, 4, keep), VKATTN_ERROR_DTYPE);
    CHECK_STATUS(vkattn_dtype_to_f32((vkattn_dtype)99, keep, 4, qy), VKATTN_ERROR_DTYPE);
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_F16, NULL, 4, keep), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_F16, keep, 4, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    for (size_t i = 0; i < sizeof keep; i++) CHECK_MSG(keep[i] == 0xAB, "refused call wrote byte %zu", i);
    float spare[32];
    memcpy(spare, qy, sizeof spare);
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_Q8_0, qb, 33, qy), VKATTN_ERROR_SHAPE);
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_BOOL, qb, 4, qy), VKATTN_ERROR_DTYPE);
    CHECK(memcmp(spare, qy, sizeof spare) == 0);
    /* Overlap is judged on each side's own size: 8 floats (32 bytes) against their 16 halves. */
    float ov[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_F16, ov, 8, (char *)ov + 16), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_F16, ov, 4, ov), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(ov[0] == 1 && ov[7] == 8); /* refused: nothing written */
    /* floats at bytes 16..48, halves to bytes 0..16: apart, so converted */
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_F16, ov + 4, 8, ov), VKATTN_OK);
    float wide[8];
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_F16, ov, 8, wide), VKATTN_OK);
    for (int i = 0; i < 8; i++) CHECK_MSG(wide[i] == (float)(5 + i), "apart: value %d is %g", i, (double)wide[i]);
    /* halves at bytes 0..8 widened to floats at bytes 4..20: overlapping, refused; at 16..32: apart */
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_F16, ov, 4, ov + 1), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_F16, ov, 4, ov + 4), VKATTN_OK);
    CHECK(ov[4] == 5 && ov[7] == 8);
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_F16, NULL, 0, NULL), VKATTN_OK); /* nothing to do */
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_F16, ov, SIZE_MAX / 2, (char *)ov + 64),
                 VKATTN_ERROR_INVALID_ARGUMENT); /* its fp32 bytes overflow size_t */

    /* Q4_0 through the public calls: test_q4_0's rule on a block whose largest magnitude is -8
     * (d = 1, q = min(15, trunc(x + 8.5))), and a block holding infinity: d = NaN, all NaN back */
    float q4[32] = {-8, 7, 0.4f, -0.6f, 3}, q4y[32];
    uint8_t q4b[18];
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_Q4_0, q4, 32, q4b), VKATTN_OK);
    const uint8_t q4want[18] = {0x00, 0x3C, 0x80, 0x8F, 0x88, 0x87, 0x8B, 0x88, 0x88, 0x88,
                                0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
    check_bytes(q4b, q4want, 18, "vkattn_dtype_from_f32 q4_0");
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_Q4_0, q4b, 32, q4y), VKATTN_OK);
    const float q4ywant[32] = {-8, 7, 0, -1, 3};
    check_values(q4y, q4ywant, "vkattn_dtype_to_f32 q4_0");
    q4[9] = INFINITY;
    CHECK_STATUS(vkattn_dtype_from_f32(VKATTN_DTYPE_Q4_0, q4, 32, q4b), VKATTN_OK);
    CHECK_STATUS(vkattn_dtype_to_f32(VKATTN_DTYPE_Q4_0, q4b, 32, q4y), VKATTN_OK);
    for (int j = 0; j < 32; j++) CHECK_MSG(isnan(q4y[j]), "q4_0 block with inf: value %d is %g", j, (double)q4y[j]);
}

/* Round trips of N(0,1)-like blocks (uniform here, scaled to unit variance): the error each
 * format allows, per value. Printed; bounded loosely (a format bug shows as a far larger error). */
static void test_round_trip_error(void)
{
    enum { N = 32 * 256 };
    static float x[N], y[N];
    test_rng rng = test_rng_make(7);
    test_fill(&rng, x, N, 1.7320508f);
    const vkattn_dtype dts[2] = {VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};
    const double bound[2] = {1e-4, 2e-2};
    for (int t = 0; t < 2; t++) {
        memcpy(y, x, sizeof x);
        CHECK(vka_dtype_round_trip(dts[t], y, N) == 0);
        double err = 0, ref = 0;
        for (int i = 0; i < N; i++) err += (double)(y[i] - x[i]) * (y[i] - x[i]), ref += (double)x[i] * x[i];
        printf("  %s round trip of unit-variance values: nmse %.2e\n", vkattn_dtype_name(dts[t]), err / ref);
        CHECK(err / ref < bound[t]);
    }
}

/* The reference with kv_cache_dtype rounds k (after RoPE) and v as the cache would: one token, one
 * head of D = 32 with identity projections attends to itself only, so its output is its value row
 * after the round trip. */
static void test_reference_emulates_the_cache(void)
{
    enum { E = 32 };
    static float in_proj[3 * E * E], out_proj[E * E];
    for (int i = 0; i < E; i++) {
        for (int p = 0; p < 3; p++) in_proj[(p * E + i) * E + i] = 1;
        out_proj[i * E + i] = 1;
    }
    vkattn_layer_desc layer = {.embed_dim = E, .num_heads = 1, .no_bias = 1};
    vkattn_weights w = {.in_proj_weight = in_proj, .out_proj_weight = out_proj};
    float x[E], out[E], want[E];
    test_rng rng = test_rng_make(3);
    test_fill(&rng, x, E, 2.0f);
    const vkattn_dtype dts[4] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};
    for (int t = 0; t < 4; t++) {
        vkattn_host_forward_desc f = {.batch = 1, .query_len = 1, .query = x, .output = out, .causal = 1,
                                      .kv_cache_dtype = dts[t]};
        vkattn_error error = {0};
        CHECK_STATUS(vkattn_reference_forward(&layer, &w, &f, &error), VKATTN_OK);
        memcpy(want, x, sizeof x);
        CHECK(vka_dtype_round_trip(dts[t], want, E) == 0);
        for (int i = 0; i < E; i++)
            CHECK_MSG(fabsf(out[i] - want[i]) <= 1e-6f, "%s: output %d is %.9g, expected %.9g",
                      vkattn_dtype_name(dts[t]), i, (double)out[i], (double)want[i]);
    }
    /* A head dim that is not whole blocks, and a dtype that is no cache's */
    vkattn_layer_desc two = {.embed_dim = E, .num_heads = 2, .no_bias = 1};
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 1, .query = x, .output = out,
                                  .kv_cache_dtype = VKATTN_DTYPE_Q4_0};
    vkattn_error error = {0};
    CHECK_STATUS(vkattn_reference_forward(&two, &w, &f, &error), VKATTN_ERROR_INVALID_ARGUMENT);
    printf("  D = 16: %s\n", error.message);
    f.kv_cache_dtype = VKATTN_DTYPE_BOOL;
    CHECK_STATUS(vkattn_reference_forward(&layer, &w, &f, &error), VKATTN_ERROR_INVALID_ARGUMENT);
    printf("  bool: %s\n", error.message);
}

int main(void)
{
    RUN_TEST(test_q8_0_zeros);
    RUN_TEST(test_public_conversions);
    RUN_TEST(test_q8_0_ties);
    RUN_TEST(test_q8_0_all_negative);
    RUN_TEST(test_q8_0_scale_rounding);
    RUN_TEST(test_q4_0_zeros);
    RUN_TEST(test_q4_0_negative_max);
    RUN_TEST(test_q4_0_first_max_wins);
    RUN_TEST(test_q4_0_nibble_order);
    RUN_TEST(test_non_finite_blocks);
    RUN_TEST(test_sizes_and_names);
    RUN_TEST(test_round_trip_error);
    RUN_TEST(test_reference_emulates_the_cache);
    return test_finish();
}
