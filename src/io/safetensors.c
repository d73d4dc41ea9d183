/* safetensors weights for one nn.MultiheadAttention.
 *
 *   0             8                        8 + N                                       size
 *   | N (u64 LE)  | JSON header (N bytes)  | byte buffer: every tensor's data, tiled     |
 *
 *   header: {"<name>": {"dtype": "F32", "shape": [3, 4], "data_offsets": [begin, end]}, ...,
 *            "__metadata__": {...}}
 *   data_offsets are [begin, end) relative to the byte buffer; data is little-endian, C order.
 *
 * Checks happen in this order: the header's JSON and each entry (FORMAT), the byte buffer's tiling
 * and unique names (FORMAT), finding the layer's tensors (NOT_FOUND for a missing one), their dtypes
 * and shapes (FORMAT), then conversion to float32.
 *
 * Finding the layer: the tensor named "out_proj.weight", or "<prefix>out_proj.weight" where the
 * prefix ends in '.', anchors it, and there must be exactly one such tensor. The other attention
 * tensors are looked up under the same prefix; a file that also holds one of them without the prefix
 * mixes names and is refused. Every other tensor is ignored once its offsets are checked.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/checked.h"
#include "common/error.h"
#include "io/io.h"
#include "io/json.h"

/* Entries with more dimensions than this are refused (any real tensor has far fewer). */
#define ST_MAX_RANK 64
/* Tensor names are quoted in messages up to this many bytes. */
#define ST_QUOTE 96

/* Every dtype the format defines with a whole number of bytes; only the first three load. */
static const struct {
    const char *name;
    size_t size;
} k_st_dtypes[] = {
    {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"F64", 8}, {"I64", 8}, {"U64", 8}, {"I32", 4}, {"U32", 4},
    {"I16", 2}, {"U16", 2}, {"I8", 1},   {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1},
};
enum { ST_F32 = 0, ST_F16 = 1, ST_BF16 = 2 };

/* The attention tensors, in nn.MultiheadAttention's state_dict naming. */
enum { T_IN_W, T_Q_W, T_K_W, T_V_W, T_IN_B, T_OUT_W, T_OUT_B, T_BIAS_K, T_BIAS_V, T_COUNT };
static const char *const k_names[T_COUNT] = {
    "in_proj_weight", "q_proj_weight",   "k_proj_weight", "v_proj_weight", "in_proj_bias",
    "out_proj.weight", "out_proj.bias", "bias_k",        "bias_v",
};

typedef struct st_tensor {
    const char *name, *dtype;       /* in the header's arena, not NUL-terminated */
    size_t name_len, dtype_len;
    int dtype_index;                /* into k_st_dtypes; -1 for a dtype this reader does not know */
    uint32_t rank;
    uint64_t dims[VKATTN_MAX_RANK]; /* the first dims; attention tensors have at most 3 */
    size_t count;                   /* elements */
    uint64_t begin, end;
} st_tensor;

typedef struct st_header {
    st_tensor *tensors;
    size_t count, capacity;
    char *arena; /* decoded names and dtypes; as large as the header, which always suffices */
    size_t arena_cap, arena_used;
} st_header;

struct vkattn_weight_file {
    vkattn_weights weights; /* points into data[] */
    vkattn_layer_desc desc; /* embed_dim, kdim, vdim, no_bias, add_bias_kv */
    float *data[T_COUNT];
};

static bool name_is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

static const char *quote_name(char buf[ST_QUOTE], const st_tensor *t)
{
    return vka_io_quote(buf, ST_QUOTE, t->name, t->name_len);
}

/* "(3, 4)"; ranks above VKATTN_MAX_RANK end in ", ...". */
static const char *format_u64_dims(char *buf, size_t cap, const uint64_t *dims, uint32_t rank)
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

static const char *format_dims(char *buf, size_t cap, const st_tensor *t)
{
    return format_u64_dims(buf, cap, t->dims, t->rank);
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
        if (name_is(dst, len, k_st_dtypes[i].name)) t->dtype_index = (int)i;
    return VKATTN_OK;
}

