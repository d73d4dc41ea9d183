/* Submissions (several forwards, one submit, no wait), the misuse checks around them and around
 * threads (VKATTN_ERROR_BUSY), tensor region copies, and destroying a context whose layers,
 * tensors and submissions are still alive. Results are compared with blocking forwards (the same
 * kernels, so the same bits) and with the CPU reference. */
#include <pthread.h>

#include "gpu_test.h"
#include "vkattn.h"

#include "api/context.h" /* the context's busy flag, set by hand for the deterministic BUSY test */

enum { B = 2, L = 6, E = 32, H = 4, LAYERS = 8 };
#define N ((size_t)B * L * E)

typedef struct stack {
    test_weights w[LAYERS];
    vkattn_layer *layer[LAYERS];
    vkattn_tensor *act[LAYERS + 1]; /* act[i] -> layer i -> act[i + 1] */
} stack;

static void stack_make(vkattn_context *ctx, stack *s, const float *x)
{
    vkattn_layer_desc ld = {.embed_dim = E, .num_heads = H};
    for (int i = 0; i < LAYERS; i++) {
        test_weights_make(&s->w[i], &ld, 100 + (unsigned)i);
        CHECK_STATUS(vkattn_layer_create(ctx, &ld, &s->w[i].w, &s->layer[i]), VKATTN_OK);
    }
    for (int i = 0; i <= LAYERS; i++)
        CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, E}, &s->act[i]), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_write(s->act[0], x, N * sizeof *x), VKATTN_OK);
}

static void stack_free(stack *s)
{
    for (int i = 0; i < LAYERS; i++) vkattn_layer_destroy(s->layer[i]), test_weights_free(&s->w[i]);
    for (int i = 0; i <= LAYERS; i++) vkattn_tensor_destroy(s->act[i]);
}

static vkattn_forward_desc step(const stack *s, int i)
{
    return (vkattn_forward_desc){.query = s->act[i], .output = s->act[i + 1], .causal = 1};
}

/* Eight layers chained in one submission equal eight blocking forwards bit for bit, and the CPU
 * reference within the usual tolerance; while it runs, its layers and tensors answer BUSY. */
