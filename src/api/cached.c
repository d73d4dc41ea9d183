/* Forwards through a paged KV cache: the stages of cached.h and the public entry points that run
 * one at once (vkattn_forward_cached) or record it into an application's command buffer
 * (vkattn_forward_cached_record); submissions add them in submission.c. The host side checks the
 * batch against the layer and the cache, takes the blocks the new tokens need, writes the
 * forward's sequence table (meta: shaders/abi.h) and runs the plan (src/plan/paged.c). */
#include "api/cached.h"

#include <stdlib.h>
#include <string.h>

#include "api/forward.h"
#include "api/kv_cache.h"
#include "api/layer.h"
#include "api/tensor.h"
#include "plan/trace.h"
#include "vkattn_vulkan.h"

/* The layer can feed this cache: its K/V heads and head dim, self-attention shaped, nothing the
 * cache does not hold (appended keys, pruned heads). */
static vkattn_status check_layer(const vkattn_layer *layer, const vkattn_kv_cache *cache)
{
    vka_device *dev = &layer->ctx->dev;
    const vka_layer_config *c = &layer->cfg;
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

/* The layer and the cache are in no unfinished submission, or (`owner`) in the asking one, which
 * holds one forward of each: the layer's workspace and the cache's sequence table hold one. */
static vkattn_status check_free(const vkattn_layer *layer, const vkattn_kv_cache *cache, const vka_user *owner)
{
    vka_device *dev = &layer->ctx->dev;
    if (layer->user)
        return vka_fail(dev, VKATTN_ERROR_BUSY, layer->user == owner
                            ? "the layer already has a forward in this submission (its workspace holds one)"
                            : "the layer is in a submission that has not finished (vkattn_submission_wait or _poll first)");
    if (cache->user)
        return vka_fail(dev, VKATTN_ERROR_BUSY, cache->user == owner
                            ? "the KV cache already has a forward in this submission (one cache serves one layer, and "
                              "its sequence table holds one forward: give the tokens of both in one forward)"
                            : "the KV cache is in a submission that has not finished (vkattn_submission_wait or _poll "
                              "first)");
    return VKATTN_OK;
}

/* Host arrays or device tensors, one pair of them; `io` says whether host arrays may be given. */
static vkattn_status check_io(vka_device *dev, const vkattn_cached_forward_desc *d, vka_cached_io io)
{
    int host = d->query || d->output, device = d->query_tensor || d->output_tensor;
    if (host && device)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "a cached forward takes host arrays (query, output) or device tensors (query_tensor, "
                        "output_tensor), not both");
    if (host && io == VKA_CACHED_DEVICE_ONLY)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "a recorded or submitted cached forward runs later, on device tensors: give query_tensor and "
                        "output_tensor (host arrays are for vkattn_forward_cached)");
    if (device ? !d->query_tensor || !d->output_tensor : !d->query || !d->output)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "a cached forward needs a query and an output (%s)",
                        device ? "query_tensor and output_tensor" : "query and output, or query_tensor and output_tensor");
    if (d->new_token_depths && !d->new_token_mask)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "new_token_depths places the tokens of a tree: it goes with new_token_mask, which says which of "
                        "them each one sees");
    return VKATTN_OK;
}

/* A cached forward's batch with its defaults resolved once, at entry: each sequence's id and new
 * tokens (seq_ids NULL = 0 .. batch - 1; new_tokens NULL = 1 each), and room for the blocks a
 * commit takes. */
static vkattn_status batch_resolve(vka_device *dev, const vkattn_cached_forward_desc *d, uint32_t max_seqs,
                                   vka_cached_forward *f)
{
    const uint32_t B = d->batch;
    if (B == 0 || B > max_seqs)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "batch is %u: a cached forward takes 1 to max_sequences (%u) sequences",
                        B, max_seqs);
    uint32_t *ids = vka_calloc(&dev->faults, 3 * (size_t)B, sizeof *ids);
    if (!ids) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a cached forward's batch");
    for (uint32_t b = 0; b < B; b++) {
        ids[b] = d->seq_ids ? d->seq_ids[b] : b;
        ids[B + b] = d->new_tokens ? d->new_tokens[b] : 1;
    }
    f->count = B, f->ids = ids, f->news = ids + B, f->taken = ids + 2 * (size_t)B;
    return VKATTN_OK;
}

