/* Failure injection: every host allocation and every fallible Vulkan call that a context makes is
 * made to fail in turn (the Nth one, N = 1, 2, ...); device loss is injected at every third
 * Vulkan call point (each needs a fresh context, and all of them would take minutes); the
 * scenarios' walks fail only a sample where the environment names one (fault_sample.h). Each
 * failure must come back as the right status with a message, leak nothing (LeakSanitizer, in the
 * sanitizer build), produce no validation message, and leave the context usable (the same work
 * then succeeds) or, for an injected VK_ERROR_DEVICE_LOST, clearly dead: every later call says
 * DEVICE_LOST. */
#include "api/context.h"
#include "fault_sample.h"
#include "gpu_test.h"

/* One unit of work on a context; it must destroy whatever it created, whatever happens. */
typedef vkattn_status (*scenario_fn)(vkattn_context *ctx);

static vkattn_status make_layer(vkattn_context *ctx, const vkattn_layer_desc *d, test_weights *tw, vkattn_layer **out)
{
    test_weights_make(tw, d, 5);
    vkattn_status s = vkattn_layer_create(ctx, d, &tw->w, out);
    if (s != VKATTN_OK) test_weights_free(tw);
    return s;
}

static vkattn_status scenario_fused_forward(vkattn_context *ctx)
{
    vkattn_layer_desc d = {.embed_dim = 16, .num_heads = 2, .add_bias_kv = 1};
    test_weights tw;
    vkattn_layer *layer = NULL;
    vkattn_status s = make_layer(ctx, &d, &tw, &layer);
    if (s != VKATTN_OK) return s;
    float x[2 * 5 * 16] = {0}, y[2 * 5 * 16], lse[2 * 2 * 5];
    for (int i = 0; i < 2 * 5 * 16; i++) x[i] = (float)(i % 7) * 0.1f;
    vkattn_host_forward_desc f = {.batch = 2, .query_len = 5, .query = x, .output = y, .causal = 1, .lse = lse};
    s = vkattn_forward_host(layer, &f);
    if (s == VKATTN_OK) s = vkattn_layer_set_timing(layer, 1);
    if (s == VKATTN_OK) s = vkattn_forward_host(layer, &f);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
    return s;
}

static vkattn_status scenario_unfused_tensors(vkattn_context *ctx)
{
    vkattn_layer_desc d = {.embed_dim = 8, .num_heads = 2, .kdim = 4, .vdim = 4, .add_zero_attn = 1, .host_weights = VKATTN_HOST_WEIGHTS_COPY};
    test_weights tw;
    vkattn_layer *layer = NULL;
    vkattn_tensor *q = NULL, *k = NULL, *out = NULL, *w = NULL, *kpm = NULL;
    vkattn_status s = make_layer(ctx, &d, &tw, &layer);
    if (s != VKATTN_OK) return s;
    float qx[3 * 8] = {0}, kx[4 * 4] = {0};
    uint8_t pad[4] = {0, 1, 0, 0};
    if (s == VKATTN_OK) s = vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, 3, 8}, &q);
    if (s == VKATTN_OK) s = vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, 4, 4}, &k);
    if (s == VKATTN_OK) s = vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, 3, 8}, &out);
    if (s == VKATTN_OK) s = vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, 3, 5}, &w);
    if (s == VKATTN_OK) s = vkattn_tensor_create(ctx, VKATTN_DTYPE_BOOL, 2, (uint32_t[]){1, 4}, &kpm);
    if (s == VKATTN_OK) s = vkattn_tensor_write(q, qx, sizeof qx);
    if (s == VKATTN_OK) s = vkattn_tensor_write(k, kx, sizeof kx);
    if (s == VKATTN_OK) s = vkattn_tensor_write(kpm, pad, sizeof pad);
    vkattn_forward_desc f = {.query = q, .key = k, .key_padding_mask = kpm, .output = out, .attn_weights = w,
                             .average_weights = 1};
    if (s == VKATTN_OK) s = vkattn_forward(layer, &f);
    f.path = VKATTN_PATH_CPU;
    if (s == VKATTN_OK) s = vkattn_forward(layer, &f);
    uint8_t keep[2] = {0, 1};
    f.attn_weights = NULL, f.path = VKATTN_PATH_AUTO;
    if (s == VKATTN_OK) s = vkattn_layer_set_head_mask(layer, keep);
    if (s == VKATTN_OK) s = vkattn_forward(layer, &f);
    float back[3 * 8];
    if (s == VKATTN_OK) s = vkattn_tensor_read(out, back, sizeof back);
    vkattn_tensor_destroy(q), vkattn_tensor_destroy(k), vkattn_tensor_destroy(out), vkattn_tensor_destroy(w);
    vkattn_tensor_destroy(kpm);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
    return s;
}

