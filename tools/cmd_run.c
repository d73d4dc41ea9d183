/* vkattn run: a forward on .npy inputs with safetensors weights, written to .npy.
 *
 * --decode-from P runs the causal forward as a decoder feeds it, through a paged KV cache: each
 * batch item of the query (B, L, E) is one sequence of the cache; the first P tokens of every
 * sequence go in as one prefill forward, then each later position as one forward of a token per
 * sequence. Its output is the plain causal run's (B, L, E), and must match it. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "forward_inputs.h"

enum { DECODE_BLOCK_SIZE = 16 };

typedef struct run_options {
    forward_options fwd;
    const char *out, *attn_weights;
    int average_weights, check, check_finite;
    vkattn_dtype storage;     /* --dtype f32|f16 */
    uint32_t decode_from;     /* --decode-from P: the tokens of the prefill, 1 .. L */
    int decode;               /* --decode-from appeared */
    vkattn_dtype cache_dtype; /* --kv-cache-dtype; default f32 */
    int cache_dtype_given;
} run_options;

#define R(field) offsetof(run_options, field)
static const cli_option k_run_rows[] = {
    {"--out", "out.npy", "the output (B, L, E), or (L, E) for an (L, E) query", CLI_TEXT, R(out), .flags = CLI_REQUIRED},
    {"--attn-weights", "a.npy", "also the attention weights (B, H, L, S') (the unfused path computes them)", CLI_TEXT,
     R(attn_weights)},
    {"--average-weights", NULL, "the attention weights averaged over heads: (B, L, S')", CLI_FLAG, R(average_weights),
     .needs = "--attn-weights"},
    CLI_STORAGE_OPTION(run_options, storage),
    {"--check", NULL, "also run the CPU reference path and compare: OK within max-abs 1e-4 x max(1, max|ref|) and NMSE "
     "1e-9 (f16 storage: 1e-2 x max(1, max|ref|) and 2e-6), and no non-finite value that differs; else MISMATCH",
     CLI_FLAG, R(check)},
    {"--check-finite", NULL, "report NaN/inf where they first appear, in forward order: inputs, weights, weights fp16 "
     "storage overflows (with --dtype f16), outputs; and when only the outputs hold them, whether the CPU reference "
     "path does too", CLI_FLAG, R(check_finite)},
};

static const int k_cache_dtypes[] = {VKATTN_DTYPE_F32, VKATTN_DTYPE_F16, VKATTN_DTYPE_Q8_0, VKATTN_DTYPE_Q4_0};

static const cli_option k_decode_rows[] = {
    /* 0 parses, so that its refusal can say why (decode_refusal). */
    {"--decode-from", "P", "(with --causal) run the forward as a decoder does, through a KV cache on the device: "
     "each batch item is a sequence; its first P tokens (1 to L) go in as one prefill, the rest one token at a "
     "time (all sequences in each step). The output is the plain causal run's (B, L, E) and matches it; --check "
     "compares it with the CPU reference of the plain causal forward. It prints the tokens prefilled and decoded "
     "and the time per decode step. It takes no --key, --value, other masks, --attn-weights, --head-mask, "
     "--add-zero-attn, bias_k/bias_v weights, --cpu (a plain --causal --cpu run gives the same output) or --path "
     "unfused; with --trace it prints the prefill's plan and the first decoding step's",
     CLI_U32, R(decode_from), 0, .given = CLI_GIVEN(run_options, decode)},
    {"--kv-cache-dtype", "f32|f16|q8_0|q4_0", "(with --decode-from) what the KV cache stores; q8_0 and q4_0 are "
     "ggml's blocks of 32 values (8 and 4 bits each, and an fp16 scale per block), quantized as tokens are appended, "
     "for a head dim that is a multiple of 32. --check applies the tolerance of what the cache stores: f16's, or "
     "for q8_0 and q4_0 the error the format allows: max-abs 5e-2 and 5e-1 x max(1, max|ref|), NMSE 5e-4 and 5e-2",
     CLI_CHOICE, R(cache_dtype), .values = k_cache_dtypes,
     .given = CLI_GIVEN(run_options, cache_dtype_given), .what = "what the KV cache stores"},
};

static const char k_run_notes[] = FORWARD_NOTES
    CLI_EXIT_HELP "3 --check-finite: an output holds NaN or inf; 4 --check: MISMATCH, the result disagrees\n"
    "with the CPU reference path (4 wins over 3).\n"
    "The outputs are checked before anything runs, and written in every case but 1 and 2.\n";

