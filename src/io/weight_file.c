/* One attention layer out of a safetensors file (vkattn_weight_file_*): which tensors, under which
 * prefix and naming, their checks, and reading only them (the format itself: safetensors.c).
 *
 * Finding the layer: its output projection anchors it: "<prefix>out_proj.weight" or
 * "<prefix>o_proj.weight", where the prefix is empty or ends in '.'. Without a caller's prefix there
 * must be exactly one such tensor in the file; with one, the anchor is the tensor under that prefix.
 * The naming follows from the names under the prefix (see k_names): nn.MultiheadAttention's
 * (in_proj_weight or q_proj_weight..., out_proj.*), or Hugging Face's (q_proj.weight, ...,
 * o_proj.* or, as BART, CLIP and Whisper name it, out_proj.*); names of two namings under one
 * prefix are refused. Without a caller's prefix, a layer name also found without the prefix mixes
 * names and is refused, as before. Every other tensor is ignored once its offsets are checked.
 */
#define _POSIX_C_SOURCE 200809L /* open, fstat, pread */
#define _FILE_OFFSET_BITS 64    /* files above 2 GiB where off_t would be 32 bits */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/error.h"
#include "format/half.h"
#include "io/checkpoint.h"
#include "io/io.h"
#include "io/safetensors.h"

/* The attention tensors: the slots of vkattn_weights, then the q/k/v biases that Hugging Face
 * stores one by one and the loader concatenates into in_proj_bias, then the fused q/k/v
 * projection (Phi-3) the loader splits into q/k/v_proj_weight. */
enum {
    T_IN_W, T_Q_W, T_K_W, T_V_W, T_IN_B, T_OUT_W, T_OUT_B, T_BIAS_K, T_BIAS_V, T_Q_NORM, T_K_NORM, T_SINKS,
    T_Q_B, T_K_B, T_V_B, T_QKV_W, T_COUNT
};

/* The namings of a layer's tensors (after its prefix); NULL = not in that naming. */
enum { NAMES_TORCH, NAMES_HF, NAMES_HF_OUT, NAMES_COUNT };
static const char *const k_names[NAMES_COUNT][T_COUNT] = {
    [NAMES_TORCH] = {[T_IN_W] = "in_proj_weight", [T_Q_W] = "q_proj_weight", [T_K_W] = "k_proj_weight",
                     [T_V_W] = "v_proj_weight", [T_IN_B] = "in_proj_bias", [T_OUT_W] = "out_proj.weight",
                     [T_OUT_B] = "out_proj.bias", [T_BIAS_K] = "bias_k", [T_BIAS_V] = "bias_v"},
    /* Llama, Mistral, Qwen2, ... */
    [NAMES_HF] = {[T_Q_W] = "q_proj.weight", [T_K_W] = "k_proj.weight", [T_V_W] = "v_proj.weight",
                  [T_OUT_W] = "o_proj.weight", [T_OUT_B] = "o_proj.bias", [T_Q_B] = "q_proj.bias",
                  [T_K_B] = "k_proj.bias", [T_V_B] = "v_proj.bias", [T_QKV_W] = "qkv_proj.weight",
                  [T_Q_NORM] = "q_norm.weight", [T_K_NORM] = "k_norm.weight", [T_SINKS] = "sinks"},
    /* BART, CLIP, OPT, Whisper: Hugging Face's q/k/v names with an out_proj */
    [NAMES_HF_OUT] = {[T_Q_W] = "q_proj.weight", [T_K_W] = "k_proj.weight", [T_V_W] = "v_proj.weight",
                      [T_OUT_W] = "out_proj.weight", [T_OUT_B] = "out_proj.bias", [T_Q_B] = "q_proj.bias",
                      [T_K_B] = "k_proj.bias", [T_V_B] = "v_proj.bias"},
};
static const char *const k_naming_names[NAMES_COUNT] = {"nn.MultiheadAttention", "Hugging Face", "Hugging Face"};

/* Names in vkattn_weight_file_info are kept quoted (printable ASCII) in this many bytes. */
#define ST_INFO_NAME 192

struct vkattn_weight_file {
    vkattn_weights weights;  /* points into data[] */
    vkattn_layer_desc desc;  /* embed_dim, kdim, vdim, no_bias, add_bias_kv */
    uint32_t q_rows;         /* rows of q_proj, columns of the output projection: E_q = H * D */
    uint32_t kv_rows;        /* rows of k_proj/v_proj: E_q, or H_kv * D */
    uint32_t q_norm_values;  /* values of q_norm.weight (D per head, or E_q for a row); 0 = none */
    uint32_t sinks_count;    /* values of sinks (H); 0 = none */
    float *data[T_COUNT];
    vkattn_weight_file_info info; /* its strings point into the arrays below */
    char prefix[ST_INFO_NAME];
    char names[T_COUNT][ST_INFO_NAME];
    char dtypes[T_COUNT][8];
};

/* ---- the attention layer ------------------------------------------------------------------------ */

typedef struct st_layer {
    const st_tensor *t[T_COUNT];
    int names;                   /* NAMES_* */
    const char *raw_prefix;      /* the anchor's name, of which the first prefix_len bytes */
    size_t prefix_len;
    char prefix[ST_QUOTE];       /* quoted for messages */
    int zero_out_bias;           /* q/k/v_proj.bias without o_proj.bias: out_proj_bias is zeros */
    uint32_t ignored;            /* other tensors under a non-empty prefix */
} st_layer;

typedef struct st_dims {
    uint64_t E, q_rows, kdim, vdim, kv_rows;
} st_dims;

static const char *layer_name(const st_layer *l, int k) { return k_names[l->names][k]; }

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

/* The output projections that anchor a layer, in either naming. */
static const char *const k_anchors[] = {"out_proj.weight", "o_proj.weight"};

