/* Forward inputs on files, shared by the subcommands that run a forward (see forward_inputs.h). */
#include "forward_inputs.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(field) offsetof(forward_options, field)
static const int k_paths[] = {VKATTN_PATH_AUTO, VKATTN_PATH_FUSED, VKATTN_PATH_UNFUSED};
static const int k_rope_styles[] = {VKATTN_ROPE_NEOX, VKATTN_ROPE_GPTJ};
static const int k_precisions[] = {VKATTN_PRECISION_DEFAULT, VKATTN_PRECISION_F32, VKATTN_PRECISION_F16};

const cli_option forward_option_rows[] = {
    {"--weights", "W.safetensors", "an nn.MultiheadAttention state_dict, or a checkpoint with --prefix: its "
     "model.safetensors, its shards' model.safetensors.index.json or its folder", CLI_TEXT,
     F(weights), .flags = CLI_REQUIRED},
    {"--prefix", "P", "the layer's name prefix in a checkpoint (model.layers.0.self_attn.): nn.MultiheadAttention or "
     "Hugging Face names (q_proj.weight, k_proj.weight, v_proj.weight, o_proj.weight); only that layer is read",
     CLI_TEXT, F(prefix)},
    {"--config", "config.json", "the model's Hugging Face config.json: the layer's heads, head dim, scale, RoPE (and its "
     "scaling), window, softcap and q/k norms from it, its weights under the family's prefix "
     "(model.layers.N.self_attn.); the options below that set the same things override it, with a note",
     CLI_TEXT, F(config)},
    {"--layer", "N", "which layer of --config (default 0)", CLI_U32, F(layer), 0, .needs = "--config",
     .given = CLI_GIVEN(forward_options, layer_given)},
    {"--heads", "H", "attention heads", CLI_U32, F(heads), 1, .flags = CLI_REQUIRED, .or_else = "--config"},
    {"--kv-heads", "N", "grouped-query attention with N key/value heads: the weights' k/v projections have N x head "
     "dim rows, which is how vkattn knows N; the option checks it (default: what they say)", CLI_U32, F(kv_heads), 1},
    {"--query", "q.npy", "(B, L, E) or (L, E) float32", CLI_TEXT, F(query), .flags = CLI_REQUIRED},
    {"--key", "k.npy", "(B, S, kdim) float32 (default: the query)", CLI_TEXT, F(key)},
    {"--value", "v.npy", "(B, S, vdim) float32 (default: the key)", CLI_TEXT, F(value), .needs = "--key"},
    {"--key-padding-mask", "m.npy", "(B, S) bool, true = ignore the key", CLI_TEXT, F(key_padding_mask)},
    {"--valid-lens", "v.npy", "(B) or (B, L) integers: the keys from that length on are masked", CLI_TEXT,
     F(valid_lens)},
    {"--attn-mask", "m.npy", "(L, S) or (B*H, L, S), bool (true = blocked) or float32 (added to the scores)",
     CLI_TEXT, F(attn_mask)},
    {"--causal", NULL, "query i sees keys j <= i (j <= i + S - L in a layer with positions: RoPE, a window, ALiBi)",
     CLI_FLAG, F(causal)},
    {"--add-zero-attn", NULL, "append a zero key and value (nn.MultiheadAttention's add_zero_attn)", CLI_FLAG,
     F(add_zero_attn)},
    {"--head-mask", "m.npy", "(H) bool: true = keep the head, false = prune it (see vkattn heads --prune)", CLI_TEXT,
     F(head_mask)},
    {"--rope-theta", "X", "rotary positions on q and k with the model's rope_theta (10000, 500000, ...; "
     "rope_scaling, as in Llama 3.1, comes with --config)", CLI_NUMBER, F(rope_theta), 0, FLT_MAX,
     .flags = CLI_ABOVE_MIN | CLI_FLOAT},
    {"--rope-dim", "R", "rotated dims per head (default: all)", CLI_U32, F(rope_dim), 2},
    {"--rope-style", "neox|gptj", "neox pairs i and i + R/2 (Hugging Face LLaMA, Qwen, Mistral), gptj 2i and 2i + 1",
     CLI_CHOICE, F(rope_style), .values = k_rope_styles, .given = CLI_GIVEN(forward_options, rope_style_given)},
    {"--sliding-window", "W", "a query sees no key more than W - 1 positions before it (Mistral, Gemma local layers)",
     CLI_U32, F(window), 1},
    {"--softcap", "C", "scores x become C tanh(x / C) (Gemma 2: 50)", CLI_NUMBER, F(softcap), 0, FLT_MAX,
     .flags = CLI_ABOVE_MIN | CLI_FLOAT},
    {"--alibi", NULL, "ALiBi's linear position biases with the standard slopes (BLOOM, MPT; not with --rope-theta)",
     CLI_FLAG, F(alibi)},
    {"--sinks", "s.npy", "(H) float32: a learned logit per head in each softmax's denominator (gpt-oss)", CLI_TEXT,
     F(sinks)},
    {"--path", "auto|fused|unfused", "the device path (auto: fused, or unfused when attention weights are asked for)",
     CLI_CHOICE, F(path), .values = k_paths, .given = CLI_GIVEN(forward_options, path_given), .excludes = "--cpu"},
    {"--precision", "default|f32|f16", "f32: fp32 operands in every kernel, never the cooperative-matrix ones; f16: "
     "the projections' and the fused attention's operands rounded to fp16 where the tuning has cooperative-matrix "
     "kernels (default: as the storage)", CLI_CHOICE, F(precision), .values = k_precisions, .excludes = "--cpu"},
    {"--device", "N|NAME", CLI_DEVICE_HELP, CLI_TEXT, F(device), .excludes = "--cpu"},
    {"--cpu", NULL, "run the CPU reference path instead of Vulkan", CLI_FLAG, F(cpu)},
    {"--trace", NULL, "print the plan before the forward runs: the shapes per head, how keys and rows are split, the "
     "workspace, and every step with its kernel, bindings, grid and loop trips", CLI_FLAG, F(trace)},
};
const size_t forward_option_count = CLI_COUNT(forward_option_rows);

