/* Tests for reading a Hugging Face config.json (vkattn_model_config_*): what each family's rules
 * make of a layer (rows of config text and the description they must give, each description also
 * accepted by the library's own check), and malformed or contradictory configs refused with a
 * clear message (a table of cases). The families' real config.json files are read in
 * test_models.c, against float64 fixtures. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io.h"
#include "io/json.h"
#include "problem/config.h"
#include "test_util.h"

/* Parses `text`; NULL (with the check failed) on error. */
static vkattn_model_config *parse(const char *text)
{
    vkattn_model_config *c = NULL;
    vkattn_error err = {0};
    vkattn_status status = vka_model_config_parse((const uint8_t *)text, strlen(text), &c, &err);
    CHECK_MSG(status == VKATTN_OK, "parse: %s (%s)", vkattn_status_name(status), err.message);
    return status == VKATTN_OK ? c : NULL;
}

/* What a layer's description must hold (fields not named are 0). */
typedef struct layer_row {
    const char *name;
    const char *json;
    uint32_t layer;
    vkattn_layer_desc want;
    const char *prefix;
} layer_row;

#define LLAMA32                                                                                                    \
    "{\"model_type\": \"llama\", \"hidden_size\": 2048, \"num_attention_heads\": 32, \"num_key_value_heads\": 8, " \
    "\"head_dim\": 64, \"num_hidden_layers\": 16, \"max_position_embeddings\": 131072, \"rope_theta\": 500000.0, " \
    "\"attention_bias\": false, \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0, "               \
    "\"low_freq_factor\": 1.0, \"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"}}"
#define GEMMA3                                                                                                     \
    "{\"model_type\": \"gemma3_text\", \"hidden_size\": 1152, \"num_attention_heads\": 4, \"num_key_value_heads\": 1," \
    " \"head_dim\": 256, \"num_hidden_layers\": 26, \"query_pre_attn_scalar\": 256, \"rms_norm_eps\": 1e-06, "     \
    "\"rope_theta\": 1000000, \"rope_local_base_freq\": 10000, \"sliding_window\": 512, "                       \
    "\"sliding_window_pattern\": 6, \"attn_logit_softcapping\": null, \"rope_scaling\": null}"
#define GEMMA3_4B                                                                                                 \
    "{\"model_type\": \"gemma3\", \"vision_config\": {\"hidden_size\": 1152}, \"text_config\": {"                  \
    "\"hidden_size\": 2560, \"intermediate_size\": 10240, \"model_type\": \"gemma3_text\", "                       \
    "\"num_hidden_layers\": 34, \"rope_scaling\": {\"factor\": 8.0, \"rope_type\": \"linear\"}, "                 \
    "\"sliding_window\": 1024}}"
#define LONG48 "[1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5, 6, 6.5, 7, 7.5, 8, 8.5, 9, 9.5, 10, 10.5, 11, 11.5, 12, 12.5, " \
               "13, 13.5, 14, 14.5, 15, 15.5, 16, 16.5, 17, 17.5, 18, 18.5, 19, 19.5, 20, 20.5, 21, 21.5, 22, 22.5, "   \
               "23, 23.5, 24, 24.5]"
#define SHORT48 "[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, " \
                "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1.25]"
#define PHI4                                                                                                       \
    "{\"model_type\": \"phi3\", \"hidden_size\": 3072, \"num_attention_heads\": 24, \"num_key_value_heads\": 8, "  \
    "\"num_hidden_layers\": 32, \"max_position_embeddings\": 131072, \"original_max_position_embeddings\": 4096, " \
    "\"partial_rotary_factor\": 0.75, \"rope_theta\": 10000.0, \"sliding_window\": 262144, "                     \
    "\"rope_scaling\": {\"type\": \"longrope\", \"long_factor\": " LONG48 ", \"short_factor\": " SHORT48 "}}"

/* Gemma 3 with rope_parameters per layer type, neither naming a rope_theta */
#define GEMMA3_PER_TYPE_NO_THETA                                                                                  \
    "{\"model_type\": \"gemma3_text\", \"hidden_size\": 640, \"num_attention_heads\": 4, "                            \
    "\"num_key_value_heads\": 1, \"head_dim\": 256, \"num_hidden_layers\": 2, \"sliding_window\": 512, "              \
    "\"rope_theta\": 1000000.0, \"rope_local_base_freq\": 20000.0, \"layer_types\": [\"sliding_attention\", "        \
    "\"full_attention\"], \"rope_parameters\": {\"full_attention\": {\"rope_type\": \"default\"}, "                \
    "\"sliding_attention\": {\"rope_type\": \"default\"}}}"

