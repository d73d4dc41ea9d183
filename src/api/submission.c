/* vkattn_submission: forwards added (checked, nothing recorded), then recorded into one command
 * buffer and submitted without waiting. Recording at submit, not at add, is what lets a failed add
 * leave the submission exactly as it was. A cached forward is committed to its cache at add (its
 * sequences advance then, so that the next forward sees them), and taken back if the submission
 * drops it before it was submitted. */
#include "api/submission.h"

#include <stdlib.h>
#include <string.h>

#include "api/forward.h"
#include "api/kv_cache.h"
#include "api/layer.h"
#include "api/tensor.h"
#include "pipeline/dispatch.h"

static void release(vka_user *user);
static int writes(const vka_user *user, const vkattn_tensor *t);
static void destroy_child(vka_child *child)
{
    vkattn_submission_destroy(VKA_CONTAINER_OF(child, vkattn_submission, child));
}

static vkattn_status submission_create(vkattn_context *ctx, vkattn_submission **out)
{
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status != VKATTN_OK) return status;
    if (!out) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_submission_create: out is NULL");
    vkattn_submission *s = vka_calloc(&ctx->dev.faults, 1, sizeof *s);
    if (!s) return vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for a submission");
    s->ctx = ctx;
    if ((status = vka_commands_create(&ctx->dev, &s->commands)) != VKATTN_OK) {
        free(s);
        return status;
    }
    s->user.release = release;
    s->user.writes = writes;
    vka_context_adopt(ctx, &s->child, destroy_child);
    *out = s;
    return VKATTN_OK;
}

vkattn_status vkattn_submission_create(vkattn_context *ctx, vkattn_submission **out)
{
    if (!ctx) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(ctx, submission_create(ctx, out));
}

/* Marks (s) or unmarks (NULL) the layer, tensors and cache of one forward as the submission's. */
static void mark(vka_submitted_forward *f, vkattn_submission *s)
{
    vka_user *user = s ? &s->user : NULL;
    const vka_args *a = f->cached ? &f->cached->args : &f->args;
    f->layer->user = user;
    for (int i = 0; i < VKA_ARG_COUNT; i++)
        if (a->v[i].given) ((vkattn_tensor *)a->v[i].tensor)->user = user;
    if (f->cached) f->cached->cache->user = user;
}

static void free_cached(vka_cached_forward *c)
{
    if (!c) return;
    vka_cached_free(c);
    free(c);
}

/* Forgets every forward and frees their layers, tensors and caches: the submission is open and
 * empty. What ran (or will never run, on a lost device) stays as it is. */
static void empty(vkattn_submission *s)
{
    for (uint32_t i = 0; i < s->count; i++) {
        mark(&s->forwards[i], NULL);
        free_cached(s->forwards[i].cached);
    }
    s->count = 0;
    s->state = VKA_SUBMISSION_OPEN;
}

/* Empties a submission whose forwards will never run: the caches' sequences go back to where they
 * were before the adds, newest first (nothing else touched them meanwhile: they were busy). */
static void drop(vkattn_submission *s)
{
    for (uint32_t i = s->count; i-- > 0;)
        if (s->forwards[i].cached) vka_cached_undo(s->forwards[i].cached);
    empty(s);
}

/* Tells, once, that the submission's forwards were dropped (release): a later add
 * or submit fails with this message, so no forward added after the drop runs without the
 * caller knowing that the ones before it are gone. */
static vkattn_status report_dropped(vkattn_submission *s)
{
    if (!s->dropped) return VKATTN_OK;
    s->dropped = 0;
    return vka_fail(&s->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT,
                    "a layer, tensor or KV cache of this submission was destroyed before it was submitted: its "
                    "forwards were dropped (add them again)");
}

/* What every add checks first: a dropped submission says so, the layer is given and of this
 * context, the submission takes forwards now. */
static vkattn_status add_prelude(vkattn_submission *s, const vkattn_layer *layer, const char *fn)
{
    vkattn_context *ctx = s->ctx;
    vkattn_status status = report_dropped(s);
    if (status != VKATTN_OK) return status;
    if (!layer) return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "%s: layer is NULL", fn);
    if (layer->ctx != ctx)
        return vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "the layer belongs to a different context than the submission");
    if (s->state == VKA_SUBMISSION_RUNNING)
        return vka_fail(&ctx->dev, VKATTN_ERROR_BUSY, "the submission is running: wait for it before adding forwards");
    return VKATTN_OK;
}