/* What each input array must be, as the messages that refuse one say it, and where it goes. */
typedef struct input_spec {
    const char *option, *what;
    unsigned dtypes;      /* the vkattn_dtype values it takes, as bits 1u << dtype */
    const char *accepts;  /* the same, in numpy's words */
    const char *convert;  /* the numpy call that makes one */
    const char *shapes;
    uint32_t min_rank, max_rank; /* 0: the query's rank */
    size_t path, array;   /* offsets in forward_options and forward_inputs */
} input_spec;

#define DTYPE_BIT(d) (1u << VKATTN_DTYPE_##d)
#define FLOAT_INPUT "float32 (<f4; float16 and float64 are converted)"
#define AT(field) offsetof(forward_options, field), offsetof(forward_inputs, field)
enum { QUERY, KEY, VALUE, KEY_PADDING_MASK, VALID_LENS, ATTN_MASK, HEAD_MASK, SINKS, INPUT_COUNT };
static const input_spec k_inputs[INPUT_COUNT] = {
    [QUERY] = {"--query", "the query", DTYPE_BIT(F32), FLOAT_INPUT, "q.astype(np.float32)", "(B, L, E) or (L, E)", 2, 3,
               AT(query)},
    [KEY] = {"--key", "the key", DTYPE_BIT(F32), FLOAT_INPUT, "k.astype(np.float32)",
             "(B, S, kdim), or (S, kdim) with an (L, E) query", 0, 0, AT(key)},
    [VALUE] = {"--value", "the value", DTYPE_BIT(F32), FLOAT_INPUT, "v.astype(np.float32)",
               "(B, S, vdim), or (S, vdim) with an (L, E) query", 0, 0, AT(value)},
    [KEY_PADDING_MASK] = {"--key-padding-mask", "the key padding mask", DTYPE_BIT(BOOL),
                          "bool (|b1), true = ignore the key", "m.astype(bool)", "(B, S), or (S) with an (L, E) query",
                          1, 2, AT(key_padding_mask)},
    [VALID_LENS] = {"--valid-lens", "the valid lengths", DTYPE_BIT(I32), "int32 (<i4; int64 is converted)",
                    "lens.astype(np.int32)", "(B) or (B, L)", 1, 2, AT(valid_lens)},
    [ATTN_MASK] = {"--attn-mask", "the attention mask", DTYPE_BIT(BOOL) | DTYPE_BIT(F32),
                   "bool (|b1, true = blocked) or float32 (<f4, added to the scores)",
                   "m.astype(bool) or m.astype(np.float32)", "(L, S) or (B*H, L, S)", 2, 3, AT(attn_mask)},
    [HEAD_MASK] = {"--head-mask", "the head mask", DTYPE_BIT(BOOL), "bool (|b1), true = keep the head",
                   "m.astype(bool)", "(H)", 1, 1, AT(head_mask)},
    [SINKS] = {"--sinks", "the sinks", DTYPE_BIT(F32), FLOAT_INPUT, "s.astype(np.float32)", "(H)", 1, 1, AT(sinks)},
};

