/* vkattn run --decode-from P: the causal forward of a plain run, fed through a paged KV cache as a
 * decoder feeds it. Each batch item of the query (B, L, E) is one sequence of the cache; the first
 * P tokens of every sequence go in as one prefill forward, then each later position as one forward
 * of a token per sequence. The output is the (B, L, E) of the plain causal run, and must match it.
 *
 *   run_decode_options d = {0};        // filled by cli_parse through run_decode_rows
 *   if (run_decode_check_options("run", &fwd, &d, attn_weights)) return 2;   // before loading
 *   ... forward_inputs_load ...
 *   if ((rc = run_decode_check_inputs("run", &in, &d))) ...                   // P against L, the layer
 *   if ((rc = run_decode("run", &fwd, &in, &d, out, &tolerance_dtype))) ...
 */
#ifndef VKATTN_RUN_DECODE_H
#define VKATTN_RUN_DECODE_H

#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "forward_inputs.h"

typedef struct run_decode_options {
    uint32_t from;            /* --decode-from P: the tokens of the prefill, 1 .. L */
    int given;                /* --decode-from appeared */
    vkattn_dtype cache_dtype; /* --kv-cache-dtype f32|f16|q8_0|q4_0; default f32 */
    int cache_dtype_given;
} run_decode_options;

/* The two options as a group of run's table (cli.h). */
extern const cli_option run_decode_rows[];
extern const size_t run_decode_count;

/* Why the other options cannot run with --decode-from (the first reason found), or NULL when they
 * can: it needs --causal, and takes no --key/--value, other masks, --attn-weights, --head-mask,
 * --add-zero-attn, --cpu, --path unfused or --trace; P must be >= 1; --kv-cache-dtype needs it. */
const char *run_decode_refusal(const forward_options *o, const run_decode_options *d, int attn_weights);

/* run_decode_refusal as a message: prints "vkattn <command>: <reason>" and returns 2, else 0. */
int run_decode_check_options(const char *command, const forward_options *o, const run_decode_options *d,
                             int attn_weights);

/* With the inputs loaded: P <= L, and a layer without bias_k/bias_v (keys a cache does not hold).
 * Returns 0, or 2 after a message. */
int run_decode_check_inputs(const char *command, const forward_inputs *in, const run_decode_options *d);

/* Runs the decode on o->device: opens a context and the layer (printing the device), a KV cache of
 * d->cache_dtype that fits the query exactly (B sequences, blocks of 16, B x ceil(L / 16) blocks),
 * the prefill and the L - P steps, then prints how many tokens were prefilled and decoded and the
 * time per step. Writes `out` (B, L, E) and sets *tolerance to the dtype --check's tolerance is
 * for: F16 when the layer's storage or the cache is f16 (both round K and V to fp16), else F32.
 * Returns 0 or an exit code; nothing stays open. */
int run_decode(const char *command, const forward_options *o, const forward_inputs *in, const run_decode_options *d,
               float *out, vkattn_dtype *tolerance);

#endif
