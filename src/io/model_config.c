/* A Hugging Face config.json, read for its attention (vkattn_model_config_*): the fields that
 * decide a layer's attention, per family as that family's modeling code uses them.
 *
 * Reading (io/json.h, bounded): the known fields of the top-level object and of a nested
 * text_config (multimodal wrappers such as Gemma 3's), the rope settings (rope_scaling, or
 * rope_parameters, whole or per layer type), layer_types and no_rope_layers. A field the file
 * leaves out takes its family's configuration-class default (k_families' `defaults`, transformers'
 * values), as AutoConfig does; a field given as null is None there and unset here. So the file is
 * read twice: once for its model_type, then over that family's defaults. Fields that would change
 * attention in a way vkattn does not compute (multi-head latent attention, chunked attention,
 * M-RoPE, bidirectional attention, an unknown rope type, an unknown family) are refused by name;
 * every other field is skipped.
 *
 * A layer (family_of's row, vkattn_model_config_layer): widths, the scale (Gemma:
 * query_pre_attn_scalar^-1/2), rotary frequencies (the layer type's own for Gemma 3's sliding
 * layers, none for SmolLM3's NoPE layers, partial_rotary_factor), the sliding window where the
 * layer slides, the softcap, q/k norms and biases.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "io/io.h"
#include "io/json.h"

/* Bounds on what a config may hold: beyond them it is refused, not truncated. */
#define MC_MAX_BYTES ((size_t)16 << 20)
#define MC_MAX_LAYERS 65536u
#define MC_MAX_FACTORS 4096u
#define MC_KEY 64 /* the longest key kept (longer ones cannot be ours and are skipped) */

/* A field that is absent or null: integers UINT64_MAX, doubles NaN, booleans -1. */
#define MC_UNSET UINT64_MAX

typedef enum mc_layer_type { MC_LAYER_FULL = 1, MC_LAYER_SLIDING = 2 } mc_layer_type;

/* rope_scaling, or one entry of rope_parameters. */
typedef struct mc_rope {
    int present;
    int members;      /* how many it names: an empty object is falsy in the reference's `or` */
    int rope_type;    /* named by rope_type, which wins over the older `type` in either order */
    char type[24];
    double theta, partial, factor, low, high, beta_fast, beta_slow, mscale, mscale_all_dim, attention_factor;
    uint64_t original;
    int truncate;
    float *short_factor, *long_factor;
    uint32_t n_short, n_long;
} mc_rope;

/* The fields of one config object (the top level, or its text_config). */
typedef struct mc_fields {
    char model_type[32];
    uint64_t hidden, heads, kv_heads, head_dim, layers, max_positions, original_max_positions, sliding_window,
        sliding_window_pattern, max_window_layers, no_rope_layer_interval;
    double rope_theta, rope_local_base_freq, partial_rotary_factor, query_pre_attn_scalar, softcap, rms_norm_eps;
    int attention_bias, use_sliding_window;
    uint8_t *layer_types; /* mc_layer_type per layer */
    uint32_t n_layer_types;
    uint8_t *no_rope_layers; /* 1 = the layer uses RoPE */
    uint32_t n_no_rope_layers;
    mc_rope rope;                     /* rope_scaling, or rope_parameters as a whole */
    mc_rope rope_full, rope_sliding;  /* rope_parameters per layer type */
    int rope_scaling_read;            /* the file named a rope_scaling: its rope_parameters are ignored */
} mc_fields;

struct vkattn_model_config {
    mc_fields top, text;
    int has_text;
    const mc_fields *f; /* the object that describes the language model */
    char *path;         /* vkattn_model_config_open's, for messages; NULL when parsed from memory */
};

/* ---- families ---------------------------------------------------------------------------------- */

typedef enum mc_slide {
    SLIDE_NONE,      /* no sliding layers */
    SLIDE_ALL,       /* sliding_window, when set, on every layer (Mistral, Phi-3) */
    SLIDE_QWEN,      /* layers from max_window_layers on */
    SLIDE_ALTERNATE, /* even layers slide (Gemma 2, gpt-oss) */
    SLIDE_PATTERN,   /* all but every sliding_window_pattern-th layer slide (Gemma 3) */
    SLIDE_NOPE       /* the layers without RoPE slide (SmolLM3) */
} mc_slide;

/* What a family's modeling code does with its config. */
typedef struct mc_family mc_family;
struct mc_family {
    const char *model_type;
    int bias;             /* attention_bias's default (gpt-oss), or the biases the code hard-codes */
    int bias_fixed;       /* the modeling code hard-codes them and never reads attention_bias (Mistral and
                             Phi-3: none; Qwen2: q/k/v, not o_proj's, which the checkpoint's absence says) */
    vkattn_qk_norm norm;  /* q/k norms */
    int norm_plus_one;    /* Gemma's (1 + w) */
    int scale_from_qpa;   /* scale = query_pre_attn_scalar^-1/2 */
    mc_slide slide;       /* which layers slide when layer_types is not given */
    int gated;            /* sliding_window applies only where use_sliding_window is true (Qwen, SmolLM3) */
    int local_rope;       /* sliding layers rotate with rope_local_base_freq and no scaling (Gemma 3) */
    int nope_layers;      /* no_rope_layers (else every no_rope_layer_interval-th layer) has no RoPE (SmolLM3) */
    int longrope_only;    /* rope types default and longrope only, su and yarn read as longrope (Phi-3) */
    int sinks;            /* a sink logit per head in the checkpoint (gpt-oss) */
    const char *prefix;   /* the layer's weights, with %u for its index */
    const char *text_family; /* a wrapper: its text_config's family when that names none (Gemma 3) */
    /* The configuration class's defaults of the fields read here, as config.json would spell
     * them (transformers' configuration_<family>.py; rope_theta from its default_theta, 10000
     * where the class sets none). Fields whose default is None or computed (num_key_value_heads
     * = num_attention_heads, head_dim = hidden_size / num_attention_heads) are left out. */
    const char *defaults;
};

