/* vkattn run: a forward on .npy inputs with safetensors weights, written to .npy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct run_options {
    const char *weights, *query, *key, *value, *key_padding_mask, *valid_lens, *attn_mask, *out, *attn_weights;
    const char *device;
    vkattn_path path;
    uint32_t heads;
    int causal, add_zero_attn, average_weights, cpu, check;
} run_options;

static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: vkattn run --weights W.safetensors --heads H --query q.npy [--key k.npy [--value v.npy]]\n"
            "                  [--key-padding-mask m.npy] [--valid-lens v.npy] [--attn-mask m.npy] [--causal]\n"
            "                  [--add-zero-attn] --out out.npy [--attn-weights a.npy [--average-weights]]\n"
            "                  [--path auto|fused|unfused] [--device N|NAME] [--cpu] [--check]\n"
            "  query (B,L,E) or (L,E) float32; key (B,S,kdim), value (B,S,vdim) default to the query;\n"
            "  key-padding-mask (B,S) bool, true = ignore; valid-lens (B) or (B,L) integers;\n"
            "  attn-mask (L,S) or (B*H,L,S), bool (true = blocked) or float32 (added to the scores).\n"
            "  --cpu runs the CPU reference instead of Vulkan; --check runs both and prints the error.\n"
            "  --path picks the device path (auto: fused, or unfused when attention weights are asked for).\n");
}

static int parse(int argc, char **argv, run_options *o)
{
    cli_args a = cli_args_make("run", argc, argv);
    const char *opt;
    while ((opt = cli_next(&a))) {
        const char **target = NULL;
        if (strcmp(opt, "--help") == 0) {
            run_usage(stdout);
            return -1;
        }
        if (strcmp(opt, "--causal") == 0) o->causal = 1;
        else if (strcmp(opt, "--add-zero-attn") == 0) o->add_zero_attn = 1;
        else if (strcmp(opt, "--average-weights") == 0) o->average_weights = 1;
        else if (strcmp(opt, "--cpu") == 0) o->cpu = 1;
        else if (strcmp(opt, "--check") == 0) o->check = 1;
        else if (strcmp(opt, "--heads") == 0) {
            const char *v = cli_value(&a, opt);
            if (!v || cli_parse_u32(opt, v, 1, &o->heads)) return 2;
        } else if (strcmp(opt, "--path") == 0) {
            const char *v = cli_value(&a, opt);
            if (!v) return 2;
            if (strcmp(v, "auto") == 0) o->path = VKATTN_PATH_AUTO;
            else if (strcmp(v, "fused") == 0) o->path = VKATTN_PATH_FUSED;
            else if (strcmp(v, "unfused") == 0) o->path = VKATTN_PATH_UNFUSED;
            else {
                fprintf(stderr, "vkattn run: --path takes auto, fused or unfused, not \"%s\"\n", v);
                return 2;
            }
        } else if (strcmp(opt, "--weights") == 0) target = &o->weights;
        else if (strcmp(opt, "--query") == 0) target = &o->query;
        else if (strcmp(opt, "--key") == 0) target = &o->key;
        else if (strcmp(opt, "--value") == 0) target = &o->value;
        else if (strcmp(opt, "--key-padding-mask") == 0) target = &o->key_padding_mask;
        else if (strcmp(opt, "--valid-lens") == 0) target = &o->valid_lens;
        else if (strcmp(opt, "--attn-mask") == 0) target = &o->attn_mask;
        else if (strcmp(opt, "--out") == 0) target = &o->out;
        else if (strcmp(opt, "--attn-weights") == 0) target = &o->attn_weights;
        else if (strcmp(opt, "--device") == 0) target = &o->device;
        else {
            fprintf(stderr, "vkattn run: unknown option \"%s\"\n", opt);
            run_usage(stderr);
            return 2;
        }
        if (target && !(*target = cli_value(&a, opt))) return 2;
    }
    const char *missing = !o->weights ? "--weights" : !o->heads ? "--heads" : !o->query ? "--query" : !o->out ? "--out" : NULL;
    if (!missing && o->value && !o->key) missing = "--key (--value needs it)";
    if (!missing && o->average_weights && !o->attn_weights) missing = "--attn-weights (--average-weights needs it)";
    if (missing) {
        fprintf(stderr, "vkattn run: missing %s\n", missing);
        run_usage(stderr);
        return 2;
    }
    return 0;
}

/* The arrays a run reads, released together. */
typedef struct run_inputs {
    vkattn_weight_file *weights;
    vkattn_array query, key, value, key_padding_mask, valid_lens, attn_mask;
} run_inputs;

