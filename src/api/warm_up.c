/* vkattn_layer_warm_up: every pipeline a layer's forwards within given limits will use, built
 * ahead of the first request. The plan is pure and cheap (microseconds), so the warm-up plans
 * many shapes, a sample dense where the plan's choices change (the first tokens, every power of
 * two), and creates each distinct pipeline their dispatch steps name; nothing runs on the device. */
#include <stdio.h>
#include <string.h>

#include "api/cached.h"
#include "api/kv_cache.h"
#include "api/layer.h"

/* The sample of one length limit: 1 .. min(max, 64), then every power of two, each with its
 * neighbours, and max. Returns how many values it wrote (at most 64 + 3 * 32 + 1). */
static uint32_t sample_lengths(uint32_t max, uint32_t *out)
{
    uint32_t n = 0;
    for (uint32_t v = 1; v <= max && v <= 64; v++) out[n++] = v;
    for (uint64_t p = 128; p <= max; p *= 2)
        for (int d = -1; d <= 1; d++)
            if (p + (uint64_t)d <= max) out[n++] = (uint32_t)(p + (uint64_t)(int64_t)d);
    if (max > 64) out[n++] = max;
    return n;
}

/* Plans `p` and gets the pipeline of each dispatch step. */
static vkattn_status build_pipelines(vkattn_layer *layer, const vka_problem *p, vka_plan *plan)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = vka_context_plan(ctx, p, plan);
    for (uint32_t i = 0; status == VKATTN_OK && i < plan->step_count; i++) {
        const vka_step *s = &plan->steps[i];
        const vka_pipeline *pipeline;
        if (s->kind == VKA_STEP_DISPATCH)
            status = vka_pipeline_get(&ctx->dev, &ctx->pipelines, s->kernel, s->f16_out, s->spec, &pipeline);
    }
    return status;
}

/* The problem of a forward of `seqs` sequences, each adding `news` tokens and reaching `len`,
 * through `cache` (as vkattn_forward_cached makes it), or without a cache of a self-attention
 * forward of `seqs` batch items of `len` tokens. */
static vkattn_status problem_of(vkattn_layer *layer, const vkattn_kv_cache *cache, const vkattn_warm_up_desc *d,
                                uint32_t seqs, uint32_t news, uint32_t len, vka_problem *p)
{
    const vka_arg_value rows = {.given = 1, .dtype = d->io_dtype, .rank = 3,
                                .dims = {cache ? 1 : seqs, cache ? seqs * news : len, layer->cfg.E}};
    vka_args a;
    memset(&a, 0, sizeof a);
    a.v[VKA_ARG_QUERY] = a.v[VKA_ARG_KEY] = a.v[VKA_ARG_VALUE] = a.v[VKA_ARG_OUTPUT] = rows;
    a.key_is_query = 1;
    a.path = VKATTN_PATH_FUSED;
    a.causal = cache ? 0 : d->causal;
    vkattn_status status = vka_args_check(&layer->cfg, &a, p, &layer->ctx->dev.error);
    if (status != VKATTN_OK || !cache) return status;
    /* within 32 bits: warm_up checked its largest problem as the cached forward checks its own */
    const uint32_t bs = cache->desc.block_size, tables = (uint32_t)(seqs * (((uint64_t)len + bs - 1) / bs));
    uint32_t words;
    status = vka_cached_sizes(&layer->ctx->dev, "", seqs, (uint64_t)seqs * news, tables, 0, layer->cfg.E, &words);
    if (status != VKATTN_OK) return status;
    p->cache = (vka_cache_problem){.seqs = seqs, .max_new = news, .max_len = len, .block_size = bs,
                                   .num_blocks = cache->desc.num_blocks, .dtype = cache->desc.dtype,
                                   .parts = d->kv_splits, .positions_at = seqs * VKA_SEQ_WORDS + tables,
                                   .meta_words = words};
    return VKATTN_OK;
}

