/* vkattn run --decode-from P: a causal forward through a paged KV cache (see run_decode.h). */
#include "run_decode.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

enum { DECODE_BLOCK_SIZE = 16 };

static const int k_cache_dtypes[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};

const cli_option run_decode_rows[] = {
    /* 0 parses, so that its refusal can say why (run_decode_refusal). */
    {"--decode-from", "P", "(with --causal) run the forward as a decoder does, through a KV cache on the device: "
     "each batch item is a sequence; its first P tokens (1 to L) go in as one prefill, the rest one token at a "
     "time (all sequences in each step). The output is the plain causal run's (B, L, E) and matches it; --check "
     "compares it with the CPU reference of the plain causal forward. It prints the tokens prefilled and decoded "
     "and the time per decode step. It takes no --key, --value, other masks, --attn-weights, --head-mask, "
     "--add-zero-attn, bias_k/bias_v weights, --cpu (a plain --causal --cpu run gives the same output), --path "
     "unfused or --trace", CLI_U32, offsetof(run_decode_options, from), 0,
     .given = CLI_GIVEN(run_decode_options, given)},
    {"--kv-cache-dtype", "f32|f16|q8_0|q4_0", "(with --decode-from) what the KV cache stores; q8_0 and q4_0 are "
     "ggml's blocks of 32 values (8 and 4 bits each, and an fp16 scale per block), quantized as tokens are appended, "
     "for a head dim that is a multiple of 32. --check applies the tolerance of what the cache stores: f16's, or "
     "for q8_0 and q4_0 the error the format allows: max-abs 5e-2 and 5e-1 x max(1, max|ref|), NMSE 5e-4 and 5e-2",
     CLI_CHOICE, offsetof(run_decode_options, cache_dtype), .values = k_cache_dtypes,
     .given = CLI_GIVEN(run_decode_options, cache_dtype_given), .what = "what the KV cache stores"},
};
const size_t run_decode_count = CLI_COUNT(run_decode_rows);

static int is_block_format(vkattn_dtype d) { return d == VKATTN_DTYPE_Q8_0 || d == VKATTN_DTYPE_Q4_0; }

const char *run_decode_refusal(const forward_options *o, const run_decode_options *d, int attn_weights)
{
    if (!d->given)
        return d->cache_dtype_given ? "--kv-cache-dtype is what the KV cache of --decode-from stores: it needs --decode-from"
                                    : NULL;
    if (d->from == 0)
        return "--decode-from 0: the prefill takes at least the first token (--decode-from 1 decodes every later token "
               "one at a time)";
    if (!o->causal)
        return "--decode-from needs --causal: a decoder's token attends to the tokens before it, which is the causal "
               "forward";
    if (o->key || o->value)
        return "--decode-from is self-attention: the KV cache holds the query's own keys and values, so it takes no "
               "--key or --value";
    if (o->key_padding_mask || o->valid_lens || o->attn_mask)
        return "--decode-from takes no --key-padding-mask, --valid-lens or --attn-mask: the only mask a decode applies "
               "is --causal";
    if (attn_weights) return "--decode-from returns no --attn-weights: the cached forward computes none";
    if (o->head_mask) return "--decode-from computes every head: it takes no --head-mask";
    if (o->add_zero_attn) return "--decode-from takes no --add-zero-attn: the KV cache holds no appended keys";
    if (o->cpu)
        return "--decode-from runs on the device; the CPU reference has no KV cache (a plain --causal --cpu run gives "
               "the same output, and --check compares the decode with it)";
    if (o->path_given && o->path == VKATTN_PATH_UNFUSED)
        return "--decode-from runs the cached forward's own kernels: it takes no --path unfused";
    if (o->trace) return "--trace prints a plain forward's plan; --decode-from runs cached forwards, which it cannot show";
    return NULL;
}

int run_decode_check_options(const char *command, const forward_options *o, const run_decode_options *d,
                             int attn_weights)
{
    const char *why = run_decode_refusal(o, d, attn_weights);
    if (!why) return 0;
    fprintf(stderr, "vkattn %s: %s\n", command, why);
    return 2;
}

int run_decode_check_inputs(const char *command, const forward_inputs *in, const run_decode_options *d)
{
    if (d->from > in->L) {
        fprintf(stderr, "vkattn %s: --decode-from %u is beyond the query's %u tokens (P is 1 to %u; P = %u prefills them "
                        "all)\n", command, d->from, in->L, in->L, in->L);
        return 2;
    }
    uint32_t D = in->layer.num_heads ? in->layer.embed_dim / in->layer.num_heads : 0;
    if (is_block_format(d->cache_dtype) && D % 32 != 0) {
        fprintf(stderr, "vkattn %s: --kv-cache-dtype %s stores each head's row in blocks of 32 values: the layer's "
                        "head dim is %u (use f16 or f32)\n", command, vkattn_dtype_name(d->cache_dtype), D);
        return 2;
    }
    if (in->layer.add_bias_kv) {
        fprintf(stderr, "vkattn %s: --decode-from: the weights hold bias_k/bias_v (add_bias_kv), keys a KV cache does "
                        "not hold\n", command);
        return 2;
    }
    return 0;
}

/* Tokens [first, first + n) of every sequence of (B, L, E) `x`, sequence after sequence, into (B * n, E)
 * `rows` (to_rows), or back from it. */