static int is_block_format(vkattn_dtype d) { return d == VKATTN_DTYPE_Q8_0 || d == VKATTN_DTYPE_Q4_0; }

/* Why the other options cannot run with --decode-from (the first reason found), or NULL when they can. */
static const char *decode_refusal(const run_options *o)
{
    const forward_options *f = &o->fwd;
    if (!o->decode)
        return o->cache_dtype_given ? "--kv-cache-dtype is what the KV cache of --decode-from stores: it needs --decode-from"
                                    : NULL;
    if (o->decode_from == 0)
        return "--decode-from 0: the prefill takes at least the first token (--decode-from 1 decodes every later token "
               "one at a time)";
    if (!f->causal)
        return "--decode-from needs --causal: a decoder's token attends to the tokens before it, which is the causal "
               "forward";
    if (f->key || f->value)
        return "--decode-from is self-attention: the KV cache holds the query's own keys and values, so it takes no "
               "--key or --value";
    if (f->key_padding_mask || f->valid_lens || f->attn_mask)
        return "--decode-from takes no --key-padding-mask, --valid-lens or --attn-mask: the only mask a decode applies "
               "is --causal";
    if (o->attn_weights) return "--decode-from returns no --attn-weights: the cached forward computes none";
    if (f->head_mask) return "--decode-from computes every head: it takes no --head-mask";
    if (f->add_zero_attn) return "--decode-from takes no --add-zero-attn: the KV cache holds no appended keys";
    if (f->cpu)
        return "--decode-from runs on the device; the CPU reference has no KV cache (a plain --causal --cpu run gives "
               "the same output, and --check compares the decode with it)";
    if (f->path_given && f->path == VKATTN_PATH_UNFUSED)
        return "--decode-from runs the cached forward's own kernels: it takes no --path unfused";
    return NULL;
}

static int parse(int argc, char **argv, run_options *o)
{
    cli_command c = {"run", NULL, k_run_notes,
                     {FORWARD_GROUP(o->fwd), {"run", k_run_rows, CLI_COUNT(k_run_rows), o},
                      {"decoding through a KV cache", k_decode_rows, CLI_COUNT(k_decode_rows), o}}};
    int rc = cli_parse(&c, argc, argv);
    const char *why = rc ? NULL : decode_refusal(o);
    if (!rc && !why && o->attn_weights && o->fwd.path_given && o->fwd.path == VKATTN_PATH_FUSED)
        why = "--path fused returns no attention weights: --attn-weights needs the unfused path (--path unfused, or "
              "auto, which takes it)";
    if (why) fprintf(stderr, "vkattn run: %s\n", why);
    return why ? CLI_EXIT_USAGE : rc;
}

/* The shapes of the two outputs as written: (B, L, E) and (B, H, L, S') or (B, L, S') averaged,
 * without B for an unbatched query, as PyTorch returns them. */
typedef struct output_shapes {
    uint32_t out_rank, out_dims[3];
    uint32_t weights_rank, weights_dims[4];
    size_t out_elems, weight_elems;
} output_shapes;

static output_shapes shapes_of(const run_options *o, const forward_inputs *in)
{
    output_shapes s = {0};
    uint32_t out[3] = {in->B, in->L, in->E};
    uint32_t w4[4] = {in->B, in->H, in->L, in->S_ext}, w3[3] = {in->B, in->L, in->S_ext};
    int skip = !in->batched; /* unbatched: drop B */
    s.out_rank = 3 - skip;
    memcpy(s.out_dims, out + skip, s.out_rank * sizeof *out);
    s.weights_rank = (o->average_weights ? 3 : 4) - skip;
    memcpy(s.weights_dims, (o->average_weights ? w3 : w4) + skip, s.weights_rank * sizeof *out);
    s.out_elems = (size_t)in->B * in->L * in->E;
    s.weight_elems = (size_t)in->B * in->L * in->S_ext * (o->average_weights ? 1 : in->H);
    return s;
}

static int write_array(const char *path, const char *what, uint32_t rank, const uint32_t *dims, void *data,
                       size_t elems)
{
    vkattn_array a = {.dtype = VKATTN_DTYPE_F32, .rank = rank, .data = data, .bytes = elems * sizeof(float)};
    memcpy(a.dims, dims, rank * sizeof *dims);
    vkattn_error error = {0};
    vkattn_status status = vkattn_npy_write(path, &a, &error);
    if (status != VKATTN_OK) return cli_fail("run", what, status, error.message);
    printf("wrote %s\n", path);
    return 0;
}

