/* vkattn_forward_cached: a forward of a batch's new tokens through a paged KV cache. The host side
 * checks the batch against the layer and the cache, takes the blocks the new tokens need, writes
 * the forward's sequence table (meta: shaders/abi.h) and runs the plan (src/plan/paged.c); the
 * sequences' lengths change only once everything succeeded. */
#include <stdlib.h>
#include <string.h>

#include "api/forward.h"
#include "api/kv_cache.h"
#include "api/layer.h"
#include "api/tensor.h"

/* The layer can feed this cache: its K/V heads and head dim, self-attention shaped, nothing the
 * cache does not hold (appended keys, pruned heads). */
static vkattn_status check_layer(const vkattn_layer *layer, const vkattn_kv_cache *cache)
{
    vka_device *dev = &layer->ctx->dev;
    const vka_layer_config *c = &layer->cfg;
    if (cache->ctx != layer->ctx)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "the KV cache belongs to a different context than the layer");
    if (cache->owner && cache->owner != layer->serial)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "the KV cache holds the keys and values of another layer: one cache serves one layer (give each "
                        "layer its own cache; a cache is free for another layer once every sequence is freed)");
    if (c->H_kv != cache->desc.num_kv_heads || c->D != cache->desc.head_dim)
        return vka_fail(dev, VKATTN_ERROR_SHAPE,
                        "the KV cache holds %u K/V heads of %u dims; the layer has %u of %u (num_kv_heads, head_dim)",
                        cache->desc.num_kv_heads, cache->desc.head_dim, c->H_kv, c->D);
    if (c->kdim != c->E || c->vdim != c->E)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "a cached forward is self-attention: the layer's kdim (%u) and vdim (%u) must equal embed_dim (%u)",
                        c->kdim, c->vdim, c->E);
    if (c->extra_keys)
        return vka_fail(dev, VKATTN_ERROR_UNSUPPORTED, "a cached forward takes no add_bias_kv or add_zero_attn keys");
    if (c->H_active != c->H)
        return vka_fail(dev, VKATTN_ERROR_UNSUPPORTED, "a cached forward computes every head: the layer has pruned heads");
    return VKATTN_OK;
}

/* A cached forward's batch with its defaults resolved once, at entry: each sequence's id and new
 * tokens (seq_ids NULL = 0 .. batch - 1; new_tokens NULL = 1 each). */
typedef struct batch {
    uint32_t count;
    uint32_t *ids, *news; /* one allocation */
} batch;

static vkattn_status batch_resolve(vka_device *dev, const vkattn_cached_forward_desc *d, uint32_t max_seqs, batch *out)
{
    const uint32_t B = d->batch;
    if (B == 0 || B > max_seqs)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "batch is %u: a cached forward takes 1 to max_sequences (%u) sequences",
                        B, max_seqs);
    uint32_t *ids = vka_malloc(&dev->faults, 2 * (size_t)B * sizeof *ids);
    if (!ids) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a cached forward's batch");
    for (uint32_t b = 0; b < B; b++) {
        ids[b] = d->seq_ids ? d->seq_ids[b] : b;
        ids[B + b] = d->new_tokens ? d->new_tokens[b] : 1;
    }
    *out = (batch){B, ids, ids + B};
    return VKATTN_OK;
}

/* The batch against the cache: ids in range and distinct, each sequence adding at least one token,
 * and the total and every new length within 32 bits. Fills the cache part of the problem and *T. */