static void test_chain(vkattn_context *ctx)
{
    float x[N], blocking[N], submitted[N], cpu[N], tmp[N];
    test_rng rng = test_rng_make(1);
    test_fill(&rng, x, N, 1.0f);
    stack s;
    stack_make(ctx, &s, x);

    for (int i = 0; i < LAYERS; i++) {
        vkattn_forward_desc f = step(&s, i);
        CHECK_STATUS(vkattn_forward(s.layer[i], &f), VKATTN_OK);
    }
    CHECK_STATUS(vkattn_tensor_read(s.act[LAYERS], blocking, sizeof blocking), VKATTN_OK);
    memcpy(tmp, x, sizeof tmp);
    for (int i = 0; i < LAYERS; i++) {
        vkattn_host_forward_desc h = {.batch = B, .query_len = L, .query = tmp, .output = cpu, .causal = 1};
        vkattn_error err = {0};
        CHECK_STATUS(vkattn_reference_forward(&s.w[i].desc, &s.w[i].w, &h, &err), VKATTN_OK);
        memcpy(tmp, cpu, sizeof tmp);
    }
    test_error e = test_compare(blocking, cpu, N);
    printf("  8 blocking forwards vs CPU: max-abs %.2e NMSE %.2e\n", e.max_abs, e.nmse);
    CHECK(e.nonfinite == 0 && e.max_abs <= 1e-4 * (e.ref_max > 1 ? e.ref_max : 1) && e.nmse <= 1e-9);

    /* Zero the chain's outputs so that stale values cannot pass for results. */
    float zeros[N] = {0};
    for (int i = 1; i <= LAYERS; i++) CHECK_STATUS(vkattn_tensor_write(s.act[i], zeros, sizeof zeros), VKATTN_OK);
    vkattn_submission *sub = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK); /* nothing submitted: nothing to wait for */
    for (int i = 0; i < LAYERS; i++) {
        vkattn_forward_desc f = step(&s, i);
        CHECK_STATUS(vkattn_submission_add(sub, s.layer[i], &f), VKATTN_OK);
    }
    /* From add on, the layers and tensors are the submission's. */
    vkattn_forward_desc f0 = step(&s, 0);
    CHECK_STATUS(vkattn_forward(s.layer[0], &f0), VKATTN_ERROR_BUSY);
    CHECK(strstr(vkattn_context_last_error(ctx), "submission") != NULL);
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[0], &f0), VKATTN_ERROR_BUSY);
    CHECK(strstr(vkattn_context_last_error(ctx), "already has a forward in this submission") != NULL);
    CHECK_STATUS(vkattn_tensor_read(s.act[3], tmp, sizeof tmp), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_tensor_write(s.act[0], x, sizeof x), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_layer_set_head_mask(s.layer[2], NULL), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_ERROR_INVALID_ARGUMENT); /* added, not submitted */

    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_ERROR_BUSY);
    vkattn_status polled = vkattn_submission_poll(sub);
    CHECK(polled == VKATTN_OK || polled == VKATTN_ERROR_BUSY);
    if (polled == VKATTN_ERROR_BUSY) CHECK(strstr(vkattn_context_last_error(ctx), "still running") != NULL);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_poll(sub), VKATTN_OK); /* finished and empty */
    CHECK_STATUS(vkattn_tensor_read(s.act[LAYERS], submitted, sizeof submitted), VKATTN_OK);
    CHECK_MSG(memcmp(submitted, blocking, sizeof blocking) == 0, "the submitted chain differs from the blocking one");
    vkattn_forward_stats st;
    CHECK_STATUS(vkattn_layer_last_stats(s.layer[7], &st), VKATTN_OK);
    CHECK(st.path == VKATTN_PATH_FUSED && st.submits == 0 && !st.timed);

    /* Reused: the same submission runs the chain again, now polled to completion. */
    for (int i = 1; i <= LAYERS; i++) CHECK_STATUS(vkattn_tensor_write(s.act[i], zeros, sizeof zeros), VKATTN_OK);
    for (int i = 0; i < LAYERS; i++) {
        vkattn_forward_desc f = step(&s, i);
        CHECK_STATUS(vkattn_submission_add(sub, s.layer[i], &f), VKATTN_OK);
    }
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    int polls = 0;
    while ((polled = vkattn_submission_poll(sub)) == VKATTN_ERROR_BUSY) polls++;
    CHECK_STATUS(polled, VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_read(s.act[LAYERS], submitted, sizeof submitted), VKATTN_OK);
    CHECK(memcmp(submitted, blocking, sizeof blocking) == 0);
    printf("  polled %d times before the chain finished\n", polls);
    vkattn_submission_destroy(sub);
    stack_free(&s);
}

/* Bad adds change nothing; the CPU path cannot be submitted; destroying a tensor an unsubmitted
 * submission uses drops its forwards and the next submit says so; destroying one a running
 * submission uses waits for it first. */
/* A float attn_mask that a forward earlier in the same submission writes is judged by nothing at
 * add: its values do not exist yet. Here the tensor holds +inf from vkattn_tensor_write, which the
 * producer overwrites with finite values; the consumer's add once refused it by those stale values
 * (found by an outside review). The consumer's output against the CPU path with the producer's
 * output as its mask. */