/* The prefix length when t is "<prefix>out_proj.weight" or "<prefix>o_proj.weight" with an empty
 * prefix or one ending in '.'; SIZE_MAX otherwise. */
static size_t anchor_prefix_len(const st_tensor *t)
{
    for (size_t a = 0; a < sizeof k_anchors / sizeof k_anchors[0]; a++) {
        size_t n = strlen(k_anchors[a]);
        if (t->name_len < n || memcmp(t->name + t->name_len - n, k_anchors[a], n) != 0) continue;
        size_t p = t->name_len - n;
        if (p == 0 || t->name[p - 1] == '.') return p;
    }
    return SIZE_MAX;
}

/* Orders "layers.2." before "layers.10.": runs of digits compare as numbers. */
static int natural_compare(const char *a, size_t na, const char *b, size_t nb)
{
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        bool da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
        if (da && db) {
            while (i < na && a[i] == '0') i++;
            while (j < nb && b[j] == '0') j++;
            size_t ea = i, eb = j;
            while (ea < na && a[ea] >= '0' && a[ea] <= '9') ea++;
            while (eb < nb && b[eb] >= '0' && b[eb] <= '9') eb++;
            if (ea - i != eb - j) return ea - i < eb - j ? -1 : 1;
            int c = memcmp(a + i, b + j, ea - i);
            if (c) return c;
            i = ea, j = eb;
            continue;
        }
        if (a[i] != b[j]) return (unsigned char)a[i] < (unsigned char)b[j] ? -1 : 1;
        i++, j++;
    }
    return (na - i > nb - j) - (na - i < nb - j);
}

static int compare_anchor_prefixes(const void *a, const void *b)
{
    const st_tensor *x = *(const st_tensor *const *)a, *y = *(const st_tensor *const *)b;
    return natural_compare(x->name, anchor_prefix_len(x), y->name, anchor_prefix_len(y));
}

/* Writes the prefixes of the file's attention layers, in natural order, into buf: "'a.', 'b.',
 * 'c.', 'd.' and 12 more", or "none". *count gets how many there are. */
#define ST_LIST_SHOWN 4
static vkattn_status list_layers(const st_header *h, char *buf, size_t cap, size_t *count, vkattn_error *error)
{
    size_t n = 0;
    for (size_t i = 0; i < h->count; i++) n += anchor_prefix_len(&h->tensors[i]) != SIZE_MAX;
    *count = 0;
    snprintf(buf, cap, "none");
    if (n == 0) return VKATTN_OK;
    const st_tensor **anchors = malloc(n * sizeof *anchors);
    if (!anchors)
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors: cannot sort %zu layer names", n);
    n = 0;
    for (size_t i = 0; i < h->count; i++)
        if (anchor_prefix_len(&h->tensors[i]) != SIZE_MAX) anchors[n++] = &h->tensors[i];
    qsort(anchors, n, sizeof *anchors, compare_anchor_prefixes);
    size_t used = 0, distinct = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && compare_anchor_prefixes(&anchors[i - 1], &anchors[i]) == 0) continue; /* o_proj and out_proj */
        if (distinct++ >= ST_LIST_SHOWN || used >= cap) continue;
        char q[ST_QUOTE];
        vka_io_quote(q, sizeof q, anchors[i]->name, anchor_prefix_len(anchors[i]));
        used += (size_t)snprintf(buf + used, cap - used, "%s'%s'%s", distinct > 1 ? ", " : "", q,
                                 q[0] ? "" : " (no prefix)");
    }
    if (distinct > ST_LIST_SHOWN && used < cap)
        snprintf(buf + used, cap - used, " and %zu more", distinct - ST_LIST_SHOWN);
    *count = distinct;
    free(anchors);
    return VKATTN_OK;
}

/* Does the anchor t lie under the caller's prefix? "p." matches "p." and, for a prefix given without
 * its final '.', "p" matches "p." too. */
static bool under_prefix(const st_tensor *t, size_t p, const char *want, size_t want_len)
{
    if (p == want_len) return memcmp(t->name, want, p) == 0;
    return want[want_len - 1] != '.' && p == want_len + 1 && memcmp(t->name, want, want_len) == 0;
}

static vkattn_status find_anchor(const st_header *h, const char *want, st_layer *layer, vkattn_error *error)
{
    size_t want_len = want ? strlen(want) : 0;
    const st_tensor *anchor = NULL;
    size_t anchor_len = 0, layers = 0;
    char a[ST_QUOTE], b[ST_QUOTE], list[400];
    vkattn_status status;
    for (size_t i = 0; i < h->count; i++) {
        const st_tensor *t = &h->tensors[i];
        size_t p = anchor_prefix_len(t);
        if (p == SIZE_MAX || (want_len && !under_prefix(t, p, want, want_len))) continue;
        if (anchor && p == anchor_len && memcmp(anchor->name, t->name, p) == 0)
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: names are mixed: '%s' and '%s' are both present; a layer has one "
                                 "output projection (o_proj in Hugging Face's naming, out_proj in "
                                 "nn.MultiheadAttention's)",
                                 vka_st_quote_name(a, anchor), vka_st_quote_name(b, t));
        if (anchor) {
            VKA_TRY(list_layers(h, list, sizeof list, &layers, error));
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: '%s' and '%s' both look like an attention layer's output projection; "
                                 "a file must hold one layer unless a prefix names it (the file's layers: %s)",
                                 vka_st_quote_name(a, anchor), vka_st_quote_name(b, t), list);
        }
        anchor = t;
        anchor_len = p;
    }
    if (!anchor) {
        VKA_TRY(list_layers(h, list, sizeof list, &layers, error));
        if (!want_len)
            return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                                 "safetensors: no out_proj.weight or o_proj.weight tensor (with or without a prefix "
                                 "such as 'attn.')");
        return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                             "safetensors: no attention layer has the prefix '%s' (no '%sout_proj.weight' or "
                             "'%so_proj.weight'); %zu layer%s in the file: %s",
                             vka_io_quote(a, sizeof a, want, want_len), a, a, layers, layers == 1 ? "" : "s", list);
    }
    layer->raw_prefix = anchor->name;
    layer->prefix_len = anchor_len;
    vka_io_quote(layer->prefix, sizeof layer->prefix, anchor->name, anchor_len);
    layer->names = memcmp(anchor->name + anchor_len, "o_proj", 6) == 0 ? NAMES_HF : NAMES_TORCH;
    return VKATTN_OK;
