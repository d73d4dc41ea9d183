/* matmul_cm.comp, the cooperative-matrix GEMM, dispatched on its own against a float64 reference:
 * C = A·W^T + bias at odd shapes (edge tiles in M, N and K, one-element matrices), at projection
 * shapes, fp16 and fp32 operands and output, the output scatter of a head-major C, a reduction in
 * two parts (the second with ACCUMULATE, as the plan splits K under a loop budget), and a long
 * reduction that would show a loop the driver cuts short. Then the plan's side: a forward of a
 * layer with fp16 operands (precision F16) under the coopmat tuning picks matmul_cm, at a lowered
 * loop budget in reduction parts, and agrees with the CPU path; with VKATTN_COOPMAT=0 it picks no
 * _cm kernel.
 *
 * The operands are fp16 values (so the kernel's rounding to fp16 changes nothing) in [-1, 1]: every
 * product is exact in fp32 and only the fp32 sums round, so the error is about 1e-7 relative per
 * sum, and max-abs <= 2e-6 max(1, max|ref|) is asked, or for long sums 2^-18 of the largest
 * sum |a·w| (NVIDIA's tensor cores truncate as they add: 7.7e-7 of it on an H200 at K = 20000)
 * (fp16 output: 1e-3). On a device without
 * cooperative matrices (Mesa 22 lavapipe) the test checks that the coopmat tuning is refused with a
 * clear message, then reports itself skipped (exit 77) with the reason.
 *
 * Mesa 26 lavapipe runs these matrices at a few GFLOP/s on the CPU: the figure printed at the end is
 * an oracle's speed, never a benchmark. */
#include <time.h>

#include "test_matmul_kernel.h"

#include "plan/matmul.h"

#define SKIP 77

static const mm_case cases[] = {
    {"1x1x1", 1, 1, 1},
    {"7x13x5", 7, 13, 5},
    {"33x65x17", 33, 65, 17},
    /* tiles in groups of 4 rows (cm_group_rows): 6 rows of tiles (a whole group and a partial
     * one) by 3 columns on lavapipe's 32 x 128 tile, 2 x 2 on the 128 x 256 of 16 x 16 matrices;
     * and groups larger than the grid */
    {"163x265x40_grouped", 163, 265, 40, 1, .group_rows = 4},
    {"163x265x40_split_f16_grouped", 163, 265, 40, 1, 1, 1, .parts = 2, .group_rows = 4},
    {"33x65x17_grouped_8", 33, 65, 17, .group_rows = 8},
    {"9x40x3_no_bias", 9, 40, 3, .no_bias = 1},
    {"64x96x128", 64, 96, 128, 1},
    {"100x48x256_head_major", 100, 48, 256, 1, .head_major = 1},
    {"128x384x128_qkv", 128, 384, 128, 1},
    {"128x128x128_f16", 128, 128, 128, 1, 1, 1},
    {"37x29x41_f16_in", 37, 29, 41, 0, 1, 0},
    {"50x70x96_f16_out", 50, 70, 96, 1, 0, 1},
    {"17x40x68_split", 17, 40, 68, 1, .parts = 2},
    {"31x33x45_split_f16", 31, 33, 45, 0, 1, 1, .parts = 2},
    /* 1250 blocks of 16: a loop the driver's coopmat code hid would run past lavapipe's 65535 */
    {"32x32x20000_long_k", 32, 32, 20000, 1},
    /* 2 x 4 subgroups (a tile twice as wide), and 2 x 1 */
    {"70x200x72_8_subgroups", 70, 200, 72, 1, .subgroups_n = 4},
    {"33x130x48_split_f16_8_subgroups", 33, 130, 48, 1, 1, 0, .parts = 2, .subgroups_n = 4},
    {"45x50x40_f16_2_subgroups", 45, 50, 40, 0, 1, 1, .subgroups_n = 1},
    /* 2 x 8 subgroups (16: more of them per compute unit, fewer accumulators each) */
    {"70x300x72_16_subgroups", 70, 300, 72, 1, .subgroups_n = 8},
    {"33x130x48_split_f16_16_subgroups", 33, 130, 48, 1, 1, 0, .parts = 2, .subgroups_n = 8},
    {"33x130x48_split_f16_16_subgroups_two_stages", 33, 130, 48, 1, 1, 0, .parts = 2, .subgroups_n = 8, .two_stages = 1},
    /* two staged blocks: edge tiles, many blocks (the stages alternate), two parts, 2 x 4 subgroups */
    {"33x65x17_two_stages", 33, 65, 17, .two_stages = 1},
    {"64x96x300_f16_two_stages", 64, 96, 300, 1, 1, 0, .two_stages = 1},
    {"17x40x68_split_two_stages", 17, 40, 68, 1, .parts = 2, .two_stages = 1},
    /* accumulators stored whole into C (whole tiles: 32 x 32 on lavapipe, 64 x 64 with 16 x 16 x 16;
     * the gaps after C's rows and the elements before C's first stay NaN): fp32 and fp16 in and
     * out, C from a nonzero offset, without the bias, the first of two parts (the second
     * accumulates through shared memory), 2 x 8 subgroups with one and with two stages (the latter
     * too large for 48 KiB with 16 x 16 x 16), head-major C (2 batch items, heads of 16 columns;
     * of 8 with lavapipe's 8-wide matrices only) */
    {"64x128x96_direct", 64, 128, 96, 1, .direct = 1},
    {"64x128x96_direct_f16", 64, 128, 96, 1, 1, 1, .direct = 1},
    {"64x128x40_direct_c_offset_f16_out", 64, 128, 40, 1, 0, 1, .direct = 1, .c_lead = 24},
    {"64x64x40_direct_no_bias_f16_out", 64, 64, 40, 0, 0, 1, .no_bias = 1, .direct = 1},
    {"64x128x68_direct_split", 64, 128, 68, 1, .parts = 2, .direct = 1},
    {"64x256x48_direct_16_subgroups", 64, 256, 48, 1, 1, 0, .subgroups_n = 8, .direct = 1, .c_lead = 8},
    {"64x256x48_direct_16_subgroups_two_stages", 64, 256, 48, 1, 1, 0, .subgroups_n = 8, .two_stages = 1, .direct = 1},
    {"128x64x64_direct_head_major_16", 128, 64, 64, 1, .head_major = 2, .direct = 1},
    {"128x64x64_direct_head_major_8", 128, 64, 64, 1, .head_major = 1, .direct = 1},
    {"70x200x72_8_subgroups_two_stages", 70, 200, 72, 1, .subgroups_n = 4, .two_stages = 1},
    /* fp16 A and B in texels of 8 (cm_wide_loads: one 16-byte load, staged as two f16vec4) */
    {"128x128x128_f16_wide", 128, 128, 128, 0, 1, 1, .vec8 = 1},
    {"33x65x40_f16_in_wide", 33, 65, 40, 0, 1, 0, .vec8 = 1},
    {"31x33x48_split_f16_wide", 31, 33, 48, 0, 1, 1, .parts = 2, .vec8 = 1},
    {"33x130x48_split_f16_16_subgroups_two_stages_wide", 33, 130, 48, 0, 1, 0, .parts = 2, .subgroups_n = 8,
     .two_stages = 1, .vec8 = 1},
    {"rounding_probe", 1, 1, 1, .no_bias = 1},
};