static vkattn_array *array_of(forward_inputs *in, const input_spec *spec)
{
    return (vkattn_array *)((char *)in + spec->array);
}

static const char *path_of(const forward_options *o, const input_spec *spec)
{
    return *(const char *const *)((const char *)o + spec->path);
}

void forward_inputs_free(forward_inputs *in)
{
    vkattn_weight_file_destroy(in->weights);
    vkattn_model_config_destroy(in->config);
    for (size_t i = 0; i < INPUT_COUNT; i++) vkattn_array_free(array_of(in, &k_inputs[i]));
    memset(in, 0, sizeof *in);
}

/* "vkattn run: --query q.npy holds int64 (<i8); the query must be float32 (...) (numpy: ...)". */
static int wrong_dtype(const char *command, const input_spec *spec, const char *path, const char *stored)
{
    cli_error(command, "%s %s holds %s; %s must be %s (numpy: %s)\n", spec->option, path, stored, spec->what,
              spec->accepts, spec->convert);
    return 1;
}

static int load_array(const char *command, const input_spec *spec, const char *path, vkattn_array *out)
{
    if (!path) return 0;
    vkattn_error error = {0};
    vkattn_status status = vkattn_npy_read(path, out, &error);
    if (status == VKATTN_OK) return 0;
    char stored[64];
    int loads_as;
    /* A dtype the reader takes for no input (uint8, say) is still this input's wrong dtype. */
    if (cli_npy_stored_dtype(path, stored, sizeof stored, &loads_as) && loads_as < 0)
        return wrong_dtype(command, spec, path, stored);
    return cli_fail_input(command, spec->option, path, CLI_FILE_NPY, status, error.message);
}

/* An optional array's dtype, then its rank. */
static int expect(const char *command, const input_spec *spec, const char *path, const vkattn_array *a,
                  uint32_t min_rank, uint32_t max_rank)
{
    if (!a->data) return 0;
    if (!(spec->dtypes & (1u << a->dtype))) {
        char stored[64];
        int loads_as;
        if (!cli_npy_stored_dtype(path, stored, sizeof stored, &loads_as)) /* a pipe: what it loaded as */
            snprintf(stored, sizeof stored, "what loads as %s", vkattn_dtype_name(a->dtype));
        return wrong_dtype(command, spec, path, stored);
    }
    if (a->rank < min_rank || a->rank > max_rank) {
        char shape[128];
        cli_format_shape(shape, sizeof shape, a->rank, a->dims);
        cli_error(command, "%s %s has shape %s; %s must be %s\n", spec->option, path, shape, spec->what,
                  spec->shapes);
        return 1;
    }
    return 0;
}

/* Checks an optional array's exact shape. */
static int check_shape(const char *command, const input_spec *spec, const char *path, const vkattn_array *a,
                       uint32_t rank, const uint32_t *dims, const char *names)
{
    if (!a->data) return 0;
    int same = a->rank == rank;
    for (uint32_t i = 0; same && i < rank; i++) same = a->dims[i] == dims[i];
    if (same) return 0;
    char got[128], want[128];
    cli_format_shape(got, sizeof got, a->rank, a->dims);
    cli_format_shape(want, sizeof want, rank, dims);
    cli_error(command, "%s %s has shape %s, expected (%s) = %s\n", spec->option, path, got, names, want);
    return 1;
}

