/* Helpers shared by the GPU tests: a validated lavapipe context, random layers, comparisons. */
#ifndef VKATTN_GPU_TEST_H
#define VKATTN_GPU_TEST_H

#include <dlfcn.h>

#include "../tools/compare.h"
#include "test_util.h"

/* NVIDIA's driver, where it is installed, is always pinned: after 30 unload/reload cycles in one
 * process its vkCreateInstance fails (docs/KNOWN_ISSUES.md), and some tests open more contexts
 * than that one after another (a hand-run of attn_cm's rows on an H100 failed from the 31st on).
 * Sanitizer runs and the GPU day (VKATTN_TEST_PIN_DRIVERS=1) pin lavapipe and the validation layer
 * too: the Vulkan loader unloads them when an instance goes, so LeakSanitizer could not name their
 * frames and their own leftovers could not be told from ours; pinning them keeps their symbols for
 * the narrow suppressions in tests/lsan.supp. (Not library code: the library never loads drivers
 * itself.) */
static inline void gpu_test_pin_drivers(void)
{
    const char *pin = getenv("VKATTN_TEST_PIN_DRIVERS");
    const int all = pin && strcmp(pin, "1") == 0;
    const struct {
        const char *name;
        int expected; /* say so when it cannot be pinned */
        int always;   /* pinned without VKATTN_TEST_PIN_DRIVERS */
    } modules[] = {{"libvulkan_lvp.so", 1, 0}, {"libVkLayer_khronos_validation.so", 1, 0}, {"libGLX_nvidia.so.0", 0, 1}};
    for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++)
        if ((all || modules[i].always) && !dlopen(modules[i].name, RTLD_NOW | RTLD_NODELETE | RTLD_LOCAL) &&
            modules[i].expected)
            fprintf(stderr, "note: could not pin %s: %s\n", modules[i].name, dlerror());
}

/* Opens a context with validation on (when installed) on the device the environment names
 * (ctest sets VKATTN_DEVICE=llvmpipe). Exits the test with failure if there is no device. */
static inline vkattn_context *gpu_test_context(void)
{
    gpu_test_pin_drivers();
    vkattn_context *ctx = NULL;
    vkattn_error error = {0};
    vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON};
    vkattn_status status = vkattn_context_create(&desc, &ctx, &error);
    if (status != VKATTN_OK) {
        fprintf(stderr, "cannot open a Vulkan context: %s: %s\n", vkattn_status_name(status), error.message);
        exit(1);
    }
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    printf("device: %s (%s)%s\n", info.name, info.driver_info,
           vkattn_context_validation_enabled(ctx) ? ", validation on"
                                                  : ", validation layer NOT installed: validation not checked");
    return ctx;
}

/* Fails the test if the validation layer reported anything, then destroys the context. */
static inline void gpu_test_finish_context(vkattn_context *ctx)
{
    uint32_t messages = vkattn_context_validation_messages(ctx);
    CHECK_MSG(messages == 0, "%u validation messages (see above)", messages);
    vkattn_context_destroy(ctx);
}

/* Weights for a layer, filled with Xavier-uniform-like random values. */
typedef struct test_weights {
    vkattn_layer_desc desc;
    vkattn_weights w;
    float *block;
    float *sinks; /* test_weights_add_sinks */
} test_weights;

static inline void test_weights_make(test_weights *tw, const vkattn_layer_desc *desc, unsigned long long seed)
{
    const size_t E = desc->embed_dim, kd = desc->kdim ? desc->kdim : E, vd = desc->vdim ? desc->vdim : E;
    /* Eq = H·D and Ek = H_kv·D: the rows of W_Q and of W_K, W_V (D = head_dim, else E / H);
     * grouped-query layers take q/k/v_proj_weight. */
    const size_t D = desc->head_dim ? desc->head_dim : E / desc->num_heads, Eq = desc->num_heads * D;
    const size_t Ek = desc->num_kv_heads ? desc->num_kv_heads * D : Eq;
    /* q/k norms: D values each per head, or a whole row's */
    const size_t nq = desc->qk_norm == VKATTN_QK_NORM_ROW ? Eq : D, nk = desc->qk_norm == VKATTN_QK_NORM_ROW ? Ek : D;
    int packed = kd == E && vd == E && Ek == Eq;
    size_t n = Eq * E + Ek * kd + Ek * vd + Eq + 2 * Ek + E * Eq + E + 2 * Ek + nq + nk;
    tw->desc = *desc;
    tw->sinks = NULL;
    tw->block = malloc(n * sizeof(float));
    memset(&tw->w, 0, sizeof tw->w);
    test_rng rng = test_rng_make(seed);
    float *at = tw->block;
    float a_in = sqrtf(6.0f / (float)(E + Eq)), a_k = sqrtf(6.0f / (float)(Ek + kd)), a_v = sqrtf(6.0f / (float)(Ek + vd));
    if (packed) {
        test_fill(&rng, at, (Eq + 2 * Ek) * E, a_in), tw->w.in_proj_weight = at, at += (Eq + 2 * Ek) * E;
    } else {
        test_fill(&rng, at, Eq * E, a_in), tw->w.q_proj_weight = at, at += Eq * E;
        test_fill(&rng, at, Ek * kd, a_k), tw->w.k_proj_weight = at, at += Ek * kd;
        test_fill(&rng, at, Ek * vd, a_v), tw->w.v_proj_weight = at, at += Ek * vd;
    }
    test_fill(&rng, at, E * Eq, a_in), tw->w.out_proj_weight = at, at += E * Eq;
    if (!desc->no_bias) {
        test_fill(&rng, at, Eq + 2 * Ek, 0.1f), tw->w.in_proj_bias = at, at += Eq + 2 * Ek;
        test_fill(&rng, at, E, 0.1f), tw->w.out_proj_bias = at, at += E;
    }
    if (desc->add_bias_kv) {
        test_fill(&rng, at, Ek, 0.5f), tw->w.bias_k = at, at += Ek;
        test_fill(&rng, at, Ek, 0.5f), tw->w.bias_v = at, at += Ek;
    }
    if (desc->qk_norm) { /* around 1 (Gemma's w around 0, its 1 + w around 1) */
        float centre = desc->qk_norm_plus_one ? 0.0f : 1.0f;
        test_fill(&rng, at, nq + nk, 0.3f);
        for (size_t i = 0; i < nq + nk; i++) at[i] += centre;
        tw->w.q_norm_weight = at, tw->w.k_norm_weight = at + nq, at += nq + nk;
    }
}

/* Gives the weights a sink logit per head (vkattn_weights.sinks), uniform in [lo, hi). */
static inline void test_weights_add_sinks(test_weights *tw, float lo, float hi, unsigned long long seed)
{
    test_rng rng = test_rng_make(seed);
    tw->sinks = malloc(tw->desc.num_heads * sizeof(float));
    for (uint32_t h = 0; h < tw->desc.num_heads; h++) tw->sinks[h] = lo + (hi - lo) * (test_rng_float(&rng) * 0.5f + 0.5f);
    tw->w.sinks = tw->sinks;
}

static inline void test_weights_free(test_weights *tw)
{
    free(tw->block);
    free(tw->sinks);
}

/* Max-abs error, NMSE, max |ref| and the non-finite values that differ, through the module the CLI
 * checks with (tools/compare.h: its error statistics and its one table of tolerances). */
typedef compare_stats test_error;

static inline test_error test_compare(const float *got, const float *want, size_t n)
{
    return compare_arrays(got, want, n);
}

#endif
