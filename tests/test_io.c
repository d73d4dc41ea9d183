/* Tests for the .npy and safetensors readers and writers (src/io/): round trips, numpy-written
 * fixtures, 16-bit float conversions, hostile files (each must give its exact status and a message)
 * and a mutation loop over valid files.
 *
 * Usage: test_io [FIXTURES_DIR]   (default: fixtures/io, then tests/fixtures/io)
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h" /* vka_format_dims */
#include "format/half.h"
#include "io/io.h"
#include "test_util.h"

/* ---- shared helpers --------------------------------------------------------------------------- */

typedef struct test_env {
    char dir[256];
    const char *fixtures;
} test_env;

static test_env env_g;

static const char *temp_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", env_g.dir, name);
    return buf;
}

static const char *fixture_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", env_g.fixtures, name);
    return buf;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(fwrite(data, 1, n, f) == n);
    fclose(f);
}

/* An exact-size heap copy, so that the sanitizers see any read past the end. */
static uint8_t *heap_copy(const void *data, size_t n)
{
    uint8_t *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, data, n);
    return copy;
}

static int contains(const char *haystack, const char *needle) { return strstr(haystack, needle) != NULL; }

static uint32_t f32_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static float bits_f32(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* ---- 16-bit floats ---------------------------------------------------------------------------- */

static void test_f16_known_values(void)
{
    CHECK(vka_f16_to_f32(0x3C00) == 1.0f);
    CHECK(vka_f16_to_f32(0xC000) == -2.0f);
    CHECK(vka_f16_to_f32(0x7BFF) == 65504.0f);
    CHECK(vka_f16_to_f32(0x0001) == 0x1p-24f);
    CHECK(vka_f16_to_f32(0x03FF) == 0x1p-14f - 0x1p-24f);
    CHECK(vka_f16_to_f32(0x0400) == 0x1p-14f);
    CHECK(f32_bits(vka_f16_to_f32(0x8000)) == 0x80000000u);
    CHECK(vka_f16_to_f32(0x7C00) == INFINITY);
    CHECK(vka_f16_to_f32(0xFC00) == -INFINITY);
    CHECK(isnan(vka_f16_to_f32(0x7E00)));
    CHECK(isnan(vka_f16_to_f32(0x7C01)));

    CHECK(vka_f32_to_f16(1.0f) == 0x3C00);
    CHECK(vka_f32_to_f16(65504.0f) == 0x7BFF);
    CHECK(vka_f32_to_f16(65519.0f) == 0x7BFF);  /* below the midpoint to 65536 */
    CHECK(vka_f32_to_f16(65520.0f) == 0x7C00);  /* the midpoint rounds to even: infinity */
    CHECK(vka_f32_to_f16(1e6f) == 0x7C00);
    CHECK(vka_f32_to_f16(-1e6f) == 0xFC00);
    CHECK(vka_f32_to_f16(INFINITY) == 0x7C00);
    CHECK(vka_f32_to_f16(-INFINITY) == 0xFC00);
    CHECK(vka_f32_to_f16(-0.0f) == 0x8000);
    uint16_t nan = vka_f32_to_f16(NAN);
    CHECK((nan & 0x7C00) == 0x7C00 && (nan & 0x03FF) != 0);
    CHECK((vka_f32_to_f16(bits_f32(0x7F800001u)) & 0x03FF) != 0); /* a NaN whose payload is in the low bits */
    CHECK(vka_f32_to_f16(0x1p-24f) == 0x0001);
    CHECK(vka_f32_to_f16(0x1p-25f) == 0x0000);                        /* tie: rounds to even 0 */
    CHECK(vka_f32_to_f16(bits_f32(f32_bits(0x1p-25f) + 1)) == 0x0001); /* just above the tie */
    CHECK(vka_f32_to_f16(3 * 0x1p-25f) == 0x0002);                    /* tie between 1 and 2: even */
    CHECK(vka_f32_to_f16(0x1p-26f) == 0x0000);
    CHECK(vka_f32_to_f16(0x1p-14f - 0x1p-25f) == 0x0400);             /* tie: up into the normals */
    CHECK(vka_f32_to_f16(1.0f + 0x1p-11f) == 0x3C00);                 /* tie: even */
    CHECK(vka_f32_to_f16(1.0f + 3 * 0x1p-11f) == 0x3C02);             /* tie: even */
    CHECK(vka_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f) == 0x3C01);
    CHECK(vka_f32_to_f16(-1.0f - 0x1p-11f - 0x1p-20f) == 0xBC01);
}

static void test_f16_exhaustive_round_trip(void)
{
    int bad = 0;
    for (uint32_t h = 0; h <= 0xFFFF; h++) {
        float f = vka_f16_to_f32((uint16_t)h);
        uint16_t back = vka_f32_to_f16(f);
        if ((h & 0x7C00) == 0x7C00 && (h & 0x03FF)) {
            if (!isnan(f) || (back & 0x7C00) != 0x7C00 || !(back & 0x03FF)) bad++;
        } else if (back != h) {
            bad++;
        }
    }
    CHECK_MSG(bad == 0, "%d of 65536 half values do not survive f16 -> f32 -> f16", bad);
    /* Every float between two neighbouring halves rounds to the nearer one. */
    bad = 0;
    for (uint32_t h = 0; h < 0x7BFF; h += 7) {
        float lo = vka_f16_to_f32((uint16_t)h), hi = vka_f16_to_f32((uint16_t)(h + 1));
        float below = bits_f32(f32_bits(lo + (hi - lo) * 0.5f) - 1), above = bits_f32(f32_bits(lo + (hi - lo) * 0.5f) + 1);
        if (vka_f32_to_f16(below) != h || vka_f32_to_f16(above) != h + 1) bad++;
    }
    CHECK_MSG(bad == 0, "%d midpoints round the wrong way", bad);
}

static void test_bf16(void)
{
    CHECK(vka_bf16_to_f32(0x3F80) == 1.0f);
    CHECK(vka_bf16_to_f32(0xC040) == -3.0f);
    CHECK(vka_bf16_to_f32(0x7F80) == INFINITY);
    CHECK(isnan(vka_bf16_to_f32(0x7FC0)));
    CHECK(vka_bf16_to_f32(0x0001) == 0x1p-133f);
    CHECK(vka_f32_to_bf16(1.0f) == 0x3F80);
    CHECK(vka_f32_to_bf16(1.0f + 0x1p-8f) == 0x3F80);     /* tie: even */
    CHECK(vka_f32_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3F82); /* tie: even */
    CHECK(vka_f32_to_bf16(bits_f32(0x7F7FFFFFu)) == 0x7F80);
    uint16_t nan = vka_f32_to_bf16(bits_f32(0x7F800001u));
    CHECK((nan & 0x7F80) == 0x7F80 && (nan & 0x007F) != 0);
    int bad = 0;
    for (uint32_t b = 0; b <= 0xFFFF; b++) {
        float f = vka_bf16_to_f32((uint16_t)b);
        if (!isnan(f) && vka_f32_to_bf16(f) != b) bad++;
    }
    CHECK_MSG(bad == 0, "%d bf16 values do not survive a round trip", bad);
}

/* ---- .npy: round trips and fixtures ----------------------------------------------------------- */

/* Fills element i of an array of `dtype` with a value that identifies it. */
static void fill_element(vkattn_dtype dtype, void *data, size_t i)
{
    switch (dtype) {
    case VKATTN_DTYPE_F32: ((float *)data)[i] = (float)i * 0.25f - 3.0f; break;
    case VKATTN_DTYPE_F16: ((uint16_t *)data)[i] = vka_f32_to_f16((float)i * 0.5f - 2.0f); break;
    case VKATTN_DTYPE_BOOL: ((uint8_t *)data)[i] = (uint8_t)(i % 3); break; /* 2 must read back as 1 */
    case VKATTN_DTYPE_I32: ((int32_t *)data)[i] = (int32_t)(i * 1000003u) - 7; break;
    default: break; /* the block formats: no array holds them */
    }
}

/* True if element i read back (in the loaded dtype) matches what fill_element wrote. */
static int element_matches(vkattn_dtype written, const vkattn_array *a, size_t i)
{
    switch (written) {
    case VKATTN_DTYPE_F32: return ((const float *)a->data)[i] == (float)i * 0.25f - 3.0f;
    case VKATTN_DTYPE_F16: return ((const float *)a->data)[i] == (float)i * 0.5f - 2.0f;
    case VKATTN_DTYPE_BOOL: return ((const uint8_t *)a->data)[i] == (i % 3 != 0);
    case VKATTN_DTYPE_I32: return ((const int32_t *)a->data)[i] == (int32_t)(i * 1000003u) - 7;
    default: break;
    }
    return 0;
}

/* The header of an encoded file: data aligned to 64, '\n' last, the shape written numpy's way. */
static void check_encoded_layout(const uint8_t *file, size_t size, const char *shape_text)
{
    CHECK(size >= 10 && memcmp(file, "\x93NUMPY\x01\x00", 8) == 0);
    size_t header_len = (size_t)file[8] | (size_t)file[9] << 8;
    CHECK((10 + header_len) % 64 == 0);
    CHECK(file[10 + header_len - 1] == '\n');
    char needle[64];
    snprintf(needle, sizeof needle, "'shape': %s, }", shape_text);
    char header[256] = {0};
    memcpy(header, file + 10, header_len < 255 ? header_len : 255);
    CHECK_MSG(contains(header, needle), "header %s lacks %s", header, needle);
}