/* Every file, then the arrays' dtypes and ranks, before any dimension is read from them. */
static int load_files(const char *command, const forward_options *o, forward_inputs *in)
{
    vkattn_error error = {0};
    vkattn_status status = VKATTN_OK;
    if (o->config) {
        status = vkattn_model_config_open(o->config, &in->config, &error);
        if (status == VKATTN_OK)
            status = vkattn_model_config_layer(in->config, o->layer, &in->from_config, NULL, in->prefix,
                                               sizeof in->prefix, &error);
        if (status != VKATTN_OK) return cli_fail(command, "--config", status, error.message);
        if (o->prefix && strcmp(o->prefix, in->prefix) != 0)
            printf("note: --prefix %s overrides config.json's %s\n", o->prefix, in->prefix);
    }
    status = vkattn_weight_file_open(o->weights, o->prefix ? o->prefix : o->config ? in->prefix : NULL, &in->weights,
                                     &error);
    if (status != VKATTN_OK)
        return cli_fail_input(command, "--weights", o->weights, CLI_FILE_SAFETENSORS, status, error.message);
    int rc = 0;
    for (size_t i = 0; i < INPUT_COUNT && !rc; i++)
        rc = load_array(command, &k_inputs[i], path_of(o, &k_inputs[i]), array_of(in, &k_inputs[i]));
    for (size_t i = 0; i < INPUT_COUNT && !rc; i++) {
        const input_spec *spec = &k_inputs[i];
        uint32_t q = in->query.rank;
        rc = expect(command, spec, path_of(o, spec), array_of(in, spec), spec->min_rank ? spec->min_rank : q,
                    spec->max_rank ? spec->max_rank : q);
    }
    return rc;
}

/* The host call trusts B, L and S, so every array's own shape must agree with them here. */
static int check_shapes(const char *command, const forward_options *o, const forward_inputs *in)
{
    int batched = in->batched;
    uint32_t B = in->B, L = in->L, S = in->S, H = in->H;
    uint32_t BS[3] = {B, S, in->layer.kdim}, BSv[3] = {B, S, in->layer.vdim}, BL[2] = {B, L}, mask3[3] = {B * H, L, S};
    const vkattn_array *vl = &in->valid_lens, *m = &in->attn_mask;
    int rc;
    if ((rc = check_shape(command, &k_inputs[KEY], o->key, &in->key, batched ? 3 : 2, batched ? BS : BS + 1,
                          batched ? "B, S, kdim" : "S, kdim")) ||
        (rc = check_shape(command, &k_inputs[VALUE], o->value, &in->value, batched ? 3 : 2, batched ? BSv : BSv + 1,
                          batched ? "B, S, vdim" : "S, vdim")) ||
        (rc = check_shape(command, &k_inputs[KEY_PADDING_MASK], o->key_padding_mask, &in->key_padding_mask,
                          batched ? 2 : 1, batched ? BS : BS + 1, batched ? "B, S" : "S")) ||
        (rc = check_shape(command, &k_inputs[VALID_LENS], o->valid_lens, vl, vl->rank == 2 ? 2 : 1, BL,
                          vl->rank == 2 ? "B, L" : "B")) ||
        (rc = check_shape(command, &k_inputs[ATTN_MASK], o->attn_mask, m, m->rank, m->rank == 3 ? mask3 : mask3 + 1,
                          m->rank == 3 ? "B*H, L, S" : "L, S")) ||
        (rc = check_shape(command, &k_inputs[HEAD_MASK], o->head_mask, &in->head_mask, 1, &in->H, "H")) ||
        (rc = check_shape(command, &k_inputs[SINKS], o->sinks, &in->sinks, 1, &in->H, "H")))
        return rc;
    return 0;
}

/* A number option given beside --config takes the config's place, and says so. */
static double override(const char *option, double given, double from_config, int has_config)
{
    if (!given) return from_config;
    if (has_config && given != from_config) printf("note: %s %g overrides config.json's %g\n", option, given, from_config);
    return given;
}

/* --config's layer against the checkpoint's: the widths, the norms and the sinks must agree. The
 * head dim and key/value heads the weights give follow the head count, so another --heads leaves
 * them to the weights. */
static int check_config(const char *command, const forward_inputs *in, int heads_overridden)
{
    const vkattn_layer_desc *c = &in->from_config, *f = &in->layer;
    vkattn_model_info info;
    vkattn_model_config_get_info(in->config, &info);
    const char *what = NULL;
    if (f->embed_dim != c->embed_dim) what = "hidden_size";
    else if (!heads_overridden && (f->head_dim ? f->head_dim : f->embed_dim / f->num_heads) != c->head_dim)
        what = "head_dim";
    else if (!heads_overridden && (f->num_kv_heads ? f->num_kv_heads : f->num_heads) != c->num_kv_heads)
        what = "num_key_value_heads";
    else if (f->qk_norm != c->qk_norm) what = "q/k norms (q_norm.weight, k_norm.weight)";
    else if (info.attention_sinks && !in->w.sinks) what = "attention sinks (sinks)";
    if (!what) return 0;
    cli_error(command, "--weights and --config disagree on the %s of layer %s (a %s model)\n", what, in->prefix,
              info.model_type);
    return 1;
}