/* Room for one more forward. */
static vkattn_status reserve_one(vkattn_submission *s)
{
    if (s->count < s->capacity) return VKATTN_OK;
    uint32_t capacity = s->capacity ? 2 * s->capacity : 8;
    vka_submitted_forward *bigger = vka_realloc(&s->ctx->dev.faults, s->forwards, capacity * sizeof *bigger);
    if (!bigger) return vka_fail(&s->ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory adding a forward");
    s->forwards = bigger;
    s->capacity = capacity;
    return VKATTN_OK;
}

/* The plan the forward will record, built and dropped: what the device cannot plan (a head dim
 * past the loop budget, a buffer past a limit) is refused at add, as vkattn_forward refuses it,
 * rather than at every submit, holding the forwards added before it. The record plans again: an
 * attn_cm self-test failing in between changes what the context plans. */
static vkattn_status check_plan(vkattn_context *ctx, const vka_problem *p)
{
    vka_plan plan = {0};
    vkattn_status status = vka_context_plan(ctx, p, &plan);
    vka_plan_free(&plan);
    return status;
}

/* vka_user.writes: a forward it holds (added, not yet run) writes a byte of `t`. */
static int writes(const vka_user *user, const vkattn_tensor *t)
{
    const vkattn_submission *s = VKA_CONTAINER_OF(user, vkattn_submission, user);
    const uint64_t memory = (uint64_t)t->buffer.buffer, begin = t->buffer.base, end = begin + t->buffer.size;
    for (uint32_t i = 0; i < s->count; i++) {
        const vka_submitted_forward *f = &s->forwards[i];
        const vka_args *a = f->cached ? &f->cached->args : &f->args;
        for (int k = 0; k < VKA_ARG_COUNT; k++) {
            const vka_arg_value *v = &a->v[k];
            if (v->given && vka_arg_get((vka_arg)k)->output && v->memory == memory && v->begin < end && begin < v->end)
                return 1;
        }
    }
    return 0;
}

/* Appends a checked forward (room was reserved) and marks what it uses. */
static void append(vkattn_submission *s, const vka_submitted_forward *f)
{
    s->forwards[s->count++] = *f;
    mark(&s->forwards[s->count - 1], s);
}

static vkattn_status submission_add(vkattn_submission *s, vkattn_layer *layer, const vkattn_forward_desc *d)
{
    vkattn_status status = add_prelude(s, layer, "vkattn_submission_add");
    if (status != VKATTN_OK) return status;
    vka_submitted_forward f = {.layer = layer};
    status = vka_forward_check(layer, d, &s->user, &f.args, &f.problem);
    if (status != VKATTN_OK) return status;
    if (f.problem.path == VKATTN_PATH_CPU)
        return vka_fail(&s->ctx->dev, VKATTN_ERROR_UNSUPPORTED, "the CPU path runs on the host: it cannot be submitted");
    if ((status = check_plan(s->ctx, &f.problem)) != VKATTN_OK) return status;
    if ((status = reserve_one(s)) != VKATTN_OK) return status;
    append(s, &f);
    return VKATTN_OK;
}

vkattn_status vkattn_submission_add(vkattn_submission *s, vkattn_layer *layer, const vkattn_forward_desc *d)
{
    if (!s) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(s->ctx, submission_add(s, layer, d));
}

static vkattn_status submission_add_cached(vkattn_submission *s, vkattn_layer *layer, vkattn_kv_cache *cache,
                                           const vkattn_cached_forward_desc *d)
{
    vkattn_context *ctx = s->ctx;
    vkattn_status status = add_prelude(s, layer, "vkattn_submission_add_cached");
    if (status != VKATTN_OK) return status;
    vka_cached_forward *c = vka_calloc(&ctx->dev.faults, 1, sizeof *c);
    if (!c) return vka_fail(&ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory adding a cached forward");
    if ((status = vka_cached_check(layer, cache, d, &s->user, VKA_CACHED_DEVICE_ONLY, c)) != VKATTN_OK) {
        free(c);
        return status;
    }
    /* Everything that can fail comes before the commit: an add that fails changes no cache. */
    status = check_plan(ctx, &c->problem);
    if (status == VKATTN_OK) status = reserve_one(s);
    if (status == VKATTN_OK) status = vka_cached_commit(c, d);
    if (status != VKATTN_OK) {
        free_cached(c);
        return status;
    }
    append(s, &(vka_submitted_forward){.layer = layer, .cached = c});
    return VKATTN_OK;
}

vkattn_status vkattn_submission_add_cached(vkattn_submission *s, vkattn_layer *layer, vkattn_kv_cache *cache,
                                           const vkattn_cached_forward_desc *d)
{
    if (!s) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(s->ctx, submission_add_cached(s, layer, cache, d));
}

static vkattn_status submission_submit(vkattn_submission *s)
{
    vkattn_context *ctx = s->ctx;
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status != VKATTN_OK) return status;
    if (s->state == VKA_SUBMISSION_RUNNING)
        return vka_fail(&ctx->dev, VKATTN_ERROR_BUSY, "the submission is already running: wait for it first");
    VKA_TRY(report_dropped(s));
    if (s->count == 0) return VKATTN_OK;
    VKA_TRY(vka_commands_begin(&ctx->dev, &s->commands));
    for (uint32_t i = 0; i < s->count; i++) {
        vka_submitted_forward *f = &s->forwards[i];
        /* Each forward may read what the one before wrote. */
        if (i > 0) vka_record_barrier(&ctx->dev, s->commands.cmd);
        if (f->cached) VKA_TRY(vka_cached_record(f->cached, s->commands.cmd, &f->stats));
        else VKA_TRY(vka_forward_record(f->layer, &f->args, &f->problem, s->commands.cmd, &f->stats));
    }
    VKA_TRY(vka_commands_submit(&ctx->dev, &s->commands));
    s->state = VKA_SUBMISSION_RUNNING;
    for (uint32_t i = 0; i < s->count; i++) s->forwards[i].layer->stats = s->forwards[i].stats;
fail:
    return status;
}

vkattn_status vkattn_submission_submit(vkattn_submission *s)
{
    if (!s) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(s->ctx, submission_submit(s));
}

/* A lost device runs nothing and is not asked again: the submission ends, with the loss. */
static vkattn_status ended_by_loss(vkattn_submission *s)
{
    vkattn_status status = vka_check_alive(&s->ctx->dev);
    if (status != VKATTN_OK) empty(s);
    return status;
}

static vkattn_status submission_wait(vkattn_submission *s)
{
    vkattn_status status = ended_by_loss(s);
    if (status != VKATTN_OK) return status;
    if (s->state != VKA_SUBMISSION_RUNNING) {
        if (s->count == 0) return VKATTN_OK;
        return vka_fail(&s->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "the submission holds %u forward%s not yet submitted: nothing to wait for", s->count,
                        s->count == 1 ? "" : "s");
    }
    status = vka_wait_fence(&s->ctx->dev, s->commands.fence, "a submission");
    /* Finished, or the device is gone and nothing will ever finish: either way nothing runs. Any
     * other failure of the wait says nothing about the work: it may still run. */
    if (status == VKATTN_OK || status == VKATTN_ERROR_DEVICE_LOST) empty(s);
    return status;
}

vkattn_status vkattn_submission_wait(vkattn_submission *s)
{
    if (!s) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(s->ctx, submission_wait(s));
}

static vkattn_status submission_poll(vkattn_submission *s)
{
    vka_device *dev = &s->ctx->dev;
    vkattn_status status = ended_by_loss(s);
    if (status != VKATTN_OK) return status;
    if (s->state != VKA_SUBMISSION_RUNNING) return submission_wait(s);
    VkResult r = dev->vk.vkGetFenceStatus(dev->device, s->commands.fence);
    /* As in vka_wait_fence: an injected failure only follows finished work. */
    if (r == VK_SUCCESS && vka_fault_vk(&dev->faults)) r = vka_injected_result(dev);
    if (r == VK_NOT_READY)
        return vka_fail(dev, VKATTN_ERROR_BUSY, "vkattn_submission_poll: the submission is still running");
    if (r != VK_SUCCESS) {
        status = vka_vk_fail(dev, r, "vkGetFenceStatus", __FILE__, __LINE__);
        /* Only a lost device ends the wait; any other failure leaves it running. */
        if (status != VKATTN_ERROR_DEVICE_LOST) return status;
    }
    empty(s);
    return status;
}

vkattn_status vkattn_submission_poll(vkattn_submission *s)
{
    if (!s) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(s->ctx, submission_poll(s));
}

/* Makes sure nothing of the submission still runs or waits to run, for the destruction of an
 * object it uses: waits for it if submitted, drops its forwards (and remembers that) if not,
 * taking its cached forwards back from their caches. Frees its layers, tensors and caches either
 * way. */
static void release(vka_user *user)
{
    vkattn_submission *s = VKA_CONTAINER_OF(user, vkattn_submission, user);
    if (s->state == VKA_SUBMISSION_RUNNING) {
        if (!s->ctx->dev.lost) vka_wait_fence(&s->ctx->dev, s->commands.fence, "a submission");
        empty(s);
        return;
    }
    if (s->count) s->dropped = 1;
    drop(s);
}

void vkattn_submission_destroy(vkattn_submission *s)
{
    if (!s) return;
    release(&s->user);
    vka_commands_destroy(&s->ctx->dev, &s->commands);
    vka_child_forget(&s->child);
    free(s->forwards);
    free(s);
}