static void copy_tokens(float *x, float *rows, uint32_t B, uint32_t L, uint32_t E, uint32_t first, uint32_t n,
                        int to_rows)
{
    const size_t bytes = (size_t)n * E * sizeof(float);
    for (uint32_t b = 0; b < B; b++) {
        float *seq = x + ((size_t)b * L + first) * E, *r = rows + (size_t)b * n * E;
        if (to_rows) memcpy(r, seq, bytes);
        else memcpy(seq, r, bytes);
    }
}

/* One cached forward of n tokens per sequence, from the query's tokens at `first` into `out`. */
static vkattn_status feed(vkattn_layer *layer, vkattn_kv_cache *cache, const forward_inputs *in, float *out,
                          float *rows_in, float *rows_out, uint32_t *news, uint32_t first, uint32_t n)
{
    for (uint32_t b = 0; b < in->B; b++) news[b] = n;
    copy_tokens(in->query.data, rows_in, in->B, in->L, in->E, first, n, 1);
    vkattn_cached_forward_desc f = {.batch = in->B, .new_tokens = news, .query = rows_in, .output = rows_out};
    vkattn_status status = vkattn_forward_cached(layer, cache, &f);
    if (status == VKATTN_OK) copy_tokens(out, rows_out, in->B, in->L, in->E, first, n, 0);
    return status;
}

static vkattn_kv_cache *cache_create(const char *command, vkattn_context *ctx, const vkattn_layer *layer,
                                     const forward_inputs *in, vkattn_dtype dtype, int *rc)
{
    vkattn_layer_desc l;
    vkattn_layer_get_desc(layer, &l);
    /* Exactly the blocks the query needs: every sequence grows to L tokens. */
    vkattn_kv_cache_desc cd = {.num_kv_heads = l.num_kv_heads, .head_dim = l.embed_dim / l.num_heads,
                               .block_size = DECODE_BLOCK_SIZE, .max_sequences = in->B, .dtype = dtype,
                               .num_blocks = in->B * ((in->L + DECODE_BLOCK_SIZE - 1) / DECODE_BLOCK_SIZE)};
    vkattn_kv_cache *cache = NULL;
    vkattn_status status = vkattn_kv_cache_create(ctx, &cd, &cache);
    if (status != VKATTN_OK) *rc = cli_fail(command, "creating the KV cache", status, vkattn_context_last_error(ctx));
    return cache;
}

/* The prefill, then the steps; prints the line of what ran and how long it took. */
static int decode_all(const char *command, vkattn_context *ctx, vkattn_layer *layer, vkattn_kv_cache *cache,
                      const forward_inputs *in, const run_decode_options *d, float *out)
{
    const uint32_t B = in->B, L = in->L, P = d->from, steps = L - P;
    float *rows_in = malloc((size_t)B * P * in->E * sizeof(float));
    float *rows_out = malloc((size_t)B * P * in->E * sizeof(float));
    uint32_t *news = malloc(B * sizeof *news);
    double *step_ms = malloc((steps ? steps : 1) * sizeof *step_ms);
    int rc = 0;
    if (!rows_in || !rows_out || !news || !step_ms) {
        rc = cli_fail(command, "allocating the decode's buffers", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto done;
    }
    double t0 = cli_now();
    vkattn_status status = feed(layer, cache, in, out, rows_in, rows_out, news, 0, P);
    double prefill_ms = (cli_now() - t0) * 1e3;
    for (uint32_t t = P; status == VKATTN_OK && t < L; t++) {
        t0 = cli_now();
        status = feed(layer, cache, in, out, rows_in, rows_out, news, t, 1);
        step_ms[t - P] = (cli_now() - t0) * 1e3;
    }
    if (status != VKATTN_OK) {
        rc = cli_fail(command, "a cached forward", status, vkattn_context_last_error(ctx));
        goto done;
    }
    printf("decode: %u sequence%s, each %u token%s prefilled in one forward (%.3f ms, includes compiling the "
           "kernels) and %u decoded one at a time",
           B, B == 1 ? "" : "s", P, P == 1 ? "" : "s", prefill_ms, steps);
    if (steps) {
        double median = cli_median(step_ms, steps);
        printf(": %.3f ms per step (median; min %.3f)", median, step_ms[0]);
    }
    vkattn_kv_cache_info info;
    if (vkattn_kv_cache_get_info(cache, &info) == VKATTN_OK)
        printf("; %s KV cache of %u blocks of %u tokens (%u bytes per token)\n", vkattn_dtype_name(info.desc.dtype),
               info.desc.num_blocks, info.desc.block_size, info.bytes_per_token);
    else
        printf("\n");
done:
    free(rows_in), free(rows_out), free(news), free(step_ms);
    return rc;
}

int run_decode(const char *command, const forward_options *o, const forward_inputs *in, const run_decode_options *d,
               float *out, vkattn_dtype *tolerance)
{
    vkattn_context *ctx;
    vkattn_layer *layer;
    int rc = forward_inputs_open(command, o, in, &ctx, &layer);
    if (rc) return rc;
    vkattn_kv_cache *cache = cache_create(command, ctx, layer, in, d->cache_dtype, &rc);
    if (cache) rc = decode_all(command, ctx, layer, cache, in, d, out);
    vkattn_layer_desc l;
    vkattn_layer_get_desc(layer, &l);
    /* the larger error rules: a block format's, then fp16's */
    *tolerance = is_block_format(d->cache_dtype)                                            ? d->cache_dtype
                 : l.storage == VKATTN_DTYPE_F16 || d->cache_dtype == VKATTN_DTYPE_F16 ? VKATTN_DTYPE_F16
                                                                                      : VKATTN_DTYPE_F32;
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    vkattn_context_destroy(ctx);
    return rc;
}