static void free_inputs(run_inputs *in)
{
    vkattn_weight_file_destroy(in->weights);
    vkattn_array_free(&in->query), vkattn_array_free(&in->key), vkattn_array_free(&in->value);
    vkattn_array_free(&in->key_padding_mask), vkattn_array_free(&in->valid_lens), vkattn_array_free(&in->attn_mask);
}

static int load_array(const char *path, const char *what, vkattn_array *out)
{
    if (!path) return 0;
    vkattn_error error = {0};
    vkattn_status status = vkattn_npy_read(path, out, &error);
    if (status != VKATTN_OK) {
        char text[600];
        snprintf(text, sizeof text, "reading %s", what);
        return cli_fail("run", text, status, error.message);
    }
    return 0;
}

static int expect(const vkattn_array *a, const char *what, int dtype_ok, uint32_t min_rank, uint32_t max_rank)
{
    if (!a->data) return 0;
    if (!dtype_ok || a->rank < min_rank || a->rank > max_rank) {
        fprintf(stderr, "vkattn run: %s has dtype %s and rank %u; see vkattn run --help for what it takes\n", what,
                vkattn_dtype_name(a->dtype), a->rank);
        return 2;
    }
    return 0;
}

/* Checks an optional array's exact shape. */
static int check_shape(const vkattn_array *a, const char *what, uint32_t rank, const uint32_t *dims, const char *names)
{
    if (!a->data) return 0;
    int same = a->rank == rank;
    for (uint32_t i = 0; same && i < rank; i++) same = a->dims[i] == dims[i];
    if (same) return 0;
    fprintf(stderr, "vkattn run: %s has shape (", what);
    for (uint32_t i = 0; i < a->rank; i++) fprintf(stderr, i ? ", %u" : "%u", a->dims[i]);
    fprintf(stderr, "), expected (%s) = (", names);
    for (uint32_t i = 0; i < rank; i++) fprintf(stderr, i ? ", %u" : "%u", dims[i]);
    fprintf(stderr, ")\n");
    return 1;
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

int cmd_run(int argc, char **argv)
{
    run_options o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;

    run_inputs in = {0};
    vkattn_context *ctx = NULL;
    vkattn_layer *layer = NULL;
    float *out = NULL, *weights = NULL, *ref_out = NULL, *ref_weights = NULL;
    vkattn_error error = {0};
    vkattn_status status = vkattn_weight_file_load(o.weights, &in.weights, &error);
    if (status != VKATTN_OK) {
        rc = cli_fail("run", "reading the weights", status, error.message);
        goto done;
    }
    if ((rc = load_array(o.query, "the query", &in.query)) || (rc = load_array(o.key, "the key", &in.key)) ||
        (rc = load_array(o.value, "the value", &in.value)) ||
        (rc = load_array(o.key_padding_mask, "the key padding mask", &in.key_padding_mask)) ||
        (rc = load_array(o.valid_lens, "the valid lengths", &in.valid_lens)) ||
        (rc = load_array(o.attn_mask, "the attention mask", &in.attn_mask)))
        goto done;
    if ((rc = expect(&in.query, "the query", in.query.dtype == VKATTN_DTYPE_F32, 2, 3)) ||
        (rc = expect(&in.key, "the key", in.key.dtype == VKATTN_DTYPE_F32, in.query.rank, in.query.rank)) ||
        (rc = expect(&in.value, "the value", in.value.dtype == VKATTN_DTYPE_F32, in.query.rank, in.query.rank)) ||
        (rc = expect(&in.key_padding_mask, "the key padding mask", in.key_padding_mask.dtype == VKATTN_DTYPE_BOOL, 1, 2)) ||
        (rc = expect(&in.valid_lens, "the valid lengths", in.valid_lens.dtype == VKATTN_DTYPE_I32, 1, 2)) ||
        (rc = expect(&in.attn_mask, "the attention mask",
                     in.attn_mask.dtype == VKATTN_DTYPE_BOOL || in.attn_mask.dtype == VKATTN_DTYPE_F32, 2, 3)))
        goto done;

    vkattn_layer_desc ld = {0};
    vkattn_weight_file_describe(in.weights, &ld);
    ld.num_heads = o.heads;
    ld.add_zero_attn = o.add_zero_attn;
    /* (L,E) is an unbatched query, as in PyTorch: B = 1. */
    int batched = in.query.rank == 3;
    uint32_t B = batched ? in.query.dims[0] : 1, L = in.query.dims[batched], E = in.query.dims[batched + 1];
    uint32_t S = in.key.data ? in.key.dims[batched] : L;
    uint32_t H = o.heads, S_ext = S + (ld.add_bias_kv != 0) + (ld.add_zero_attn != 0);
    if (E != ld.embed_dim) {
        fprintf(stderr, "vkattn run: the query has %u features but the weights have embed_dim %u\n", E, ld.embed_dim);
        rc = 1;
        goto done;
    }
    vkattn_host_forward_desc f = {
        .batch = B, .query_len = L, .key_len = in.key.data ? S : 0,
        .query = in.query.data, .key = in.key.data, .value = in.value.data,
        .causal = o.causal, .key_padding_mask = in.key_padding_mask.data,
        .valid_lens = in.valid_lens.data, .valid_lens_per_query = in.valid_lens.rank == 2,
        .attn_mask = in.attn_mask.data, .attn_mask_dtype = in.attn_mask.dtype,
        .attn_mask_per_head = in.attn_mask.rank == 3,
        .average_weights = o.average_weights,
        .path = o.path,
    };
    /* The host call trusts B, L and S, so every array's own shape must agree with them here. */
    uint32_t BS[3] = {B, S, ld.kdim}, BSv[3] = {B, S, ld.vdim}, BL[2] = {B, L}, mask3[3] = {B * H, L, S};
    if ((rc = check_shape(&in.key, "the key", batched ? 3 : 2, batched ? BS : BS + 1, batched ? "B, S, kdim" : "S, kdim")) ||
        (rc = check_shape(&in.value, "the value", batched ? 3 : 2, batched ? BSv : BSv + 1,
                          batched ? "B, S, vdim" : "S, vdim")) ||
        (rc = check_shape(&in.key_padding_mask, "the key padding mask", batched ? 2 : 1, batched ? BS : BS + 1,
                          batched ? "B, S" : "S")) ||
        (rc = check_shape(&in.valid_lens, "the valid lengths", in.valid_lens.rank == 2 ? 2 : 1, BL,
                          in.valid_lens.rank == 2 ? "B, L" : "B")) ||
        (rc = check_shape(&in.attn_mask, "the attention mask", in.attn_mask.rank, in.attn_mask.rank == 3 ? mask3 : mask3 + 1,
                          in.attn_mask.rank == 3 ? "B*H, L, S" : "L, S")))
        goto done;
    size_t out_elems = (size_t)B * L * E;
    size_t weight_elems = (size_t)B * L * S_ext * (o.average_weights ? 1 : H);
    out = malloc(out_elems * sizeof(float));
    if (o.attn_weights) weights = malloc(weight_elems * sizeof(float));
    if (!out || (o.attn_weights && !weights)) {
        rc = cli_fail("run", "allocating outputs", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto done;
    }
    f.output = out;
    f.attn_weights = weights;

    printf("shapes: query (%u, %u, %u), key/value %s (S = %u), heads %u (head dim %u)%s%s\n", B, L, E,
           in.key.data ? "given" : "= query", S, H, ld.num_heads ? E / ld.num_heads : 0, o.causal ? ", causal" : "",
           ld.add_bias_kv ? ", bias_kv" : "");
    double t0 = cli_now(), elapsed;
    if (o.cpu) {
        printf("device: CPU reference path (no Vulkan)\n");
        status = vkattn_reference_forward(&ld, vkattn_weight_file_weights(in.weights), &f, &error);
        elapsed = cli_now() - t0;
        if (status != VKATTN_OK) {
            rc = cli_fail("run", "CPU forward", status, error.message);
            goto done;
        }
    } else {
        if ((rc = cli_open_context("run", o.device, &ctx))) goto done;
        status = vkattn_layer_create(ctx, &ld, vkattn_weight_file_weights(in.weights), &layer);
        if (status != VKATTN_OK) {
            rc = cli_fail("run", "creating the layer", status, vkattn_context_last_error(ctx));
            goto done;
        }
        t0 = cli_now();
        status = vkattn_forward_host(layer, &f);
        elapsed = cli_now() - t0;
        if (status != VKATTN_OK) {
            rc = cli_fail("run", "forward", status, vkattn_context_last_error(ctx));
            goto done;
        }
    }
    vkattn_forward_stats stats = {.path = VKATTN_PATH_CPU};
    if (layer) vkattn_layer_last_stats(layer, &stats);
    printf("path: %s, %.3f ms (a first call includes compiling the kernels)\n", vkattn_path_name(stats.path),
           elapsed * 1e3);

    if (o.check) {
        ref_out = malloc(out_elems * sizeof(float));
        ref_weights = weights ? malloc(weight_elems * sizeof(float)) : NULL;
        if (!ref_out || (weights && !ref_weights)) {
            rc = cli_fail("run", "allocating the check", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
            goto done;
        }
        vkattn_host_forward_desc r = f;
        r.output = ref_out;
        r.attn_weights = ref_weights;
        status = vkattn_reference_forward(&ld, vkattn_weight_file_weights(in.weights), &r, &error);
        if (status != VKATTN_OK) {
            rc = cli_fail("run", "CPU check", status, error.message);
            goto done;
        }
        cli_error_stats e = cli_compare(out, ref_out, out_elems);
        printf("check output vs CPU path: max-abs %.3g, NMSE %.3g%s\n", e.max_abs, e.nmse,
               e.nonfinite ? " (non-finite values differ!)" : "");
        if (weights) {
            e = cli_compare(weights, ref_weights, weight_elems);
            printf("check attention weights vs CPU path: max-abs %.3g, NMSE %.3g\n", e.max_abs, e.nmse);
        }
    }

    uint32_t out_dims[3] = {B, L, E};
    if ((rc = write_array(o.out, "writing the output", VKATTN_DTYPE_F32, batched ? 3 : 2, batched ? out_dims : out_dims + 1,
                          out, out_elems * sizeof(float))))
        goto done;
    if (weights) {
        uint32_t w4[4] = {B, H, L, S_ext}, w3[3] = {B, L, S_ext};
        uint32_t rank = o.average_weights ? 3 : 4;
        const uint32_t *dims = o.average_weights ? w3 : w4;
        if (!batched) rank--, dims++; /* unbatched: drop B, as PyTorch does */
        if (!batched && !o.average_weights) dims = w4 + 1;
        rc = write_array(o.attn_weights, "writing the attention weights", VKATTN_DTYPE_F32, rank, dims, weights,
                         weight_elems * sizeof(float));
    }
done:
    vkattn_layer_destroy(layer);
    vkattn_context_destroy(ctx);
    free_inputs(&in);
    free(out), free(weights), free(ref_out), free(ref_weights);
    return rc;
}
