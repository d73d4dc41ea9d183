/* Robustness on a device:
 *  - threads, each with its own context, run forwards at the same time and all get the reference
 *    result (max-abs <= 1e-5 * max(1, |ref|));
 *  - shapes whose sizes overflow size_t or uint32 are refused before anything is allocated;
 *  - NaN and Inf in inputs or weights propagate as IEEE says, on both device paths exactly where
 *    the CPU path has them (never hidden, never a crash). */
#include <pthread.h>

#include "gpu_test.h"

static vkattn_context *ctx;

typedef struct thread_job {
    int index;
    int failures;
    char message[600];
} thread_job;

static void *run_thread(void *arg)
{
    thread_job *job = arg;
    vkattn_context *c = NULL;
    vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON};
    vkattn_error err = {0};
    if (vkattn_context_create(&desc, &c, &err) != VKATTN_OK) {
        snprintf(job->message, sizeof job->message, "context: %s", err.message);
        job->failures++;
        return NULL;
    }
    vkattn_layer_desc d = {.embed_dim = 32, .num_heads = 4, .add_zero_attn = job->index & 1};
    test_weights tw;
    test_weights_make(&tw, &d, 100 + job->index);
    vkattn_layer *layer = NULL;
    if (vkattn_layer_create(c, &d, &tw.w, &layer) != VKATTN_OK) job->failures++;
    for (int round = 0; layer && round < 6; round++) {
        uint32_t L = 5 + 7 * (uint32_t)round + (uint32_t)job->index;
        size_t n = (size_t)2 * L * 32;
        float *x = malloc(n * 4), *y = malloc(n * 4), *want = malloc(n * 4);
        test_rng rng = test_rng_make((unsigned long long)job->index * 31 + round);
        test_fill(&rng, x, n, 1.0f);
        vkattn_host_forward_desc f = {.batch = 2, .query_len = L, .query = x, .output = want, .causal = round & 1,
                                      .path = round % 3 == 2 ? VKATTN_PATH_UNFUSED : VKATTN_PATH_AUTO};
        vkattn_reference_forward(&d, &tw.w, &f, NULL);
        f.output = y;
        vkattn_status s = vkattn_forward_host(layer, &f);
        test_error e = test_compare(y, want, n);
        if (s != VKATTN_OK || e.max_abs > 1e-5 * (e.ref_max > 1 ? e.ref_max : 1)) {
            job->failures++;
            snprintf(job->message, sizeof job->message, "round %d: %s, max-abs %.3g", round, vkattn_status_name(s),
                     e.max_abs);
        }
        free(x), free(y), free(want);
    }
    if (vkattn_context_validation_messages(c)) job->failures++;
    vkattn_layer_destroy(layer);
    vkattn_context_destroy(c);
    test_weights_free(&tw);
    return NULL;
}

static void test_threads_with_own_contexts(void)
{
    enum { THREADS = 4 };
    pthread_t threads[THREADS];
    thread_job jobs[THREADS] = {0};
    for (int t = 0; t < THREADS; t++) {
        jobs[t].index = t;
        CHECK(pthread_create(&threads[t], NULL, run_thread, &jobs[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        pthread_join(threads[t], NULL);
        CHECK_MSG(jobs[t].failures == 0, "thread %d: %d failures (%s)", t, jobs[t].failures, jobs[t].message);
    }
}

static void test_absurd_shapes(void)
{
    vkattn_layer_desc d = {.embed_dim = 8, .num_heads = 2};
    test_weights tw;
    test_weights_make(&tw, &d, 1);
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &d, &tw.w, &layer), VKATTN_OK);
    float x[8] = {0}, y[8];
    /* B·L·E = 2^32 * 8: the product alone overflows uint32 indexing; nothing may be read. */
    vkattn_host_forward_desc f = {.batch = 1u << 16, .query_len = 1u << 16, .query = x, .output = y};
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_ERROR_SIZE_OVERFLOW);
    CHECK(strstr(vkattn_context_last_error(ctx), "2^32") != NULL);
    /* One head's L x S' score block past 2^32 (cross-attention with huge S): the unfused path
     * would index it with 32 bits, so it refuses before reading anything. */
    f = (vkattn_host_forward_desc){.batch = 1, .query_len = 70000, .key_len = 70000, .query = x, .key = x,
                                   .output = y, .path = VKATTN_PATH_UNFUSED};
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_ERROR_SIZE_OVERFLOW);
    CHECK(strstr(vkattn_context_last_error(ctx), "unfused") != NULL);
    /* A per-head mask whose B·H·L·S overflows. */
    uint8_t mask[4] = {0};
    f = (vkattn_host_forward_desc){.batch = 40000, .query_len = 300, .key_len = 300, .query = x, .key = x,
                                   .output = y, .attn_mask = mask, .attn_mask_dtype = VKATTN_DTYPE_BOOL,
                                   .attn_mask_per_head = 1};
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_ERROR_SIZE_OVERFLOW);
    /* S' = S + extra keys must not wrap. */
    vkattn_layer_desc extra = {.embed_dim = 8, .num_heads = 2, .add_zero_attn = 1};
    f = (vkattn_host_forward_desc){.batch = 1, .query_len = 1, .key_len = UINT32_MAX, .query = x, .key = x,
                                   .output = y};
    CHECK_STATUS(vkattn_reference_forward(&extra, &tw.w, &f, NULL), VKATTN_ERROR_SIZE_OVERFLOW);
    /* Device tensors: a product past size_t, and one past the allocation limit. */
    vkattn_tensor *t = NULL;
    uint32_t dims[4] = {UINT32_MAX, UINT32_MAX, UINT32_MAX, 2};
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 4, dims, &t), VKATTN_ERROR_SIZE_OVERFLOW);
    uint32_t big[3] = {1u << 20, 1u << 10, 1u << 10};
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, big, &t), VKATTN_ERROR_DEVICE_LIMIT);
    CHECK(t == NULL);
    /* The cost model takes absurd shapes without overflow (doubles). */
    vkattn_cost cost;
    CHECK_STATUS(vkattn_forward_cost(&d, UINT32_MAX, UINT32_MAX, UINT32_MAX, VKATTN_PATH_FUSED, VKATTN_WEIGHTS_NONE, &cost), VKATTN_OK);
    CHECK(cost.total_flops > 1e28 && isfinite(cost.total_flops));
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

