/* The forward's arguments, one row each, and the one check every entry point goes through. */
#include "problem/args.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/checked.h"
#include "common/error.h"
#include "format/quant.h"

#define F32 (1u << VKATTN_DTYPE_F32)
#define F16 (1u << VKATTN_DTYPE_F16)
#define BOOL (1u << VKATTN_DTYPE_BOOL)
#define I32 (1u << VKATTN_DTYPE_I32)

static const vka_arg_row rows[VKA_ARG_COUNT] = {
    [VKA_ARG_QUERY] = {"query", VKA_ROLE_QUERY, F32 | F16, 0, 1, {{3, {VKA_DIM_B, VKA_DIM_L, VKA_DIM_E}, "B, L, E"}}},
    [VKA_ARG_KEY] = {"key", VKA_ROLE_KEY, F32 | F16, 0, 1, {{3, {VKA_DIM_B, VKA_DIM_S, VKA_DIM_KDIM}, "B, S, kdim"}}},
    [VKA_ARG_VALUE] = {"value", VKA_ROLE_VALUE, F32 | F16, 0, 1,
                       {{3, {VKA_DIM_B, VKA_DIM_S, VKA_DIM_VDIM}, "B, S, vdim"}}},
    [VKA_ARG_KEY_PADDING_MASK] = {"key_padding_mask", VKA_ROLE_KEY_PADDING_MASK, BOOL, 0, 1,
                                  {{2, {VKA_DIM_B, VKA_DIM_S}, "B, S"}}},
    /* valid lengths per batch item, or per query */
    [VKA_ARG_VALID_LENS] = {"valid_lens", VKA_ROLE_VALID_LENS, I32, 0, 2,
                            {{1, {VKA_DIM_B}, "B"}, {2, {VKA_DIM_B, VKA_DIM_L}, "B, L"}}},
    /* one mask for every batch item and head, or one per (b, h) indexed b*H + h */
    [VKA_ARG_ATTN_MASK] = {"attn_mask", VKA_ROLE_ATTN_MASK, BOOL | F32, 0, 2,
                           {{2, {VKA_DIM_L, VKA_DIM_S}, "L, S"}, {3, {VKA_DIM_BH, VKA_DIM_L, VKA_DIM_S}, "B*H, L, S"}}},
    [VKA_ARG_OUTPUT] = {"output", VKA_ROLE_OUTPUT, F32 | F16, 1, 1, {{3, {VKA_DIM_B, VKA_DIM_L, VKA_DIM_E}, "B, L, E"}}},
    /* per head, or averaged over the heads */
    [VKA_ARG_WEIGHTS] = {"attn_weights", VKA_ROLE_WEIGHTS, F32, 1, 2,
                         {{4, {VKA_DIM_B, VKA_DIM_H, VKA_DIM_L, VKA_DIM_S_EXT}, "B, H, L, S'"},
                          {3, {VKA_DIM_B, VKA_DIM_L, VKA_DIM_S_EXT}, "B, L, S'", "attn_weights (averaged)"}}},
    [VKA_ARG_LSE] = {"lse", VKA_ROLE_LSE, F32, 1, 1, {{3, {VKA_DIM_B, VKA_DIM_H, VKA_DIM_L}, "B, H, L"}}},
};

const vka_arg_row *vka_arg_get(vka_arg arg) { return (unsigned)arg < VKA_ARG_COUNT ? &rows[arg] : NULL; }

void vka_arg_dims(const vka_problem *p, const vka_arg_form *form, uint32_t *dims)
{
    const uint32_t value[VKA_DIM_COUNT] = {
        [VKA_DIM_B] = p->B, [VKA_DIM_L] = p->L, [VKA_DIM_S] = p->S, [VKA_DIM_S_EXT] = p->S_ext,
        [VKA_DIM_E] = p->cfg.E, [VKA_DIM_H] = p->cfg.H, [VKA_DIM_BH] = p->B * p->cfg.H,
        [VKA_DIM_KDIM] = p->cfg.kdim, [VKA_DIM_VDIM] = p->cfg.vdim,
    };
    for (uint32_t i = 0; i < form->rank; i++) dims[i] = value[form->dims[i]];
}