fail:
    return status;
}

static const st_tensor *find_in_layer(const st_header *h, const st_layer *l, const char *name)
{
    return find_name(h, l->raw_prefix, l->prefix_len, name);
}

static bool in_naming(int names, const char *name)
{
    for (int k = 0; k < T_COUNT; k++)
        if (k_names[names][k] && strcmp(k_names[names][k], name) == 0) return true;
    return false;
}

/* Picks the naming from the names under the prefix and refuses a mix of two. */
static vkattn_status find_layer(const st_header *h, const char *want, st_layer *layer, vkattn_error *error)
{
    vkattn_status status;
    VKA_TRY(find_anchor(h, want, layer, error));
    const char *p = layer->prefix;
    /* out_proj with q_proj.weight & co is Hugging Face's naming too (BART, CLIP, Whisper). */
    if (layer->names == NAMES_TORCH)
        for (int k = T_Q_W; k <= T_V_B; k++)
            if (k_names[NAMES_HF_OUT][k] && k != T_OUT_W && k != T_OUT_B &&
                find_in_layer(h, layer, k_names[NAMES_HF_OUT][k]))
                layer->names = NAMES_HF_OUT;
    /* A name of the chosen naming that is present, for the message: the anchor, or for BART's
     * naming (whose out_proj is nn.MultiheadAttention's too) one of its q/k/v names. */
    const char *own = layer_name(layer, T_OUT_W);
    for (int k = T_Q_W; layer->names == NAMES_HF_OUT && k < T_COUNT; k++)
        if (k != T_OUT_W && k != T_OUT_B && layer_name(layer, k) && find_in_layer(h, layer, layer_name(layer, k))) {
            own = layer_name(layer, k);
            break;
        }
    for (int c = 0; c < NAMES_COUNT; c++)
        for (int k = 0; k < T_COUNT; k++) {
            const char *other = k_names[c][k];
            if (c == layer->names || !other || in_naming(layer->names, other) || !find_in_layer(h, layer, other)) continue;
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: names are mixed under the prefix '%s': '%s%s' is %s's naming but "
                                 "'%s%s' is %s's; a layer uses one naming",
                                 p, p, own, k_naming_names[layer->names], p, other,
                                 k_naming_names[c]);
        }
    for (int k = 0; k < T_COUNT; k++) {
        const char *name = layer_name(layer, k);
        if (!name) continue;
        layer->t[k] = find_in_layer(h, layer, name);
        /* Without a caller's prefix the layer is whatever the anchor says; the same name without
         * it would be a second, partial layer. */
        if (!(want && *want) && layer->prefix_len > 0 && find_name(h, "", 0, name))
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: names are mixed: '%s%s' has the prefix '%s' but '%s' has none", p,
                                 layer_name(layer, T_OUT_W), p, name);
    }
    if (layer->prefix_len > 0)
        for (size_t i = 0; i < h->count; i++) {
            const st_tensor *t = &h->tensors[i];
            if (t->name_len < layer->prefix_len || memcmp(t->name, layer->raw_prefix, layer->prefix_len) != 0) continue;
            bool used = false;
            for (int k = 0; k < T_COUNT; k++) used |= layer->t[k] == t;
            /* Tensors that would change the layer's result are refused, not skipped: norms of q
             * and k with a bias (LayerNorm: StableLM, Persimmon) and a fused projection's bias. */
            const char *rest = t->name + layer->prefix_len;
            size_t rest_len = t->name_len - layer->prefix_len;
            static const char *const changes_result[] = {"q_layernorm.weight", "k_layernorm.weight", "q_norm.bias",
                                                         "k_norm.bias", "qkv_proj.bias"};
            for (size_t c = 0; !used && c < sizeof changes_result / sizeof *changes_result; c++)
                if (vka_st_name_is(rest, rest_len, changes_result[c]))
                    return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED,
                                         "safetensors: layer '%s' has '%s%s', which vkattn does not apply (it takes "
                                         "RMS norms of q and k, q_norm.weight and k_norm.weight, and a fused "
                                         "qkv_proj.weight without a bias); without it the layer's output would be wrong",
                                         p, p, changes_result[c]);
            layer->ignored += !used;
        }
    return VKATTN_OK;
fail:
    return status;
}

/* nn.MultiheadAttention: one projection form, biases and bias_k/bias_v in pairs. */
static vkattn_status check_presence_torch(const st_layer *l, vkattn_error *error)
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
                                 "safetensors: '%s%s' is missing (q/k/v_proj_weight come as a set of three)", p,
                                 layer_name(l, k));
    static const int pairs[2][2] = {{T_IN_B, T_OUT_B}, {T_BIAS_K, T_BIAS_V}};
    for (int i = 0; i < 2; i++) {
        int x = pairs[i][0], y = pairs[i][1];
        if (!l->t[x] != !l->t[y]) {
            int have = l->t[x] ? x : y, lack = l->t[x] ? y : x;
            return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                                 "safetensors: '%s%s' is present but '%s%s' is missing (they come as a pair)", p,
                                 layer_name(l, have), p, layer_name(l, lack));
        }
    }
    return VKATTN_OK;
}

