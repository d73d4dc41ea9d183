/* Head pruning: a pruned layer's output equals the CPU path computed with the pruned heads'
 * context set to zero (tolerances as in test_gpu_vs_cpu: NMSE <= 1e-10, max-abs <= 1e-5 * max(1,
 * |ref|); fp16 storage NMSE <= 2e-6), on both device paths; masks can change between forwards;
 * requests a pruned layer cannot serve are refused; the cost model counts active heads only. */
#include "gpu_test.h"

static vkattn_context *ctx;

typedef struct prune_case {
    const char *name;
    uint32_t B, L, S, E, H, kdim, vdim;
    int bias_kv, zero_attn, causal;
    vkattn_dtype storage;
    uint8_t mask[8];
} prune_case;

static const prune_case cases[] = {
    {"self", 2, 17, 0, 32, 4, 0, 0, 0, 0, 1, VKATTN_DTYPE_F32, {1, 0, 1, 1}},
    {"self_one_left", 1, 33, 0, 48, 3, 0, 0, 0, 0, 0, VKATTN_DTYPE_F32, {0, 0, 1}},
    {"cross_kdim_extra", 2, 9, 13, 32, 4, 24, 40, 1, 1, 0, VKATTN_DTYPE_F32, {0, 1, 1, 0}},
    {"odd_head_dim", 2, 7, 7, 21, 3, 0, 0, 1, 0, 1, VKATTN_DTYPE_F32, {1, 0, 1}},
    {"fp16", 2, 17, 0, 32, 4, 0, 0, 0, 0, 1, VKATTN_DTYPE_F16, {0, 1, 0, 1}},
};

static void run_prune_case(const prune_case *c, int k)
{
    vkattn_layer_desc d = {.embed_dim = c->E, .num_heads = c->H, .kdim = c->kdim, .vdim = c->vdim,
                           .add_bias_kv = c->bias_kv, .add_zero_attn = c->zero_attn, .storage = c->storage,
                           .host_weights = VKATTN_HOST_WEIGHTS_COPY};
    test_weights tw;
    test_weights_make(&tw, &d, 40 + k);
    const uint32_t S = c->S ? c->S : c->L, kd = c->kdim ? c->kdim : c->E, vd = c->vdim ? c->vdim : c->E;
    size_t n = (size_t)c->B * c->L * c->E;
    float *q = malloc(n * 4), *kx = malloc((size_t)c->B * S * kd * 4), *vx = malloc((size_t)c->B * S * vd * 4);
    float *got = malloc(n * 4), *want = malloc(n * 4);
    test_rng rng = test_rng_make(7 + k);
    test_fill(&rng, q, n, 1.0f), test_fill(&rng, kx, (size_t)c->B * S * kd, 1.0f);
    test_fill(&rng, vx, (size_t)c->B * S * vd, 1.0f);
    vkattn_host_forward_desc f = {.batch = c->B, .query_len = c->L, .key_len = c->S, .query = q,
                                  .key = c->S ? kx : NULL, .value = c->S ? vx : NULL, .causal = c->causal};
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &d, &tw.w, &layer), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_set_head_mask(layer, c->mask), VKATTN_OK);
    vkattn_layer_desc pruned = d;
    pruned.head_mask = c->mask;
    f.output = want;
    CHECK_STATUS(vkattn_reference_forward(&pruned, &tw.w, &f, NULL), VKATTN_OK);
    double tol_nmse = c->storage == VKATTN_DTYPE_F16 ? 2e-6 : 1e-10, tol_rel = c->storage == VKATTN_DTYPE_F16 ? 1e-2 : 1e-5;
    const vkattn_path paths[2] = {VKATTN_PATH_FUSED, VKATTN_PATH_UNFUSED};
    for (int p = 0; p < 2 && layer; p++) {
        f.output = got, f.path = paths[p];
        CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
        test_error e = test_compare(got, want, n);
        double tol_abs = tol_rel * (e.ref_max > 1 ? e.ref_max : 1);
        CHECK_MSG(e.nmse <= tol_nmse && e.max_abs <= tol_abs && e.nonfinite == 0, "%s/%s: nmse %.3g max-abs %.3g",
                  c->name, vkattn_path_name(paths[p]), e.nmse, e.max_abs);
        printf("  %-18s %-8s max-abs %.2e nmse %.2e\n", c->name, vkattn_path_name(paths[p]), e.max_abs, e.nmse);
    }
    /* Un-pruning restores the full layer. */
    CHECK_STATUS(vkattn_layer_set_head_mask(layer, NULL), VKATTN_OK);
    f.output = want, f.path = VKATTN_PATH_AUTO;
    CHECK_STATUS(vkattn_reference_forward(&d, &tw.w, &f, NULL), VKATTN_OK);
    f.output = got;
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    test_error e = test_compare(got, want, n);
    CHECK_MSG(e.nmse <= tol_nmse, "%s: after un-pruning nmse %.3g", c->name, e.nmse);
    vkattn_layer_destroy(layer);
    free(q), free(kx), free(vx), free(got), free(want);
    test_weights_free(&tw);
}