static vkattn_status check_batch(const vkattn_kv_cache *cache, const batch *bt, uint32_t E, uint32_t parts,
                                 vka_cache_problem *cp, uint32_t *T_out)
{
    vka_device *dev = &cache->ctx->dev;
    const uint32_t max_seqs = cache->desc.max_sequences, bs = cache->desc.block_size;
    uint8_t *seen = vka_calloc(&dev->faults, max_seqs, 1);
    if (!seen) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory checking a batch");
    vkattn_status status = VKATTN_OK;
    uint64_t T = 0, tables = 0;
    *cp = (vka_cache_problem){.seqs = bt->count, .block_size = bs, .num_blocks = cache->desc.num_blocks,
                              .dtype = cache->desc.dtype, .parts = parts};
    for (uint32_t b = 0; b < bt->count && status == VKATTN_OK; b++) {
        uint32_t id = bt->ids[b], n = bt->news[b];
        if (id >= max_seqs)
            status = vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "seq_ids[%u] is %u, not below max_sequences (%u)", b, id,
                              max_seqs);
        else if (seen[id])
            status = vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "seq_ids[%u]: sequence %u appears twice in the batch", b, id);
        else if (n == 0)
            status = vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "new_tokens[%u] is 0: every sequence of the batch adds a token",
                              b);
        else if ((uint64_t)cache->seqs[id].length + n > INT32_MAX)
            status = vka_fail(dev, VKATTN_ERROR_SIZE_OVERFLOW, "sequence %u would hold more than 2^31 - 1 tokens", id);
        if (status != VKATTN_OK) break;
        seen[id] = 1;
        uint32_t len = cache->seqs[id].length + n;
        T += n;
        tables += (len + bs - 1) / bs;
        if (n > cp->max_new) cp->max_new = n;
        if (len > cp->max_len) cp->max_len = len;
    }
    free(seen);
    if (status != VKATTN_OK) return status;
    uint64_t words = (uint64_t)bt->count * VKA_SEQ_WORDS + tables + 2 * T;
    if (T * E > UINT32_MAX || words > UINT32_MAX)
        return vka_fail(dev, VKATTN_ERROR_SIZE_OVERFLOW, "%llu new tokens of %u features are more than one forward takes",
                        (unsigned long long)T, E);
    cp->positions_at = (uint32_t)(bt->count * VKA_SEQ_WORDS + tables);
    cp->meta_words = (uint32_t)words;
    *T_out = (uint32_t)T;
    return VKATTN_OK;
}

/* The sequence table of the forward: per sequence its first row, new tokens, new length and block
 * table; per token its position and slot. The blocks were taken already. */
static void fill_meta(const vkattn_kv_cache *cache, const batch *bt, const vka_cache_problem *cp, uint32_t *meta)
{
    const uint32_t bs = cache->desc.block_size, T = (cp->meta_words - cp->positions_at) / 2;
    uint32_t table = cp->seqs * VKA_SEQ_WORDS, t = 0;
    for (uint32_t b = 0; b < cp->seqs; b++) {
        const vka_kv_seq *s = &cache->seqs[bt->ids[b]];
        uint32_t n = bt->news[b], len = s->length + n, blocks = (len + bs - 1) / bs;
        uint32_t *w = meta + b * VKA_SEQ_WORDS;
        w[VKA_SEQ_Q_START] = t, w[VKA_SEQ_NEW] = n, w[VKA_SEQ_LEN] = len, w[VKA_SEQ_TABLE] = table;
        memcpy(meta + table, s->blocks, blocks * sizeof *meta);
        table += blocks;
        for (uint32_t i = 0; i < n; i++, t++) {
            uint32_t pos = s->length + i;
            meta[cp->positions_at + t] = pos;
            meta[cp->positions_at + T + t] = s->blocks[pos / bs] * bs + pos % bs;
        }
    }
}

/* The problem of a cached forward, through the argument table like every forward: its T new
 * tokens are one batch item's query and output rows (1, T, E), self-attention over themselves;
 * the keys come from the cache (the paged kernel applies its causal rule). */
static vkattn_status cached_problem(vkattn_layer *layer, const vkattn_cached_forward_desc *d, uint32_t T,
                                    const vka_cache_problem *cp, vka_args *a, vka_problem *p)
{
    vka_device *dev = &layer->ctx->dev;
    if (!d->query || !d->output)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_forward_cached: query and output are required");
    memset(a, 0, sizeof *a);
    const vka_arg_value rows = {.given = 1, .dtype = VKATTN_DTYPE_F32, .rank = 3, .dims = {1, T, layer->cfg.E}};
    a->v[VKA_ARG_QUERY] = a->v[VKA_ARG_KEY] = a->v[VKA_ARG_VALUE] = a->v[VKA_ARG_OUTPUT] = rows;
    /* the host arrays are not named: the query is uploaded before the output is read back, so one
     * array may be both (as it always could) */
    a->key_is_query = 1;
    a->path = VKATTN_PATH_FUSED;
    vkattn_status status = vka_args_check(&layer->cfg, a, p, &dev->error);
    if (status == VKATTN_OK) p->cache = *cp;
    return status;
}

