/* The public forward entry points: describe what the caller gave (args.c), check it once against
 * the argument table and the layer, then run the device plan (vka_layer_run), record it into the
 * application's command buffer (vka_layer_record) or run the CPU reference. The host entry point
 * uploads its arrays into the layer's device tensors, one per argument, and runs the same plan. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/forward.h"
#include "api/layer.h"
#include "plan/trace.h"
#include "vkattn_vulkan.h"
#include "format/half.h"
#include "api/tensor.h"
#include "reference/reference.h"

/* Reads a device tensor into a new host allocation; F16 becomes F32. */
static vkattn_status read_to_host(vkattn_layer *layer, const vkattn_tensor *t, void **out)
{
    int half = t->dtype == VKATTN_DTYPE_F16;
    void *host = vka_malloc(&layer->ctx->dev.faults, half ? t->elems * sizeof(float) : t->bytes);
    if (!host) return vka_fail(&layer->ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory copying a tensor to the host");
    vkattn_status status = vka_tensor_read(t, 0, host, t->bytes);
    if (status != VKATTN_OK) {
        free(host);
        return status;
    }
    /* Widen in place from the back: element i's float lands at or after its half. */
    for (size_t i = half ? t->elems : 0; i-- > 0;) ((float *)host)[i] = vka_f16_to_f32(((uint16_t *)host)[i]);
    *out = host;
    return VKATTN_OK;
}

/* Writes fp32 host data into a tensor of dtype F32 or F16. */
static vkattn_status write_from_host(vkattn_tensor *t, float *data)
{
    if (t->dtype == VKATTN_DTYPE_F16) {
        uint16_t *half = (uint16_t *)data; /* narrowing front to back never overtakes the reads */
        for (size_t i = 0; i < t->elems; i++) half[i] = vka_f32_to_f16(data[i]);
    }
    return vka_tensor_write(t, 0, data, t->bytes);
}

/* A float attn_mask on the device is inspected on its first use after a write: NaN or +inf in it
 * would make its rows NaN, so it is refused like a host mask. Not one that a forward the asking
 * submission holds writes: what it holds now is not what this forward will read. */
static vkattn_status check_device_mask(vkattn_layer *layer, const vkattn_tensor *mask, const vka_user *owner)
{
    if (!mask || mask->dtype != VKATTN_DTYPE_F32 || mask->mask_checked) return VKATTN_OK;
    if (owner && owner->writes(owner, mask)) return VKATTN_OK;
    void *host = NULL;
    vkattn_status status = read_to_host(layer, mask, &host);
    if (status == VKATTN_OK) status = vka_check_float_mask(host, mask->elems, &layer->ctx->dev.error);
    if (status == VKATTN_OK) ((vkattn_tensor *)mask)->mask_checked = 1;
    free(host);
    return status;
}

/* A device tensor as an argument: its shape, and its bytes (to tell arguments that share them). */
static void take_tensor(vka_arg_value *v, const vkattn_tensor *t)
{
    if (!t) return;
    *v = (vka_arg_value){.given = 1, .dtype = t->dtype, .rank = t->rank, .tensor = t,
                         .memory = (uint64_t)t->buffer.buffer, .begin = t->buffer.base,
                         .end = t->buffer.base + t->buffer.size};
    memcpy(v->dims, t->dims, sizeof v->dims);
}

/* Describes a device forward's tensors (no checks beyond what describing needs). */
static vkattn_status args_from_tensors(const vkattn_forward_desc *d, vka_args *out, vkattn_error *error)
{
    if (!d) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "forward description is NULL");
    if (!d->query) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "query is NULL");
    if (!d->output) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "output is NULL");
    if (!d->key && d->value) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "value is given but key is NULL");
    vkattn_status status = vka_check_path(d->path, error);
    if (status != VKATTN_OK) return status;
    vka_args a;
    memset(&a, 0, sizeof a);
    const vkattn_tensor *given[VKA_ARG_COUNT] = {
        [VKA_ARG_QUERY] = d->query, [VKA_ARG_KEY] = d->key, [VKA_ARG_VALUE] = d->value ? d->value : d->key,
        [VKA_ARG_KEY_PADDING_MASK] = d->key_padding_mask, [VKA_ARG_VALID_LENS] = d->valid_lens,
        [VKA_ARG_ATTN_MASK] = d->attn_mask, [VKA_ARG_OUTPUT] = d->output, [VKA_ARG_WEIGHTS] = d->attn_weights,
        [VKA_ARG_LSE] = d->lse,
    };
    for (int i = 0; i < VKA_ARG_COUNT; i++) take_tensor(&a.v[i], given[i]);
    a.key_is_query = !d->key || (d->key == d->query && given[VKA_ARG_VALUE] == d->query);
    if (a.key_is_query) a.v[VKA_ARG_KEY] = a.v[VKA_ARG_VALUE] = a.v[VKA_ARG_QUERY];
    a.weights_averaged = d->average_weights != 0;
    a.causal = d->causal != 0;
    a.path = d->path;
    a.rope_offset = d->rope_offset;
    *out = a;
    return VKATTN_OK;
}