vkattn_status vka_check_float_mask(const float *mask, size_t n, vkattn_error *error)
{
    for (size_t i = 0; i < n; i++) {
        if (isnan(mask[i]) || (isinf(mask[i]) && mask[i] > 0))
            return vka_error_set(error, VKATTN_ERROR_NON_FINITE,
                                 "attn_mask element %zu is %s; float masks may hold finite values and -inf only", i,
                                 isnan(mask[i]) ? "NaN" : "+inf");
    }
    return VKATTN_OK;
}

vkattn_status vka_check_path(vkattn_path path, vkattn_error *error)
{
    if ((unsigned)path > VKATTN_PATH_CPU)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "path %d is not a vkattn_path", (int)path);
    return VKATTN_OK;
}

static void take_host(vka_arg_value *v, const void *data, vkattn_dtype dtype, uint32_t rank, const uint32_t *dims)
{
    if (!data) return;
    *v = (vka_arg_value){.given = 1, .dtype = dtype, .rank = rank, .host = data};
    memcpy(v->dims, dims, rank * sizeof *dims);
}

vkattn_status vka_args_from_host(const vka_layer_config *cfg, const vkattn_host_forward_desc *d, vka_args *out,
                                 vkattn_error *error)
{
    if (!d) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "forward description is NULL");
    if (d->batch == 0 || d->query_len == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "batch (%u) and query_len (%u) must be at least 1",
                             d->batch, d->query_len);
    if (!d->query) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "query is NULL");
    if (!d->output) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "output is NULL");
    if (!d->key && d->value) return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "value is given but key is NULL");
    vkattn_status status = vka_check_path(d->path, error);
    if (status != VKATTN_OK) return status;
    if (d->key && d->key_len == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "key is given, so key_len must be at least 1");
    if (!d->key && d->key_len != 0 && d->key_len != d->query_len)
        return vka_error_set(error, VKATTN_ERROR_SHAPE, "self-attention: key_len %u differs from query_len %u",
                             d->key_len, d->query_len);
    const uint32_t B = d->batch, L = d->query_len, S = d->key ? d->key_len : L, H = cfg->H;
    const uint32_t extra = cfg->extra_keys, S_ext = S + extra;
    if (S_ext < S) return vka_error_set(error, VKATTN_ERROR_SIZE_OVERFLOW, "key_len %u is too large", S);
    vka_args a;
    memset(&a, 0, sizeof a);
    const float *value = d->value ? d->value : d->key;
    take_host(&a.v[VKA_ARG_QUERY], d->query, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, cfg->E});
    take_host(&a.v[VKA_ARG_KEY], d->key, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, S, cfg->kdim});
    take_host(&a.v[VKA_ARG_VALUE], value, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, S, cfg->vdim});
    take_host(&a.v[VKA_ARG_KEY_PADDING_MASK], d->key_padding_mask, VKATTN_DTYPE_BOOL, 2, (uint32_t[]){B, S});
    take_host(&a.v[VKA_ARG_VALID_LENS], d->valid_lens, VKATTN_DTYPE_I32, d->valid_lens_per_query ? 2 : 1,
              (uint32_t[]){B, L});
    if (d->attn_mask_per_head)
        take_host(&a.v[VKA_ARG_ATTN_MASK], d->attn_mask, d->attn_mask_dtype, 3, (uint32_t[]){B * H, L, S});
    else
        take_host(&a.v[VKA_ARG_ATTN_MASK], d->attn_mask, d->attn_mask_dtype, 2, (uint32_t[]){L, S});
    take_host(&a.v[VKA_ARG_OUTPUT], d->output, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, cfg->E});
    if (d->average_weights)
        take_host(&a.v[VKA_ARG_WEIGHTS], d->attn_weights, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, L, S_ext});
    else
        take_host(&a.v[VKA_ARG_WEIGHTS], d->attn_weights, VKATTN_DTYPE_F32, 4, (uint32_t[]){B, H, L, S_ext});
    take_host(&a.v[VKA_ARG_LSE], d->lse, VKATTN_DTYPE_F32, 3, (uint32_t[]){B, H, L});
    a.key_is_query = !d->key || (d->key == d->query && value == d->query && S == L);
    if (a.key_is_query) a.v[VKA_ARG_KEY] = a.v[VKA_ARG_VALUE] = a.v[VKA_ARG_QUERY];
    a.weights_averaged = d->average_weights != 0;
    a.causal = d->causal != 0;
    a.path = d->path;
    a.rope_offset = d->rope_offset;
    a.kv_round = d->kv_cache_dtype;
    a.positions = d->positions;
    if (d->positions && (d->key || cfg->extra_keys))
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "positions place the tokens of a self-attention forward (key NULL), without "
                             "add_bias_kv or add_zero_attn keys (they have no position)");
    if (d->positions && d->rope_offset) /* it lengthened a DYNAMIC or LONGROPE table it did not rotate by */
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "positions replace the tokens' indices and rope_offset: give rope_offset 0 (it is %u)",
                             d->rope_offset);
    for (size_t i = 0; d->positions && i < (size_t)B * L; i++)
        if (d->positions[i] > INT32_MAX)
            return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "positions[%zu] is %u, above 2^31 - 1", i,
                                 d->positions[i]);
    if (!vka_is_cache_dtype(a.kv_round))
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "kv_cache_dtype is %s: a KV cache stores f32, f16, q8_0 or q4_0",
                             vkattn_dtype_name(a.kv_round));
    if (vka_dtype_is_block(a.kv_round) && cfg->D % VKA_QUANT_BLOCK != 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "kv_cache_dtype %s rounds each head's row in blocks of %d values: the head dim %u is "
                             "not a multiple of %d",
                             vkattn_dtype_name(a.kv_round), VKA_QUANT_BLOCK, cfg->D, VKA_QUANT_BLOCK);
    *out = a;
    return VKATTN_OK;
}

