/* .npy arrays: reading the header and converting the stored dtypes, and writing version 1.0 files.
 *
 *   0         6     7     8            8+w (w = 2 in version 1.0, 4 in 2.0 and 3.0)
 *   | \x93NUMPY | major | minor | header_len | header: "{'descr': '<f4', 'fortran_order': False,
 *                                             'shape': (2, 3), }" + spaces + '\n' | data (C order) |
 *
 * The header is a Python dict literal; this file reads the subset numpy writes (see io.h for what
 * else is accepted and refused).
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/error.h"
#include "format/half.h"
#include "io/io.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_BYTES 6
/* numpy aligns the data to 64 bytes so that it can be memory-mapped. */
#define NPY_ALIGN 64
/* Longest string value or key read from a header ("fortran_order" is the longest wanted). */
#define NPY_MAX_TOKEN 32

typedef enum npy_kind { NPY_F4, NPY_F2, NPY_F8, NPY_I4, NPY_I8, NPY_B1 } npy_kind;

/* The dtypes a file may hold, by their descr without the byte-order character. */
static const struct {
    const char *code;
    npy_kind kind;
    size_t itemsize;
    vkattn_dtype loads_as;
} k_npy_types[] = {
    {"f4", NPY_F4, 4, VKATTN_DTYPE_F32}, {"f2", NPY_F2, 2, VKATTN_DTYPE_F32}, {"f8", NPY_F8, 8, VKATTN_DTYPE_F32},
    {"i4", NPY_I4, 4, VKATTN_DTYPE_I32}, {"i8", NPY_I8, 8, VKATTN_DTYPE_I32}, {"b1", NPY_B1, 1, VKATTN_DTYPE_BOOL},
};

typedef struct npy_header {
    npy_kind kind;
    size_t itemsize;
    vkattn_dtype loads_as;
    bool big_endian;
    uint32_t rank;
    uint32_t dims[VKATTN_MAX_RANK];
} npy_header;

/* A reader over the header text. */
typedef struct npy_text {
    const uint8_t *begin, *p, *end;
    vkattn_error *error;
} npy_text;

static vkattn_status header_fail(npy_text *t, const char *what)
{
    char found[24];
    if (t->p >= t->end)
        snprintf(found, sizeof found, "the end of the header");
    else if (*t->p >= 0x20 && *t->p < 0x7F)
        snprintf(found, sizeof found, "'%c'", *t->p);
    else
        snprintf(found, sizeof found, "byte 0x%02x", *t->p);
    return vka_error_set(t->error, VKATTN_ERROR_FORMAT, "npy header: %s, found %s at header byte %zu", what, found,
                         (size_t)(t->p - t->begin));
}

static void skip_space(npy_text *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r')) t->p++;
}

static bool accept(npy_text *t, char c)
{
    skip_space(t);
    if (t->p < t->end && *t->p == (uint8_t)c) {
        t->p++;
        return true;
    }
    return false;
}

/* A Python string literal without escapes, quoted with ' or ", at most NPY_MAX_TOKEN bytes. */
static vkattn_status read_string(npy_text *t, const char *what, char out[NPY_MAX_TOKEN + 1])
{
    skip_space(t);
    if (t->p >= t->end || (*t->p != '\'' && *t->p != '"')) {
        char expected[64];
        snprintf(expected, sizeof expected, "expected a quoted string for %s", what);
        return header_fail(t, expected);
    }
    uint8_t quote = *t->p++;
    size_t n = 0;
    while (t->p < t->end && *t->p != quote) {
        if (*t->p == '\\' || *t->p < 0x20 || *t->p >= 0x7F) return header_fail(t, "unsupported character in a string");
        if (n == NPY_MAX_TOKEN) return header_fail(t, "string too long");
        out[n++] = (char)*t->p++;
    }
    if (t->p >= t->end) return header_fail(t, "unterminated string");
    t->p++;
    out[n] = '\0';
    return VKATTN_OK;
}

