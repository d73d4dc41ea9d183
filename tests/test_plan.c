/* The plan is pure: shapes and device limits in, kernel steps and workspace sizes out. These tests
 * run it with made-up limits (no Vulkan), to check dispatch counts, chunking and limit errors. */
#include "attention/plan.h"
#include "test_util.h"

static vka_problem problem(uint32_t B, uint32_t L, uint32_t S, uint32_t E, uint32_t H, int self)
{
    vka_problem p = {0};
    p.cfg.E = E, p.cfg.H = H, p.cfg.D = E / H, p.cfg.H_active = H, p.cfg.inner = E, p.cfg.kdim = E, p.cfg.vdim = E, p.cfg.bias = 1, p.cfg.packed_in_proj = 1;
    p.B = B, p.L = L, p.S = S, p.S_ext = S, p.self_attention = self;
    return p;
}

static vka_plan_limits lavapipe_limits(void)
{
    vkattn_device_info cpu = {.type = VKATTN_DEVICE_CPU};
    vka_plan_limits l = {128u << 20, {65535, 65535, 65535}, 1u << 27, 0, vka_profile_for(&cpu, NULL)};
    return l;
}

static uint32_t count_kind(const vka_plan *plan, vkattn_stage stage)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < plan->step_count; i++)
        n += plan->steps[i].stage == stage && plan->steps[i].kind == VKA_STEP_DISPATCH;
    return n;
}

static void test_small_self_attention(void)
{
    vka_problem p = problem(1, 16, 16, 64, 4, 1);
    vka_plan_limits l = lavapipe_limits();
    vka_plan plan = {0};
    /* Default (fused) path: fused QKV matmul, fused attention, output projection. */
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, NULL), VKATTN_OK);
    CHECK(plan.path == VKATTN_PATH_FUSED);
    CHECK(plan.step_count == 3);
    CHECK(plan.steps[1].kernel == VKA_KERNEL_FUSED);
    CHECK(plan.workspace_bytes[VKA_ROLE_SCORES] == 0);
    /* Unfused: fused QKV, scores, softmax, P·V, output projection */
    p.path = VKATTN_PATH_UNFUSED;
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, NULL), VKATTN_OK);
    CHECK(plan.step_count == 5);
    CHECK(plan.fused_qkv == 1);
    CHECK(plan.chunks == 1);
    CHECK(plan.workspace_bytes[VKA_ROLE_QKV] == 16ull * 3 * 64 * 4);
    CHECK(plan.workspace_bytes[VKA_ROLE_SCORES] == 4ull * 16 * 16 * 4);
    CHECK(plan.steps[0].push.matmul.N == 3 * 64);
    CHECK(plan.steps[0].barrier_before == 0);
    for (uint32_t i = 1; i < plan.step_count; i++) CHECK(plan.steps[i].barrier_before == 1);
    vka_plan_free(&plan);
}

static void test_cross_attention(void)
{
    vka_problem p = problem(2, 5, 17, 32, 4, 0);
    p.path = VKATTN_PATH_UNFUSED;
    p.cfg.kdim = 24, p.cfg.vdim = 40, p.cfg.packed_in_proj = 0;
    vka_plan_limits l = lavapipe_limits();
    vka_plan plan = {0};
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, NULL), VKATTN_OK);
    CHECK(plan.fused_qkv == 0);
    CHECK(count_kind(&plan, VKATTN_STAGE_QKV_PROJECTION) == 3);
    /* K is counted in texels: kdim 24 and vdim 40 are read four floats at a time. */
    CHECK(plan.steps[1].push.matmul.K == 24 / 4 && plan.steps[1].bindings[1] == VKA_ROLE_W_K);
    CHECK(plan.steps[2].push.matmul.K == 40 / 4 && plan.steps[2].bindings[1] == VKA_ROLE_W_V);
    CHECK(plan.steps[1].spec[VKA_SPEC_VEC] == 4 && plan.steps[1].views[0] == VKA_VIEW_VEC4);
    /* An odd kdim falls back to one float per texel. */
    p.cfg.kdim = 7;
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, NULL), VKATTN_OK);
    CHECK(plan.steps[1].push.matmul.K == 7 && plan.steps[1].spec[VKA_SPEC_VEC] == 1);
    CHECK(plan.workspace_bytes[VKA_ROLE_K_PROJ] == 2ull * 17 * 32 * 4);
    vka_plan_free(&plan);
}

/* Every (bh, i) score row must be covered exactly once across the chunks. */
static void check_chunk_cover(const vka_problem *p, const vka_plan *plan)
{
    uint32_t BH = p->B * p->cfg.H;
    unsigned char *seen = calloc((size_t)BH * p->L, 1);
    for (uint32_t s = 0; s < plan->step_count; s++) {
        const vka_step *st = &plan->steps[s];
        if (st->stage != VKATTN_STAGE_SCORES) continue;
        const vka_scores_push *sp = &st->push.scores;
        for (uint32_t bh = sp->bh_begin; bh < sp->bh_begin + sp->bh_count; bh++)
            for (uint32_t i = sp->i_begin; i < sp->i_begin + sp->i_count; i++) seen[(size_t)bh * p->L + i]++;
        CHECK((uint64_t)sp->bh_count * sp->i_count * p->S_ext * 4 <= plan->workspace_bytes[VKA_ROLE_SCORES]);
    }
    size_t wrong = 0;
    for (size_t r = 0; r < (size_t)BH * p->L; r++) wrong += seen[r] != 1;
    CHECK_MSG(wrong == 0, "%zu score rows covered other than once", wrong);
    free(seen);
}