/* Checks one argument against its row: a dtype the row takes and one of its shapes (the form
 * that matches the rank, or the one `wanted` names); returns the form in *form. */
static vkattn_status check_arg(const vka_problem *p, vka_arg arg, const char *as, const vka_arg_value *v, int wanted,
                               uint32_t *form, vkattn_error *error)
{
    const vka_arg_row *row = &rows[arg];
    /* (a value past the last dtype is no bit of the mask: shifting by it is undefined) */
    if ((unsigned)v->dtype > VKATTN_DTYPE_I32 || !(row->dtypes & (1u << v->dtype))) {
        char accepted[64] = "";
        for (int t = 0; t <= VKATTN_DTYPE_I32; t++)
            if (row->dtypes & (1u << t))
                snprintf(accepted + strlen(accepted), sizeof accepted - strlen(accepted), "%s%s",
                         accepted[0] ? " or " : "", vkattn_dtype_name((vkattn_dtype)t));
        return vka_error_set(error, VKATTN_ERROR_DTYPE, "%s has dtype %s, expected %s", as,
                             vkattn_dtype_name(v->dtype), accepted);
    }
    uint32_t f = 0;
    if (wanted >= 0) f = (uint32_t)wanted;
    else
        while (f + 1 < row->forms && row->form[f].rank != v->rank) f++;
    const vka_arg_form *form_f = &row->form[f];
    if (wanted >= 0 && form_f->label) as = form_f->label;
    uint32_t want[VKATTN_MAX_RANK];
    vka_arg_dims(p, form_f, want);
    int same = v->rank == form_f->rank;
    for (uint32_t i = 0; same && i < v->rank; i++) same = v->dims[i] == want[i];
    if (!same) {
        char got[96], expect[96];
        vka_format_dims(got, sizeof got, v->dims, v->rank);
        vka_format_dims(expect, sizeof expect, want, form_f->rank);
        return vka_error_set(error, VKATTN_ERROR_SHAPE, "%s has shape %s, expected (%s) = %s", as, got, form_f->names,
                             expect);
    }
    *form = f;
    return VKATTN_OK;
}


