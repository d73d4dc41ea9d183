/* vkattn overhead: what a forward costs the host, blocking (vkattn_forward waits on a fence per
 * layer) against one submission of a whole stack (vkattn_submission: add each layer, submit once,
 * wait once), side by side in one run at a shape small enough that the host's share dominates —
 * the situation of a decode loop, one token per layer. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct overhead_options {
    const char *device;
    uint32_t layers, embed, heads, length, rounds;
} overhead_options;

#define O(field) offsetof(overhead_options, field)
static const cli_option k_overhead_rows[] = {
    {"--layers", "N", "self-attention layers in the stack (batch 1)", CLI_U32, O(layers), 1},
    {"--embed", "E", "embedding width", CLI_U32, O(embed), 1},
    {"--heads", "H", "heads", CLI_U32, O(heads), 1},
    {"--length", "L", "tokens", CLI_U32, O(length), 1},
    {"--rounds", "R", "passes of the stack each way, alternating", CLI_U32, O(rounds), 1},
    CLI_DEVICE_OPTION(overhead_options, device),
};

static double now_us(void) { return cli_now() * 1e6; }

typedef struct stack {
    uint32_t n, E, L;
    vkattn_layer **layers;
    vkattn_tensor **blocking, **submitted; /* n + 1 activations each: x0 -> x1 -> ... -> xn */
    float *weights;
} stack;

static vkattn_status stack_make(vkattn_context *ctx, stack *s, uint32_t H)
{
    const uint32_t E = s->E, n = s->n;
    const size_t per_layer = 4 * (size_t)E * E + 4 * E;
    s->layers = calloc(n, sizeof *s->layers);
    s->blocking = calloc(n + 1, sizeof *s->blocking);
    s->submitted = calloc(n + 1, sizeof *s->submitted);
    s->weights = malloc(per_layer * n * sizeof(float));
    if (!s->layers || !s->blocking || !s->submitted || !s->weights) return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    cli_fill_random(s->weights, per_layer * n, 2024, 1.0f / sqrtf((float)E));
    vkattn_layer_desc desc = {.embed_dim = E, .num_heads = H};
    vkattn_status status = VKATTN_OK;
    for (uint32_t i = 0; i < n && status == VKATTN_OK; i++) {
        float *w = s->weights + per_layer * i;
        vkattn_weights lw = {.in_proj_weight = w, .in_proj_bias = w + 3 * (size_t)E * E,
                             .out_proj_weight = w + 3 * (size_t)E * E + 3 * E, .out_proj_bias = w + 4 * (size_t)E * E + 3 * E};
        status = vkattn_layer_create(ctx, &desc, &lw, &s->layers[i]);
    }
    const uint32_t dims[3] = {1, s->L, E};
    for (uint32_t i = 0; i <= n && status == VKATTN_OK; i++) {
        status = vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &s->blocking[i]);
        if (status == VKATTN_OK) status = vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &s->submitted[i]);
    }
    if (status != VKATTN_OK) return status;
    float *x = malloc((size_t)s->L * E * sizeof(float));
    if (!x) return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t i = 0; i < (size_t)s->L * E; i++) x[i] = sinf(0.37f * (float)i);
    status = vkattn_tensor_write(s->blocking[0], x, (size_t)s->L * E * sizeof(float));
    if (status == VKATTN_OK) status = vkattn_tensor_write(s->submitted[0], x, (size_t)s->L * E * sizeof(float));
    free(x);
    return status;
}

static void stack_free(stack *s)
{
    for (uint32_t i = 0; s->layers && i < s->n; i++) vkattn_layer_destroy(s->layers[i]);
    for (uint32_t i = 0; s->blocking && i <= s->n; i++) vkattn_tensor_destroy(s->blocking[i]);
    for (uint32_t i = 0; s->submitted && i <= s->n; i++) vkattn_tensor_destroy(s->submitted[i]);
    free(s->layers), free(s->blocking), free(s->submitted), free(s->weights);
}

/* One pass of the stack each way; adds the microseconds to *blocking_us, *submit_us (wall) and
 * *calls_us (the submission's add and submit calls: the host time an application gives up). */
