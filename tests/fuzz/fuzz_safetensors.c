/* libFuzzer target: the safetensors weight-file parser (vka_weight_file_parse), which also drives
 * the library's JSON reader (src/io/json.c) over the header, and the parser of a sharded
 * checkpoint's index (model.safetensors.index.json, vka_st_index_parse).
 *
 * Input: the bytes of a safetensors file, parsed twice: for its only layer (no prefix) and for the
 * layer "model.layers.0.self_attn." (the prefix search, its list of layers in messages, and Hugging
 * Face names). Invariants checked (a broken one is __builtin_trap):
 *   - failure: the status is FORMAT, NOT_FOUND or OUT_OF_HOST_MEMORY, the error holds that status
 *     and a message, and *out is untouched;
 *   - success: the weights and the description agree (one projection form, biases and bias_k/v in
 *     pairs, E, kdim, vdim >= 1), each tensor holds as many floats as its shape needs (ASan sees
 *     every one read), and all of them fit in the file (F16/BF16 take 2 bytes an element).
 * The same bytes as an index: on failure FORMAT or OUT_OF_HOST_MEMORY with a message; on success
 * at least one tensor, entries sorted by name and unique, each
 * naming one of the distinct, sorted shards, whose names are relative and non-empty.
 * Everything allocated is freed, so LeakSanitizer reports any leak in the parser.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "io/io.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads `count` floats (so ASan checks the allocation is that large); returns the element count,
 * 0 for a NULL tensor. */
static size_t touch(const float *values, uint64_t rows, uint64_t cols)
{
    if (!values) return 0;
    size_t count;
    CHECK(!__builtin_mul_overflow(rows, cols, &count));
    const volatile float *p = values;
    float sum = 0;
    for (size_t i = 0; i < count; i++) sum += p[i];
    (void)sum;
    return count;
}

static void check_file(const vkattn_weight_file *file, size_t file_size)
{
    const vkattn_weights *w = vkattn_weight_file_weights(file);
    CHECK(w != NULL);
    vkattn_layer_desc d;
    memset(&d, 0, sizeof d);
    d.num_heads = 7; /* the file cannot know it: describe must leave it alone */
    vkattn_weight_file_describe(file, &d);
    CHECK(d.num_heads == 7);
    uint64_t E = d.embed_dim, kdim = d.kdim, vdim = d.vdim;
    CHECK(E >= 1 && kdim >= 1 && vdim >= 1);

    vkattn_weight_file_info info;
    CHECK(vkattn_weight_file_get_info(file, &info) == VKATTN_OK);
    uint64_t Q = info.q_rows;  /* rows of q_proj: H * D, E unless head_dim says otherwise */
    uint64_t R = info.kv_rows; /* rows of k/v_proj: Q, or fewer for a grouped-query layer */
    CHECK(Q >= 1 && R >= 1 && R <= Q && Q % R == 0 && info.embed_dim == E);
    CHECK(info.tensor_count <= VKATTN_WEIGHT_FILE_MAX_TENSORS && info.bytes_read <= file_size);
    CHECK((R == Q && Q == E) || info.naming == VKATTN_WEIGHT_NAMES_HF);
    uint64_t D = Q % 7 == 0 ? Q / 7 : 0; /* num_heads is 7 */
    uint32_t kv_heads = R == Q ? 0 : D && R % D == 0 ? (uint32_t)(R / D) : VKATTN_KV_HEADS_UNKNOWN;
    /* Norms or sinks that contradict 7 heads make it unknown too. */
    CHECK(d.num_kv_heads == kv_heads ||
          ((w->q_norm_weight || w->sinks) && d.num_kv_heads == VKATTN_KV_HEADS_UNKNOWN));
    CHECK(!w->q_norm_weight == !w->k_norm_weight && (d.qk_norm != VKATTN_QK_NORM_NONE) == (w->q_norm_weight != NULL));
    int separate = w->q_proj_weight || w->k_proj_weight || w->v_proj_weight;
    CHECK(w->out_proj_weight != NULL);
    CHECK(!w->in_proj_weight != !separate);
    CHECK(!separate || (w->q_proj_weight && w->k_proj_weight && w->v_proj_weight));
    /* Only the separate form can carry kdim/vdim other than E. */
    CHECK(separate || (kdim == E && vdim == E));
    CHECK(!w->in_proj_bias == !w->out_proj_bias);
    CHECK(d.no_bias == (w->out_proj_bias == NULL));
    CHECK(!w->bias_k == !w->bias_v);
    CHECK(d.add_bias_kv == (w->bias_k != NULL));

    size_t total = 0;
    total += touch(w->in_proj_weight, Q + 2 * R, E);
    total += touch(w->q_proj_weight, Q, E);
    total += touch(w->k_proj_weight, R, kdim);
    total += touch(w->v_proj_weight, R, vdim);
    total += touch(w->in_proj_bias, Q + 2 * R, 1);
    total += touch(w->out_proj_weight, E, Q);
    total += touch(w->out_proj_bias, E, 1);
    total += touch(w->bias_k, R, 1);
    total += touch(w->bias_v, R, 1);
    /* norms and sinks hold room for their widest reading (padded with zeros past the file's) */
    touch(w->q_norm_weight, Q, 1);
    touch(w->k_norm_weight, R, 1);
    touch(w->sinks, Q, 1);
    if (info.out_bias_zero_filled) total -= E; /* zeros, not read */
    CHECK(total * 2 <= file_size);
}

