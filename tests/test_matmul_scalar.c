/* The GPU-shaped scalar matmuls of the gpu and mobile tunings (the coopmat ones' decoding steps too),
 * each dispatched on its own against a float64 reference:
 * - matmul_sm (matmul.comp's SHARED_TILES build), the shared-memory tiled GEMM: C = A·W^T + bias at
 *   odd shapes (edge tiles in M, N and K, one-element matrices), projection shapes, fp16 and fp32
 *   operands and output, the output scatter of a head-major C, a reduction in two parts (the second
 *   with ACCUMULATE, as the plan splits K under a loop budget), and a long reduction that would show
 *   a loop the driver cuts short, in the gpu tuning's tile (64 x 64, workgroups of 256); edge
 *   tiles, the scatter and split reductions also in the mobile tuning's (32 x 32, workgroups of 64).
 * - matmul_vec (the MATVEC build), the matrix-vector product of decoding steps: 1 to 8 rows (a row
 *   tile of 1, 2, 4 or 8, partial ones), column edges, fp16 weights, fp16 output, the head-major
 *   scatter, two reduction parts and 20000-long rows, in both tunings' workgroups (128 and 64).
 * C is filled with NaN first: every element the kernel owns is written and nothing else is. Then
 * the plan's side: forwards under the gpu tuning pick matmul_sm (80 rows, in reduction parts at a
 * lowered loop budget) and under the mobile one matmul_vec (one query row), and agree with the CPU path (the mobile
 * tuning's forwards: gpu_vs_cpu_gpu_tuning).
 *
 * The kernels keep fp32 operands (no fp16 staging): operands are random fp32 values in [-1, 1] and
 * the error asked is max-abs <= 2^-20 * max over outputs of sum |a·w| (fp32 sums; fp16 rounding of
 * the operands would be about 500 times larger). fp16 output: 1e-3 max(1, max|ref|). */
#include "test_matmul_kernel.h"

static const mm_case cases[] = {
    {"1x1x1", 1, 1, 1},
    {"7x13x5", 7, 13, 5},
    {"65x67x17", 65, 67, 17},
    /* tiles in groups of 4 rows (sm_group_rows): 6 rows of 64 x 64 tiles (a whole group and a
     * partial one) by 4 columns (11 x 7 of the mobile class's 32 x 32); a group larger than the grid */
    {"327x197x33_grouped", 327, 197, 33, .group_rows = 4},
    {"327x197x36_split_f16_grouped", 327, 197, 36, 1, 1, 1, .parts = 2, .group_rows = 4},
    {"65x67x17_grouped_8", 65, 67, 17, .group_rows = 8},
    {"9x40x3_no_bias", 9, 40, 3, .no_bias = 1},
    {"64x96x128", 64, 96, 128, 1},
    {"100x48x256_head_major", 100, 48, 256, 1, .head_major = 1},
    {"128x384x128_qkv", 128, 384, 128, 1},
    {"70x72x132_f16", 70, 72, 132, 1, 1, 1},
    {"37x29x41_f16_in", 37, 29, 41, 0, 1, 0},
    {"50x70x96_f16_out", 50, 70, 96, 1, 0, 1},
    {"67x40x68_split", 67, 40, 68, 1, .parts = 2},
    {"31x33x45_split_f16", 31, 33, 45, 0, 1, 1, .parts = 2},
    /* 1250 blocks of 16: a loop the driver cut short would show past lavapipe's 65535 in texels */
    {"32x32x20000_long_k", 32, 32, 20000, 1},
};

/* matmul_vec's: decoding's rows */
static const mm_case vec_cases[] = {
    {"1x1x1", 1, 1, 1},
    {"1x13x5", 1, 13, 5},
    {"3x67x17_no_bias", 3, 67, 17, .no_bias = 1},
    {"1x96x512", 1, 96, 512, 1},
    {"4x48x256_head_major", 4, 48, 256, 1, .head_major = 1},
    {"8x41x132_f16", 8, 41, 132, 1, 1, 1},
    {"2x29x41_f16_in", 2, 29, 41, 0, 1, 0},
    {"7x40x1000_split", 7, 40, 1000, 1, .parts = 2},
    {"1x33x300_split_f16", 1, 33, 300, 1, 1, 1, .parts = 2},
    {"2x16x20000_long_k", 2, 16, 20000, 1},
};

