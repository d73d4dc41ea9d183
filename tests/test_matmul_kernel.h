/* The matmul kernels dispatched on their own (test_matmul_cm.c, test_matmul_scalar.c): a case's
 * shape and options, its buffers, where C's elements land, and the dispatches of one case; and
 * the forward their plan-side checks share. */
#ifndef VKATTN_TEST_MATMUL_KERNEL_H
#define VKATTN_TEST_MATMUL_KERNEL_H

#include "api/context.h"
#include "format/half.h"
#include "gpu_test.h"
#include "pipeline/dispatch.h"

typedef struct mm_case {
    const char *name;
    uint32_t M, N, K;
    int vec4;          /* RGBA views (K a multiple of 4), else R views */
    int f16_in, f16_out;
    int head_major;    /* C as (batches, heads, rows, D = 8; 2: D = 16) with rows_per_batch = M / 2 */
    int parts;         /* 1, or 2: the reduction split, the second part accumulating */
    int no_bias;
    uint32_t subgroups_n; /* matmul_cm: subgroups across the tile, in two rows (0: 2) */
    int two_stages;       /* matmul_cm: two staged blocks (VKA_MATMUL_TWO_STAGES) */
    int vec8;             /* matmul_vec_storage: texels of 8 elements (K a multiple of 8) */
    int f32_a;            /* with f16_in: A stays fp32 (a caller's query), W is fp16 */
    int f16_a;            /* without f16_in: A is fp16 (a caller's fp16 tensor), W stays fp32 */
    uint32_t lead;        /* rows of NaN before A's and W's first (nonzero a_offset, b_offset) */
    uint32_t group_rows;  /* matmul_sm, matmul_cm: tiles in groups of this many rows (VKA_TILE_ROW) */
    int direct;           /* matmul_cm: accumulators stored whole into C (VKA_MATMUL_DIRECT; whole tiles, C's
                             rows 8 elements apart from the row's end, the plan's rule) */
    uint32_t c_lead;      /* elements of NaN before C's first (a nonzero c_offset) */
} mm_case;

typedef struct mm_buffers {
    vka_buffer a, w, bias, c;
} mm_buffers;

/* Where C element (m, n) lands (abi.h, vka_matmul_push). */
static uint32_t c_at(const vka_matmul_push *p, uint32_t m, uint32_t n)
{
    return p->c_offset + m / p->rows_per_batch * p->batch_stride + m % p->rows_per_batch * p->c_row +
           n / p->c_col_block * p->c_block + n % p->c_col_block;
}

static void put(vka_buffer *b, int f16, size_t i, float x)
{
    if (f16) ((uint16_t *)b->mapped)[i] = vka_f32_to_f16(x);
    else ((float *)b->mapped)[i] = x;
}

static float get(const vka_buffer *b, int f16, size_t i)
{
    return f16 ? vka_f16_to_f32(((const uint16_t *)b->mapped)[i]) : ((const float *)b->mapped)[i];
}

/* Records and runs the case's dispatches (one, or two reduction parts); returns the seconds the
 * submit took, or a negative number on failure. */
static double run_dispatches(vkattn_context *ctx, const mm_case *c, const vka_pipeline *first,
                             const vka_pipeline *rest, mm_buffers *bufs, const vka_matmul_push *push, uint32_t tile_k,
                             const char *what)
{
    vka_device *dev = &ctx->dev;
    const uint32_t vec = c->vec8 ? 8 : c->vec4 ? 4 : 1, K = c->K / vec;
    vka_view_format in = c->vec4 ? (c->f16_in ? VKA_VIEW_RGBA16F : VKA_VIEW_RGBA32F)
                                 : (c->f16_in ? VKA_VIEW_R16F : VKA_VIEW_R32F);
    vka_view_format in_a = c->f32_a ? (c->vec4 ? VKA_VIEW_RGBA32F : VKA_VIEW_R32F)
                           : c->f16_a ? (c->vec4 ? VKA_VIEW_RGBA16F : VKA_VIEW_R16F)
                                      : in;
    vka_binding bindings[VKA_MATMUL_BINDINGS] = {
        [VKA_MATMUL_A] = {&bufs->a, 0, 0, in_a}, [VKA_MATMUL_B] = {&bufs->w, 0, 0, in},
        [VKA_MATMUL_BIAS] = {&bufs->bias, 0, 0, VKA_VIEW_R32F}, [VKA_MATMUL_C] = {&bufs->c, 0, 0, VKA_VIEW_R32F}};
    VkDescriptorPool pool = VK_NULL_HANDLE;
    VkCommandBuffer cmd;
    uint32_t groups[3];
    uint32_t tiles = (uint32_t)(vka_ceil_div(c->M, first->spec[VKA_SPEC_TILE_A]) * push->tiles_n);
    if (!vka_fold_groups(tiles, ctx->dev.caps.props.limits.maxComputeWorkGroupCount, groups)) return -1;
    /* The second part starts at a whole block, as the plan's parts do; a case whose first part took
     * the whole reduction would run the second over 2^32 texels. */
    uint32_t split = c->parts == 2 ? (uint32_t)vka_ceil_div(K / 2, tile_k / vec) * (tile_k / vec) : K;
    CHECK_MSG(split <= K && (c->parts != 2 || split < K), "%s: parts of %u and %u texels", c->name, split, K - split);
    if (split > K || (c->parts == 2 && split == K)) return -1;
    if (vka_descriptor_pool_create(dev, 2, &pool) != VKATTN_OK || vka_transfer_begin(&ctx->transfer, &cmd) != VKATTN_OK)
        return -1;
    vka_matmul_push p = *push;
    p.K = split;
    vkattn_status status = vka_record_dispatch(dev, cmd, pool, first, bindings, &p, groups);
    if (status == VKATTN_OK && c->parts == 2) {
        vka_record_barrier(dev, cmd);
        p.K = K - split, p.a_offset += split, p.b_offset += split, p.has_bias = 0;
        status = vka_record_dispatch(dev, cmd, pool, rest, bindings, &p, groups);
    }
    double t0 = test_now_s();
    if (status == VKATTN_OK) status = vka_transfer_submit_wait(&ctx->transfer, what);
    double seconds = test_now_s() - t0;
    dev->vk.vkDestroyDescriptorPool(dev->device, pool, NULL);
    CHECK_MSG(status == VKATTN_OK, "%s: %s", c->name, vkattn_context_last_error(ctx));
    return status == VKATTN_OK ? seconds : -1;
}

