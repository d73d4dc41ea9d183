/* The paged KV cache object: creation (the pools), the block bookkeeping, and the calls that
 * change sequences without a forward (free, fork). The forward through it is in cached.c. */
#include "api/kv_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/context.h"
#include "format/quant.h"

/* Elements of one block in one pool: H_kv heads of block_size rows of D. */
static uint64_t block_elems(const vkattn_kv_cache_desc *d)
{
    return (uint64_t)d->num_kv_heads * d->block_size * d->head_dim;
}

static vkattn_status check_desc(vkattn_context *ctx, const vkattn_kv_cache_desc *in, vkattn_kv_cache_desc *out)
{
    vka_device *dev = &ctx->dev;
    if (!in) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_kv_cache_create: desc is NULL");
    vkattn_kv_cache_desc d = *in;
    if (d.block_size == 0) d.block_size = 16;
    if (d.max_sequences == 0) d.max_sequences = 1;
    if (d.num_kv_heads == 0 || d.head_dim == 0 || d.num_blocks == 0)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_kv_cache_create: num_kv_heads (%u), head_dim (%u) and num_blocks (%u) must be > 0",
                        d.num_kv_heads, d.head_dim, d.num_blocks);
    if (!vka_is_cache_dtype(d.dtype))
        return vka_fail(dev, VKATTN_ERROR_DTYPE, "vkattn_kv_cache_create: a cache stores f32, f16, q8_0 or q4_0, not %s",
                        vkattn_dtype_name(d.dtype));
    if (vka_dtype_is_block(d.dtype) && d.head_dim % VKA_QUANT_BLOCK != 0)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_kv_cache_create: a %s cache stores each head's row in blocks of %d values: head_dim "
                        "(%u) must be a multiple of %d (use f16 or f32 for this layer)",
                        vkattn_dtype_name(d.dtype), VKA_QUANT_BLOCK, d.head_dim, VKA_QUANT_BLOCK);
    if (d.dtype == VKATTN_DTYPE_F16 && !dev->info.storage_16bit)
        return vka_fail(dev, VKATTN_ERROR_UNSUPPORTED, "an f16 KV cache needs storageBuffer16BitAccess, which \"%s\" lacks",
                        dev->info.name);
    if (d.max_sequences > (1u << 24) || d.block_size > (1u << 16))
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_kv_cache_create: at most 2^24 sequences and 2^16 tokens per block");
    /* A token's row of all heads first, in 64 bits (both factors are below 2^32): with it below
     * 2^32 values and block_size below 2^17, no product of the checks below can wrap. */
    uint64_t row = (uint64_t)d.num_kv_heads * d.head_dim;
    if (row > UINT32_MAX / 8)
        return vka_fail(dev, VKATTN_ERROR_DEVICE_LIMIT,
                        "vkattn_kv_cache_create: a token of %u K/V heads x %u dims (%llu values) is more than a KV cache's "
                        "pool holds (fewer than 2^29 values per token)",
                        d.num_kv_heads, d.head_dim, (unsigned long long)row);
    /* Each pool is one binding, read through texel views and indexed with 32-bit integers; a block
     * format's pool is written as a storage buffer and read through a view of uint words, indexed by
     * byte (abi.h). */
    vka_plan_limits limits = vka_context_plan_limits(ctx);
    uint64_t fit;
    if (vka_dtype_is_block(d.dtype)) {
        uint64_t max_bytes = limits.max_storage_buffer_range < UINT32_MAX ? limits.max_storage_buffer_range : UINT32_MAX;
        if (limits.max_texel_elements * 4 < max_bytes) max_bytes = limits.max_texel_elements * 4;
        fit = (max_bytes - 4) / vka_dtype_bytes(d.dtype, block_elems(&d)); /* 4: the spare word */
    } else {
        uint64_t esize = vkattn_dtype_size(d.dtype), texel = d.head_dim % 4 == 0 ? 4 : 1;
        uint64_t max_elems = limits.max_storage_buffer_range / esize;
        if (limits.max_texel_elements * texel < max_elems) max_elems = limits.max_texel_elements * texel;
        if (max_elems > UINT32_MAX) max_elems = UINT32_MAX;
        fit = max_elems / block_elems(&d);
    }
    if (d.num_blocks > fit)
        return vka_fail(dev, VKATTN_ERROR_DEVICE_LIMIT,
                        "a KV cache of %u blocks of %u tokens x %u heads x %u dims (%s, %llu bytes per block) is more than "
                        "one binding of this device holds: %llu blocks",
                        d.num_blocks, d.block_size, d.num_kv_heads, d.head_dim, vkattn_dtype_name(d.dtype),
                        (unsigned long long)vka_dtype_bytes(d.dtype, block_elems(&d)), (unsigned long long)fit);
    *out = d;
    return VKATTN_OK;
}

