/* The safetensors format (safetensors.h): the 8-byte length, the JSON header, and the check that
 * every entry's bytes lie inside the byte buffer and tile it. Bounded and fuzzed
 * (tests/fuzz/fuzz_safetensors.c): the header is read with vkattn's own strict JSON reader. */
#define _POSIX_C_SOURCE 200809L /* pread */
#define _FILE_OFFSET_BITS 64    /* files above 2 GiB where off_t would be 32 bits */

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/error.h"
#include "io/io.h"
#include "io/json.h"
#include "io/safetensors.h"

/* Entries with more dimensions than this are refused (any real tensor has far fewer). */
#define ST_MAX_RANK 64

/* Every dtype the format defines with a whole number of bytes; only the first three load. */
static const struct {
    const char *name;
    size_t size;
} k_st_dtypes[] = {
    {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"I64", 8}, {"U64", 8}, {"I32", 4}, {"U32", 4},
    {"I16", 2}, {"U16", 2}, {"I8", 1},   {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
};

size_t vka_st_dtype_size(int index) { return k_st_dtypes[index].size; }
const char *vka_st_dtype_name(int index) { return k_st_dtypes[index].name; }

const char *vka_st_quote_name(char buf[ST_QUOTE], const st_tensor *t)
{
    return vka_io_quote(buf, ST_QUOTE, t->name, t->name_len);
}

const char *vka_st_format_u64_dims(char *buf, size_t cap, const uint64_t *dims, uint32_t rank)
{
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (uint32_t i = 0; i < rank && n < cap; i++) {
        if (i == VKATTN_MAX_RANK) {
            n += (size_t)snprintf(buf + n, cap - n, ", ...");
            break;
        }
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %llu" : "%llu", (unsigned long long)dims[i]);
    }
    if (n < cap) snprintf(buf + n, cap - n, ")");
    return buf;
}

const char *vka_st_format_dims(char *buf, size_t cap, const st_tensor *t)
{
    return vka_st_format_u64_dims(buf, cap, t->dims, t->rank);
}

/* ---- the JSON header ---------------------------------------------------------------------------- */

static vkattn_status parse_shape(vka_json *j, st_tensor *t, const char *name)
{
    vkattn_status status;
    bool done, zero = false, overflow = false;
    size_t count = 1;
    uint32_t rank = 0;
    VKA_TRY(vka_json_expect(j, '[', "a shape"));
    for (;; rank++) {
        VKA_TRY(vka_json_element(j, rank, &done));
        if (done) break;
        if (rank == ST_MAX_RANK) return vka_json_fail(j, "tensor '%s' has more than %d dimensions", name, ST_MAX_RANK);
        uint64_t d;
        VKA_TRY(vka_json_uint(j, SIZE_MAX, "shape dimension", &d));
        if (rank < VKATTN_MAX_RANK) t->dims[rank] = d;
        if (d == 0) zero = true;
        else if (!overflow && !vka_mul_size(count, (size_t)d, &count)) overflow = true;
    }
    if (!zero && overflow) return vka_json_fail(j, "tensor '%s' has more elements than fit in size_t", name);
    t->rank = rank;
    t->count = zero ? 0 : count;
    return VKATTN_OK;
fail:
    return status;
}

static vkattn_status parse_offsets(vka_json *j, st_tensor *t, const char *name)
{
    vkattn_status status;
    bool done;
    uint64_t v[2];
    VKA_TRY(vka_json_expect(j, '[', "data_offsets"));
    for (size_t i = 0;; i++) {
        VKA_TRY(vka_json_element(j, i, &done));
        if (done) {
            if (i != 2) return vka_json_fail(j, "tensor '%s' has %zu data_offsets, not 2", name, i);
            break;
        }
        if (i == 2) return vka_json_fail(j, "tensor '%s' has more than 2 data_offsets", name);
        VKA_TRY(vka_json_uint(j, UINT64_MAX, "data offset", &v[i]));
    }
    t->begin = v[0];
    t->end = v[1];
    return VKATTN_OK;
fail:
    return status;
}

static vkattn_status parse_dtype(vka_json *j, st_header *h, st_tensor *t)
{
    size_t len;
    char *dst = h->arena + h->arena_used;
    vkattn_status status = vka_json_string(j, dst, h->arena_cap - h->arena_used, &len);
    if (status != VKATTN_OK) return status;
    t->dtype = dst;
    t->dtype_len = len;
    h->arena_used += len;
    t->dtype_index = -1;
    for (size_t i = 0; i < sizeof k_st_dtypes / sizeof k_st_dtypes[0]; i++)
        if (vka_st_name_is(dst, len, vka_st_dtype_name(i))) t->dtype_index = (int)i;
    return VKATTN_OK;
}

/* One entry: {"dtype": ..., "shape": ..., "data_offsets": ...}; other keys are skipped. */
static vkattn_status parse_tensor(vka_json *j, st_header *h, st_tensor *t)
{
    static const char *const keys[] = {"dtype", "shape", "data_offsets"};
    vkattn_status status;
    char name[ST_QUOTE];
    vka_st_quote_name(name, t);
    unsigned seen = 0;
    bool done;
    VKA_TRY(vka_json_expect(j, '{', "a tensor entry"));
    for (size_t i = 0;; i++) {
        /* Keys are decoded into the arena's free space and forgotten. */
        char *key = h->arena + h->arena_used;
        size_t len = 0;
        VKA_TRY(vka_json_member(j, i, &done, key, h->arena_cap - h->arena_used, &len));
        if (done) break;
        unsigned which = 0;
        while (which < 3 && !vka_st_name_is(key, len, keys[which])) which++;
        if (which == 3) {
            VKA_TRY(vka_json_skip(j, 2));
            continue;
        }
        if (seen & (1u << which)) return vka_json_fail(j, "tensor '%s' has \"%s\" twice", name, keys[which]);
        seen |= 1u << which;
        if (which == 0) VKA_TRY(parse_dtype(j, h, t));
        if (which == 1) VKA_TRY(parse_shape(j, t, name));
        if (which == 2) VKA_TRY(parse_offsets(j, t, name));
    }
    for (unsigned k = 0; k < 3; k++)
        if (!(seen & (1u << k))) return vka_json_fail(j, "tensor '%s' has no \"%s\"", name, keys[k]);
    return VKATTN_OK;
fail:
    return status;
}

/* Appends a zeroed entry; NULL (with the error set) when memory runs out. */
static st_tensor *add_tensor(st_header *h, vkattn_error *error)
{
    if (h->count == h->capacity) {
        size_t capacity = h->capacity ? h->capacity * 2 : 16, bytes;
        if (!vka_mul_size(capacity, sizeof *h->tensors, &bytes)) {
            vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors header: too many tensors");
            return NULL;
        }
        st_tensor *bigger = realloc(h->tensors, bytes);
        if (!bigger) {
            vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY,
                          "safetensors header: cannot allocate %zu bytes for the tensor list", bytes);
            return NULL;
        }
        h->tensors = bigger;
        h->capacity = capacity;
    }
    st_tensor *t = &h->tensors[h->count];
    memset(t, 0, sizeof *t);
    return t;
}