#define MC_LAYERS "model.layers.%u.self_attn."
/* Gemma3TextConfig's: the text_config of gemma-3-4b and larger names few fields besides these */
#define MC_GEMMA3_TEXT                                                                                          \
    "{\"hidden_size\": 2304, \"num_hidden_layers\": 26, \"num_attention_heads\": 8, \"num_key_value_heads\": 4, " \
    "\"head_dim\": 256, \"max_position_embeddings\": 131072, \"rms_norm_eps\": 1e-6, "                        \
    "\"query_pre_attn_scalar\": 256, \"sliding_window\": 4096, \"sliding_window_pattern\": 6, "               \
    "\"rope_theta\": 1000000.0, \"rope_local_base_freq\": 10000.0}"
static const mc_family k_families[] = {
    {.model_type = "llama", .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 4096, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                 "\"max_position_embeddings\": 2048, \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000}"},
    {.model_type = "mistral", .bias_fixed = 1, .slide = SLIDE_ALL, .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 4096, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                 "\"num_key_value_heads\": 8, \"max_position_embeddings\": 131072, \"rms_norm_eps\": 1e-6, "
                 "\"sliding_window\": 4096, \"rope_theta\": 10000}"},
    {.model_type = "qwen2", .bias = 1, .bias_fixed = 1, .slide = SLIDE_QWEN, .gated = 1, .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 4096, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                 "\"num_key_value_heads\": 32, \"max_position_embeddings\": 32768, \"rms_norm_eps\": 1e-6, "
                 "\"use_sliding_window\": false, \"sliding_window\": 4096, \"max_window_layers\": 28, "
                 "\"rope_theta\": 10000}"},
    {.model_type = "qwen3", .norm = VKATTN_QK_NORM_HEAD, .slide = SLIDE_QWEN, .gated = 1, .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 4096, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                 "\"num_key_value_heads\": 32, \"head_dim\": 128, \"max_position_embeddings\": 32768, "
                 "\"rms_norm_eps\": 1e-6, \"use_sliding_window\": false, \"sliding_window\": 4096, "
                 "\"max_window_layers\": 28, \"rope_theta\": 10000}"},
    {.model_type = "gemma", .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 3072, \"num_hidden_layers\": 28, \"num_attention_heads\": 16, "
                 "\"num_key_value_heads\": 16, \"head_dim\": 256, \"max_position_embeddings\": 8192, "
                 "\"rms_norm_eps\": 1e-6, \"rope_theta\": 10000}"},
    {.model_type = "gemma2", .scale_from_qpa = 1, .slide = SLIDE_ALTERNATE, .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 2304, \"num_hidden_layers\": 26, \"num_attention_heads\": 8, "
                 "\"num_key_value_heads\": 4, \"head_dim\": 256, \"max_position_embeddings\": 8192, "
                 "\"rms_norm_eps\": 1e-6, \"query_pre_attn_scalar\": 256, \"sliding_window\": 4096, "
                 "\"attn_logit_softcapping\": 50.0, \"rope_theta\": 10000}"},
    {.model_type = "gemma3_text", .norm = VKATTN_QK_NORM_HEAD, .norm_plus_one = 1, .scale_from_qpa = 1,
     .slide = SLIDE_PATTERN, .local_rope = 1, .prefix = MC_LAYERS, .defaults = MC_GEMMA3_TEXT},
    {.model_type = "gemma3", .norm = VKATTN_QK_NORM_HEAD, .norm_plus_one = 1, .scale_from_qpa = 1,
     .slide = SLIDE_PATTERN, .local_rope = 1, .prefix = "language_model.model.layers.%u.self_attn.",
     .text_family = "gemma3_text"},
    {.model_type = "gpt_oss", .bias = 1, .slide = SLIDE_ALTERNATE, .sinks = 1, .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 2880, \"num_hidden_layers\": 36, \"num_attention_heads\": 64, "
                 "\"num_key_value_heads\": 8, \"head_dim\": 64, \"max_position_embeddings\": 131072, "
                 "\"rms_norm_eps\": 1e-5, \"sliding_window\": 128, \"rope_theta\": 150000, "
                 "\"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 32.0, \"beta_fast\": 32.0, "
                 "\"beta_slow\": 1.0, \"truncate\": false, \"original_max_position_embeddings\": 4096}}"},
    {.model_type = "phi3", .bias_fixed = 1, .slide = SLIDE_ALL, .longrope_only = 1, .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 3072, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                 "\"max_position_embeddings\": 4096, \"original_max_position_embeddings\": 4096, "
                 "\"rms_norm_eps\": 1e-5, \"rope_theta\": 10000}"},
    {.model_type = "olmo2", .norm = VKATTN_QK_NORM_ROW, .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 4096, \"num_hidden_layers\": 32, \"num_attention_heads\": 32, "
                 "\"max_position_embeddings\": 2048, \"rms_norm_eps\": 1e-5, \"rope_theta\": 10000}"},
    {.model_type = "smollm3", .slide = SLIDE_NOPE, .gated = 1, .nope_layers = 1, .prefix = MC_LAYERS,
     .defaults = "{\"hidden_size\": 2048, \"num_hidden_layers\": 36, \"num_attention_heads\": 16, "
                 "\"num_key_value_heads\": 4, \"max_position_embeddings\": 32768, \"rms_norm_eps\": 1e-6, "
                 "\"use_sliding_window\": false, \"no_rope_layer_interval\": 4, \"rope_theta\": 2000000}"},
};
#define MC_FAMILIES (sizeof k_families / sizeof k_families[0])

static const mc_family *family_of(const char *model_type)
{
    for (size_t i = 0; i < MC_FAMILIES; i++)
        if (strcmp(k_families[i].model_type, model_type) == 0) return &k_families[i];
    return NULL;
}

/* ---- reading ----------------------------------------------------------------------------------- */

/* Fields vkattn refuses by name: each means attention that vkattn does not compute. */
static const struct {
    const char *key, *why;
} k_refused[] = {
    {"kv_lora_rank", "multi-head latent attention (DeepSeek V2/V3) is not supported"},
    {"q_lora_rank", "multi-head latent attention (DeepSeek V2/V3) is not supported"},
    {"qk_rope_head_dim", "multi-head latent attention (DeepSeek V2/V3) is not supported"},
    {"attention_chunk_size", "chunked attention (Llama 4) is not supported"},
    {"mrope_section", "multimodal RoPE (M-RoPE, Qwen2-VL) is not supported"},
    {"use_qk_norm", "Llama 4's L2 norm of q and k is not supported"},
    {"use_bidirectional_attention", "bidirectional attention (EmbeddingGemma: every key visible, a window on both "
                                    "sides) is not supported"},
};