static void cache_free(vkattn_kv_cache *cache)
{
    vka_device *dev = &cache->ctx->dev;
    /* Nothing may still use it on the device: its submission is finished (or dropped) first. */
    if (cache->user) cache->user->release(cache->user);
    vka_buffer_destroy(dev, &cache->k);
    vka_buffer_destroy(dev, &cache->v);
    vka_buffer_destroy(dev, &cache->meta);
    if (cache->seqs)
        for (uint32_t i = 0; i < cache->desc.max_sequences; i++) free(cache->seqs[i].blocks);
    free(cache->seqs);
    free(cache->refs);
    free(cache->free_blocks);
    vka_child_forget(&cache->child);
    free(cache);
}

static void destroy_child(vka_child *child) { cache_free(VKA_CONTAINER_OF(child, vkattn_kv_cache, child)); }

static vkattn_status cache_create(vkattn_context *ctx, const vkattn_kv_cache_desc *desc, vkattn_kv_cache **out)
{
    vka_device *dev = &ctx->dev;
    vkattn_status status = vka_check_alive(dev);
    if (status != VKATTN_OK) return status;
    if (!out) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_kv_cache_create: out is NULL");
    vkattn_kv_cache_desc d;
    if ((status = check_desc(ctx, desc, &d)) != VKATTN_OK) return status;
    vkattn_kv_cache *cache = vka_calloc(&dev->faults, 1, sizeof *cache);
    if (!cache) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a KV cache");
    cache->ctx = ctx;
    cache->desc = d;
    cache->refs = vka_calloc(&dev->faults, d.num_blocks, sizeof *cache->refs);
    cache->free_blocks = vka_calloc(&dev->faults, d.num_blocks, sizeof *cache->free_blocks);
    cache->seqs = vka_calloc(&dev->faults, d.max_sequences, sizeof *cache->seqs);
    if (!cache->refs || !cache->free_blocks || !cache->seqs) {
        status = vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a KV cache's block tables");
        goto fail;
    }
    /* A stack popped from the top: blocks are handed out 0, 1, 2, ... at first. */
    for (uint32_t i = 0; i < d.num_blocks; i++) cache->free_blocks[i] = d.num_blocks - 1 - i;
    cache->free_count = d.num_blocks;
    uint64_t bytes = vka_kv_pool_bytes(d.dtype, (uint64_t)d.num_blocks * block_elems(&d));
    VKA_TRY(vka_buffer_create(dev, bytes, VKA_MEMORY_DEVICE, "the KV cache's key pool", &cache->k));
    VKA_TRY(vka_buffer_create(dev, bytes, VKA_MEMORY_DEVICE, "the KV cache's value pool", &cache->v));
    vka_context_adopt(ctx, &cache->child, destroy_child);
    *out = cache;
    return VKATTN_OK;
fail:
    cache_free(cache);
    return status;
}

vkattn_status vkattn_kv_cache_create(vkattn_context *ctx, const vkattn_kv_cache_desc *desc, vkattn_kv_cache **out)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(ctx, cache_create(ctx, desc, out));
}

void vkattn_kv_cache_destroy(vkattn_kv_cache *cache)
{
    if (cache) cache_free(cache);
}