static void test_mask_written_in_submission(vkattn_context *ctx)
{
    enum { LM = 8, EP = 8, EC = 16 }; /* the producer's (1, 8, 8) output is the consumer's (B*H, L, S) mask */
    vkattn_layer_desc pd = {.embed_dim = EP, .num_heads = 2}, cd = {.embed_dim = EC, .num_heads = 1};
    test_weights pw, cw;
    test_weights_make(&pw, &pd, 31), test_weights_make(&cw, &cd, 32);
    vkattn_layer *producer = NULL, *consumer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &pd, &pw.w, &producer), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_create(ctx, &cd, &cw.w, &consumer), VKATTN_OK);
    float xp[LM * EP], xc[LM * EC], mask[LM * LM], ref[LM * EC], got[LM * EC], inf[LM * LM];
    test_rng rng = test_rng_make(33);
    test_fill(&rng, xp, LM * EP, 1.0f), test_fill(&rng, xc, LM * EC, 1.0f);
    for (int i = 0; i < LM * LM; i++) inf[i] = INFINITY;
    vkattn_tensor *qp = NULL, *m = NULL, *qc = NULL, *out = NULL;
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, LM, EP}, &qp), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, LM, LM}, &m), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, LM, EC}, &qc), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, LM, EC}, &out), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_write(qp, xp, sizeof xp), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_write(qc, xc, sizeof xc), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_write(m, inf, sizeof inf), VKATTN_OK);
    /* a blocking forward sees the +inf */
    vkattn_forward_desc fc = {.query = qc, .output = out, .attn_mask = m};
    CHECK_STATUS(vkattn_forward(consumer, &fc), VKATTN_ERROR_NON_FINITE);
    vkattn_submission *sub = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    vkattn_forward_desc fp = {.query = qp, .output = m};
    CHECK_STATUS(vkattn_submission_add(sub, producer, &fp), VKATTN_OK);
    vkattn_status added = vkattn_submission_add(sub, consumer, &fc);
    CHECK_MSG(added == VKATTN_OK, "the consumer's add: %s", vkattn_context_last_error(ctx));
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);
    vkattn_submission_destroy(sub);
    vkattn_error err = {0};
    vkattn_host_forward_desc hp = {.batch = 1, .query_len = LM, .query = xp, .output = mask};
    CHECK_STATUS(vkattn_reference_forward(&pd, &pw.w, &hp, &err), VKATTN_OK);
    vkattn_host_forward_desc hc = {.batch = 1, .query_len = LM, .query = xc, .output = ref, .attn_mask = mask,
                                   .attn_mask_per_head = 1};
    CHECK_STATUS(vkattn_reference_forward(&cd, &cw.w, &hc, &err), VKATTN_OK);
    if (added == VKATTN_OK) {
        CHECK_STATUS(vkattn_tensor_read(out, got, sizeof got), VKATTN_OK);
        test_error e = test_compare(got, ref, LM * EC);
        printf("  mask written in the submission: max-abs %.2e NMSE %.2e\n", e.max_abs, e.nmse);
        CHECK(e.nonfinite == 0 && e.max_abs <= 1e-4 * (e.ref_max > 1 ? e.ref_max : 1) && e.nmse <= 1e-9);
    }
    vkattn_tensor_destroy(qp), vkattn_tensor_destroy(m), vkattn_tensor_destroy(qc), vkattn_tensor_destroy(out);
    vkattn_layer_destroy(producer), vkattn_layer_destroy(consumer);
    test_weights_free(&pw), test_weights_free(&cw);
}