/* Whether two given arguments share bytes: the same host array, or byte ranges that overlap in
 * one device buffer (wrapped tensors may, and one tensor given twice does). */
static int overlap(const vka_arg_value *x, const vka_arg_value *y)
{
    if (x->memory && y->memory) return x->memory == y->memory && x->begin < y->end && y->begin < x->end;
    return !x->memory && !y->memory && x->host && x->host == y->host;
}

/* An output the device writes must share no bytes with any other argument: inputs would be read
 * after being overwritten, and two outputs would overwrite each other. (Key and value may be one
 * tensor; so may the query be the key and value: all are read only.) */
static vkattn_status check_no_overlap(const vka_args *a, const char *const names[VKA_ARG_COUNT], vkattn_error *error)
{
    for (int i = 0; i < VKA_ARG_COUNT; i++) {
        if (!a->v[i].given || !vka_arg_get((vka_arg)i)->output) continue;
        for (int j = 0; j < VKA_ARG_COUNT; j++) {
            if (j == i || !a->v[j].given || !overlap(&a->v[i], &a->v[j])) continue;
            if (vka_arg_get((vka_arg)j)->output && j < i) continue; /* reported from the other side */
            return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "%s shares memory with %s: an output must have "
                                 "memory of its own", names[i], names[j]);
        }
    }
    return VKATTN_OK;
}

vkattn_status vka_args_check(const vka_layer_config *cfg, const vka_args *a, vka_problem *out, vkattn_error *error)
{
    const vka_arg_value *q = &a->v[VKA_ARG_QUERY], *k = &a->v[VKA_ARG_KEY];
    vkattn_status status;
    if (q->rank != 3)
        return vka_error_set(error, VKATTN_ERROR_SHAPE, "query must have rank 3 (B, L, E), it has rank %u", q->rank);
    if (k->rank != 3)
        return vka_error_set(error, VKATTN_ERROR_SHAPE, "key must have rank 3 (B, S, kdim), it has rank %u", k->rank);
    if (a->key_is_query && !cfg->packed_in_proj)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "key is the query (self-attention) but kdim/vdim (%u/%u) differ from embed_dim %u",
                             cfg->kdim, cfg->vdim, cfg->E);
    vka_problem p = {0};
    p.cfg = *cfg;
    p.B = q->dims[0];
    p.L = q->dims[1];
    p.S = k->dims[1];
    p.S_ext = p.S + cfg->extra_keys;
    if (p.S_ext < p.S) return vka_error_set(error, VKATTN_ERROR_SIZE_OVERFLOW, "key_len %u is too large", p.S);
    p.self_attention = a->key_is_query;
    p.causal = a->causal;
    p.causal_end = a->causal && vka_layer_has_positions(cfg);
    p.path = a->path;
    p.rope_offset = cfg->rope_dim ? a->rope_offset : 0;
    p.kv_round = a->kv_round;
    p.positions = a->positions != NULL;

    /* Names in messages say what stood in for a missing key or value. */
    const char *names[VKA_ARG_COUNT];
    for (int i = 0; i < VKA_ARG_COUNT; i++) names[i] = rows[i].name;
    if (a->key_is_query) names[VKA_ARG_KEY] = "query (as key)", names[VKA_ARG_VALUE] = "query (as value)";
    else if (a->v[VKA_ARG_VALUE].tensor == k->tensor && a->v[VKA_ARG_VALUE].host == k->host)
        names[VKA_ARG_VALUE] = "key (as value)";
    uint32_t form[VKA_ARG_COUNT] = {0};
    for (int i = 0; i < VKA_ARG_COUNT; i++) {
        if (!a->v[i].given) continue;
        int wanted = i == VKA_ARG_WEIGHTS ? a->weights_averaged : -1;
        VKA_TRY(check_arg(&p, (vka_arg)i, names[i], &a->v[i], wanted, &form[i], error));
    }
    p.query_dtype = q->dtype;
    p.key_dtype = k->dtype;
    p.value_dtype = a->v[VKA_ARG_VALUE].dtype;
    p.output_dtype = a->v[VKA_ARG_OUTPUT].dtype;
    VKA_TRY(check_no_overlap(a, names, error));
    p.key_padding_mask = a->v[VKA_ARG_KEY_PADDING_MASK].given;
    if (a->v[VKA_ARG_VALID_LENS].given)
        p.valid_lens = form[VKA_ARG_VALID_LENS] ? VKA_VALID_LENS_PER_QUERY : VKA_VALID_LENS_PER_BATCH;
    if (a->v[VKA_ARG_ATTN_MASK].given) {
        p.attn_mask = a->v[VKA_ARG_ATTN_MASK].dtype == VKATTN_DTYPE_BOOL ? VKA_ATTN_MASK_BOOL : VKA_ATTN_MASK_FLOAT;
        p.attn_mask_per_head = form[VKA_ARG_ATTN_MASK] == 1;
    }
    if (a->v[VKA_ARG_WEIGHTS].given)
        p.weights = form[VKA_ARG_WEIGHTS] ? VKATTN_WEIGHTS_AVERAGED : VKATTN_WEIGHTS_PER_HEAD;
    p.lse = a->v[VKA_ARG_LSE].given;
    VKA_TRY(vka_problem_check(&p, error));
    if (p.attn_mask == VKA_ATTN_MASK_FLOAT && a->v[VKA_ARG_ATTN_MASK].host)
        VKA_TRY(vka_check_float_mask(a->v[VKA_ARG_ATTN_MASK].host, vka_arg_elems(&p, VKA_ARG_ATTN_MASK), error));
    *out = p;
    return VKATTN_OK;