vkattn_status vka_kv_cache_take(vkattn_kv_cache *cache, vka_kv_seq *seq, uint32_t extra, uint32_t *taken)
{
    vka_device *dev = &cache->ctx->dev;
    const uint32_t bs = cache->desc.block_size;
    uint64_t need = ((uint64_t)seq->length + extra + bs - 1) / bs;
    uint32_t more = need > seq->block_count ? (uint32_t)(need - seq->block_count) : 0;
    *taken = 0;
    if (more > cache->free_count)
        return vka_fail(dev, VKATTN_ERROR_CACHE_FULL,
                        "the KV cache is full: %u new token%s need%s %u more block%s of %u tokens and %u of %u %s free "
                        "(free sequences, or create the cache with more blocks)",
                        extra, extra == 1 ? "" : "s", extra == 1 ? "s" : "", more, more == 1 ? "" : "s", bs,
                        cache->free_count, cache->desc.num_blocks, cache->free_count == 1 ? "is" : "are");
    if (seq->block_count + more > seq->block_capacity) {
        uint32_t cap = seq->block_capacity ? seq->block_capacity : 8;
        while (cap < seq->block_count + more) cap *= 2;
        uint32_t *bigger = vka_realloc(&dev->faults, seq->blocks, cap * sizeof *bigger);
        if (!bigger) return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a block table");
        seq->blocks = bigger;
        seq->block_capacity = cap;
    }
    for (uint32_t i = 0; i < more; i++) {
        uint32_t block = cache->free_blocks[--cache->free_count];
        cache->refs[block] = 1;
        seq->blocks[seq->block_count++] = block;
    }
    *taken = more;
    return VKATTN_OK;
}

void vka_kv_cache_untake(vkattn_kv_cache *cache, vka_kv_seq *seq, uint32_t taken)
{
    for (uint32_t i = 0; i < taken; i++) {
        uint32_t block = seq->blocks[--seq->block_count];
        cache->refs[block] = 0;
        cache->free_blocks[cache->free_count++] = block;
    }
}

vkattn_status vka_kv_cache_check_free(const vkattn_kv_cache *cache)
{
    if (!cache->user) return VKATTN_OK;
    return vka_fail(&cache->ctx->dev, VKATTN_ERROR_BUSY,
                    "the KV cache is in a submission that has not finished (vkattn_submission_wait or _poll first)");
}

static vkattn_status check_seq(const vkattn_kv_cache *cache, uint32_t seq)
{
    if (seq < cache->desc.max_sequences) return VKATTN_OK;
    return vka_fail(&cache->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "sequence id %u is not below max_sequences (%u)", seq,
                    cache->desc.max_sequences);
}