/* matmul_vec_storage's: the same rows, reductions of whole 8-element texels (storage buffers read
 * 16 bytes at a time), and A in fp32 with W in fp16 (a decoding step's query against fp16 weights) */
static const mm_case storage_cases[] = {
    {"1x8x8", 1, 8, 8, .vec8 = 1},
    {"1x13x40", 1, 13, 40, .vec8 = 1},
    {"3x67x136_no_bias", 3, 67, 136, .no_bias = 1, .vec8 = 1},
    {"1x96x512", 1, 96, 512, .vec8 = 1},
    {"4x48x256_head_major", 4, 48, 256, .head_major = 1, .vec8 = 1},
    {"8x41x136_f16", 8, 41, 136, 0, 1, 1, .vec8 = 1},
    {"2x29x40_f16_in", 2, 29, 40, 0, 1, 0, .vec8 = 1},
    {"1x37x264_f32_a_f16_w", 1, 37, 264, 0, 1, 0, .vec8 = 1, .f32_a = 1},
    {"3x37x2048_split_f16_a_f32_w", 3, 37, 2048, .parts = 2, .vec8 = 1, .f16_a = 1},
    {"2x21x96_lead_3", 2, 21, 96, .vec8 = 1, .lead = 3},
    {"1x19x40_lead_1_f32_a_f16_w", 1, 19, 40, 0, 1, 0, .vec8 = 1, .f32_a = 1, .lead = 1},
    {"7x40x1000_split", 7, 40, 1000, .parts = 2, .vec8 = 1},
    {"1x33x304_split_f16", 1, 33, 304, 0, 1, 1, .parts = 2, .vec8 = 1},
    {"2x16x20000_long_k", 2, 16, 20000, .vec8 = 1},
};

/* One case of `kernel` (matmul_sm, matmul_vec or matmul_vec_storage) in tuning `t`'s tile; returns
 * its max-abs error relative to the tolerance's scale. */