static vkattn_status forward_cached(vkattn_layer *layer, vkattn_kv_cache *cache, const vkattn_cached_forward_desc *d)
{
    vkattn_context *ctx = layer->ctx;
    vka_device *dev = &ctx->dev;
    vkattn_status status = vka_check_alive(dev);
    if (status != VKATTN_OK) return status;
    if (!cache || !d) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_forward_cached: cache and desc are required");
    if (layer->user)
        return vka_fail(dev, VKATTN_ERROR_BUSY,
                        "the layer is in a submission that has not finished (vkattn_submission_wait or _poll first)");
    if ((status = check_layer(layer, cache)) != VKATTN_OK) return status;
    batch bt = {0};
    if ((status = batch_resolve(dev, d, cache->desc.max_sequences, &bt)) != VKATTN_OK) return status;
    vka_cache_problem cp;
    vka_args a;
    vka_problem p;
    uint32_t T = 0, *taken = NULL, *meta = NULL, b = 0;
    status = check_batch(cache, &bt, layer->cfg.E, d->kv_splits, &cp, &T);
    if (status == VKATTN_OK) status = cached_problem(layer, d, T, &cp, &a, &p);
    if (status == VKATTN_OK) {
        /* Blocks for the new tokens, given back if anything later fails. */
        taken = vka_calloc(&dev->faults, bt.count, sizeof *taken);
        meta = taken ? vka_malloc(&dev->faults, (size_t)p.cache.meta_words * sizeof *meta) : NULL;
        if (!meta) status = vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a cached forward's sequence table");
    }
    for (; b < bt.count && status == VKATTN_OK; b++)
        status = vka_kv_cache_take(cache, &cache->seqs[bt.ids[b]], bt.news[b], &taken[b]);
    vkattn_tensor *query = NULL, *output = NULL;
    if (status == VKATTN_OK) {
        fill_meta(cache, &bt, &p.cache, meta);
        status = vka_buffer_reserve(dev, &cache->meta, (VkDeviceSize)p.cache.meta_words * 4, VKA_MEMORY_STAGING,
                                    "a cached forward's sequence table");
    }
    if (status == VKATTN_OK) status = vka_buffer_write(&ctx->transfer, &cache->meta, 0, meta, (size_t)p.cache.meta_words * 4);
    if (status == VKATTN_OK) status = vka_layer_host_tensor(layer, VKA_ARG_QUERY, &a.v[VKA_ARG_QUERY], &query);
    if (status == VKATTN_OK) status = vka_layer_host_tensor(layer, VKA_ARG_OUTPUT, &a.v[VKA_ARG_OUTPUT], &output);
    if (status == VKATTN_OK) status = vka_tensor_write(query, 0, d->query, query->bytes);
    if (status == VKATTN_OK) {
        vka_buffer *caller[VKA_ROLE_COUNT] = {0};
        caller[VKA_ROLE_QUERY] = caller[VKA_ROLE_KEY] = caller[VKA_ROLE_VALUE] = &query->buffer;
        caller[VKA_ROLE_OUTPUT] = &output->buffer;
        caller[VKA_ROLE_CACHE_K] = &cache->k;
        caller[VKA_ROLE_CACHE_V] = &cache->v;
        caller[VKA_ROLE_CACHE_META] = &cache->meta;
        status = vka_layer_run(layer, &p, caller);
    }
    if (status == VKATTN_OK) status = vka_tensor_read(output, 0, d->output, output->bytes);
    if (status == VKATTN_OK) {
        for (uint32_t i = 0; i < bt.count; i++) {
            vka_kv_seq *s = &cache->seqs[bt.ids[i]];
            cache->held_seqs += s->length == 0;
            s->length += bt.news[i];
        }
        cache->owner = layer->serial;
    } else {
        while (b-- > 0) vka_kv_cache_untake(cache, &cache->seqs[bt.ids[b]], taken[b]);
    }
    free(meta);
    free(taken);
    free(bt.ids);
    return status;
}

vkattn_status vkattn_forward_cached(vkattn_layer *layer, vkattn_kv_cache *cache, const vkattn_cached_forward_desc *d)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, forward_cached(layer, cache, d));
}