static vkattn_status read_descr(npy_text *t, npy_header *h)
{
    char descr[NPY_MAX_TOKEN + 1], shown[NPY_MAX_TOKEN * 4 + 8];
    skip_space(t);
    if (t->p < t->end && *t->p == '[') return header_fail(t, "structured dtypes (a list as descr) are not supported");
    vkattn_status status = read_string(t, "'descr'", descr);
    if (status != VKATTN_OK) return status;
    char order = descr[0];
    for (size_t i = 0; order && i < sizeof k_npy_types / sizeof k_npy_types[0]; i++) {
        if (strcmp(descr + 1, k_npy_types[i].code) != 0) continue;
        bool one_byte = k_npy_types[i].itemsize == 1;
        if ((one_byte && order != '|') || (!one_byte && order != '<' && order != '>')) break;
        h->kind = k_npy_types[i].kind;
        h->itemsize = k_npy_types[i].itemsize;
        h->loads_as = k_npy_types[i].loads_as;
        h->big_endian = order == '>';
        return VKATTN_OK;
    }
    return vka_error_set(t->error, VKATTN_ERROR_FORMAT,
                         "npy header: descr '%s' is not supported (supported: <f4 <f2 <f8 <i4 <i8, big-endian "
                         ">f4 >f2 >f8 >i4 >i8, and |b1)",
                         vka_io_quote(shown, sizeof shown, descr, strlen(descr)));
}

static vkattn_status read_bool(npy_text *t, bool *out)
{
    skip_space(t);
    size_t left = (size_t)(t->end - t->p);
    if (left >= 4 && memcmp(t->p, "True", 4) == 0) {
        t->p += 4;
        *out = true;
    } else if (left >= 5 && memcmp(t->p, "False", 5) == 0) {
        t->p += 5;
        *out = false;
    } else {
        return header_fail(t, "'fortran_order' must be True or False");
    }
    return VKATTN_OK;
}

/* One dimension: decimal digits, at most UINT32_MAX; Python 2 files may add an 'L'. */
static vkattn_status read_dim(npy_text *t, uint32_t *out)
{
    skip_space(t);
    if (t->p < t->end && *t->p == '-') return header_fail(t, "shape has a negative dimension");
    if (t->p >= t->end || *t->p < '0' || *t->p > '9') return header_fail(t, "shape dimension is not a non-negative integer");
    uint64_t v = 0;
    for (; t->p < t->end && *t->p >= '0' && *t->p <= '9'; t->p++) {
        v = v * 10 + (uint64_t)(*t->p - '0');
        if (v > UINT32_MAX) return header_fail(t, "shape dimension is larger than 4294967295");
    }
    if (t->p < t->end && *t->p == 'L') t->p++;
    *out = (uint32_t)v;
    return VKATTN_OK;
}

static vkattn_status read_shape(npy_text *t, npy_header *h)
{
    vkattn_status status;
    if (!accept(t, '(')) return header_fail(t, "'shape' must be a tuple");
    uint32_t rank = 0;
    bool comma = false;
    while (!accept(t, ')')) {
        if (rank == VKATTN_MAX_RANK) return header_fail(t, "shape has more than 4 dimensions (vkattn's limit)");
        VKA_TRY(read_dim(t, &h->dims[rank]));
        rank++;
        comma = accept(t, ',');
        if (!comma) {
            if (!accept(t, ')')) return header_fail(t, "expected ',' or ')' in the shape");
            break;
        }
    }
    if (rank == 1 && !comma)
        return vka_error_set(t->error, VKATTN_ERROR_FORMAT,
                             "npy header: shape (%u) is not a tuple; a one-dimensional shape is written (%u,)",
                             (unsigned)h->dims[0], (unsigned)h->dims[0]);
    h->rank = rank;
    return VKATTN_OK;
fail:
    return status;
}

/* The keys of a header dict, all required; bit i of a `seen` mask stands for npy_keys[i]. */
static const char *const npy_keys[] = {"descr", "fortran_order", "shape"};