/* Appends "'<prefix><name>'" to a list of names for a message. */
static void append_name(char *buf, size_t cap, const char *prefix, const char *name)
{
    size_t used = strlen(buf);
    if (used < cap) snprintf(buf + used, cap - used, "%s'%s%s'", used ? ", " : "", prefix, name);
}

/* Hugging Face: the three input projections; the biases all or none, except that o_proj.bias alone
 * may be absent (Qwen2: biased q/k/v, unbiased output), which loads as a zero output bias. */
static vkattn_status check_presence_hf(st_layer *l, vkattn_error *error)
{
    const char *p = l->prefix;
    char missing[3 * ST_QUOTE + 200] = "", present[3 * ST_QUOTE + 200] = "";
    const bool fused = l->t[T_QKV_W] != NULL;
    if (fused && (l->t[T_Q_W] || l->t[T_K_W] || l->t[T_V_W]))
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: '%sqkv_proj.weight' and '%sq/k/v_proj.weight' are both present; a layer "
                             "has one form",
                             p, p);
    for (int k = T_Q_W; !fused && k <= T_V_W; k++)
        if (!l->t[k]) append_name(missing, sizeof missing, p, layer_name(l, k));
    if (missing[0])
        return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                             "safetensors: %s missing (a Hugging Face attention layer has q_proj.weight, "
                             "k_proj.weight, v_proj.weight, or one qkv_proj.weight, and %s)",
                             missing, layer_name(l, T_OUT_W));
    if (!l->t[T_Q_NORM] != !l->t[T_K_NORM])
        return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                             "safetensors: '%s%s' is present but '%s%s' is missing (q and k norms come as a pair)", p,
                             l->t[T_Q_NORM] ? "q_norm.weight" : "k_norm.weight", p,
                             l->t[T_Q_NORM] ? "k_norm.weight" : "q_norm.weight");
    if (fused && (l->t[T_Q_B] || l->t[T_K_B] || l->t[T_V_B]))
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: '%sqkv_proj.weight' with separate q/k/v biases; a fused layer has none", p);
    static const int biases[4] = {T_Q_B, T_K_B, T_V_B, T_OUT_B};
    int have = 0;
    for (int i = 0; i < 4; i++) {
        if (l->t[biases[i]]) have++, append_name(present, sizeof present, p, layer_name(l, biases[i]));
        else append_name(missing, sizeof missing, p, layer_name(l, biases[i]));
    }
    l->zero_out_bias = have == 3 && !l->t[T_OUT_B];
    if (have == 0 || have == 4 || l->zero_out_bias) return VKATTN_OK;
    return vka_error_set(error, VKATTN_ERROR_NOT_FOUND,
                         "safetensors: %s present but %s missing: a layer's biases are all present or all absent "
                         "(only %s alone may be absent, as in Qwen2; it loads as zeros)",
                         present, missing, layer_name(l, T_OUT_B));
}

static vkattn_status check_presence(st_layer *l, vkattn_error *error)
{
    vkattn_status status = l->names == NAMES_TORCH ? check_presence_torch(l, error) : check_presence_hf(l, error);
    if (status != VKATTN_OK) return status;
    for (int k = 0; k < T_COUNT; k++) {
        const st_tensor *t = l->t[k];
        if (t && t->dtype_index != ST_F32 && t->dtype_index != ST_F16 && t->dtype_index != ST_BF16) {
            char dtype[48];
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: '%s%s' has dtype %s; only F32, F16 and BF16 are supported", l->prefix,
                                 layer_name(l, k), vka_io_quote(dtype, sizeof dtype, t->dtype, t->dtype_len));
        }
    }
    return VKATTN_OK;
}

/* Compares a tensor's shape with what the output projection (E, E_q), the key/value rows and its
 * own kdim/vdim say it must be. */
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
        snprintf(expected, sizeof expected, "(%llu, %s)", (unsigned long long)want[0], k == T_K_W ? "kdim" : "vdim");
    else
        vka_st_format_u64_dims(expected, sizeof expected, want, rank);
    return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: '%s%s' has shape %s but %s%s says E = %llu (expected %s)",
                         l->prefix, layer_name(l, k), vka_st_format_dims(have, sizeof have, t), l->prefix,
                         layer_name(l, T_OUT_W), (unsigned long long)E, expected);
}

/* Separate key/value projections (Hugging Face's k_proj.weight, nn.MultiheadAttention's
 * k_proj_weight) have H_kv * D rows (grouped-query attention when fewer than the query's E_q): the
 * same for both, and a divisor of E_q = H * D, since H_kv divides H. */
static vkattn_status check_kv_rows(const st_layer *l, uint64_t Eq, uint64_t *kv_rows, vkattn_error *error)
{
    const st_tensor *k = l->t[T_K_W], *v = l->t[T_V_W];
    *kv_rows = Eq;
    if (k->rank != 2) return VKATTN_OK; /* a wrong rank is check_shape's */
    uint64_t rows = k->dims[0];
    if (rows == 0 || rows > Eq || Eq % rows != 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: '%s%s' has %llu rows; key/value projections have H_kv * D rows, "
                             "which must divide the query's H * D = %llu (each key/value head serves H / H_kv query "
                             "heads)",
                             l->prefix, layer_name(l, T_K_W), (unsigned long long)rows, (unsigned long long)Eq);
    if (v && v->rank == 2 && v->dims[0] != rows)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: '%s%s' has %llu rows but '%s%s' has %llu; both have H_kv * D",
                             l->prefix, layer_name(l, T_V_W), (unsigned long long)v->dims[0], l->prefix,
                             layer_name(l, T_K_W), (unsigned long long)rows);
    *kv_rows = rows;
    return VKATTN_OK;
}