/* VKATTN_ERROR_NOT_FOUND when `key` is not refused; VKATTN_OK when it is but its value (null,
 * false, 0) says the feature is off. */
static vkattn_status refuse_key(vka_json *j, const char *where, const char *key)
{
    for (size_t i = 0; i < sizeof k_refused / sizeof k_refused[0]; i++) {
        if (strcmp(key, k_refused[i].key) != 0) continue;
        const uint8_t *start = j->p;
        vkattn_status status = vka_json_skip(j, 1);
        if (status != VKATTN_OK) return status;
        while (start < j->p && (*start == ' ' || *start == '\t' || *start == '\n' || *start == '\r')) start++;
        size_t n = (size_t)(j->p - start);
        static const char *const off[] = {"null", "false", "0"};
        for (size_t k = 0; k < sizeof off / sizeof off[0]; k++)
            if (n == strlen(off[k]) && memcmp(start, off[k], n) == 0) return VKATTN_OK;
        j->p = start;
        return vka_json_fail(j, "%s%s: %s", where, key, k_refused[i].why);
    }
    return VKATTN_ERROR_NOT_FOUND;
}

/* A null field is None in the reference: unset here, whatever the family's default. */
static vkattn_status read_uint(vka_json *j, const char *what, uint64_t *out)
{
    if (vka_json_null(j)) {
        *out = MC_UNSET;
        return VKATTN_OK;
    }
    return vka_json_uint(j, UINT32_MAX, what, out);
}

static vkattn_status read_double(vka_json *j, const char *what, double *out)
{
    if (vka_json_null(j)) {
        *out = NAN;
        return VKATTN_OK;
    }
    return vka_json_number(j, what, out);
}

static vkattn_status read_flag(vka_json *j, const char *what, int *out)
{
    if (vka_json_null(j)) {
        *out = -1;
        return VKATTN_OK;
    }
    bool b;
    vkattn_status status = vka_json_bool(j, what, &b);
    if (status == VKATTN_OK) *out = b;
    return status;
}

static vkattn_status read_text(vka_json *j, const char *what, char *dst, size_t cap)
{
    if (vka_json_null(j)) return VKATTN_OK;
    size_t len = 0;
    char buf[128];
    vkattn_status status = vka_json_string(j, buf, sizeof buf - 1, &len);
    if (status != VKATTN_OK) return status;
    if (len >= cap || memchr(buf, '\0', len)) return vka_json_fail(j, "%s is not a name vkattn knows", what);
    memcpy(dst, buf, len);
    dst[len] = '\0';
    return VKATTN_OK;
}

/* Readers of one list element into `slot`. */
typedef vkattn_status (*list_element)(vka_json *j, const char *what, size_t index, void *slot);

static vkattn_status float_element(vka_json *j, const char *what, size_t index, void *slot)
{
    (void)index;
    double v;
    vkattn_status status = vka_json_number(j, what, &v);
    *(float *)slot = (float)v;
    return status;
}

static vkattn_status flag_element(vka_json *j, const char *what, size_t index, void *slot)
{
    (void)index;
    uint64_t v = 0;
    vkattn_status status = vka_json_uint(j, 1, what, &v);
    *(uint8_t *)slot = (uint8_t)v;
    return status;
}

static vkattn_status layer_type_element(vka_json *j, const char *what, size_t index, void *slot)
{
    char type[32] = "";
    vkattn_status status = read_text(j, what, type, sizeof type);
    if (status != VKATTN_OK) return status;
    if (strcmp(type, "full_attention") == 0) *(uint8_t *)slot = MC_LAYER_FULL;
    else if (strcmp(type, "sliding_attention") == 0) *(uint8_t *)slot = MC_LAYER_SLIDING;
    else
        return vka_json_fail(j, "%s[%zu] is '%s'; vkattn computes full_attention and sliding_attention layers "
                                "(chunked or linear attention is not supported)",
                             what, index, type);
    return VKATTN_OK;
}

/* A list of at most `max` elements of `size` bytes each into a new array (replacing *out). */
static vkattn_status read_list(vka_json *j, const char *what, uint32_t max, size_t size, list_element element,
                               void **out, uint32_t *count)
{
    vkattn_status status;
    free(*out);
    *out = NULL;
    *count = 0;
    if (vka_json_null(j)) return VKATTN_OK;
    VKA_TRY(vka_json_expect(j, '[', what));
    if (!(*out = malloc((size_t)max * size)))
        return vka_error_set(j->error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "config.json: out of memory");
    for (size_t i = 0;; i++) {
        bool done;
        VKA_TRY(vka_json_element(j, i, &done));
        if (done) return VKATTN_OK;
        if (i >= max) return vka_json_fail(j, "%s has more than %u entries", what, max);
        VKA_TRY(element(j, what, i, (char *)*out + i * size));
        (*count)++;
    }
fail:
    return status;
}

static void rope_init(mc_rope *r)
{
    memset(r, 0, sizeof *r);
    r->theta = r->partial = r->factor = r->low = r->high = r->beta_fast = r->beta_slow = r->mscale = r->mscale_all_dim =
        r->attention_factor = NAN;
    r->original = MC_UNSET;
    r->truncate = -1;
}

static void rope_free(mc_rope *r)
{
    free(r->short_factor);
    free(r->long_factor);
}