static vkattn_status parse_header(const uint8_t *text, size_t size, st_header *h, vkattn_error *error)
{
    vkattn_status status;
    vka_json j;
    bool done, metadata = false;
    vka_json_init(&j, text, size, "safetensors header", error);
    VKA_TRY(vka_json_check_utf8(&j));
    h->arena = malloc(size ? size : 1);
    if (!h->arena)
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors header: cannot allocate %zu bytes", size);
    h->arena_cap = size;
    VKA_TRY(vka_json_expect(&j, '{', "the header"));
    for (size_t i = 0;; i++) {
        char *key = h->arena + h->arena_used;
        size_t len = 0;
        VKA_TRY(vka_json_member(&j, i, &done, key, h->arena_cap - h->arena_used, &len));
        if (done) break;
        if (vka_st_name_is(key, len, "__metadata__")) {
            if (metadata) return vka_json_fail(&j, "\"__metadata__\" appears twice");
            metadata = true;
            if (!vka_json_peek(&j, '{')) return vka_json_fail(&j, "\"__metadata__\" must be an object");
            VKA_TRY(vka_json_skip(&j, 1));
            continue;
        }
        st_tensor *t = add_tensor(h, error);
        if (!t) return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
        t->name = key;
        t->name_len = len;
        h->arena_used += len;
        VKA_TRY(parse_tensor(&j, h, t));
        h->count++;
    }
    return vka_json_finish(&j);
fail:
    return status;
}