/* One entry: {"dtype": ..., "shape": ..., "data_offsets": ...}; other keys are skipped. */
static vkattn_status parse_tensor(vka_json *j, st_header *h, st_tensor *t)
{
    static const char *const keys[] = {"dtype", "shape", "data_offsets"};
    vkattn_status status;
    char name[ST_QUOTE];
    quote_name(name, t);
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
        while (which < 3 && !name_is(key, len, keys[which])) which++;
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
        if (name_is(key, len, "__metadata__")) {
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

static int compare_names(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    if (c) return c;
    return x->name_len < y->name_len ? -1 : x->name_len > y->name_len;
}

/* Each tensor's offsets agree with its shape and dtype and stay inside the buffer. */
static vkattn_status check_extent(const st_tensor *t, size_t buffer_len, vkattn_error *error)
{
    char name[ST_QUOTE], shape[96], dtype[48];
    if (t->begin > t->end)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: tensor '%s' has data_offsets [%llu, %llu] out of order",
                             quote_name(name, t), (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > buffer_len)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: tensor '%s' has data_offsets [%llu, %llu] beyond the %zu-byte data buffer",
                             quote_name(name, t), (unsigned long long)t->begin, (unsigned long long)t->end, buffer_len);
    if (t->dtype_index < 0) return VKATTN_OK;
    size_t bytes;
    if (!vka_mul_size(t->count, k_st_dtypes[t->dtype_index].size, &bytes) || bytes != t->end - t->begin)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: tensor '%s' has shape %s of %s but data_offsets [%llu, %llu] span %llu bytes",
                             quote_name(name, t), format_dims(shape, sizeof shape, t),
                             vka_io_quote(dtype, sizeof dtype, t->dtype, t->dtype_len), (unsigned long long)t->begin,
                             (unsigned long long)t->end, (unsigned long long)(t->end - t->begin));
    return VKATTN_OK;
}

/* Sorted by offset, the tensors must cover [0, buffer_len) with no gap and no overlap. */
static vkattn_status check_tiling(const st_tensor **sorted, size_t count, size_t buffer_len, vkattn_error *error)
{
    char a[ST_QUOTE], b[ST_QUOTE];
    uint64_t at = 0;
    for (size_t i = 0; i < count; i++) {
        const st_tensor *t = sorted[i];
        if (t->begin < at)
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: tensors '%s' and '%s' overlap in the data buffer",
                                 quote_name(a, sorted[i - 1]), quote_name(b, t));
        if (t->begin > at)
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: bytes [%llu, %llu) of the data buffer belong to no tensor (before '%s')",
                                 (unsigned long long)at, (unsigned long long)t->begin, quote_name(a, t));
        at = t->end;
    }
    if (at != buffer_len)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: %llu bytes after the last tensor's data belong to no tensor",
                             (unsigned long long)(buffer_len - at));
    return VKATTN_OK;
}