static vkattn_status check_shapes(const st_layer *l, st_dims *dims, vkattn_error *error)
{
    vkattn_status status;
    const st_tensor *out_w = l->t[T_OUT_W];
    char have[96];
    if (out_w->rank != 2 || out_w->dims[0] == 0 || out_w->dims[0] > UINT32_MAX || out_w->dims[1] == 0 ||
        out_w->dims[1] > UINT32_MAX)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: '%s%s' has shape %s; it must be (E, H * D) with both from 1 to %u",
                             l->prefix, layer_name(l, T_OUT_W), vka_st_format_dims(have, sizeof have, out_w), (unsigned)UINT32_MAX);
    uint64_t E = out_w->dims[0], Eq = out_w->dims[1], kdim = E, vdim = E, r = Eq;
    for (int k = T_K_W; k <= T_V_W; k++) {
        const st_tensor *t = l->t[k];
        if (!t || t->rank != 2) continue; /* a wrong rank is reported by check_shape */
        if (t->dims[1] == 0 || t->dims[1] > UINT32_MAX)
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: '%s%s' has shape %s; %s must be 1 to %u",
                                 l->prefix, layer_name(l, k), vka_st_format_dims(have, sizeof have, t),
                                 k == T_K_W ? "kdim" : "vdim", (unsigned)UINT32_MAX);
        *(k == T_K_W ? &kdim : &vdim) = t->dims[1];
    }
    if (l->t[T_K_W]) VKA_TRY(check_kv_rows(l, Eq, &r, error));
    const st_tensor *qkv = l->t[T_QKV_W];
    if (qkv && qkv->rank == 2) { /* (E_q + 2 kv_rows, E): the key/value rows are what the query's leave */
        uint64_t rows = qkv->dims[0];
        if (rows <= Eq || (rows - Eq) % 2 != 0 || Eq % ((rows - Eq) / 2) != 0)
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: '%sqkv_proj.weight' has %llu rows; a fused projection has E_q + 2 * kv_rows "
                                 "(E_q = %llu from %s%s, kv_rows = H_kv * D dividing it)",
                                 l->prefix, (unsigned long long)rows, (unsigned long long)Eq, l->prefix,
                                 layer_name(l, T_OUT_W));
        r = (rows - Eq) / 2;
    }
    /* q/k norms: per head (D each, D dividing both widths) or over a whole row (E_q and kv_rows) */
    const st_tensor *qn = l->t[T_Q_NORM], *kn = l->t[T_K_NORM];
    if (qn && kn && qn->rank == 1 && kn->rank == 1) {
        uint64_t nq = qn->dims[0], nk = kn->dims[0];
        bool head = nq == nk && nq && Eq % nq == 0 && r % nq == 0, row = nq == Eq && nk == r;
        if (!head && !row)
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "safetensors: '%sq_norm.weight' has %llu values and '%sk_norm.weight' %llu; norms are "
                                 "per head (D each, D dividing %llu and %llu) or over a whole row (%llu and %llu)",
                                 l->prefix, (unsigned long long)nq, l->prefix, (unsigned long long)nk,
                                 (unsigned long long)Eq, (unsigned long long)r, (unsigned long long)Eq,
                                 (unsigned long long)r);
    }
    const st_tensor *sinks = l->t[T_SINKS];
    if (sinks && sinks->rank == 1 && (sinks->dims[0] == 0 || Eq % sinks->dims[0] != 0))
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "safetensors: '%ssinks' has %llu values; it has one per head, H dividing E_q = %llu",
                             l->prefix, (unsigned long long)sinks->dims[0], (unsigned long long)Eq);
    const uint64_t nq = qn ? qn->dims[0] : 0, nk = kn ? kn->dims[0] : 0, ns = sinks ? sinks->dims[0] : 0;
    const uint64_t shapes[T_COUNT][3] = {
        [T_IN_W] = {Eq + 2 * r, E}, [T_Q_W] = {Eq, E}, [T_K_W] = {r, kdim},  [T_V_W] = {r, vdim},
        [T_IN_B] = {Eq + 2 * r}, [T_OUT_W] = {E, Eq},  [T_OUT_B] = {E},      [T_BIAS_K] = {1, 1, r},
        [T_BIAS_V] = {1, 1, r}, [T_Q_B] = {Eq},       [T_K_B] = {r},          [T_V_B] = {r},
        [T_QKV_W] = {Eq + 2 * r, E}, [T_Q_NORM] = {nq}, [T_K_NORM] = {nk},   [T_SINKS] = {ns},
    };
    static const uint32_t ranks[T_COUNT] = {
        [T_IN_W] = 2, [T_Q_W] = 2, [T_K_W] = 2, [T_V_W] = 2, [T_IN_B] = 1, [T_OUT_W] = 2, [T_OUT_B] = 1,
        [T_BIAS_K] = 3, [T_BIAS_V] = 3, [T_Q_B] = 1, [T_K_B] = 1, [T_V_B] = 1, [T_QKV_W] = 2, [T_Q_NORM] = 1,
        [T_K_NORM] = 1, [T_SINKS] = 1,
    };
    for (int k = 0; k < T_COUNT; k++) VKA_TRY(check_shape(l, k, shapes[k], ranks[k], E, error));
    dims->E = E;
    dims->q_rows = Eq;
    dims->kdim = kdim;
    dims->vdim = vdim;
    dims->kv_rows = r;
    return VKATTN_OK;
fail:
    return status;
}

/* Reads tensor t into dst (t->count floats), converting to float32 in place: the stored bytes are
 * read into the end of dst and widened front to back, so each element is read before an element
 * written later can overwrite it. */