/* Two chained forwards in one submission, submitted, polled, waited for, read back. */
static vkattn_status scenario_submission(vkattn_context *ctx)
{
    vkattn_layer_desc d = {.embed_dim = 8, .num_heads = 2};
    test_weights tw;
    vkattn_layer *a = NULL, *b = NULL;
    vkattn_tensor *x = NULL, *y = NULL, *z = NULL;
    vkattn_submission *sub = NULL;
    vkattn_status s = make_layer(ctx, &d, &tw, &a);
    if (s != VKATTN_OK) return s;
    s = vkattn_layer_create(ctx, &d, &tw.w, &b);
    float host[2 * 3 * 8];
    for (int i = 0; i < 2 * 3 * 8; i++) host[i] = (float)(i % 5) * 0.3f - 0.6f;
    const uint32_t dims[3] = {2, 3, 8};
    if (s == VKATTN_OK) s = vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &x);
    if (s == VKATTN_OK) s = vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &y);
    if (s == VKATTN_OK) s = vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &z);
    if (s == VKATTN_OK) s = vkattn_tensor_write(x, host, sizeof host);
    if (s == VKATTN_OK) s = vkattn_submission_create(ctx, &sub);
    vkattn_forward_desc f1 = {.query = x, .output = y, .causal = 1}, f2 = {.query = y, .output = z};
    if (s == VKATTN_OK) s = vkattn_submission_add(sub, a, &f1);
    if (s == VKATTN_OK) s = vkattn_submission_add(sub, b, &f2);
    if (s == VKATTN_OK) s = vkattn_submission_submit(sub);
    if (s == VKATTN_OK && (s = vkattn_submission_poll(sub)) == VKATTN_ERROR_BUSY) s = vkattn_submission_wait(sub);
    if (s == VKATTN_OK) s = vkattn_tensor_read_region(z, 8 * sizeof(float), host, 8 * sizeof(float));
    vkattn_submission_destroy(sub);
    vkattn_tensor_destroy(x), vkattn_tensor_destroy(y), vkattn_tensor_destroy(z);
    vkattn_layer_destroy(a), vkattn_layer_destroy(b);
    test_weights_free(&tw);
    return s;
}

/* A KV cache: a prompt of two sequences, a decode step's plan explained, the step, a fork with a
 * block copy, a rollback into a shared block (its copy), a free; a refused forward or rollback
 * must leave the sequences' lengths as they were (checked after every fault). */
static vkattn_status scenario_cached(vkattn_context *ctx)
{
    vkattn_layer_desc d = {.embed_dim = 16, .num_heads = 4, .num_kv_heads = 2, .rope_theta = 10000};
    test_weights tw;
    vkattn_layer *layer = NULL;
    vkattn_kv_cache *cache = NULL;
    vkattn_status s = make_layer(ctx, &d, &tw, &layer);
    if (s != VKATTN_OK) return s;
    vkattn_kv_cache_desc cd = {.num_kv_heads = 2, .head_dim = 4, .num_blocks = 8, .block_size = 4, .max_sequences = 3};
    s = vkattn_kv_cache_create(ctx, &cd, &cache);
    float x[7 * 16], y[7 * 16];
    for (int i = 0; i < 7 * 16; i++) x[i] = (float)(i % 5) * 0.2f;
    uint32_t len0 = 0, len1 = 0;
    vkattn_cached_forward_desc f = {.batch = 2, .new_tokens = (uint32_t[]){5, 2}, .query = x, .output = y};
    if (s == VKATTN_OK) s = vkattn_forward_cached(layer, cache, &f);
    f.new_tokens = NULL, f.kv_splits = 2;
    char plan[1 << 12];
    if (s == VKATTN_OK) s = vkattn_forward_cached_explain(layer, cache, &f, plan, sizeof plan, NULL);
    vkattn_status step = s == VKATTN_OK ? vkattn_forward_cached(layer, cache, &f) : s;
    if (s == VKATTN_OK) {
        vkattn_kv_cache_seq_length(cache, 0, &len0), vkattn_kv_cache_seq_length(cache, 1, &len1);
        if (step != VKATTN_OK && (len0 != 5 || len1 != 2)) fprintf(stderr, "a failed step changed the lengths\n"), s = 99;
        else s = step;
    }
    if (s == VKATTN_OK) s = vkattn_kv_cache_fork(cache, 0, 2);
    if (s == VKATTN_OK) {
        s = vkattn_kv_cache_truncate(cache, 2, 3); /* 6 tokens: block 0 shared with 0, and now 2's own copy */
        uint32_t len2 = 0;
        vkattn_kv_cache_seq_length(cache, 2, &len2);
        if (len2 != (s == VKATTN_OK ? 3u : 6u)) fprintf(stderr, "a rollback left length %u\n", len2), s = 99;
    }
    if (s == VKATTN_OK) s = vkattn_kv_cache_free_seq(cache, 1);
    vkattn_kv_cache_destroy(cache);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
    return s;
}