/* What a forward's tensors must be whatever their contents and use (the explain calls check these
 * alone): the layer's context's, and an f16 output only where the device stores 16-bit values. */
vkattn_status vka_forward_check_tensor_kinds(const vkattn_layer *layer, const vka_args *a)
{
    vka_device *dev = &layer->ctx->dev;
    for (int i = 0; i < VKA_ARG_COUNT; i++)
        if (a->v[i].given && a->v[i].tensor->ctx != layer->ctx)
            return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT, "%s belongs to a different context than the layer",
                            vka_arg_get((vka_arg)i)->name);
    if (a->v[VKA_ARG_OUTPUT].dtype == VKATTN_DTYPE_F16 && !dev->info.storage_16bit)
        return vka_fail(dev, VKATTN_ERROR_UNSUPPORTED, "an f16 output needs storageBuffer16BitAccess, which \"%s\" lacks",
                        dev->info.name);
    return VKATTN_OK;
}

vkattn_status vka_forward_check_tensors(vkattn_layer *layer, const vka_args *a, const vka_user *owner)
{
    vkattn_status status = vka_forward_check_tensor_kinds(layer, a);
    if (status != VKATTN_OK) return status;
    for (int i = 0; i < VKA_ARG_COUNT; i++) {
        const vka_arg_value *v = &a->v[i];
        if (v->given && v->tensor->user && v->tensor->user != owner)
            return vka_tensor_check_free(v->tensor, vka_arg_get((vka_arg)i)->name);
    }
    return check_device_mask(layer, a->v[VKA_ARG_ATTN_MASK].tensor, owner);
}

/* The CPU path reads the layer's host weights, which a layer keeps only when asked. */
static vkattn_status no_host_weights(vkattn_layer *layer)
{
    return vka_fail(&layer->ctx->dev, VKATTN_ERROR_UNSUPPORTED,
                    "the CPU path reads the layer's weights on the host, and this layer keeps none: create it with "
                    "host_weights VKATTN_HOST_WEIGHTS_COPY (or _BORROW), or run vkattn_reference_forward");
}