static vkattn_status get_info(const vkattn_kv_cache *cache, vkattn_kv_cache_info *out)
{
    if (!out) return vka_fail(&cache->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_kv_cache_get_info: out is NULL");
    vkattn_kv_cache_info info = {.desc = cache->desc, .free_blocks = cache->free_count};
    for (uint32_t i = 0; i < cache->desc.max_sequences; i++) {
        info.sequences += cache->seqs[i].length > 0;
        info.tokens += cache->seqs[i].length;
    }
    info.bytes_per_token =
        (uint32_t)(2 * cache->desc.num_kv_heads * vka_dtype_bytes(cache->desc.dtype, cache->desc.head_dim));
    info.bytes = 2 * vka_kv_pool_bytes(cache->desc.dtype, (uint64_t)cache->desc.num_blocks * block_elems(&cache->desc));
    *out = info;
    return VKATTN_OK;
}

vkattn_status vkattn_kv_cache_get_info(const vkattn_kv_cache *cache, vkattn_kv_cache_info *out)
{
    if (!cache) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(cache->ctx, get_info(cache, out));
}

static vkattn_status seq_length(const vkattn_kv_cache *cache, uint32_t seq, uint32_t *length)
{
    vkattn_status status = check_seq(cache, seq);
    if (status != VKATTN_OK) return status;
    if (!length) return vka_fail(&cache->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_kv_cache_seq_length: length is NULL");
    *length = cache->seqs[seq].length;
    return VKATTN_OK;
}

vkattn_status vkattn_kv_cache_seq_length(const vkattn_kv_cache *cache, uint32_t seq, uint32_t *length)
{
    if (!cache) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(cache->ctx, seq_length(cache, seq, length));
}

static vkattn_status free_seq(vkattn_kv_cache *cache, uint32_t seq)
{
    vkattn_status status = check_seq(cache, seq);
    if (status != VKATTN_OK) return status;
    vka_kv_seq *s = &cache->seqs[seq];
    /* Last block first, so that the stack hands them out again in the sequence's order. */
    while (s->block_count > 0) {
        uint32_t block = s->blocks[--s->block_count];
        if (--cache->refs[block] == 0) cache->free_blocks[cache->free_count++] = block;
    }
    if (s->length > 0 && --cache->held_seqs == 0) cache->owner = 0; /* empty: any layer may take it */
    s->length = 0;
    return VKATTN_OK;
}

static vkattn_status free_seq_checked(vkattn_kv_cache *cache, uint32_t seq)
{
    vkattn_status status = vka_kv_cache_check_free(cache);
    return status == VKATTN_OK ? free_seq(cache, seq) : status;
}

vkattn_status vkattn_kv_cache_free_seq(vkattn_kv_cache *cache, uint32_t seq)
{
    if (!cache) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(cache->ctx, free_seq_checked(cache, seq));
}

/* Copies block `from` of both pools into block `to` on the device; *submitted (may be NULL): the
 * copy reached the queue, so that block `to` may have been written even where this fails. */
static vkattn_status copy_block(vkattn_kv_cache *cache, uint32_t from, uint32_t to, int *submitted)
{
    vkattn_context *ctx = cache->ctx;
    VkDeviceSize bytes = vka_dtype_bytes(cache->desc.dtype, block_elems(&cache->desc));
    VkCommandBuffer cmd;
    if (submitted) *submitted = 0;
    vkattn_status status = vka_transfer_begin(&ctx->transfer, &cmd);
    if (status != VKATTN_OK) return status;
    const vka_buffer *pools[2] = {&cache->k, &cache->v};
    for (int i = 0; i < 2; i++) {
        VkBufferCopy region = {pools[i]->base + from * bytes, pools[i]->base + to * bytes, bytes};
        ctx->dev.vk.vkCmdCopyBuffer(cmd, pools[i]->buffer, pools[i]->buffer, 1, &region);
    }
    if ((status = vka_commands_submit(&ctx->dev, &ctx->transfer.lane)) != VKATTN_OK) return status;
    if (submitted) *submitted = 1;
    return vka_wait_fence(&ctx->dev, ctx->transfer.lane.fence, "copying a KV cache block");
}

static vkattn_status fork_seq(vkattn_kv_cache *cache, uint32_t src, uint32_t dst)
{
    vka_device *dev = &cache->ctx->dev;
    vkattn_status status = vka_check_alive(dev);
    if (status == VKATTN_OK) status = vka_kv_cache_check_free(cache);
    if (status == VKATTN_OK) status = check_seq(cache, src);
    if (status == VKATTN_OK) status = check_seq(cache, dst);
    if (status != VKATTN_OK) return status;
    vka_kv_seq *s = &cache->seqs[src], *d = &cache->seqs[dst];
    if (src == dst) return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_kv_cache_fork: src and dst are both %u", src);
    if (d->length > 0)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_kv_cache_fork: sequence %u holds %u tokens (free it first)",
                        dst, d->length);
    const uint32_t bs = cache->desc.block_size, full = s->length / bs, partial = s->length % bs != 0;
    if (partial && cache->free_count == 0)
        return vka_fail(dev, VKATTN_ERROR_CACHE_FULL,
                        "the KV cache is full: forking sequence %u copies its partly filled last block into a free "
                        "block, and none of %u is free (free sequences, or create the cache with more blocks)",
                        src, cache->desc.num_blocks);
    /* dst's table: src's full blocks, shared, then (for a partly filled last block) one of its own */
    uint32_t taken = 0;
    d->length = full * bs;
    if (full > d->block_capacity) {
        uint32_t *bigger = vka_realloc(&dev->faults, d->blocks, full * sizeof *bigger);
        if (!bigger) {
            d->length = 0;
            return vka_fail(dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a block table");
        }
        d->blocks = bigger;
        d->block_capacity = full;
    }
    if (full) memcpy(d->blocks, s->blocks, full * sizeof *d->blocks); /* d->blocks may still be NULL */
    d->block_count = full;
    if (partial) {
        status = vka_kv_cache_take(cache, d, s->length - full * bs, &taken);
        if (status == VKATTN_OK) status = copy_block(cache, s->blocks[full], d->blocks[full], NULL);
        if (status != VKATTN_OK) {
            vka_kv_cache_untake(cache, d, taken);
            d->block_count = 0;
            d->length = 0;
            return status;
        }
    }
    for (uint32_t i = 0; i < full; i++) cache->refs[d->blocks[i]]++;
    d->length = s->length;
    cache->held_seqs += d->length > 0;
    return VKATTN_OK;
}

vkattn_status vkattn_kv_cache_fork(vkattn_kv_cache *cache, uint32_t src, uint32_t dst)
{
    if (!cache) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(cache->ctx, fork_seq(cache, src, dst));
}

static vkattn_status truncate_seq(vkattn_kv_cache *cache, uint32_t seq, uint32_t length)
{
    vka_device *dev = &cache->ctx->dev;
    vkattn_status status = vka_check_alive(dev);
    if (status == VKATTN_OK) status = vka_kv_cache_check_free(cache);
    if (status == VKATTN_OK) status = check_seq(cache, seq);
    if (status != VKATTN_OK) return status;
    vka_kv_seq *s = &cache->seqs[seq];
    if (length > s->length)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "vkattn_kv_cache_truncate: sequence %u holds %u tokens, fewer than %u", seq, s->length, length);
    if (length == s->length) return VKATTN_OK;
    if (length == 0) return free_seq(cache, seq);
    const uint32_t bs = cache->desc.block_size, keep = (length + bs - 1) / bs, last = s->blocks[keep - 1];
    /* A shared block is full and never written again: a partly filled last one becomes seq's own,
     * copied into a free block, or, in a full pool, into one of seq's own past the new length (the
     * rollback gives those back anyway). */
    if (length % bs != 0 && cache->refs[last] > 1) {
        uint32_t at = s->block_count; /* the copy's block in seq's table, if one of its own */
        if (cache->free_count == 0)
            for (uint32_t i = s->block_count; i-- > keep && at == s->block_count;)
                if (cache->refs[s->blocks[i]] == 1) at = i;
        if (cache->free_count == 0 && at == s->block_count)
            return vka_fail(dev, VKATTN_ERROR_CACHE_FULL,
                            "the KV cache is full: truncating sequence %u into a block it shares needs a block for its "
                            "own copy, none of %u is free and the sequence holds none of its own past %u tokens",
                            seq, cache->desc.num_blocks, length);
        uint32_t own = at < s->block_count ? s->blocks[at] : cache->free_blocks[cache->free_count - 1];
        int submitted = 0;
        if ((status = copy_block(cache, last, own, &submitted)) != VKATTN_OK) {
            if (at == s->block_count || !submitted) return status; /* a free block, or nothing ran */
            /* The device may have copied into seq's block `at` before the error (a fence wait that
             * fails after the work): its tokens there are not to be trusted, so seq keeps its whole
             * blocks before the partly filled one (as the header says), never a block that lies. */
            const uint32_t whole = keep - 1;
            char why[sizeof dev->error.message];
            snprintf(why, sizeof why, "%s", dev->error.message);
            if (whole == 0) {
                free_seq(cache, seq);
            } else {
                while (s->block_count > whole) {
                    uint32_t block = s->blocks[--s->block_count];
                    if (--cache->refs[block] == 0) cache->free_blocks[cache->free_count++] = block;
                }
                s->length = whole * bs;
            }
            return vka_fail(dev, status, "%s; sequence %u now holds its first %u tokens (the copy into a block of its "
                                         "own failed)", why, seq, whole * bs);
        }
        if (at < s->block_count) {
            s->blocks[at] = last; /* seq's reference to `last` moves there and goes with the rest below */
        } else {
            cache->free_count--;
            cache->refs[own] = 1;
            cache->refs[last]--;
        }
        s->blocks[keep - 1] = own;
    }
    while (s->block_count > keep) { /* last first, as free_seq gives them back */
        uint32_t block = s->blocks[--s->block_count];
        if (--cache->refs[block] == 0) cache->free_blocks[cache->free_count++] = block;
    }
    s->length = length;
    return VKATTN_OK;
}

vkattn_status vkattn_kv_cache_truncate(vkattn_kv_cache *cache, uint32_t seq, uint32_t length)
{
    if (!cache) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(cache->ctx, truncate_seq(cache, seq, length));
}