/* ---- the byte buffer ---------------------------------------------------------------------------- */

static int compare_offsets(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

int vka_st_compare_bytes(const char *a, size_t na, const char *b, size_t nb)
{
    int c = memcmp(a, b, na < nb ? na : nb);
    return c ? c : (na > nb) - (na < nb);
}

int vka_st_compare_names(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    return vka_st_compare_bytes(x->name, x->name_len, y->name, y->name_len);
}

/* Each tensor's offsets agree with its shape and dtype and stay inside the buffer. */
static vkattn_status check_extent(const st_tensor *t, uint64_t buffer_len, vkattn_error *error)
{
    char name[ST_QUOTE], shape[96], dtype[48];
    if (t->begin > t->end)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: tensor '%s' has data_offsets [%llu, %llu] out of order",
                             vka_st_quote_name(name, t), (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > buffer_len)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: tensor '%s' has data_offsets [%llu, %llu] beyond the %llu-byte data buffer",
                             vka_st_quote_name(name, t), (unsigned long long)t->begin, (unsigned long long)t->end,
                             (unsigned long long)buffer_len);
    if (t->dtype_index < 0) return VKATTN_OK;
    size_t bytes;
    if (!vka_mul_size(t->count, vka_st_dtype_size(t->dtype_index), &bytes) || bytes != t->end - t->begin)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: tensor '%s' has shape %s of %s but data_offsets [%llu, %llu] span %llu bytes",
                             vka_st_quote_name(name, t), vka_st_format_dims(shape, sizeof shape, t),
                             vka_io_quote(dtype, sizeof dtype, t->dtype, t->dtype_len), (unsigned long long)t->begin,
                             (unsigned long long)t->end, (unsigned long long)(t->end - t->begin));
    return VKATTN_OK;
}

/* Sorted by offset, the tensors must cover [0, buffer_len) with no gap and no overlap. */
static vkattn_status check_tiling(const st_tensor **sorted, size_t count, uint64_t buffer_len, vkattn_error *error)
{
    char a[ST_QUOTE], b[ST_QUOTE];
    uint64_t at = 0;
    for (size_t i = 0; i < count; i++) {
        const st_tensor *t = sorted[i];
        if (t->begin < at)
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: tensors '%s' and '%s' overlap in the data buffer",
                                 vka_st_quote_name(a, sorted[i - 1]), vka_st_quote_name(b, t));
        if (t->begin > at)
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: bytes [%llu, %llu) of the data buffer belong to no tensor (before '%s')",
                                 (unsigned long long)at, (unsigned long long)t->begin, vka_st_quote_name(a, t));
        at = t->end;
    }
    if (at != buffer_len)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: %llu bytes after the last tensor's data belong to no tensor",
                             (unsigned long long)(buffer_len - at));
    return VKATTN_OK;
}