static int write_outputs(const run_options *o, const output_shapes *s, float *out, float *weights)
{
    int rc = write_array(o->out, "writing the output", s->out_rank, s->out_dims, out, s->out_elems);
    if (rc || !weights) return rc;
    return write_array(o->attn_weights, "writing the attention weights", s->weights_rank, s->weights_dims, weights,
                       s->weight_elems);
}

/* The CPU reference path's outputs for the same forward, computed once for --check and
 * --check-finite. */
typedef struct reference_outputs {
    float *out, *weights;
} reference_outputs;

static int reference_run(const forward_inputs *in, const vkattn_host_forward_desc *f, const output_shapes *s,
                         reference_outputs *ref)
{
    if (ref->out) return 0; /* computed already; after a failure the run ends, and cmd_run frees them */
    ref->out = malloc(s->out_elems * sizeof(float));
    ref->weights = f->attn_weights ? malloc(s->weight_elems * sizeof(float)) : NULL;
    if (!ref->out || (f->attn_weights && !ref->weights))
        return cli_fail("run", "allocating the CPU reference outputs", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
    vkattn_host_forward_desc r = *f;
    r.output = ref->out;
    r.attn_weights = ref->weights;
    vkattn_layer_desc layer = in->layer;
    layer.storage = VKATTN_DTYPE_F32; /* the reference computes in double either way */
    vkattn_error error = {0};
    vkattn_status status = vkattn_reference_forward(&layer, &in->w, &r, &error);
    return status ? cli_fail("run", "the CPU reference forward", status, error.message) : 0;
}

/* --check: what ran against the CPU reference path, under the tolerance of the storage that ran.
 * Sets *ok; returns 0 or an exit code. */
static int check_against_cpu(const forward_inputs *in, const vkattn_host_forward_desc *f, const output_shapes *s,
                             vkattn_dtype storage, reference_outputs *ref, int *ok)
{
    int rc = reference_run(in, f, s, ref);
    if (rc) return rc;
    const compare_tolerance *t = compare_tolerance_for(storage);
    *ok = 1;
    if (f->attn_weights)
        *ok &= cli_check_report("attention weights", f->attn_weights, ref->weights, s->weights_rank,
                                s->weights_dims, t);
    *ok &= cli_check_report("output", f->output, ref->out, s->out_rank, s->out_dims, t);
    if (*ok) printf("check: OK\n");
    else printf("check: MISMATCH: the result disagrees with the CPU reference path (exit status %d)\n",
                CLI_EXIT_MISMATCH);
    return 0;
}

/* --check-finite after the forward: the outputs, and when only they hold non-finite values, whether
 * the CPU reference path's do too. Sets *bad to their count; returns 0 or an exit code. */
static int check_outputs_finite(const run_options *o, const forward_inputs *in, const vkattn_host_forward_desc *f,
                                const output_shapes *s, vkattn_dtype storage, size_t inputs_bad,
                                reference_outputs *ref, size_t *bad)
{
    *bad = cli_report_nonfinite("attention weights", f->attn_weights, s->weights_rank, s->weights_dims, 0);
    *bad += cli_report_nonfinite("output", f->output, s->out_rank, s->out_dims, 0);
    if (!*bad) {
        printf("check-finite: outputs are finite\n");
        return 0;
    }
    if (inputs_bad) return 0; /* the lines above say where they came from */
    printf("check-finite: the outputs hold non-finite values although every input and weight is finite\n");
    if (o->fwd.cpu) {
        printf("check-finite: this was the CPU reference path (double accumulation): the attention itself "
               "overflows fp32 for these inputs and weights\n");
        return 0;
    }
    int rc = reference_run(in, f, s, ref);
    if (rc) return rc;
    cli_nonfinite c = cli_count_nonfinite(ref->out, s->out_elems, 0);
    if (c.total)
        printf("check-finite: the CPU reference path (double accumulation) gives %zu non-finite outputs too: the "
               "attention itself overflows fp32 for these inputs and weights\n",
               c.total);
    else if (storage == VKATTN_DTYPE_F16)
        printf("check-finite: the CPU reference path's outputs are finite: only the fp16 storage overflowed (an "
               "activation beyond 65504); run with --dtype f32\n");
    else
        printf("check-finite: the CPU reference path's outputs are finite: an fp32 intermediate overflowed on the "
               "device, or the device result is wrong (--check compares the two)\n");
    return 0;
}

/* With the inputs loaded: P <= L, a head dim the cache's format can hold, and a layer without
 * bias_k/bias_v (keys a cache does not hold). 0, or 2 after a message. */
static int check_decode_inputs(const forward_inputs *in, const run_options *d)
{
    if (d->decode_from > in->L) {
        fprintf(stderr, "vkattn run: --decode-from %u is beyond the query's %u tokens (P is 1 to %u; P = %u prefills them "
                        "all)\n", d->decode_from, in->L, in->L, in->L);
        return 2;
    }
    const uint32_t D = in->layer.head_dim ? in->layer.head_dim
                       : in->layer.num_heads ? in->layer.embed_dim / in->layer.num_heads : 0;
    if (is_block_format(d->cache_dtype) && D % 32 != 0) {
        fprintf(stderr, "vkattn run: --kv-cache-dtype %s stores each head's row in blocks of 32 values: the layer's "
                        "head dim is %u (use f16 or f32)\n", vkattn_dtype_name(d->cache_dtype), D);
        return 2;
    }
    if (in->layer.add_bias_kv) {
        fprintf(stderr, "vkattn run: --decode-from: the weights hold bias_k/bias_v (add_bias_kv), keys a KV cache does "
                        "not hold\n");
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

/* The cached forward of n tokens per sequence from the query's tokens at `first`: its rows copied
 * into `rows_in`, its output to `rows_out`. */
static vkattn_cached_forward_desc decode_rows(const forward_inputs *in, float *rows_in, float *rows_out, uint32_t *news,
                                              uint32_t first, uint32_t n)
{
    for (uint32_t b = 0; b < in->B; b++) news[b] = n;
    copy_tokens(in->query.data, rows_in, in->B, in->L, in->E, first, n, 1);
    return (vkattn_cached_forward_desc){.batch = in->B, .new_tokens = news, .query = rows_in, .output = rows_out};
}

/* Runs `f` (decode_rows' of tokens first .. first + n - 1) and copies its output into `out`. */
static vkattn_status decode_feed(vkattn_layer *layer, vkattn_kv_cache *cache, const forward_inputs *in, float *out,
                                 const vkattn_cached_forward_desc *f, uint32_t first, uint32_t n)
{
    vkattn_status status = vkattn_forward_cached(layer, cache, f);
    if (status == VKATTN_OK) copy_tokens(out, f->output, in->B, in->L, in->E, first, n, 0);
    return status;
}

/* The prefill, then the steps; prints the line of what ran and how long it took. */
static int decode_all(vkattn_context *ctx, vkattn_layer *layer, vkattn_kv_cache *cache, const forward_inputs *in,
                      const run_options *d, float *out)
{
    const uint32_t B = in->B, L = in->L, P = d->decode_from, steps = L - P;
    float *rows_in = malloc((size_t)B * P * in->E * sizeof(float));
    float *rows_out = malloc((size_t)B * P * in->E * sizeof(float));
    uint32_t *news = malloc(B * sizeof *news);
    double *step_ms = malloc((steps ? steps : 1) * sizeof *step_ms);
    int rc = 0;
    if (!rows_in || !rows_out || !news || !step_ms) {
        rc = cli_fail("run", "allocating the decode's buffers", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto done;
    }
    /* --trace: the prefill's plan and the first step's, printed before they are timed */
    vkattn_cached_forward_desc f = decode_rows(in, rows_in, rows_out, news, 0, P);
    if (d->fwd.trace &&
        (rc = cli_print_cached_plan("run", ctx, layer, cache, &f, "plan of the prefill (one cached forward)")))
        goto done;
    double t0 = cli_now();
    vkattn_status status = decode_feed(layer, cache, in, out, &f, 0, P);
    double prefill_ms = (cli_now() - t0) * 1e3;
    for (uint32_t t = P; status == VKATTN_OK && t < L; t++) {
        f = decode_rows(in, rows_in, rows_out, news, t, 1);
        if (d->fwd.trace && t == P &&
            (rc = cli_print_cached_plan("run", ctx, layer, cache, &f,
                                        "plan of the first decoding step (each step is planned anew as the context "
                                        "grows)")))
            goto done;
        t0 = cli_now();
        status = decode_feed(layer, cache, in, out, &f, t, 1);
        step_ms[t - P] = (cli_now() - t0) * 1e3;
    }
    if (status != VKATTN_OK) {
        rc = cli_fail("run", "a cached forward", status, vkattn_context_last_error(ctx));
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

/* The decode on the device: the layer, a KV cache that fits the query exactly (B sequences, B x
 * ceil(L / 16) blocks of 16), the prefill and the L - P steps, and the line of what ran. Writes
 * `out` (B, L, E) and sets *tolerance to the dtype whose tolerance --check applies. 0 or an exit
 * code; nothing stays open. */
static int run_decode(const run_options *d, const forward_inputs *in, float *out, vkattn_dtype *tolerance)
{
    vkattn_context *ctx;
    vkattn_layer *layer;
    vkattn_kv_cache *cache = NULL;
    int rc = forward_inputs_open("run", &d->fwd, in, &ctx, &layer);
    if (rc) return rc;
    vkattn_layer_desc l;
    vkattn_layer_get_desc(layer, &l);
    /* Exactly the blocks the query needs: every sequence grows to L tokens. */
    vkattn_kv_cache_desc cd = {.num_kv_heads = l.num_kv_heads, .head_dim = l.head_dim,
                               .block_size = DECODE_BLOCK_SIZE, .max_sequences = in->B, .dtype = d->cache_dtype,
                               .num_blocks = in->B * ((in->L + DECODE_BLOCK_SIZE - 1) / DECODE_BLOCK_SIZE)};
    vkattn_status status = vkattn_kv_cache_create(ctx, &cd, &cache);
    rc = status ? cli_fail("run", "creating the KV cache", status, vkattn_context_last_error(ctx))
                : decode_all(ctx, layer, cache, in, d, out);
    /* the larger error rules: a block format's, then fp16's */
    *tolerance = is_block_format(d->cache_dtype)                                            ? d->cache_dtype
                 : l.storage == VKATTN_DTYPE_F16 || d->cache_dtype == VKATTN_DTYPE_F16 ? VKATTN_DTYPE_F16
                                                                                      : VKATTN_DTYPE_F32;
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    vkattn_context_destroy(ctx);
    return rc;
}

int cmd_run(int argc, char **argv)
{
    run_options o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    /* An output that cannot be written is said now, not after the forward. */
    if ((rc = cli_check_distinct_outputs("run", (const char *[]){"--out", "--attn-weights"},
                                         (const char *[]){o.out, o.attn_weights}, 2)) ||
        (rc = cli_check_output("run", "--out", o.out)) || (rc = cli_check_output("run", "--attn-weights", o.attn_weights)))
        return rc;

    forward_inputs in = {0};
    float *out = NULL, *weights = NULL;
    reference_outputs ref = {0};
    if ((rc = forward_inputs_load("run", &o.fwd, &in))) goto done;
    in.layer.storage = o.storage;
    if (o.decode && (rc = check_decode_inputs(&in, &o))) goto done;
    output_shapes s = shapes_of(&o, &in);
    out = malloc(s.out_elems * sizeof(float));
    if (o.attn_weights) weights = malloc(s.weight_elems * sizeof(float));
    if (!out || (o.attn_weights && !weights)) {
        rc = cli_fail("run", "allocating outputs", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto done;
    }
    vkattn_host_forward_desc f = in.desc;
    f.output = out;
    f.attn_weights = weights;
    f.average_weights = o.average_weights;

    forward_inputs_print_weights(&in);
    forward_inputs_print_shapes(&in, &o.fwd);
    if (o.fwd.cpu && o.storage == VKATTN_DTYPE_F16)
        printf("vkattn run: note: --dtype f16 does not change the CPU reference path (double accumulation)\n");
    size_t inputs_bad = 0;
    if (o.check_finite) {
        inputs_bad = forward_inputs_report_nonfinite(&in);
        if (!o.fwd.cpu && o.storage == VKATTN_DTYPE_F16) inputs_bad += forward_inputs_report_fp16_overflow(&in);
        if (!inputs_bad) printf("check-finite: inputs and weights are finite\n");
    }
    vkattn_dtype storage; /* whose tolerance --check applies */
    if (o.decode) rc = run_decode(&o, &in, out, &storage);
    else rc = forward_inputs_run("run", &o.fwd, &in, &f, &storage);
    if (rc) goto done;
    int agree = 1;
    if (o.check && (rc = check_against_cpu(&in, &f, &s, storage, &ref, &agree))) goto done;
    if ((rc = write_outputs(&o, &s, out, weights))) goto done;
    size_t outputs_bad = 0;
    if (o.check_finite && (rc = check_outputs_finite(&o, &in, &f, &s, storage, inputs_bad, &ref, &outputs_bad)))
        goto done;
    rc = !agree ? CLI_EXIT_MISMATCH : outputs_bad ? CLI_EXIT_NON_FINITE : CLI_EXIT_OK;
done:
    forward_inputs_free(&in);
    free(out), free(weights), free(ref.out), free(ref.weights);
    return rc;
}