static const layer_row k_layers[] = {
    {"llama3.2", LLAMA32, 3,
     {.embed_dim = 2048, .num_heads = 32, .num_kv_heads = 8, .head_dim = 64, .rope_theta = 500000, .no_bias = 1,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LLAMA3, .factor = 32, .low_freq_factor = 1, .high_freq_factor = 4,
                       .original_max_position_embeddings = 8192}},
     "model.layers.3.self_attn."},
    /* Gemma 3: five sliding layers (local base, window), then a global one (rope_theta) */
    {"gemma3 sliding", GEMMA3, 4,
     {.embed_dim = 1152, .num_heads = 4, .num_kv_heads = 1, .head_dim = 256, .scale = 0.0625f, .rope_theta = 10000,
      .window = 512, .no_bias = 1, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f, .qk_norm_plus_one = 1},
     NULL},
    {"gemma3 global", GEMMA3, 5,
     {.embed_dim = 1152, .num_heads = 4, .num_kv_heads = 1, .head_dim = 256, .scale = 0.0625f, .rope_theta = 1e6f,
      .no_bias = 1, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f, .qk_norm_plus_one = 1},
     NULL},
    /* Gemma 3 4B: a multimodal wrapper, its language model in text_config, which names only these
     * (the rest are Gemma3TextConfig's defaults: 8 heads, 4 key/value heads of 256, the scalar 256,
     * bases 1e6 and 1e4, every 6th layer global); linear scaling on the global layers only */
    {"gemma3 wrapper", GEMMA3_4B, 11,
     {.embed_dim = 2560, .num_heads = 8, .num_kv_heads = 4, .head_dim = 256, .scale = 0.0625f, .rope_theta = 1e6f,
      .no_bias = 1, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f, .qk_norm_plus_one = 1,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LINEAR, .factor = 8}},
     "language_model.model.layers.11.self_attn."},
    {"gemma3 wrapper sliding", GEMMA3_4B, 10,
     {.embed_dim = 2560, .num_heads = 8, .num_kv_heads = 4, .head_dim = 256, .scale = 0.0625f, .rope_theta = 1e4f,
      .window = 1024, .no_bias = 1, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f, .qk_norm_plus_one = 1},
     NULL},
    /* Gemma 2: even layers slide; scores soft-capped */
    {"gemma2 sliding", "{\"model_type\": \"gemma2\", \"hidden_size\": 2304, \"num_attention_heads\": 8, "
                       "\"num_key_value_heads\": 4, \"head_dim\": 256, \"num_hidden_layers\": 26, "
                       "\"query_pre_attn_scalar\": 256, \"attn_logit_softcapping\": 50.0, \"sliding_window\": 4096, "
                       "\"rope_theta\": 10000.0}",
     0,
     {.embed_dim = 2304, .num_heads = 8, .num_kv_heads = 4, .head_dim = 256, .scale = 0.0625f, .rope_theta = 10000,
      .window = 4096, .softcap = 50, .no_bias = 1},
     NULL},
    /* gpt-oss: layer_types, YaRN without truncation, biases */
    {"gpt-oss", "{\"model_type\": \"gpt_oss\", \"hidden_size\": 2880, \"num_attention_heads\": 64, "
                "\"num_key_value_heads\": 8, \"head_dim\": 64, \"num_hidden_layers\": 4, \"sliding_window\": 128, "
                "\"layer_types\": [\"sliding_attention\", \"full_attention\", \"sliding_attention\", \"full_attention\"],"
                " \"attention_bias\": true, \"rope_theta\": 150000, \"max_position_embeddings\": 131072, "
                "\"rope_scaling\": {\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"factor\": 32.0, "
                "\"original_max_position_embeddings\": 4096, \"rope_type\": \"yarn\", \"truncate\": false}}",
     2,
     {.embed_dim = 2880, .num_heads = 64, .num_kv_heads = 8, .head_dim = 64, .rope_theta = 150000, .window = 128,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_YARN, .factor = 32, .beta_fast = 32, .beta_slow = 1,
                       .original_max_position_embeddings = 4096, .no_truncate = 1}},
     NULL},
    /* Phi-4-mini: partial rotary (0.75 of 128), longrope lists of 48 */
    {"phi4-mini", PHI4, 0,
     {.embed_dim = 3072, .num_heads = 24, .num_kv_heads = 8, .head_dim = 128, .rope_theta = 10000, .rope_dim = 96,
      .window = 262144, .no_bias = 1,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LONGROPE, .original_max_position_embeddings = 4096,
                       .max_position_embeddings = 131072}},
     NULL},
    {"olmo2", "{\"model_type\": \"olmo2\", \"hidden_size\": 4096, \"num_attention_heads\": 32, "
              "\"num_key_value_heads\": 32, \"num_hidden_layers\": 32, \"rms_norm_eps\": 1e-06, \"rope_theta\": 500000}",
     0,
     {.embed_dim = 4096, .num_heads = 32, .num_kv_heads = 32, .head_dim = 128, .rope_theta = 500000, .no_bias = 1,
      .qk_norm = VKATTN_QK_NORM_ROW, .qk_norm_eps = 1e-6f},
     NULL},
    /* Qwen3: per-head norms, head_dim beside hidden_size; use_sliding_window false: no window */
    {"qwen3", "{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"num_attention_heads\": 16, "
              "\"num_key_value_heads\": 8, \"head_dim\": 128, \"num_hidden_layers\": 28, \"rms_norm_eps\": 1e-06, "
              "\"rope_theta\": 1000000, \"sliding_window\": null, \"use_sliding_window\": false, "
              "\"max_window_layers\": 28, \"attention_bias\": false}",
     27,
     {.embed_dim = 1024, .num_heads = 16, .num_kv_heads = 8, .head_dim = 128, .rope_theta = 1e6f, .no_bias = 1,
      .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f},
     NULL},
    /* attention_bias only where the modeling code reads it (an outside review: HF's Qwen2Attention
     * hard-codes q/k/v biases, Mistral's and Phi-3's none; Llama reads the field) */
    {"qwen2 attention_bias false", "{\"model_type\": \"qwen2\", \"hidden_size\": 896, \"num_attention_heads\": 14, "
                                   "\"num_key_value_heads\": 2, \"num_hidden_layers\": 24, \"rope_theta\": 1000000.0, "
                                   "\"attention_bias\": false}",
     0, {.embed_dim = 896, .num_heads = 14, .num_kv_heads = 2, .head_dim = 64, .rope_theta = 1e6f}, NULL},
    {"mistral attention_bias true", "{\"model_type\": \"mistral\", \"num_hidden_layers\": 2, \"sliding_window\": null, "
                                    "\"attention_bias\": true}",
     0, {.embed_dim = 4096, .num_heads = 32, .num_kv_heads = 8, .head_dim = 128, .rope_theta = 10000, .no_bias = 1},
     NULL},
    {"phi3 attention_bias true", "{\"model_type\": \"phi3\", \"num_hidden_layers\": 2, \"sliding_window\": null, "
                                 "\"attention_bias\": true}",
     0, {.embed_dim = 3072, .num_heads = 32, .num_kv_heads = 32, .head_dim = 96, .rope_theta = 10000, .no_bias = 1},
     NULL},
    {"llama attention_bias true", "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"attention_bias\": true}",
     0, {.embed_dim = 4096, .num_heads = 32, .num_kv_heads = 32, .head_dim = 128, .rope_theta = 10000}, NULL},
    /* SmolLM3: a NoPE layer (no_rope_layers 0) has no RoPE at all */
    {"smollm3 nope", "{\"model_type\": \"smollm3\", \"hidden_size\": 2048, \"num_attention_heads\": 16, "
                     "\"num_key_value_heads\": 4, \"num_hidden_layers\": 4, \"rope_theta\": 5000000.0, "
                     "\"no_rope_layers\": [1, 1, 1, 0], \"use_sliding_window\": false}",
     3, {.embed_dim = 2048, .num_heads = 16, .num_kv_heads = 4, .head_dim = 128, .no_bias = 1}, NULL},
    /* rope_parameters per layer type (the newer format) */
    {"rope_parameters", "{\"model_type\": \"gemma3_text\", \"hidden_size\": 640, \"num_attention_heads\": 4, "
                        "\"num_key_value_heads\": 1, \"head_dim\": 256, \"num_hidden_layers\": 2, "
                        "\"query_pre_attn_scalar\": 256, \"sliding_window\": 512, "
                        "\"layer_types\": [\"sliding_attention\", \"full_attention\"], \"rope_parameters\": {"
                        "\"full_attention\": {\"rope_type\": \"linear\", \"factor\": 8.0, \"rope_theta\": 1000000.0}, "
                        "\"sliding_attention\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0}}}",
     1,
     {.embed_dim = 640, .num_heads = 4, .num_kv_heads = 1, .head_dim = 256, .scale = 0.0625f, .rope_theta = 1e6f,
      .no_bias = 1, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f, .qk_norm_plus_one = 1,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LINEAR, .factor = 8}},
     NULL},
    /* ... whose sliding entry names no rope_theta: rope_local_base_freq, as Gemma3TextConfig gives it
     * (an outside review found the global 1e6 taken); the full entry's default is rope_theta */
    {"rope_parameters sliding base", GEMMA3_PER_TYPE_NO_THETA, 0,
     {.embed_dim = 640, .num_heads = 4, .num_kv_heads = 1, .head_dim = 256, .scale = 0.0625f, .rope_theta = 2e4f,
      .window = 512, .no_bias = 1, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f, .qk_norm_plus_one = 1},
     NULL},
    /* layer_types says which layers slide: a sliding_window_pattern of 0 (refused without them) is
     * then unused, as in Gemma3TextConfig */
    {"layer_types over pattern 0", "{\"model_type\": \"gemma3_text\", \"hidden_size\": 640, \"num_attention_heads\": 4, "
                                   "\"num_key_value_heads\": 1, \"head_dim\": 256, \"num_hidden_layers\": 2, "
                                   "\"sliding_window\": 512, \"sliding_window_pattern\": 0, "
                                   "\"rope_local_base_freq\": 20000.0, "
                                   "\"layer_types\": [\"sliding_attention\", \"full_attention\"]}",
     0,
     {.embed_dim = 640, .num_heads = 4, .num_kv_heads = 1, .head_dim = 256, .scale = 0.0625f, .rope_theta = 2e4f,
      .window = 512, .no_bias = 1, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f, .qk_norm_plus_one = 1},
     NULL},
    {"rope_parameters full base", GEMMA3_PER_TYPE_NO_THETA, 1,
     {.embed_dim = 640, .num_heads = 4, .num_kv_heads = 1, .head_dim = 256, .scale = 0.0625f, .rope_theta = 1e6f,
      .no_bias = 1, .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f, .qk_norm_plus_one = 1},
     NULL},
    /* YaRN's truncate given as null: transformers' `if truncate:` takes None as false */
    {"yarn truncate null", "{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 4, \"rope_scaling\": {"
                           "\"rope_type\": \"yarn\", \"factor\": 32.0, \"beta_fast\": 32.0, \"beta_slow\": 1.0, "
                           "\"truncate\": null, \"original_max_position_embeddings\": 4096}}",
     3,
     {.embed_dim = 2880, .num_heads = 64, .num_kv_heads = 8, .head_dim = 64, .rope_theta = 150000,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_YARN, .factor = 32, .beta_fast = 32, .beta_slow = 1,
                       .original_max_position_embeddings = 4096, .no_truncate = 1}},
     NULL},
    /* rope_type wins over the older type, before or after it; rope_scaling over rope_parameters,
     * before or after it (transformers: `rope_scaling or rope_parameters`) */
    {"rope_type over type", "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"rope_theta\": 500000, "
                            "\"rope_scaling\": {\"rope_type\": \"llama3\", \"type\": \"linear\", \"factor\": 8.0, "
                            "\"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
                            "\"original_max_position_embeddings\": 8192}}",
     1,
     {.embed_dim = 4096, .num_heads = 32, .num_kv_heads = 32, .head_dim = 128, .rope_theta = 500000, .no_bias = 1,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LLAMA3, .factor = 8, .low_freq_factor = 1, .high_freq_factor = 4,
                       .original_max_position_embeddings = 8192}},
     NULL},
    {"rope_scaling over rope_parameters", "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, "
                                          "\"rope_theta\": 10000, \"rope_scaling\": {\"type\": \"linear\", "
                                          "\"factor\": 4.0}, \"rope_parameters\": {\"rope_type\": \"default\", "
                                          "\"rope_theta\": 500000}}",
     0,
     {.embed_dim = 4096, .num_heads = 32, .num_kv_heads = 32, .head_dim = 128, .rope_theta = 10000, .no_bias = 1,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LINEAR, .factor = 4}},
     NULL},
    {"rope_parameters under rope_scaling", "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, "
                                           "\"rope_theta\": 10000, \"rope_parameters\": {\"rope_type\": \"default\", "
                                           "\"rope_theta\": 500000}, \"rope_scaling\": {\"type\": \"linear\", "
                                           "\"factor\": 4.0}}",
     0,
     {.embed_dim = 4096, .num_heads = 32, .num_kv_heads = 32, .head_dim = 128, .rope_theta = 10000, .no_bias = 1,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LINEAR, .factor = 4}},
     NULL},
    /* what a config leaves out is its configuration class's default (transformers' values): Gemma
     * 2's softcap of 50 and window of 4096 (given as null: none); gpt-oss's even layers sliding
     * over 128 keys and its YaRN; Mistral's window of 4096; OLMo 2's rms_norm_eps of 1e-5 */
    {"gemma2 defaults", "{\"model_type\": \"gemma2\", \"hidden_size\": 2304, \"num_hidden_layers\": 26}", 0,
     {.embed_dim = 2304, .num_heads = 8, .num_kv_heads = 4, .head_dim = 256, .scale = 0.0625f, .rope_theta = 10000,
      .window = 4096, .softcap = 50, .no_bias = 1},
     NULL},
    {"gemma2 nulls", "{\"model_type\": \"gemma2\", \"attn_logit_softcapping\": null, \"sliding_window\": null}", 0,
     {.embed_dim = 2304, .num_heads = 8, .num_kv_heads = 4, .head_dim = 256, .scale = 0.0625f, .rope_theta = 10000,
      .no_bias = 1},
     NULL},
    {"gpt-oss defaults", "{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 4}", 2,
     {.embed_dim = 2880, .num_heads = 64, .num_kv_heads = 8, .head_dim = 64, .rope_theta = 150000, .window = 128,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_YARN, .factor = 32, .beta_fast = 32, .beta_slow = 1,
                       .original_max_position_embeddings = 4096, .no_truncate = 1}},
     NULL},
    {"gpt-oss defaults full", "{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 4, \"rope_scaling\": null}", 3,
     {.embed_dim = 2880, .num_heads = 64, .num_kv_heads = 8, .head_dim = 64, .rope_theta = 150000,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_YARN, .factor = 32, .beta_fast = 32, .beta_slow = 1,
                       .original_max_position_embeddings = 4096, .no_truncate = 1}},
     NULL},
    {"mistral window default", "{\"model_type\": \"mistral\", \"hidden_size\": 5120, \"num_attention_heads\": 32, "
                               "\"head_dim\": 128, \"num_hidden_layers\": 40, \"rope_theta\": 1000000.0}",
     0, {.embed_dim = 5120, .num_heads = 32, .num_kv_heads = 8, .head_dim = 128, .rope_theta = 1e6f, .window = 4096,
         .no_bias = 1},
     NULL},
    {"olmo2 eps default", "{\"model_type\": \"olmo2\", \"hidden_size\": 2048, \"num_attention_heads\": 16, "
                          "\"num_hidden_layers\": 16, \"rope_theta\": 500000}",
     0, {.embed_dim = 2048, .num_heads = 16, .num_kv_heads = 16, .head_dim = 128, .rope_theta = 500000, .no_bias = 1,
         .qk_norm = VKATTN_QK_NORM_ROW, .qk_norm_eps = 1e-5f},
     NULL},
    /* Phi-3's config class reads the old rope type yarn as longrope; its top-level pretraining
     * length (4096 by default) wins over rope_scaling's */
    {"phi3 yarn is longrope", "{\"model_type\": \"phi3\", \"hidden_size\": 3072, \"num_attention_heads\": 24, "
                              "\"num_key_value_heads\": 8, \"partial_rotary_factor\": 0.75, "
                              "\"max_position_embeddings\": 131072, \"rope_scaling\": {\"type\": \"yarn\", "
                              "\"original_max_position_embeddings\": 8192, \"long_factor\": " LONG48
                              ", \"short_factor\": " SHORT48 "}}",
     0,
     {.embed_dim = 3072, .num_heads = 24, .num_kv_heads = 8, .head_dim = 128, .rope_theta = 10000, .rope_dim = 96,
      .no_bias = 1,
      .rope_scaling = {.type = VKATTN_ROPE_TYPE_LONGROPE, .original_max_position_embeddings = 4096,
                       .max_position_embeddings = 131072}},
     NULL},
    /* SmolLM3 without no_rope_layers: every 4th layer has no RoPE, and with use_sliding_window
     * those alone slide; Qwen3's layer_types without use_sliding_window: no window */
    {"smollm3 interval nope", "{\"model_type\": \"smollm3\", \"num_hidden_layers\": 8, \"use_sliding_window\": true, "
                              "\"sliding_window\": 4096}",
     7, {.embed_dim = 2048, .num_heads = 16, .num_kv_heads = 4, .head_dim = 128, .window = 4096, .no_bias = 1}, NULL},
    {"smollm3 interval rope", "{\"model_type\": \"smollm3\", \"num_hidden_layers\": 8, \"use_sliding_window\": true, "
                              "\"sliding_window\": 4096}",
     6, {.embed_dim = 2048, .num_heads = 16, .num_kv_heads = 4, .head_dim = 128, .rope_theta = 2e6f, .no_bias = 1},
     NULL},
    {"qwen3 sliding types off", "{\"model_type\": \"qwen3\", \"hidden_size\": 1024, \"num_attention_heads\": 16, "
                                "\"num_key_value_heads\": 8, \"num_hidden_layers\": 2, \"rope_theta\": 1000000, "
                                "\"sliding_window\": 4096, \"layer_types\": [\"sliding_attention\", "
                                "\"sliding_attention\"]}",
     1, {.embed_dim = 1024, .num_heads = 16, .num_kv_heads = 8, .head_dim = 128, .rope_theta = 1e6f, .no_bias = 1,
         .qk_norm = VKATTN_QK_NORM_HEAD, .qk_norm_eps = 1e-6f},
     NULL},
    /* a feature that is off is no reason to refuse */
    {"off fields", "{\"model_type\": \"mistral\", \"hidden_size\": 5120, \"num_attention_heads\": 32, "
                   "\"num_key_value_heads\": 8, \"head_dim\": 128, \"num_hidden_layers\": 40, \"rope_theta\": 1000000.0,"
                   " \"sliding_window\": null, \"kv_lora_rank\": null, \"use_qk_norm\": false, "
                   "\"attention_chunk_size\": 0}",
     39, {.embed_dim = 5120, .num_heads = 32, .num_kv_heads = 8, .head_dim = 128, .rope_theta = 1e6f, .no_bias = 1},
     NULL},
};