/* One sequence of the batch against the cache: in range, new in the batch, adding a token, its
 * length and its tree depths (each below its new tokens) within range. */
static vkattn_status check_seq(const vkattn_kv_cache *cache, const vkattn_cached_forward_desc *d, uint32_t b,
                               uint32_t id, uint32_t n, uint64_t first, const uint8_t *seen)
{
    vka_device *dev = &cache->ctx->dev;
    const uint32_t max_seqs = cache->desc.max_sequences;
    if (id >= max_seqs)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "seq_ids[%u] is %u, not below max_sequences (%u)", b, id,
                        max_seqs);
    if (seen[id])
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "seq_ids[%u]: sequence %u appears twice in the batch", b, id);
    if (n == 0)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "new_tokens[%u] is 0: every sequence of the batch adds a token", b);
    if ((uint64_t)cache->seqs[id].length + n > INT32_MAX)
        return vka_fail(dev, VKATTN_ERROR_SIZE_OVERFLOW, "sequence %u would hold more than 2^31 - 1 tokens", id);
    for (uint32_t i = 0; d->new_token_depths && i < n; i++)
        if (d->new_token_depths[first + i] >= n)
            return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                            "new_token_depths[%llu] is %u: a new token of sequence %u (seq_ids[%u]) sits at most %u "
                            "places past the sequence's length (its %u new tokens' depths are below %u)",
                            (unsigned long long)(first + i), d->new_token_depths[first + i], id, b, n - 1, n, n);
    return VKATTN_OK;
}

vkattn_status vka_cached_sizes(vka_device *dev, const char *what, uint64_t seqs, uint64_t T, uint64_t tables,
                               uint64_t masks, uint32_t E, uint32_t *words)
{
    uint64_t n = seqs * VKA_SEQ_WORDS + tables + 2 * T + masks;
    if (T * E > UINT32_MAX || n > UINT32_MAX)
        return vka_fail(dev, VKATTN_ERROR_SIZE_OVERFLOW, "%s%llu new tokens of %u features are more than one forward takes",
                        what, (unsigned long long)T, E);
    *words = (uint32_t)n;
    return VKATTN_OK;
}

/* The batch against the cache (check_seq for each sequence), and the total and the sequence
 * table within 32 bits. Fills the cache part of the problem and *T. */
static vkattn_status check_batch(const vkattn_kv_cache *cache, const vka_cached_forward *f,
                                 const vkattn_cached_forward_desc *d, uint32_t E, vka_cache_problem *cp, uint32_t *T_out)
{
    vka_device *dev = &cache->ctx->dev;
    const uint32_t bs = cache->desc.block_size;
    uint8_t *seen = vka_calloc(&dev->faults, cache->desc.max_sequences, 1);
    if (!seen) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory checking a batch");
    vkattn_status status = VKATTN_OK;
    uint64_t T = 0, tables = 0, masks = 0;
    *cp = (vka_cache_problem){.seqs = f->count, .block_size = bs, .num_blocks = cache->desc.num_blocks,
                              .dtype = cache->desc.dtype, .parts = d->kv_splits, .tree = d->new_token_mask != NULL};
    for (uint32_t b = 0; b < f->count && status == VKATTN_OK; b++) {
        uint32_t id = f->ids[b], n = f->news[b];
        if ((status = check_seq(cache, d, b, id, n, T, seen)) != VKATTN_OK) break;
        seen[id] = 1;
        uint32_t len = cache->seqs[id].length + n;
        T += n;
        tables += (len + bs - 1) / bs;
        if (cp->tree) masks += (uint64_t)n * ((n + 31) / 32);
        if (n > cp->max_new) cp->max_new = n;
        if (len > cp->max_len) cp->max_len = len;
    }
    free(seen);
    if (status != VKATTN_OK) return status;
    if ((status = vka_cached_sizes(dev, "", f->count, T, tables, masks, E, &cp->meta_words)) != VKATTN_OK) return status;
    cp->positions_at = (uint32_t)(f->count * VKA_SEQ_WORDS + tables);
    *T_out = (uint32_t)T;
    return VKATTN_OK;
}