/* The CPU path on device tensors: copy the inputs in, run the reference, copy the outputs out. */
static vkattn_status run_cpu_on_tensors(vkattn_layer *layer, const vka_problem *p, const vka_args *a)
{
    if (!vka_layer_has_host_weights(layer)) return no_host_weights(layer);
    vkattn_status status = VKATTN_OK;
    void *held[VKA_ARG_COUNT] = {0};
    vka_host_arrays arrays = {{0}};
    for (int i = 0; i < VKA_ARG_COUNT && status == VKATTN_OK; i++) {
        const vka_arg_value *v = &a->v[i];
        if (!v->given) continue;
        if (vka_arg_get((vka_arg)i)->output) {
            if (!(held[i] = vka_malloc(&layer->ctx->dev.faults, v->tensor->elems * sizeof(float))))
                status = vka_fail(&layer->ctx->dev, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the CPU path's outputs");
            arrays.out[i] = held[i];
        } else if (i > VKA_ARG_QUERY && v->tensor == a->v[VKA_ARG_QUERY].tensor) {
            arrays.in[i] = arrays.in[VKA_ARG_QUERY]; /* self-attention: key and value are the query */
        } else if (i == VKA_ARG_VALUE && v->tensor == a->v[VKA_ARG_KEY].tensor) {
            arrays.in[i] = arrays.in[VKA_ARG_KEY];
        } else {
            status = read_to_host(layer, v->tensor, &held[i]);
            arrays.in[i] = held[i];
        }
    }
    if (status == VKATTN_OK)
        status = vka_reference_run(p, &layer->host, layer->alibi_slopes, &arrays, layer->head_active, &layer->ctx->dev.error);
    for (int i = 0; i < VKA_ARG_COUNT && status == VKATTN_OK; i++)
        if (arrays.out[i]) status = write_from_host((vkattn_tensor *)a->v[i].tensor, arrays.out[i]);
    for (int i = 0; i < VKA_ARG_COUNT; i++) free(held[i]);
    return status;
}

vkattn_status vka_forward_check(vkattn_layer *layer, const vkattn_forward_desc *d, const vka_user *owner,
                                vka_args *a, vka_problem *p)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status != VKATTN_OK) return status;
    if (layer->user)
        return vka_fail(&ctx->dev, VKATTN_ERROR_BUSY, layer->user == owner
                            ? "the layer already has a forward in this submission (its workspace holds one)"
                            : "the layer is in a submission that has not finished (vkattn_submission_wait or _poll first)");
    status = args_from_tensors(d, a, &ctx->dev.error);
    if (status == VKATTN_OK) status = vka_forward_check_tensors(layer, a, owner);
    if (status == VKATTN_OK) status = vka_args_check(&layer->cfg, a, p, &ctx->dev.error);
    return status;
}

/* Every argument's buffer, bound to its role. The tensors are the caller's; only lazily created
 * texel views of them are added. */
static void caller_buffers(const vka_args *a, vka_buffer *caller[VKA_ROLE_COUNT])
{
    for (int r = 0; r < VKA_ROLE_COUNT; r++) caller[r] = NULL;
    for (int i = 0; i < VKA_ARG_COUNT; i++)
        if (a->v[i].given) caller[vka_arg_get((vka_arg)i)->role] = (vka_buffer *)&a->v[i].tensor->buffer;
}

/* Outputs are rewritten by the device: a float mask read from one must be inspected again. */
static void outputs_written(const vka_args *a)
{
    for (int i = 0; i < VKA_ARG_COUNT; i++)
        if (a->v[i].given && vka_arg_get((vka_arg)i)->output) ((vkattn_tensor *)a->v[i].tensor)->mask_checked = 0;
}

vkattn_status vka_forward_record(vkattn_layer *layer, const vka_args *a, const vka_problem *p, VkCommandBuffer cmd,
                                 vkattn_forward_stats *stats)
{
    vka_buffer *caller[VKA_ROLE_COUNT];
    caller_buffers(a, caller);
    vkattn_status status = vka_layer_record(layer, p, caller, cmd, stats);
    outputs_written(a);
    return status;
}

/* Runs a checked problem on the device with the arguments' buffers. */
static vkattn_status run_device(vkattn_layer *layer, const vka_problem *p, const vka_args *a)
{
    vka_buffer *caller[VKA_ROLE_COUNT];
    caller_buffers(a, caller);
    vkattn_status status = vka_layer_run(layer, p, caller);
    outputs_written(a);
    return status;
}

static vkattn_status forward(vkattn_layer *layer, const vkattn_forward_desc *d)
{
    vka_args a;
    vka_problem p;
    vkattn_status status = vka_forward_check(layer, d, NULL, &a, &p);
    if (status != VKATTN_OK) return status;
    return p.path == VKATTN_PATH_CPU ? run_cpu_on_tensors(layer, &p, &a) : run_device(layer, &p, &a);
}

vkattn_status vkattn_forward(vkattn_layer *layer, const vkattn_forward_desc *d)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, forward(layer, d));
}