static vkattn_status warm_up(vkattn_layer *layer, const vkattn_warm_up_desc *d, uint32_t *built)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status != VKATTN_OK) return status;
    if (!d) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_layer_warm_up: desc is NULL");
    const vkattn_kv_cache *cache = d->cache;
    if (cache && cache->ctx != ctx)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_layer_warm_up: the cache belongs to another context");
    if (d->kv_splits && !cache)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_layer_warm_up: kv_splits %u without a cache (only cached forwards split their keys)",
                        d->kv_splits);
    if (d->io_dtype != VKATTN_DTYPE_F32 && d->io_dtype != VKATTN_DTYPE_F16)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_layer_warm_up: io_dtype must be F32 or F16");
    const uint64_t capacity = cache ? (uint64_t)cache->desc.num_blocks * cache->desc.block_size : 0;
    const uint32_t max_batch = d->max_batch ? d->max_batch : 1, max_new = d->max_new_tokens ? d->max_new_tokens : 1;
    const uint32_t max_len = d->max_length ? d->max_length : cache ? (uint32_t)(capacity < UINT32_MAX ? capacity : UINT32_MAX)
                                                                   : max_new;
    if (cache && (cache->desc.num_kv_heads != layer->cfg.H_kv || cache->desc.head_dim != layer->cfg.D))
        return vka_fail(&ctx->dev, VKATTN_ERROR_SHAPE,
                        "vkattn_layer_warm_up: the KV cache holds %u K/V heads of %u dims; the layer has %u of %u",
                        cache->desc.num_kv_heads, cache->desc.head_dim, layer->cfg.H_kv, layer->cfg.D);
    if (cache && max_batch > cache->desc.max_sequences)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_layer_warm_up: max_batch %u is above the cache's max_sequences %u", max_batch,
                        cache->desc.max_sequences);
    if (cache && max_len > capacity)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_layer_warm_up: max_length %u is above the cache's capacity of %llu tokens (%u blocks "
                        "of %u)", max_len, (unsigned long long)capacity, cache->desc.num_blocks, cache->desc.block_size);
    if (max_new > max_len)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_layer_warm_up: max_new_tokens %u is above max_length %u", max_new, max_len);
    if (cache) { /* the largest forward asked for fits one, as the cached forward counts it (no tree) */
        char what[96];
        uint32_t words;
        snprintf(what, sizeof what, "vkattn_layer_warm_up: max_batch %u x max_new_tokens %u = ", max_batch, max_new);
        const uint64_t bs = cache->desc.block_size;
        status = vka_cached_sizes(&ctx->dev, what, max_batch, (uint64_t)max_batch * max_new,
                                  max_batch * ((max_len + bs - 1) / bs), 0, layer->cfg.E, &words);
        if (status != VKATTN_OK) return status;
    }
    uint32_t news[256], lens[256], batches[3] = {1, max_batch > 1 ? 2 : 1, max_batch};
    const uint32_t nn = sample_lengths(max_new, news), nl = sample_lengths(max_len, lens);
    const uint32_t before = ctx->pipelines.count;
    vka_plan plan = {0};
    for (uint32_t b = 0; b < 3 && status == VKATTN_OK; b++)
        for (uint32_t i = 0; i < nn && status == VKATTN_OK; i++)
            for (uint32_t j = 0; j < nl && status == VKATTN_OK; j++) {
                if (lens[j] < news[i] || (!cache && i > 0)) continue; /* without a cache: L = S = len */
                vka_problem p;
                status = problem_of(layer, cache, d, batches[b], news[i], lens[j], &p);
                if (status == VKATTN_OK) status = build_pipelines(layer, &p, &plan);
            }
    vka_plan_free(&plan);
    if (built) *built = ctx->pipelines.count - before;
    return status;
}

vkattn_status vkattn_layer_warm_up(vkattn_layer *layer, const vkattn_warm_up_desc *desc, uint32_t *pipelines_built)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, warm_up(layer, desc, pipelines_built));
}