int forward_inputs_load(const char *command, const forward_options *o, forward_inputs *in)
{
    int rc;
    if ((rc = load_files(command, o, in))) return rc;
    const int has_config = o->config != NULL;
    const vkattn_layer_desc *cfg = &in->from_config;
    if (has_config && o->heads && o->heads != cfg->num_heads)
        printf("note: --heads %u overrides config.json's %u\n", o->heads, cfg->num_heads);
    in->layer.num_heads = o->heads ? o->heads : cfg->num_heads; /* first: describe derives num_kv_heads from it */
    vkattn_weight_file_describe(in->weights, &in->layer);
    in->layer.add_zero_attn = o->add_zero_attn;
    in->w = *vkattn_weight_file_weights(in->weights);
    if (in->sinks.data) in->w.sinks = in->sinks.data; /* --sinks: its dtype is checked; its shape with the others' */
    if (has_config && (rc = check_config(command, in, o->heads && o->heads != cfg->num_heads))) return rc;
    /* (L,E) is an unbatched query, as in PyTorch: B = 1. */
    in->batched = in->query.rank == 3;
    int batched = in->batched;
    in->B = batched ? in->query.dims[0] : 1;
    in->L = in->query.dims[batched];
    in->E = in->query.dims[batched + 1];
    in->S = in->key.data ? in->key.dims[batched] : in->L;
    in->H = in->layer.num_heads;
    in->S_ext = in->S + (in->layer.add_bias_kv != 0) + (in->layer.add_zero_attn != 0);
    const uint32_t D = in->layer.head_dim ? in->layer.head_dim : in->layer.embed_dim / in->H;
    if (in->E != in->layer.embed_dim) {
        cli_error(command, "the query has %u features but the weights have embed_dim %u\n", in->E,
                  in->layer.embed_dim);
        return 1;
    }
    if (!in->layer.head_dim &&
        (rc = cli_check_head_split(command, "the weights' embed_dim", in->layer.embed_dim, in->H)))
        return rc;
    if (in->layer.num_kv_heads == VKATTN_KV_HEADS_UNKNOWN) {
        vkattn_weight_file_info info;
        vkattn_weight_file_get_info(in->weights, &info);
        cli_error(command, "the weights (q_proj %u rows, k_proj/v_proj %u rows) do not fit %u heads: the "
                           "key/value rows must be a whole number of heads of head dim q rows / heads, and q/k norms "
                           "and sinks must match\n",
                  info.q_rows, info.kv_rows, in->H);
        return 1;
    }
    /* The file's k/v widths say how many key/value heads there are; --kv-heads states it too. */
    uint32_t kv_heads = in->layer.num_kv_heads ? in->layer.num_kv_heads : in->H;
    if (o->kv_heads && kv_heads != o->kv_heads) {
        cli_error(command, "--kv-heads %u, but the weights' k/v projections hold %u key/value heads of head dim %u\n",
                  o->kv_heads, kv_heads, D);
        return 1;
    }
    if ((o->rope_dim || o->rope_style_given) && !o->rope_theta && !(has_config && cfg->rope_theta > 0)) {
        cli_error(command, "--rope-dim and --rope-style need --rope-theta (the model's rope_theta)\n");
        return 2;
    }
    if (o->alibi && (o->rope_theta || (has_config && cfg->rope_theta > 0))) {
        cli_error(command, "--alibi and %s: ALiBi replaces positional embeddings, a layer has one or the "
                           "other\n", o->rope_theta ? "--rope-theta" : "config.json's RoPE");
        return 2;
    }
    if (has_config) { /* what the file cannot know, from the config */
        in->layer.scale = cfg->scale;
        in->layer.rope_scaling = cfg->rope_scaling;
        in->layer.qk_norm_eps = cfg->qk_norm_eps;
        in->layer.qk_norm_plus_one = cfg->qk_norm_plus_one;
    }
    in->layer.rope_theta = (float)override("--rope-theta", o->rope_theta, cfg->rope_theta, has_config);
    in->layer.rope_dim = (uint32_t)override("--rope-dim", o->rope_dim, cfg->rope_dim, has_config);
    in->layer.rope_style = o->rope_style_given ? o->rope_style : cfg->rope_style;
    in->layer.window = (uint32_t)override("--sliding-window", o->window, cfg->window, has_config);
    in->layer.softcap = (float)override("--softcap", o->softcap, cfg->softcap, has_config);
    in->layer.alibi = o->alibi;
    in->layer.precision = o->precision;
    in->layer.head_mask = in->head_mask.data; /* its dtype is checked; its shape with the others' */
    vkattn_host_forward_desc f = {
        .batch = in->B, .query_len = in->L, .key_len = in->key.data ? in->S : 0,
        .query = in->query.data, .key = in->key.data, .value = in->value.data,
        .causal = o->causal, .key_padding_mask = in->key_padding_mask.data,
        .valid_lens = in->valid_lens.data, .valid_lens_per_query = in->valid_lens.rank == 2,
        .attn_mask = in->attn_mask.data, .attn_mask_dtype = in->attn_mask.dtype,
        .attn_mask_per_head = in->attn_mask.rank == 3,
        .path = o->path,
    };
    in->desc = f;
    return check_shapes(command, o, in);
}