/* One rope object's member `key` (rope_scaling's, or rope_parameters'). */
static vkattn_status read_rope_member(vka_json *j, const char *key, mc_rope *r)
{
    r->members++; /* a refused key switched off (null) still makes the object non-empty */
    vkattn_status status = refuse_key(j, "rope_scaling.", key);
    if (status != VKATTN_ERROR_NOT_FOUND) return status;
    static const struct {
        const char *key;
        size_t offset;
    } numbers[] = {
        {"rope_theta", offsetof(mc_rope, theta)},         {"partial_rotary_factor", offsetof(mc_rope, partial)},
        {"factor", offsetof(mc_rope, factor)},            {"low_freq_factor", offsetof(mc_rope, low)},
        {"high_freq_factor", offsetof(mc_rope, high)},    {"beta_fast", offsetof(mc_rope, beta_fast)},
        {"beta_slow", offsetof(mc_rope, beta_slow)},      {"mscale", offsetof(mc_rope, mscale)},
        {"mscale_all_dim", offsetof(mc_rope, mscale_all_dim)}, {"attention_factor", offsetof(mc_rope, attention_factor)},
    };
    r->present = 1;
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++)
        if (strcmp(key, numbers[i].key) == 0) return read_double(j, key, (double *)((char *)r + numbers[i].offset));
    if (strcmp(key, "rope_type") == 0) {
        r->rope_type = 1;
        r->type[0] = '\0'; /* null: no type, whatever `type` said before */
        return read_text(j, "rope_scaling.rope_type", r->type, sizeof r->type);
    }
    if (strcmp(key, "type") == 0) { /* transformers reads `type` only where rope_type is missing */
        char type[sizeof r->type];
        status = read_text(j, "rope_scaling.type", type, sizeof type);
        if (status == VKATTN_OK && !r->rope_type) memcpy(r->type, type, sizeof type);
        return status;
    }
    if (strcmp(key, "original_max_position_embeddings") == 0) return read_uint(j, key, &r->original);
    if (strcmp(key, "truncate") == 0) {
        /* transformers tests `if truncate:`, so null (None) does not truncate, as false */
        status = read_flag(j, key, &r->truncate);
        if (r->truncate < 0) r->truncate = 0;
        return status;
    }
    if (strcmp(key, "short_factor") == 0)
        return read_list(j, key, MC_MAX_FACTORS, sizeof(float), float_element, (void **)&r->short_factor, &r->n_short);
    if (strcmp(key, "long_factor") == 0)
        return read_list(j, key, MC_MAX_FACTORS, sizeof(float), float_element, (void **)&r->long_factor, &r->n_long);
    return vka_json_fail(j, "rope_scaling.%s is not a field vkattn knows; refused rather than ignored", key);
}

static void rope_reset(mc_rope *r)
{
    rope_free(r);
    rope_init(r);
}

/* A rope object replaces the family's default whole; null keeps it (gpt-oss: rope_parameters None
 * is its default YaRN). */
static vkattn_status read_rope(vka_json *j, mc_rope *r)
{
    vkattn_status status;
    if (vka_json_null(j)) return VKATTN_OK;
    rope_reset(r);
    VKA_TRY(vka_json_expect(j, '{', "rope_scaling"));
    r->present = 1;
    for (size_t i = 0;; i++) {
        bool done;
        char key[MC_KEY];
        VKA_TRY(vka_json_member_key(j, i, &done, key, sizeof key));
        if (done) return VKATTN_OK;
        VKA_TRY(read_rope_member(j, key, r));
    }
fail:
    return status;
}

static void fields_init(mc_fields *f);
static void fields_free(mc_fields *f);

/* rope_scaling: a rope object that names something replaces the family's default and any
 * rope_parameters; null or an empty object keeps what was there (transformers takes `rope_scaling
 * or rope_parameters`). */
static vkattn_status read_rope_scaling(vka_json *j, mc_fields *f)
{
    mc_rope r;
    rope_init(&r);
    vkattn_status status = read_rope(j, &r);
    if (status != VKATTN_OK || !r.members) {
        rope_free(&r);
        return status;
    }
    rope_free(&f->rope);
    f->rope = r;
    rope_reset(&f->rope_full);
    rope_reset(&f->rope_sliding);
    f->rope_scaling_read = 1;
    return VKATTN_OK;
}

/* rope_parameters: one rope object, or one per layer type; read and dropped where the file named a
 * rope_scaling. */
static vkattn_status read_rope_parameters(vka_json *j, mc_fields *f)
{
    vkattn_status status;
    if (vka_json_null(j)) return VKATTN_OK;
    if (f->rope_scaling_read) {
        mc_fields ignored;
        fields_init(&ignored);
        status = read_rope_parameters(j, &ignored);
        fields_free(&ignored);
        return status;
    }
    rope_reset(&f->rope);
    rope_reset(&f->rope_full);
    rope_reset(&f->rope_sliding);
    VKA_TRY(vka_json_expect(j, '{', "rope_parameters"));
    for (size_t i = 0;; i++) {
        bool done;
        char key[MC_KEY];
        VKA_TRY(vka_json_member_key(j, i, &done, key, sizeof key));
        if (done) return VKATTN_OK;
        if (strcmp(key, "full_attention") == 0) VKA_TRY(read_rope(j, &f->rope_full));
        else if (strcmp(key, "sliding_attention") == 0) VKA_TRY(read_rope(j, &f->rope_sliding));
        else VKA_TRY(read_rope_member(j, key, &f->rope));
    }
fail:
    return status;
}

static void fields_init(mc_fields *f)
{
    memset(f, 0, sizeof *f);
    f->hidden = f->heads = f->kv_heads = f->head_dim = f->layers = f->max_positions = f->original_max_positions =
        f->sliding_window = f->sliding_window_pattern = f->max_window_layers = f->no_rope_layer_interval = MC_UNSET;
    f->rope_theta = f->rope_local_base_freq = f->partial_rotary_factor = f->query_pre_attn_scalar = f->softcap =
        f->rms_norm_eps = NAN;
    f->attention_bias = f->use_sliding_window = -1;
    rope_init(&f->rope);
    rope_init(&f->rope_full);
    rope_init(&f->rope_sliding);
}

static void fields_free(mc_fields *f)
{
    free(f->layer_types);
    free(f->no_rope_layers);
    rope_free(&f->rope);
    rope_free(&f->rope_full);
    rope_free(&f->rope_sliding);
}

static vkattn_status read_object(vka_json *j, mc_fields *f, mc_fields *text, int *has_text, unsigned depth);

