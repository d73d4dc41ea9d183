/* For tests that also run under VKATTN_TUNING=gpu (ctest's *_gpu_tuning rows): what the GPU
 * tunings' kernels need of the device, read from the context's internals. */
#ifndef VKATTN_GPU_TUNING_TEST_H
#define VKATTN_GPU_TUNING_TEST_H

#include "api/context.h"
#include "gpu_test.h"

/* Whether VKATTN_TUNING asks for the class `name`: "name", or "name:FIELD=VALUE,..." */
static inline int gpu_test_tuning_is(const char *name)
{
    const char *tuning = getenv("VKATTN_TUNING");
    size_t n = strlen(name);
    return tuning && strncmp(tuning, name, n) == 0 && (tuning[n] == '\0' || tuning[n] == ':');
}

/* Under VKATTN_TUNING=gpu (with fields or not) the decoding tests mean to run the GPU-shaped builds
 * (matmul_vec, attn_paged_lanes), which the plan takes only where subgroups have arithmetic and
 * shuffles: on a device without them the test would quietly run the scalar builds, so it says so
 * and fails. */
static inline void gpu_test_expect_subgroup_kernels(const vkattn_context *ctx)
{
    if (gpu_test_tuning_is("gpu"))
        CHECK_MSG(ctx->dev.caps.subgroup_sums, "VKATTN_TUNING=gpu: this device has no subgroup arithmetic and shuffles "
                                               "on 4+ lanes, so matmul_vec and attn_paged_lanes would not run");
}

#endif