/* 1x1x1 with A = 1 + 0.75 ulp of fp16 and W = 1: the staged A says how the driver converts fp32 to
 * fp16 (KNOWN_ISSUES.md: Mesa 22 lavapipe rounds toward zero). Either way is allowed; it is
 * printed, and the test's other cases use fp16 values, which convert exactly. */
static const float k_rounding_probe = 1.0f + 0.75f / 1024.0f;

static float half_round(float x) { return vka_f16_to_f32(vka_f32_to_f16(x)); }

/* One case; adds its FLOPs and seconds (after a first run that compiles) to the totals. */
static void run_case(vkattn_context *ctx, const mm_case *c, unsigned long long seed, double *flops, double *seconds)
{
    vka_device *dev = &ctx->dev;
    const vkattn_matrix_shape ms = vka_matrix_shape_for(&dev->info);
    const uint32_t vec = c->vec8 ? 8 : c->vec4 ? 4 : 1, M = c->M, N = c->N, K = c->K;
    const size_t in_bytes = c->f16_in ? 2 : 4, out_bytes = c->f16_out ? 2 : 4;
    /* The plan's shape for the coopmat tuning: 2 x 2 accumulators per subgroup, blocks of 2 steps,
     * 2 x subgroups_n subgroups; the next block prefetched (the tuning's cm_prefetch) in the
     * even-seeded cases, not in the odd */
    const uint32_t sgs_n = c->subgroups_n ? c->subgroups_n : 2;
    const uint32_t prefetch = seed % 2 ? 0 : VKA_MATMUL_PREFETCH;
    /* A and B are storage buffers whose element type the flags say */
    const uint32_t in_flags = prefetch | (c->f16_in ? VKA_MATMUL_A_F16 | VKA_MATMUL_B_F16 : 0) |
                              (c->two_stages ? VKA_MATMUL_TWO_STAGES : 0);
    const uint32_t direct = c->direct ? VKA_MATMUL_DIRECT : 0; /* the first part's (a later one accumulates) */
    uint32_t spec[VKA_MAX_SPEC] = {[VKA_SPEC_WG_SIZE] = 2 * sgs_n * dev->matrix_subgroup,
                                   [VKA_SPEC_TILE_A] = 4 * ms.m, [VKA_SPEC_TILE_B] = 2 * sgs_n * ms.n,
                                   [VKA_SPEC_VEC] = vec, [VKA_SPEC_MAT_M] = ms.m, [VKA_SPEC_MAT_N] = ms.n,
                                   [VKA_SPEC_MAT_K] = ms.k, [VKA_SPEC_TILE_K] = (2 * ms.k + 3) / 4 * 4,
                                   [VKA_SPEC_FLAGS] = in_flags | direct, [VKA_SPEC_SUBGROUPS_N] = sgs_n};
    /* a case the device cannot hold (as the plan would never choose it): said, not run (at 2 x 8
     * subgroups and two stages, 66 KiB with 16 x 16 x 16 matrices, 19 with lavapipe's 8 x 8 x 8) */
    const uint64_t shared = vka_matmul_cm_shared_bytes(spec[VKA_SPEC_TILE_A], spec[VKA_SPEC_TILE_B], spec[VKA_SPEC_TILE_K],
                                                       ms, sgs_n, c->two_stages ? 2 : 1);
    if (shared > dev->info.max_shared_memory_bytes) {
        printf("  %-26s not run here: %llu bytes of shared memory, the device has %u\n", c->name,
               (unsigned long long)shared, dev->info.max_shared_memory_bytes);
        return;
    }
    /* whole tiles, and (head-major) each matrix's rows in one batch item, its columns in one head:
     * the plan's rule for the whole stores (else it would not take them) */
    const uint32_t hd = c->head_major == 2 ? 16 : 8; /* head-major C's heads */
    if (direct && (M % spec[VKA_SPEC_TILE_A] || N % spec[VKA_SPEC_TILE_B] || (c->head_major && ((M / 2) % ms.m || hd % ms.n)))) {
        printf("  %-26s not run here: the plan would not store whole %ux%u matrices into this C\n", c->name, ms.m, ms.n);
        return;
    }
    const vka_pipeline *first = NULL, *rest = NULL;
    CHECK_STATUS(vka_pipeline_get(dev, &ctx->pipelines, VKA_KERNEL_MATMUL_CM, c->f16_out, spec, &first), VKATTN_OK);
    spec[VKA_SPEC_FLAGS] = VKA_MATMUL_ACCUMULATE | in_flags;
    if (c->parts == 2)
        CHECK_STATUS(vka_pipeline_get(dev, &ctx->pipelines, VKA_KERNEL_MATMUL_CM, c->f16_out, spec, &rest), VKATTN_OK);
    if (!first || (c->parts == 2 && !rest)) return;

    /* C: row-major with a gap of 3 after each row (8 where the accumulators are stored whole: rows
     * on 16 bytes), or head-major (2 batches of M/2 rows, heads of 8) */
    vka_matmul_push push = {.M = M, .N = N, .K = K / vec, .lda = K / vec, .ldb = K / vec,
                            .c_offset = c->c_lead, .c_row = N + (direct ? 8 : 3), .c_col_block = N, .c_block = 0,
                            .rows_per_batch = M,
                            .batch_stride = 0, .has_bias = !c->no_bias,
                            .tiles_n = (uint32_t)vka_ceil_div(N, spec[VKA_SPEC_TILE_B]),
                            .group_rows = c->group_rows};
    if (c->head_major)
        push.c_row = hd, push.c_col_block = hd, push.c_block = M / 2 * hd, push.rows_per_batch = M / 2,
        push.batch_stride = N * (M / 2);
    size_t c_elems = c_at(&push, M - 1, N - 1) + 1;
    mm_buffers b = {0};
    vkattn_status status = vka_buffer_create(dev, (size_t)M * K * in_bytes, VKA_MEMORY_STAGING, "A", &b.a);
    if (status == VKATTN_OK) status = vka_buffer_create(dev, (size_t)N * K * in_bytes, VKA_MEMORY_STAGING, "W", &b.w);
    if (status == VKATTN_OK) status = vka_buffer_create(dev, (size_t)N * 4, VKA_MEMORY_STAGING, "bias", &b.bias);
    if (status == VKATTN_OK) status = vka_buffer_create(dev, c_elems * out_bytes, VKA_MEMORY_STAGING, "C", &b.c);
    CHECK_MSG(status == VKATTN_OK && b.c.mapped, "%s: buffers: %s", c->name, vkattn_context_last_error(ctx));
    if (status != VKATTN_OK || !b.c.mapped) goto done;

    test_rng rng = test_rng_make(seed);
    float *a = malloc((size_t)M * K * sizeof *a), *w = malloc((size_t)N * K * sizeof *w), *bias = malloc(N * sizeof *bias);
    for (size_t i = 0; i < (size_t)M * K; i++) put(&b.a, c->f16_in, i, a[i] = half_round(test_rng_float(&rng)));
    int probe = strcmp(c->name, "rounding_probe") == 0;
    if (probe) put(&b.a, 0, 0, k_rounding_probe), a[0] = k_rounding_probe;
    for (size_t i = 0; i < (size_t)N * K; i++) put(&b.w, c->f16_in, i, w[i] = half_round(test_rng_float(&rng)));
    for (uint32_t n = 0; n < N; n++) ((float *)b.bias.mapped)[n] = bias[n] = c->no_bias ? 0.0f : test_rng_float(&rng);
    /* NaN everywhere else in C: the kernel must write every element it owns and nothing between */
    for (size_t i = 0; i < c_elems; i++) put(&b.c, c->f16_out, i, NAN);

    double s = run_dispatches(ctx, c, first, rest, &b, &push, spec[VKA_SPEC_TILE_K], "matmul_cm");
    if (s >= 0 && K >= 64) { /* the first run compiled; time a second one */
        s = run_dispatches(ctx, c, first, rest, &b, &push, spec[VKA_SPEC_TILE_K], "matmul_cm");
        *flops += 2.0 * M * N * K, *seconds += s;
    }
    if (s >= 0 && probe) {
        /* C = round16(A) * W exactly (11 by 11 bits), so C / W is the staged A */
        float staged = get(&b.c, 0, 0) / get(&b.w, 0, 0), up = 1.0f + 1.0f / 1024.0f;
        printf("  %-26s fp32 -> fp16 staging rounds %s (1 + 0.75 ulp became %.9g)\n", c->name,
               staged == up ? "to nearest" : staged == 1.0f ? "toward zero" : "neither way", staged);
        CHECK_MSG(staged == up || staged == 1.0f, "rounding probe: 1 + 0.75 ulp staged as %.9g", staged);
    } else if (s >= 0) {
        double max_err = 0, ref_max = 0, abs_max = 0;
        size_t bad = 0;
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t n = 0; n < N; n++) {
                double ref = bias[n], abs_sum = fabs(bias[n]);
                for (uint32_t k = 0; k < K; k++) {
                    double p = (double)a[(size_t)m * K + k] * w[(size_t)n * K + k];
                    ref += p, abs_sum += fabs(p);
                }
                if (abs_sum > abs_max) abs_max = abs_sum;
                double got = get(&b.c, c->f16_out, c_at(&push, m, n));
                bad += !isfinite(got);
                if (fabs(got - ref) > max_err) max_err = fabs(got - ref);
                if (fabs(ref) > ref_max) ref_max = fabs(ref);
            }
        size_t untouched = 0, written = 0;
        for (size_t i = 0; i < c_elems; i++) untouched += isnan(get(&b.c, c->f16_out, i));
        written = c_elems - untouched;
        /* fp32 sums: 2e-6 of max|ref|; on a GPU's long sums (K >= 4096) 2^-18 of max sum|a·w| where
         * that is more: NVIDIA's tensor cores add their products in fp32 with truncation (an H200 at
         * K = 20000: 7.7e-7 of it). lavapipe keeps the tight bound everywhere. */
        vkattn_device_info dev_info;
        vkattn_context_device(ctx, &dev_info);
        const int truncating = dev_info.type != VKATTN_DEVICE_CPU && K >= 4096;
        double tol = c->f16_out ? 1e-3 * (ref_max > 1 ? ref_max : 1)
                                : fmax(2e-6 * (ref_max > 1 ? ref_max : 1), truncating ? abs_max / (1 << 18) : 0.0);
        printf("  %-26s %-11s max-abs %.2e (max|ref| %.3g, %.2e relative)  %s\n", c->name,
               prefetch ? "prefetch" : "no prefetch", max_err, ref_max, max_err / (ref_max > 1 ? ref_max : 1),
               bad == 0 && max_err <= tol && written == (size_t)M * N ? "ok" : "FAILED");
        CHECK_MSG(bad == 0, "%s: %zu outputs not finite (never written?)", c->name, bad);
        CHECK_MSG(max_err <= tol, "%s: max-abs %.3g > %.3g", c->name, max_err, tol);
        CHECK_MSG(written == (size_t)M * N, "%s: %zu elements of C written, %u expected", c->name, written, M * N);
    }
    free(a), free(w), free(bias);