/* One member of a config object. */
static vkattn_status read_member(vka_json *j, const char *key, mc_fields *f, mc_fields *text, int *has_text,
                                 unsigned depth)
{
    static const struct {
        const char *key;
        size_t offset;
    } uints[] = {
        {"hidden_size", offsetof(mc_fields, hidden)},
        {"num_attention_heads", offsetof(mc_fields, heads)},
        {"num_key_value_heads", offsetof(mc_fields, kv_heads)},
        {"head_dim", offsetof(mc_fields, head_dim)},
        {"num_hidden_layers", offsetof(mc_fields, layers)},
        {"max_position_embeddings", offsetof(mc_fields, max_positions)},
        {"original_max_position_embeddings", offsetof(mc_fields, original_max_positions)},
        {"sliding_window", offsetof(mc_fields, sliding_window)},
        {"sliding_window_pattern", offsetof(mc_fields, sliding_window_pattern)},
        {"max_window_layers", offsetof(mc_fields, max_window_layers)},
        {"no_rope_layer_interval", offsetof(mc_fields, no_rope_layer_interval)},
    }, doubles[] = {
        {"rope_theta", offsetof(mc_fields, rope_theta)},
        {"rope_local_base_freq", offsetof(mc_fields, rope_local_base_freq)},
        {"partial_rotary_factor", offsetof(mc_fields, partial_rotary_factor)},
        {"query_pre_attn_scalar", offsetof(mc_fields, query_pre_attn_scalar)},
        {"attn_logit_softcapping", offsetof(mc_fields, softcap)},
        {"rms_norm_eps", offsetof(mc_fields, rms_norm_eps)},
    };
    vkattn_status status = refuse_key(j, "", key);
    if (status != VKATTN_ERROR_NOT_FOUND) return status;
    for (size_t i = 0; i < sizeof uints / sizeof uints[0]; i++)
        if (strcmp(key, uints[i].key) == 0) return read_uint(j, key, (uint64_t *)((char *)f + uints[i].offset));
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++)
        if (strcmp(key, doubles[i].key) == 0) return read_double(j, key, (double *)((char *)f + doubles[i].offset));
    if (strcmp(key, "model_type") == 0) return read_text(j, key, f->model_type, sizeof f->model_type);
    if (strcmp(key, "attention_bias") == 0) return read_flag(j, key, &f->attention_bias);
    if (strcmp(key, "use_sliding_window") == 0) return read_flag(j, key, &f->use_sliding_window);
    if (strcmp(key, "rope_scaling") == 0) return read_rope_scaling(j, f);
    if (strcmp(key, "rope_parameters") == 0) return read_rope_parameters(j, f);
    if (strcmp(key, "layer_types") == 0)
        return read_list(j, key, MC_MAX_LAYERS, 1, layer_type_element, (void **)&f->layer_types, &f->n_layer_types);
    if (strcmp(key, "no_rope_layers") == 0)
        return read_list(j, key, MC_MAX_LAYERS, 1, flag_element, (void **)&f->no_rope_layers, &f->n_no_rope_layers);
    if (strcmp(key, "text_config") == 0 && text) {
        if (vka_json_null(j)) return VKATTN_OK;
        *has_text = 1;
        return read_object(j, text, NULL, NULL, depth + 1);
    }
    return vka_json_skip(j, depth);
}

static vkattn_status read_object(vka_json *j, mc_fields *f, mc_fields *text, int *has_text, unsigned depth)
{
    vkattn_status status;
    VKA_TRY(vka_json_expect(j, '{', "config object"));
    for (size_t i = 0;; i++) {
        bool done;
        char key[MC_KEY];
        VKA_TRY(vka_json_member_key(j, i, &done, key, sizeof key));
        if (done) return VKATTN_OK;
        VKA_TRY(read_member(j, key, f, text, has_text, depth));
    }
fail:
    return status;
}

/* A family's defaults into `f` (the table's own text: an error here is the table's). */
static vkattn_status read_defaults(const mc_family *fam, mc_fields *f, vkattn_error *error)
{
    if (!fam || !fam->defaults) return VKATTN_OK;
    vka_json j;
    vka_json_init(&j, (const uint8_t *)fam->defaults, strlen(fam->defaults), "vkattn's defaults", error);
    vkattn_status status = read_object(&j, f, NULL, NULL, 1);
    if (status == VKATTN_OK) status = vka_json_finish(&j);
    return status;
}

/* The file over the defaults of the top-level object's family and its text_config's (none: none). */
static vkattn_status read_config(const uint8_t *data, size_t size, const mc_family *top, const mc_family *text,
                                 vkattn_model_config *c, vkattn_error *error)
{
    fields_free(&c->top);
    fields_free(&c->text);
    fields_init(&c->top);
    fields_init(&c->text);
    c->has_text = 0;
    vkattn_status status = read_defaults(top, &c->top, error);
    if (status == VKATTN_OK) status = read_defaults(text, &c->text, error);
    if (status != VKATTN_OK) return status;
    c->top.rope_scaling_read = c->text.rope_scaling_read = 0; /* a default's rope_scaling is not the file's */
    vka_json j;
    vka_json_init(&j, data ? data : (const uint8_t *)"", size, "config.json", error);
    status = vka_json_check_utf8(&j);
    if (status == VKATTN_OK) status = read_object(&j, &c->top, &c->text, &c->has_text, 1);
    if (status == VKATTN_OK) status = vka_json_finish(&j);
    return status;
}

vkattn_status vka_model_config_parse(const uint8_t *data, size_t size, vkattn_model_config **out, vkattn_error *error)
{
    if ((!data && size) || !out)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "model config: data or out is NULL");
    if (size > MC_MAX_BYTES)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: %zu bytes, more than the %zu a config may have",
                             size, MC_MAX_BYTES);
    vkattn_model_config *c = calloc(1, sizeof *c);
    if (!c) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "config.json: out of memory");
    fields_init(&c->top);
    fields_init(&c->text);
    /* first for the model types, then over their families' defaults */
    vkattn_status status = read_config(data, size, NULL, NULL, c, error);
    const char *type = c->top.model_type[0] ? c->top.model_type : c->text.model_type;
    if (status == VKATTN_OK && !type[0]) status = vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: no model_type");
    else if (status == VKATTN_OK && !family_of(type)) {
        char known[512] = "";
        for (size_t i = 0; i < MC_FAMILIES; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "", k_families[i].model_type);
        status = vka_error_set(error, VKATTN_ERROR_UNSUPPORTED,
                               "config.json: model_type '%s' is not a family vkattn knows the attention of (%s)", type,
                               known);
    }
    if (status == VKATTN_OK) {
        const mc_family *top = family_of(c->top.model_type);
        const mc_family *text = c->text.model_type[0]            ? family_of(c->text.model_type)
                                : top && top->text_family ? family_of(top->text_family)
                                                          : NULL;
        status = read_config(data, size, top, text, c, error);
    }
    if (status == VKATTN_OK) {
        /* A wrapper's language model is its text_config (Gemma 3); the wrapper's model_type names
         * the checkpoint's layout. */
        c->f = c->has_text && c->top.hidden == MC_UNSET ? &c->text : &c->top;
    }
    if (status != VKATTN_OK) {
        vkattn_model_config_destroy(c);
        return status;
    }
    *out = c;
    return VKATTN_OK;
}