static vkattn_status check_buffer(const st_header *h, uint64_t buffer_len, vkattn_error *error)
{
    vkattn_status status = VKATTN_OK;
    for (size_t i = 0; i < h->count; i++) VKA_TRY(check_extent(&h->tensors[i], buffer_len, error));
    if (h->count == 0) return check_tiling(NULL, 0, buffer_len, error);
    const st_tensor **sorted = malloc(h->count * sizeof *sorted); /* h->count * sizeof(st_tensor) fit already */
    if (!sorted) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors: cannot sort %zu tensors", h->count);
    for (size_t i = 0; i < h->count; i++) sorted[i] = &h->tensors[i];
    qsort(sorted, h->count, sizeof *sorted, vka_st_compare_names);
    for (size_t i = 1; i < h->count && status == VKATTN_OK; i++) {
        if (vka_st_compare_names(&sorted[i - 1], &sorted[i]) == 0) {
            char name[ST_QUOTE];
            status = vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: tensor name '%s' appears twice",
                                   vka_st_quote_name(name, sorted[i]));
        }
    }
    if (status == VKATTN_OK) {
        qsort(sorted, h->count, sizeof *sorted, compare_offsets);
        status = check_tiling(sorted, h->count, buffer_len, error);
    }
    free(sorted);
    return status;
fail:
    return status;
}

/* ---- where the bytes come from ------------------------------------------------------------------ */


vkattn_status vka_st_source_read(st_source *s, uint64_t offset, void *dst, size_t n, vkattn_error *error)
{
    if (s->data) {
        if (n) memcpy(dst, s->data + offset, n);
        s->bytes_read += n;
        return VKATTN_OK;
    }
    uint8_t *p = dst;
    while (n > 0) {
        size_t chunk = n < ((size_t)1 << 30) ? n : ((size_t)1 << 30);
        ssize_t got = pread(s->fd, p, chunk, (off_t)offset);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0)
            return vka_error_set(error, VKATTN_ERROR_IO, "read failed at byte %llu: %s", (unsigned long long)offset,
                                 strerror(errno));
        if (got == 0)
            return vka_error_set(error, VKATTN_ERROR_IO,
                                 "the file ended at byte %llu although it was %llu bytes when opened (did it change "
                                 "while being read?)",
                                 (unsigned long long)offset, (unsigned long long)s->size);
        p += got;
        offset += (uint64_t)got;
        n -= (size_t)got;
        s->bytes_read += (uint64_t)got;
    }
    return VKATTN_OK;
}

/* ---- the header, read and checked --------------------------------------------------------------- */

vkattn_status vka_st_header_read(st_source *src, st_header *h, uint64_t *buffer_at, vkattn_error *error)
{
    vkattn_status status;
    uint8_t *owned = NULL;
    memset(h, 0, sizeof *h);
    if (src->size < 8)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: file is %llu bytes, shorter than the 8-byte header length",
                             (unsigned long long)src->size);
    uint8_t length[8];
    VKA_TRY(vka_st_source_read(src, 0, length, sizeof length, error));
    uint64_t header_len = 0;
    for (int i = 0; i < 8; i++) header_len |= (uint64_t)length[i] << (8 * i);
    char start[48];
    if (header_len > VKA_SAFETENSORS_MAX_HEADER_BYTES) /* most likely another kind of file: say how it starts */
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: header length %llu is above the %llu-byte limit: not a safetensors file? "
                             "It starts \"%s\"",
                             (unsigned long long)header_len, (unsigned long long)VKA_SAFETENSORS_MAX_HEADER_BYTES,
                             vka_io_quote(start, sizeof start, length, sizeof length));
    if (header_len > src->size - 8)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: header length %llu runs past the end of the %llu-byte file",
                             (unsigned long long)header_len, (unsigned long long)src->size);
    const uint8_t *text;
    if (src->data) {
        text = src->data + 8;
        src->bytes_read += header_len;
    } else {
        owned = malloc(header_len ? (size_t)header_len : 1);
        if (!owned)
            return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors: cannot allocate %llu bytes for the header",
                                 (unsigned long long)header_len);
        VKA_TRY(vka_st_source_read(src, 8, owned, (size_t)header_len, error));
        text = owned;
    }
    VKA_TRY(parse_header(text, (size_t)header_len, h, error));
    VKA_TRY(check_buffer(h, src->size - 8 - header_len, error));
    *buffer_at = 8 + header_len;
fail:
    free(owned);
    if (status != VKATTN_OK) vka_st_header_free(h);
    return status;
}

void vka_st_header_free(st_header *h)
{
    free(h->tensors);
    free(h->arena);
    memset(h, 0, sizeof *h);
}