static vkattn_status read_tensor(st_checkpoint *ck, const st_tensor *t, float *dst, vkattn_error *error)
{
    size_t width = vka_st_dtype_size(t->dtype_index), n = t->count;
    uint8_t *bytes = (uint8_t *)dst + (4 - width) * n;
    vkattn_status status = vka_st_checkpoint_read(ck, t, bytes, error);
    if (status != VKATTN_OK) return status;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = bytes + width * i;
        if (t->dtype_index == ST_F32) {
            uint32_t bits = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
            memcpy(&dst[i], &bits, sizeof bits);
        } else {
            uint16_t bits = (uint16_t)(p[0] | p[1] << 8);
            dst[i] = t->dtype_index == ST_F16 ? vka_f16_to_f32(bits) : vka_bf16_to_f32(bits);
        }
    }
    return VKATTN_OK;
}

/* A zeroed array of `count` floats for slot k. */
static vkattn_status alloc_floats(const st_layer *l, int k, size_t count, float **out, vkattn_error *error)
{
    size_t bytes;
    if (!vka_mul_size(count, sizeof(float), &bytes))
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors: '%s%s' is too large", l->prefix, layer_name(l, k));
    *out = calloc(1, bytes ? bytes : 1);
    if (!*out)
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors: cannot allocate %zu bytes for '%s%s'",
                             bytes, l->prefix, layer_name(l, k ? k : T_IN_B));
    return VKATTN_OK;
}

static void fill_info(vkattn_weight_file *file, const st_layer *l, const st_header *h, const st_dims *d)
{
    vkattn_weight_file_info *info = &file->info;
    info->naming = l->names == NAMES_TORCH ? VKATTN_WEIGHT_NAMES_TORCH : VKATTN_WEIGHT_NAMES_HF;
    vka_io_quote(file->prefix, sizeof file->prefix, l->raw_prefix, l->prefix_len);
    info->prefix = file->prefix;
    info->embed_dim = (uint32_t)d->E;
    info->q_rows = (uint32_t)d->q_rows;
    info->kv_rows = (uint32_t)d->kv_rows;
    info->kdim = (uint32_t)d->kdim;
    info->vdim = (uint32_t)d->vdim;
    info->out_bias_zero_filled = l->zero_out_bias;
    info->ignored_under_prefix = l->ignored;
    info->file_tensor_count = h->count;
    for (int k = 0; k < T_COUNT; k++) {
        const st_tensor *t = l->t[k];
        if (!t) continue;
        uint32_t i = info->tensor_count++;
        vka_io_quote(file->names[i], sizeof file->names[i], t->name, t->name_len);
        snprintf(file->dtypes[i], sizeof file->dtypes[i], "%s", vka_st_dtype_name(t->dtype_index));
        info->tensor_names[i] = file->names[i];
        info->tensor_dtypes[i] = file->dtypes[i];
    }
}

static vkattn_status build_file(const st_layer *l, st_checkpoint *ck, const st_dims *d, vkattn_weight_file **out,
                                vkattn_error *error)
{
    vkattn_status status;
    vkattn_weight_file *file = calloc(1, sizeof *file);
    if (!file) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors: cannot allocate the weight file");
    /* Norms and sinks get room for the widest reading a layer can make of them (E_q or kv_rows
     * values; zeros past the file's), so a num_heads that disagrees with the file never reads
     * past them; vkattn_weight_file_describe refuses such a layer anyway. */
    const size_t padded[T_COUNT] = {[T_Q_NORM] = (size_t)d->q_rows, [T_K_NORM] = (size_t)d->kv_rows,
                                    [T_SINKS] = (size_t)d->q_rows};
    for (int k = 0; k < T_COUNT; k++) {
        if (!l->t[k] || k == T_Q_B || k == T_K_B || k == T_V_B) continue;
        size_t n = l->t[k]->count > padded[k] ? l->t[k]->count : padded[k];
        VKA_TRY(alloc_floats(l, k, n, &file->data[k], error));
        VKA_TRY(read_tensor(ck, l->t[k], file->data[k], error));
    }
    if (l->t[T_Q_B]) { /* in_proj_bias = [q_proj.bias, k_proj.bias, v_proj.bias]: E_q + 2 * kv_rows */
        size_t E = (size_t)d->E, Eq = (size_t)d->q_rows, r = (size_t)d->kv_rows;
        VKA_TRY(alloc_floats(l, T_IN_B, Eq + 2 * r, &file->data[T_IN_B], error));
        VKA_TRY(read_tensor(ck, l->t[T_Q_B], file->data[T_IN_B], error));
        VKA_TRY(read_tensor(ck, l->t[T_K_B], file->data[T_IN_B] + Eq, error));
        VKA_TRY(read_tensor(ck, l->t[T_V_B], file->data[T_IN_B] + Eq + r, error));
        if (l->zero_out_bias) VKA_TRY(alloc_floats(l, T_OUT_B, E, &file->data[T_OUT_B], error));
    }
    file->weights.in_proj_weight = file->data[T_IN_W];
    file->weights.q_proj_weight = file->data[T_Q_W];
    file->weights.k_proj_weight = file->data[T_K_W];
    file->weights.v_proj_weight = file->data[T_V_W];
    if (file->data[T_QKV_W]) { /* rows [0, E_q) are W_Q, then W_K, then W_V */
        const size_t E = (size_t)d->E, Eq = (size_t)d->q_rows, r = (size_t)d->kv_rows;
        file->weights.q_proj_weight = file->data[T_QKV_W];
        file->weights.k_proj_weight = file->data[T_QKV_W] + Eq * E;
        file->weights.v_proj_weight = file->data[T_QKV_W] + (Eq + r) * E;
    }
    file->weights.q_rows = (uint32_t)d->q_rows;
    file->weights.kv_rows = (uint32_t)d->kv_rows;
    file->weights.q_norm_weight = file->data[T_Q_NORM];
    file->weights.k_norm_weight = file->data[T_K_NORM];
    file->weights.sinks = file->data[T_SINKS];
    file->q_norm_values = l->t[T_Q_NORM] ? (uint32_t)l->t[T_Q_NORM]->count : 0;
    file->sinks_count = l->t[T_SINKS] ? (uint32_t)l->t[T_SINKS]->count : 0;
    file->weights.in_proj_bias = file->data[T_IN_B];
    file->weights.out_proj_weight = file->data[T_OUT_W];
    file->weights.out_proj_bias = file->data[T_OUT_B];
    file->weights.bias_k = file->data[T_BIAS_K];
    file->weights.bias_v = file->data[T_BIAS_V];
    file->desc.embed_dim = (uint32_t)d->E;
    file->desc.kdim = (uint32_t)d->kdim;
    file->desc.vdim = (uint32_t)d->vdim;
    file->desc.no_bias = file->data[T_OUT_B] == NULL;
    file->desc.add_bias_kv = file->data[T_BIAS_K] != NULL;
    file->kv_rows = (uint32_t)d->kv_rows;
    file->q_rows = (uint32_t)d->q_rows;
    fill_info(file, l, &ck->header, d);
    file->info.file_bytes = vka_st_checkpoint_size(ck);
    file->info.bytes_read = vka_st_checkpoint_bytes_read(ck);
    *out = file;
    return VKATTN_OK;
fail:
    vkattn_weight_file_destroy(file);
    return status;
}