/* A device tensor as a cached forward's rows: T new tokens of E features, (T, E) or any shape
 * whose last dim is E and whose others multiply to T ((B, 1, E) for B sequences' decoding step,
 * as a plain forward takes them), described to the table as (1, T, E). */
static vkattn_status tensor_rows(vka_device *dev, const char *name, const vkattn_tensor *t, uint32_t T, uint32_t E,
                                 vka_arg_value *v)
{
    uint64_t rows = 1;
    for (uint32_t i = 0; i + 1 < t->rank; i++) rows *= t->dims[i];
    if (t->rank < 2 || t->dims[t->rank - 1] != E || rows != T) {
        char shape[96];
        vka_format_dims(shape, sizeof shape, t->dims, t->rank);
        return vka_fail(dev, VKATTN_ERROR_SHAPE,
                        "%s is %s: a cached forward's %s holds its T = %u new tokens of E = %u features, (T, E) or any "
                        "shape whose last dim is E and whose other dims multiply to T, such as (T, 1, E)",
                        name, shape, name, T, E);
    }
    *v = (vka_arg_value){.given = 1, .dtype = t->dtype, .rank = 3, .dims = {1, T, E}, .tensor = t,
                         .memory = (uint64_t)t->buffer.buffer, .begin = t->buffer.base, .end = t->buffer.base + t->buffer.size};
    return VKATTN_OK;
}

/* The arguments of a cached forward, through the argument table like every forward: its T new
 * tokens are one batch item's query and output rows (1, T, E), self-attention over themselves;
 * the keys come from the cache (the paged kernel applies its causal rule or the mask). */
static vkattn_status cached_problem(vkattn_layer *layer, const vkattn_cached_forward_desc *d, uint32_t T,
                                    const vka_user *owner, int explain, vka_cached_forward *f)
{
    vka_device *dev = &layer->ctx->dev;
    vka_args *a = &f->args;
    const uint32_t E = layer->cfg.E;
    vkattn_status status = VKATTN_OK;
    memset(a, 0, sizeof *a);
    if (d->query_tensor) {
        status = tensor_rows(dev, "query_tensor", d->query_tensor, T, E, &a->v[VKA_ARG_QUERY]);
        if (status == VKATTN_OK) status = tensor_rows(dev, "output_tensor", d->output_tensor, T, E, &a->v[VKA_ARG_OUTPUT]);
    } else {
        /* The host arrays are not named: the query is uploaded before the output is read back, so
         * one array may be both (as it always could). */
        a->v[VKA_ARG_QUERY] = a->v[VKA_ARG_OUTPUT] =
            (vka_arg_value){.given = 1, .dtype = VKATTN_DTYPE_F32, .rank = 3, .dims = {1, T, E}};
    }
    a->v[VKA_ARG_KEY] = a->v[VKA_ARG_VALUE] = a->v[VKA_ARG_QUERY];
    a->key_is_query = 1;
    a->path = VKATTN_PATH_FUSED;
    if (status == VKATTN_OK && d->query_tensor)
        status = explain ? vka_forward_check_tensor_kinds(layer, a) : vka_forward_check_tensors(layer, a, owner);
    if (status == VKATTN_OK) status = vka_args_check(&layer->cfg, a, &f->problem, &dev->error);
    return status;
}