static vkattn_status check_buffer(const st_header *h, size_t buffer_len, vkattn_error *error)
{
    vkattn_status status = VKATTN_OK;
    for (size_t i = 0; i < h->count; i++) VKA_TRY(check_extent(&h->tensors[i], buffer_len, error));
    if (h->count == 0) return check_tiling(NULL, 0, buffer_len, error);
    const st_tensor **sorted = malloc(h->count * sizeof *sorted); /* h->count * sizeof(st_tensor) fit already */
    if (!sorted) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors: cannot sort %zu tensors", h->count);
    for (size_t i = 0; i < h->count; i++) sorted[i] = &h->tensors[i];
    qsort(sorted, h->count, sizeof *sorted, compare_names);
    for (size_t i = 1; i < h->count && status == VKATTN_OK; i++) {
        if (compare_names(&sorted[i - 1], &sorted[i]) == 0) {
            char name[ST_QUOTE];
            status = vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: tensor name '%s' appears twice",
                                   quote_name(name, sorted[i]));
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

/* ---- the attention layer ------------------------------------------------------------------------ */

typedef struct st_layer {
    const st_tensor *t[T_COUNT];
    char prefix[ST_QUOTE]; /* quoted for messages */
} st_layer;

static const st_tensor *find_name(const st_header *h, const char *prefix, size_t prefix_len, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < h->count; i++) {
        const st_tensor *t = &h->tensors[i];
        if (t->name_len == prefix_len + len && memcmp(t->name, prefix, prefix_len) == 0 &&
            memcmp(t->name + prefix_len, name, len) == 0)
            return t;
    }
    return NULL;
}

static vkattn_status find_layer(const st_header *h, st_layer *layer, vkattn_error *error)
{
    const char *anchor_name = k_names[T_OUT_W];
    size_t anchor_len = strlen(anchor_name);
    const st_tensor *anchor = NULL;
    char a[ST_QUOTE], b[ST_QUOTE];
    for (size_t i = 0; i < h->count; i++) {
        const st_tensor *t = &h->tensors[i];
        if (t->name_len < anchor_len || memcmp(t->name + t->name_len - anchor_len, anchor_name, anchor_len) != 0) continue;
        size_t prefix_len = t->name_len - anchor_len;
        if (prefix_len > 0 && t->name[prefix_len - 1] != '.') continue;
        if (anchor)
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: '%s' and '%s' both look like an attention layer's out_proj.weight; "
                                 "a file must hold one layer",
                                 quote_name(a, anchor), quote_name(b, t));
        anchor = t;
    }
    if (!anchor)
        return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                             "safetensors: no out_proj.weight tensor (with or without a prefix such as 'attn.')");
    size_t prefix_len = anchor->name_len - anchor_len;
    vka_io_quote(layer->prefix, sizeof layer->prefix, anchor->name, prefix_len);
    for (int k = 0; k < T_COUNT; k++) {
        layer->t[k] = find_name(h, anchor->name, prefix_len, k_names[k]);
        if (prefix_len > 0 && find_name(h, "", 0, k_names[k]))
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: names are mixed: '%sout_proj.weight' has the prefix '%s' but '%s' has none",
                                 layer->prefix, layer->prefix, k_names[k]);
    }
    return VKATTN_OK;
}

/* Which tensors are present: one projection form, biases and bias_k/bias_v in pairs. */
static vkattn_status check_presence(const st_layer *l, vkattn_error *error)
{
    const char *p = l->prefix;
    bool separate = l->t[T_Q_W] || l->t[T_K_W] || l->t[T_V_W];
    if (l->t[T_IN_W] && separate)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: '%sin_proj_weight' and '%sq/k/v_proj_weight' are both present; give one form",
                             p, p);
    if (!l->t[T_IN_W] && !separate)
        return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                             "safetensors: neither '%sin_proj_weight' nor '%sq_proj_weight', '%sk_proj_weight', "
                             "'%sv_proj_weight' is present", p, p, p, p);
    for (int k = T_Q_W; separate && k <= T_V_W; k++)
        if (!l->t[k])
            return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                                 "safetensors: '%s%s' is missing (q/k/v_proj_weight come as a set of three)", p, k_names[k]);
    static const int pairs[2][2] = {{T_IN_B, T_OUT_B}, {T_BIAS_K, T_BIAS_V}};
    for (int i = 0; i < 2; i++) {
        int x = pairs[i][0], y = pairs[i][1];
        if (!l->t[x] != !l->t[y]) {
            int have = l->t[x] ? x : y, lack = l->t[x] ? y : x;
            return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                                 "safetensors: '%s%s' is present but '%s%s' is missing (they come as a pair)", p,
                                 k_names[have], p, k_names[lack]);
        }
    }
    for (int k = 0; k < T_COUNT; k++) {
        const st_tensor *t = l->t[k];
        if (t && t->dtype_index != ST_F32 && t->dtype_index != ST_F16 && t->dtype_index != ST_BF16) {
            char dtype[48];
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: '%s%s' has dtype %s; only F32, F16 and BF16 are supported", p, k_names[k],
                                 vka_io_quote(dtype, sizeof dtype, t->dtype, t->dtype_len));
        }
    }
    return VKATTN_OK;
}