static void parse_one(const uint8_t *data, size_t size, const char *prefix)
{
    vkattn_error error = {0};
    vkattn_weight_file *const untouched = (vkattn_weight_file *)&error;
    vkattn_weight_file *file = untouched;
    vkattn_status status = vka_weight_file_parse_prefix(data, size, prefix, &file, &error);
    if (status != VKATTN_OK) {
        /* UNSUPPORTED: a layer with tensors vkattn does not apply (LayerNorm-style q/k norms, a fused bias). */
        CHECK(status == VKATTN_ERROR_FORMAT || status == VKATTN_ERROR_NOT_FOUND ||
              status == VKATTN_ERROR_UNSUPPORTED || status == VKATTN_ERROR_OUT_OF_HOST_MEMORY);
        CHECK(error.status == status);
        CHECK(memchr(error.message, '\0', sizeof error.message) != NULL && error.message[0] != '\0');
        CHECK(file == untouched);
        return;
    }
    CHECK(file != NULL && file != untouched);
    check_file(file, size);
    vkattn_weight_file_destroy(file);
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void parse_index(const uint8_t *data, size_t size)
{
    vkattn_error error = {0};
    st_index index;
    vkattn_status status = vka_st_index_parse(data, size, &index, &error);
    if (status != VKATTN_OK) {
        CHECK(status == VKATTN_ERROR_FORMAT || status == VKATTN_ERROR_OUT_OF_HOST_MEMORY);
        CHECK(error.status == status && error.message[0] != '\0');
        return;
    }
    CHECK(index.count >= 1 && index.shard_count >= 1 && index.shard_count <= index.count);
    for (size_t s = 0; s < index.shard_count; s++) {
        CHECK(index.shards[s][0] != '\0' && index.shards[s][0] != '/');
        CHECK(s == 0 || strcmp(index.shards[s - 1], index.shards[s]) < 0);
    }
    for (size_t i = 0; i < index.count; i++) {
        const st_index_entry *e = &index.entries[i];
        CHECK(bsearch(&e->shard_name, index.shards, index.shard_count, sizeof *index.shards, compare_strings));
        if (i > 0) {
            const st_index_entry *p = e - 1;
            size_t n = p->name_len < e->name_len ? p->name_len : e->name_len;
            int c = memcmp(p->name, e->name, n);
            CHECK(c < 0 || (c == 0 && p->name_len < e->name_len));
        }
    }
    vka_st_index_free(&index);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse_one(data, size, NULL);
    parse_one(data, size, "model.layers.0.self_attn.");
    parse_index(data, size);
    return 0;
}