/* ---- entry points ------------------------------------------------------------------------------- */

/* The layer in a checkpoint whose headers are read and checked: its tensors and nothing else. */
static vkattn_status load_layer(st_checkpoint *ck, const char *prefix, vkattn_weight_file **out, vkattn_error *error)
{
    st_layer layer = {0};
    st_dims dims = {0};
    vkattn_status status;
    VKA_TRY(find_layer(&ck->header, prefix, &layer, error));
    VKA_TRY(check_presence(&layer, error));
    VKA_TRY(check_shapes(&layer, &dims, error));
    VKA_TRY(build_file(&layer, ck, &dims, out, error));
fail:
    return status;
}

/* A lone safetensors file, in memory or open. */
static vkattn_status load_lone(st_source src, const char *prefix, vkattn_weight_file **out, vkattn_error *error)
{
    st_checkpoint ck;
    vkattn_status status = vka_st_checkpoint_lone(&ck, src, error);
    if (status != VKATTN_OK) return status;
    status = load_layer(&ck, prefix, out, error);
    vka_st_checkpoint_close(&ck);
    return status;
}

vkattn_status vka_weight_file_parse_prefix(const uint8_t *data, size_t size, const char *prefix,
                                           vkattn_weight_file **out, vkattn_error *error)
{
    if ((!data && size) || !out)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "weight_file_parse: data or out is NULL");
    st_source src = {.data = data ? data : (const uint8_t *)"", .fd = -1, .size = size};
    return load_lone(src, prefix, out, error);
}

vkattn_status vka_weight_file_parse(const uint8_t *data, size_t size, vkattn_weight_file **out, vkattn_error *error)
{
    return vka_weight_file_parse_prefix(data, size, NULL, out, error);
}

/* The shards that a model.safetensors.index.json, read from `path`, names. */
static vkattn_status open_index(const char *path, const uint8_t *text, size_t size, const char *prefix,
                                vkattn_weight_file **out, vkattn_error *error)
{
    st_checkpoint ck;
    vkattn_status status = vka_st_checkpoint_index(&ck, path, text, size, error);
    if (status == VKATTN_OK) {
        status = load_layer(&ck, prefix, out, error);
        vka_st_checkpoint_close(&ck);
    }
    return status;
}

/* A model's folder: its model.safetensors, else its model.safetensors.index.json. */
static vkattn_status open_folder(const char *path, const char *prefix, vkattn_weight_file **out, vkattn_error *error)
{
    static const char *const names[] = {"model.safetensors", "model.safetensors.index.json"};
    size_t len = strlen(path);
    char *inner = malloc(len + 32);
    if (!inner) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "%s: cannot name its files", path);
    for (size_t i = 0; i < 2; i++) {
        struct stat st;
        snprintf(inner, len + 32, "%s%s%s", path, len && path[len - 1] == '/' ? "" : "/", names[i]);
        /* lstat: a broken link is there too, and its open says what is wrong with it */
        if (lstat(inner, &st) == 0 && !S_ISDIR(st.st_mode)) { /* its messages name it */
            vkattn_status status = vkattn_weight_file_open(inner, prefix, out, error);
            free(inner);
            return status;
        }
    }
    free(inner);
    return vka_error_set(error, VKATTN_ERROR_IO, "%s: a folder without model.safetensors or model.safetensors.index.json",
                         path);
}