static double run_case(vkattn_context *ctx, const vka_tuning *t, vka_kernel kernel, const mm_case *c,
                       unsigned long long seed)
{
    vka_device *dev = &ctx->dev;
    const uint32_t vec = c->vec8 ? 8 : c->vec4 ? 4 : 1, M = c->M, N = c->N, K = c->K;
    const int a_f16 = (c->f16_in && !c->f32_a) || c->f16_a;
    const size_t lead = (size_t)c->lead * K; /* elements of NaN before A's first row and W's */
    const size_t a_bytes = a_f16 ? 2 : 4, in_bytes = c->f16_in ? 2 : 4, out_bytes = c->f16_out ? 2 : 4;
    const int is_vec = kernel == VKA_KERNEL_MATMUL_VEC || kernel == VKA_KERNEL_MATMUL_VEC_STORAGE;
    uint32_t rows = 1;
    while (rows < M) rows <<= 1;
    /* The plan's shapes (vka_matmul_sm_tile_for: 4 x 4 outputs per invocation; vka_matmul_vec_tile_for:
     * the rows rounded up to a power of two); a reduction part of matmul_vec is whole strides. */
    uint32_t spec[VKA_MAX_SPEC] = {[VKA_SPEC_WG_SIZE] = is_vec ? t->vec_wg : t->sm_tile_m * t->sm_tile_n / 16,
                                   [VKA_SPEC_TILE_A] = is_vec ? rows : t->sm_tile_m,
                                   [VKA_SPEC_TILE_B] = is_vec ? t->vec_tile_n : t->sm_tile_n, [VKA_SPEC_VEC] = vec,
                                   [VKA_SPEC_TILE_K] = is_vec ? 0 : t->sm_tile_k};
    if (kernel == VKA_KERNEL_MATMUL_VEC_STORAGE)
        spec[VKA_SPEC_FLAGS] = (a_f16 ? VKA_MATMUL_A_F16 : 0) | (c->f16_in ? VKA_MATMUL_B_F16 : 0);
    /* the second part starts at a whole block of matmul_sm, anywhere for matmul_vec (a texel) */
    const uint32_t part_unit = is_vec ? vec : t->sm_tile_k;
    const char *what = kernel == VKA_KERNEL_MATMUL_VEC_STORAGE ? "matmul_vec_storage"
                       : is_vec                                 ? "matmul_vec"
                                                                : "matmul_sm";
    const vka_pipeline *first = NULL, *rest = NULL;
    double rel = -1;
    CHECK_STATUS(vka_pipeline_get(dev, &ctx->pipelines, kernel, c->f16_out, spec, &first), VKATTN_OK);
    spec[VKA_SPEC_FLAGS] |= VKA_MATMUL_ACCUMULATE;
    if (c->parts == 2) CHECK_STATUS(vka_pipeline_get(dev, &ctx->pipelines, kernel, c->f16_out, spec, &rest), VKATTN_OK);
    if (!first || (c->parts == 2 && !rest)) return rel;

    /* C: row-major with a gap of 3 after each row, or head-major (2 batches of M/2 rows, heads of 8) */
    vka_matmul_push push = {.M = M, .N = N, .K = K / vec, .lda = K / vec, .ldb = K / vec,
                            .a_offset = (uint32_t)(lead / vec), .b_offset = (uint32_t)(lead / vec),
                            .c_row = N + 3, .c_col_block = N, .c_block = 0, .rows_per_batch = M,
                            .batch_stride = 0, .has_bias = !c->no_bias,
                            .tiles_n = (uint32_t)vka_ceil_div(N, spec[VKA_SPEC_TILE_B]),
                            .group_rows = c->group_rows};
    if (c->head_major)
        push.c_row = 8, push.c_col_block = 8, push.c_block = M / 2 * 8, push.rows_per_batch = M / 2,
        push.batch_stride = N * (M / 2);
    size_t c_elems = c_at(&push, M - 1, N - 1) + 1;
    mm_buffers b = {0};
    vkattn_status status = vka_buffer_create(dev, (lead + (size_t)M * K) * a_bytes, VKA_MEMORY_STAGING, "A", &b.a);
    if (status == VKATTN_OK)
        status = vka_buffer_create(dev, (lead + (size_t)N * K) * in_bytes, VKA_MEMORY_STAGING, "W", &b.w);
    if (status == VKATTN_OK) status = vka_buffer_create(dev, (size_t)N * 4, VKA_MEMORY_STAGING, "bias", &b.bias);
    if (status == VKATTN_OK) status = vka_buffer_create(dev, c_elems * out_bytes, VKA_MEMORY_STAGING, "C", &b.c);
    CHECK_MSG(status == VKATTN_OK && b.c.mapped, "%s: buffers: %s", c->name, vkattn_context_last_error(ctx));
    if (status != VKATTN_OK || !b.c.mapped) goto done;

    test_rng rng = test_rng_make(seed);
    float *a = malloc((size_t)M * K * sizeof *a), *w = malloc((size_t)N * K * sizeof *w), *bias = malloc(N * sizeof *bias);
    /* fp16 operands hold fp16 values (what the device reads); fp32 ones full 24-bit values; the
     * lead rows NaN, which a read would carry into C */
    for (size_t i = 0; i < lead; i++) put(&b.a, a_f16, i, NAN), put(&b.w, c->f16_in, i, NAN);
    for (size_t i = 0; i < (size_t)M * K; i++) {
        float x = test_rng_float(&rng);
        put(&b.a, a_f16, lead + i, x), a[i] = get(&b.a, a_f16, lead + i);
    }
    for (size_t i = 0; i < (size_t)N * K; i++) {
        float x = test_rng_float(&rng);
        put(&b.w, c->f16_in, lead + i, x), w[i] = get(&b.w, c->f16_in, lead + i);
    }
    for (uint32_t n = 0; n < N; n++) ((float *)b.bias.mapped)[n] = bias[n] = c->no_bias ? 0.0f : test_rng_float(&rng);
    /* NaN everywhere else in C: the kernel must write every element it owns and nothing between */
    for (size_t i = 0; i < c_elems; i++) put(&b.c, c->f16_out, i, NAN);

    if (run_dispatches(ctx, c, first, rest, &b, &push, part_unit, what) >= 0) {
        double max_err = 0, ref_max = 0, abs_max = 0;
        size_t bad = 0;
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t n = 0; n < N; n++) {
                double ref = bias[n], abs_sum = fabs(bias[n]);
                for (uint32_t k = 0; k < K; k++) {
                    double p = (double)a[(size_t)m * K + k] * w[(size_t)n * K + k];
                    ref += p, abs_sum += fabs(p);
                }
                double got = get(&b.c, c->f16_out, c_at(&push, m, n));
                bad += !isfinite(got);
                if (fabs(got - ref) > max_err) max_err = fabs(got - ref);
                if (fabs(ref) > ref_max) ref_max = fabs(ref);
                if (abs_sum > abs_max) abs_max = abs_sum;
            }
        size_t untouched = 0;
        for (size_t i = 0; i < c_elems; i++) untouched += isnan(get(&b.c, c->f16_out, i));
        size_t written = c_elems - untouched;
        double scale = c->f16_out ? (ref_max > 1 ? ref_max : 1) : (abs_max > 1 ? abs_max : 1);
        double tol = (c->f16_out ? 1e-3 : 1.0 / (1 << 20)) * scale;
        rel = max_err / scale;
        int ok = bad == 0 && max_err <= tol && written == (size_t)M * N;
        printf("  %-18s %-8s %-28s max-abs %.2e (%.2e of %s %.3g)  %s\n", what, t->name, c->name, max_err, rel,
               c->f16_out ? "max|ref|" : "max sum|a·w|", scale, ok ? "ok" : "FAILED");
        CHECK_MSG(bad == 0, "%s: %zu outputs not finite (never written?)", c->name, bad);
        CHECK_MSG(max_err <= tol, "%s: max-abs %.3g > %.3g", c->name, max_err, tol);
        CHECK_MSG(written == (size_t)M * N, "%s: %zu elements of C written, %u expected", c->name, written, M * N);
    }
    free(a), free(w), free(bias);