vkattn_status vka_cached_check(vkattn_layer *layer, vkattn_kv_cache *cache, const vkattn_cached_forward_desc *d,
                               const vka_user *owner, vka_cached_io io, vka_cached_forward *out)
{
    vka_device *dev = &layer->ctx->dev;
    vkattn_status status = vka_check_alive(dev);
    if (status != VKATTN_OK) return status;
    if (!cache || !d) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "a cached forward: cache and desc are required");
    vka_cached_forward f = {.layer = layer, .cache = cache};
    vka_cache_problem cp;
    uint32_t T = 0;
    /* before anything of the cache is read: another context's objects are another thread's to touch */
    if (cache->ctx != layer->ctx)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "the KV cache belongs to a different context than the layer");
    if (io != VKA_CACHED_EXPLAIN && (status = check_free(layer, cache, owner)) != VKATTN_OK) return status;
    if ((status = check_layer(layer, cache)) != VKATTN_OK) return status;
    if ((status = check_io(dev, d, io)) != VKATTN_OK) return status;
    if ((status = batch_resolve(dev, d, cache->desc.max_sequences, &f)) != VKATTN_OK) return status;
    status = check_batch(cache, &f, d, layer->cfg.E, &cp, &T);
    if (status == VKATTN_OK) status = cached_problem(layer, d, T, owner, io == VKA_CACHED_EXPLAIN, &f);
    if (status != VKATTN_OK) {
        vka_cached_free(&f);
        return status;
    }
    f.problem.cache = cp;
    *out = f;
    return VKATTN_OK;
}

vkattn_status vka_cached_upload(vka_cached_forward *f, const vkattn_cached_forward_desc *d)
{
    vka_args *a = &f->args;
    vkattn_tensor *query = NULL, *output = NULL;
    vkattn_status status = vka_layer_host_tensor(f->layer, VKA_ARG_QUERY, &a->v[VKA_ARG_QUERY], &query);
    if (status == VKATTN_OK) status = vka_layer_host_tensor(f->layer, VKA_ARG_OUTPUT, &a->v[VKA_ARG_OUTPUT], &output);
    if (status == VKATTN_OK) status = vka_tensor_write(query, 0, d->query, query->bytes);
    if (status != VKATTN_OK) return status;
    a->v[VKA_ARG_QUERY].tensor = a->v[VKA_ARG_KEY].tensor = a->v[VKA_ARG_VALUE].tensor = query;
    a->v[VKA_ARG_OUTPUT].tensor = output;
    return VKATTN_OK;
}

/* Sequence b's mask among its n new tokens as meta's bit rows (abi.h) from n x n bytes. */
static void fill_mask(const uint8_t *mask, uint32_t n, uint32_t *rows)
{
    const uint32_t words = (n + 31) / 32;
    memset(rows, 0, (size_t)n * words * sizeof *rows);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++)
            if (mask[(size_t)i * n + j]) rows[i * words + j / 32] |= 1u << (j % 32);
}

/* The sequence table of the forward: per sequence its first row, new tokens, new length, block
 * table and mask; per token its position and slot. The blocks were taken already; the lengths
 * are still the old ones. */
static void fill_meta(const vka_cached_forward *f, const vkattn_cached_forward_desc *d, uint32_t *meta)
{
    const vkattn_kv_cache *cache = f->cache;
    const vka_cache_problem *cp = &f->problem.cache;
    const uint32_t bs = cache->desc.block_size, T = f->problem.L;
    uint32_t table = cp->seqs * VKA_SEQ_WORDS, t = 0, mask_at = cp->positions_at + 2 * T;
    const uint8_t *mask = d->new_token_mask;
    for (uint32_t b = 0; b < cp->seqs; b++) {
        const vka_kv_seq *s = &cache->seqs[f->ids[b]];
        uint32_t n = f->news[b], len = s->length + n, blocks = (len + bs - 1) / bs;
        uint32_t *w = meta + b * VKA_SEQ_WORDS;
        w[VKA_SEQ_Q_START] = t, w[VKA_SEQ_NEW] = n, w[VKA_SEQ_LEN] = len, w[VKA_SEQ_TABLE] = table;
        w[VKA_SEQ_MASK] = mask ? mask_at : 0;
        memcpy(meta + table, s->blocks, blocks * sizeof *meta);
        table += blocks;
        for (uint32_t i = 0; i < n; i++, t++) {
            uint32_t slot = s->length + i;
            meta[cp->positions_at + t] = s->length + (d->new_token_depths ? d->new_token_depths[t] : i);
            meta[cp->positions_at + T + t] = s->blocks[slot / bs] * bs + slot % bs;
        }
        if (mask) {
            fill_mask(mask, n, meta + mask_at);
            mask += (size_t)n * n;
            mask_at += n * ((n + 31) / 32);
        }
    }
}