/* Compares a tensor's shape with what E (and its own kdim/vdim) say it must be. */
static vkattn_status check_shape(const st_layer *l, int k, const uint64_t *want, uint32_t rank, uint64_t E,
                                 vkattn_error *error)
{
    const st_tensor *t = l->t[k];
    if (!t) return VKATTN_OK;
    bool same = t->rank == rank;
    for (uint32_t i = 0; same && i < rank; i++) same = t->dims[i] == want[i];
    if (same) return VKATTN_OK;
    char have[96], expected[96];
    if (k == T_K_W || k == T_V_W) /* the last dim is the tensor's own kdim/vdim */
        snprintf(expected, sizeof expected, "(%llu, %s)", (unsigned long long)E, k == T_K_W ? "kdim" : "vdim");
    else
        format_u64_dims(expected, sizeof expected, want, rank);
    return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: '%s%s' has shape %s but %sout_proj.weight says E = %llu (expected %s)",
                         l->prefix, k_names[k], format_dims(have, sizeof have, t), l->prefix, (unsigned long long)E,
                         expected);
}

static vkattn_status check_shapes(const st_layer *l, vkattn_layer_desc *desc, vkattn_error *error)
{
    vkattn_status status;
    const st_tensor *out_w = l->t[T_OUT_W];
    char have[96];
    if (out_w->rank != 2 || out_w->dims[0] != out_w->dims[1] || out_w->dims[0] == 0 || out_w->dims[0] > UINT32_MAX)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: '%sout_proj.weight' has shape %s; it must be (E, E) with 1 <= E <= %u",
                             l->prefix, format_dims(have, sizeof have, out_w), (unsigned)UINT32_MAX);
    uint64_t E = out_w->dims[0], kdim = E, vdim = E;
    for (int k = T_K_W; k <= T_V_W; k++) {
        const st_tensor *t = l->t[k];
        if (!t || t->rank != 2) continue; /* a wrong rank is reported by check_shape */
        if (t->dims[1] == 0 || t->dims[1] > UINT32_MAX)
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: '%s%s' has shape %s; %s must be 1 to %u",
                                 l->prefix, k_names[k], format_dims(have, sizeof have, t), k == T_K_W ? "kdim" : "vdim",
                                 (unsigned)UINT32_MAX);
        *(k == T_K_W ? &kdim : &vdim) = t->dims[1];
    }
    const uint64_t shapes[T_COUNT][3] = {
        [T_IN_W] = {3 * E, E},  [T_Q_W] = {E, E},   [T_K_W] = {E, kdim},     [T_V_W] = {E, vdim},    [T_IN_B] = {3 * E},
        [T_OUT_W] = {E, E},     [T_OUT_B] = {E},    [T_BIAS_K] = {1, 1, E},  [T_BIAS_V] = {1, 1, E},
    };
    static const uint32_t ranks[T_COUNT] = {2, 2, 2, 2, 1, 2, 1, 3, 3};
    for (int k = 0; k < T_COUNT; k++) VKA_TRY(check_shape(l, k, shapes[k], ranks[k], E, error));
    desc->embed_dim = (uint32_t)E;
    desc->kdim = (uint32_t)kdim;
    desc->vdim = (uint32_t)vdim;
    desc->no_bias = l->t[T_OUT_B] == NULL;
    desc->add_bias_kv = l->t[T_BIAS_K] != NULL;
    return VKATTN_OK;
fail:
    return status;
}

static vkattn_status load_tensor(const uint8_t *buffer, const st_tensor *t, const char *prefix, const char *name,
                                 float **out, vkattn_error *error)
{
    size_t bytes;
    if (!vka_mul_size(t->count, sizeof(float), &bytes))
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: '%s%s' is too large", prefix, name);
    float *values = malloc(bytes ? bytes : 1);
    if (!values)
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors: cannot allocate %zu bytes for '%s%s'",
                             bytes, prefix, name);
    const uint8_t *src = buffer + t->begin;
    for (size_t i = 0; i < t->count; i++) {
        if (t->dtype_index == ST_F32) {
            const uint8_t *p = src + 4 * i;
            uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            memcpy(&values[i], &bits, sizeof bits);
        } else {
            uint16_t bits = (uint16_t)(src[2 * i] | src[2 * i + 1] << 8);
            values[i] = t->dtype_index == ST_F16 ? vka_f16_to_f32(bits) : vka_bf16_to_f32(bits);
        }
    }
    *out = values;
    return VKATTN_OK;
}