done:
    vka_buffer_destroy(dev, &b.a), vka_buffer_destroy(dev, &b.w), vka_buffer_destroy(dev, &b.bias);
    vka_buffer_destroy(dev, &b.c);
    return rel;
}

/* The plan's side, through the public API: a layer of width E under `tuning` at a loop budget of
 * `budget` (0 = the device's) against the CPU path, B x L queries over B x S keys; its plan runs
 * the projections on `kernel` (in reduction parts added to C at a lowered budget), and on
 * `also` too unless it is `kernel`: matmul_sm for 40 rows of 2 batch items (a tile of the gpu
 * tuning's), matmul_vec_storage for one query row where the rows are whole 8-element texels,
 * matmul_vec where they are not or the tuning says vec_storage=0. */
static void run_forward_tuned(const char *tuning, uint32_t budget, vka_kernel kernel, vka_kernel also, uint32_t E,
                              uint32_t B, uint32_t L, uint32_t S)
{
    const mm_forward fw = {tuning, budget, 0, VKATTN_PRECISION_DEFAULT, E, B, L, .S = S};
    static char plan[1 << 18];
    test_error e;
    if (!mm_forward_run(&fw, plan, sizeof plan, &e)) return;
    const compare_tolerance *tol = compare_tolerance_of(COMPARE_F32);
    const char *name = vka_kernel_get(kernel)->spirv, *also_name = vka_kernel_get(also)->spirv;
    char step[40], also_step[40];
    snprintf(step, sizeof step, " %s ", name); /* a kernel column of the plan's steps */
    snprintf(also_step, sizeof also_step, " %s ", also_name);
    int used = strstr(plan, step) != NULL, parts = strstr(plan, "added to C") != NULL;
    int also_used = strstr(plan, also_step) != NULL;
    printf("  forward, %s tuning, E %u, %u x %u queries, %u keys, loop budget %u: max-abs %.2e NMSE %.2e; plan %s %s%s%s%s  %s\n",
           tuning, E, B, L, S, budget, e.max_abs, e.nmse, used ? "uses" : "has no", name, also != kernel ? " and " : "",
           also != kernel ? (also_used ? also_name : "no other") : "", parts ? " in parts" : "",
           compare_within(&e, tol) ? "ok" : "FAILED");
    CHECK_MSG(compare_within(&e, tol), "forward against the CPU path: max-abs %.3g, NMSE %.3g", e.max_abs, e.nmse);
    CHECK_MSG(used, "the plan lacks %s:\n%s", name, plan);
    CHECK_MSG(also_used, "the plan lacks %s:\n%s", also_name, plan);
    if (budget) CHECK_MSG(parts, "a loop budget of %u left the reductions whole:\n%s", budget, plan);
    const char *tile = strstr(tuning, "sm_tile_m=32") ? "(32x16 tiles, 8-element blocks, fp32)" : NULL;
    if (tile) CHECK_MSG(strstr(plan, tile) != NULL, "the tuning string's tile %s is not the plan's:\n%s", tile, plan);
}

/* A decoding forward under the gpu tuning whose plan must run matmul_vec_storage, against the CPU
 * path: `fw` makes its operands start elsewhere than at a binding's first element (the packed
 * in_proj_weight's K and V rows after Q's; W bound in slices). */