static void test_submission_errors(vkattn_context *ctx)
{
    float x[N];
    test_rng rng = test_rng_make(2);
    test_fill(&rng, x, N, 1.0f);
    stack s;
    stack_make(ctx, &s, x);
    vkattn_submission *sub = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    vkattn_forward_desc f = step(&s, 0);
    CHECK_STATUS(vkattn_submission_add(sub, NULL, &f), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_forward_desc cpu = f;
    cpu.path = VKATTN_PATH_CPU;
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[0], &cpu), VKATTN_ERROR_UNSUPPORTED);
    vkattn_forward_desc bad = f;
    bad.output = s.act[0];
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[0], &bad), VKATTN_ERROR_INVALID_ARGUMENT);
    /* None of the failed adds holds anything: the layer and tensors are free. */
    CHECK_STATUS(vkattn_forward(s.layer[0], &f), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK); /* empty: nothing to do */
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);

    /* A tensor destroyed before submit: the forwards are dropped, the submit says so. */
    vkattn_tensor *extra = NULL;
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, E}, &extra), VKATTN_OK);
    vkattn_forward_desc g = {.query = s.act[0], .output = extra};
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[1], &g), VKATTN_OK);
    vkattn_tensor_destroy(extra);
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "destroyed before it was submitted") != NULL);
    CHECK_STATUS(vkattn_forward(s.layer[1], &f), VKATTN_OK); /* free again */
    /* Said once: a forward added after the drop is refused with the same news (so it cannot run
     * without the ones before it unnoticed), and the next add is taken. */
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, E}, &extra), VKATTN_OK);
    g.output = extra;
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[1], &g), VKATTN_OK);
    vkattn_tensor_destroy(extra);
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[0], &f), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "destroyed before it was submitted") != NULL);
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[0], &f), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);

    /* An output shares no memory with another argument: not an input, not another output (a
     * layer where L = E = S makes the averaged weights and the output the same shape). */
    vkattn_forward_desc in_place = {.query = s.act[0], .key = s.act[1], .value = s.act[1], .output = s.act[1]};
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[0], &in_place), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "output shares memory with key") != NULL);
    vkattn_layer_desc square = {.embed_dim = 8, .num_heads = 2};
    test_weights sw;
    test_weights_make(&sw, &square, 9);
    vkattn_layer *sq = NULL;
    vkattn_tensor *q8 = NULL, *y8 = NULL, *w8 = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &square, &sw.w, &sq), VKATTN_OK);
    for (vkattn_tensor **t = &q8; t; t = t == &q8 ? &y8 : t == &y8 ? &w8 : NULL)
        CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, 8, 8}, t), VKATTN_OK);
    vkattn_forward_desc two = {.query = q8, .output = y8, .attn_weights = y8, .average_weights = 1};
    CHECK_STATUS(vkattn_forward(sq, &two), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(vkattn_context_last_error(ctx), "output shares memory with attn_weights") != NULL);
    CHECK_STATUS(vkattn_submission_add(sub, sq, &two), VKATTN_ERROR_INVALID_ARGUMENT);
    two.attn_weights = w8;
    CHECK_STATUS(vkattn_forward(sq, &two), VKATTN_OK);
    vkattn_tensor_destroy(q8), vkattn_tensor_destroy(y8), vkattn_tensor_destroy(w8);
    vkattn_layer_destroy(sq);
    test_weights_free(&sw);

    /* A layer destroyed while its submission runs: the destroy waits, the result is complete. */
    float want[N], got[N];
    CHECK_STATUS(vkattn_forward(s.layer[2], &f), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_read(s.act[1], want, sizeof want), VKATTN_OK);
    float zeros[N] = {0};
    CHECK_STATUS(vkattn_tensor_write(s.act[1], zeros, sizeof zeros), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[2], &f), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    vkattn_layer_destroy(s.layer[2]);
    s.layer[2] = NULL;
    CHECK_STATUS(vkattn_tensor_read(s.act[1], got, sizeof got), VKATTN_OK);
    CHECK(memcmp(got, want, sizeof got) == 0);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);
    vkattn_submission_destroy(sub);
    stack_free(&s);
}

/* The threading rule, checked: while a call is inside (the context's flag set, as a second
 * thread would see it), every entry point answers BUSY without a message and changes nothing. */
static void test_busy_flag(vkattn_context *ctx)
{
    float x[N], before[N], after[N];
    test_rng rng = test_rng_make(3);
    test_fill(&rng, x, N, 1.0f);
    stack s;
    stack_make(ctx, &s, x);
    vkattn_forward_desc f = step(&s, 0);
    CHECK_STATUS(vkattn_forward(s.layer[0], &f), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_read(s.act[1], before, sizeof before), VKATTN_OK);
    const char *message = vkattn_context_last_error(ctx);
    char kept[128];
    snprintf(kept, sizeof kept, "%s", message);

    atomic_store(&ctx->busy, 1);
    vkattn_tensor *t = NULL;
    vkattn_layer *l = NULL;
    vkattn_submission *sub = NULL;
    vkattn_forward_stats st;
    vkattn_host_forward_desc h = {.batch = B, .query_len = L, .query = x, .output = after};
    float zeros[N] = {0};
    CHECK_STATUS(vkattn_forward(s.layer[0], &f), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_forward_host(s.layer[0], &h), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_forward_explain(s.layer[0], &h, NULL, 0, NULL), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_tensor_write(s.act[1], zeros, sizeof zeros), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_tensor_read(s.act[1], after, sizeof after), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_tensor_write_region(s.act[1], 0, zeros, 16), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 1, (uint32_t[]){4}, &t), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_layer_create(ctx, &s.w[0].desc, &s.w[0].w, &l), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_layer_set_head_mask(s.layer[0], NULL), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_layer_set_timing(s.layer[0], 0), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_layer_last_stats(s.layer[0], &st), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_ERROR_BUSY);
    CHECK(t == NULL && l == NULL && sub == NULL);
    atomic_store(&ctx->busy, 0);
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    atomic_store(&ctx->busy, 1);
    CHECK_STATUS(vkattn_submission_add(sub, s.layer[0], &f), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_submission_poll(sub), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_tensor_read_region(s.act[1], 0, after, 16), VKATTN_ERROR_BUSY);
    size_t cache_bytes = 0;
    CHECK_STATUS(vkattn_context_pipeline_cache_data(ctx, NULL, &cache_bytes), VKATTN_ERROR_BUSY);
    CHECK_STATUS(vkattn_context_save_pipeline_cache(ctx), VKATTN_ERROR_BUSY);
    vkattn_peak peak;
    CHECK_STATUS(vkattn_measure_peak(ctx, 0.001, &peak), VKATTN_ERROR_BUSY);
    CHECK(strcmp(vkattn_context_last_error(ctx), kept) == 0); /* no message written */
    atomic_store(&ctx->busy, 0);

    CHECK_STATUS(vkattn_tensor_read(s.act[1], after, sizeof after), VKATTN_OK);
    CHECK(memcmp(before, after, sizeof after) == 0); /* the refused write changed nothing */
    vkattn_submission_destroy(sub);
    stack_free(&s);
}