static void test_npy_round_trip(void)
{
    static const uint32_t dims[VKATTN_MAX_RANK] = {3, 1, 4, 2};
    static const char *const shapes[] = {"()", "(3,)", "(3, 1)", "(3, 1, 4)", "(3, 1, 4, 2)"};
    static const vkattn_dtype loads_as[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F32, VKATTN_DTYPE_BOOL, VKATTN_DTYPE_I32};
    char path[512];
    for (int dt = 0; dt < 4; dt++) {
        for (uint32_t rank = 0; rank <= VKATTN_MAX_RANK; rank++) {
            vkattn_dtype dtype = (vkattn_dtype)dt;
            vkattn_array a = {.dtype = dtype, .rank = rank};
            size_t count = 1;
            for (uint32_t i = 0; i < rank; i++) count *= a.dims[i] = dims[i];
            a.bytes = count * vkattn_dtype_size(dtype);
            a.data = malloc(a.bytes);
            for (size_t i = 0; i < count; i++) fill_element(dtype, a.data, i);
            snprintf(path, sizeof path, "%s/rt_%d_%u.npy", env_g.dir, dt, rank);
            vkattn_error err = {0};
            CHECK_STATUS(vkattn_npy_write(path, &a, &err), VKATTN_OK);

            uint8_t *file = NULL;
            size_t size = 0;
            CHECK_STATUS(vka_read_file(path, 1 << 20, &file, &size, &err), VKATTN_OK);
            if (file) check_encoded_layout(file, size, shapes[rank]);
            free(file);

            vkattn_array b = {0};
            CHECK_STATUS(vkattn_npy_read(path, &b, &err), VKATTN_OK);
            CHECK(b.dtype == loads_as[dt]);
            CHECK(b.rank == rank);
            CHECK(b.bytes == count * vkattn_dtype_size(loads_as[dt]));
            for (uint32_t i = 0; i < rank; i++) CHECK(b.dims[i] == dims[i]);
            int bad = 0;
            for (size_t i = 0; b.data && i < count; i++) bad += !element_matches(dtype, &b, i);
            CHECK_MSG(bad == 0, "dtype %d rank %u: %d elements differ", dt, rank, bad);
            vkattn_array_free(&b);
            CHECK(b.data == NULL && b.bytes == 0);
            free(a.data);
            remove(path);
        }
    }
}

static void test_npy_encode_matches_numpy(void)
{
    /* Same array as the fixture numpy wrote: the data bytes must agree. */
    float values[6];
    for (int i = 0; i < 6; i++) values[i] = (float)i * 0.5f - 1.0f;
    vkattn_array a = {.dtype = VKATTN_DTYPE_F32, .rank = 2, .dims = {2, 3}, .data = values, .bytes = sizeof values};
    uint8_t *ours = NULL, *theirs = NULL;
    size_t our_size = 0, their_size = 0;
    char path[512];
    CHECK_STATUS(vka_npy_encode(&a, &ours, &our_size, NULL), VKATTN_OK);
    CHECK_STATUS(vka_read_file(fixture_path(path, sizeof path, "f4_2x3.npy"), 1 << 20, &theirs, &their_size, NULL),
                 VKATTN_OK);
    if (ours && theirs && our_size >= 24 && their_size >= 24) {
        CHECK(memcmp(ours + our_size - 24, theirs + their_size - 24, 24) == 0);
        static const char start[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
        CHECK(memcmp(ours, start, sizeof start - 1) == 0);
        check_encoded_layout(ours, our_size, "(2, 3)");
    }
    free(ours);
    free(theirs);
}

typedef struct npy_fixture {
    const char *file;
    vkattn_dtype dtype;
    uint32_t rank;
    uint32_t dims[VKATTN_MAX_RANK];
    double values[6]; /* the first min(count, 6) elements */
} npy_fixture;

static void test_npy_numpy_fixtures(void)
{
    static const npy_fixture cases[] = {
        {"f4_2x3.npy", VKATTN_DTYPE_F32, 2, {2, 3}, {-1.0, -0.5, 0.0, 0.5, 1.0, 1.5}},
        {"f2_4.npy", VKATTN_DTYPE_F32, 1, {4}, {1.0, -2.0, 0.5, 65504.0}},
        {"f8_2x2.npy", VKATTN_DTYPE_F32, 2, {2, 2}, {(float)0.1, -1e30f, 3.0, 0x1p-140}},
        {"i8_3.npy", VKATTN_DTYPE_I32, 1, {3}, {-1, 0, 2147483647}},
        {"i4_scalar.npy", VKATTN_DTYPE_I32, 0, {0}, {-7}},
        {"b1_2x2.npy", VKATTN_DTYPE_BOOL, 2, {2, 2}, {1, 0, 0, 1}},
        {"be_f4_3.npy", VKATTN_DTYPE_F32, 1, {3}, {1.5, -2.25, 3.0}},
        {"be_i4_1x2x1x2.npy", VKATTN_DTYPE_I32, 4, {1, 2, 1, 2}, {1, -2, 3, 2147483647}},
        {"f4_0x3.npy", VKATTN_DTYPE_F32, 2, {0, 3}, {0}},
        {"f4_v2.npy", VKATTN_DTYPE_F32, 2, {1, 2}, {1.0, 2.0}},
        {"f4_v3.npy", VKATTN_DTYPE_F32, 2, {1, 2}, {1.0, 2.0}},
    };
    char path[512];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const npy_fixture *f = &cases[c];
        vkattn_array a = {0};
        vkattn_error err = {0};
        vkattn_status status = vkattn_npy_read(fixture_path(path, sizeof path, f->file), &a, &err);
        CHECK_MSG(status == VKATTN_OK, "%s: %s", f->file, err.message);
        if (status != VKATTN_OK) continue;
        size_t count = 1;
        for (uint32_t i = 0; i < f->rank; i++) count *= f->dims[i];
        CHECK_MSG(a.dtype == f->dtype && a.rank == f->rank, "%s: dtype %d rank %u", f->file, (int)a.dtype, a.rank);
        CHECK(a.bytes == count * vkattn_dtype_size(f->dtype));
        CHECK(a.data != NULL);
        for (uint32_t i = 0; i < f->rank; i++) CHECK(a.dims[i] == f->dims[i]);
        for (size_t i = 0; i < count && i < 6; i++) {
            double got = f->dtype == VKATTN_DTYPE_F32    ? (double)((float *)a.data)[i]
                         : f->dtype == VKATTN_DTYPE_I32 ? (double)((int32_t *)a.data)[i]
                                                         : (double)((uint8_t *)a.data)[i];
            CHECK_MSG(got == f->values[i], "%s[%zu] = %.9g, expected %.9g", f->file, i, got, f->values[i]);
        }
        vkattn_array_free(&a);
    }
}

static void test_npy_refused_fixtures(void)
{
    static const struct {
        const char *file, *needle;
    } cases[] = {
        {"fortran_2x3.npy", "fortran_order"}, {"u1_2.npy", "|u1"},           {"f8_overflow.npy", "float32"},
        {"i8_overflow.npy", "int32"},         {"f4_rank5.npy", "4 dimensions"},
    };
    char path[512];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        vkattn_array a = {.rank = 99};
        vkattn_error err = {0};
        fixture_path(path, sizeof path, cases[c].file);
        CHECK_STATUS(vkattn_npy_read(path, &a, &err), VKATTN_ERROR_FORMAT);
        CHECK(err.status == VKATTN_ERROR_FORMAT);
        CHECK_MSG(contains(err.message, cases[c].needle) && contains(err.message, path), "%s: message '%s'",
                  cases[c].file, err.message);
        CHECK(a.rank == 99 && a.data == NULL); /* untouched on failure */
    }
}

/* ---- .npy: hostile input ---------------------------------------------------------------------- */

/* Builds a .npy file: preamble for `major`.`minor`, the header text as given, then `data_len`
 * bytes of 0x01. */
static uint8_t *make_npy(int major, int minor, const char *header, size_t data_len, size_t *size)
{
    size_t width = major == 1 ? 2 : 4, hl = strlen(header);
    *size = 8 + width + hl + data_len;
    uint8_t *buf = malloc(*size);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (uint8_t)major;
    buf[7] = (uint8_t)minor;
    for (size_t i = 0; i < width; i++) buf[8 + i] = (uint8_t)(hl >> (8 * i));
    memcpy(buf + 8 + width, header, hl);
    memset(buf + 8 + width + hl, 1, data_len);
    return buf;
}

#define NPY_H(descr, shape) "{'descr': '" descr "', 'fortran_order': False, 'shape': " shape ", }\n"

typedef struct npy_case {
    const char *name;
    int major, minor;
    const char *header;
    size_t data_len;
    int mutation; /* 0 none, 1 bad magic, 2 header_len past the end, 3 cut to 9 bytes, 4 cut to 11 bytes */
    vkattn_status want;
    const char *needle;
} npy_case;