done:
    vka_buffer_destroy(dev, &b.a), vka_buffer_destroy(dev, &b.w), vka_buffer_destroy(dev, &b.bias);
    vka_buffer_destroy(dev, &b.c);
}

/* The plan's side, through the public API: a layer under a cooperative-matrix tuning ("coopmat" or
 * "intel") at a loop budget of `budget` (0 = the device's) against the CPU path; its plan names
 * matmul_cm (in reduction parts added to C at a lowered budget). With `off`, the context has
 * no_cooperative_matrix: no _cm kernel. `tile` (or NULL): text the plan's matmul_cm step must hold. */
static void run_forward_tuned(const char *tuning, uint32_t budget, int off, const char *tile)
{
    /* E = 1024: 64 blocks of 16 on lavapipe's 8 x 8 x 8, 32 of 32 with 16 x 16 x 16, parts at a
     * budget of 24 with either */
    const mm_forward fw = {tuning, budget, off, VKATTN_PRECISION_F16, .E = 1024, .B = 2, .L = 19, .S = 23};
    static char plan[1 << 18];
    test_error e;
    if (!mm_forward_run(&fw, plan, sizeof plan, &e)) return;
    const compare_tolerance *tol = compare_tolerance_of(COMPARE_F16);
    int cm = strstr(plan, "matmul_cm") != NULL, parts = strstr(plan, "added to C") != NULL;
    printf("  forward, %s tuning%s, loop budget %u: max-abs %.2e NMSE %.2e; plan %s matmul_cm%s  %s\n", tuning,
           off ? " turned off" : "", budget, e.max_abs, e.nmse, cm ? "uses" : "has no", parts ? " in parts" : "",
           compare_within(&e, tol) ? "ok" : "FAILED");
    CHECK_MSG(compare_within(&e, tol), "forward against the CPU path: max-abs %.3g, NMSE %.3g", e.max_abs, e.nmse);
    CHECK_MSG(off ? !strstr(plan, "_cm") : cm, "the plan %s a _cm kernel:\n%s", off ? "has" : "lacks", plan);
    if (tile) CHECK_MSG(strstr(plan, tile) != NULL, "the tile \"%s\" is not the plan's:\n%s", tile, plan);
    if (budget && !off) CHECK_MSG(parts, "a loop budget of %u left the reductions whole:\n%s", budget, plan);
}