static vkattn_status one_round(stack *s, vkattn_submission *sub, double *blocking_us, double *submit_us,
                               double *calls_us)
{
    vkattn_status status = VKATTN_OK;
    double t0 = now_us();
    for (uint32_t i = 0; i < s->n && status == VKATTN_OK; i++) {
        vkattn_forward_desc f = {.query = s->blocking[i], .output = s->blocking[i + 1], .causal = 1};
        status = vkattn_forward(s->layers[i], &f);
    }
    double t1 = now_us();
    for (uint32_t i = 0; i < s->n && status == VKATTN_OK; i++) {
        vkattn_forward_desc f = {.query = s->submitted[i], .output = s->submitted[i + 1], .causal = 1};
        status = vkattn_submission_add(sub, s->layers[i], &f);
    }
    if (status == VKATTN_OK) status = vkattn_submission_submit(sub);
    double t2 = now_us();
    if (status == VKATTN_OK) status = vkattn_submission_wait(sub);
    double t3 = now_us();
    *blocking_us = t1 - t0, *submit_us = t3 - t1, *calls_us = t2 - t1;
    return status;
}

int cmd_overhead(int argc, char **argv)
{
    overhead_options o = {NULL, 8, 64, 4, 16, 50};
    cli_command c = {"overhead", NULL,
                     "Runs the stack both ways: blocking vkattn_forward per layer, then one vkattn_submission of all\n"
                     "of them; prints the median wall time per forward of each, the host time spent in the\n"
                     "submission's calls, and checks that both ways give identical outputs.\n" CLI_EXIT_HELP,
                     {{NULL, k_overhead_rows, CLI_COUNT(k_overhead_rows), &o}}};
    int rc = cli_parse(&c, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    const uint32_t n = o.layers, E = o.embed, H = o.heads, L = o.length, rounds = o.rounds;
    if (n > 1024 || rounds > 100000) {
        fprintf(stderr, "vkattn overhead: at most 1024 layers and 100000 rounds\n");
        return 2;
    }
    if ((rc = cli_check_head_split("overhead", "--embed", E, H))) return rc;
    vkattn_context *ctx = NULL;
    if ((rc = cli_open_context("overhead", o.device, &ctx))) return rc;
    stack s = {.n = n, .E = E, .L = L};
    vkattn_submission *sub = NULL;
    double *samples = malloc(3 * (size_t)rounds * sizeof(double));
    float *out_blocking = malloc((size_t)L * E * sizeof(float)), *out_submitted = malloc((size_t)L * E * sizeof(float));
    vkattn_status status = samples && out_blocking && out_submitted ? stack_make(ctx, &s, H) : VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    if (status == VKATTN_OK) status = vkattn_submission_create(ctx, &sub);
    double ignored[3];
    /* The first round compiles the kernels: not counted. */
    if (status == VKATTN_OK) status = one_round(&s, sub, &ignored[0], &ignored[1], &ignored[2]);
    for (uint32_t r = 0; r < rounds && status == VKATTN_OK; r++)
        status = one_round(&s, sub, &samples[r], &samples[rounds + r], &samples[2 * rounds + r]);
    if (status == VKATTN_OK) status = vkattn_tensor_read(s.blocking[n], out_blocking, (size_t)L * E * sizeof(float));
    if (status == VKATTN_OK) status = vkattn_tensor_read(s.submitted[n], out_submitted, (size_t)L * E * sizeof(float));
    if (status != VKATTN_OK) {
        rc = cli_fail("overhead", "running the stack", status, vkattn_context_last_error(ctx));
    } else if (memcmp(out_blocking, out_submitted, (size_t)L * E * sizeof(float)) != 0) {
        fprintf(stderr, "vkattn overhead: the submission's output differs from the blocking forwards' output\n");
        rc = CLI_EXIT_FAILURE;
    } else {
        double blocking = cli_median(samples, rounds) / n, submitted = cli_median(samples + rounds, rounds) / n,
               calls = cli_median(samples + 2 * rounds, rounds) / n;
        printf("stack: %u self-attention layers, B = 1, L = %u, E = %u, H = %u, fp32; %u rounds each way, alternating\n",
               n, L, E, H, rounds);
        printf("blocking vkattn_forward       %9.1f us per forward (wall, median)\n", blocking);
        printf("one submission of %-4u        %9.1f us per forward (wall, median)   %.2fx\n", n, submitted,
               blocking / submitted);
        printf("  of which add + submit calls %9.1f us per forward (host; the wait is free for other work)\n", calls);
        printf("outputs identical: yes\n");
    }
    vkattn_submission_destroy(sub);
    stack_free(&s);
    free(samples), free(out_blocking), free(out_submitted);
    vkattn_context_destroy(ctx);
    return rc;
}