static void test_pruned_equals_reference(void)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) run_prune_case(&cases[k], (int)k);
}

static void test_refusals(void)
{
    vkattn_layer_desc d = {.embed_dim = 16, .num_heads = 4, .host_weights = VKATTN_HOST_WEIGHTS_COPY};
    test_weights tw;
    test_weights_make(&tw, &d, 3);
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &d, &tw.w, &layer), VKATTN_OK);
    const uint8_t none[4] = {0, 0, 0, 0}, some[4] = {1, 1, 0, 1};
    CHECK_STATUS(vkattn_layer_set_head_mask(layer, none), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "at least one") != NULL);
    CHECK_STATUS(vkattn_layer_set_head_mask(layer, some), VKATTN_OK);
    vkattn_layer_desc back;
    vkattn_layer_get_desc(layer, &back);
    CHECK(back.head_mask && back.head_mask[2] == 0 && back.head_mask[3] == 1);
    float x[2 * 16] = {0}, y[2 * 16], w[4 * 2 * 2];
    uint8_t mask3[4 * 2 * 2] = {0};
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x, .output = y, .attn_weights = w};
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_ERROR_UNSUPPORTED);
    CHECK(strstr(vkattn_context_last_error(ctx), "pruned") != NULL);
    f.attn_weights = NULL, f.attn_mask = mask3, f.attn_mask_dtype = VKATTN_DTYPE_BOOL, f.attn_mask_per_head = 1;
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_ERROR_UNSUPPORTED);
    f.attn_mask = NULL, f.attn_mask_per_head = 0;
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_set_head_mask(NULL, some), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_layer_desc all_pruned = d;
    all_pruned.head_mask = none;
    vkattn_layer *bad = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &all_pruned, &tw.w, &bad), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

static void test_cost_counts_active_heads(void)
{
    const uint8_t half[8] = {1, 0, 1, 0, 1, 0, 1, 0};
    vkattn_layer_desc d = {.embed_dim = 512, .num_heads = 8, .host_weights = VKATTN_HOST_WEIGHTS_COPY};
    vkattn_cost full, pruned;
    CHECK_STATUS(vkattn_forward_cost(&d, 1, 1024, 0, VKATTN_PATH_FUSED, 0, &full), VKATTN_OK);
    d.head_mask = half;
    CHECK_STATUS(vkattn_forward_cost(&d, 1, 1024, 0, VKATTN_PATH_FUSED, 0, &pruned), VKATTN_OK);
    CHECK_NEAR(pruned.total_flops, full.total_flops / 2, 1.0);
    CHECK_NEAR(pruned.flops[VKATTN_STAGE_FUSED], full.flops[VKATTN_STAGE_FUSED] / 2, 1.0);
}

int main(void)
{
    ctx = gpu_test_context();
    RUN_TEST(test_pruned_equals_reference);
    RUN_TEST(test_refusals);
    RUN_TEST(test_cost_counts_active_heads);
    gpu_test_finish_context(ctx);
    return test_finish();
}
