/* The public forward entry points: check the caller's tensors against the layer, then run the
 * device plan (vka_layer_run) or the CPU reference. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/layer.h"
#include "io/io.h"
#include "memory/tensor.h"
#include "reference/reference.h"

/* Accepted in place of a dtype: F32 or F16 (activations). */
#define VKA_ANY_FLOAT ((vkattn_dtype)-1)

/* Checks one tensor's context, dtype and shape; `names` spells the expected dims ("B, L, E"). */
static vkattn_status expect_tensor(vkattn_layer *layer, const vkattn_tensor *t, const char *what, vkattn_dtype dtype,
                                   uint32_t rank, const uint32_t *dims, const char *names)
{
    vkattn_context *ctx = layer->ctx;
    if (t->ctx != ctx)
        return vka_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "%s belongs to a different context than the layer", what);
    if (dtype == VKA_ANY_FLOAT && t->dtype != VKATTN_DTYPE_F32 && t->dtype != VKATTN_DTYPE_F16)
        return vka_fail(ctx, VKATTN_ERROR_DTYPE, "%s has dtype %s, expected f32 or f16", what, vkattn_dtype_name(t->dtype));
    if (dtype != VKA_ANY_FLOAT && t->dtype != dtype)
        return vka_fail(ctx, VKATTN_ERROR_DTYPE, "%s has dtype %s, expected %s", what, vkattn_dtype_name(t->dtype),
                        vkattn_dtype_name(dtype));
    int same = t->rank == rank;
    for (uint32_t i = 0; same && i < rank; i++) same = t->dims[i] == dims[i];
    if (!same) {
        char got[96], want[96];
        vka_format_dims(got, sizeof got, t->dims, t->rank);
        vka_format_dims(want, sizeof want, dims, rank);
        return vka_fail(ctx, VKATTN_ERROR_SHAPE, "%s has shape %s, expected (%s) = %s", what, got, names, want);
    }
    return VKATTN_OK;
}