static int same_float(float a, float b) { return a == b || fabsf(a - b) <= 1e-6f * fabsf(b); }

static void test_layers(void)
{
    for (size_t i = 0; i < sizeof k_layers / sizeof k_layers[0]; i++) {
        const layer_row *r = &k_layers[i];
        vkattn_model_config *c = parse(r->json);
        if (!c) continue;
        vkattn_layer_desc d;
        vkattn_kv_cache_desc cache = {.num_blocks = 64};
        char prefix[64];
        vkattn_error err = {0};
        vkattn_status status = vkattn_model_config_layer(c, r->layer, &d, &cache, prefix, sizeof prefix, &err);
        CHECK_MSG(status == VKATTN_OK, "%s: %s", r->name, err.message);
        if (status == VKATTN_OK) {
            const vkattn_layer_desc *w = &r->want;
            const vkattn_rope_scaling *s = &d.rope_scaling, *ws = &w->rope_scaling;
            CHECK_MSG(d.embed_dim == w->embed_dim && d.num_heads == w->num_heads && d.num_kv_heads == w->num_kv_heads &&
                          d.head_dim == w->head_dim && d.rope_dim == w->rope_dim && d.window == w->window &&
                          d.no_bias == w->no_bias,
                      "%s: E %u H %u H_kv %u D %u rope_dim %u window %u no_bias %d", r->name, d.embed_dim, d.num_heads,
                      d.num_kv_heads, d.head_dim, d.rope_dim, d.window, d.no_bias);
            CHECK_MSG(same_float(d.scale, w->scale) && same_float(d.rope_theta, w->rope_theta) &&
                          same_float(d.softcap, w->softcap),
                      "%s: scale %g theta %g softcap %g", r->name, (double)d.scale, (double)d.rope_theta,
                      (double)d.softcap);
            CHECK_MSG(d.qk_norm == w->qk_norm && d.qk_norm_plus_one == w->qk_norm_plus_one &&
                          same_float(d.qk_norm_eps, w->qk_norm_eps),
                      "%s: qk_norm %d plus_one %d eps %g", r->name, (int)d.qk_norm, d.qk_norm_plus_one,
                      (double)d.qk_norm_eps);
            CHECK_MSG(s->type == ws->type && s->factor == ws->factor && s->low_freq_factor == ws->low_freq_factor &&
                          s->high_freq_factor == ws->high_freq_factor && s->beta_fast == ws->beta_fast &&
                          s->beta_slow == ws->beta_slow && s->no_truncate == ws->no_truncate &&
                          s->original_max_position_embeddings == ws->original_max_position_embeddings &&
                          s->max_position_embeddings == ws->max_position_embeddings,
                      "%s: rope type %d factor %g orig %u max %u", r->name, (int)s->type, (double)s->factor,
                      s->original_max_position_embeddings, s->max_position_embeddings);
            CHECK(cache.num_kv_heads == w->num_kv_heads && cache.head_dim == w->head_dim && cache.num_blocks == 64);
            if (r->prefix) CHECK_MSG(strcmp(prefix, r->prefix) == 0, "%s: prefix %s", r->name, prefix);
            if (s->type == VKATTN_ROPE_TYPE_LONGROPE)
                CHECK(s->short_factor && s->long_factor && s->short_factor[47] == 1.25f && s->long_factor[47] == 24.5f);
            /* the library takes the description as it is */
            vka_layer_config cfg;
            status = vka_layer_config_from_desc(&d, &cfg, &err);
            CHECK_MSG(status == VKATTN_OK, "%s: the library refuses it: %s", r->name, err.message);
        }
        vkattn_model_config_destroy(c);
    }
    /* the family's facts */
    vkattn_model_config *c = parse("{\"model_type\": \"gpt_oss\", \"num_hidden_layers\": 24, "
                                   "\"max_position_embeddings\": 131072}");
    vkattn_model_info info;
    CHECK(c && vkattn_model_config_get_info(c, &info) == VKATTN_OK && strcmp(info.model_type, "gpt_oss") == 0 &&
          info.num_layers == 24 && info.max_position_embeddings == 131072 && info.attention_sinks == 1);
    vkattn_model_config_destroy(c);
}