static void run_forward_storage(const mm_forward *fw, const char *what)
{
    static char plan[1 << 20];
    test_error e;
    if (!mm_forward_run(fw, plan, sizeof plan, &e)) return;
    const compare_tolerance *tol = compare_tolerance_of(COMPARE_F32);
    uint32_t steps = test_count_text(plan, " matmul_vec_storage ");
    printf("  forward, gpu tuning, E %u, %s: max-abs %.2e NMSE %.2e; %u matmul_vec_storage dispatches  %s\n", fw->E, what,
           e.max_abs, e.nmse, steps, compare_within(&e, tol) ? "ok" : "FAILED");
    CHECK_MSG(compare_within(&e, tol), "%s: max-abs %.3g, NMSE %.3g", what, e.max_abs, e.nmse);
    CHECK_MSG(steps >= (fw->binding_kib ? 8u : 3u), "%s: %u matmul_vec_storage steps:\n%.4000s", what, steps, plan);
}

/* An f32 layer's decoding step from an fp16 device tensor: matmul_vec_storage reads A as fp16
 * and W as fp32 (the only forward with that pair), against the CPU path on the fp16 query. */
static void run_forward_f16_query(void)
{
    const uint32_t E = 256;
    vkattn_context *ctx = NULL;
    vkattn_error error = {0};
    vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON, .tuning = "gpu"};
    CHECK_STATUS(vkattn_context_create(&desc, &ctx, &error), VKATTN_OK);
    if (!ctx) return;
    vkattn_layer_desc ld = {.embed_dim = E, .num_heads = 4};
    test_weights tw;
    test_weights_make(&tw, &ld, 21);
    vkattn_layer *layer = NULL;
    vkattn_tensor *qt = NULL, *ot = NULL;
    float q[256], gpu[256], cpu[256];
    uint16_t q16[256];
    test_rng rng = test_rng_make(23);
    for (uint32_t i = 0; i < E; i++) {
        q16[i] = vka_f32_to_f16(test_rng_float(&rng));
        q[i] = vka_f16_to_f32(q16[i]);
    }
    const uint32_t dims[3] = {1, 1, E};
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F16, 3, dims, &qt), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, dims, &ot), VKATTN_OK);
    if (layer && qt && ot) {
        CHECK_STATUS(vkattn_tensor_write(qt, q16, sizeof q16), VKATTN_OK);
        CHECK_STATUS(vkattn_forward(layer, &(vkattn_forward_desc){.query = qt, .output = ot}), VKATTN_OK);
        CHECK_STATUS(vkattn_tensor_read(ot, gpu, sizeof gpu), VKATTN_OK);
        vkattn_host_forward_desc f = {.batch = 1, .query_len = 1, .query = q, .output = cpu};
        CHECK_STATUS(vkattn_reference_forward(&ld, &tw.w, &f, &error), VKATTN_OK);
        test_error e = test_compare(gpu, cpu, E);
        const compare_tolerance *tol = compare_tolerance_of(COMPARE_F32);
        printf("  forward, gpu tuning, E %u, an fp16 query tensor on an f32 layer: max-abs %.2e NMSE %.2e  %s\n", E,
               e.max_abs, e.nmse, compare_within(&e, tol) ? "ok" : "FAILED");
        CHECK_MSG(compare_within(&e, tol), "fp16 query: max-abs %.3g, NMSE %.3g", e.max_abs, e.nmse);
    }
    vkattn_tensor_destroy(qt), vkattn_tensor_destroy(ot);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
    gpu_test_finish_context(ctx);
}

