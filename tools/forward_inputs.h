/* The inputs of a forward on files, shared by the subcommands that run one (run, heatmap, ...):
 * the options that name them, loading the safetensors weights and .npy arrays, checking their shapes
 * against each other, the vkattn_host_forward_desc they make, running it, and which keys the masks
 * exclude.
 *
 *   forward_options o = {0};          // filled by cli_parse through FORWARD_GROUP(o)
 *   forward_inputs in = {0};
 *   if ((rc = forward_inputs_load("run", &o, &in))) goto done;
 *   vkattn_host_forward_desc f = in.desc;  f.output = ...;  f.attn_weights = ...;
 *   if ((rc = forward_inputs_run("run", &o, &in, &f, NULL))) goto done;
 * done:
 *   forward_inputs_free(&in);
 */
#ifndef VKATTN_FORWARD_INPUTS_H
#define VKATTN_FORWARD_INPUTS_H

#include <stdint.h>
#include <stdio.h>

#include "cli.h"

typedef struct forward_options {
    const char *weights;                      /* --weights W.safetensors (required) */
    const char *prefix;                       /* --prefix STR: the layer's name prefix in the file */
    const char *config;                       /* --config config.json: the layer's settings from the model's config */
    uint32_t layer;                           /* --layer N: which layer of the config (and its prefix) */
    int layer_given;
    uint32_t heads;                           /* --heads H (required without --config) */
    uint32_t kv_heads;                        /* --kv-heads H_kv: checked against the weights; 0 = not given */
    double rope_theta;                        /* --rope-theta (0 = no rotary positions) */
    uint32_t rope_dim;                        /* --rope-dim (0 = the head dim) */
    vkattn_rope_style rope_style;             /* --rope-style */
    int rope_style_given;
    uint32_t window;                          /* --sliding-window W (0 = none) */
    double softcap;                           /* --softcap C (0 = none) */
    int alibi;                                /* --alibi */
    const char *sinks;                        /* --sinks s.npy: float32 (H), a sink logit per head */
    const char *query, *key, *value;          /* --query (required), --key, --value (.npy) */
    const char *key_padding_mask, *valid_lens, *attn_mask;
    const char *head_mask;                    /* --head-mask m.npy: bool (H), true = keep the head */
    int causal, add_zero_attn;                /* --causal, --add-zero-attn */
    const char *device;                       /* --device N|NAME; NULL = VKATTN_DEVICE or the default */
    vkattn_precision precision;               /* --precision default|f32 */
    vkattn_path path;                         /* --path auto|fused|unfused; default auto */
    int path_given;                           /* --path appeared */
    int cpu;                                  /* --cpu: the CPU reference instead of Vulkan */
    int trace;                                /* --trace: print the plan before running it */
} forward_options;

/* The options above as a group of a command's table (cli.h), and what --help adds about them. */
extern const cli_option forward_option_rows[];
extern const size_t forward_option_count;
#define FORWARD_GROUP(o) {"forward inputs", forward_option_rows, forward_option_count, &(o)}
#define FORWARD_NOTES                                                                                       \
    "The arrays are .npy files (numpy.save; float16 and float64 load as float32, int64 as int32). Positions\n" \
    "are the token indices; with L != S the queries sit at the last L of the S key positions.\n"

/* The loaded inputs, released together by forward_inputs_free. */
typedef struct forward_inputs {
    vkattn_weight_file *weights;
    vkattn_model_config *config;  /* --config, with its layer's description and weights' prefix */
    vkattn_layer_desc from_config;
    char prefix[64];
    vkattn_array query, key, value, key_padding_mask, valid_lens, attn_mask, head_mask, sinks;
    vkattn_weights w;             /* the layer's weights: the file's, with the --sinks */
    vkattn_layer_desc layer;      /* from the weight file and --config, --heads, --add-zero-attn and --head-mask;
                                     storage is the caller's (F32 unless it sets it) */
    int batched;                  /* 0: the query was (L,E), an unbatched query: B = 1 */
    uint32_t B, L, S, E, H;
    uint32_t S_ext;               /* S' = S + add_bias_kv + add_zero_attn */
    vkattn_host_forward_desc desc; /* every input set; output, attn_weights, average_weights and
                                      path are for the caller (path = the --path option) */
} forward_inputs;

/* When the weights are not a plain nn.MultiheadAttention file (a prefix, Hugging Face names or
 * grouped-query widths), prints one line saying which layer was read and how much of the file. */
void forward_inputs_print_weights(const forward_inputs *in);

/* Loads and checks everything `o` names. Returns 0, or an exit code after printing a message
 * ("vkattn <command>: ..."). `in` must start zeroed; free it with forward_inputs_free either way. */
int forward_inputs_load(const char *command, const forward_options *o, forward_inputs *in);
void forward_inputs_free(forward_inputs *in);

/* Prints "shapes: query (B, L, E), key/value ..., heads H (head dim D)[, causal][, bias_kv][, f16 storage]". */
void forward_inputs_print_shapes(const forward_inputs *in, const forward_options *o);

/* Opens a context on o->device and creates the layer of `in` (printing the device, and a note when
 * in->layer.storage asked for F16 and the device fell back to F32), or with o->cpu prints that the
 * CPU reference path runs and leaves both NULL. On failure nothing stays open.
 * Returns 0 or an exit code. */
int forward_inputs_open(const char *command, const forward_options *o, const forward_inputs *in,
                        vkattn_context **ctx, vkattn_layer **layer);

/* Runs `f` (in->desc with the caller's outputs) on the CPU reference when o->cpu, else on a fresh
 * context on o->device. Prints the device, then "path: NAME, T ms". Sets *storage (may be NULL) to
 * the storage dtype the layer really used (F32 after a fall-back from F16, and on the CPU path,
 * which computes in double whatever the storage). Returns 0 or an exit code. */
int forward_inputs_run(const char *command, const forward_options *o, const forward_inputs *in,
                       const vkattn_host_forward_desc *f, vkattn_dtype *storage);

/* --check-finite, in forward order: the float inputs (query, key, value, and a float attn_mask's NaN
 * or +inf; its -inf means "masked"), then each weight tensor by name. Prints a line per tensor that
 * holds any (cli_report_nonfinite); returns the total. */
size_t forward_inputs_report_nonfinite(const forward_inputs *in);

/* --check-finite with fp16 storage: the finite weights fp16 rounds to infinity (|x| >= 65520) in the
 * tensors the layer stores as fp16 (the library refuses such a layer with VKATTN_ERROR_NON_FINITE).
 * Prints a line per tensor that holds any; returns the total. */
size_t forward_inputs_report_fp16_overflow(const forward_inputs *in);

/* 1 if the masks exclude key j (0 <= j < S') for query i of batch item b in head h: causal
 * (j > i), the sliding window (i + S - L - j >= W), the key padding mask, valid lengths
 * (j >= valid length), a bool attn_mask that is true or a float one that is -inf. The keys appended
 * by add_bias_kv and add_zero_attn are never excluded. */
int forward_inputs_masked(const forward_inputs *in, uint32_t b, uint32_t h, uint32_t i, uint32_t j);

#endif