static void test_chunking_by_heads(void)
{
    /* 12 heads x 2048 x 2048 x 4 bytes = 192 MiB > 128 MiB: 8 heads per chunk, then 4. */
    vka_problem p = problem(1, 2048, 2048, 12, 12, 1);
    p.path = VKATTN_PATH_UNFUSED;
    vka_plan_limits l = lavapipe_limits();
    vka_plan plan = {0};
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, NULL), VKATTN_OK);
    CHECK(plan.chunks == 2);
    CHECK(plan.workspace_bytes[VKA_ROLE_SCORES] == 8ull * 2048 * 2048 * 4);
    check_chunk_cover(&p, &plan);
    vka_plan_free(&plan);
}

static void test_chunking_by_rows(void)
{
    vka_problem p = problem(2, 1000, 700, 16, 2, 0);
    p.path = VKATTN_PATH_UNFUSED;
    vka_plan_limits l = lavapipe_limits();
    l.scores_budget_bytes = 100 * 700 * 4 + 17; /* 100 rows per chunk */
    vka_plan plan = {0};
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, NULL), VKATTN_OK);
    CHECK(plan.chunks == 4 * 10);
    check_chunk_cover(&p, &plan);
    /* Odd row counts: the last chunk of each head is short. */
    p.L = 1001;
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, NULL), VKATTN_OK);
    CHECK(plan.chunks == 4 * 11);
    check_chunk_cover(&p, &plan);
    vka_plan_free(&plan);
}

static void test_averaged_weights(void)
{
    vka_problem p = problem(3, 40, 40, 16, 4, 1);
    p.weights = VKA_WEIGHTS_AVERAGED;
    vka_plan_limits l = lavapipe_limits();
    l.scores_budget_bytes = 3 * 40 * 40 * 4; /* 3 heads per chunk: chunks straddle batches */
    vka_plan plan = {0};
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, NULL), VKATTN_OK);
    CHECK(plan.chunks == 4);
    CHECK(count_kind(&plan, VKATTN_STAGE_AVERAGE_HEADS) == 4);
    CHECK(plan.steps[1].kind == VKA_STEP_ZERO); /* zeroed after the projection, before any chunk */
    check_chunk_cover(&p, &plan);
    vka_plan_free(&plan);
}

static void test_limits(void)
{
    vka_plan_limits l = lavapipe_limits();
    vka_plan plan = {0};
    vkattn_error err = {0};
    /* Per-head weights are the probability buffer and must fit the range whole. */
    vka_problem p = problem(1, 4096, 4096, 16, 4, 1);
    p.weights = VKA_WEIGHTS_PER_HEAD;
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, &err), VKATTN_ERROR_DEVICE_LIMIT);
    CHECK(strstr(err.message, "maxStorageBufferRange") != NULL);
    /* A query bigger than the range. */
    p = problem(1, 40000, 40000, 1024, 8, 1);
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, &err), VKATTN_ERROR_DEVICE_LIMIT);
    CHECK(strstr(err.message, "query") != NULL);
    /* One row of scores bigger than the budget. */
    p = problem(1, 1, 1000, 8, 1, 0);
    p.path = VKATTN_PATH_UNFUSED;
    l.scores_budget_bytes = 1024;
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, &err), VKATTN_ERROR_DEVICE_LIMIT);
    CHECK(strstr(err.message, "one row") != NULL);
    /* Self-attention whose fused QKV would exceed the range falls back to three matmuls. */
    p = problem(1, 16384, 16384, 1024, 16, 1);
    l.scores_budget_bytes = 1u << 20;
    CHECK_STATUS(vka_plan_build(&p, &l, &plan, &err), VKATTN_OK);
    CHECK(plan.fused_qkv == 0);
    CHECK(count_kind(&plan, VKATTN_STAGE_QKV_PROJECTION) == 3);
    vka_plan_free(&plan);
}

static void test_fold_groups(void)
{
    const uint32_t max[3] = {65535, 65535, 65535};
    uint32_t g[3];
    CHECK(vka_fold_groups(1, max, g) && g[0] == 1 && g[1] == 1 && g[2] == 1);
    CHECK(vka_fold_groups(100000, max, g) && g[0] == 65535 && g[1] == 2 && g[2] == 1);
    CHECK(vka_fold_groups(5000000000ull, max, g));
    CHECK((uint64_t)g[0] * g[1] * g[2] >= 5000000000ull);
    CHECK(!vka_fold_groups(0, max, g));
    const uint32_t tiny[3] = {4, 4, 4};
    CHECK(vka_fold_groups(64, tiny, g));
    CHECK(!vka_fold_groups(65, tiny, g));
}

int main(void)
{
    RUN_TEST(test_small_self_attention);
    RUN_TEST(test_cross_attention);
    RUN_TEST(test_chunking_by_heads);
    RUN_TEST(test_chunking_by_rows);
    RUN_TEST(test_averaged_weights);
    RUN_TEST(test_limits);
    RUN_TEST(test_fold_groups);
    return test_finish();
}