static vkattn_status forward_record(vkattn_layer *layer, const vkattn_forward_desc *d, VkCommandBuffer cmd)
{
    vka_args a;
    vka_problem p;
    vkattn_status status = vka_forward_check(layer, d, NULL, &a, &p);
    if (status != VKATTN_OK) return status;
    if (!cmd) return vka_fail(&layer->ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "vkattn_forward_record: cmd is VK_NULL_HANDLE");
    if (p.path == VKATTN_PATH_CPU)
        return vka_fail(&layer->ctx->dev, VKATTN_ERROR_UNSUPPORTED, "the CPU path runs on the host: it cannot be recorded");
    vkattn_forward_stats stats;
    status = vka_forward_record(layer, &a, &p, cmd, &stats);
    if (status == VKATTN_OK) layer->stats = stats;
    return status;
}

vkattn_status vkattn_forward_record(vkattn_layer *layer, const vkattn_forward_desc *d, VkCommandBuffer cmd)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, forward_record(layer, d, cmd));
}

vkattn_status vka_layer_host_tensor(vkattn_layer *layer, vka_arg arg, const vka_arg_value *v, vkattn_tensor **out)
{
    vkattn_tensor *t = layer->host_io[arg];
    int same = t && t->dtype == v->dtype && t->rank == v->rank && !memcmp(t->dims, v->dims, v->rank * sizeof *v->dims);
    if (!same) {
        vkattn_tensor_destroy(t);
        layer->host_io[arg] = NULL;
        vkattn_status status = vka_tensor_create(layer->ctx, v->dtype, v->rank, v->dims, &layer->host_io[arg]);
        if (status != VKATTN_OK) return status;
    }
    *out = layer->host_io[arg];
    return VKATTN_OK;
}

/* kv_cache_dtype asks the CPU path to round k and v as a cache would, positions to place the tokens
 * as a cached forward's tree does; a device forward has no cache to round through and no
 * positions of its own. */
static vkattn_status check_cpu_only(vka_device *dev, const vka_problem *p)
{
    if (p->path == VKATTN_PATH_CPU) return VKATTN_OK;
    if (p->kv_round != VKATTN_DTYPE_F32)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "kv_cache_dtype (%s) rounds k and v as a KV cache stores them on the CPU path only: a device "
                        "forward takes 0 (vkattn_forward_cached rounds through its cache)",
                        vkattn_dtype_name(p->kv_round));
    if (p->positions)
        return vka_fail(dev, VKATTN_ERROR_INVALID_ARGUMENT,
                        "positions place the tokens on the CPU path only: a device forward takes NULL "
                        "(vkattn_forward_cached places a tree's tokens with new_token_depths)");
    return VKATTN_OK;
}

/* What a host forward and its explanation share: the arrays described and checked against the
 * table and the layer. */
static vkattn_status host_prelude(vkattn_layer *layer, const vkattn_host_forward_desc *d, vka_args *a, vka_problem *p)
{
    vka_device *dev = &layer->ctx->dev;
    vkattn_status status = vka_args_from_host(&layer->cfg, d, a, &dev->error);
    if (status == VKATTN_OK) status = vka_args_check(&layer->cfg, a, p, &dev->error);
    if (status == VKATTN_OK) status = check_cpu_only(dev, p);
    return status;
}

/* Whether two host arguments are one array: the same pointer, dtype and shape (a query of L rows
 * and a key of S > L rows at one pointer are two arrays: the key's tensor holds more). */
static int same_host_array(const vka_arg_value *x, const vka_arg_value *y)
{
    return x->host == y->host && x->dtype == y->dtype && x->rank == y->rank &&
           memcmp(x->dims, y->dims, x->rank * sizeof x->dims[0]) == 0;
}