/* argv[1] "small": a few cases in the gpu tile and one forward (the `driver` row, also on Mesa 25). */
int main(int argc, char **argv)
{
    const int small = argc > 1 && strcmp(argv[1], "small") == 0;
    vkattn_context *ctx = gpu_test_context();
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    const char *tunings[] = {"gpu", "mobile"};
    double worst = 0;
    for (size_t ti = 0; ti < (small ? 1 : 2); ti++) {
        const vka_tuning *t = vka_tuning_for(&info, tunings[ti]);
        CHECK_MSG(t && t->sm_tile_m, "tuning %s has no matmul_sm tile", tunings[ti]);
        if (!t || !t->sm_tile_m) continue;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            /* small, and the mobile tile (its forwards are gpu_vs_cpu_gpu_tuning's): edges in M, N and
             * K, the head-major scatter, the split reduction (the mobile tile also in fp16) */
            int few = i == 2 || i == 5 || i == 10 || (!small && i == 11);
            if ((small || ti == 1) && !few) continue;
            double rel = run_case(ctx, t, VKA_KERNEL_MATMUL_SM, &cases[i], 100 + i);
            if (!cases[i].f16_out && rel > worst) worst = rel;
        }
        for (size_t i = 0; ctx->dev.caps.subgroup_sums && i < sizeof vec_cases / sizeof vec_cases[0]; i++) {
            /* small: a partial row tile, the fp16 case, the split and the long reduction (matmul_vec
             * needs subgroup arithmetic: where the device has none the plan never takes it) */
            if (small && i != 2 && i != 5 && i != 7 && i != 9) continue;
            double rel = run_case(ctx, t, VKA_KERNEL_MATMUL_VEC, &vec_cases[i], 200 + i);
            if (!vec_cases[i].f16_out && rel > worst) worst = rel;
        }
        for (size_t i = 0; ctx->dev.caps.subgroup_sums && i < sizeof storage_cases / sizeof storage_cases[0]; i++) {
            /* small: a partial row tile, fp16 in and out, A fp32 with W fp16 and the reverse (in
             * parts), operands after lead rows, the split, the long reduction */
            if (small && i != 2 && i != 5 && i != 7 && i != 8 && i != 10 && i != 11 && i != 13) continue;
            double rel = run_case(ctx, t, VKA_KERNEL_MATMUL_VEC_STORAGE, &storage_cases[i], 300 + i);
            if (!storage_cases[i].f16_out && rel > worst) worst = rel;
        }
    }
    printf("worst fp32 error: %.2e of max sum|a·w| (2^-20 = %.2e asked)\n", worst, 1.0 / (1 << 20));
    const int ctx_has_subgroup_sums = ctx->dev.caps.subgroup_sums;
    gpu_test_finish_context(ctx);
    run_forward_tuned("gpu", small ? 0 : 24, VKA_KERNEL_MATMUL_SM, VKA_KERNEL_MATMUL_SM, 512, 2, 40, 23);
    /* a tuning string's tile (32 x 16 outputs, blocks of 8), which the plan must take */
    if (!small)
        run_forward_tuned("gpu:sm_tile_m=32,sm_tile_n=16,sm_tile_k=8", 0, VKA_KERNEL_MATMUL_SM, VKA_KERNEL_MATMUL_SM,
                          256, 2, 40, 23);
    /* one query row (matmul_vec's reduction parts under a budget: test_plan's test_matmul_vec_plans) */
    if (!ctx_has_subgroup_sums) {
        printf("  matmul_vec: this device has no subgroup arithmetic and shuffles; its cases are skipped\n");
        return test_finish();
    }
    run_forward_tuned(small ? "gpu" : "mobile", 0, VKA_KERNEL_MATMUL_VEC_STORAGE, VKA_KERNEL_MATMUL_VEC_STORAGE, 2048,
                      1, 1, 23);
    /* texel fetches where the tuning asks; and where the query's width is no whole number of
     * 8-element texels (E 2052) while the key's and value's are (kdim 40, vdim 56; one key, so
     * that their projections are matrix-vector products too), both kernels in one plan */
    run_forward_tuned("gpu:vec_storage=0", 0, VKA_KERNEL_MATMUL_VEC, VKA_KERNEL_MATMUL_VEC, 2048, 1, 1, 23);
    if (!small) run_forward_tuned("gpu", 0, VKA_KERNEL_MATMUL_VEC, VKA_KERNEL_MATMUL_VEC_STORAGE, 2052, 1, 1, 1);
    /* operands that start past a binding's first element: K's and V's rows of the packed
     * in_proj_weight (kdim = vdim = E, 3 keys: their projections are matrix-vector products too),
     * and W bound in 256 KiB slices; an fp16 query tensor */
    run_forward_storage(&(mm_forward){"gpu", 0, 0, VKATTN_PRECISION_DEFAULT, 2048, 1, 1, 3, .kv_dim = 2048},
                        "packed K/V rows, 3 keys");
    if (!small)
        run_forward_storage(&(mm_forward){"gpu", 0, 0, VKATTN_PRECISION_DEFAULT, 2048, 1, 1, 23, .binding_kib = 256},
                            "W in 256 KiB slices");
    run_forward_f16_query();
    return test_finish();
}
