/* Head importance from the device matches the CPU path's: every head's relative L2 and max-abs
 * output change within 1e-4 relative (+1e-6 absolute) — the figures are differences of two
 * forwards, each within ~1e-7 of the reference — and the ranking is the same. Also checks that a
 * starting mask leaves pruned heads unmeasured, and that the layer's mask is restored. */
#include "gpu_test.h"
#include "head_importance.h"

static void check_case(vkattn_context *ctx, uint32_t E, uint32_t H, uint32_t L, const uint8_t *start, int causal)
{
    vkattn_layer_desc d = {.embed_dim = E, .num_heads = H, .head_mask = start, .host_weights = VKATTN_HOST_WEIGHTS_COPY};
    test_weights tw;
    test_weights_make(&tw, &d, E + H);
    size_t n = (size_t)2 * L * E;
    float *x = malloc(n * sizeof(float));
    test_rng rng = test_rng_make(L);
    test_fill(&rng, x, n, 1.0f);
    vkattn_host_forward_desc f = {.batch = 2, .query_len = L, .query = x, .causal = causal};
    head_runner cpu = {.desc = d, .weights = &tw.w, .forward = f, .out_elems = n};
    head_runner gpu = cpu;
    CHECK_STATUS(vkattn_layer_create(ctx, &d, &tw.w, &gpu.layer), VKATTN_OK);
    head_score *a = calloc(H, sizeof *a), *b = calloc(H, sizeof *b);
    vkattn_error err = {0};
    CHECK_STATUS(head_importance_measure(&cpu, start, a, &err), VKATTN_OK);
    CHECK_STATUS(head_importance_measure(&gpu, start, b, &err), VKATTN_OK);
    for (uint32_t h = 0; h < H; h++) {
        CHECK(a[h].active == b[h].active && a[h].active == (!start || start[h]));
        CHECK_MSG(fabs(a[h].rel_l2 - b[h].rel_l2) <= 1e-4 * a[h].rel_l2 + 1e-6, "head %u rel_l2 %.9g vs %.9g", h,
                  b[h].rel_l2, a[h].rel_l2);
        CHECK_MSG(fabs(a[h].max_abs - b[h].max_abs) <= 1e-4 * a[h].max_abs + 1e-6, "head %u max_abs %.9g vs %.9g", h,
                  b[h].max_abs, a[h].max_abs);
        if (!a[h].active) CHECK(b[h].rel_l2 == 0 && b[h].max_abs == 0);
        else CHECK(a[h].rel_l2 > 0);
    }
    head_scores_rank(a, H);
    head_scores_rank(b, H);
    for (uint32_t k = 0; k < H; k++) CHECK_MSG(a[k].head == b[k].head, "rank %u: cpu head %u, gpu head %u", k, a[k].head, b[k].head);
    vkattn_layer_desc back;
    vkattn_layer_get_desc(gpu.layer, &back);
    for (uint32_t h = 0; h < H; h++) CHECK(back.head_mask[h] == (!start || start[h]));
    printf("  E=%u H=%u L=%u%s: most important head %u (rel L2 %.3f), least %u\n", E, H, L, start ? " (pre-pruned)" : "",
           a[0].head + 1, a[0].rel_l2, a[H - 1 - (start ? 1 : 0)].head + 1);
    vkattn_layer_destroy(gpu.layer);
    free(a), free(b), free(x);
    test_weights_free(&tw);
}

static vkattn_context *ctx;

static void test_gpu_matches_cpu(void)
{
    check_case(ctx, 32, 4, 9, NULL, 1);
    check_case(ctx, 64, 8, 17, NULL, 0);
    const uint8_t start[6] = {1, 1, 0, 1, 1, 1};
    check_case(ctx, 48, 6, 5, start, 1);
}

int main(void)
{
    ctx = gpu_test_context();
    RUN_TEST(test_gpu_matches_cpu);
    gpu_test_finish_context(ctx);
    return test_finish();
}