static void run_forward(uint32_t budget, int off) { run_forward_tuned("coopmat", budget, off, NULL); }

/* Whole tiles through the public API (B = 2, L = S = 64, E = 256 in 4 heads of 64: Q, K and V
 * projected into head-major workspaces, 128 rows each, and the output projection), f32 and f16
 * storage: the plan stores each projection's accumulators whole into C (its matmul_cm lines say
 * so, 4 of them: Q, K, V, the output; lavapipe's 8 x 8 x 8 and 16 x 16 x 16 tiles are whole
 * here), not under cm_direct=0, and the forward agrees with the CPU path either way. */
static void run_forward_direct(void)
{
    static char plan[1 << 18];
    for (int f16 = 0; f16 < 2; f16++)
        for (int off = 0; off < 2; off++) {
            const mm_forward fw = {off ? "coopmat:cm_direct=0" : "coopmat", 0, 0, VKATTN_PRECISION_F16, .E = 256,
                                   .B = 2, .L = 64, .S = 64, .kv_dim = 256, .heads = 4,
                                   .storage = f16 ? VKATTN_DTYPE_F16 : VKATTN_DTYPE_F32};
            test_error e;
            if (!mm_forward_run(&fw, plan, sizeof plan, &e)) continue;
            const compare_tolerance *tol = compare_tolerance_of(COMPARE_F16);
            const uint32_t whole = test_count_text(plan, "accumulators stored whole into C");
            printf("  forward, whole tiles, %s storage, %s: %u matmul_cm steps storing C whole; max-abs %.2e NMSE %.2e  %s\n",
                   f16 ? "f16" : "f32", fw.tuning, whole, e.max_abs, e.nmse, compare_within(&e, tol) ? "ok" : "FAILED");
            CHECK_MSG(compare_within(&e, tol), "whole tiles, %s: max-abs %.3g, NMSE %.3g", fw.tuning, e.max_abs, e.nmse);
            CHECK_MSG(off ? whole == 0 : whole == 4, "%s: %u matmul_cm steps store C whole:\n%s", fw.tuning, whole, plan);
        }
}