static vkattn_status scenario_peak(vkattn_context *ctx)
{
    vkattn_peak peak;
    return vkattn_measure_peak(ctx, 0.001, &peak);
}

static vkattn_context *open_context(const vka_faults *faults, vkattn_status *status)
{
    vkattn_context *ctx = NULL;
    vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_DEFAULT};
    *status = vka_context_create_with_faults(&desc, faults, &ctx, NULL);
    return ctx;
}

typedef struct walk_totals {
    uint64_t host_points, vk_points, lost_points;
} walk_totals;

/* Runs `fn` once unarmed to count its points, then fails each point in turn (or the sample's). */
static void walk(const char *name, scenario_fn fn, walk_totals *totals)
{
    const fault_sample sample = fault_sample_from_env();
    vkattn_status s;
    vkattn_context *ctx = open_context(NULL, &s);
    CHECK_STATUS(s, VKATTN_OK);
    if (!ctx) return;
    vka_context_set_faults(ctx, NULL);
    CHECK_STATUS(fn(ctx), VKATTN_OK);
    uint64_t host_points = ctx->dev.faults.host_calls, vk_points = ctx->dev.faults.vk_calls;
    gpu_test_finish_context(ctx);

    int bad = 0;
    for (int kind = 0; kind < 3; kind++) {
        uint64_t points = kind == 0 ? host_points : vk_points;
        /* the sample counts device losses among their own points, every third Vulkan point */
        for (uint64_t k = sample.first, n; (n = kind == 2 ? 3 * k - 2 : k) <= points; k += sample.stride) {
            ctx = open_context(NULL, &s);
            if (!ctx) continue;
            vka_faults f = {0};
            if (kind == 0) f.host_fail_at = n;
            else f.vk_fail_at = n, f.vk_result = kind == 2 ? VK_ERROR_DEVICE_LOST : 0;
            vka_context_set_faults(ctx, &f);
            vkattn_status expected = kind == 0   ? VKATTN_ERROR_OUT_OF_HOST_MEMORY
                                     : kind == 1 ? VKATTN_ERROR_OUT_OF_DEVICE_MEMORY
                                                 : VKATTN_ERROR_DEVICE_LOST;
            s = fn(ctx);
            if (s != expected || !*vkattn_context_last_error(ctx)) {
                bad++;
                fprintf(stderr, "%s: fault %d at point %llu gave %s (%s)\n", name, kind, (unsigned long long)n,
                        vkattn_status_name(s), vkattn_context_last_error(ctx));
            }
            vka_context_set_faults(ctx, NULL);
            /* Usable again after running out of memory; dead for good after losing the device. */
            s = fn(ctx);
            if (s != (kind == 2 ? VKATTN_ERROR_DEVICE_LOST : VKATTN_OK)) {
                bad++;
                fprintf(stderr, "%s: after fault %d at point %llu the context gave %s (%s)\n", name, kind,
                        (unsigned long long)n, vkattn_status_name(s), vkattn_context_last_error(ctx));
            }
            gpu_test_finish_context(ctx);
        }
    }
    CHECK_MSG(bad == 0, "%s: %d failure points misbehaved", name, bad);
    printf("  %-18s %3llu host allocation points, %3llu Vulkan call points (every third also as device loss)%s\n",
           name, (unsigned long long)host_points, (unsigned long long)vk_points, fault_sample_note(sample));
    totals->host_points += host_points;
    totals->vk_points += vk_points;
    totals->lost_points += (vk_points + 2) / 3;
}

static void test_context_create_faults(void)
{
    vkattn_status s;
    vkattn_context *ctx = open_context(NULL, &s);
    CHECK_STATUS(s, VKATTN_OK);
    if (!ctx) return;
    uint64_t host_points = ctx->dev.faults.host_calls, vk_points = ctx->dev.faults.vk_calls;
    vkattn_context_destroy(ctx);
    int bad = 0;
    for (uint64_t n = 1; n <= host_points + vk_points; n++) {
        vka_faults f = {0};
        if (n <= host_points) f.host_fail_at = n;
        else f.vk_fail_at = n - host_points;
        ctx = open_context(&f, &s);
        vkattn_status expected = n <= host_points ? VKATTN_ERROR_OUT_OF_HOST_MEMORY : VKATTN_ERROR_OUT_OF_DEVICE_MEMORY;
        if (s != expected || ctx) {
            bad++;
            fprintf(stderr, "context create: fault at point %llu gave %s\n", (unsigned long long)n, vkattn_status_name(s));
        }
        vkattn_context_destroy(ctx);
    }
    CHECK_MSG(bad == 0, "context create: %d failure points misbehaved", bad);
    printf("  %-18s %3llu host allocation points, %3llu Vulkan call points\n", "context_create",
           (unsigned long long)host_points, (unsigned long long)vk_points);
}

