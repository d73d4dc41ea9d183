/* vkattn run: a forward on .npy inputs with safetensors weights, written to .npy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "forward_inputs.h"

typedef struct run_options {
    forward_options fwd;
    const char *out, *attn_weights;
    int average_weights, check, check_finite;
} run_options;

static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: vkattn run --weights W.safetensors --heads H --query q.npy [--key k.npy [--value v.npy]]\n"
            "                  [--key-padding-mask m.npy] [--valid-lens v.npy] [--attn-mask m.npy] [--causal]\n"
            "                  [--add-zero-attn] --out out.npy [--attn-weights a.npy [--average-weights]]\n"
            "                  [--head-mask m.npy] [--path auto|fused|unfused] [--device N|NAME] [--cpu] [--check]\n"
            "                  [--check-finite]\n");
    forward_options_usage(out);
    fprintf(out,
            "  --cpu runs the CPU reference instead of Vulkan; --check runs both and prints the error.\n"
            "  --path picks the device path (auto: fused, or unfused when attention weights are asked for).\n"
            "  --check-finite reports NaN/inf in the inputs, weights and outputs, and fails (exit 3) if an\n"
            "  output holds any. (NaN and inf propagate through the forward as IEEE arithmetic says.)\n");
}

static int parse(int argc, char **argv, run_options *o)
{
    cli_args a = cli_args_make("run", argc, argv);
    const char *opt;
    while ((opt = cli_next(&a))) {
        const char **target = NULL;
        int taken = 0;
        if (strcmp(opt, "--help") == 0) {
            run_usage(stdout);
            return -1;
        }
        if (forward_option(&a, opt, &o->fwd, &taken)) return 2;
        if (taken) continue;
        if (strcmp(opt, "--average-weights") == 0) o->average_weights = 1;
        else if (strcmp(opt, "--check") == 0) o->check = 1;
        else if (strcmp(opt, "--check-finite") == 0) o->check_finite = 1;
        else if (strcmp(opt, "--out") == 0) target = &o->out;
        else if (strcmp(opt, "--attn-weights") == 0) target = &o->attn_weights;
        else {
            fprintf(stderr, "vkattn run: unknown option \"%s\"\n", opt);
            run_usage(stderr);
            return 2;
        }
        if (target && !(*target = cli_value(&a, opt))) return 2;
    }
    const char *missing = forward_options_missing(&o->fwd);
    if (!missing && !o->out) missing = "--out";
    if (!missing && o->average_weights && !o->attn_weights) missing = "--attn-weights (--average-weights needs it)";
    if (missing) {
        fprintf(stderr, "vkattn run: missing %s\n", missing);
        run_usage(stderr);
        return 2;
    }
    return 0;
}

static int write_array(const char *path, const char *what, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims,
                       void *data, size_t bytes)
{
    vkattn_array a = {.dtype = dtype, .rank = rank, .data = data, .bytes = bytes};
    memcpy(a.dims, dims, rank * sizeof *dims);
    vkattn_error error = {0};
    vkattn_status status = vkattn_npy_write(path, &a, &error);
    if (status != VKATTN_OK) return cli_fail("run", what, status, error.message);
    printf("wrote %s\n", path);
    return 0;
}

/* --check: the same forward on the CPU reference, compared with what ran. */
static int check_against_cpu(const forward_inputs *in, const vkattn_host_forward_desc *f, size_t out_elems,
                             size_t weight_elems)
{
    float *ref_out = malloc(out_elems * sizeof(float));
    float *ref_weights = f->attn_weights ? malloc(weight_elems * sizeof(float)) : NULL;
    int rc = 0;
    if (!ref_out || (f->attn_weights && !ref_weights)) {
        rc = cli_fail("run", "allocating the check", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto done;
    }
    vkattn_host_forward_desc r = *f;
    r.output = ref_out;
    r.attn_weights = ref_weights;
    vkattn_error error = {0};
    vkattn_status status = vkattn_reference_forward(&in->layer, vkattn_weight_file_weights(in->weights), &r, &error);
    if (status != VKATTN_OK) {
        rc = cli_fail("run", "CPU check", status, error.message);
        goto done;
    }
    cli_error_stats e = cli_compare(f->output, ref_out, out_elems);
    printf("check output vs CPU path: max-abs %.3g, NMSE %.3g%s\n", e.max_abs, e.nmse,
           e.nonfinite ? " (non-finite values differ!)" : "");
    if (f->attn_weights) {
        e = cli_compare(f->attn_weights, ref_weights, weight_elems);
        printf("check attention weights vs CPU path: max-abs %.3g, NMSE %.3g\n", e.max_abs, e.nmse);
    }
done:
    free(ref_out), free(ref_weights);
    return rc;
}

static int write_outputs(const run_options *o, const forward_inputs *in, float *out, float *weights,
                         size_t weight_elems)
{
    uint32_t B = in->B, L = in->L, E = in->E, H = in->H, S_ext = in->S_ext;
    int batched = in->batched, rc;
    uint32_t out_dims[3] = {B, L, E};
    if ((rc = write_array(o->out, "writing the output", VKATTN_DTYPE_F32, batched ? 3 : 2,
                          batched ? out_dims : out_dims + 1, out, (size_t)B * L * E * sizeof(float))))
        return rc;
    if (!weights) return 0;
    uint32_t w4[4] = {B, H, L, S_ext}, w3[3] = {B, L, S_ext};
    uint32_t rank = o->average_weights ? 3 : 4;
    const uint32_t *dims = o->average_weights ? w3 : w4;
    if (!batched) rank--, dims++; /* unbatched: drop B, as PyTorch does */
    return write_array(o->attn_weights, "writing the attention weights", VKATTN_DTYPE_F32, rank, dims, weights,
                       weight_elems * sizeof(float));
}

int cmd_run(int argc, char **argv)
{
    run_options o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;

    forward_inputs in = {0};
    float *out = NULL, *weights = NULL;
    if ((rc = forward_inputs_load("run", &o.fwd, &in))) goto done;
    size_t out_elems = (size_t)in.B * in.L * in.E;
    size_t weight_elems = (size_t)in.B * in.L * in.S_ext * (o.average_weights ? 1 : in.H);
    out = malloc(out_elems * sizeof(float));
    if (o.attn_weights) weights = malloc(weight_elems * sizeof(float));
    if (!out || (o.attn_weights && !weights)) {
        rc = cli_fail("run", "allocating outputs", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto done;
    }
    vkattn_host_forward_desc f = in.desc;
    f.output = out;
    f.attn_weights = weights;
    f.average_weights = o.average_weights;

    forward_inputs_print_shapes(&in, &o.fwd);
    if (o.check_finite && forward_inputs_report_nonfinite("run", &in) == 0)
        printf("check-finite: inputs and weights are finite\n");
    if ((rc = forward_inputs_run("run", &o.fwd, &in, &f))) goto done;
    if (o.check && (rc = check_against_cpu(&in, &f, out_elems, weight_elems))) goto done;
    rc = write_outputs(&o, &in, out, weights, weight_elems);
    if (!rc && o.check_finite) {
        size_t bad = forward_report_nonfinite("run", "the output", out, out_elems);
        if (weights) bad += forward_report_nonfinite("run", "the attention weights", weights, weight_elems);
        if (bad) rc = 3;
        else printf("check-finite: outputs are finite\n");
    }
done:
    forward_inputs_free(&in);
    free(out), free(weights);
    return rc;
}
