/* vkattn run: a forward on .npy inputs with safetensors weights, written to .npy. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "forward_inputs.h"
#include "run_decode.h"

typedef struct run_options {
    forward_options fwd;
    const char *out, *attn_weights;
    int average_weights, check, check_finite;
    vkattn_dtype storage; /* --dtype f32|f16 */
    run_decode_options decode; /* --decode-from P, --kv-cache-dtype */
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

static const char k_run_notes[] = FORWARD_NOTES
    CLI_EXIT_HELP "3 --check-finite: an output holds NaN or inf; 4 --check: MISMATCH, the result disagrees\n"
    "with the CPU reference path (4 wins over 3).\n"
    "The outputs are checked before anything runs, and written in every case but 1 and 2.\n";

static int parse(int argc, char **argv, run_options *o)
{
    cli_command c = {"run", NULL, k_run_notes,
                     {FORWARD_GROUP(o->fwd), {"run", k_run_rows, CLI_COUNT(k_run_rows), o},
                      {"decoding through a KV cache", run_decode_rows, run_decode_count, &o->decode}}};
    int rc = cli_parse(&c, argc, argv);
    return rc ? rc : run_decode_check_options("run", &o->fwd, &o->decode, o->attn_weights != NULL);
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
    if (ref->out) return 0;
    ref->out = malloc(s->out_elems * sizeof(float));
    ref->weights = f->attn_weights ? malloc(s->weight_elems * sizeof(float)) : NULL;
    if (!ref->out || (f->attn_weights && !ref->weights)) {
        free(ref->out), free(ref->weights);
        ref->out = ref->weights = NULL;
        return cli_fail("run", "allocating the CPU reference outputs", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
    }
    vkattn_host_forward_desc r = *f;
    r.output = ref->out;
    r.attn_weights = ref->weights;
    vkattn_layer_desc layer = in->layer;
    layer.storage = VKATTN_DTYPE_F32; /* the reference computes in double either way */
    vkattn_error error = {0};
    vkattn_status status = vkattn_reference_forward(&layer, forward_inputs_weights(in), &r, &error);
    if (status != VKATTN_OK) {
        free(ref->out), free(ref->weights);
        ref->out = ref->weights = NULL;
        return cli_fail("run", "the CPU reference forward", status, error.message);
    }
    return 0;
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

int cmd_run(int argc, char **argv)
{
    run_options o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    /* An output that cannot be written is said now, not after the forward. */
    if ((rc = cli_check_output("run", "--out", o.out)) || (rc = cli_check_output("run", "--attn-weights", o.attn_weights)))
        return rc;

    forward_inputs in = {0};
    float *out = NULL, *weights = NULL;
    reference_outputs ref = {0};
    if ((rc = forward_inputs_load("run", &o.fwd, &in))) goto done;
    in.layer.storage = o.storage;
    if (o.decode.given && (rc = run_decode_check_inputs("run", &in, &o.decode))) goto done;
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
    if (o.decode.given) rc = run_decode("run", &o.fwd, &in, &o.decode, out, &storage);
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