/* A failed vkattn_layer_set_head_mask leaves the layer as it was: after a failure at each of its
 * allocation and Vulkan call points, the next forward gives exactly the old result. */
static void test_head_mask_failure_keeps_layer(void)
{
    vkattn_status s;
    vkattn_context *ctx = open_context(NULL, &s);
    CHECK_STATUS(s, VKATTN_OK);
    if (!ctx) return;
    vkattn_layer_desc d = {.embed_dim = 16, .num_heads = 4, .host_weights = VKATTN_HOST_WEIGHTS_COPY};
    test_weights tw;
    vkattn_layer *layer = NULL;
    CHECK_STATUS(make_layer(ctx, &d, &tw, &layer), VKATTN_OK);
    float x[3 * 16], before[3 * 16], after[3 * 16];
    for (int i = 0; i < 3 * 16; i++) x[i] = (float)(i % 5) * 0.2f - 0.4f;
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 3, .query = x, .output = before};
    CHECK_STATUS(vkattn_forward_host(layer, &f), VKATTN_OK);
    const uint8_t keep[4] = {1, 0, 1, 0};
    vka_context_set_faults(ctx, NULL);
    CHECK_STATUS(vkattn_layer_set_head_mask(layer, keep), VKATTN_OK); /* count its points */
    uint64_t host_points = ctx->dev.faults.host_calls, vk_points = ctx->dev.faults.vk_calls;
    CHECK_STATUS(vkattn_layer_set_head_mask(layer, NULL), VKATTN_OK);
    int bad = 0;
    for (uint64_t n = 1; n <= host_points + vk_points; n++) {
        vka_faults faults = {0};
        if (n <= host_points) faults.host_fail_at = n;
        else faults.vk_fail_at = n - host_points;
        vka_context_set_faults(ctx, &faults);
        s = vkattn_layer_set_head_mask(layer, keep);
        vka_context_set_faults(ctx, NULL);
        f.output = after;
        bad += s == VKATTN_OK || vkattn_forward_host(layer, &f) != VKATTN_OK || memcmp(before, after, sizeof before);
        vkattn_layer_desc now;
        vkattn_layer_get_desc(layer, &now);
        for (uint32_t h = 0; h < 4; h++) bad += now.head_mask[h] != 1;
    }
    CHECK_MSG(bad == 0, "%d failed head-mask changes left the layer changed", bad);
    printf("  %llu host allocation and %llu Vulkan call points of set_head_mask: layer unchanged after each\n",
           (unsigned long long)host_points, (unsigned long long)vk_points);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
    gpu_test_finish_context(ctx);
}

static walk_totals totals;

static void test_fused_forward_faults(void) { walk("fused_forward", scenario_fused_forward, &totals); }
static void test_unfused_tensor_faults(void) { walk("unfused_tensors", scenario_unfused_tensors, &totals); }
static void test_peak_faults(void) { walk("peak", scenario_peak, &totals); }
static void test_submission_faults(void) { walk("submission", scenario_submission, &totals); }
static void test_cached_faults(void) { walk("cached", scenario_cached, &totals); }

/* Usage: test_faults [context|fused|unfused|submission|peak] (no argument = all; ctest runs them apart, in
 * parallel). */
int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : "";
    gpu_test_pin_drivers();
    if (!*only || !strcmp(only, "context")) RUN_TEST(test_context_create_faults);
    if (!*only || !strcmp(only, "fused")) RUN_TEST(test_fused_forward_faults);
    if (!*only || !strcmp(only, "submission")) RUN_TEST(test_submission_faults);
    if (!*only || !strcmp(only, "unfused")) RUN_TEST(test_unfused_tensor_faults);
    if (!*only || !strcmp(only, "context")) RUN_TEST(test_head_mask_failure_keeps_layer);
    if (!*only || !strcmp(only, "peak")) RUN_TEST(test_peak_faults);
    if (!*only || !strcmp(only, "cached")) RUN_TEST(test_cached_faults);
    printf("failure points of the walks: %llu host allocations, %llu Vulkan calls, %llu device losses%s\n",
           (unsigned long long)totals.host_points, (unsigned long long)totals.vk_points,
           (unsigned long long)totals.lost_points, fault_sample_note(fault_sample_from_env()));
    return test_finish();
}