static vkattn_status read_entry(npy_text *t, const char *key, npy_header *h, unsigned *seen)
{
    unsigned which = 0;
    while (which < 3 && strcmp(key, npy_keys[which]) != 0) which++;
    if (which == 3) {
        char shown[NPY_MAX_TOKEN * 4 + 8];
        return vka_error_set(t->error, VKATTN_ERROR_FORMAT, "npy header: unknown key '%s'",
                             vka_io_quote(shown, sizeof shown, key, strlen(key)));
    }
    if (*seen & (1u << which))
        return vka_error_set(t->error, VKATTN_ERROR_FORMAT, "npy header: key '%s' appears twice", key);
    *seen |= 1u << which;
    if (which == 0) return read_descr(t, h);
    if (which == 2) return read_shape(t, h);
    bool fortran = false;
    vkattn_status status = read_bool(t, &fortran);
    if (status == VKATTN_OK && fortran)
        return vka_error_set(t->error, VKATTN_ERROR_FORMAT,
                             "npy header: fortran_order is True; only C-order arrays are supported");
    return status;
}

static vkattn_status parse_header(const uint8_t *text, size_t size, npy_header *h, vkattn_error *error)
{
    vkattn_status status;
    npy_text t = {text, text, text + size, error};
    unsigned seen = 0;
    if (!accept(&t, '{')) return header_fail(&t, "expected '{' to open the header dict");
    while (!accept(&t, '}')) {
        char key[NPY_MAX_TOKEN + 1];
        VKA_TRY(read_string(&t, "a key", key));
        if (!accept(&t, ':')) return header_fail(&t, "expected ':' after a key");
        VKA_TRY(read_entry(&t, key, h, &seen));
        if (!accept(&t, ',')) {
            if (!accept(&t, '}')) return header_fail(&t, "expected ',' or '}' in the header dict");
            break;
        }
    }
    skip_space(&t);
    if (t.p != t.end) return header_fail(&t, "unexpected text after the header dict");
    for (unsigned i = 0; i < 3; i++)
        if (!(seen & (1u << i)))
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "npy header: required key '%s' is missing", npy_keys[i]);
    return VKATTN_OK;
fail:
    return status;
}

static uint64_t load_uint(const uint8_t *p, size_t n, bool big_endian)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[big_endian ? n - 1 - i : i] << (8 * i);
    return v;
}

/* Converts n elements from the stored dtype to the loaded one. */
static vkattn_status convert_data(const npy_header *h, const uint8_t *src, size_t n, void *dst, vkattn_error *error)
{
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = src + i * h->itemsize;
        uint64_t bits = load_uint(p, h->itemsize, h->big_endian);
        switch (h->kind) {
        case NPY_F4: {
            uint32_t f = (uint32_t)bits;
            memcpy((float *)dst + i, &f, sizeof f);
            break;
        }
        case NPY_F2: ((float *)dst)[i] = vka_f16_to_f32((uint16_t)bits); break;
        case NPY_F8: {
            double d;
            memcpy(&d, &bits, sizeof d);
            float f = (float)d;
            if (isinf(f) && !isinf(d))
                return vka_error_set(error, VKATTN_ERROR_FORMAT, "npy data: element %zu (%g) does not fit in float32", i, d);
            ((float *)dst)[i] = f;
            break;
        }
        case NPY_I4: ((int32_t *)dst)[i] = (int32_t)(uint32_t)bits; break;
        case NPY_I8: {
            int64_t v = (int64_t)bits;
            if (v < INT32_MIN || v > INT32_MAX)
                return vka_error_set(error, VKATTN_ERROR_FORMAT, "npy data: element %zu (%lld) is outside the int32 range",
                                     i, (long long)v);
            ((int32_t *)dst)[i] = (int32_t)v;
            break;
        }
        case NPY_B1: ((uint8_t *)dst)[i] = bits != 0; break;
        }
    }
    return VKATTN_OK;
}

