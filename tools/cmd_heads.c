/* vkattn heads: each head's importance by ablation (how much the output moves when that head alone
 * is pruned), ranked; --prune K writes a head mask for the K least important heads and measures,
 * in the same run, the pruned layer's output error and its speed against the full layer. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_json.h"
#include "forward_inputs.h"
#include "head_importance.h"

typedef struct heads_options {
    forward_options fwd;
    const char *json, *write_mask;
    uint32_t prune, repeats;
} heads_options;

#define H(field) offsetof(heads_options, field)
static const cli_option k_heads_rows[] = {
    {"--json", "FILE", "the ranking (and --prune's result) as JSON", CLI_TEXT, H(json)},
    {"--prune", "K", "write a mask keeping all but the K least important heads, and report the pruned layer's error "
     "and speedup (median of --repeats runs)", CLI_U32, H(prune), 1, .needs = "--write-mask"},
    {"--write-mask", "FILE", "where --prune writes the mask (a bool (H) .npy)", CLI_TEXT, H(write_mask),
     .needs = "--prune"},
    {"--repeats", "N", "timed forwards per layer for --prune", CLI_U32, H(repeats), 1, .needs = "--prune"},
};

static int parse(int argc, char **argv, heads_options *o)
{
    cli_command c = {"heads", NULL,
                     "The importance of head h is ||y without h - y|| / ||y|| (and max |y without h - y|) on these\n"
                     "inputs; --head-mask starts from an already pruned layer. --json and --write-mask are checked\n"
                     "before anything runs.\n" FORWARD_NOTES CLI_EXIT_HELP,
                     {FORWARD_GROUP(o->fwd), {"heads", k_heads_rows, CLI_COUNT(k_heads_rows), o}}};
    return cli_parse(&c, argc, argv);
}

/* Median time of `repeats` forwards with `keep`: GPU timestamps on a device, wall time on the CPU. */
static vkattn_status time_forwards(head_runner *r, const uint8_t *keep, uint32_t repeats, float *out, double *ms)
{
    double *t = calloc(repeats, sizeof *t);
    vkattn_error err = {0};
    vkattn_status s = t ? head_runner_forward(r, keep, out, &err) : VKATTN_ERROR_OUT_OF_HOST_MEMORY; /* warm up */
    for (uint32_t i = 0; i < repeats && s == VKATTN_OK; i++) {
        double t0 = cli_now();
        s = head_runner_forward(r, keep, out, &err);
        t[i] = (cli_now() - t0) * 1e3;
        vkattn_forward_stats st;
        if (r->layer && vkattn_layer_last_stats(r->layer, &st) == VKATTN_OK && st.timed) t[i] = st.gpu_ms;
    }
    if (s == VKATTN_OK) *ms = cli_median(t, repeats);
    free(t);
    return s;
}

typedef struct prune_result {
    uint8_t *keep;
    double rel_l2, max_abs, full_ms, pruned_ms;
} prune_result;

/* A head mask (H entries, 1 = keep) as a bool .npy file: 0 or an exit code. */
static int write_head_mask(const char *path, const uint8_t *keep, uint32_t H)
{
    vkattn_array a = {.dtype = VKATTN_DTYPE_BOOL, .rank = 1, .dims = {H}, .data = (void *)keep, .bytes = H};
    vkattn_error error = {0};
    vkattn_status status = vkattn_npy_write(path, &a, &error);
    if (status != VKATTN_OK) return cli_fail("heads", "writing the head mask", status, error.message);
    return 0;
}