/* The fused path never forms the L x S scores, so it takes L·S past 2^32: here L = S = 65537 with
 * every query seeing only the first 16 keys (valid_lens), which must equal attention over those
 * 16 keys alone (the CPU reference of the cut problem; the full one would take minutes). */
static void test_fused_past_2_32_scores(void)
{
    vkattn_layer_desc d = {.embed_dim = 8, .num_heads = 2};
    test_weights tw;
    test_weights_make(&tw, &d, 4);
    const uint32_t L = 65537, S = 65537, seen = 16;
    float *q = malloc((size_t)L * 8 * sizeof *q), *k = malloc((size_t)S * 8 * sizeof *k);
    float *y = malloc((size_t)L * 8 * sizeof *y), *want = malloc((size_t)L * 8 * sizeof *want);
    test_rng rng = test_rng_make(5);
    test_fill(&rng, q, (size_t)L * 8, 1.0f), test_fill(&rng, k, (size_t)S * 8, 1.0f);
    int32_t lens[1] = {(int32_t)seen};
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &d, &tw.w, &layer), VKATTN_OK);
    vkattn_host_forward_desc f = {.batch = 1, .query_len = L, .key_len = S, .query = q, .key = k, .output = y,
                                  .valid_lens = lens, .path = VKATTN_PATH_FUSED};
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    vkattn_host_forward_desc cut = {.batch = 1, .query_len = L, .key_len = seen, .query = q, .key = k, .output = want};
    CHECK_STATUS(vkattn_reference_forward(&d, &tw.w, &cut, NULL), VKATTN_OK);
    test_error e = test_compare(y, want, (size_t)L * 8);
    CHECK_MSG(e.nonfinite == 0 && e.max_abs <= 1e-5, "L = S = 65537: max-abs %.3g, %zu non-finite", e.max_abs,
              e.nonfinite);
    vkattn_layer_destroy(layer);
    free(q), free(k), free(y), free(want);
    test_weights_free(&tw);
}

/* Runs a forward with one poisoned input on both device paths and the CPU path; the NaN/Inf
 * pattern of the outputs must be identical and finite values must agree. */
static void check_poison(const char *what, int poison_query, int poison_key, int poison_weight, float value)
{
    vkattn_layer_desc d = {.embed_dim = 16, .num_heads = 2};
    test_weights tw;
    test_weights_make(&tw, &d, 9);
    if (poison_weight) ((float *)tw.w.in_proj_weight)[5] = value; /* row 5: head 0's Q */
    const uint32_t B = 2, L = 6, S = 7;
    float q[2 * 6 * 16], k[2 * 7 * 16], y[2 * 6 * 16], want[2 * 6 * 16];
    test_rng rng = test_rng_make(3);
    test_fill(&rng, q, sizeof q / 4, 1.0f), test_fill(&rng, k, sizeof k / 4, 1.0f);
    if (poison_query) q[(1 * L + 2) * 16 + 3] = value; /* batch 1, query 2 */
    if (poison_key) k[(0 * S + 4) * 16 + 1] = value;   /* batch 0, key 4 */
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .key_len = S, .query = q, .key = k, .output = want};
    CHECK_STATUS(vkattn_reference_forward(&d, &tw.w, &f, NULL), VKATTN_OK);
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &d, &tw.w, &layer), VKATTN_OK);
    size_t n = sizeof y / 4, poisoned = 0;
    for (size_t i = 0; i < n; i++) poisoned += !isfinite(want[i]);
    CHECK_MSG(poisoned > 0, "%s: the reference hid the non-finite input", what);
    const vkattn_path paths[2] = {VKATTN_PATH_FUSED, VKATTN_PATH_UNFUSED};
    for (int p = 0; p < 2 && layer; p++) {
        f.output = y, f.path = paths[p];
        CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
        size_t pattern = 0;
        for (size_t i = 0; i < n; i++) pattern += isnan(y[i]) != isnan(want[i]) || isinf(y[i]) != isinf(want[i]);
        test_error e = test_compare(y, want, n);
        CHECK_MSG(pattern == 0 && e.max_abs <= 1e-5 * (e.ref_max > 1 ? e.ref_max : 1),
                  "%s/%s: %zu non-finite positions differ, finite max-abs %.3g", what, vkattn_path_name(paths[p]),
                  pattern, e.max_abs);
    }
    printf("  %-24s %zu of %zu outputs non-finite on every path\n", what, poisoned, n);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

static void test_non_finite_propagates(void)
{
    check_poison("NaN in one query", 1, 0, 0, NAN);
    check_poison("+Inf in one query", 1, 0, 0, INFINITY);
    check_poison("NaN in one key", 0, 1, 0, NAN);
    check_poison("-Inf in one key", 0, 1, 0, -INFINITY);
    check_poison("NaN in a weight", 0, 0, 1, NAN);
}

int main(void)
{
    ctx = gpu_test_context();
    RUN_TEST(test_threads_with_own_contexts);
    RUN_TEST(test_absurd_shapes);
    RUN_TEST(test_fused_past_2_32_scores);
    RUN_TEST(test_non_finite_propagates);
    gpu_test_finish_context(ctx);
    return test_finish();
}