void forward_inputs_print_shapes(const forward_inputs *in, const forward_options *o)
{
    const uint32_t D = in->layer.head_dim ? in->layer.head_dim : in->H ? in->E / in->H : 0;
    static const char *const types[] = {"", " linear", " dynamic", " yarn", " longrope", " llama3", " table"};
    const vkattn_rope_type type = in->layer.rope_scaling.type;
    char rope[128] = "";
    if (in->layer.rope_theta > 0)
        snprintf(rope, sizeof rope, ", rope %s theta %g%s on %u dims", in->layer.rope_style == VKATTN_ROPE_GPTJ ? "gptj" : "neox",
                 (double)in->layer.rope_theta, (unsigned)type <= VKATTN_ROPE_TYPE_TABLE ? types[type] : "",
                 in->layer.rope_dim ? in->layer.rope_dim : D);
    char variants[160] = "";
    size_t n = 0;
    if (in->layer.qk_norm)
        n += snprintf(variants + n, sizeof variants - n, ", q/k norms per %s%s",
                      in->layer.qk_norm == VKATTN_QK_NORM_ROW ? "row" : "head", in->layer.qk_norm_plus_one ? " (1 + w)" : "");
    if (in->layer.window) n += snprintf(variants + n, sizeof variants - n, ", window %u", in->layer.window);
    if (in->layer.softcap > 0)
        n += snprintf(variants + n, sizeof variants - n, ", softcap %g", (double)in->layer.softcap);
    if (in->layer.alibi) n += snprintf(variants + n, sizeof variants - n, ", alibi");
    if (in->sinks.data) snprintf(variants + n, sizeof variants - n, ", sinks");
    printf("shapes: query (%u, %u, %u), key/value %s (S = %u), heads %u (head dim %u)%s%s%s%s%s\n", in->B, in->L, in->E,
           in->key.data ? "given" : "= query", in->S, in->H, D, o->causal ? ", causal" : "",
           in->layer.add_bias_kv ? ", bias_kv" : "", in->layer.storage == VKATTN_DTYPE_F16 ? ", f16 storage" : "", rope,
           variants);
}

void forward_inputs_print_weights(const forward_inputs *in)
{
    vkattn_weight_file_info info;
    if (vkattn_weight_file_get_info(in->weights, &info) != VKATTN_OK) return;
    if (!info.prefix[0] && info.naming == VKATTN_WEIGHT_NAMES_TORCH) return; /* a plain state_dict says nothing new */
    printf("weights: layer '%s' (%s names, %u tensors, %s), q rows %u, k/v rows %u", info.prefix,
           info.naming == VKATTN_WEIGHT_NAMES_HF ? "Hugging Face" : "nn.MultiheadAttention", info.tensor_count,
           info.tensor_count ? info.tensor_dtypes[0] : "-", info.q_rows, info.kv_rows);
    if (in->layer.num_kv_heads && in->layer.num_kv_heads != VKATTN_KV_HEADS_UNKNOWN)
        printf(" (%u key/value heads)", in->layer.num_kv_heads);
    if (info.out_bias_zero_filled) printf(", no o_proj.bias (zeros)");
    if (info.ignored_under_prefix) printf(", %u other tensors under the prefix ignored", info.ignored_under_prefix);
    printf("; read %.1f KiB of %.1f MiB\n", (double)info.bytes_read / 1024, (double)info.file_bytes / (1024 * 1024));
}