/* Keeps all but the K least important active heads; measures error and speed in one run. */
static int prune(head_runner *r, const heads_options *o, const head_score *ranked, const uint8_t *start, uint32_t H,
                 prune_result *res)
{
    uint32_t active = 0;
    for (uint32_t h = 0; h < H; h++) active += ranked[h].active;
    if (o->prune >= active) {
        fprintf(stderr, "vkattn heads: --prune %u would leave none of the %u active heads\n", o->prune, active);
        return 2;
    }
    res->keep = malloc(H);
    float *full = malloc(r->out_elems * sizeof(float)), *pruned = malloc(r->out_elems * sizeof(float));
    int rc = 1;
    if (!res->keep || !full || !pruned) goto done;
    for (uint32_t h = 0; h < H; h++) res->keep[h] = !start || start[h];
    for (uint32_t k = 0; k < o->prune; k++) res->keep[ranked[active - 1 - k].head] = 0; /* the least important */
    if (r->layer) vkattn_layer_set_timing(r->layer, 1);
    vkattn_status s = time_forwards(r, start, o->repeats, full, &res->full_ms);
    if (s == VKATTN_OK) s = time_forwards(r, res->keep, o->repeats, pruned, &res->pruned_ms);
    if (s != VKATTN_OK) {
        rc = cli_fail("heads", "timing the pruned layer", s, r->layer ? "see the layer's context" : NULL);
        goto done;
    }
    head_compare(pruned, full, r->out_elems, &res->rel_l2, &res->max_abs);
    rc = write_head_mask(o->write_mask, res->keep, H);
done:
    free(full), free(pruned);
    return rc;
}

static const char k_alone[] = "the only active head: removing it leaves no attention, so its importance cannot be "
                               "measured";

static void print_table(const head_score *ranked, uint32_t H)
{
    printf("\nrank  head  output change without it: rel L2     max-abs\n");
    for (uint32_t k = 0; k < H; k++) {
        if (!ranked[k].active) {
            printf("   -  %4u  (pruned by --head-mask)\n", ranked[k].head + 1);
            continue;
        }
        if (ranked[k].alone) {
            printf("%4u  %4u  %32s  %10s  (%s)\n", k + 1, ranked[k].head + 1, "n/a", "n/a", k_alone);
            continue;
        }
        printf("%4u  %4u  %32.4e  %10.4e\n", k + 1, ranked[k].head + 1, ranked[k].rel_l2, ranked[k].max_abs);
    }
}

/* One head's row: its rank (0 when pruned by --head-mask), 1-based number and figures (null, with a
 * note, for the only active head). */
static cJSON *json_head(const head_score *h, uint32_t rank)
{
    cJSON *o = cJSON_CreateObject();
    /* cli_json_add_number writes NaN as null */
    if (o && cJSON_AddNumberToObject(o, "rank", h->active ? rank : 0) &&
        cJSON_AddNumberToObject(o, "head", h->head + 1) && cJSON_AddBoolToObject(o, "active", h->active) &&
        cli_json_add_number(o, "rel_l2", h->alone ? NAN : h->rel_l2) &&
        cli_json_add_number(o, "max_abs", h->alone ? NAN : h->max_abs) &&
        (!h->alone || cJSON_AddStringToObject(o, "note", k_alone)))
        return o;
    cJSON_Delete(o);
    return NULL;
}

/* --prune: what was kept and what it cost. 0, or 1 when out of memory. */
static int json_prune(cJSON *root, const heads_options *o, const prune_result *pr, uint32_t H)
{
    cJSON *p = cJSON_AddObjectToObject(root, "prune"), *keep = NULL;
    if (!p || !cJSON_AddNumberToObject(p, "k", o->prune) || !cJSON_AddStringToObject(p, "mask_file", o->write_mask) ||
        !(keep = cJSON_AddArrayToObject(p, "keep")))
        return 1;
    for (uint32_t h = 0; h < H; h++)
        if (cli_json_append(keep, cJSON_CreateNumber(pr->keep[h]))) return 1;
    const cli_json_num figures[] = {{"rel_l2", pr->rel_l2}, {"max_abs", pr->max_abs}, {"full_ms", pr->full_ms},
                                    {"pruned_ms", pr->pruned_ms},
                                    {"speedup", pr->pruned_ms > 0 ? pr->full_ms / pr->pruned_ms : 0}};
    return cli_json_add_numbers(p, figures, CLI_COUNT(figures));
}