static const npy_case k_npy_cases[] = {
    {"valid f4 (2,3)", 1, 0, NPY_H("<f4", "(2, 3)"), 24, 0, VKATTN_OK, NULL},
    {"valid, keys reordered, double quotes", 1, 0, "{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<i4\"}", 8, 0,
     VKATTN_OK, NULL},
    {"valid, no trailing comma, tabs", 2, 0, "{'descr':'|b1',\t'fortran_order':False,'shape':(1,1,)}", 1, 0, VKATTN_OK,
     NULL},
    {"valid, Python 2 long dims", 1, 0, NPY_H("<f4", "(2L, 1L)"), 8, 0, VKATTN_OK, NULL},
    {"bad magic", 1, 0, NPY_H("<f4", "(2,)"), 8, 1, VKATTN_ERROR_FORMAT, "magic"},
    {"version 4.0", 4, 0, NPY_H("<f4", "(2,)"), 8, 0, VKATTN_ERROR_FORMAT, "version 4.0"},
    {"version 1.1", 1, 1, NPY_H("<f4", "(2,)"), 8, 0, VKATTN_ERROR_FORMAT, "version 1.1"},
    {"version 0.0", 0, 0, NPY_H("<f4", "(2,)"), 8, 0, VKATTN_ERROR_FORMAT, "version 0.0"},
    {"header_len past the end", 1, 0, NPY_H("<f4", "(2,)"), 8, 2, VKATTN_ERROR_FORMAT, "header_len"},
    {"shorter than the preamble", 1, 0, NPY_H("<f4", "(2,)"), 8, 3, VKATTN_ERROR_FORMAT, "preamble"},
    {"v2 cut inside header_len", 2, 0, NPY_H("<f4", "(2,)"), 8, 4, VKATTN_ERROR_FORMAT, "header length"},
    {"empty header", 1, 0, "", 0, 0, VKATTN_ERROR_FORMAT, "'{'"},
    {"missing shape", 1, 0, "{'descr': '<f4', 'fortran_order': False}", 4, 0, VKATTN_ERROR_FORMAT, "'shape' is missing"},
    {"missing descr", 1, 0, "{'fortran_order': False, 'shape': (1,)}", 4, 0, VKATTN_ERROR_FORMAT, "'descr' is missing"},
    {"missing fortran_order", 1, 0, "{'descr': '<f4', 'shape': (1,)}", 4, 0, VKATTN_ERROR_FORMAT, "'fortran_order'"},
    {"fortran_order True", 1, 0, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2)}", 16, 0, VKATTN_ERROR_FORMAT,
     "fortran_order is True"},
    {"fortran_order 1", 1, 0, "{'descr': '<f4', 'fortran_order': 1, 'shape': (2,)}", 8, 0, VKATTN_ERROR_FORMAT,
     "True or False"},
    {"duplicate key", 1, 0, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", 4, 0,
     VKATTN_ERROR_FORMAT, "twice"},
    {"unknown key", 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", 4, 0, VKATTN_ERROR_FORMAT,
     "unknown key"},
    {"descr <u2", 1, 0, NPY_H("<u2", "(2,)"), 4, 0, VKATTN_ERROR_FORMAT, "'<u2' is not supported"},
    {"descr <c8", 1, 0, NPY_H("<c8", "(1,)"), 8, 0, VKATTN_ERROR_FORMAT, "<c8"},
    {"descr |O", 1, 0, NPY_H("|O", "(1,)"), 8, 0, VKATTN_ERROR_FORMAT, "|O"},
    {"descr <U5", 1, 0, NPY_H("<U5", "(1,)"), 20, 0, VKATTN_ERROR_FORMAT, "<U5"},
    {"descr <b1 (wrong order char)", 1, 0, NPY_H("<b1", "(1,)"), 1, 0, VKATTN_ERROR_FORMAT, "<b1"},
    {"descr |f4 (wrong order char)", 1, 0, NPY_H("|f4", "(1,)"), 4, 0, VKATTN_ERROR_FORMAT, "|f4"},
    {"descr empty", 1, 0, NPY_H("", "(1,)"), 4, 0, VKATTN_ERROR_FORMAT, "descr"},
    {"structured descr", 1, 0, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", 4, 0,
     VKATTN_ERROR_FORMAT, "structured"},
    {"negative dim", 1, 0, NPY_H("<f4", "(-3,)"), 0, 0, VKATTN_ERROR_FORMAT, "negative"},
    {"non-number dim", 1, 0, NPY_H("<f4", "('a',)"), 0, 0, VKATTN_ERROR_FORMAT, "not a non-negative integer"},
    {"fractional dim", 1, 0, NPY_H("<f4", "(3.5,)"), 12, 0, VKATTN_ERROR_FORMAT, "shape"},
    {"dim with leading junk", 1, 0, NPY_H("<f4", "(+3,)"), 12, 0, VKATTN_ERROR_FORMAT, "not a non-negative integer"},
    {"dim above uint32", 1, 0, NPY_H("<f4", "(4294967296,)"), 0, 0, VKATTN_ERROR_FORMAT, "4294967295"},
    {"rank 5", 1, 0, NPY_H("<f4", "(1, 1, 1, 1, 1)"), 4, 0, VKATTN_ERROR_FORMAT, "more than 4"},
    {"rank 1 without comma", 1, 0, NPY_H("<f4", "(3)"), 12, 0, VKATTN_ERROR_FORMAT, "(3,)"},
    {"shape not a tuple", 1, 0, NPY_H("<f4", "[3]"), 12, 0, VKATTN_ERROR_FORMAT, "tuple"},
    {"shape (,)", 1, 0, NPY_H("<f4", "(,)"), 0, 0, VKATTN_ERROR_FORMAT, "shape"},
    {"shape unterminated", 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,", 12, 0, VKATTN_ERROR_FORMAT,
     "end of the header"},
    {"element count overflows", 1, 0, NPY_H("<f8", "(4294967295, 4294967295, 4294967295, 4294967295)"), 0, 0,
     VKATTN_ERROR_FORMAT, "fit in memory"},
    {"data shorter than the shape", 1, 0, NPY_H("<f4", "(2, 3)"), 23, 0, VKATTN_ERROR_FORMAT, "truncated"},
    {"no data at all", 1, 0, NPY_H("<f8", "(1,)"), 0, 0, VKATTN_ERROR_FORMAT, "truncated"},
    {"trailing bytes", 1, 0, NPY_H("<f4", "(2,)"), 9, 0, VKATTN_ERROR_FORMAT, "trailing"},
    {"unterminated string", 1, 0, "{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", 4, 0, VKATTN_ERROR_FORMAT,
     "descr"},
    {"string with a NUL", 1, 0, "{'descr': '<f4', 'fortran_order': False, 'sh\001pe': (1,)}", 4, 0,
     VKATTN_ERROR_FORMAT, "0x01"},
    {"text after the dict", 1, 0, NPY_H("<f4", "(1,)") "x", 4, 0, VKATTN_ERROR_FORMAT, "after the header dict"},
    {"missing colon", 1, 0, "{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", 4, 0, VKATTN_ERROR_FORMAT, "':'"},
    {"missing comma", 1, 0, "{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", 4, 0, VKATTN_ERROR_FORMAT,
     "',' or '}'"},
    {"f8 that underflows f32 is fine", 1, 0, NPY_H("<f8", "(1,)"), 8, 0, VKATTN_OK, NULL}, /* 0x0101... */
    {"really unterminated string", 1, 0, "{'descr': '<f4", 0, 0, VKATTN_ERROR_FORMAT, "unterminated"},
};

static void test_npy_hostile(void)
{
    for (size_t c = 0; c < sizeof k_npy_cases / sizeof k_npy_cases[0]; c++) {
        const npy_case *k = &k_npy_cases[c];
        size_t size;
        uint8_t *buf = make_npy(k->major, k->minor, k->header, k->data_len, &size);
        if (k->mutation == 1) buf[1] = 'M';
        if (k->mutation == 2) buf[8] = (uint8_t)(buf[8] + k->data_len + 1);
        if (k->mutation == 3) size = 9;
        if (k->mutation == 4) size = 11;
        uint8_t *exact = heap_copy(buf, size);
        free(buf);
        vkattn_array a = {.rank = 77};
        vkattn_error err = {0};
        vkattn_status got = vka_npy_parse(exact, size, &a, &err);
        CHECK_MSG(got == k->want, "%s: got %s (%s)", k->name, vkattn_status_name(got), err.message);
        if (k->want != VKATTN_OK) {
            CHECK_MSG(err.message[0] != '\0' && k->needle && contains(err.message, k->needle),
                      "%s: message '%s' lacks '%s'", k->name, err.message, k->needle);
            CHECK(a.rank == 77 && a.data == NULL);
        }
        vkattn_array_free(&a);
        free(exact);
    }
}

static void test_npy_bool_normalised(void)
{
    size_t size;
    uint8_t *buf = make_npy(1, 0, NPY_H("|b1", "(4,)"), 4, &size);
    buf[size - 4] = 0;
    buf[size - 3] = 1;
    buf[size - 2] = 2;
    buf[size - 1] = 255;
    vkattn_array a = {0};
    CHECK_STATUS(vka_npy_parse(buf, size, &a, NULL), VKATTN_OK);
    const uint8_t *v = a.data;
    CHECK(v && v[0] == 0 && v[1] == 1 && v[2] == 1 && v[3] == 1);
    vkattn_array_free(&a);
    free(buf);

    /* Big-endian halves and doubles convert as well as the little-endian ones. */
    buf = make_npy(1, 0, NPY_H(">f2", "(2,)"), 4, &size);
    memcpy(buf + size - 4, "\x3C\x00\xC0\x00", 4);
    CHECK_STATUS(vka_npy_parse(buf, size, &a, NULL), VKATTN_OK);
    CHECK(a.data && ((float *)a.data)[0] == 1.0f && ((float *)a.data)[1] == -2.0f);
    vkattn_array_free(&a);
    free(buf);
    buf = make_npy(1, 0, NPY_H(">i8", "(1,)"), 8, &size);
    memcpy(buf + size - 8, "\xFF\xFF\xFF\xFF\x80\x00\x00\x00", 8);
    CHECK_STATUS(vka_npy_parse(buf, size, &a, NULL), VKATTN_OK);
    CHECK(a.data && ((int32_t *)a.data)[0] == INT32_MIN);
    vkattn_array_free(&a);
    memcpy(buf + size - 8, "\xFF\xFF\xFF\xFF\x7F\xFF\xFF\xFF", 8);
    vkattn_error err = {0};
    CHECK_STATUS(vka_npy_parse(buf, size, &a, &err), VKATTN_ERROR_FORMAT);
    CHECK(contains(err.message, "-2147483649"));
    free(buf);
}