/* Real threads on one layer: every call returns OK or BUSY, never anything else, and every OK
 * result is the right one. (How many calls collide depends on the scheduler: printed, not
 * asserted.) */
typedef struct racer {
    vkattn_layer *layer;
    const float *x, *want;
    int ok, busy, wrong, other;
} racer;

static void *race(void *arg)
{
    racer *r = arg;
    float out[N];
    for (int i = 0; i < 40; i++) {
        vkattn_host_forward_desc h = {.batch = B, .query_len = L, .query = r->x, .output = out};
        vkattn_status s = vkattn_forward_host(r->layer, &h);
        if (s == VKATTN_ERROR_BUSY) r->busy++;
        else if (s != VKATTN_OK) r->other++;
        else if (memcmp(out, r->want, sizeof out) != 0) r->wrong++;
        else r->ok++;
    }
    return NULL;
}

static void test_threads(vkattn_context *ctx)
{
    float x[N], want[N];
    test_rng rng = test_rng_make(4);
    test_fill(&rng, x, N, 1.0f);
    stack s;
    stack_make(ctx, &s, x);
    vkattn_host_forward_desc h = {.batch = B, .query_len = L, .query = x, .output = want};
    CHECK_STATUS(vkattn_forward_host(s.layer[0], &h), VKATTN_OK);
    racer r[2] = {{s.layer[0], x, want, 0, 0, 0, 0}, {s.layer[0], x, want, 0, 0, 0, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, race, &r[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    printf("  two threads, one layer: %d ok, %d busy\n", r[0].ok + r[1].ok, r[0].busy + r[1].busy);
    CHECK(r[0].wrong + r[1].wrong == 0 && r[0].other + r[1].other == 0);
    CHECK(r[0].ok + r[1].ok > 0);
    stack_free(&s);
}

/* Region copies write and read only their bytes. */
static void test_regions(vkattn_context *ctx)
{
    vkattn_tensor *t = NULL;
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F16, 2, (uint32_t[]){4, 8}, &t), VKATTN_OK);
    uint16_t all[32], part[5] = {1, 2, 3, 4, 5}, back[32];
    for (int i = 0; i < 32; i++) all[i] = (uint16_t)(100 + i);
    CHECK_STATUS(vkattn_tensor_write(t, all, sizeof all), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_write_region(t, 6 * 2, part, sizeof part), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_read(t, back, sizeof back), VKATTN_OK);
    for (int i = 0; i < 32; i++) CHECK(back[i] == (i >= 6 && i < 11 ? part[i - 6] : all[i]));
    uint16_t two[2] = {0};
    CHECK_STATUS(vkattn_tensor_read_region(t, 30 * 2, two, 4), VKATTN_OK);
    CHECK(two[0] == all[30] && two[1] == all[31]);
    CHECK_STATUS(vkattn_tensor_read_region(t, 31 * 2, two, 4), VKATTN_ERROR_SHAPE);
    CHECK_STATUS(vkattn_tensor_read_region(t, 1, two, 2), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_tensor_read_region(t, 0, two, 0), VKATTN_OK); /* nothing to copy */
    vkattn_tensor_destroy(t);
}

/* A context destroyed with a layer, tensors and a running submission still alive: the destroy
 * waits and frees them all (the sanitizer build's leak check is the judge of "all"). */
/* A lost device ends a submission: wait and poll say DEVICE_LOST without asking the device. */
static void test_lost_device(void)
{
    vkattn_context *ctx = NULL;
    CHECK_STATUS(vkattn_context_create(&(vkattn_context_desc){.validation = VKATTN_VALIDATION_DEFAULT}, &ctx, NULL),
                 VKATTN_OK);
    if (!ctx) return;
    float x[N];
    test_rng rng = test_rng_make(5);
    test_fill(&rng, x, N, 1.0f);
    stack s;
    stack_make(ctx, &s, x);
    vkattn_submission *a = NULL, *b = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, &a), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_create(ctx, &b), VKATTN_OK);
    vkattn_forward_desc f0 = step(&s, 0), f1 = step(&s, 2); /* independent: act 0 -> 1, act 2 -> 3 */
    CHECK_STATUS(vkattn_submission_add(a, s.layer[0], &f0), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_add(b, s.layer[1], &f1), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_submit(a), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_submit(b), VKATTN_OK);
    /* Let the work finish first, so that the objects can be destroyed at the end as after a loss
     * that came late; then the context is lost. */
    vkattn_tensor *probe = NULL;
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 1, (uint32_t[]){4}, &probe), VKATTN_OK);
    ctx->dev.vk.vkDeviceWaitIdle(ctx->dev.device);
    ctx->dev.lost = 1;
    CHECK_STATUS(vkattn_submission_poll(a), VKATTN_ERROR_DEVICE_LOST);
    CHECK_STATUS(vkattn_submission_wait(b), VKATTN_ERROR_DEVICE_LOST);
    /* Both ended: their layers are no longer held by them, only the loss answers. */
    vkattn_forward_stats st;
    CHECK_STATUS(vkattn_layer_last_stats(s.layer[0], &st), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_wait(a), VKATTN_ERROR_DEVICE_LOST);
    vkattn_tensor_destroy(probe);
    vkattn_submission_destroy(a);
    vkattn_submission_destroy(b);
    stack_free(&s);
    vkattn_context_destroy(ctx);
}