/* The plan's side of a matmul test, through the public API: a context under `tuning` at a loop
 * budget (0 = the device's; no_cooperative_matrix with `cm_off`), a layer of width E whose head dim
 * 4 keeps the attention kernels' loops short (so a lowered budget cuts the projections' reductions
 * into parts while attention still fits), kdim 40 and vdim 56, B x L causal queries over B x S
 * keys. Fills `plan` (its explain text) and `e` (the output against the CPU path); 0 when no
 * context could be made. */
typedef struct mm_forward {
    const char *tuning;
    uint32_t budget;
    int cm_off;
    vkattn_precision precision;
    uint32_t E, B, L, S;
    uint32_t binding_kib; /* the storage bindings' range (internal): small enough for slices; 0 = the device's */
    uint32_t heads;       /* 0: E / 4 */
    uint32_t kv_dim;      /* kdim = vdim (E: the packed in_proj_weight, K's and V's rows after Q's); 0 = 40 and 56 */
    vkattn_dtype storage; /* the layer's (0: f32) */
} mm_forward;

static int mm_forward_run(const mm_forward *fw, char *plan, size_t plan_size, test_error *e)
{
    const uint32_t E = fw->E, B = fw->B, L = fw->L, S = fw->S, KD = fw->kv_dim ? fw->kv_dim : 40,
                   VD = fw->kv_dim ? fw->kv_dim : 56;
    vkattn_context *ctx = NULL;
    vkattn_error error = {0};
    vkattn_context_desc desc = {.validation = VKATTN_VALIDATION_ON, .tuning = fw->tuning, .loop_budget = fw->budget,
                                .no_cooperative_matrix = fw->cm_off};
    CHECK_STATUS(vkattn_context_create(&desc, &ctx, &error), VKATTN_OK);
    if (!ctx) {
        fprintf(stderr, "%s\n", error.message);
        return 0;
    }
    ctx->binding_bytes = (uint64_t)fw->binding_kib << 10;
    vkattn_layer_desc ld = {.embed_dim = E, .num_heads = fw->heads ? fw->heads : E / 4, .kdim = KD, .vdim = VD,
                            .precision = fw->precision,
                            .storage = fw->storage};
    test_weights tw;
    test_weights_make(&tw, &ld, 7 + fw->budget);
    test_rng rng = test_rng_make(11);
    float *q = malloc(B * L * E * sizeof(float)), *k = malloc(B * S * KD * sizeof(float));
    float *v = malloc(B * S * VD * sizeof(float)), *gpu = malloc(B * L * E * sizeof(float));
    float *cpu = malloc(B * L * E * sizeof(float));
    test_fill(&rng, q, B * L * E, 1), test_fill(&rng, k, B * S * KD, 1), test_fill(&rng, v, B * S * VD, 1);
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .key_len = S, .query = q, .key = k, .value = v,
                                  .causal = 1, .output = gpu};
    vkattn_layer *layer = NULL;
    CHECK_STATUS(vkattn_layer_create(ctx, &ld, &tw.w, &layer), VKATTN_OK);
    plan[0] = '\0';
    vkattn_status status = vkattn_forward_explain(layer, &f, plan, plan_size, NULL);
    CHECK_MSG(status == VKATTN_OK, "explain: %s", vkattn_context_last_error(ctx));
    if (status == VKATTN_OK) status = vkattn_forward_host(layer, &f);
    CHECK_MSG(status == VKATTN_OK, "forward: %s", vkattn_context_last_error(ctx));
    if (status != VKATTN_OK) memset(gpu, 0, B * L * E * sizeof(float));
    f.output = cpu;
    CHECK_STATUS(vkattn_reference_forward(&ld, &tw.w, &f, &error), VKATTN_OK);
    *e = test_compare(gpu, cpu, B * L * E);
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
    free(q), free(k), free(v), free(gpu), free(cpu);
    gpu_test_finish_context(ctx);
    return 1;
}

#endif