int forward_inputs_open(const char *command, const forward_options *o, const forward_inputs *in,
                        vkattn_context **ctx, vkattn_layer **layer)
{
    *ctx = NULL;
    *layer = NULL;
    if (o->cpu) {
        printf("device: CPU reference path (no Vulkan)\n");
        return 0;
    }
    int rc = cli_open_context(command, o->device, ctx);
    if (rc) return rc;
    vkattn_status status = vkattn_layer_create(*ctx, &in->layer, &in->w, layer);
    if (status != VKATTN_OK) {
        rc = cli_fail(command, "creating the layer", status, vkattn_context_last_error(*ctx));
        if (status == VKATTN_ERROR_NON_FINITE && in->layer.storage == VKATTN_DTYPE_F16)
            cli_error(command, "fp16 storage holds values up to 65504: --dtype f32 keeps the weights in fp32 "
                               "(--check-finite lists every weight that overflows)\n");
        vkattn_context_destroy(*ctx);
        *ctx = NULL;
        return rc;
    }
    cli_layer_storage(command, *layer, in->layer.storage);
    return 0;
}

int forward_inputs_run(const char *command, const forward_options *o, const forward_inputs *in,
                       const vkattn_host_forward_desc *f, vkattn_dtype *storage)
{
    vkattn_context *ctx;
    vkattn_layer *layer;
    vkattn_error error = {0};
    vkattn_status status;
    vkattn_layer_desc d = {.storage = VKATTN_DTYPE_F32}; /* the CPU reference computes in double whatever the storage */
    int rc = forward_inputs_open(command, o, in, &ctx, &layer);
    if (rc) return rc;
    if (layer) vkattn_layer_get_desc(layer, &d);
    if (storage) *storage = d.storage;
    if (o->trace && (rc = cli_print_plan(command, ctx, layer, f))) goto done;
    double t0 = cli_now(), elapsed;
    if (o->cpu) {
        status = vkattn_reference_forward(&in->layer, &in->w, f, &error);
        elapsed = cli_now() - t0;
        if (status != VKATTN_OK) return cli_fail(command, "CPU forward", status, error.message);
    } else {
        status = vkattn_forward_host(layer, f);
        elapsed = cli_now() - t0;
        if (status != VKATTN_OK) {
            rc = cli_fail(command, "forward", status, vkattn_context_last_error(ctx));
            goto done;
        }
    }
    vkattn_forward_stats stats = {.path = VKATTN_PATH_CPU};
    if (layer) vkattn_layer_last_stats(layer, &stats);
    printf("path: %s, %.3f ms (a first call includes compiling the kernels)\n", vkattn_path_name(stats.path),
           elapsed * 1e3);
done:
    vkattn_layer_destroy(layer);
    vkattn_context_destroy(ctx);
    return rc;
}

int forward_inputs_masked(const forward_inputs *in, uint32_t b, uint32_t h, uint32_t i, uint32_t j)
{
    if (j >= in->S) return 0; /* bias_k / the zero key: never masked, as in PyTorch */
    /* causal follows positions in a layer that has them (vkattn_forward_desc.causal) */
    int positions = in->layer.rope_theta > 0.0f || in->layer.window || in->layer.alibi;
    if (in->desc.causal && (int64_t)j > (int64_t)i + (positions ? (int64_t)in->S - in->L : 0)) return 1;
    if (in->layer.window && (int64_t)i + in->S - in->L - j >= (int64_t)in->layer.window) return 1;
    if (in->key_padding_mask.data && ((const uint8_t *)in->key_padding_mask.data)[(size_t)b * in->S + j]) return 1;
    if (in->valid_lens.data) {
        const int32_t *lens = in->valid_lens.data;
        int32_t len = in->desc.valid_lens_per_query ? lens[(size_t)b * in->L + i] : lens[b];
        if ((int64_t)j >= len) return 1;
    }
    if (in->attn_mask.data) {
        size_t plane = in->desc.attn_mask_per_head ? (size_t)b * in->H + h : 0;
        size_t k = (plane * in->L + i) * in->S + j;
        if (in->attn_mask.dtype == VKATTN_DTYPE_BOOL) return ((const uint8_t *)in->attn_mask.data)[k] != 0;
        float m = ((const float *)in->attn_mask.data)[k];
        if (isinf(m) && m < 0) return 1;
    }
    return 0;
}