vkattn_status vkattn_model_config_open(const char *path, vkattn_model_config **out, vkattn_error *error)
{
    if (!path || !out) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "model config: path or out is NULL");
    uint8_t *data = NULL;
    size_t size = 0;
    vkattn_status status = vka_read_file(path, MC_MAX_BYTES, &data, &size, error);
    vkattn_model_config *config = NULL;
    if (status == VKATTN_OK) status = vka_model_config_parse(data, size, &config, error);
    free(data);
    if (status != VKATTN_OK) {
        vka_io_error_in_file(error, path);
        return status;
    }
    const size_t n = strlen(path) + 1;
    if (!(config->path = malloc(n))) {
        vkattn_model_config_destroy(config);
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", path);
    }
    memcpy(config->path, path, n);
    *out = config;
    return VKATTN_OK;
}

void vkattn_model_config_destroy(vkattn_model_config *config)
{
    if (!config) return;
    fields_free(&config->top);
    fields_free(&config->text);
    free(config->path);
    free(config);
}

static const mc_family *config_family(const vkattn_model_config *c)
{
    return family_of(c->top.model_type[0] ? c->top.model_type : c->text.model_type);
}

vkattn_status vkattn_model_config_get_info(const vkattn_model_config *config, vkattn_model_info *out)
{
    if (!config || !out) return VKATTN_ERROR_INVALID_ARGUMENT;
    const mc_fields *f = config->f;
    const mc_family *fam = config_family(config);
    *out = (vkattn_model_info){
        .model_type = fam->model_type,
        .num_layers = f->layers == MC_UNSET ? 0 : (uint32_t)f->layers,
        .max_position_embeddings = f->max_positions == MC_UNSET ? 0 : (uint32_t)f->max_positions,
        .attention_sinks = fam->sinks,
    };
    return VKATTN_OK;
}

/* ---- one layer --------------------------------------------------------------------------------- */

static const struct {
    const char *name;
    vkattn_rope_type type;
} k_rope_types[] = {
    {"default", VKATTN_ROPE_TYPE_DEFAULT}, {"linear", VKATTN_ROPE_TYPE_LINEAR}, {"dynamic", VKATTN_ROPE_TYPE_DYNAMIC},
    {"yarn", VKATTN_ROPE_TYPE_YARN},       {"longrope", VKATTN_ROPE_TYPE_LONGROPE}, {"llama3", VKATTN_ROPE_TYPE_LLAMA3},
};

/* A float field of the layer description from a double: finite and within float's range. */
static vkattn_status to_float(double v, const char *name, float *out, vkattn_error *error)
{
    if (isnan(v)) return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: %s is missing", name);
    if (!isfinite(v) || fabs(v) > 3.0e38)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: %s %g is not a finite float", name, v);
    *out = (float)v;
    return VKATTN_OK;
}