/* matmul_cm reads A and B as storage buffers bound from a multiple of 4 elements: with the
 * bindings' range lowered to 256 KiB (internal), in_proj_weight (3072 x 1024 fp32, 12 MiB) and
 * out_proj_weight are bound in slices of whole column blocks at offsets the kernel must follow. */
static void run_forward_sliced(void)
{
    const mm_forward fw = {"coopmat", 0, 0, VKATTN_PRECISION_F16, .E = 1024, .B = 2, .L = 19, .S = 23,
                           .binding_kib = 256};
    static char plan[1 << 18];
    test_error e;
    if (!mm_forward_run(&fw, plan, sizeof plan, &e)) return;
    const compare_tolerance *tol = compare_tolerance_of(COMPARE_F16);
    uint32_t cm = test_count_text(plan, "matmul_cm ");
    printf("  forward, coopmat tuning, 256 KiB bindings: max-abs %.2e NMSE %.2e; %u matmul_cm dispatches  %s\n",
           e.max_abs, e.nmse, cm, compare_within(&e, tol) ? "ok" : "FAILED");
    CHECK_MSG(compare_within(&e, tol), "sliced forward against the CPU path: max-abs %.3g, NMSE %.3g", e.max_abs,
              e.nmse);
    /* whole: 3 projections and the output; slices of at most 64 columns of K = 1024: many more */
    CHECK_MSG(cm > 16, "%u matmul_cm dispatches: the weights were not sliced:\n%s", cm, plan);
}

/* f16 layers (fp16 context and weights in the output projection) under the coopmat tuning against
 * the CPU path: E 40 reads them 8 per 16-byte load (cm_wide_loads), E 36, whose rows start on
 * multiples of 4 elements only, 4 per load (the plan must say which). */
static void run_forward_f16_layers(void)
{
    static char plan[1 << 18];
    for (uint32_t E = 36; E <= 40; E += 4) {
        const mm_forward fw = {"coopmat", 0, 0, VKATTN_PRECISION_DEFAULT, .E = E, .B = 2, .L = 19, .S = 23,
                               .storage = VKATTN_DTYPE_F16};
        test_error e;
        if (!mm_forward_run(&fw, plan, sizeof plan, &e)) return;
        const compare_tolerance *tol = compare_tolerance_of(COMPARE_F16);
        int cm = strstr(plan, "matmul_cm") != NULL, wide = strstr(plan, "in 16-byte loads of 8") != NULL;
        printf("  forward, f16 layer of width %u, coopmat tuning: max-abs %.2e NMSE %.2e; matmul_cm%s  %s\n", E,
               e.max_abs, e.nmse, wide ? " in 16-byte loads of 8" : ", 4 values per load",
               compare_within(&e, tol) ? "ok" : "FAILED");
        CHECK_MSG(compare_within(&e, tol), "E %u: max-abs %.3g, NMSE %.3g", E, e.max_abs, e.nmse);
        CHECK_MSG(cm && wide == (E % 8 == 0), "E %u: the plan:\n%s", E, plan);
    }
}

