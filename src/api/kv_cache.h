/* The paged KV cache behind vkattn_kv_cache: the K and V pools on the device, and on the host the
 * bookkeeping of blocks (free list, sharing counts) and of each sequence's block table. The
 * layout of the pools and of a forward's sequence table (meta) is in shaders/abi.h. */
#ifndef VKA_KV_CACHE_H
#define VKA_KV_CACHE_H

#include "api/context.h"

typedef struct vka_kv_seq {
    uint32_t length;       /* tokens held */
    uint32_t *blocks;      /* its block table: ceil(length / block_size) block ids in order */
    uint32_t block_count, block_capacity;
} vka_kv_seq;

struct vkattn_kv_cache {
    vkattn_context *ctx;
    vka_child child;            /* in the context's list */
    vkattn_kv_cache_desc desc;  /* resolved */
    vka_buffer k, v;            /* the pools, (num_blocks, H_kv, block_size, D) each */
    vka_buffer meta;            /* a forward's sequence table, host-visible, rewritten per forward (so one
                                   forward at a time: a recorded or submitted one holds it until it has run) */
    uint32_t *refs;             /* per block: the sequences whose table holds it (0 = free) */
    uint32_t *free_blocks;      /* a stack of the free block ids */
    uint32_t free_count;
    vka_kv_seq *seqs;           /* max_sequences */
    uint32_t held_seqs;         /* sequences holding tokens */
    uint64_t owner;             /* serial of the layer whose K/V the cache holds; 0 while it is empty */
    vka_user *user;             /* the unfinished submission that holds a forward of it, if any */
};

/* VKATTN_ERROR_BUSY, with a message, while the cache belongs to an unfinished submission (its
 * sequences and blocks may change only once that work has run); else VKATTN_OK. */
vkattn_status vka_kv_cache_check_free(const vkattn_kv_cache *cache);

/* Gives `seq` room for `extra` more tokens: takes the blocks it lacks from the free list (the
 * sequence's length is not changed). VKATTN_ERROR_CACHE_FULL (nothing taken) when too few are free;
 * *taken gets the number of blocks taken, for vka_kv_cache_untake. */
vkattn_status vka_kv_cache_take(vkattn_kv_cache *cache, vka_kv_seq *seq, uint32_t extra, uint32_t *taken);
/* Gives back the last `taken` blocks of `seq`'s table (undoing a take). */
void vka_kv_cache_untake(vkattn_kv_cache *cache, vka_kv_seq *seq, uint32_t taken);

#endif