/* Reads the fixed preamble; sets the header's place in the file. */
static vkattn_status read_preamble(const uint8_t *data, size_t size, size_t *header_start, size_t *header_len,
                                   vkattn_error *error)
{
    if (size < 10 || memcmp(data, NPY_MAGIC, NPY_MAGIC_BYTES) != 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "npy: not a .npy file (%s)",
                             size < 10 ? "shorter than the 10-byte preamble" : "no \\x93NUMPY magic");
    uint8_t major = data[6], minor = data[7];
    if (major < 1 || major > 3 || minor != 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "npy: format version %u.%u is not supported (1.0, 2.0, 3.0)",
                             major, minor);
    size_t width = major == 1 ? 2 : 4;
    if (size < 8 + width)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "npy: file ends inside the header length");
    uint64_t len = load_uint(data + 8, width, false);
    if (len > size - 8 - width)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "npy: header_len %llu runs past the end of the %zu-byte file", (unsigned long long)len, size);
    *header_start = 8 + width;
    *header_len = (size_t)len;
    return VKATTN_OK;
}

vkattn_status vka_npy_parse(const uint8_t *data, size_t size, vkattn_array *out, vkattn_error *error)
{
    vkattn_status status;
    if ((!data && size) || !out) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "npy_parse: data or out is NULL");
    size_t header_start = 0, header_len = 0;
    npy_header h = {0};
    VKA_TRY(read_preamble(data, size, &header_start, &header_len, error));
    VKA_TRY(parse_header(data + header_start, header_len, &h, error));

    size_t dims[VKATTN_MAX_RANK], count, stored, loaded;
    for (uint32_t i = 0; i < h.rank; i++) dims[i] = h.dims[i];
    char shape[64];
    vka_format_dims(shape, sizeof shape, h.dims, h.rank);
    if (!vka_product_size(dims, h.rank, &count) || !vka_mul_size(count, h.itemsize, &stored) ||
        !vka_mul_size(count, vkattn_dtype_size(h.loads_as), &loaded))
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "npy header: shape %s has more bytes than fit in memory", shape);
    size_t have = size - header_start - header_len;
    if (have < stored)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "npy data: shape %s needs %zu bytes but the file holds %zu (truncated?)", shape, stored, have);
    if (have > stored)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "npy data: %zu bytes of trailing data after the %s array",
                             have - stored, shape);

    void *values = malloc(loaded ? loaded : 1);
    if (!values)
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "npy: cannot allocate %zu bytes for %s", loaded, shape);
    status = convert_data(&h, data + header_start + header_len, count, values, error);
    if (status != VKATTN_OK) {
        free(values);
        return status;
    }
    memset(out, 0, sizeof *out);
    out->dtype = h.loads_as;
    out->rank = h.rank;
    memcpy(out->dims, h.dims, sizeof h.dims);
    out->data = values;
    out->bytes = loaded;
    return VKATTN_OK;
fail:
    return status;
}

/* The header text numpy would write, without padding: shape "()" for rank 0, "(3,)" for rank 1. */
static int format_header(char *buf, size_t cap, const char *descr, const vkattn_array *a)
{
    char shape[80];
    size_t n = 0;
    shape[n++] = '(';
    for (uint32_t i = 0; i < a->rank; i++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, i ? ", %u" : "%u", (unsigned)a->dims[i]);
    snprintf(shape + n, sizeof shape - n, a->rank == 1 ? ",)" : ")");
    return snprintf(buf, cap, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape);
}

static void store_le(uint8_t *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static vkattn_status check_array(const vkattn_array *a, const char **descr, vkattn_error *error)
{
    if (!a) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "npy write: array is NULL");
    static const char *const descrs[] = {"<f4", "<f2", "|b1", "<i4"};
    if (a->dtype == VKATTN_DTYPE_Q8_0 || a->dtype == VKATTN_DTYPE_Q4_0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "npy write: %s is a block format, which .npy cannot hold",
                             vkattn_dtype_name(a->dtype));
    if ((unsigned)a->dtype > VKATTN_DTYPE_I32)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "npy write: dtype %d is not a vkattn_dtype", (int)a->dtype);
    *descr = descrs[a->dtype];
    if (a->rank > VKATTN_MAX_RANK)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "npy write: rank %u is above %d", (unsigned)a->rank,
                             VKATTN_MAX_RANK);
    size_t dims[VKATTN_MAX_RANK], count, bytes;
    for (uint32_t i = 0; i < a->rank; i++) dims[i] = a->dims[i];
    char shape[64];
    vka_format_dims(shape, sizeof shape, a->dims, a->rank);
    if (!vka_product_size(dims, a->rank, &count) || !vka_mul_size(count, vkattn_dtype_size(a->dtype), &bytes))
        return vka_error_set(error, VKATTN_ERROR_SIZE_OVERFLOW, "npy write: shape %s overflows size_t", shape);
    if (bytes != a->bytes)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "npy write: array says %zu bytes but shape %s of %s needs %zu", a->bytes, shape,
                             vkattn_dtype_name(a->dtype), bytes);
    if (bytes && !a->data) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "npy write: data is NULL");
    return VKATTN_OK;
}