/* The weights in forward order, with their shapes; `fp16` marks those fp16 storage holds as fp16
 * (the projection matrices and bias_k/bias_v; the in/out projection biases stay fp32). */
typedef struct weight_tensor {
    const char *name;
    const float *data;
    uint32_t rank, dims[3];
    int fp16;
} weight_tensor;

static size_t weight_tensors(const forward_inputs *in, weight_tensor t[10])
{
    const vkattn_weights *w = &in->w;
    const vkattn_layer_desc *l = &in->layer;
    const uint32_t E = l->embed_dim, kdim = l->kdim ? l->kdim : E, vdim = l->vdim ? l->vdim : E;
    /* the projections' rows as the file holds them: H * D for the query (E only where D = E / H;
     * Gemma 3 1B's 4 x 256 is not its 1152), H_kv * D for grouped keys and values */
    vkattn_weight_file_info info;
    const int known = vkattn_weight_file_get_info(in->weights, &info) == VKATTN_OK;
    const uint32_t Eq = known ? info.q_rows : E, Ekv = known ? info.kv_rows : E;
    const weight_tensor all[10] = {
        {"in_proj_weight", w->in_proj_weight, 2, {Eq + 2 * Ekv, E}, 1},
        {"q_proj_weight", w->q_proj_weight, 2, {Eq, E}, 1},
        {"k_proj_weight", w->k_proj_weight, 2, {Ekv, kdim}, 1},
        {"v_proj_weight", w->v_proj_weight, 2, {Ekv, vdim}, 1},
        {"in_proj_bias", w->in_proj_bias, 1, {Eq + 2 * Ekv}, 0},
        {"bias_k", w->bias_k, 3, {1, 1, Ekv}, 1},
        {"bias_v", w->bias_v, 3, {1, 1, Ekv}, 1},
        {"out_proj.weight", w->out_proj_weight, 2, {E, Eq}, 1},
        {"out_proj.bias", w->out_proj_bias, 1, {E}, 0},
        {"sinks", w->sinks, 1, {in->H}, 0},
    };
    size_t n = 0;
    for (size_t i = 0; i < 10; i++)
        if (all[i].data) t[n++] = all[i];
    return n;
}

size_t forward_inputs_report_nonfinite(const forward_inputs *in)
{
    size_t n = 0;
    n += cli_report_nonfinite("query", in->query.data, in->query.rank, in->query.dims, 0);
    n += cli_report_nonfinite("key", in->key.data, in->key.rank, in->key.dims, 0);
    n += cli_report_nonfinite("value", in->value.data, in->value.rank, in->value.dims, 0);
    if (in->attn_mask.dtype == VKATTN_DTYPE_F32) /* -inf there means "masked" */
        n += cli_report_nonfinite("attn_mask", in->attn_mask.data, in->attn_mask.rank,
                                  in->attn_mask.dims, 1);
    weight_tensor t[10];
    size_t count = weight_tensors(in, t);
    for (size_t i = 0; i < count; i++) n += cli_report_nonfinite(t[i].name, t[i].data, t[i].rank, t[i].dims, 0);
    return n;
}

size_t forward_inputs_report_fp16_overflow(const forward_inputs *in)
{
    /* 65504 is the largest fp16; round to nearest even takes |x| >= 65520 to infinity. */
    const float limit = 65520.0f;
    weight_tensor t[10];
    size_t count = weight_tensors(in, t), total = 0;
    for (size_t i = 0; i < count; i++) {
        size_t n = 0, first = 0, elems = 1;
        for (uint32_t d = 0; d < t[i].rank; d++) elems *= t[i].dims[d];
        for (size_t j = 0; t[i].fp16 && j < elems; j++)
            if (isfinite(t[i].data[j]) && fabsf(t[i].data[j]) >= limit && n++ == 0) first = j;
        if (!n) continue;
        char shape[64], at[64];
        cli_format_shape(shape, sizeof shape, t[i].rank, t[i].dims);
        cli_format_index(at, sizeof at, t[i].rank, t[i].dims, first);
        printf("check-finite: %s %s: %zu value%s overflow%s fp16 storage to inf (|x| >= 65520), first at %s = %g\n",
               t[i].name, shape, n, n == 1 ? "" : "s", n == 1 ? "s" : "", at, (double)t[i].data[first]);
        total += n;
    }
    return total;
}