/* An f16 layer's forward from fp16 device tensors (query and output): its Q/K/V projection reads
 * the query 8 values per load too, with the storage bindings whole or (binding_kib) in slices. */
static void run_forward_f16_tensors(uint32_t binding_kib)
{
    const uint32_t E = 256, L = 32;
    vkattn_context *ctx = NULL;
    vkattn_error error = {0};
    vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON, .tuning = "coopmat"};
    CHECK_STATUS(vkattn_context_create(&desc, &ctx, &error), VKATTN_OK);
    if (!ctx) return;
    ctx->binding_bytes = (uint64_t)binding_kib << 10;
    vkattn_layer_desc ld = {.embed_dim = E, .num_heads = 4, .storage = VKATTN_DTYPE_F16};
    test_weights tw;
    test_weights_make(&tw, &ld, 31);
    vkattn_layer *layer = NULL;
    vkattn_tensor *qt = NULL, *ot = NULL;
    float *q = malloc(L * E * sizeof *q), *gpu = malloc(L * E * sizeof *gpu), *cpu = malloc(L * E * sizeof *cpu);
    uint16_t *q16 = malloc(L * E * sizeof *q16), *o16 = malloc(L * E * sizeof *o16);
    test_rng rng = test_rng_make(37);
    for (uint32_t i = 0; i < L * E; i++) q16[i] = vka_f32_to_f16(test_rng_float(&rng)), q[i] = vka_f16_to_f32(q16[i]);
    const uint32_t dims[3] = {1, L, E};
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F16, 3, dims, &qt), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F16, 3, dims, &ot), VKATTN_OK);
    if (layer && qt && ot) {
        CHECK_STATUS(vkattn_tensor_write(qt, q16, L * E * sizeof *q16), VKATTN_OK);
        CHECK_STATUS(vkattn_forward(layer, &(vkattn_forward_desc){.query = qt, .output = ot, .causal = 1}), VKATTN_OK);
        CHECK_STATUS(vkattn_tensor_read(ot, o16, L * E * sizeof *o16), VKATTN_OK);
        for (uint32_t i = 0; i < L * E; i++) gpu[i] = vka_f16_to_f32(o16[i]);
        vkattn_host_forward_desc f = {.batch = 1, .query_len = L, .query = q, .causal = 1, .output = cpu};
        CHECK_STATUS(vkattn_reference_forward(&ld, &tw.w, &f, &error), VKATTN_OK);
        test_error e = test_compare(gpu, cpu, L * E);
        const compare_tolerance *tol = compare_tolerance_of(COMPARE_F16);
        printf("  forward, f16 layer from fp16 tensors, coopmat tuning%s: max-abs %.2e NMSE %.2e  %s\n",
               binding_kib ? ", 256 KiB bindings" : "", e.max_abs, e.nmse, compare_within(&e, tol) ? "ok" : "FAILED");
        CHECK_MSG(compare_within(&e, tol), "fp16 tensors: max-abs %.3g, NMSE %.3g", e.max_abs, e.nmse);
    }
    vkattn_tensor_destroy(qt), vkattn_tensor_destroy(ot);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
    free(q), free(gpu), free(cpu), free(q16), free(o16);
    gpu_test_finish_context(ctx);
}

/* The plan of a small forward (32 rows: enough for matmul_cm) of a layer of `storage` on `ctx`, as
 * text, into `plan`. */
static void explain_small(vkattn_context *ctx, vkattn_dtype storage, char *plan, size_t size)
{
    vkattn_layer_desc ld = {.embed_dim = 64, .num_heads = 4, .storage = storage};
    test_weights tw;
    test_weights_make(&tw, &ld, 3);
    vkattn_layer *layer = NULL;
    float q[32 * 64] = {0}, out[32 * 64];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 32, .query = q, .output = out};
    plan[0] = '\0';
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
    if (layer) CHECK_STATUS(vkattn_forward_explain(layer, &f, plan, size, NULL), VKATTN_OK);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
}

/* The self-test at context creation (api/coopmat_check.c). On this device it passes: the context
 * keeps cooperative matrices and says it checked them. Made to see a wrong element, or a call that
 * fails as a broken driver's would (the fault injector's coopmat_check), a context still opens, with
 * cooperative matrices off and a note that says why; its tuning is the device's class without
 * them, and a forced "coopmat" tuning is kept but plans the plain matmul, as with VKATTN_COOPMAT=0. */