static vkattn_status build_file(const st_layer *l, const uint8_t *buffer, const vkattn_layer_desc *desc,
                                vkattn_weight_file **out, vkattn_error *error)
{
    vkattn_status status;
    vkattn_weight_file *file = calloc(1, sizeof *file);
    if (!file) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors: cannot allocate the weight file");
    for (int k = 0; k < T_COUNT; k++)
        if (l->t[k]) VKA_TRY(load_tensor(buffer, l->t[k], l->prefix, k_names[k], &file->data[k], error));
    file->weights.in_proj_weight = file->data[T_IN_W];
    file->weights.q_proj_weight = file->data[T_Q_W];
    file->weights.k_proj_weight = file->data[T_K_W];
    file->weights.v_proj_weight = file->data[T_V_W];
    file->weights.in_proj_bias = file->data[T_IN_B];
    file->weights.out_proj_weight = file->data[T_OUT_W];
    file->weights.out_proj_bias = file->data[T_OUT_B];
    file->weights.bias_k = file->data[T_BIAS_K];
    file->weights.bias_v = file->data[T_BIAS_V];
    file->desc = *desc;
    *out = file;
    return VKATTN_OK;
fail:
    vkattn_weight_file_destroy(file);
    return status;
}

/* ---- entry points ------------------------------------------------------------------------------- */

vkattn_status vka_weight_file_parse(const uint8_t *data, size_t size, vkattn_weight_file **out, vkattn_error *error)
{
    vkattn_status status;
    st_header h = {0};
    st_layer layer = {0};
    vkattn_layer_desc desc = {0};
    if ((!data && size) || !out)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "weight_file_parse: data or out is NULL");
    if (size < 8)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: file is %zu bytes, shorter than the 8-byte header length",
                             size);
    uint64_t header_len = 0;
    for (int i = 0; i < 8; i++) header_len |= (uint64_t)data[i] << (8 * i);
    if (header_len > VKA_SAFETENSORS_MAX_HEADER_BYTES)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: header length %llu is above the %llu-byte limit",
                             (unsigned long long)header_len, (unsigned long long)VKA_SAFETENSORS_MAX_HEADER_BYTES);
    if (header_len > size - 8)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: header length %llu runs past the end of the %zu-byte file",
                             (unsigned long long)header_len, size);
    const uint8_t *buffer = data + 8 + header_len;
    size_t buffer_len = size - 8 - (size_t)header_len;
    VKA_TRY(parse_header(data + 8, (size_t)header_len, &h, error));
    VKA_TRY(check_buffer(&h, buffer_len, error));
    VKA_TRY(find_layer(&h, &layer, error));
    VKA_TRY(check_presence(&layer, error));
    VKA_TRY(check_shapes(&layer, &desc, error));
    VKA_TRY(build_file(&layer, buffer, &desc, out, error));
fail:
    free(h.tensors);
    free(h.arena);
    return status;
}

vkattn_status vkattn_weight_file_load(const char *path, vkattn_weight_file **out, vkattn_error *error)
{
    if (!path || !out) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "weight file: path or out is NULL");
    uint8_t *data;
    size_t size;
    vkattn_status status = vka_read_file(path, VKA_IO_MAX_FILE_BYTES, &data, &size, error);
    if (status != VKATTN_OK) return status;
    status = vka_weight_file_parse(data, size, out, error);
    free(data);
    if (status != VKATTN_OK) vka_io_error_in_file(error, path);
    return status;
}

void vkattn_weight_file_destroy(vkattn_weight_file *file)
{
    if (!file) return;
    for (int k = 0; k < T_COUNT; k++) free(file->data[k]);
    free(file);
}

const vkattn_weights *vkattn_weight_file_weights(const vkattn_weight_file *file)
{
    return file ? &file->weights : NULL;
}

void vkattn_weight_file_describe(const vkattn_weight_file *file, vkattn_layer_desc *desc)
{
    if (!file || !desc) return;
    desc->embed_dim = file->desc.embed_dim;
    desc->kdim = file->desc.kdim;
    desc->vdim = file->desc.vdim;
    desc->no_bias = file->desc.no_bias;
    desc->add_bias_kv = file->desc.add_bias_kv;
}