/* Takes the blocks of every sequence of the batch (all or none). */
static vkattn_status take_blocks(vka_cached_forward *f)
{
    vkattn_status status = VKATTN_OK;
    uint32_t b = 0;
    for (; b < f->count && status == VKATTN_OK; b++)
        status = vka_kv_cache_take(f->cache, &f->cache->seqs[f->ids[b]], f->news[b], &f->taken[b]);
    if (status != VKATTN_OK)
        while (b-- > 0) vka_kv_cache_untake(f->cache, &f->cache->seqs[f->ids[b]], f->taken[b]);
    return status;
}

vkattn_status vka_cached_commit(vka_cached_forward *f, const vkattn_cached_forward_desc *d)
{
    vkattn_kv_cache *cache = f->cache;
    vka_device *dev = &cache->ctx->dev;
    const size_t bytes = (size_t)f->problem.cache.meta_words * 4;
    uint32_t *meta = vka_malloc(&dev->faults, bytes);
    if (!meta) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a cached forward's sequence table");
    vkattn_status status = take_blocks(f);
    if (status == VKATTN_OK) {
        fill_meta(f, d, meta);
        /* Host-visible: written in place, no copy through the queue. */
        status = vka_buffer_reserve(dev, &cache->meta, bytes, VKA_MEMORY_STAGING, "a cached forward's sequence table");
        if (status == VKATTN_OK) status = vka_buffer_write(&cache->ctx->transfer, &cache->meta, 0, meta, bytes);
        if (status != VKATTN_OK)
            for (uint32_t b = f->count; b-- > 0;) vka_kv_cache_untake(cache, &cache->seqs[f->ids[b]], f->taken[b]);
    }
    free(meta);
    if (status != VKATTN_OK) return status;
    f->owner_before = cache->owner;
    f->held_before = cache->held_seqs;
    for (uint32_t b = 0; b < f->count; b++) {
        vka_kv_seq *s = &cache->seqs[f->ids[b]];
        cache->held_seqs += s->length == 0;
        s->length += f->news[b];
    }
    cache->owner = f->layer->serial;
    f->committed = 1;
    return VKATTN_OK;
}

void vka_cached_undo(vka_cached_forward *f)
{
    if (!f->committed) return;
    vkattn_kv_cache *cache = f->cache;
    for (uint32_t b = f->count; b-- > 0;) {
        vka_kv_seq *s = &cache->seqs[f->ids[b]];
        s->length -= f->news[b];
        vka_kv_cache_untake(cache, s, f->taken[b]);
    }
    cache->held_seqs = f->held_before;
    cache->owner = f->owner_before;
    f->committed = 0;
}

/* Every role's buffer: the query (also the key and value), the output, the cache's pools and
 * sequence table. */
static void cached_buffers(const vka_cached_forward *f, vka_buffer *caller[VKA_ROLE_COUNT])
{
    for (int r = 0; r < VKA_ROLE_COUNT; r++) caller[r] = NULL;
    vka_buffer *query = (vka_buffer *)&f->args.v[VKA_ARG_QUERY].tensor->buffer;
    caller[VKA_ROLE_QUERY] = caller[VKA_ROLE_KEY] = caller[VKA_ROLE_VALUE] = query;
    caller[VKA_ROLE_OUTPUT] = (vka_buffer *)&f->args.v[VKA_ARG_OUTPUT].tensor->buffer;
    caller[VKA_ROLE_CACHE_K] = &f->cache->k;
    caller[VKA_ROLE_CACHE_V] = &f->cache->v;
    caller[VKA_ROLE_CACHE_META] = &f->cache->meta;
}

vkattn_status vka_cached_run(vka_cached_forward *f)
{
    vka_buffer *caller[VKA_ROLE_COUNT];
    cached_buffers(f, caller);
    ((vkattn_tensor *)f->args.v[VKA_ARG_OUTPUT].tensor)->mask_checked = 0; /* rewritten by the device */
    return vka_layer_run(f->layer, &f->problem, caller);
}

