/* The matmul kernels dispatched on their own (test_matmul_cm.c, test_matmul_sm.c): a case's
 * shape and options, its buffers, where C's elements land, and the dispatches of one case. */
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
    int head_major;    /* C as (batches, heads, rows, D = 8) with rows_per_batch = M / 2 */
    int parts;         /* 1, or 2: the reduction split, the second part accumulating */
    int no_bias;
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
    const uint32_t vec = c->vec4 ? 4 : 1, K = c->K / vec;
    vka_view_format in = c->vec4 ? (c->f16_in ? VKA_VIEW_RGBA16F : VKA_VIEW_RGBA32F)
                                 : (c->f16_in ? VKA_VIEW_R16F : VKA_VIEW_R32F);
    vka_binding bindings[VKA_MATMUL_BINDINGS] = {
        [VKA_MATMUL_A] = {&bufs->a, 0, 0, in}, [VKA_MATMUL_B] = {&bufs->w, 0, 0, in},
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

#endif