static void test_self_test(const vkattn_device_info *info)
{
    CHECK_MSG(info->cooperative_matrix_usable && info->cooperative_matrix_checked, "self-test: usable %d checked %d (%s)",
              info->cooperative_matrix_usable, info->cooperative_matrix_checked, info->cooperative_matrix_note);
    printf("  self-test passed on the default context (tuning %s)\n", info->tuning);
    static char plan[1 << 16];
    for (int mode = VKA_FAULT_COOPMAT_WRONG; mode <= VKA_FAULT_COOPMAT_FAIL; mode++) {
        for (int forced = 0; forced < 2; forced++) {
            vka_faults faults = {.coopmat_check = mode};
            vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON, .tuning = forced ? "coopmat" : NULL};
            vkattn_context *ctx = NULL;
            vkattn_error error = {0};
            CHECK_STATUS(vka_context_create_with_faults(&desc, &faults, &ctx, &error), VKATTN_OK);
            if (!ctx) {
                fprintf(stderr, "%s\n", error.message);
                continue;
            }
            vkattn_device_info got;
            vkattn_context_device(ctx, &got);
            const char *expect = mode == VKA_FAULT_COOPMAT_WRONG ? " gave " : "(injected)";
            CHECK_MSG(!got.cooperative_matrix_usable && !got.cooperative_matrix_checked, "usable %d checked %d",
                      got.cooperative_matrix_usable, got.cooperative_matrix_checked);
            CHECK_MSG(strncmp(got.cooperative_matrix_note, "self-test failed: ", 18) == 0 &&
                      strstr(got.cooperative_matrix_note, expect), "note: %s", got.cooperative_matrix_note);
            const vka_tuning *class_without = vka_tuning_for(&got, NULL);
            CHECK_MSG(strcmp(got.tuning, forced ? "coopmat" : class_without->name) == 0, "tuning %s", got.tuning);
            CHECK(ctx->dev.matrix_subgroup == 0);
            explain_small(ctx, VKATTN_DTYPE_F32, plan, sizeof plan);
            CHECK_MSG(!strstr(plan, "_cm") && strstr(plan, "matmul"), "a plan after a failed self-test:\n%s", plan);
            printf("  self-test made to fail (%s, tuning %s): \"%s\"; the plan has no _cm kernel\n",
                   mode == VKA_FAULT_COOPMAT_WRONG ? "a wrong element" : "a failed call", got.tuning,
                   got.cooperative_matrix_note);
            gpu_test_finish_context(ctx);
        }
    }
}

/* cm_wide_loads: an f16 layer's output projection (fp16 context and weights, E 64) reads 8 values
 * per 16-byte load under the coopmat class, 4 with cm_wide_loads=0 (its Q/K/V projection reads the
 * caller's fp32 query: 4); an f32 layer's projections (fp32 operands) never. The kernel itself: the _wide cases above; the forwards
 * of f16 layers against the CPU path: gpu_vs_cpu_coopmat_fp16, attn_cm's f16 rows. */
static void test_wide_loads(void)
{
    const char *tunings[] = {"coopmat", "coopmat:cm_wide_loads=0"};
    static char plan[1 << 16];
    for (int t = 0; t < 2; t++) {
        vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON, .tuning = tunings[t]};
        vkattn_context *ctx = NULL;
        vkattn_error error = {0};
        CHECK_STATUS(vkattn_context_create(&desc, &ctx, &error), VKATTN_OK);
        if (!ctx) continue;
        explain_small(ctx, VKATTN_DTYPE_F16, plan, sizeof plan);
        int cm = strstr(plan, "matmul_cm") != NULL, wide = strstr(plan, "in 16-byte loads of 8") != NULL;
        CHECK_MSG(cm && wide == (t == 0), "an f16 layer under %s:\n%s", tunings[t], plan);
        explain_small(ctx, VKATTN_DTYPE_F32, plan, sizeof plan);
        CHECK_MSG(!strstr(plan, "16-byte loads"), "an f32 layer under %s:\n%s", tunings[t], plan);
        printf("  tuning %s: an f16 layer's matmul_cm %s\n", tunings[t],
               wide ? "in 16-byte loads of 8 values" : "in loads of 4 values");
        gpu_test_finish_context(ctx);
    }
}

/* A tuning string whose matmul_cm tile the device cannot hold (8 x 8 accumulators per subgroup in
 * blocks of 8 steps: 72 KiB or more of staging) keeps the cooperative matrices: the self-test
 * checks them with the class's own tile, the projections take the next kernel (32 rows: matmul.comp),
 * the attention attn_cm. */
static void test_tile_too_large(void)
{
    vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON,
                                .tuning = "coopmat:cm_frags_m=8,cm_frags_n=8,cm_frags_narrow=8,cm_ksteps=8"};
    vkattn_context *ctx = NULL;
    vkattn_error error = {0};
    CHECK_STATUS(vkattn_context_create(&desc, &ctx, &error), VKATTN_OK);
    if (!ctx) return;
    vkattn_device_info got;
    vkattn_context_device(ctx, &got);
    CHECK_MSG(got.cooperative_matrix_usable && got.cooperative_matrix_checked && strcmp(got.tuning, "coopmat, 4 fields set") == 0,
              "usable %d checked %d tuning %s (%s)", got.cooperative_matrix_usable, got.cooperative_matrix_checked,
              got.tuning, got.cooperative_matrix_note);
    static char plan[1 << 16];
    explain_small(ctx, VKATTN_DTYPE_F16, plan, sizeof plan);
    CHECK_MSG(!strstr(plan, "matmul_cm") && strstr(plan, " matmul ") && strstr(plan, "attn_cm"),
              "the plan under a tile too large:\n%s", plan);
    printf("  tuning %s (a tile too large): matrices kept, projections on matmul, attention on attn_cm\n",
           got.tuning);
    gpu_test_finish_context(ctx);
}