fail:
    return status;
}

/* Shaders index tensors with 32-bit unsigned integers. */
#define VKA_MAX_ELEMS ((size_t)UINT32_MAX)

/* One tensor's element count: the product must fit size_t, and uint32 for shader indexing. */
static vkattn_status check_count(const char *what, const uint32_t *dims, int n, vkattn_error *error)
{
    size_t elems = 1;
    for (int i = 0; i < n; i++) {
        if (!vka_mul_size(elems, dims[i], &elems) || elems > VKA_MAX_ELEMS)
            return vka_error_set(error, VKATTN_ERROR_SIZE_OVERFLOW,
                                 "%s would have more than 2^32 elements; split the batch or sequence", what);
    }
    return VKATTN_OK;
}

void vka_rope_first_positions(const vka_problem *p, uint32_t *query, uint32_t *key)
{
    uint32_t longest = p->L > p->S ? p->L : p->S;
    *query = p->rope_offset + (longest - p->L);
    *key = p->rope_offset + (longest - p->S);
}

uint64_t vka_rope_seq_len(const vka_problem *p)
{
    if (p->cache.seqs) return p->cache.max_len;
    return (uint64_t)p->rope_offset + (p->L > p->S ? p->L : p->S);
}

vkattn_path vka_resolve_path(vkattn_path requested, vkattn_weights_kind weights)
{
    if (requested != VKATTN_PATH_AUTO) return requested;
    return weights != VKATTN_WEIGHTS_NONE ? VKATTN_PATH_UNFUSED : VKATTN_PATH_FUSED;
}

int vka_arg_form_of(const vka_problem *p, vka_arg arg)
{
    switch (arg) {
    case VKA_ARG_QUERY:
    case VKA_ARG_KEY:
    case VKA_ARG_VALUE:
    case VKA_ARG_OUTPUT: return 0;
    case VKA_ARG_KEY_PADDING_MASK: return p->key_padding_mask ? 0 : -1;
    case VKA_ARG_VALID_LENS: return p->valid_lens == VKA_VALID_LENS_NONE ? -1 : p->valid_lens == VKA_VALID_LENS_PER_QUERY;
    case VKA_ARG_ATTN_MASK: return p->attn_mask == VKA_ATTN_MASK_NONE ? -1 : p->attn_mask_per_head != 0;
    case VKA_ARG_WEIGHTS: return p->weights == VKATTN_WEIGHTS_NONE ? -1 : p->weights == VKATTN_WEIGHTS_AVERAGED;
    case VKA_ARG_LSE: return p->lse ? 0 : -1;
    default: return -1;
    }
}