/* A config the reader refuses: at parse time (layer < 0) or for one layer. */
typedef struct bad_row {
    const char *name;
    const char *json;
    int layer; /* -1: the parse fails */
    vkattn_status want;
    const char *needle;
} bad_row;

#define BASE "\"model_type\": \"llama\", \"hidden_size\": 64, \"num_attention_heads\": 4, \"num_hidden_layers\": 2, "

static const bad_row k_bad[] = {
    {"not json", "{\"model_type\": \"llama\",", -1, VKATTN_ERROR_FORMAT, "config.json"},
    {"an array", "[1, 2]", -1, VKATTN_ERROR_FORMAT, "config object"},
    {"trailing text", "{\"model_type\": \"llama\"} x", -1, VKATTN_ERROR_FORMAT, "after the end"},
    {"no model_type", "{\"hidden_size\": 64}", -1, VKATTN_ERROR_FORMAT, "no model_type"},
    {"unknown family", "{\"model_type\": \"falcon\"}", -1, VKATTN_ERROR_UNSUPPORTED, "'falcon' is not a family"},
    {"MLA", "{\"model_type\": \"deepseek_v3\", \"kv_lora_rank\": 512}", -1, VKATTN_ERROR_FORMAT,
     "kv_lora_rank: multi-head latent attention"},
    {"chunked attention", "{" BASE "\"attention_chunk_size\": 8192}", -1, VKATTN_ERROR_FORMAT,
     "attention_chunk_size: chunked attention"},
    {"M-RoPE", "{" BASE "\"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": [16, 24, 24]}}", -1,
     VKATTN_ERROR_FORMAT, "rope_scaling.mrope_section"},
    {"unknown rope field", "{" BASE "\"rope_scaling\": {\"rope_type\": \"linear\", \"factor\": 2, \"scale\": 3}}", -1,
     VKATTN_ERROR_FORMAT, "rope_scaling.scale is not a field"},
    {"unknown rope type", "{" BASE "\"rope_theta\": 10000, \"rope_scaling\": {\"type\": \"su\", \"factor\": 2}}", 0,
     VKATTN_ERROR_UNSUPPORTED, "rope_type 'su' is not supported"},
    {"unknown layer type", "{" BASE "\"layer_types\": [\"full_attention\", \"chunked_attention\"]}", -1,
     VKATTN_ERROR_FORMAT, "layer_types[1] is 'chunked_attention'"},
    {"negative heads", "{\"model_type\": \"llama\", \"num_attention_heads\": -4}", -1, VKATTN_ERROR_FORMAT,
     "num_attention_heads is negative"},
    {"fractional heads", "{\"model_type\": \"llama\", \"num_attention_heads\": 4.5}", -1, VKATTN_ERROR_FORMAT,
     "must be an integer"},
    {"a string for a number", "{\"model_type\": \"llama\", \"rope_theta\": \"10000\"}", -1, VKATTN_ERROR_FORMAT,
     "rope_theta must be a number"},
    {"overflowing number", "{\"model_type\": \"llama\", \"rope_theta\": 1e400}", -1, VKATTN_ERROR_FORMAT,
     "too large"},
    {"deep nesting", "{\"model_type\": \"llama\", \"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                     "[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
     -1, VKATTN_ERROR_FORMAT, "nested deeper"},
    {"no hidden_size", "{\"model_type\": \"llama\", \"hidden_size\": null, \"num_attention_heads\": 4}", 0,
     VKATTN_ERROR_FORMAT, "hidden_size is missing"},
    {"no such layer", "{" BASE "\"rope_theta\": 10000}", 2, VKATTN_ERROR_INVALID_ARGUMENT, "layer 2 does not exist"},
    {"kv heads not dividing", "{" BASE "\"num_key_value_heads\": 3, \"rope_theta\": 10000}", 0, VKATTN_ERROR_FORMAT,
     "num_key_value_heads 3 does not divide"},
    {"heads not dividing", "{\"model_type\": \"llama\", \"hidden_size\": 66, \"num_attention_heads\": 4, "
                           "\"num_hidden_layers\": 1, \"rope_theta\": 10000}",
     0, VKATTN_ERROR_FORMAT, "no head_dim"},
    {"no rope_theta", "{" BASE "\"head_dim\": 16, \"rope_theta\": null}", 0, VKATTN_ERROR_FORMAT, "no rope_theta"},
    {"layer_types length", "{" BASE "\"rope_theta\": 1, \"layer_types\": [\"full_attention\"]}", 0, VKATTN_ERROR_FORMAT,
     "layer_types has 1 entries for 2 layers"},
    {"sliding without a window", "{" BASE "\"rope_theta\": 1, \"layer_types\": [\"sliding_attention\", "
                                  "\"full_attention\"]}",
     0, VKATTN_ERROR_FORMAT, "sliding_window is not set"},
    {"llama3 without low_freq_factor", "{" BASE "\"rope_theta\": 10000, \"rope_scaling\": {\"rope_type\": \"llama3\", "
                                       "\"factor\": 8, \"high_freq_factor\": 4, "
                                       "\"original_max_position_embeddings\": 8192}}",
     0, VKATTN_ERROR_FORMAT, "low_freq_factor is missing"},
    {"yarn without original", "{" BASE "\"max_position_embeddings\": null, \"rope_scaling\": {\"rope_type\": \"yarn\", "
                              "\"factor\": 8}}",
     0, VKATTN_ERROR_FORMAT, "needs original_max_position_embeddings"},
    {"longrope lists", "{" BASE "\"rope_theta\": 10000, \"original_max_position_embeddings\": 4096, \"rope_scaling\": "
                       "{\"type\": \"longrope\", \"short_factor\": [1, 1], \"long_factor\": [1, 2]}}",
     0, VKATTN_ERROR_FORMAT, "takes one per rotated pair (8)"},
    {"partial rotary odd", "{" BASE "\"rope_theta\": 10000, \"partial_rotary_factor\": 0.33}", 0, VKATTN_ERROR_FORMAT,
     "gives 5 rotated dims"},
    /* a head of 1 dim: pairs = 0 made a longrope layer without its factor lists (found by fuzzing) */
    {"odd head rotated", "{\"model_type\": \"llama\", \"hidden_size\": 32, \"num_hidden_layers\": 1, \"rope_theta\": "
                         "10000, \"max_position_embeddings\": 64, \"rope_scaling\": {\"rope_type\": \"longrope\", "
                         "\"factor\": 2}}",
     0, VKATTN_ERROR_FORMAT, "head_dim 1 is odd"},
    {"gemma2 without its scalar", "{\"model_type\": \"gemma2\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
                                  "\"num_hidden_layers\": 2, \"query_pre_attn_scalar\": null}",
     1, VKATTN_ERROR_FORMAT, "needs query_pre_attn_scalar"},
    {"no_rope_layers elsewhere", "{" BASE "\"rope_theta\": 1, \"no_rope_layers\": [1, 0]}", 0, VKATTN_ERROR_UNSUPPORTED,
     "no_rope_layers in a llama config"},
    {"zero eps", "{\"model_type\": \"qwen3\", \"hidden_size\": 64, \"num_attention_heads\": 4, \"num_hidden_layers\": 1,"
                 " \"num_key_value_heads\": 4, \"rope_theta\": 1, \"rms_norm_eps\": 0}",
     0, VKATTN_ERROR_FORMAT, "rms_norm_eps 0 must be > 0"},
    /* EmbeddingGemma: every key visible, a window on both sides */
    {"bidirectional", "{\"model_type\": \"gemma3_text\", \"use_bidirectional_attention\": true}", -1,
     VKATTN_ERROR_FORMAT, "use_bidirectional_attention: bidirectional attention"},
    {"phi3 linear", "{\"model_type\": \"phi3\", \"rope_scaling\": {\"type\": \"linear\", \"factor\": 2}}", 0,
     VKATTN_ERROR_FORMAT, "'linear' in a phi3 config: its rope types are default and longrope"},
    {"nope interval 0", "{\"model_type\": \"smollm3\", \"no_rope_layer_interval\": 0}", 0, VKATTN_ERROR_FORMAT,
     "no_rope_layer_interval is 0"},
    /* Gemma 3's config class divides by it; every layer sliding was read before */
    {"pattern 0", "{\"model_type\": \"gemma3_text\", \"sliding_window_pattern\": 0}", 5, VKATTN_ERROR_FORMAT,
     "sliding_window_pattern is 0"},
};