vkattn_status vka_npy_encode(const vkattn_array *array, uint8_t **out_data, size_t *out_size, vkattn_error *error)
{
    const char *descr = NULL;
    vkattn_status status = check_array(array, &descr, error);
    if (status != VKATTN_OK) return status;
    if (!out_data || !out_size) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "npy write: output is NULL");

    char text[256];
    size_t text_len = (size_t)format_header(text, sizeof text, descr, array);
    /* Spaces, then '\n', so that the data starts at a multiple of NPY_ALIGN. */
    size_t prefix = 10 + text_len + 1;
    size_t pad = (NPY_ALIGN - prefix % NPY_ALIGN) % NPY_ALIGN;
    size_t header_len = text_len + pad + 1, total;
    if (!vka_add_size(10 + header_len, array->bytes, &total))
        return vka_error_set(error, VKATTN_ERROR_SIZE_OVERFLOW, "npy write: file size overflows size_t");
    uint8_t *buf = malloc(total);
    if (!buf) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "npy write: cannot allocate %zu bytes", total);

    memcpy(buf, NPY_MAGIC, NPY_MAGIC_BYTES);
    buf[6] = 1;
    buf[7] = 0;
    store_le(buf + 8, header_len, 2);
    memcpy(buf + 10, text, text_len);
    memset(buf + 10 + text_len, ' ', pad);
    buf[10 + header_len - 1] = '\n';

    uint8_t *dst = buf + 10 + header_len;
    size_t size = vkattn_dtype_size(array->dtype), count = array->bytes / size;
    const uint8_t *src = array->data;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p = src + i * size;
        if (array->dtype == VKATTN_DTYPE_BOOL) {
            dst[i] = p[0] != 0;
        } else if (size == 2) {
            uint16_t v;
            memcpy(&v, p, 2);
            store_le(dst + 2 * i, v, 2);
        } else {
            uint32_t v;
            memcpy(&v, p, 4);
            store_le(dst + 4 * i, v, 4);
        }
    }
    *out_data = buf;
    *out_size = total;
    return VKATTN_OK;
}

vkattn_status vkattn_npy_read(const char *path, vkattn_array *out, vkattn_error *error)
{
    if (!path || !out) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "npy read: path or out is NULL");
    uint8_t *data;
    size_t size;
    vkattn_status status = vka_read_file(path, VKA_IO_MAX_FILE_BYTES, &data, &size, error);
    if (status != VKATTN_OK) return status;
    status = vka_npy_parse(data, size, out, error);
    free(data);
    if (status != VKATTN_OK) vka_io_error_in_file(error, path);
    return status;
}

vkattn_status vkattn_npy_write(const char *path, const vkattn_array *array, vkattn_error *error)
{
    if (!path) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "npy write: path is NULL");
    uint8_t *data;
    size_t size;
    vkattn_status status = vka_npy_encode(array, &data, &size, error);
    if (status != VKATTN_OK) {
        vka_io_error_in_file(error, path);
        return status;
    }
    status = vka_write_file(path, data, size, error);
    free(data);
    return status;
}

void vkattn_array_free(vkattn_array *array)
{
    if (!array) return;
    free(array->data);
    memset(array, 0, sizeof *array);
}