static int write_json(const char *path, const vkattn_device_info *dev, const head_score *ranked, uint32_t H,
                      const heads_options *o, const prune_result *pr)
{
    cJSON *root = cJSON_CreateObject(), *heads = NULL;
    int bad = !root || !cJSON_AddStringToObject(root, "device", dev ? dev->name : "CPU reference path") ||
              !(heads = cJSON_AddArrayToObject(root, "heads"));
    for (uint32_t k = 0; !bad && k < H; k++) bad = cli_json_append(heads, json_head(&ranked[k], k + 1));
    if (!bad && pr->keep) bad = json_prune(root, o, pr, H);
    char err[600] = "out of host memory";
    if (!bad) bad = cli_json_write_file(root, path, err, sizeof err);
    cJSON_Delete(root);
    if (bad) return cli_fail("heads", "writing the JSON file", VKATTN_ERROR_IO, err);
    printf("wrote %s\n", path);
    return 0;
}

int cmd_heads(int argc, char **argv)
{
    heads_options o = {.repeats = 5};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    /* Output problems are said now, not after the measurements. */
    if ((rc = cli_check_distinct_outputs("heads", (const char *[]){"--json", "--write-mask"},
                                         (const char *[]){o.json, o.write_mask}, 2)) ||
        (rc = cli_check_output("heads", "--json", o.json)) ||
        (rc = cli_check_output("heads", "--write-mask", o.write_mask)))
        return rc;
    forward_inputs in = {0};
    vkattn_context *ctx = NULL;
    vkattn_device_info dev;
    head_score *scores = NULL;
    prune_result pr = {0};
    head_runner r = {0};
    if ((rc = forward_inputs_load("heads", &o.fwd, &in))) goto done;
    in.layer.host_weights = VKATTN_HOST_WEIGHTS_BORROW; /* set_head_mask re-uploads from in.w, freed last */
    forward_inputs_print_shapes(&in, &o.fwd);
    r = (head_runner){.desc = in.layer, .weights = &in.w, .forward = in.desc,
                      .out_elems = (size_t)in.B * in.L * in.E};
    if ((rc = forward_inputs_open("heads", &o.fwd, &in, &ctx, &r.layer))) goto done;
    if (ctx) vkattn_context_device(ctx, &dev);
    const uint32_t H = in.H;
    const uint8_t *start = in.layer.head_mask;
    vkattn_error err = {0};
    if (!(scores = calloc(H, sizeof *scores))) {
        rc = cli_fail("heads", "allocating", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL);
        goto done;
    }
    vkattn_status s = head_importance_measure(&r, start, scores, &err);
    if (s != VKATTN_OK) {
        rc = cli_fail("heads", "measuring", s, ctx ? vkattn_context_last_error(ctx) : err.message);
        goto done;
    }
    head_scores_rank(scores, H);
    print_table(scores, H);
    if (o.prune) {
        if ((rc = prune(&r, &o, scores, start, H, &pr))) goto done;
        printf("\npruned %u head%s (mask in %s): output rel L2 error %.4e, max-abs %.4e\n", o.prune,
               o.prune == 1 ? "" : "s", o.write_mask, pr.rel_l2, pr.max_abs);
        printf("forward %s: full %.3f ms, pruned %.3f ms, speedup %.2fx (median of %u, same run)\n",
               ctx ? "GPU time" : "CPU time", pr.full_ms, pr.pruned_ms, pr.pruned_ms > 0 ? pr.full_ms / pr.pruned_ms : 0,
               o.repeats);
    }
    if (o.json) rc = write_json(o.json, ctx ? &dev : NULL, scores, H, &o, &pr);
done:
    if (r.layer) vkattn_layer_destroy(r.layer);
    vkattn_context_destroy(ctx);
    forward_inputs_free(&in);
    free(scores), free(pr.keep);
    return rc;
}