vkattn_status vka_cached_record(vka_cached_forward *f, VkCommandBuffer cmd, vkattn_forward_stats *stats)
{
    vka_buffer *caller[VKA_ROLE_COUNT];
    cached_buffers(f, caller);
    ((vkattn_tensor *)f->args.v[VKA_ARG_OUTPUT].tensor)->mask_checked = 0;
    return vka_layer_record(f->layer, &f->problem, caller, cmd, stats);
}

void vka_cached_free(vka_cached_forward *f)
{
    free(f->ids);
    f->ids = f->news = f->taken = NULL;
}

static vkattn_status forward_cached(vkattn_layer *layer, vkattn_kv_cache *cache, const vkattn_cached_forward_desc *d)
{
    vka_cached_forward f;
    vkattn_status status = vka_cached_check(layer, cache, d, NULL, VKA_CACHED_HOST_OR_DEVICE, &f);
    if (status != VKATTN_OK) return status;
    const int host = d->query != NULL;
    if (host) status = vka_cached_upload(&f, d);
    if (status == VKATTN_OK) status = vka_cached_commit(&f, d);
    if (status == VKATTN_OK) status = vka_cached_run(&f);
    if (status == VKATTN_OK && host) {
        const vkattn_tensor *output = f.args.v[VKA_ARG_OUTPUT].tensor;
        status = vka_tensor_read(output, 0, d->output, output->bytes);
    }
    if (status != VKATTN_OK) vka_cached_undo(&f);
    vka_cached_free(&f);
    return status;
}

vkattn_status vkattn_forward_cached(vkattn_layer *layer, vkattn_kv_cache *cache, const vkattn_cached_forward_desc *d)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, forward_cached(layer, cache, d));
}

/* The plan vkattn_forward_cached would run, checked as it would be; nothing is committed. */
static vkattn_status forward_cached_explain(vkattn_layer *layer, vkattn_kv_cache *cache,
                                            const vkattn_cached_forward_desc *d, char *text, size_t capacity,
                                            size_t *length)
{
    vkattn_context *ctx = layer->ctx;
    if (!text && capacity) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "text is NULL but capacity is not 0");
    vka_cached_forward f;
    vkattn_status status = vka_cached_check(layer, cache, d, NULL, VKA_CACHED_EXPLAIN, &f);
    if (status != VKATTN_OK) return status;
    vka_plan plan = {0}; /* a plan of its own: the layer's stays as it is */
    status = vka_context_plan(ctx, &f.problem, &plan);
    size_t n = status == VKATTN_OK ? vka_plan_describe(&f.problem, &plan, ctx->loop_budget, text, capacity) : 0;
    vka_plan_free(&plan);
    vka_cached_free(&f);
    if (status == VKATTN_OK && length) *length = n;
    return status;
}

vkattn_status vkattn_forward_cached_explain(vkattn_layer *layer, vkattn_kv_cache *cache,
                                            const vkattn_cached_forward_desc *desc, char *text, size_t capacity,
                                            size_t *length)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, forward_cached_explain(layer, cache, desc, text, capacity, length));
}

static vkattn_status forward_cached_record(vkattn_layer *layer, vkattn_kv_cache *cache,
                                           const vkattn_cached_forward_desc *d, VkCommandBuffer cmd)
{
    vka_cached_forward f;
    vkattn_status status = vka_cached_check(layer, cache, d, NULL, VKA_CACHED_DEVICE_ONLY, &f);
    if (status != VKATTN_OK) return status;
    vkattn_forward_stats stats;
    if (!cmd) status = vka_fail(&layer->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_forward_cached_record: cmd is VK_NULL_HANDLE");
    if (status == VKATTN_OK) status = vka_cached_commit(&f, d);
    if (status == VKATTN_OK) status = vka_cached_record(&f, cmd, &stats);
    if (status == VKATTN_OK) layer->stats = stats;
    else vka_cached_undo(&f);
    vka_cached_free(&f);
    return status;
}

vkattn_status vkattn_forward_cached_record(vkattn_layer *layer, vkattn_kv_cache *cache,
                                           const vkattn_cached_forward_desc *d, VkCommandBuffer cmd)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, forward_cached_record(layer, cache, d, cmd));
}