static void test_npy_write_errors(void)
{
    float v[2] = {1, 2};
    vkattn_array a = {.dtype = VKATTN_DTYPE_F32, .rank = 1, .dims = {2}, .data = v, .bytes = 8};
    vkattn_error err = {0};
    char path[512];
    temp_path(path, sizeof path, "w.npy");
    CHECK_STATUS(vkattn_npy_write(path, NULL, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_npy_write(NULL, &a, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    a.bytes = 4;
    CHECK_STATUS(vkattn_npy_write(path, &a, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(contains(err.message, "needs 8"));
    a.bytes = 8;
    a.rank = 5;
    CHECK_STATUS(vkattn_npy_write(path, &a, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    a.rank = 1;
    a.dtype = (vkattn_dtype)9;
    CHECK_STATUS(vkattn_npy_write(path, &a, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    a.dtype = VKATTN_DTYPE_F32;
    a.data = NULL;
    CHECK_STATUS(vkattn_npy_write(path, &a, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    a.data = v;
    CHECK(access(path, F_OK) != 0); /* nothing was written by the failed calls */
    vkattn_array big = {.dtype = VKATTN_DTYPE_F32, .rank = 4, .dims = {UINT32_MAX, UINT32_MAX, UINT32_MAX, 2}, .data = v};
    CHECK_STATUS(vkattn_npy_write(path, &big, &err), VKATTN_ERROR_SIZE_OVERFLOW);
    CHECK_STATUS(vkattn_npy_write(temp_path(path, sizeof path, "no/such/dir.npy"), &a, &err), VKATTN_ERROR_IO);
    CHECK(contains(err.message, "no/such/dir.npy"));
    /* A failed write removes a torn regular file, never a device: /dev/full (writes fail with
     * ENOSPC) stays (as root, the write removed it before an outside review) */
    struct stat st;
    if (stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)) {
        CHECK_STATUS(vkattn_npy_write("/dev/full", &a, &err), VKATTN_ERROR_IO);
        CHECK(contains(err.message, "write failed"));
        CHECK_MSG(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode), "/dev/full is gone after a failed write");
    }

    /* A write that fails part way leaves an existing file as it was (it goes to a temporary file
     * renamed over it; before, the file was truncated first): a child process limited to 64-byte
     * files (RLIMIT_FSIZE, SIGXFSZ ignored) writes 4096 bytes over 8. A successful write keeps the
     * file's mode and leaves no temporary file. */
    {
        char dir[512], kept[600];
        temp_path(dir, sizeof dir, "atomic");
        CHECK(mkdir(dir, 0700) == 0);
        snprintf(kept, sizeof kept, "%s/out.npy", dir);
        FILE *f = fopen(kept, "wb");
        if (f) fputs("old data", f), fclose(f);
        CHECK(chmod(kept, 0640) == 0);
        static float many[1024];
        vkattn_array large = {.dtype = VKATTN_DTYPE_F32, .rank = 1, .dims = {1024}, .data = many, .bytes = sizeof many};
        fflush(NULL); /* or the child's exit would print this process's buffered output again */
        pid_t pid = fork();
        if (pid == 0) {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit limit = {64, 64};
            vkattn_error child_err = {0};
            _exit(setrlimit(RLIMIT_FSIZE, &limit) == 0 && vkattn_npy_write(kept, &large, &child_err) == VKATTN_ERROR_IO &&
                          contains(child_err.message, "the file is as it was") ? 0 : 1);
        }
        int status = -1;
        CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
        char back_text[16] = "";
        f = fopen(kept, "rb");
        if (f) back_text[fread(back_text, 1, sizeof back_text - 1, f)] = 0, fclose(f);
        CHECK_MSG(strcmp(back_text, "old data") == 0, "after a failed write the file holds '%s'", back_text);
        CHECK_STATUS(vkattn_npy_write(kept, &large, &err), VKATTN_OK);
        struct stat ks;
        CHECK(stat(kept, &ks) == 0 && (ks.st_mode & 0777) == 0640 && ks.st_size > (off_t)sizeof many);
        DIR *d = opendir(dir);
        int entries = 0;
        for (struct dirent *e; d && (e = readdir(d));) entries += e->d_name[0] != '.';
        if (d) closedir(d);
        CHECK_MSG(entries == 1, "%d files in %s after the writes (a temporary file left?)", entries, dir);
        remove(kept);
        /* The copy is for files the writer owns and may write: as another user (nobody, where
         * this runs as root) a read-only file of its own is refused as before, and a writable
         * file of root's is written in place, keeping its owner (an outside review found the
         * first replaced and the second given to nobody). */
        if (geteuid() == 0) {
            char theirs[600];
            snprintf(kept, sizeof kept, "%s/own_ro.npy", dir);
            snprintf(theirs, sizeof theirs, "%s/roots.npy", dir);
            f = fopen(theirs, "wb");
            if (f) fputs("root's", f), fclose(f);
            CHECK(chmod(theirs, 0666) == 0 && chmod(dir, 0777) == 0 && chmod(env_g.dir, 0711) == 0); /* nobody gets in */
            fflush(NULL);
            pid = fork();
            if (pid == 0) {
                vkattn_error child_err = {0};
                int ok = setgid(65534) == 0 && setuid(65534) == 0;
                FILE *mine = ok ? fopen(kept, "wb") : NULL;
                ok = mine && fputs("mine", mine) >= 0 && fclose(mine) == 0 && chmod(kept, 0444) == 0;
                ok = ok && vkattn_npy_write(kept, &large, &child_err) == VKATTN_ERROR_IO &&
                     contains(child_err.message, "cannot create") && vkattn_npy_write(theirs, &large, &child_err) == VKATTN_OK;
                _exit(ok ? 0 : 1);
            }
            CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
            f = fopen(kept, "rb");
            back_text[0] = 0;
            if (f) back_text[fread(back_text, 1, sizeof back_text - 1, f)] = 0, fclose(f);
            CHECK_MSG(strcmp(back_text, "mine") == 0, "a read-only file holds '%s' after another user's write", back_text);
            CHECK(stat(theirs, &ks) == 0 && ks.st_uid == 0 && ks.st_size > (off_t)sizeof many);
            remove(kept), remove(theirs);
            chmod(env_g.dir, 0700);
        }
        CHECK(rmdir(dir) == 0);
    }

    /* An empty array (a zero dim) round-trips. */
    vkattn_array empty = {.dtype = VKATTN_DTYPE_I32, .rank = 2, .dims = {0, 5}}, back = {0};
    temp_path(path, sizeof path, "empty.npy");
    CHECK_STATUS(vkattn_npy_write(path, &empty, &err), VKATTN_OK);
    CHECK_STATUS(vkattn_npy_read(path, &back, &err), VKATTN_OK);
    CHECK(back.rank == 2 && back.dims[0] == 0 && back.dims[1] == 5 && back.bytes == 0 && back.data != NULL);
    vkattn_array_free(&back);
    remove(path);

    vkattn_array_free(NULL);
    CHECK_STATUS(vkattn_npy_read(temp_path(path, sizeof path, "missing.npy"), &back, &err), VKATTN_ERROR_IO);
    CHECK(contains(err.message, "missing.npy"));
    CHECK_STATUS(vkattn_npy_read(path, NULL, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vka_npy_parse(NULL, 4, &back, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vka_npy_encode(&a, NULL, NULL, &err), VKATTN_ERROR_INVALID_ARGUMENT);
}

/* ---- whole files ------------------------------------------------------------------------------ */

static void test_read_file(void)
{
    char path[512];
    uint8_t bytes[300];
    for (int i = 0; i < 300; i++) bytes[i] = (uint8_t)i;
    temp_path(path, sizeof path, "bytes.bin");
    write_bytes(path, bytes, sizeof bytes);
    uint8_t *data = NULL;
    size_t size = 0;
    vkattn_error err = {0};
    CHECK_STATUS(vka_read_file(path, 300, &data, &size, &err), VKATTN_OK);
    CHECK(size == 300 && data && memcmp(data, bytes, 300) == 0);
    free(data);
    data = NULL;
    CHECK_STATUS(vka_read_file(path, 299, &data, &size, &err), VKATTN_ERROR_IO);
    CHECK(data == NULL && contains(err.message, "299-byte limit") && contains(err.message, path));
    CHECK_STATUS(vka_read_file(path, 0, &data, &size, &err), VKATTN_ERROR_IO);
    remove(path);

    temp_path(path, sizeof path, "empty.bin");
    write_bytes(path, "", 0);
    CHECK_STATUS(vka_read_file(path, 10, &data, &size, &err), VKATTN_OK);
    CHECK(data != NULL && size == 0);
    free(data);
    data = NULL;
    remove(path);

    /* Files whose size the system does not report (Linux /proc) are read in chunks. */
    if (access("/proc/self/status", R_OK) == 0) {
        CHECK_STATUS(vka_read_file("/proc/self/status", 1 << 20, &data, &size, &err), VKATTN_OK);
        CHECK(data && size > 0 && memchr(data, '\n', size) != NULL);
        free(data);
        data = NULL;
        CHECK_STATUS(vka_read_file("/proc/self/status", 10, &data, &size, &err), VKATTN_ERROR_IO);
        CHECK(data == NULL && contains(err.message, "10-byte limit"));
    }
    CHECK_STATUS(vka_read_file(env_g.dir, 1 << 20, &data, &size, &err), VKATTN_ERROR_IO); /* a directory */
    CHECK(data == NULL && err.message[0]);
    CHECK_STATUS(vka_read_file(temp_path(path, sizeof path, "absent"), 10, &data, &size, &err), VKATTN_ERROR_IO);
    CHECK(contains(err.message, "absent"));
    CHECK_STATUS(vka_read_file(NULL, 10, &data, &size, &err), VKATTN_ERROR_INVALID_ARGUMENT);

    char q[16];
    CHECK(strcmp(vka_io_quote(q, sizeof q, "a\\b\x01", 4), "a\\\\b\\x01") == 0);
    CHECK(strcmp(vka_io_quote(q, sizeof q, "abcdefghijklmnopqrstuvwxyz", 26), "abcdefghijkl...") == 0);
    char s[32];
    CHECK(strcmp(vka_format_dims(s, sizeof s, (const uint32_t[]){3, 4}, 2), "(3, 4)") == 0);
    CHECK(strcmp(vka_format_dims(s, sizeof s, NULL, 0), "()") == 0);
}

/* ---- safetensors: building files -------------------------------------------------------------- */

typedef struct st_builder {
    char header[16384];
    size_t header_len;
    uint8_t data[65536];
    size_t data_len;
} st_builder;

static void st_begin(st_builder *b)
{
    b->header_len = (size_t)snprintf(b->header, sizeof b->header, "{\"__metadata__\":{\"format\":\"pt\"}");
    b->data_len = 0;
}

/* Adds a tensor stored as `dtype` ("F32", "F16" or "BF16") holding `values` (count from dims). */
static void st_add(st_builder *b, const char *name, const char *dtype, const uint32_t *dims, uint32_t rank,
                   const float *values)
{
    size_t count = 1, begin = b->data_len;
    char shape[64] = "";
    for (uint32_t i = 0; i < rank; i++) {
        count *= dims[i];
        snprintf(shape + strlen(shape), sizeof shape - strlen(shape), i ? ",%u" : "%u", dims[i]);
    }
    for (size_t i = 0; i < count; i++) {
        uint32_t bits = f32_bits(values[i]);
        if (strcmp(dtype, "F16") == 0) bits = vka_f32_to_f16(values[i]);
        if (strcmp(dtype, "BF16") == 0) bits = vka_f32_to_bf16(values[i]);
        size_t width = strcmp(dtype, "F32") == 0 ? 4 : 2;
        for (size_t k = 0; k < width; k++) b->data[b->data_len++] = (uint8_t)(bits >> (8 * k));
    }
    b->header_len += (size_t)snprintf(b->header + b->header_len, sizeof b->header - b->header_len,
                                      ",\"%s\":{\"dtype\":\"%s\",\"shape\":[%s],\"data_offsets\":[%zu,%zu]}", name, dtype,
                                      shape, begin, b->data_len);
}

/* Assembles length + header (closed, then padded with `pad` spaces) + data into an exact-size buffer. */
static uint8_t *st_finish(st_builder *b, size_t pad, size_t *size)
{
    b->header[b->header_len++] = '}';
    for (size_t i = 0; i < pad; i++) b->header[b->header_len++] = ' ';
    *size = 8 + b->header_len + b->data_len;
    uint8_t *buf = malloc(*size);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)b->header_len >> (8 * i));
    memcpy(buf + 8, b->header, b->header_len);
    memcpy(buf + 8 + b->header_len, b->data, b->data_len);
    return buf;
}

/* A raw file: the given header text and `data_len` zero bytes. */
static uint8_t *st_raw(const char *header, size_t data_len, size_t *size)
{
    size_t hl = strlen(header);
    *size = 8 + hl + data_len;
    uint8_t *buf = calloc(1, *size);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, header, hl);
    return buf;
}

typedef struct mha_spec {
    uint32_t E, kdim, vdim;
    int fused, bias, bias_kv;
    const char *prefix, *dtype;
} mha_spec;

enum { W_IN, W_Q, W_K, W_V, W_IN_B, W_OUT, W_OUT_B, W_BK, W_BV, W_COUNT };

/* The values a test layer's tensors hold: tensor w, element i. */
static float mha_value(int w, size_t i) { return (float)((int)(i % 13) - 6) * 0.125f + (float)w * 0.0078125f; }

/* Shapes of each state_dict tensor for a spec; rank 0 = not in this layer. */
static uint32_t mha_shape(const mha_spec *s, int w, uint32_t dims[3])
{
    uint32_t E = s->E;
    switch (w) {
    case W_IN: dims[0] = 3 * E, dims[1] = E; return s->fused ? 2 : 0;
    case W_Q: dims[0] = E, dims[1] = E; return s->fused ? 0 : 2;
    case W_K: dims[0] = E, dims[1] = s->kdim; return s->fused ? 0 : 2;
    case W_V: dims[0] = E, dims[1] = s->vdim; return s->fused ? 0 : 2;
    case W_IN_B: dims[0] = 3 * E; return s->bias ? 1 : 0;
    case W_OUT: dims[0] = E, dims[1] = E; return 2;
    case W_OUT_B: dims[0] = E; return s->bias ? 1 : 0;
    default: dims[0] = 1, dims[1] = 1, dims[2] = E; return s->bias_kv ? 3 : 0;
    }
}

static const char *const k_mha_names[W_COUNT] = {"in_proj_weight", "q_proj_weight", "k_proj_weight",
                                                 "v_proj_weight",  "in_proj_bias",  "out_proj.weight",
                                                 "out_proj.bias",  "bias_k",        "bias_v"};

static uint8_t *make_mha(const mha_spec *s, st_builder *b, size_t *size)
{
    st_begin(b);
    float values[4096];
    /* Out of state_dict order, as a file may well be. */
    static const int order[W_COUNT] = {W_OUT, W_BV, W_IN, W_Q, W_K, W_V, W_IN_B, W_OUT_B, W_BK};
    for (int o = 0; o < W_COUNT; o++) {
        int w = order[o];
        uint32_t dims[3];
        uint32_t rank = mha_shape(s, w, dims);
        if (!rank) continue;
        size_t count = 1;
        for (uint32_t i = 0; i < rank; i++) count *= dims[i];
        for (size_t i = 0; i < count; i++) values[i] = mha_value(w, i);
        char name[128];
        snprintf(name, sizeof name, "%s%s", s->prefix ? s->prefix : "", k_mha_names[w]);
        st_add(b, name, s->dtype ? s->dtype : "F32", dims, rank, values);
    }
    return st_finish(b, 3, size);
}

static void check_mha(const mha_spec *s, const vkattn_weight_file *file)
{
    const vkattn_weights *w = vkattn_weight_file_weights(file);
    const float *ptrs[W_COUNT] = {w->in_proj_weight, w->q_proj_weight, w->k_proj_weight, w->v_proj_weight,
                                  w->in_proj_bias,   w->out_proj_weight, w->out_proj_bias, w->bias_k, w->bias_v};
    for (int k = 0; k < W_COUNT; k++) {
        uint32_t dims[3];
        uint32_t rank = mha_shape(s, k, dims);
        CHECK_MSG((ptrs[k] != NULL) == (rank != 0), "%s present = %d", k_mha_names[k], ptrs[k] != NULL);
        if (!rank || !ptrs[k]) continue;
        size_t count = 1, bad = 0;
        for (uint32_t i = 0; i < rank; i++) count *= dims[i];
        for (size_t i = 0; i < count; i++) {
            float want = mha_value(k, i);
            if (s->dtype && strcmp(s->dtype, "F16") == 0) want = vka_f16_to_f32(vka_f32_to_f16(want));
            if (s->dtype && strcmp(s->dtype, "BF16") == 0) want = vka_bf16_to_f32(vka_f32_to_bf16(want));
            bad += ptrs[k][i] != want;
        }
        CHECK_MSG(bad == 0, "%s: %zu of %zu values differ", k_mha_names[k], bad, count);
    }
    vkattn_layer_desc d = {.num_heads = 5, .add_zero_attn = 1, .storage = VKATTN_DTYPE_F16, .kdim = 99};
    vkattn_weight_file_describe(file, &d);
    CHECK(d.embed_dim == s->E);
    CHECK(d.kdim == (s->fused ? s->E : s->kdim));
    CHECK(d.vdim == (s->fused ? s->E : s->vdim));
    CHECK(d.no_bias == !s->bias);
    CHECK(d.add_bias_kv == s->bias_kv);
    CHECK(d.num_heads == 5 && d.add_zero_attn == 1 && d.storage == VKATTN_DTYPE_F16);
}

static void test_safetensors_layers(void)
{
    static const mha_spec specs[] = {
        {.E = 4, .kdim = 4, .vdim = 4, .fused = 1, .bias = 1},
        {.E = 4, .kdim = 3, .vdim = 5, .fused = 0, .bias = 1},
        {.E = 6, .kdim = 6, .vdim = 6, .fused = 0, .bias = 1}, /* separate weights with kdim = vdim = E */
        {.E = 8, .kdim = 8, .vdim = 8, .fused = 1, .bias = 0},
        {.E = 4, .kdim = 2, .vdim = 7, .fused = 0, .bias = 0, .bias_kv = 1},
        {.E = 4, .kdim = 4, .vdim = 4, .fused = 1, .bias = 1, .bias_kv = 1},
        {.E = 4, .kdim = 4, .vdim = 4, .fused = 1, .bias = 1, .prefix = "attn."},
        {.E = 4, .kdim = 4, .vdim = 4, .fused = 1, .bias = 1, .prefix = "encoder.layers.0.self_attn."},
        {.E = 4, .kdim = 4, .vdim = 4, .fused = 1, .bias = 1, .bias_kv = 1, .dtype = "F16"},
        {.E = 4, .kdim = 3, .vdim = 5, .fused = 0, .bias = 1, .dtype = "BF16"},
        {.E = 1, .kdim = 1, .vdim = 1, .fused = 1, .bias = 0, .dtype = "F16"},
    };
    static st_builder b;
    for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
        size_t size;
        uint8_t *buf = make_mha(&specs[c], &b, &size);
        vkattn_weight_file *file = NULL;
        vkattn_error err = {0};
        vkattn_status status = vka_weight_file_parse(buf, size, &file, &err);
        CHECK_MSG(status == VKATTN_OK, "spec %zu: %s", c, err.message);
        if (file) check_mha(&specs[c], file);
        vkattn_weight_file_destroy(file);
        free(buf);
    }
    vkattn_weight_file_destroy(NULL);
    CHECK(vkattn_weight_file_weights(NULL) == NULL);
    vkattn_weight_file_describe(NULL, NULL);
}

static void test_safetensors_load_from_disk(void)
{
    static st_builder b;
    mha_spec s = {.E = 4, .kdim = 3, .vdim = 2, .fused = 0, .bias = 1, .bias_kv = 1, .prefix = "m."};
    size_t size;
    uint8_t *buf = make_mha(&s, &b, &size);
    char path[512];
    temp_path(path, sizeof path, "mha.safetensors");
    write_bytes(path, buf, size);
    vkattn_weight_file *file = NULL;
    vkattn_error err = {0};
    CHECK_STATUS(vkattn_weight_file_load(path, &file, &err), VKATTN_OK);
    if (file) check_mha(&s, file);
    vkattn_weight_file_destroy(file);

    write_bytes(path, buf, size - 1);
    file = NULL;
    CHECK_STATUS(vkattn_weight_file_load(path, &file, &err), VKATTN_ERROR_FORMAT);
    CHECK(file == NULL && contains(err.message, path));
    remove(path);
    CHECK_STATUS(vkattn_weight_file_load(path, &file, &err), VKATTN_ERROR_IO);
    CHECK_STATUS(vkattn_weight_file_load(NULL, &file, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_weight_file_load(path, NULL, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    free(buf);
}

static void test_safetensors_python_fixture(void)
{
    char path[512];
    vkattn_weight_file *file = NULL;
    vkattn_error err = {0};
    vkattn_status status = vkattn_weight_file_load(fixture_path(path, sizeof path, "mha_e4_prefixed.safetensors"), &file, &err);
    CHECK_MSG(status == VKATTN_OK, "%s", err.message);
    if (!file) return;
    const vkattn_weights *w = vkattn_weight_file_weights(file);
    const struct {
        const float *p;
        size_t count;
        int start;
    } expect[] = {{w->in_proj_weight, 48, 0}, {w->in_proj_bias, 12, 100}, {w->out_proj_weight, 16, 200}, {w->out_proj_bias, 4, 300}};
    for (int t = 0; t < 4; t++) {
        CHECK(expect[t].p != NULL);
        for (size_t i = 0; expect[t].p && i < expect[t].count; i++)
            CHECK_MSG(expect[t].p[i] == (float)((int)i + expect[t].start) * 0.01f, "tensor %d [%zu] = %g", t, i, expect[t].p[i]);
    }
    CHECK(!w->q_proj_weight && !w->k_proj_weight && !w->v_proj_weight && !w->bias_k && !w->bias_v);
    vkattn_layer_desc d = {0};
    vkattn_weight_file_describe(file, &d);
    CHECK(d.embed_dim == 4 && d.kdim == 4 && d.vdim == 4 && d.no_bias == 0 && d.add_bias_kv == 0);
    vkattn_weight_file_destroy(file);
}

/* ---- safetensors: hostile input --------------------------------------------------------------- */

/* A minimal valid layer (E = 1, fused, no biases): 16 data bytes. */
#define IPW "\"in_proj_weight\":{\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[0,12]}"
#define OPW "\"out_proj.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[12,16]}"
#define ENTRY(name, dtype, shape, b, e)                                                                                \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":[" shape "],\"data_offsets\":[" #b "," #e "]}"

typedef struct st_case {
    const char *name;
    const char *header;
    size_t data_len;
    vkattn_status want;
    const char *needle;
} st_case;

static const st_case k_st_cases[] = {
    {"valid minimal layer", "{" IPW "," OPW "}", 16, VKATTN_OK, NULL},
    {"valid, whitespace and metadata", " {\n\t\"__metadata__\" : {\"a\": [1, 2.5e-3, {\"b\": null}], \"c\": true} ,\r\n" IPW
                                       ", " OPW "}   ", 16, VKATTN_OK, NULL},
    {"valid, escaped name", "{" IPW ",\"out_proj\\u002eweight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[12,16]}}",
     16, VKATTN_OK, NULL},
    {"valid, unknown keys in an entry", "{" IPW ",\"out_proj.weight\":{\"x\":[{}],\"dtype\":\"F32\",\"shape\":[1,1],"
                                        "\"data_offsets\":[12,16],\"y\":\"z\"}}", 16, VKATTN_OK, NULL},
    {"valid, ignored I64 and unknown-dtype tensors",
     "{" IPW "," OPW "," ENTRY("step", "I64", "", 16, 24) "," ENTRY("q", "F4", "3", 24, 26) "}", 26, VKATTN_OK, NULL},
    {"empty header", "", 16, VKATTN_ERROR_FORMAT, "'{'"},
    {"not JSON", "hello", 16, VKATTN_ERROR_FORMAT, "'{'"},
    {"top level is an array", "[1]", 0, VKATTN_ERROR_FORMAT, "'{'"},
    {"unterminated object", "{" IPW, 16, VKATTN_ERROR_FORMAT, "end of the text"},
    {"missing value", "{\"a\": }", 0, VKATTN_ERROR_FORMAT, "'{'"},
    {"trailing comma in object", "{" IPW "," OPW ",}", 16, VKATTN_ERROR_FORMAT, "string key"},
    {"trailing comma in shape", "{" ENTRY("in_proj_weight", "F32", "3,1,", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "trailing comma"},
    {"text after the object", "{" IPW "," OPW "} x", 16, VKATTN_ERROR_FORMAT, "after the end"},
    {"non-UTF-8 byte", "{" IPW "," OPW ",\"\xff\":{}}", 16, VKATTN_ERROR_FORMAT, "UTF-8"},
    {"overlong UTF-8", "{\"\xc0\xae\":{}}", 0, VKATTN_ERROR_FORMAT, "UTF-8"},
    {"UTF-8 surrogate", "{\"\xed\xa0\x80\":{}}", 0, VKATTN_ERROR_FORMAT, "UTF-8"},
    {"lone surrogate escape", "{\"\\ud800\":{}}", 0, VKATTN_ERROR_FORMAT, "surrogate"},
    {"bad escape", "{\"\\x41\":{}}", 0, VKATTN_ERROR_FORMAT, "escape"},
    {"control character in a string", "{\"a\tb\":{}}", 0, VKATTN_ERROR_FORMAT, "control character"},
    {"unterminated string", "{\"in_proj_weight", 0, VKATTN_ERROR_FORMAT, "unterminated"},
    {"deep nesting in metadata",
     "{\"__metadata__\":{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
     "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}",
     0, VKATTN_ERROR_FORMAT, "nested deeper"},
    {"metadata not an object", "{\"__metadata__\":[]," IPW "," OPW "}", 16, VKATTN_ERROR_FORMAT, "must be an object"},
    {"metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", 0, VKATTN_ERROR_FORMAT, "twice"},
    {"entry not an object", "{\"in_proj_weight\":[1]," OPW "}", 16, VKATTN_ERROR_FORMAT, "tensor entry"},
    {"bad literal", "{\"__metadata__\":{\"a\":tru}}", 0, VKATTN_ERROR_FORMAT, "value"},
    {"bad number", "{\"__metadata__\":{\"a\":1.}}", 0, VKATTN_ERROR_FORMAT, "number"},
    {"dim with plus", "{" ENTRY("in_proj_weight", "F32", "+3,1", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "non-negative integer"},
    {"dim with leading zero", "{" ENTRY("in_proj_weight", "F32", "03,1", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "leading zero"},
    {"fractional dim", "{" ENTRY("in_proj_weight", "F32", "3.0,1", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "integer"},
    {"exponent dim", "{" ENTRY("in_proj_weight", "F32", "3e0,1", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT, "integer"},
    {"negative dim", "{" ENTRY("in_proj_weight", "F32", "-3,1", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT, "negative"},
    {"string dim", "{" ENTRY("in_proj_weight", "F32", "\"3\",1", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "non-negative integer"},
    {"dim with trailing junk", "{" ENTRY("in_proj_weight", "F32", "3x,1", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "','"},
    {"huge number", "{" ENTRY("in_proj_weight", "F32", "99999999999999999999999,1", 0, 12) "," OPW "}", 16,
     VKATTN_ERROR_FORMAT, "larger than"},
    {"element count overflows", "{" ENTRY("x", "F32", "4294967296,4294967296,4294967296", 0, 0) "," IPW "," OPW "}", 16,
     VKATTN_ERROR_FORMAT, "more elements"},
    {"rank above 64", "{" ENTRY("x", "F32", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
                                             "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1", 0, 4) "}", 4,
     VKATTN_ERROR_FORMAT, "more than 64"},
    {"duplicate tensor name", "{" IPW "," OPW ",\"out_proj.weight\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[16,16]}}",
     16, VKATTN_ERROR_FORMAT, "appears twice"},
    {"duplicate key in an entry", "{\"in_proj_weight\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[0,12]}," OPW "}",
     16, VKATTN_ERROR_FORMAT, "\"dtype\" twice"},
    {"missing dtype", "{\"in_proj_weight\":{\"shape\":[3,1],\"data_offsets\":[0,12]}," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "no \"dtype\""},
    {"missing shape", "{\"in_proj_weight\":{\"dtype\":\"F32\",\"data_offsets\":[0,12]}," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "no \"shape\""},
    {"missing data_offsets", "{\"in_proj_weight\":{\"dtype\":\"F32\",\"shape\":[3,1]}," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "no \"data_offsets\""},
    {"one data offset", "{\"in_proj_weight\":{\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[0]}," OPW "}", 16,
     VKATTN_ERROR_FORMAT, "1 data_offsets"},
    {"three data offsets", "{\"in_proj_weight\":{\"dtype\":\"F32\",\"shape\":[3,1],\"data_offsets\":[0,12,12]}," OPW "}", 16,
     VKATTN_ERROR_FORMAT, "more than 2"},
    {"offsets out of order", "{" ENTRY("in_proj_weight", "F32", "3,1", 12, 0) "," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "out of order"},
    {"offsets beyond the file", "{" ENTRY("in_proj_weight", "F32", "3,1", 0, 12) "," ENTRY("out_proj.weight", "F32", "1,1", 16, 20) "}",
     16, VKATTN_ERROR_FORMAT, "beyond"},
    {"offsets overlap", "{" ENTRY("in_proj_weight", "F32", "3,1", 0, 12) "," ENTRY("out_proj.weight", "F32", "1,1", 8, 12) "}",
     16, VKATTN_ERROR_FORMAT, "overlap"},
    {"hole in the buffer", "{" ENTRY("in_proj_weight", "F32", "3,1", 0, 12) "," ENTRY("out_proj.weight", "F32", "1,1", 16, 20) "}",
     20, VKATTN_ERROR_FORMAT, "belong to no tensor"},
    {"trailing bytes in the buffer", "{" IPW "," OPW "}", 17, VKATTN_ERROR_FORMAT, "after the last tensor"},
    {"byte count mismatch", "{" ENTRY("in_proj_weight", "F32", "3,1", 0, 8) "," ENTRY("out_proj.weight", "F32", "1,1", 8, 12) "}",
     12, VKATTN_ERROR_FORMAT, "span 8 bytes"},
    {"dtype size mismatch", "{" ENTRY("in_proj_weight", "F16", "3,1", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "F16"},
    {"F64 weights", "{" ENTRY("in_proj_weight", "F64", "3,1", 0, 24) "," ENTRY("out_proj.weight", "F32", "1,1", 24, 28) "}",
     28, VKATTN_ERROR_FORMAT, "dtype F64"},
    {"I64 weights", "{" IPW "," ENTRY("out_proj.weight", "I64", "1,1", 12, 20) "}", 20, VKATTN_ERROR_FORMAT, "dtype I64"},
    {"unknown dtype on a weight", "{" ENTRY("in_proj_weight", "Q7", "3,1", 0, 12) "," OPW "}", 16, VKATTN_ERROR_FORMAT,
     "dtype Q7"},
    {"no tensors", "{}", 0, VKATTN_ERROR_NOT_FOUND, "out_proj.weight"},
    {"no out_proj.weight", "{" IPW "}", 12, VKATTN_ERROR_NOT_FOUND, "out_proj.weight"},
    {"no in_proj", "{" ENTRY("out_proj.weight", "F32", "1,1", 0, 4) "}", 4, VKATTN_ERROR_NOT_FOUND, "neither"},
    {"q and k without v", "{" ENTRY("q_proj_weight", "F32", "1,1", 0, 4) "," ENTRY("k_proj_weight", "F32", "1,1", 4, 8)
     "," ENTRY("out_proj.weight", "F32", "1,1", 8, 12) "}", 12, VKATTN_ERROR_NOT_FOUND, "'v_proj_weight' is missing"},
    {"in_proj and q/k/v", "{" IPW "," OPW "," ENTRY("q_proj_weight", "F32", "1,1", 16, 20) "}", 20, VKATTN_ERROR_FORMAT,
     "both present"},
    {"in_proj_bias without out_proj.bias", "{" IPW "," OPW "," ENTRY("in_proj_bias", "F32", "3", 16, 28) "}", 28,
     VKATTN_ERROR_NOT_FOUND, "'out_proj.bias' is missing"},
    {"out_proj.bias without in_proj_bias", "{" IPW "," OPW "," ENTRY("out_proj.bias", "F32", "1", 16, 20) "}", 20,
     VKATTN_ERROR_NOT_FOUND, "'in_proj_bias' is missing"},
    {"bias_k without bias_v", "{" IPW "," OPW "," ENTRY("bias_k", "F32", "1,1,1", 16, 20) "}", 20, VKATTN_ERROR_NOT_FOUND,
     "'bias_v' is missing"},
    {"out_proj.bias shape", "{" ENTRY("in_proj_weight", "F32", "12,4", 0, 192) "," ENTRY("out_proj.weight", "F32", "4,4", 192, 256)
     "," ENTRY("in_proj_bias", "F32", "12", 256, 304) "," ENTRY("out_proj.bias", "F32", "3", 304, 316) "}", 316,
     VKATTN_ERROR_FORMAT, "'out_proj.bias' has shape (3) but out_proj.weight says E = 4"},
    {"out_proj.weight not square", "{" ENTRY("in_proj_weight", "F32", "3,1", 0, 12) "," ENTRY("out_proj.weight", "F32", "1,2", 12, 20) "}",
     20, VKATTN_ERROR_FORMAT, "'in_proj_weight' has shape (3, 1)"},
    {"out_proj.weight rank 1", "{" IPW "," ENTRY("out_proj.weight", "F32", "1", 12, 16) "}", 16, VKATTN_ERROR_FORMAT,
     "(E, H * D)"},
    {"E = 0", "{" ENTRY("in_proj_weight", "F32", "0,0", 0, 0) "," ENTRY("out_proj.weight", "F32", "0,0", 0, 0) "}", 0,
     VKATTN_ERROR_FORMAT, "it must be (E, H * D) with both from 1"},
    {"in_proj_weight shape", "{" ENTRY("in_proj_weight", "F32", "3,2", 0, 24) "," ENTRY("out_proj.weight", "F32", "1,1", 24, 28) "}",
     28, VKATTN_ERROR_FORMAT, "'in_proj_weight' has shape (3, 2) but out_proj.weight says E = 1 (expected (3, 1))"},
    {"k_proj_weight rows", "{" ENTRY("q_proj_weight", "F32", "1,1", 0, 4) "," ENTRY("k_proj_weight", "F32", "2,3", 4, 28)
     "," ENTRY("v_proj_weight", "F32", "1,1", 28, 32) "," ENTRY("out_proj.weight", "F32", "1,1", 32, 36) "}", 36,
     VKATTN_ERROR_FORMAT, "'k_proj_weight' has 2 rows; key/value projections have H_kv * D rows"},
    {"kdim = 0", "{" ENTRY("q_proj_weight", "F32", "1,1", 0, 4) "," ENTRY("k_proj_weight", "F32", "1,0", 4, 4)
     "," ENTRY("v_proj_weight", "F32", "1,1", 4, 8) "," ENTRY("out_proj.weight", "F32", "1,1", 8, 12) "}", 12,
     VKATTN_ERROR_FORMAT, "kdim must be"},
    {"bias_k shape", "{" IPW "," OPW "," ENTRY("bias_k", "F32", "1,1", 16, 20) "," ENTRY("bias_v", "F32", "1,1,1", 20, 24) "}",
     24, VKATTN_ERROR_FORMAT, "'bias_k' has shape (1, 1)"},
    {"two layers", "{" ENTRY("a.out_proj.weight", "F32", "1,1", 0, 4) "," ENTRY("b.out_proj.weight", "F32", "1,1", 4, 8) "}",
     8, VKATTN_ERROR_FORMAT, "one layer"},
    {"mixed prefixes", "{" ENTRY("attn.out_proj.weight", "F32", "1,1", 0, 4) "," ENTRY("in_proj_weight", "F32", "3,1", 4, 16) "}",
     16, VKATTN_ERROR_FORMAT, "mixed"},
    {"prefix without a dot", "{" ENTRY("attnout_proj.weight", "F32", "1,1", 0, 4) "," ENTRY("attnin_proj_weight", "F32", "3,1", 4, 16) "}",
     16, VKATTN_ERROR_NOT_FOUND, "out_proj.weight"},
    {"prefixed layer missing in_proj", "{" ENTRY("attn.out_proj.weight", "F32", "1,1", 0, 4) "," ENTRY("other.in_proj_weight", "F32", "3,1", 4, 16) "}",
     16, VKATTN_ERROR_NOT_FOUND, "'attn.in_proj_weight'"},
};

static void test_safetensors_hostile(void)
{
    for (size_t c = 0; c < sizeof k_st_cases / sizeof k_st_cases[0]; c++) {
        const st_case *k = &k_st_cases[c];
        size_t size;
        uint8_t *buf = st_raw(k->header, k->data_len, &size);
        vkattn_weight_file *file = NULL;
        vkattn_error err = {0};
        vkattn_status got = vka_weight_file_parse(buf, size, &file, &err);
        CHECK_MSG(got == k->want, "%s: got %s (%s)", k->name, vkattn_status_name(got), err.message);
        if (k->want != VKATTN_OK) {
            CHECK_MSG(err.message[0] && k->needle && contains(err.message, k->needle), "%s: message '%s' lacks '%s'",
                      k->name, err.message, k->needle);
            CHECK(file == NULL);
        }
        vkattn_weight_file_destroy(file);
        free(buf);
    }
}

static void test_safetensors_header_length(void)
{
    static const struct {
        const char *name;
        uint64_t header_len;
        size_t size;
        const char *needle;
    } cases[] = {
        {"shorter than 8 bytes", 0, 7, "8-byte"},
        {"header length past the end", 100, 50, "past the end"},
        {"header length absurd", (uint64_t)1 << 40, 64, "limit"},
        {"header length all ones", UINT64_MAX, 64, "limit"},
        {"header length just above 100 MB", 100000001, 64, "limit"},
        {"header length zero", 0, 8, "'{'"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t *buf = calloc(1, cases[c].size);
        for (size_t i = 0; i < 8 && i < cases[c].size; i++) buf[i] = (uint8_t)(cases[c].header_len >> (8 * i));
        vkattn_weight_file *file = NULL;
        vkattn_error err = {0};
        CHECK_STATUS(vka_weight_file_parse(buf, cases[c].size, &file, &err), VKATTN_ERROR_FORMAT);
        CHECK_MSG(contains(err.message, cases[c].needle), "%s: '%s'", cases[c].name, err.message);
        CHECK(file == NULL);
        free(buf);
    }
    vkattn_weight_file *file = NULL;
    CHECK_STATUS(vka_weight_file_parse(NULL, 8, &file, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vka_weight_file_parse((const uint8_t *)"", 0, NULL, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
}

/* ---- mutation loop ---------------------------------------------------------------------------- */

typedef vkattn_status (*parse_fn)(const uint8_t *data, size_t size, vkattn_error *error);

static vkattn_status parse_npy(const uint8_t *data, size_t size, vkattn_error *error)
{
    vkattn_array a = {0};
    vkattn_status status = vka_npy_parse(data, size, &a, error);
    vkattn_array_free(&a);
    return status;
}

static vkattn_status parse_st(const uint8_t *data, size_t size, vkattn_error *error)
{
    vkattn_weight_file *file = NULL;
    vkattn_status status = vka_weight_file_parse(data, size, &file, error);
    vkattn_weight_file_destroy(file);
    return status;
}

/* Parses a mutated copy (exact size); counts outcomes other than the allowed ones. */
static int mutant_ok(parse_fn parse, const uint8_t *data, size_t size, int allow_not_found)
{
    uint8_t *copy = heap_copy(data, size);
    vkattn_error err = {0};
    vkattn_status status = parse(copy, size, &err);
    free(copy);
    if (status == VKATTN_OK) return 1;
    if (!err.message[0]) return 0;
    return status == VKATTN_ERROR_FORMAT || (allow_not_found && status == VKATTN_ERROR_NOT_FOUND);
}

static void fuzz_one(const char *what, parse_fn parse, const uint8_t *valid, size_t size, int allow_not_found)
{
    static const uint8_t values[] = {0x00, 0xFF, 0x7F, 0x80, '"', '{', '}', '[', ']', ',', ':', '\\', '-', '9', ' ', '('};
    uint8_t *m = heap_copy(valid, size);
    int bad = 0, truncations_ok = 0;
    CHECK_MSG(mutant_ok(parse, valid, size, 0), "%s: the unmutated file does not parse", what);
    for (size_t cut = 0; cut < size; cut++) truncations_ok += mutant_ok(parse, valid, cut, allow_not_found) ? 1 : 0;
    for (size_t i = 0; i < size; i++) {
        uint8_t keep = m[i];
        for (size_t v = 0; v < sizeof values; v++) {
            m[i] = values[v];
            bad += !mutant_ok(parse, m, size, allow_not_found);
        }
        for (int bit = 0; bit < 8; bit++) {
            m[i] = (uint8_t)(keep ^ (1u << bit));
            bad += !mutant_ok(parse, m, size, allow_not_found);
        }
        m[i] = keep;
    }
    test_rng rng = test_rng_make(42);
    for (int iter = 0; iter < 20000; iter++) {
        memcpy(m, valid, size);
        int changes = 1 + (int)((test_rng_float(&rng) + 1.0f) * 2.0f);
        for (int c = 0; c < changes; c++) {
            size_t at = (size_t)((test_rng_float(&rng) + 1.0f) * 0.5f * (float)size) % size;
            m[at] = (uint8_t)((test_rng_float(&rng) + 1.0f) * 128.0f);
        }
        size_t len = (iter % 5 == 0) ? (size_t)((test_rng_float(&rng) + 1.0f) * 0.5f * (float)size) % (size + 1) : size;
        bad += !mutant_ok(parse, m, len, allow_not_found);
    }
    CHECK_MSG(bad == 0, "%s: %d mutants gave an unexpected status", what, bad);
    CHECK_MSG(truncations_ok == (int)size, "%s: %d of %zu truncations gave an unexpected status", what,
              (int)size - truncations_ok, size);
    free(m);
}

static void test_fuzz_mutations(void)
{
    static st_builder b;
    mha_spec s = {.E = 2, .kdim = 2, .vdim = 2, .fused = 1, .bias = 1, .bias_kv = 1, .prefix = "a.", .dtype = "F16"};
    size_t size;
    uint8_t *st = make_mha(&s, &b, &size);
    fuzz_one("safetensors", parse_st, st, size, 1);
    free(st);

    for (int dt = 0; dt < 4; dt++) {
        uint8_t raw[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        vkattn_array a = {.dtype = (vkattn_dtype)dt, .rank = 2, .dims = {2, 2}, .data = raw,
                          .bytes = 4 * vkattn_dtype_size((vkattn_dtype)dt)};
        uint8_t *npy = NULL;
        CHECK_STATUS(vka_npy_encode(&a, &npy, &size, NULL), VKATTN_OK);
        if (npy) fuzz_one("npy", parse_npy, npy, size, 0);
        free(npy);
    }
    /* A version 3.0 file and a big-endian f8 one from numpy. */
    static const char *const fixtures[] = {"f4_v3.npy", "f8_2x2.npy", "be_i4_1x2x1x2.npy"};
    for (int f = 0; f < 3; f++) {
        char path[512];
        uint8_t *data = NULL;
        CHECK_STATUS(vka_read_file(fixture_path(path, sizeof path, fixtures[f]), 1 << 20, &data, &size, NULL), VKATTN_OK);
        if (data) fuzz_one(fixtures[f], parse_npy, data, size, 0);
        free(data);
    }
}

/* ---- main ------------------------------------------------------------------------------------- */

static int find_fixtures(const char *arg)
{
    static const char *const candidates[] = {"fixtures/io", "tests/fixtures/io"};
    char probe[512];
    if (arg) {
        env_g.fixtures = arg;
        return 1;
    }
    for (int i = 0; i < 2; i++) {
        snprintf(probe, sizeof probe, "%s/f4_2x3.npy", candidates[i]);
        if (access(probe, R_OK) == 0) {
            env_g.fixtures = candidates[i];
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (!find_fixtures(argc > 1 ? argv[1] : NULL)) {
        fprintf(stderr, "test_io: cannot find the fixtures; pass their folder (tests/fixtures/io) as argument\n");
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(env_g.dir, sizeof env_g.dir, "%s/vkattn_test_io_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(env_g.dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN_TEST(test_f16_known_values);
    RUN_TEST(test_f16_exhaustive_round_trip);
    RUN_TEST(test_bf16);
    RUN_TEST(test_npy_round_trip);
    RUN_TEST(test_npy_encode_matches_numpy);
    RUN_TEST(test_npy_numpy_fixtures);
    RUN_TEST(test_npy_refused_fixtures);
    RUN_TEST(test_npy_hostile);
    RUN_TEST(test_npy_bool_normalised);
    RUN_TEST(test_npy_write_errors);
    RUN_TEST(test_read_file);
    RUN_TEST(test_safetensors_layers);
    RUN_TEST(test_safetensors_load_from_disk);
    RUN_TEST(test_safetensors_python_fixture);
    RUN_TEST(test_safetensors_hostile);
    RUN_TEST(test_safetensors_header_length);
    RUN_TEST(test_fuzz_mutations);
    if (rmdir(env_g.dir) != 0) {
        fprintf(stderr, "test_io: %s was not left empty\n", env_g.dir);
        test_g.failures++;
    }
    return test_finish();
}