/* Reads the open `fd` to its end and closes it. */
static vkattn_status read_whole(int fd, const char *path, size_t max_bytes, uint8_t **data, size_t *size,
                                vkattn_error *error)
{
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        vkattn_status status = vka_error_set(error, VKATTN_ERROR_IO, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
        return status;
    }
    vkattn_status status = vka_read_stream(f, path, max_bytes, data, size, error);
    fclose(f);
    return status;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

vkattn_status vkattn_weight_file_open(const char *path, const char *prefix, vkattn_weight_file **out,
                                      vkattn_error *error)
{
    if (!path || !out) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "weight file: path or out is NULL");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return vka_error_set(error, VKATTN_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        vkattn_status status = vka_error_set(error, VKATTN_ERROR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return status;
    }
    vkattn_status status;
    if (S_ISDIR(st.st_mode)) {
        close(fd);
        return open_folder(path, prefix, out, error);
    }
    if (S_ISREG(st.st_mode) && !ends_with(path, ".json")) {
        st_source src = {.fd = fd, .size = (uint64_t)st.st_size};
        status = load_lone(src, prefix, out, error);
        close(fd);
    } else {
        /* An index is read whole; so is a pipe or device, which cannot be read at offsets (from
         * this open, since a pipe opened twice would be two readers). */
        const bool is_index = ends_with(path, ".json");
        uint8_t *data = NULL;
        size_t size = 0;
        status = read_whole(fd, path, is_index ? (size_t)VKA_SAFETENSORS_MAX_HEADER_BYTES : VKA_IO_MAX_FILE_BYTES, &data,
                            &size, error);
        if (status != VKATTN_OK) return status;
        status = is_index ? open_index(path, data, size, prefix, out, error)
                          : vka_weight_file_parse_prefix(data, size, prefix, out, error);
        free(data);
    }
    if (status != VKATTN_OK) vka_io_error_in_file(error, path);
    return status;
}

vkattn_status vkattn_weight_file_load(const char *path, vkattn_weight_file **out, vkattn_error *error)
{
    return vkattn_weight_file_open(path, NULL, out, error);
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

vkattn_status vkattn_weight_file_get_info(const vkattn_weight_file *file, vkattn_weight_file_info *out)
{
    if (!file || !out) return VKATTN_ERROR_INVALID_ARGUMENT;
    *out = file->info;
    return VKATTN_OK;
}

void vkattn_weight_file_describe(const vkattn_weight_file *file, vkattn_layer_desc *desc)
{
    if (!file || !desc) return;
    desc->embed_dim = file->desc.embed_dim;
    desc->kdim = file->desc.kdim;
    desc->vdim = file->desc.vdim;
    desc->no_bias = file->desc.no_bias;
    desc->add_bias_kv = file->desc.add_bias_kv;
    /* D from the query's rows (H * D) once num_heads is known; 0 (= E / H) where that is the same */
    uint32_t E = file->desc.embed_dim, Eq = file->q_rows, H = desc->num_heads, r = file->kv_rows;
    uint32_t D = H != 0 && Eq % H == 0 ? Eq / H : 0;
    desc->head_dim = Eq != E && D ? D : 0;
    if (r == Eq) desc->num_kv_heads = 0; /* = num_heads */
    else if (D && r % D == 0) desc->num_kv_heads = r / D;
    else desc->num_kv_heads = VKATTN_KV_HEADS_UNKNOWN;
    /* The norms' kind from their widths; sinks one per head. A num_heads the file contradicts
     * makes the layer refused, as above. */
    uint32_t nq = file->q_norm_values;
    desc->qk_norm = nq == 0 ? VKATTN_QK_NORM_NONE : nq == D ? VKATTN_QK_NORM_HEAD : VKATTN_QK_NORM_ROW;
    if ((nq && nq != D && nq != Eq) || (file->sinks_count && file->sinks_count != H))
        desc->num_kv_heads = VKATTN_KV_HEADS_UNKNOWN;
}

vkattn_status vkattn_weight_file_check(const vkattn_weight_file *file, const vkattn_layer_desc *desc, vkattn_error *error)
{
    if (!file || !desc || desc->num_heads == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "weight file check: %s",
                             !file || !desc ? "file or desc is NULL" : "num_heads is 0");
    const char *p = file->info.prefix;
    const uint64_t E = desc->embed_dim, H = desc->num_heads, Hkv = desc->num_kv_heads ? desc->num_kv_heads : H;
    const uint64_t D = desc->head_dim ? desc->head_dim : E / H;
    const uint64_t kdim = desc->kdim ? desc->kdim : E, vdim = desc->vdim ? desc->vdim : E;
    const uint64_t norm = desc->qk_norm == VKATTN_QK_NORM_HEAD ? D : desc->qk_norm == VKATTN_QK_NORM_ROW ? H * D : 0;
#define DIFFER(what, want, file_what, have)                                                                          \
    if ((uint64_t)(want) != (uint64_t)(have))                                                                      \
        return vka_error_set(error, VKATTN_ERROR_SHAPE, "the layer '%s' has %llu %s but the description's %s is %llu", \
                             p, (unsigned long long)(have), file_what, what, (unsigned long long)(want));
    DIFFER("embed_dim", E, "rows in its output projection", file->desc.embed_dim)
    DIFFER("kdim", kdim, "columns in its key projection", file->desc.kdim)
    DIFFER("vdim", vdim, "columns in its value projection", file->desc.vdim)
    DIFFER("num_heads x head dim", H * D, "rows in its query projection", file->q_rows)
    DIFFER("num_kv_heads x head dim", Hkv * D, "rows in its key/value projections", file->kv_rows)
    DIFFER("q/k norm width (qk_norm)", norm, "values in q_norm.weight", file->q_norm_values)
    if (file->sinks_count) DIFFER("num_heads", H, "sinks", file->sinks_count)
#undef DIFFER
    const int no_bias = desc->no_bias != 0, bias_kv = desc->add_bias_kv != 0;
    if (no_bias != file->desc.no_bias)
        return vka_error_set(error, VKATTN_ERROR_SHAPE, "the layer '%s' has %s but the description's no_bias is %d", p,
                             file->desc.no_bias ? "no biases" : "biases", no_bias);
    if (bias_kv != file->desc.add_bias_kv)
        return vka_error_set(error, VKATTN_ERROR_SHAPE, "the layer '%s' has %s but the description's add_bias_kv is %d",
                             p, file->desc.add_bias_kv ? "bias_k and bias_v" : "no bias_k and bias_v", bias_kv);
    return VKATTN_OK;
}