vkattn_dtype vka_arg_dtype(const vka_problem *p, vka_arg arg)
{
    switch (arg) {
    case VKA_ARG_QUERY: return p->query_dtype;
    case VKA_ARG_KEY: return p->key_dtype;
    case VKA_ARG_VALUE: return p->value_dtype;
    case VKA_ARG_OUTPUT: return p->output_dtype;
    case VKA_ARG_KEY_PADDING_MASK: return VKATTN_DTYPE_BOOL;
    case VKA_ARG_VALID_LENS: return VKATTN_DTYPE_I32;
    case VKA_ARG_ATTN_MASK: return p->attn_mask == VKA_ATTN_MASK_BOOL ? VKATTN_DTYPE_BOOL : VKATTN_DTYPE_F32;
    default: return VKATTN_DTYPE_F32;
    }
}

uint64_t vka_arg_elems(const vka_problem *p, vka_arg arg)
{
    int form = vka_arg_form_of(p, arg);
    if (form < 0) return 0;
    const vka_arg_form *f = &rows[arg].form[form];
    uint32_t dims[VKATTN_MAX_RANK];
    vka_arg_dims(p, f, dims);
    uint64_t n = 1;
    for (uint32_t i = 0; i < f->rank; i++) n *= dims[i]; /* within 2^64: vka_problem_check bounds each by 2^32 */
    return n;
}

vkattn_status vka_problem_check(const vka_problem *p, vkattn_error *error)
{
    if (p->weights && p->lse)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "attention weights (unfused path) and the log-sum-exp (fused path) cannot be asked for together");
    if (p->cfg.H_active < p->cfg.H && (p->weights || p->attn_mask_per_head || p->lse))
        return vka_error_set(error, VKATTN_ERROR_UNSUPPORTED,
                             "with pruned heads (%u of %u active) the layer returns no attention weights or lse and "
                             "takes no per-head attn_mask",
                             p->cfg.H_active, p->cfg.H);
    const vka_layer_config *c = &p->cfg;
    uint32_t longest = p->L > p->S ? p->L : p->S;
    if (c->rope_dim && longest && p->rope_offset > UINT32_MAX - (longest - 1))
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope_offset %u + sequence length %u passes the largest position 2^32 - 1",
                             p->rope_offset, longest);
    vkattn_status status;
    for (int i = 0; i < VKA_ARG_COUNT; i++) {
        int form = vka_arg_form_of(p, (vka_arg)i);
        if (form < 0) continue;
        const vka_arg_form *f = &rows[i].form[form];
        uint32_t dims[VKATTN_MAX_RANK];
        vka_arg_dims(p, f, dims);
        VKA_TRY(check_count(f->label ? f->label : rows[i].name, dims, (int)f->rank, error));
    }
    VKA_TRY(check_count("the Q/K/V projection", (uint32_t[]){p->B, p->L > p->S ? p->L : p->S, c->E_q + 2 * c->E_kv}, 3,
                        error));
    VKA_TRY(check_count("the projected query", (uint32_t[]){p->B, p->L, c->E_q}, 3, error));
    /* The unfused path addresses one head's L×S' score block with 32-bit indices (and chunks it
     * as needed); the fused path never forms it, so it takes any L·S. */
    if (vka_resolve_path(p->path, p->weights) == VKATTN_PATH_UNFUSED)
        VKA_TRY(check_count("one head's score block (unfused path)", (uint32_t[]){p->L, p->S_ext}, 2, error));
    return VKATTN_OK;
fail:
    return status;
}