static void test_refused(void)
{
    for (size_t i = 0; i < sizeof k_bad / sizeof k_bad[0]; i++) {
        const bad_row *r = &k_bad[i];
        vkattn_model_config *c = NULL;
        vkattn_error err = {0};
        vkattn_status status = vka_model_config_parse((const uint8_t *)r->json, strlen(r->json), &c, &err);
        if (r->layer >= 0 && status == VKATTN_OK) {
            vkattn_layer_desc d, before;
            memset(&d, 0x5A, sizeof d);
            before = d;
            vkattn_kv_cache_desc cache = {0};
            char prefix[64] = "kept";
            status = vkattn_model_config_layer(c, (uint32_t)r->layer, &d, &cache, prefix, sizeof prefix, &err);
            CHECK_MSG(memcmp(&d, &before, sizeof d) == 0 && cache.head_dim == 0 && strcmp(prefix, "kept") == 0,
                      "%s: a failed call changed its outputs", r->name);
        } else {
            CHECK_MSG(r->layer < 0 || status != VKATTN_OK, "%s", r->name);
            CHECK_MSG(status != VKATTN_OK || r->layer >= 0, "%s: parsed", r->name);
        }
        vkattn_model_config_destroy(c);
        CHECK_MSG(status == r->want, "%s: got %s, expected %s (%s)", r->name, vkattn_status_name(status),
                  vkattn_status_name(r->want), err.message);
        CHECK_MSG(strstr(err.message, r->needle) != NULL, "%s: message '%s' lacks '%s'", r->name, err.message, r->needle);
    }
    /* the public entry point names the file */
    vkattn_model_config *c = NULL;
    vkattn_error err = {0};
    CHECK_STATUS(vkattn_model_config_open("/nonexistent/config.json", &c, &err), VKATTN_ERROR_IO);
    CHECK(c == NULL && strstr(err.message, "/nonexistent/config.json"));
    CHECK_MSG(strstr(strstr(err.message, "config.json") + 1, "/nonexistent/config.json") == NULL, "the path twice: %s",
              err.message);
    CHECK_STATUS(vkattn_model_config_open(NULL, &c, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_model_config_layer(NULL, 0, NULL, NULL, NULL, 0, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    /* ... and so do a layer's refusals, where several models' configs may be open (an outside
     * consumer found them all starting "config.json:") */
    char dir[256], file[300];
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/vkattn_test_model_config_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    CHECK(mkdtemp(dir) != NULL);
    if (test_g.failures == 0) {
        snprintf(file, sizeof file, "%s/config.json", dir);
        FILE *out = fopen(file, "w");
        if (out) fputs("{" BASE "\"rope_theta\": 10000}", out), fclose(out);
        CHECK_STATUS(vkattn_model_config_open(file, &c, &err), VKATTN_OK);
        vkattn_layer_desc d;
        CHECK_STATUS(vkattn_model_config_layer(c, 5, &d, NULL, NULL, 0, &err), VKATTN_ERROR_INVALID_ARGUMENT);
        const char *after = err.message + strlen(file);
        CHECK_MSG(strncmp(err.message, file, strlen(file)) == 0 && strncmp(after, ": layer 5 does not exist", 24) == 0,
                  "%s", err.message);
        char small[8];
        CHECK_STATUS(vkattn_model_config_layer(c, 0, &d, NULL, small, sizeof small, &err), VKATTN_ERROR_INVALID_ARGUMENT);
        CHECK_MSG(strncmp(err.message, file, strlen(file)) == 0 && strstr(err.message, "prefix_cap 8"), "%s", err.message);
        vkattn_model_config_destroy(c);
        c = NULL;
        remove(file);
        rmdir(dir);
    }
    if ((c = parse("{" BASE "\"rope_theta\": 1}"))) {
        vkattn_layer_desc d;
        char small[8];
        CHECK_STATUS(vkattn_model_config_layer(c, 1, &d, NULL, small, sizeof small, &err), VKATTN_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(err.message, "prefix_cap 8 is too small"));
        vkattn_model_config_destroy(c);
    }
}

/* Numbers as JSON writes them, read without strtod (the locale's decimal point): exact where the
 * double is. */
static void test_numbers(void)
{
    static const struct {
        const char *text;
        double want;
    } rows[] = {
        {"500000.0", 500000.0}, {"1e-06", 1e-6}, {"1e-05", 1e-5}, {"0.1", 0.1}, {"-2.5E+3", -2500.0},
        {"1.0800000429153442", 1.0800000429153442}, {"0.000001", 1e-6}, {"123456789012345678901234", 1.2345678901234568e23},
        {"0", 0.0}, {"1E2", 100.0}, {"3.4028234663852886e38", 3.4028234663852886e38},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        vka_json j;
        vkattn_error err = {0};
        vka_json_init(&j, (const uint8_t *)rows[i].text, strlen(rows[i].text), "number", &err);
        double v = -1.0;
        CHECK_MSG(vka_json_number(&j, "x", &v) == VKATTN_OK && v == rows[i].want, "%s read as %.17g", rows[i].text, v);
    }
}

/* Splits a Markdown table row into trimmed cells; returns how many. */
static int table_cells(char *line, char *cells[], int max)
{
    int n = 0;
    char *p = strchr(line, '|');
    while (p && n < max) {
        char *next = strchr(p + 1, '|');
        if (!next) break;
        *next = '\0';
        char *c = p + 1;
        while (*c == ' ') c++;
        for (char *e = c + strlen(c); e > c && (e[-1] == ' ' || e[-1] == '\n'); e--) e[-1] = '\0';
        cells[n++] = c;
        p = next;
    }
    return n;
}

/* README's table of model families against the reader: each "runs" model_type is read and
 * describes a layer, each "refused" row's field is refused by name, each fixture folder exists
 * with that model_type, and every family the reader knows is in the table. */
static void test_readme_table(const char *readme, const char *fixtures)
{
    FILE *f = fopen(readme, "r");
    CHECK_MSG(f != NULL, "cannot read %s", readme);
    if (!f) return;
    char line[1024], listed[1024] = " ";
    int in_table = 0, rows = 0;
    while (fgets(line, sizeof line, f)) {
        if (!in_table) {
            in_table = strncmp(line, "| Family | model_type | vkattn |", 32) == 0;
            continue;
        }
        if (line[0] != '|') break;
        if (strncmp(line, "|---", 4) == 0) continue;
        char *cells[8];
        if (table_cells(line, cells, 8) != 5) {
            CHECK_MSG(0, "README: a model-family row without 5 cells: %s", line);
            continue;
        }
        rows++;
        const int runs = strcmp(cells[2], "runs") == 0;
        CHECK_MSG(runs || strcmp(cells[2], "refused") == 0, "README: %s is neither runs nor refused", cells[0]);
        for (char *type = strtok(cells[1], ", "); type; type = strtok(NULL, ", ")) {
            char json[512];
            if (runs) {
                snprintf(json, sizeof json,
                         "{\"model_type\": \"%s\", \"hidden_size\": 64, \"num_attention_heads\": 4, "
                         "\"num_key_value_heads\": 4, \"head_dim\": 16, \"num_hidden_layers\": 2, "
                         "\"rope_theta\": 10000, \"query_pre_attn_scalar\": 16, "
                         "\"rope_local_base_freq\": 10000}",
                         type);
                vkattn_model_config *c = parse(json);
                vkattn_layer_desc d;
                vkattn_error err = {0};
                CHECK_MSG(c && vkattn_model_config_layer(c, 0, &d, NULL, NULL, 0, &err) == VKATTN_OK,
                          "README says %s runs: %s", type, err.message);
                vkattn_model_config_destroy(c);
                snprintf(listed + strlen(listed), sizeof listed - strlen(listed), "%s ", type);
            } else {
                char field[64];
                snprintf(field, sizeof field, "%.*s", (int)strcspn(cells[3], ":"), cells[3]);
                snprintf(json, sizeof json, "{\"model_type\": \"%s\", \"%s\": 8192}", type, field);
                vkattn_model_config *c = NULL;
                vkattn_error err = {0};
                vkattn_status status = vka_model_config_parse((const uint8_t *)json, strlen(json), &c, &err);
                CHECK_MSG(status != VKATTN_OK && strstr(err.message, field),
                          "README says %s is refused for %s: %s", type, field, err.message);
                vkattn_model_config_destroy(c);
            }
        }
        if (strcmp(cells[4], "-") != 0) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s/config.json", fixtures, cells[4]);
            vkattn_model_config *c = NULL;
            vkattn_error err = {0};
            CHECK_MSG(runs && vkattn_model_config_open(path, &c, &err) == VKATTN_OK, "README's fixture %s: %s", path,
                      err.message);
            vkattn_model_info info;
            if (c && vkattn_model_config_get_info(c, &info) == VKATTN_OK)
                CHECK_MSG(strstr(listed, info.model_type) != NULL, "README: fixture %s is a %s config", cells[4],
                          info.model_type);
            vkattn_model_config_destroy(c);
        }
    }
    fclose(f);
    CHECK_MSG(rows >= 10, "README: the model-family table has %d rows", rows);
    /* the reader's families, as its refusal lists them, all in the table */
    vkattn_model_config *c = NULL;
    vkattn_error err = {0};
    const char *unknown = "{\"model_type\": \"none-such\"}";
    CHECK(vka_model_config_parse((const uint8_t *)unknown, strlen(unknown), &c, &err) == VKATTN_ERROR_UNSUPPORTED);
    char *known = strchr(err.message, '(');
    for (char *type = known ? strtok(known + 1, ", )") : NULL; type; type = strtok(NULL, ", )")) {
        char word[72];
        snprintf(word, sizeof word, " %s ", type);
        CHECK_MSG(strstr(listed, word) != NULL, "the reader knows %s but README's table does not list it", type);
    }
}

int main(int argc, char **argv)
{
    RUN_TEST(test_layers);
    RUN_TEST(test_refused);
    RUN_TEST(test_numbers);
    if (argc > 2) RUN_TEST_WITH(test_readme_table, argv[1], argv[2]);
    else CHECK_MSG(0, "usage: %s README.md FIXTURE_DIR", argv[0]);
    return test_finish();
}