/* The rotary settings of a layer from its rope object (`r`, or none) and the config's fields. */
static vkattn_status layer_rope(const mc_fields *f, const mc_family *fam, const mc_rope *r, double theta, uint32_t D,
                                vkattn_layer_desc *d, vkattn_error *error)
{
    vkattn_status status;
    vkattn_rope_scaling *s = &d->rope_scaling;
    if (r && !isnan(r->theta)) theta = r->theta;
    if (isnan(theta))
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: no rope_theta (the base of the rotary frequencies)");
    VKA_TRY(to_float(theta, "rope_theta", &d->rope_theta, error));
    if (d->rope_theta <= 0.0f)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: rope_theta %g must be > 0", theta);
    double partial = r && !isnan(r->partial) ? r->partial : f->partial_rotary_factor;
    if (!isnan(partial)) {
        if (!(partial > 0.0 && partial <= 1.0))
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: partial_rotary_factor %g must be in (0, 1]",
                                 partial);
        uint32_t dim = (uint32_t)((double)D * partial); /* int(head_dim * partial_rotary_factor), as the reference */
        if (dim == 0 || dim % 2 != 0)
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "config.json: partial_rotary_factor %g of head_dim %u gives %u rotated dims; RoPE "
                                 "rotates pairs (an even number, at least 2)",
                                 partial, D, dim);
        d->rope_dim = dim == D ? 0 : dim;
    }
    /* RoPE rotates pairs of dims: a head it rotates whole has an even head_dim (the rope utilities'
     * rotate_half splits a head in halves) */
    if (!d->rope_dim && D % 2 != 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "config.json: head_dim %u is odd; RoPE rotates pairs of dims (an even number)", D);
    if (!r || !r->type[0]) {
        if (r && (r->n_short || r->n_long || !isnan(r->factor)))
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: rope_scaling has no rope_type (or type)");
        return VKATTN_OK;
    }
    /* Phi-3's config class reads the old names su and yarn as longrope and takes no other type */
    const char *type = r->type;
    if (fam->longrope_only && (strcmp(type, "su") == 0 || strcmp(type, "yarn") == 0)) type = "longrope";
    if (fam->longrope_only && strcmp(type, "default") != 0 && strcmp(type, "longrope") != 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "config.json: rope_scaling.rope_type '%s' in a %s config: its rope types are default and "
                             "longrope (su and yarn read as longrope)",
                             type, fam->model_type);
    size_t t = 0;
    while (t < sizeof k_rope_types / sizeof k_rope_types[0] && strcmp(k_rope_types[t].name, type) != 0) t++;
    if (t == sizeof k_rope_types / sizeof k_rope_types[0])
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED,
                             "config.json: rope_scaling.rope_type '%s' is not supported (vkattn computes default, "
                             "linear, dynamic, yarn, longrope, llama3)",
                             r->type);
    s->type = k_rope_types[t].type;
    const int ty = s->type;
    /* Each type's fields, as Hugging Face's rope utilities read them; the rest must be absent. */
    if (!isnan(r->factor) && ty != VKATTN_ROPE_TYPE_DEFAULT) VKA_TRY(to_float(r->factor, "rope_scaling.factor", &s->factor, error));
    /* the pretraining length, as the rope utilities standardize it: a top-level
     * original_max_position_embeddings first (Phi-3 keeps it there), then rope_scaling's own, then
     * max_position_embeddings; per layer type the top level is not read */
    uint64_t original = r == &f->rope && f->original_max_positions != MC_UNSET ? f->original_max_positions : r->original;
    if (original == MC_UNSET) original = f->max_positions;
    if (ty == VKATTN_ROPE_TYPE_YARN || ty == VKATTN_ROPE_TYPE_LONGROPE || ty == VKATTN_ROPE_TYPE_LLAMA3) {
        if (original == MC_UNSET || original == 0)
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "config.json: rope type %s needs original_max_position_embeddings", type);
        s->original_max_position_embeddings = (uint32_t)original;
    }
    if ((ty == VKATTN_ROPE_TYPE_DYNAMIC || ((ty == VKATTN_ROPE_TYPE_YARN || ty == VKATTN_ROPE_TYPE_LONGROPE) &&
                                             isnan(r->factor))) &&
        f->max_positions != MC_UNSET)
        s->max_position_embeddings = (uint32_t)f->max_positions;
    if (ty == VKATTN_ROPE_TYPE_LLAMA3) {
        VKA_TRY(to_float(r->low, "rope_scaling.low_freq_factor", &s->low_freq_factor, error));
        VKA_TRY(to_float(r->high, "rope_scaling.high_freq_factor", &s->high_freq_factor, error));
    }
    if (ty == VKATTN_ROPE_TYPE_YARN) {
        if (!isnan(r->beta_fast)) VKA_TRY(to_float(r->beta_fast, "rope_scaling.beta_fast", &s->beta_fast, error));
        if (!isnan(r->beta_slow)) VKA_TRY(to_float(r->beta_slow, "rope_scaling.beta_slow", &s->beta_slow, error));
        if (!isnan(r->mscale)) VKA_TRY(to_float(r->mscale, "rope_scaling.mscale", &s->mscale, error));
        if (!isnan(r->mscale_all_dim))
            VKA_TRY(to_float(r->mscale_all_dim, "rope_scaling.mscale_all_dim", &s->mscale_all_dim, error));
        s->no_truncate = r->truncate == 0;
    }
    if ((ty == VKATTN_ROPE_TYPE_YARN || ty == VKATTN_ROPE_TYPE_LONGROPE) && !isnan(r->attention_factor))
        VKA_TRY(to_float(r->attention_factor, "rope_scaling.attention_factor", &s->attention_factor, error));
    if (ty == VKATTN_ROPE_TYPE_LONGROPE) {
        uint32_t pairs = (d->rope_dim ? d->rope_dim : D) / 2;
        if (r->n_short != pairs || r->n_long != pairs)
            return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                 "config.json: rope_scaling.short_factor has %u values and long_factor %u; longrope "
                                 "takes one per rotated pair (%u)",
                                 r->n_short, r->n_long, pairs);
        s->short_factor = r->short_factor;
        s->long_factor = r->long_factor;
    }
    return VKATTN_OK;
fail:
    return status;
}

/* Whether layer n rotates: SmolLM3's no_rope_layers, else every no_rope_layer_interval-th layer
 * has no RoPE; every layer of the other families. */
static int layer_rotates(const mc_fields *f, const mc_family *fam, uint32_t n)
{
    if (!fam->nope_layers) return 1;
    if (f->n_no_rope_layers) return f->no_rope_layers[n] != 0;
    return f->no_rope_layer_interval == MC_UNSET || (n + 1) % f->no_rope_layer_interval != 0;
}

/* Whether layer n slides: layer_types, else the family's rule. */
static int layer_slides(const mc_fields *f, const mc_family *fam, uint32_t n)
{
    if (f->n_layer_types) return f->layer_types[n] == MC_LAYER_SLIDING;
    switch (fam->slide) {
    case SLIDE_ALL: return 1;
    case SLIDE_QWEN: return f->max_window_layers == MC_UNSET || n >= f->max_window_layers;
    case SLIDE_NOPE: return !layer_rotates(f, fam, n);
    case SLIDE_ALTERNATE: return n % 2 == 0;
    case SLIDE_PATTERN: {
        uint64_t p = f->sliding_window_pattern == MC_UNSET ? 6 : f->sliding_window_pattern;
        return (n + 1) % p != 0; /* p 0 is refused before */
    }
    default: return 0;
    }
}

