/* A forward through a paged KV cache in stages, shared by the blocking entry point, recording into
 * an application's command buffer and submissions (cached.c):
 *   check   the layer, the cache, the batch, the arguments; nothing changes;
 *   commit  the blocks the new tokens need are taken, the forward's sequence table (meta) is
 *           written into the cache's host-visible buffer, the sequences' lengths advance;
 *   run / record  the plan, on the device now or into a command buffer someone else submits;
 *   undo    takes a commit back exactly (a failed run or record, a submission dropped before it
 *           was submitted): nothing else may have touched the cache since.
 * The commit happens before anything runs because a recorded or submitted forward runs after the
 * call returns, and the next forward of the cache must already see the new lengths. */
#ifndef VKA_CACHED_H
#define VKA_CACHED_H

#include "api/context.h"
#include "problem/args.h"

typedef struct vka_cached_forward {
    vkattn_layer *layer;
    vkattn_kv_cache *cache;
    vka_args args;          /* query (= key = value) and output, as device tensors once the run is set up */
    vka_problem problem;    /* its cache part says where meta puts what */
    uint32_t count;         /* sequences of the batch */
    uint32_t *ids, *news;   /* per sequence: its id and its new tokens (one allocation with taken) */
    uint32_t *taken;        /* per sequence: blocks the commit took */
    uint64_t owner_before;  /* the cache's owner and held sequences before the commit */
    uint32_t held_before;
    int committed;
} vka_cached_forward;

/* Who may call with what: the blocking entry point takes host arrays or device tensors, the
 * others device tensors only; explaining takes either, and objects in unfinished submissions too
 * (it reads and writes nothing of them). */
typedef enum vka_cached_io {
    VKA_CACHED_HOST_OR_DEVICE = 0,
    VKA_CACHED_DEVICE_ONLY = 1,
    VKA_CACHED_EXPLAIN = 2
} vka_cached_io;

/* Checks a cached forward: the device is alive; the layer, the cache and the tensors are free (in
 * no unfinished submission but `owner`, the submission asking; not checked for VKA_CACHED_EXPLAIN);
 * the layer fits the cache; the
 * batch, its masks and its arguments are valid. Fills *out (vka_cached_free it, on success only). */
vkattn_status vka_cached_check(vkattn_layer *layer, vkattn_kv_cache *cache, const vkattn_cached_forward_desc *d,
                               const vka_user *owner, vka_cached_io io, vka_cached_forward *out);
/* Whether one cached forward takes T new tokens of E features over `seqs` sequences whose block
 * tables hold `tables` words and whose tree masks `masks`: the rows (T x E) and the meta words
 * (vka_cache_problem) within 32 bits. *words gets the meta words; else VKATTN_ERROR_SIZE_OVERFLOW,
 * the message starting with `what` (the warm-up names its limits there). */
vkattn_status vka_cached_sizes(vka_device *dev, const char *what, uint64_t seqs, uint64_t T, uint64_t tables,
                               uint64_t masks, uint32_t E, uint32_t *words);
/* The host arrays' device tensors (the layer's host_io), the query uploaded. */
vkattn_status vka_cached_upload(vka_cached_forward *f, const vkattn_cached_forward_desc *d);
/* Commits a checked forward to its cache (see above); on failure nothing changed. `d` is the
 * description it was checked with (its masks and depths go into meta). */
vkattn_status vka_cached_commit(vka_cached_forward *f, const vkattn_cached_forward_desc *d);
/* Takes a commit back; a no-op for a forward not committed. */
void vka_cached_undo(vka_cached_forward *f);
/* Runs a committed forward on the device and waits (vka_layer_run). */
vkattn_status vka_cached_run(vka_cached_forward *f);
/* Records a committed forward into `cmd` (nothing, on failure); its stats go to *stats. */
vkattn_status vka_cached_record(vka_cached_forward *f, VkCommandBuffer cmd, vkattn_forward_stats *stats);
void vka_cached_free(vka_cached_forward *f);

#endif