static vkattn_status problem_from_tensors(vkattn_layer *layer, const vkattn_forward_desc *d, vka_problem *out)
{
    vkattn_context *ctx = layer->ctx;
    const vka_layer_config *c = &layer->cfg;
    vkattn_status status;
    if (!d) return vka_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "forward description is NULL");
    if (!d->query) return vka_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "query is NULL");
    if (!d->output) return vka_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "output is NULL");
    if ((unsigned)d->path > VKATTN_PATH_CPU)
        return vka_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "path %d is not a vkattn_path", (int)d->path);
    if (d->query->rank != 3)
        return vka_fail(ctx, VKATTN_ERROR_SHAPE, "query must have rank 3 (B, L, E), it has rank %u", d->query->rank);
    if (!d->key && d->value) return vka_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "value is given but key is NULL");

    vka_problem p = {0};
    p.cfg = *c;
    p.B = d->query->dims[0];
    p.L = d->query->dims[1];
    p.path = d->path;
    VKA_TRY(expect_tensor(layer, d->query, "query", VKA_ANY_FLOAT, 3, (uint32_t[]){p.B, p.L, c->E}, "B, L, E"));
    const vkattn_tensor *key = d->key ? d->key : d->query;
    const vkattn_tensor *value = d->value ? d->value : key;
    if (key->rank != 3)
        return vka_fail(ctx, VKATTN_ERROR_SHAPE, "key must have rank 3 (B, S, kdim), it has rank %u", key->rank);
    p.S = key->dims[1];
    VKA_TRY(expect_tensor(layer, key, d->key ? "key" : "query (as key)", VKA_ANY_FLOAT, 3,
                          (uint32_t[]){p.B, p.S, c->kdim}, "B, S, kdim"));
    VKA_TRY(expect_tensor(layer, value, d->value ? "value" : "key (as value)", VKA_ANY_FLOAT, 3,
                          (uint32_t[]){p.B, p.S, c->vdim}, "B, S, vdim"));
    p.self_attention = key == d->query && value == d->query && c->packed_in_proj;
    p.S_ext = p.S + c->extra_keys;
    VKA_TRY(expect_tensor(layer, d->output, "output", VKA_ANY_FLOAT, 3, (uint32_t[]){p.B, p.L, c->E}, "B, L, E"));
    if (d->output->dtype == VKATTN_DTYPE_F16 && !ctx->caps.storage_16bit)
        return vka_fail(ctx, VKATTN_ERROR_UNSUPPORTED, "an f16 output needs storageBuffer16BitAccess, which \"%s\" lacks",
                        ctx->info.name);
    p.query_dtype = d->query->dtype;
    p.key_dtype = key->dtype;
    p.value_dtype = value->dtype;
    p.output_dtype = d->output->dtype;
    if (d->output == d->query || d->output == key || d->output == value)
        return vka_fail(ctx, VKATTN_ERROR_INVALID_ARGUMENT, "output must not be the query, key or value tensor");

    p.causal = d->causal != 0;
    if (d->key_padding_mask) {
        VKA_TRY(expect_tensor(layer, d->key_padding_mask, "key_padding_mask", VKATTN_DTYPE_BOOL, 2,
                              (uint32_t[]){p.B, p.S}, "B, S"));
        p.key_padding_mask = 1;
    }
    if (d->valid_lens) {
        int per_query = d->valid_lens->rank == 2;
        VKA_TRY(expect_tensor(layer, d->valid_lens, "valid_lens", VKATTN_DTYPE_I32, per_query ? 2 : 1,
                              (uint32_t[]){p.B, p.L}, per_query ? "B, L" : "B"));
        p.valid_lens = per_query ? VKA_VALID_LENS_PER_QUERY : VKA_VALID_LENS_PER_BATCH;
    }
    if (d->attn_mask) {
        const vkattn_tensor *m = d->attn_mask;
        if (m->dtype != VKATTN_DTYPE_BOOL && m->dtype != VKATTN_DTYPE_F32)
            return vka_fail(ctx, VKATTN_ERROR_DTYPE, "attn_mask dtype must be bool or f32, not %s",
                            vkattn_dtype_name(m->dtype));
        p.attn_mask_per_head = m->rank == 3;
        if (p.attn_mask_per_head)
            VKA_TRY(expect_tensor(layer, m, "attn_mask", m->dtype, 3, (uint32_t[]){p.B * c->H, p.L, p.S},
                                  "B*H, L, S"));
        else
            VKA_TRY(expect_tensor(layer, m, "attn_mask", m->dtype, 2, (uint32_t[]){p.L, p.S}, "L, S"));
        p.attn_mask = m->dtype == VKATTN_DTYPE_BOOL ? VKA_ATTN_MASK_BOOL : VKA_ATTN_MASK_FLOAT;
        if (m->values == VKA_VALUES_HAS_NAN_OR_POSINF)
            return vka_fail(ctx, VKATTN_ERROR_NON_FINITE,
                            "attn_mask element %zu is NaN or +inf; float masks may hold finite values and -inf only",
                            m->first_bad);
    }
    if (d->attn_weights) {
        if (d->average_weights)
            VKA_TRY(expect_tensor(layer, d->attn_weights, "attn_weights (averaged)", VKATTN_DTYPE_F32, 3,
                                  (uint32_t[]){p.B, p.L, p.S_ext}, "B, L, S'"));
        else
            VKA_TRY(expect_tensor(layer, d->attn_weights, "attn_weights", VKATTN_DTYPE_F32, 4,
                                  (uint32_t[]){p.B, c->H, p.L, p.S_ext}, "B, H, L, S'"));
        p.weights = d->average_weights ? VKA_WEIGHTS_AVERAGED : VKA_WEIGHTS_PER_HEAD;
    }
    if (d->lse) {
        VKA_TRY(expect_tensor(layer, d->lse, "lse", VKATTN_DTYPE_F32, 3, (uint32_t[]){p.B, c->H, p.L}, "B, H, L"));
        p.lse = 1;
    }
    VKA_TRY(vka_problem_check(&p, &ctx->error));
    *out = p;
    return VKATTN_OK;