int main(void)
{
    vkattn_context *ctx = gpu_test_context();
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    if (!info.cooperative_matrix_usable) {
        /* The coopmat tuning must be refused where the device (or build) cannot run it, saying so. */
        vkattn_context *forced = NULL;
        vkattn_error error = {0};
        vkattn_context_desc desc = {.tuning = "coopmat"};
        vkattn_status status = vkattn_context_create(&desc, &forced, &error);
        if (info.cooperative_matrix_shape_count == 0 || strstr(info.cooperative_matrix_note, "build")) {
            CHECK_STATUS(status, VKATTN_ERROR_UNSUPPORTED);
            CHECK_MSG(strstr(error.message, "cooperative matri") != NULL, "unclear refusal: %s", error.message);
            printf("tuning coopmat refused: %s\n", error.message);
        }
        vkattn_context_destroy(forced);
        gpu_test_finish_context(ctx);
        printf("skipped: no cooperative matrices for vkattn on this device (%s)\n",
               info.cooperative_matrix_note[0] ? info.cooperative_matrix_note : "none");
        return test_g.failures ? test_finish() : SKIP;
    }
    const vkattn_matrix_shape ms = vka_matrix_shape_for(&info);
    printf("matrices %ux%ux%u, subgroup size %u\n", ms.m, ms.n, ms.k, ctx->dev.matrix_subgroup);
    test_self_test(&info);
    test_tile_too_large();
    test_wide_loads();
    double flops = 0, seconds = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(ctx, &cases[i], 100 + i, &flops, &seconds);
    if (seconds > 0)
        printf("%.2f GFLOP/s over the cases with K >= 64 (%s: a correctness oracle, not a benchmark)\n",
               flops / seconds * 1e-9, info.name);
    gpu_test_finish_context(ctx);
    run_forward(0, 0);
    run_forward(24, 0);
    run_forward(0, 1);
    /* the intel class: 4 x 4 accumulators per subgroup of the device's smallest size */
    run_forward_tuned("intel", 0, 0, NULL);
    run_forward_direct();
    /* a tuning string's tile: 1 x 3 accumulators per subgroup (narrow matrices too) in 2 x 2
     * subgroups, blocks of 3 steps; the plan must say so */
    char tile[128];
    snprintf(tile, sizeof tile, "(%ux%u tiles, %u-element blocks", 2 * ms.m, 6 * ms.n, (3 * ms.k + 3) / 4 * 4);
    run_forward_tuned("coopmat:cm_frags_m=1,cm_frags_n=3,cm_frags_narrow=0,cm_ksteps=3,cm_subgroups_n=2", 0, 0, tile);
    /* the default fetches a block ahead in 2 x 8 subgroups of 4 x 2 accumulators (2 x 2 with
     * matrices narrower than 16), with two staged blocks where they fit (19 KiB with lavapipe's 8 x
     * 8 x 8; 76 KiB with 16 x 16 x 16, over the H100's 48, so one there); with one,
     * cm_prefetch=0 fetches each block as it is staged */
    const uint32_t fm = ms.m < 16 ? 2 : 4, tile_k = (2 * ms.k + 3) / 4 * 4;
    const int two_fit = vka_matmul_cm_shared_bytes(2 * fm * ms.m, 8 * 2 * ms.n, tile_k, ms, 8, 2) <=
                        info.max_shared_memory_bytes;
    run_forward_tuned("coopmat", 0, 0,
                      two_fit ? "in 16 subgroups, fp16 operands, the next block fetched meanwhile, two staged blocks)"
                              : "in 16 subgroups, fp16 operands, the next block fetched meanwhile)");
    run_forward_tuned("coopmat:cm_prefetch=0,cm_stages=1", 0, 0, "fp16 operands)");
    /* 2 x 4 subgroups of 4 x 1 accumulators (cm_frags_narrow=0: lavapipe's matrices too), and 2 x 1
     * subgroups: the plan says so */
    snprintf(tile, sizeof tile, "(%ux%u tiles, %u-element blocks, %ux%ux%u matrices in 8 subgroups", 8 * ms.m, 4 * ms.n,
             (2 * ms.k + 3) / 4 * 4, ms.m, ms.n, ms.k);
    run_forward_tuned("coopmat:cm_subgroups_n=4,cm_frags_narrow=0,cm_frags_n=1", 0, 0, tile);
    run_forward_tuned("coopmat:cm_subgroups_n=1", 24, 0, "matrices in 2 subgroups");
    run_forward_tuned("coopmat:cm_subgroups_n=8,cm_frags_n=1,cm_stages=1", 0, 0, "matrices in 16 subgroups");
    /* two staged blocks in 2 x 2 subgroups; the default's 2 x 8 with one block, in reduction parts
     * (the default, 2 x 8 with two where they fit, is the "coopmat" rows above) */
    run_forward_tuned("coopmat:cm_subgroups_n=2,cm_stages=2", 0, 0,
                      "in 4 subgroups, fp16 operands, the next block fetched meanwhile, two staged blocks)");
    run_forward_tuned("coopmat:cm_stages=1", 24, 0, "in 16 subgroups, fp16 operands, the next block fetched meanwhile)");
    run_forward_sliced();
    run_forward_f16_layers();
    run_forward_f16_tensors(0);
    run_forward_f16_tensors(256);
    return test_finish();
}