static vkattn_status forward_host(vkattn_layer *layer, const vkattn_host_forward_desc *d)
{
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = vka_check_alive(&ctx->dev);
    if (status == VKATTN_OK && layer->user)
        status = vka_fail(&ctx->dev, VKATTN_ERROR_BUSY,
                          "the layer is in a submission that has not finished (vkattn_submission_wait or _poll first)");
    vka_args a;
    vka_problem p;
    if (status == VKATTN_OK) status = host_prelude(layer, d, &a, &p);
    if (status != VKATTN_OK) return status;
    if (p.path == VKATTN_PATH_CPU) {
        if (!vka_layer_has_host_weights(layer)) return no_host_weights(layer);
        vka_host_arrays arrays;
        vka_host_arrays_of(&a, &arrays);
        return vka_reference_run(&p, &layer->host, layer->alibi_slopes, &arrays, layer->head_active, &ctx->dev.error);
    }
    /* Every given argument through the layer's device tensor for it; an input that is an earlier
     * one's array (self-attention's key and value, a value that is the key, each of the same shape)
     * shares its tensor. */
    vka_args dev = a;
    vkattn_tensor *t[VKA_ARG_COUNT] = {0};
    for (int i = 0; i < VKA_ARG_COUNT; i++) {
        const vka_arg_value *v = &a.v[i];
        int output = vka_arg_get((vka_arg)i)->output, j = 0;
        if (!v->given) continue;
        while (j < i && (output || !a.v[j].given || !same_host_array(&a.v[j], v))) j++;
        if (j < i) {
            t[i] = t[j];
        } else {
            VKA_TRY(vka_layer_host_tensor(layer, (vka_arg)i, v, &t[i]));
            if (!output) VKA_TRY(vka_tensor_write(t[i], 0, v->host, t[i]->bytes));
        }
        dev.v[i].tensor = t[i];
    }
    VKA_TRY(run_device(layer, &p, &dev));
    for (int i = 0; i < VKA_ARG_COUNT; i++)
        if (t[i] && vka_arg_get((vka_arg)i)->output)
            VKA_TRY(vka_tensor_read(t[i], 0, (void *)a.v[i].host, t[i]->bytes));
fail:
    return status;
}

vkattn_status vkattn_forward_host(vkattn_layer *layer, const vkattn_host_forward_desc *d)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, forward_host(layer, d));
}

/* The plan of a problem as text (both explain calls): `status` is its description's and check's. */
static vkattn_status explain_problem(vkattn_context *ctx, vkattn_status status, const vka_problem *p, char *text,
                                     size_t capacity, size_t *length)
{
    if (status == VKATTN_OK && !text && capacity)
        status = vka_fail(&ctx->dev, VKATTN_ERROR_INVALID_ARGUMENT, "text is NULL but capacity is not 0");
    if (status != VKATTN_OK) return status;
    size_t n;
    if (p->path == VKATTN_PATH_CPU) {
        n = (size_t)snprintf(text, capacity, "plan: the CPU reference path (plain loops, double accumulation)\n");
    } else {
        /* The plan the forward would build, into a plan of its own: the layer's stays as it is. */
        vka_plan plan = {0};
        status = vka_context_plan(ctx, p, &plan);
        n = status == VKATTN_OK ? vka_plan_describe(p, &plan, ctx->loop_budget, text, capacity) : 0;
        vka_plan_free(&plan);
        if (status != VKATTN_OK) return status;
    }
    if (length) *length = n;
    return VKATTN_OK;
}

static vkattn_status forward_explain(vkattn_layer *layer, const vkattn_host_forward_desc *d, char *text,
                                     size_t capacity, size_t *length)
{
    vka_args a;
    vka_problem p;
    return explain_problem(layer->ctx, host_prelude(layer, d, &a, &p), &p, text, capacity, length);
}

vkattn_status vkattn_forward_explain(vkattn_layer *layer, const vkattn_host_forward_desc *d, char *text,
                                     size_t capacity, size_t *length)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, forward_explain(layer, d, text, capacity, length));
}

/* A device forward's plan: its tensors described and checked as vkattn_forward does, but for what
 * needs their contents or their use (a float mask's values, a submission holding them): explaining
 * reads and writes nothing. */
static vkattn_status forward_explain_tensors(vkattn_layer *layer, const vkattn_forward_desc *d, char *text,
                                             size_t capacity, size_t *length)
{
    vka_args a;
    vka_problem p;
    vkattn_status status = args_from_tensors(d, &a, &layer->ctx->dev.error);
    if (status == VKATTN_OK) status = vka_forward_check_tensor_kinds(layer, &a);
    if (status == VKATTN_OK) status = vka_args_check(&layer->cfg, &a, &p, &layer->ctx->dev.error);
    return explain_problem(layer->ctx, status, &p, text, capacity, length);
}

vkattn_status vkattn_forward_explain_tensors(vkattn_layer *layer, const vkattn_forward_desc *d, char *text,
                                             size_t capacity, size_t *length)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    VKA_GUARDED(layer->ctx, forward_explain_tensors(layer, d, text, capacity, length));
}