fail:
    return status;
}

/* Reads a device tensor into a new host allocation (NULL tensor -> NULL); F16 becomes F32. */
static vkattn_status read_to_host(vkattn_layer *layer, const vkattn_tensor *t, void **out)
{
    *out = NULL;
    if (!t) return VKATTN_OK;
    int half = t->dtype == VKATTN_DTYPE_F16;
    void *host = vka_malloc(&layer->ctx->faults, half ? t->elems * sizeof(float) : t->bytes);
    if (!host) return vka_fail(layer->ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory copying a tensor to the host");
    vkattn_status status = vka_buffer_read(layer->ctx, &t->buffer, 0, host, t->bytes);
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
static vkattn_status write_from_host(vkattn_layer *layer, vkattn_tensor *t, float *data)
{
    if (t->dtype == VKATTN_DTYPE_F16) {
        uint16_t *half = (uint16_t *)data; /* narrowing front to back never overtakes the reads */
        for (size_t i = 0; i < t->elems; i++) half[i] = vka_f32_to_f16(data[i]);
    }
    return vka_buffer_write(layer->ctx, &t->buffer, 0, data, t->bytes);
}

/* The CPU path on device tensors: copy in, run the reference, copy out. */
static vkattn_status run_cpu_on_tensors(vkattn_layer *layer, const vka_problem *p, const vkattn_forward_desc *d)
{
    vkattn_status status;
    void *q = NULL, *k = NULL, *v = NULL, *kpm = NULL, *lens = NULL, *mask = NULL;
    float *out = NULL, *weights = NULL, *lse = NULL;
    VKA_TRY(read_to_host(layer, d->query, &q));
    VKA_TRY(read_to_host(layer, d->key, &k));
    VKA_TRY(read_to_host(layer, d->value, &v));
    VKA_TRY(read_to_host(layer, d->key_padding_mask, &kpm));
    VKA_TRY(read_to_host(layer, d->valid_lens, &lens));
    VKA_TRY(read_to_host(layer, d->attn_mask, &mask));
    out = vka_malloc(&layer->ctx->faults, d->output->elems * sizeof(float));
    weights = d->attn_weights ? vka_malloc(&layer->ctx->faults, d->attn_weights->bytes) : NULL;
    lse = d->lse ? vka_malloc(&layer->ctx->faults, d->lse->bytes) : NULL;
    if (!out || (d->attn_weights && !weights) || (d->lse && !lse)) {
        status = vka_fail(layer->ctx, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the CPU path's outputs");
        goto fail;
    }
    vkattn_host_forward_desc h = {
        .batch = p->B, .query_len = p->L, .key_len = p->S,
        .query = q, .key = k, .value = v,
        .causal = p->causal, .key_padding_mask = kpm,
        .valid_lens = lens, .valid_lens_per_query = p->valid_lens == VKA_VALID_LENS_PER_QUERY,
        .attn_mask = mask, .attn_mask_dtype = p->attn_mask == VKA_ATTN_MASK_BOOL ? VKATTN_DTYPE_BOOL : VKATTN_DTYPE_F32,
        .attn_mask_per_head = p->attn_mask_per_head,
        .output = out, .attn_weights = weights, .average_weights = p->weights == VKA_WEIGHTS_AVERAGED, .lse = lse,
    };
    VKA_TRY(vka_reference_run(p, &layer->host, &h, layer->head_active, &layer->ctx->error));
    VKA_TRY(write_from_host(layer, d->output, out));
    d->output->values = VKA_VALUES_UNKNOWN;
    if (weights) {
        VKA_TRY(vka_buffer_write(layer->ctx, &d->attn_weights->buffer, 0, weights, d->attn_weights->bytes));
        d->attn_weights->values = VKA_VALUES_UNKNOWN;
    }
    if (lse) VKA_TRY(vka_buffer_write(layer->ctx, &d->lse->buffer, 0, lse, d->lse->bytes));
fail:
    free(q), free(k), free(v), free(kpm), free(lens), free(mask), free(out), free(weights), free(lse);
    return status;
}

vkattn_status vkattn_forward(vkattn_layer *layer, const vkattn_forward_desc *d)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = vka_check_alive(ctx);
    if (status != VKATTN_OK) return status;
    vka_problem p;
    status = problem_from_tensors(layer, d, &p);
    if (status != VKATTN_OK) return status;
    if (p.path == VKATTN_PATH_CPU) return run_cpu_on_tensors(layer, &p, d);

    const vkattn_tensor *key = d->key ? d->key : d->query;
    const vkattn_tensor *value = d->value ? d->value : key;
    vka_buffer *caller[VKA_ROLE_COUNT] = {0};
    /* The tensors are the caller's; only lazily created texel views of them are added. */
    caller[VKA_ROLE_QUERY] = (vka_buffer *)&d->query->buffer;
    caller[VKA_ROLE_KEY] = (vka_buffer *)&key->buffer;
    caller[VKA_ROLE_VALUE] = (vka_buffer *)&value->buffer;
    caller[VKA_ROLE_OUTPUT] = &d->output->buffer;
    if (d->key_padding_mask) caller[VKA_ROLE_KEY_PADDING_MASK] = (vka_buffer *)&d->key_padding_mask->buffer;
    if (d->valid_lens) caller[VKA_ROLE_VALID_LENS] = (vka_buffer *)&d->valid_lens->buffer;
    if (d->attn_mask) caller[VKA_ROLE_ATTN_MASK] = (vka_buffer *)&d->attn_mask->buffer;
    if (d->attn_weights) caller[VKA_ROLE_WEIGHTS] = &d->attn_weights->buffer;
    if (d->lse) caller[VKA_ROLE_LSE] = &d->lse->buffer;
    status = vka_layer_run(layer, &p, caller);
    d->output->values = VKA_VALUES_UNKNOWN;
    if (d->attn_weights) d->attn_weights->values = VKA_VALUES_UNKNOWN;
    if (d->lse) d->lse->values = VKA_VALUES_UNKNOWN;
    return status;
}

/* The layer's device tensor for one host array, re-created only when its shape changes. */
static vkattn_status host_tensor(vkattn_layer *layer, vka_host_slot slot, vkattn_dtype dtype, uint32_t rank,
                                 const uint32_t *dims, vkattn_tensor **out)
{
    vkattn_tensor *t = layer->host_io[slot];
    int same = t && t->dtype == dtype && t->rank == rank && memcmp(t->dims, dims, rank * sizeof *dims) == 0;
    if (!same) {
        vkattn_tensor_destroy(t);
        layer->host_io[slot] = NULL;
        vkattn_status status = vka_tensor_create(layer->ctx, dtype, rank, dims, &layer->host_io[slot]);
        if (status != VKATTN_OK) return status;
    }
    *out = layer->host_io[slot];
    return VKATTN_OK;
}

static vkattn_status upload_host(vkattn_layer *layer, vka_host_slot slot, vkattn_dtype dtype, uint32_t rank,
                                 const uint32_t *dims, const void *data, const vkattn_tensor **out)
{
    vkattn_tensor *t;
    vkattn_status status = host_tensor(layer, slot, dtype, rank, dims, &t);
    if (status == VKATTN_OK) status = vkattn_tensor_write(t, data, t->bytes);
    if (status == VKATTN_OK) *out = t;
    return status;
}

vkattn_status vkattn_forward_host(vkattn_layer *layer, const vkattn_host_forward_desc *d)
{
    if (!layer) return VKATTN_ERROR_INVALID_ARGUMENT;
    vkattn_context *ctx = layer->ctx;
    vkattn_status status = vka_check_alive(ctx);
    if (status != VKATTN_OK) return status;
    vka_problem p;
    status = vka_problem_from_host(&layer->cfg, d, &p, &ctx->error);
    if (status != VKATTN_OK) return status;
    if (p.path == VKATTN_PATH_CPU) return vka_reference_run(&p, &layer->host, d, layer->head_active, &ctx->error);

    const vka_layer_config *c = &layer->cfg;
    vkattn_forward_desc f = {.causal = d->causal, .average_weights = d->average_weights, .path = d->path};
    VKA_TRY(upload_host(layer, VKA_HOST_QUERY, VKATTN_DTYPE_F32, 3, (uint32_t[]){p.B, p.L, c->E}, d->query, &f.query));
    if (d->key && !p.self_attention) {
        VKA_TRY(upload_host(layer, VKA_HOST_KEY, VKATTN_DTYPE_F32, 3, (uint32_t[]){p.B, p.S, c->kdim}, d->key, &f.key));
        if (d->value)
            VKA_TRY(upload_host(layer, VKA_HOST_VALUE, VKATTN_DTYPE_F32, 3, (uint32_t[]){p.B, p.S, c->vdim}, d->value,
                                &f.value));
    }
    if (d->key_padding_mask)
        VKA_TRY(upload_host(layer, VKA_HOST_KEY_PADDING_MASK, VKATTN_DTYPE_BOOL, 2, (uint32_t[]){p.B, p.S},
                            d->key_padding_mask, &f.key_padding_mask));
    if (d->valid_lens)
        VKA_TRY(upload_host(layer, VKA_HOST_VALID_LENS, VKATTN_DTYPE_I32, d->valid_lens_per_query ? 2 : 1,
                            (uint32_t[]){p.B, p.L}, d->valid_lens, &f.valid_lens));
    if (d->attn_mask) {
        vkattn_dtype dtype = p.attn_mask == VKA_ATTN_MASK_BOOL ? VKATTN_DTYPE_BOOL : VKATTN_DTYPE_F32;
        if (p.attn_mask_per_head)
            VKA_TRY(upload_host(layer, VKA_HOST_ATTN_MASK, dtype, 3, (uint32_t[]){p.B * c->H, p.L, p.S}, d->attn_mask,
                                &f.attn_mask));
        else
            VKA_TRY(upload_host(layer, VKA_HOST_ATTN_MASK, dtype, 2, (uint32_t[]){p.L, p.S}, d->attn_mask, &f.attn_mask));
    }
    vkattn_tensor *output, *weights = NULL, *lse = NULL;
    VKA_TRY(host_tensor(layer, VKA_HOST_OUTPUT, VKATTN_DTYPE_F32, 3, (uint32_t[]){p.B, p.L, c->E}, &output));
    f.output = output;
    if (d->lse) {
        VKA_TRY(host_tensor(layer, VKA_HOST_LSE, VKATTN_DTYPE_F32, 3, (uint32_t[]){p.B, c->H, p.L}, &lse));
        f.lse = lse;
    }
    if (d->attn_weights) {
        if (d->average_weights)
            VKA_TRY(host_tensor(layer, VKA_HOST_WEIGHTS, VKATTN_DTYPE_F32, 3, (uint32_t[]){p.B, p.L, p.S_ext}, &weights));
        else
            VKA_TRY(host_tensor(layer, VKA_HOST_WEIGHTS, VKATTN_DTYPE_F32, 4, (uint32_t[]){p.B, c->H, p.L, p.S_ext},
                                &weights));
        f.attn_weights = weights;
    }
    VKA_TRY(vkattn_forward(layer, &f));
    VKA_TRY(vka_buffer_read(ctx, &output->buffer, 0, d->output, output->bytes));
    if (weights) VKA_TRY(vka_buffer_read(ctx, &weights->buffer, 0, d->attn_weights, weights->bytes));
    if (lse) VKA_TRY(vka_buffer_read(ctx, &lse->buffer, 0, d->lse, lse->bytes));
fail:
    return status;
}