static vkattn_status config_layer(const vkattn_model_config *config, uint32_t layer, vkattn_layer_desc *desc,
                                  vkattn_kv_cache_desc *cache, char *prefix, size_t prefix_cap, vkattn_error *error)
{
    vkattn_status status;
    if (!config || !desc) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "model config: config or desc is NULL");
    const mc_fields *f = config->f;
    const mc_family *fam = config_family(config);
    static const struct {
        const char *name;
        size_t offset;
    } required[] = {{"hidden_size", offsetof(mc_fields, hidden)},
                    {"num_attention_heads", offsetof(mc_fields, heads)},
                    {"num_hidden_layers", offsetof(mc_fields, layers)}};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        uint64_t v = *(const uint64_t *)((const char *)f + required[i].offset);
        if (v == MC_UNSET || v == 0)
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: %s is %s; it is required and at least 1",
                                 required[i].name, v == MC_UNSET ? "missing" : "0");
    }
    if (layer >= f->layers)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "config.json: layer %u does not exist (%llu layers)",
                             layer, (unsigned long long)f->layers);
    if (f->n_layer_types && f->n_layer_types != f->layers)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: layer_types has %u entries for %llu layers",
                             f->n_layer_types, (unsigned long long)f->layers);
    if (f->n_no_rope_layers && f->n_no_rope_layers < f->layers)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: no_rope_layers has %u entries for %llu layers",
                             f->n_no_rope_layers, (unsigned long long)f->layers);
    if (f->n_no_rope_layers && !fam->nope_layers)
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED,
                             "config.json: no_rope_layers in a %s config: vkattn reads it for smollm3 only",
                             fam->model_type);
    vkattn_layer_desc d = {0};
    d.embed_dim = (uint32_t)f->hidden;
    d.num_heads = (uint32_t)f->heads;
    uint64_t kv = f->kv_heads == MC_UNSET ? f->heads : f->kv_heads;
    if (kv == 0 || f->heads % kv != 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "config.json: num_key_value_heads %llu does not divide num_attention_heads %llu",
                             (unsigned long long)kv, (unsigned long long)f->heads);
    d.num_kv_heads = (uint32_t)kv;
    if (f->head_dim != MC_UNSET && f->head_dim == 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: head_dim is 0");
    if (f->head_dim == MC_UNSET && f->hidden % f->heads != 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "config.json: hidden_size %llu is not a multiple of num_attention_heads %llu and there is "
                             "no head_dim",
                             (unsigned long long)f->hidden, (unsigned long long)f->heads);
    const uint32_t D = f->head_dim != MC_UNSET ? (uint32_t)f->head_dim : (uint32_t)(f->hidden / f->heads);
    d.head_dim = D;
    if (fam->scale_from_qpa) {
        if (isnan(f->query_pre_attn_scalar) || !(f->query_pre_attn_scalar > 0.0))
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: %s needs query_pre_attn_scalar > 0",
                                 fam->model_type);
        VKA_TRY(to_float(1.0 / sqrt(f->query_pre_attn_scalar), "query_pre_attn_scalar^-1/2", &d.scale, error));
    }
    if (!isnan(f->softcap) && f->softcap != 0.0) VKA_TRY(to_float(f->softcap, "attn_logit_softcapping", &d.softcap, error));
    d.no_bias = !(fam->bias_fixed || f->attention_bias == -1 ? fam->bias : f->attention_bias);
    if (fam->norm) {
        d.qk_norm = fam->norm;
        d.qk_norm_plus_one = fam->norm_plus_one;
        if (!isnan(f->rms_norm_eps)) VKA_TRY(to_float(f->rms_norm_eps, "rms_norm_eps", &d.qk_norm_eps, error));
        if (!isnan(f->rms_norm_eps) && !(d.qk_norm_eps > 0.0f))
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: rms_norm_eps %g must be > 0", f->rms_norm_eps);
    }
    if (fam->nope_layers && !f->n_no_rope_layers && f->no_rope_layer_interval == 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: no_rope_layer_interval is 0");
    /* transformers divides by it (ZeroDivisionError) unless layer_types says which layers slide */
    if (fam->slide == SLIDE_PATTERN && !f->n_layer_types && f->sliding_window_pattern == 0)
        return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: sliding_window_pattern is 0");
    /* Sliding layers: the window (Qwen's and SmolLM3's only with use_sliding_window, their config
     * classes setting sliding_window to None without it); Gemma 3's rotate with the local base and
     * no scaling. */
    const int slides = layer_slides(f, fam, layer) && (!fam->gated || f->use_sliding_window == 1);
    if (slides && f->sliding_window != MC_UNSET) {
        if (f->sliding_window == 0) return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: sliding_window is 0");
        d.window = (uint32_t)f->sliding_window;
    } else if (slides && f->n_layer_types) {
        return vka_error_set(error, VKATTN_ERROR_FORMAT,
                             "config.json: layer %u is a sliding_attention layer but sliding_window is not set", layer);
    }
    if (layer_rotates(f, fam, layer)) {
        const mc_rope *r = f->rope.present ? &f->rope : NULL;
        double theta = f->rope_theta;
        if (f->rope_full.present || f->rope_sliding.present) {
            r = slides ? &f->rope_sliding : &f->rope_full;
            /* Gemma 3's sliding entry without a rope_theta: rope_local_base_freq, as its config class */
            if (fam->local_rope && slides && !isnan(f->rope_local_base_freq)) theta = f->rope_local_base_freq;
        } else if (fam->local_rope && slides) {
            r = NULL; /* Gemma 3's local rotary embedding: rope_local_base_freq, default frequencies */
            if (isnan(f->rope_local_base_freq))
                return vka_error_set(error, VKATTN_ERROR_FORMAT,
                                     "config.json: a sliding layer of %s needs rope_local_base_freq", fam->model_type);
            theta = f->rope_local_base_freq;
        }
        if (r && !r->present)
            return vka_error_set(error, VKATTN_ERROR_FORMAT, "config.json: rope_parameters has no entry for %s layers",
                                 slides ? "sliding_attention" : "full_attention");
        VKA_TRY(layer_rope(f, fam, r, theta, D, &d, error));
    }
    char name[64];
    int n = snprintf(name, sizeof name, fam->prefix, layer);
    if (prefix && (size_t)n >= prefix_cap)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "model config: prefix_cap %zu is too small for '%s'",
                             prefix_cap, name);
    if (prefix) memcpy(prefix, name, (size_t)n + 1);
    *desc = d;
    if (cache) {
        cache->num_kv_heads = d.num_kv_heads;
        cache->head_dim = D;
    }
    return VKATTN_OK;
fail:
    return status;
}

vkattn_status vkattn_model_config_layer(const vkattn_model_config *config, uint32_t layer, vkattn_layer_desc *desc,
                                        vkattn_kv_cache_desc *cache, char *prefix, size_t prefix_cap,
                                        vkattn_error *error)
{
    vkattn_status status = config_layer(config, layer, desc, cache, prefix, prefix_cap, error);
    /* the file's own name first, in place of "config.json" (several models' configs may be open) */
    const char *generic = "config.json: ";
    if (status != VKATTN_OK && error && config && config->path) {
        char message[sizeof error->message];
        const size_t skip = strncmp(error->message, generic, strlen(generic)) == 0 ? strlen(generic) : 0;
        snprintf(message, sizeof message, "%s", error->message + skip);
        vka_error_set(error, status, "%s: %s", config->path, message);
    }
    return status;
}