static void test_destroy_with_children(void)
{
    vkattn_context *ctx = gpu_test_context();
    float x[N];
    test_rng rng = test_rng_make(5);
    test_fill(&rng, x, N, 1.0f);
    stack s;
    stack_make(ctx, &s, x);
    vkattn_submission *sub = NULL, *idle = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_create(ctx, &idle), VKATTN_OK);
    for (int i = 0; i < LAYERS; i++) {
        vkattn_forward_desc f = step(&s, i);
        CHECK_STATUS(vkattn_submission_add(sub, s.layer[i], &f), VKATTN_OK);
    }
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    uint32_t messages = vkattn_context_validation_messages(ctx);
    CHECK_MSG(messages == 0, "%u validation messages", messages);
    vkattn_context_destroy(ctx); /* layers, tensors, both submissions */
    for (int i = 0; i < LAYERS; i++) test_weights_free(&s.w[i]);
}

/* A forward the device cannot plan (a head dim of 64 needs 52 loop trips a block of keys; the
 * context allows 32) is refused at add, as vkattn_forward refuses it, and leaves the submission as
 * it was: the forward added before it runs, its layer and tensors free afterwards. The cached
 * add likewise, the cache's length unchanged. (They were taken, and every submit failed.) */
static void test_unplannable_add(void)
{
    vkattn_context *ctx = NULL;
    vkattn_context_desc cd = {.validation = VKATTN_VALIDATION_ON, .loop_budget = 32};
    CHECK_STATUS(vkattn_context_create(&cd, &ctx, NULL), VKATTN_OK);
    if (!ctx) return;
    vkattn_layer_desc small = {.embed_dim = 32, .num_heads = 4}, wide = {.embed_dim = 64, .num_heads = 1};
    test_weights ws, ww;
    test_weights_make(&ws, &small, 3), test_weights_make(&ww, &wide, 4);
    vkattn_layer *ls = NULL, *lw = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &small, &ws.w, &ls), VKATTN_OK);
    CHECK_STATUS(vkattn_layer_create(ctx, &wide, &ww.w, &lw), VKATTN_OK);
    vkattn_tensor *qs = NULL, *ys = NULL, *qw = NULL, *yw = NULL;
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, 4, 32}, &qs), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, 4, 32}, &ys), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, 4, 64}, &qw), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 3, (uint32_t[]){1, 4, 64}, &yw), VKATTN_OK);
    float x[4 * 32], want[4 * 32], got[4 * 32], zeros[4 * 32] = {0};
    test_rng rng = test_rng_make(8);
    test_fill(&rng, x, 4 * 32, 1.0f);
    CHECK_STATUS(vkattn_tensor_write(qs, x, sizeof x), VKATTN_OK);
    vkattn_forward_desc fs = {.query = qs, .output = ys}, fw = {.query = qw, .output = yw};
    CHECK_STATUS(vkattn_forward(ls, &fs), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_read(ys, want, sizeof want), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_write(ys, zeros, sizeof zeros), VKATTN_OK);
    CHECK_STATUS(vkattn_forward(lw, &fw), VKATTN_ERROR_DEVICE_LIMIT);

    vkattn_submission *sub = NULL;
    CHECK_STATUS(vkattn_submission_create(ctx, &sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_add(sub, ls, &fs), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_add(sub, lw, &fw), VKATTN_ERROR_DEVICE_LIMIT);
    CHECK(strstr(vkattn_context_last_error(ctx), "loop budget") != NULL);
    vkattn_kv_cache *cache = NULL;
    vkattn_kv_cache_desc kd = {.num_kv_heads = 1, .head_dim = 64, .num_blocks = 4, .block_size = 16};
    CHECK_STATUS(vkattn_kv_cache_create(ctx, &kd, &cache), VKATTN_OK);
    vkattn_tensor *qc = NULL, *yc = NULL;
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){1, 64}, &qc), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_create(ctx, VKATTN_DTYPE_F32, 2, (uint32_t[]){1, 64}, &yc), VKATTN_OK);
    if (cache) {
        uint32_t id = 0, one = 1, length = 7;
        vkattn_cached_forward_desc cf = {.batch = 1, .seq_ids = &id, .new_tokens = &one, .query_tensor = qc,
                                         .output_tensor = yc};
        CHECK_STATUS(vkattn_forward_cached(lw, cache, &cf), VKATTN_ERROR_DEVICE_LIMIT);
        CHECK_STATUS(vkattn_submission_add_cached(sub, lw, cache, &cf), VKATTN_ERROR_DEVICE_LIMIT);
        CHECK_STATUS(vkattn_kv_cache_seq_length(cache, 0, &length), VKATTN_OK);
        CHECK_MSG(length == 0, "a refused cached add left the length at %u", length);
    }
    CHECK_STATUS(vkattn_submission_submit(sub), VKATTN_OK);
    CHECK_STATUS(vkattn_submission_wait(sub), VKATTN_OK);
    CHECK_STATUS(vkattn_tensor_read(ys, got, sizeof got), VKATTN_OK);
    CHECK(memcmp(got, want, sizeof got) == 0);
    CHECK_STATUS(vkattn_forward(ls, &fs), VKATTN_OK); /* free */
    vkattn_submission_destroy(sub);
    vkattn_kv_cache_destroy(cache);
    vkattn_tensor_destroy(qc), vkattn_tensor_destroy(yc);
    vkattn_tensor_destroy(qs), vkattn_tensor_destroy(ys), vkattn_tensor_destroy(qw), vkattn_tensor_destroy(yw);
    vkattn_layer_destroy(ls), vkattn_layer_destroy(lw);
    test_weights_free(&ws), test_weights_free(&ww);
    gpu_test_finish_context(ctx);
}

int main(void)
{
    vkattn_context *ctx = gpu_test_context();
    RUN_TEST_WITH(test_chain, ctx);
    RUN_TEST_WITH(test_submission_errors, ctx);
    RUN_TEST_WITH(test_mask_written_in_submission, ctx);
    RUN_TEST_WITH(test_busy_flag, ctx);
    RUN_TEST_WITH(test_threads, ctx);
    RUN_TEST_WITH(test_regions, ctx);
    gpu_test_finish_context(ctx);
    RUN_TEST(test_lost_device);
    RUN_TEST(test_destroy_with_children);
    RUN_TEST(test_unplannable_add);
    return test_finish();
}
