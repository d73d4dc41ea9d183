#include "attention/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/error.h"

const char *vka_role_name(vka_role role)
{
    static const char *const names[VKA_ROLE_COUNT] = {
        [VKA_ROLE_NONE] = "none",
        [VKA_ROLE_QUERY] = "query",
        [VKA_ROLE_KEY] = "key",
        [VKA_ROLE_VALUE] = "value",
        [VKA_ROLE_KEY_PADDING_MASK] = "key_padding_mask",
        [VKA_ROLE_VALID_LENS] = "valid_lens",
        [VKA_ROLE_ATTN_MASK] = "attn_mask",
        [VKA_ROLE_OUTPUT] = "output",
        [VKA_ROLE_WEIGHTS] = "weights",
        [VKA_ROLE_LSE] = "lse",
        [VKA_ROLE_W_IN] = "w_in",
        [VKA_ROLE_W_K] = "w_k",
        [VKA_ROLE_W_V] = "w_v",
        [VKA_ROLE_B_IN] = "b_in",
        [VKA_ROLE_W_OUT] = "w_out",
        [VKA_ROLE_B_OUT] = "b_out",
        [VKA_ROLE_EXTRA_K] = "extra_k",
        [VKA_ROLE_EXTRA_V] = "extra_v",
        [VKA_ROLE_QKV] = "qkv",
        [VKA_ROLE_K_PROJ] = "k_proj",
        [VKA_ROLE_V_PROJ] = "v_proj",
        [VKA_ROLE_SCORES] = "scores",
        [VKA_ROLE_CTX] = "ctx",
        [VKA_ROLE_CTX_ACC] = "ctx_acc",
        [VKA_ROLE_SOFTMAX_STATS] = "softmax_stats",
        [VKA_ROLE_STATE_O] = "state_o",
        [VKA_ROLE_STATE_LSE] = "state_lse",
    };
    return (unsigned)role < VKA_ROLE_COUNT ? names[role] : "unknown";
}

/* What a role is, for messages. */
static const char *role_what(vka_role role)
{
    switch (role) {
    case VKA_ROLE_W_IN: return "in_proj_weight (or q_proj_weight)";
    case VKA_ROLE_W_K: return "k_proj_weight";
    case VKA_ROLE_W_V: return "v_proj_weight";
    case VKA_ROLE_W_OUT: return "out_proj.weight";
    case VKA_ROLE_WEIGHTS: return "the attention weights";
    case VKA_ROLE_LSE: return "the log-sum-exp";
    case VKA_ROLE_QKV: return "the projected query (workspace)";
    case VKA_ROLE_K_PROJ: return "the projected key (workspace)";
    case VKA_ROLE_V_PROJ: return "the projected value (workspace)";
    case VKA_ROLE_SCORES: return "the score buffer (workspace)";
    case VKA_ROLE_CTX: return "the attention output before out_proj (workspace)";
    default: return vka_role_name(role);
    }
}

static uint32_t ceil_div(uint32_t a, uint32_t b) { return a / b + (a % b != 0); }
static uint64_t ceil_div64(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }
static uint64_t min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

int vka_fold_groups(uint64_t total, const uint32_t max[3], uint32_t out[3])
{
    uint64_t x = total < max[0] ? total : max[0];
    if (x == 0) return 0;
    uint64_t rest = ceil_div64(total, x);
    uint64_t y = rest < max[1] ? rest : max[1];
    uint64_t z = ceil_div64(rest, y);
    if (z > max[2]) return 0;
    out[0] = (uint32_t)x, out[1] = (uint32_t)y, out[2] = (uint32_t)z;
    return 1;
}

/* ---------------------------------------------------------------------------------------------- */
/* The loop model: what each kernel's header says its loops cost per invocation.                  */
/* ---------------------------------------------------------------------------------------------- */

/* A rolled loop of t trips costs t + 1 (lavapipe counts the test that ends it too). */
static uint64_t loop(uint64_t trips) { return trips + 1; }

static uint32_t log2_u32(uint32_t x)
{
    uint32_t n = 0;
    while (x > 1) x >>= 1, n++;
    return n;
}

/* attn_fused.comp over `keys` keys per invocation: blocks of TILE_B (one more where the real keys
 * end and the extra ones begin), three DV loops per block, a DV loop to clear, one to load a
 * carried state, one to store. */
static uint64_t fused_trips(uint32_t DV, uint32_t tile_k, uint64_t keys, int load)
{
    uint64_t blocks = ceil_div64(keys, tile_k) + 1;
    return loop(DV) * (2 + (load != 0)) + loop(blocks) + blocks * 3 * loop(DV);
}

static uint64_t softmax_trips(const vka_softmax_push *pc, uint32_t wg)
{
    uint64_t n = ceil_div64(pc->chunk_len, wg), tree = loop(log2_u32(wg));
    switch (pc->mode) {
    case VKA_SOFTMAX_STATS: return 2 * loop(n) + 2 * tree;
    case VKA_SOFTMAX_NORMALIZE: return loop(pc->chunks) + loop(n);
    default: return 3 * loop(n) + 2 * tree;
    }
}

uint64_t vka_step_loop_trips(const vka_step *s)
{
    if (s->kind != VKA_STEP_DISPATCH) return 0;
    switch (s->kernel) {
    case VKA_KERNEL_MATMUL: return loop(s->push.matmul.K);
    case VKA_KERNEL_SCORES: return loop(s->spec[VKA_SPEC_DV]);
    case VKA_KERNEL_SOFTMAX: return softmax_trips(&s->push.softmax, s->spec[VKA_SPEC_WG_SIZE]);
    case VKA_KERNEL_PV: return loop(s->push.pv.j_count);
    case VKA_KERNEL_FUSED: {
        const vka_fused_push *f = &s->push.fused;
        uint64_t keys = min64(f->chunk_len, f->split_len);
        return fused_trips(s->spec[VKA_SPEC_DV], s->spec[VKA_SPEC_TILE_B], keys, (f->flags & VKA_FUSED_LOAD) != 0);
    }
    case VKA_KERNEL_MERGE: return 2 * loop(s->push.merge.splits);
    case VKA_KERNEL_AVERAGE_HEADS: return loop(s->push.average.H);
    default: return 0; /* the peak microkernels are not planned */
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Building                                                                                        */
/* ---------------------------------------------------------------------------------------------- */

typedef struct builder {
    const vka_problem *p;
    const vka_plan_limits *limits;
    const vka_profile *profile;
    vka_plan *plan;
    vkattn_error *error;
    uint64_t budget; /* loop trips per invocation, UINT64_MAX when unlimited */
} builder;

static vkattn_status grow(builder *b, void **array, uint32_t *capacity, uint32_t count, size_t size)
{
    if (count < *capacity) return VKATTN_OK;
    uint32_t n = *capacity ? *capacity * 2 : 32;
    void *bigger = vka_realloc(b->limits->faults, *array, n * size);
    if (!bigger) return vka_error_set(b->error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "out of memory for the plan");
    *array = bigger;
    *capacity = n;
    return VKATTN_OK;
}

static uint64_t elem_bytes(const builder *b, vka_role role) { return vkattn_dtype_size(b->plan->role_dtype[role]); }

/* Adds a step: dispatches get their workgroups folded into the device's grid, and must keep to
 * the loop budget (the plan sized them to; this makes a planning mistake an error, never a
 * silently truncated loop). */
static vkattn_status push_step(builder *b, const vka_step *step, uint64_t invocations, uint32_t wg)
{
    vka_plan *plan = b->plan;
    vkattn_status status = grow(b, (void **)&plan->steps, &plan->step_capacity, plan->step_count, sizeof *plan->steps);
    if (status != VKATTN_OK) return status;
    vka_step s = *step;
    if (s.kind == VKA_STEP_DISPATCH) {
        uint64_t groups = ceil_div64(invocations, wg);
        if (groups > UINT32_MAX || !vka_fold_groups(groups, b->limits->max_group_count, s.groups))
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "stage %s needs %llu workgroups, more than this device's maxComputeWorkGroupCount allows",
                                 vkattn_stage_name(s.stage), (unsigned long long)groups);
        uint64_t trips = vka_step_loop_trips(&s);
        if (trips > b->budget)
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "internal: stage %s would run %llu loop trips per invocation, over the loop budget %llu",
                                 vkattn_stage_name(s.stage), (unsigned long long)trips, (unsigned long long)b->budget);
    }
    plan->steps[plan->step_count++] = s;
    return VKATTN_OK;
}

/* Whether `bytes` (seen through `view`, texels of `texel` bytes) fit one binding. */
static int fits_binding(const builder *b, uint64_t bytes, uint8_t view, uint64_t texel)
{
    if (bytes > b->limits->max_storage_buffer_range) return 0;
    return view == VKA_VIEW_BUFFER || bytes / texel <= b->limits->max_texel_elements;
}

static uint64_t texel_bytes(const builder *b, vka_role role, uint8_t view)
{
    return view == VKA_VIEW_BUFFER ? 1 : elem_bytes(b, role) * view;
}

static vkattn_status too_big(builder *b, vka_role role, uint64_t bytes)
{
    return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                         "%s needs %llu bytes, more than this device's maxStorageBufferRange (%llu bytes) for one binding",
                         role_what(role), (unsigned long long)bytes,
                         (unsigned long long)b->limits->max_storage_buffer_range);
}

/* The bytes a binding from `start` to `end` covers: whole texels, and whole 16-byte words for
 * buffers (kernels read bytes and halves as 32-bit words, and vec4 stores span 16 bytes); never
 * past the buffer, whose size vkattn rounds up to 16 bytes. */
static uint64_t binding_range(const builder *b, vka_role role, uint64_t start, uint64_t end, uint64_t texel)
{
    uint64_t unit = texel > 1 ? texel : 16, allocated = (b->plan->role_bytes[role] + 15) / 16 * 16;
    uint64_t range = (end - start + unit - 1) / unit * unit;
    return start + range <= allocated ? range : (allocated - start) / texel * texel;
}

/* Binds a role's whole tensor, which must fit one binding. */
static vkattn_status bind_whole(builder *b, vka_bind *out, vka_role role, uint8_t view)
{
    *out = (vka_bind){.role = role, .view = view};
    if (role == VKA_ROLE_NONE) return VKATTN_OK;
    uint64_t bytes = b->plan->role_bytes[role], texel = texel_bytes(b, role, view);
    if (!fits_binding(b, bytes, view, texel)) return too_big(b, role, bytes);
    out->range = binding_range(b, role, 0, bytes, texel);
    return VKATTN_OK;
}

/* Binds elements [first, first + count) of a role: the whole tensor when it fits one binding,
 * else a window from an aligned offset. *shift gets the elements from the window's start to
 * `first` (a multiple of the view's elements per texel). */
static vkattn_status bind_elems(builder *b, vka_bind *out, vka_role role, uint8_t view, uint64_t first, uint64_t count,
                                uint64_t *shift)
{
    uint64_t esize = elem_bytes(b, role), texel = texel_bytes(b, role, view);
    if (fits_binding(b, b->plan->role_bytes[role], view, texel)) {
        *shift = first;
        return bind_whole(b, out, role, view);
    }
    uint64_t align = view == VKA_VIEW_BUFFER ? b->limits->storage_offset_alignment : b->limits->texel_offset_alignment;
    if (align < texel) align = texel; /* both powers of two: the window starts on a whole texel */
    uint64_t start = first * esize / align * align, end = (first + count) * esize;
    uint64_t range = binding_range(b, role, start, end, texel);
    if (!fits_binding(b, range, view, texel)) return too_big(b, role, range);
    *out = (vka_bind){.role = role, .view = view, .offset = start, .range = range};
    *shift = (first * esize - start) / esize;
    return VKATTN_OK;
}

static vkattn_status reserve_workspace(builder *b, vka_role role, uint64_t elems)
{
    uint64_t bytes = elems * elem_bytes(b, role);
    if (b->limits->max_buffer_bytes && bytes > b->limits->max_buffer_bytes)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "the %s workspace needs %llu bytes, more than this device can allocate (%llu)",
                             vka_role_name(role), (unsigned long long)bytes,
                             (unsigned long long)b->limits->max_buffer_bytes);
    if (bytes > b->plan->workspace_bytes[role]) b->plan->workspace_bytes[role] = bytes;
    if (bytes > b->plan->role_bytes[role]) b->plan->role_bytes[role] = bytes;
    return VKATTN_OK;
}

/* What is left of the loop budget once `fixed` trips are spent (UINT64_MAX when unlimited). */
static uint64_t budget_left(const builder *b, uint64_t fixed)
{
    return b->budget == UINT64_MAX ? UINT64_MAX : b->budget > fixed ? b->budget - fixed : 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* Projections                                                                                     */
/* ---------------------------------------------------------------------------------------------- */

/* C(M,N) = A(M,K) · W(N,K)^T + bias, all offsets in elements of their buffers. C row m lands at
 * row (m / rows_per_batch) * batch_stride + m % rows_per_batch of C. */
typedef struct matmul_args {
    vkattn_stage stage;
    vka_role a, w, bias, c;
    uint32_t M, N, K;
    uint32_t a_offset, lda, w_offset, bias_offset, c_offset, ldc;
    uint32_t rows_per_batch, batch_stride;
    int barrier_before;
} matmul_args;

/* One dispatch: rows [m0, m0 + mc) and columns [n0, n0 + nc) of C, reduction texels [k0, k0 + kc).
 * When the rows stay inside one batch item of C's row mapping, they are addressed as a plain
 * block (rows_per_batch = mc). */
static vkattn_status add_matmul_block(builder *b, const matmul_args *m, uint32_t vec, uint32_t m0, uint32_t mc,
                                      uint32_t n0, uint32_t nc, uint32_t k0, uint32_t kc, int first_part,
                                      int barrier_before)
{
    const vka_profile *pr = b->profile;
    vkattn_status status;
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = m->stage, .kernel = VKA_KERNEL_MATMUL,
                  .f16_out = b->plan->role_dtype[m->c] == VKATTN_DTYPE_F16, .barrier_before = barrier_before,
                  .binding_count = VKA_MATMUL_BINDINGS};
    s.spec[VKA_SPEC_WG_SIZE] = pr->matmul_wg;
    s.spec[VKA_SPEC_TILE_A] = pr->matmul_tile_m;
    s.spec[VKA_SPEC_TILE_B] = pr->matmul_tile_n;
    s.spec[VKA_SPEC_VEC] = vec;
    /* C rows of this block: whole batch items keep the mapping, a part of one is contiguous. */
    uint32_t rpb = m->rows_per_batch, bs = m->batch_stride;
    uint64_t c_first_row = (uint64_t)(m0 / rpb) * bs + m0 % rpb, c_rows;
    if (mc % rpb == 0 && m0 % rpb == 0) {
        c_rows = (uint64_t)(mc / rpb - 1) * bs + rpb;
    } else {
        rpb = bs = mc;
        c_rows = mc;
    }
    uint64_t a_shift, w_shift, c_shift, bias_shift;
    VKA_TRY(bind_elems(b, &s.bind[VKA_MATMUL_A], m->a, (uint8_t)vec, m->a_offset + (uint64_t)m0 * m->lda,
                       (uint64_t)(mc - 1) * m->lda + m->K, &a_shift));
    VKA_TRY(bind_elems(b, &s.bind[VKA_MATMUL_B], m->w, (uint8_t)vec, m->w_offset + (uint64_t)n0 * m->K,
                       (uint64_t)nc * m->K, &w_shift));
    if (m->bias != VKA_ROLE_NONE)
        VKA_TRY(bind_elems(b, &s.bind[VKA_MATMUL_BIAS], m->bias, VKA_VIEW_SCALAR, m->bias_offset + n0, nc, &bias_shift));
    else
        bias_shift = 0, s.bind[VKA_MATMUL_BIAS] = (vka_bind){.role = VKA_ROLE_NONE, .view = VKA_VIEW_SCALAR};
    VKA_TRY(bind_elems(b, &s.bind[VKA_MATMUL_C], m->c, VKA_VIEW_BUFFER, m->c_offset + c_first_row * m->ldc + n0,
                       (c_rows - 1) * m->ldc + nc, &c_shift));
    uint32_t tiles_m = ceil_div(mc, pr->matmul_tile_m), tiles_n = ceil_div(nc, pr->matmul_tile_n);
    s.push.matmul = (vka_matmul_push){
        .M = mc, .N = nc, .K = kc,
        .a_offset = (uint32_t)(a_shift / vec) + k0, .lda = m->lda / vec,
        .b_offset = (uint32_t)(w_shift / vec) + k0, .ldb = m->K / vec,
        .bias_offset = (uint32_t)bias_shift,
        .c_offset = (uint32_t)c_shift, .ldc = m->ldc,
        .rows_per_batch = rpb, .batch_stride = bs,
        .has_bias = m->bias != VKA_ROLE_NONE && first_part,
        .accumulate = !first_part,
        .tiles_n = tiles_n,
    };
    return push_step(b, &s, (uint64_t)tiles_m * tiles_n, pr->matmul_wg);
fail:
    return status;
}

/* The largest count of `row_elems`-element rows (a multiple of `multiple`) whose window of a role
 * fits one binding; 0 if not even `multiple` rows do. */
static uint64_t rows_that_fit(const builder *b, vka_role role, uint8_t view, uint64_t row_elems, uint64_t multiple)
{
    uint64_t texel = texel_bytes(b, role, view), slack = b->limits->texel_offset_alignment;
    if (b->limits->storage_offset_alignment > slack) slack = b->limits->storage_offset_alignment;
    uint64_t range = b->limits->max_storage_buffer_range;
    if (view != VKA_VIEW_BUFFER && b->limits->max_texel_elements * texel < range)
        range = b->limits->max_texel_elements * texel;
    range = range > slack + texel ? range - slack - texel : 0; /* room for the window's alignment */
    uint64_t rows = range / (row_elems * elem_bytes(b, role));
    return rows / multiple * multiple;
}

/* A matmul, cut to fit: reductions into parts within the loop budget, and, where an operand is
 * larger than one binding, rows of A/C and rows of W into blocks whose windows fit. */
static vkattn_status add_matmul(builder *b, const matmul_args *m)
{
    const vka_profile *pr = b->profile;
    vkattn_status status = VKATTN_OK;
    uint32_t vec = m->K % 4 == 0 && m->lda % 4 == 0 && m->a_offset % 4 == 0 && m->w_offset % 4 == 0 ? 4 : 1;
    uint32_t K = m->K / vec;
    uint64_t part = budget_left(b, 1);
    if (part == 0) return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT, "the loop budget is too small for a matmul");
    uint32_t kc = part < K ? (uint32_t)part : K;

    /* Column blocks: rows of W that fit (a multiple of the tile), all of N when W fits whole. */
    uint64_t nc = rows_that_fit(b, m->w, (uint8_t)vec, m->K, pr->matmul_tile_n);
    if (nc == 0) nc = rows_that_fit(b, m->w, (uint8_t)vec, m->K, 1);
    if (fits_binding(b, b->plan->role_bytes[m->w], (uint8_t)vec, texel_bytes(b, m->w, (uint8_t)vec))) nc = m->N;
    /* Row blocks: rows of A and of C that fit; whole batch items of C's mapping where they fit. */
    uint64_t mc = m->M;
    int a_whole = fits_binding(b, b->plan->role_bytes[m->a], (uint8_t)vec, texel_bytes(b, m->a, (uint8_t)vec));
    int c_whole = fits_binding(b, b->plan->role_bytes[m->c], VKA_VIEW_BUFFER, 1);
    if (!a_whole || !c_whole) {
        uint64_t ra = a_whole ? UINT64_MAX : rows_that_fit(b, m->a, (uint8_t)vec, m->lda, 1);
        uint64_t rc = c_whole ? UINT64_MAX : rows_that_fit(b, m->c, VKA_VIEW_BUFFER, m->ldc, 1);
        mc = min64(min64(ra, rc), m->M);
        if (m->batch_stride != m->rows_per_batch && mc < m->M) {
            /* C rows skip gaps between batch items: blocks of whole items, or parts of one item. */
            if (rc != UINT64_MAX) mc = min64(mc, rc * m->rows_per_batch / m->batch_stride);
            if (mc >= m->rows_per_batch) mc = mc / m->rows_per_batch * m->rows_per_batch;
        }
        if (mc > pr->matmul_tile_m) mc = mc / pr->matmul_tile_m * pr->matmul_tile_m;
    }
    if (nc == 0 || mc == 0)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "one row of a %s operand does not fit this device's maxStorageBufferRange",
                             vkattn_stage_name(m->stage));

    /* Blocks after the first wait for it: windows of C overlap in their byte ranges (rows of one
     * column block span the others), and later parts of a reduction read what earlier ones wrote. */
    int barrier = m->barrier_before;
    for (uint32_t m0 = 0; m0 < m->M;) {
        uint32_t rows = (uint32_t)min64(mc, m->M - m0);
        /* A block inside one batch item must not cross into the next. */
        if (m->batch_stride != m->rows_per_batch && rows % m->rows_per_batch != 0)
            rows = (uint32_t)min64(rows, m->rows_per_batch - m0 % m->rows_per_batch);
        for (uint32_t n0 = 0; n0 < m->N; n0 += (uint32_t)nc) {
            uint32_t cols = (uint32_t)min64(nc, m->N - n0);
            for (uint32_t k0 = 0; k0 < K; k0 += kc) {
                /* Parts of one reduction add to what the previous part wrote: a barrier between. */
                VKA_TRY(add_matmul_block(b, m, vec, m0, rows, n0, cols, k0, (uint32_t)min64(kc, K - k0), k0 == 0,
                                         barrier));
                barrier = 1;
            }
        }
        m0 += rows;
    }
fail:
    return status;
}

/* Where the projected Q, K and V live (offsets and strides in elements). */
typedef struct qkv_layout {
    vka_role q, k, v;
    uint32_t q_offset, q_stride, q_rows;
    uint32_t k_offset, k_stride, v_offset, v_stride, kv_rows;
} qkv_layout;

/* Puts the extra keys and values after each batch item's S projected ones: one copy step for
 * K and one for V, each with a region per batch item (per row when K and V share the fused QKV
 * buffer). The barrier before each copy is needed: validation (rightly) counts a dispatch's
 * storage writes as covering its whole buffer. */
static vkattn_status add_extra_key_copies(builder *b, const qkv_layout *l)
{
    const vka_problem *p = b->p;
    const uint32_t I = p->cfg.inner, extra = p->cfg.extra_keys;
    if (extra == 0) return VKATTN_OK;
    for (int kv = 0; kv < 2; kv++) {
        vka_plan *plan = b->plan;
        uint32_t offset = kv ? l->v_offset : l->k_offset, stride = kv ? l->v_stride : l->k_stride;
        uint32_t rows_per_region = stride == I ? extra : 1; /* contiguous rows when K or V is alone */
        vka_step s = {.kind = VKA_STEP_COPY, .stage = VKATTN_STAGE_QKV_PROJECTION, .binding_count = 2,
                      .copy_first = plan->copy_count, .barrier_before = 1};
        s.bind[0].role = kv ? VKA_ROLE_EXTRA_V : VKA_ROLE_EXTRA_K;
        s.bind[1].role = kv ? l->v : l->k;
        for (uint32_t batch = 0; batch < p->B; batch++) {
            for (uint32_t e = 0; e < extra; e += rows_per_region) {
                vkattn_status status =
                    grow(b, (void **)&plan->copies, &plan->copy_capacity, plan->copy_count, sizeof *plan->copies);
                if (status != VKATTN_OK) return status;
                uint64_t row = (uint64_t)batch * l->kv_rows + p->S + e;
                plan->copies[plan->copy_count++] =
                    (vka_copy){(uint64_t)e * I, offset + row * stride, (uint64_t)I * rows_per_region};
                s.copy_count++;
            }
        }
        vkattn_status status = push_step(b, &s, 0, 1);
        if (status != VKATTN_OK) return status;
    }
    return VKATTN_OK;
}

static vkattn_status add_input_projections(builder *b, qkv_layout *out)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    /* E: the query's features; I: the projected width (all heads, or the active ones). */
    const uint32_t E = c->E, I = c->inner, B = p->B, L = p->L, S = p->S, S_ext = p->S_ext;
    vka_role bias = c->bias ? VKA_ROLE_B_IN : VKA_ROLE_NONE;
    const matmul_args base = {.stage = VKATTN_STAGE_QKV_PROJECTION, .a = VKA_ROLE_QUERY, .w = VKA_ROLE_W_IN,
                              .bias = bias};
    vkattn_status status;

    /* The attention kernels bind Q, K and V whole: one fused buffer when it fits one binding. */
    uint64_t fused_elems = (uint64_t)B * S_ext * 3 * I;
    b->plan->fused_qkv =
        p->self_attention && fused_elems * elem_bytes(b, VKA_ROLE_QKV) <= b->limits->max_storage_buffer_range;
    if (b->plan->fused_qkv) {
        VKA_TRY(reserve_workspace(b, VKA_ROLE_QKV, fused_elems));
        matmul_args m = base;
        m.c = VKA_ROLE_QKV, m.M = B * L, m.N = 3 * I, m.K = E, m.lda = E, m.ldc = 3 * I;
        m.rows_per_batch = L, m.batch_stride = S_ext;
        VKA_TRY(add_matmul(b, &m));
        *out = (qkv_layout){.q = VKA_ROLE_QKV, .k = VKA_ROLE_QKV, .v = VKA_ROLE_QKV,
                            .q_offset = 0, .q_stride = 3 * I, .q_rows = S_ext,
                            .k_offset = I, .k_stride = 3 * I, .v_offset = 2 * I, .v_stride = 3 * I, .kv_rows = S_ext};
    } else {
        VKA_TRY(reserve_workspace(b, VKA_ROLE_QKV, (uint64_t)B * L * I));
        VKA_TRY(reserve_workspace(b, VKA_ROLE_K_PROJ, (uint64_t)B * S_ext * I));
        VKA_TRY(reserve_workspace(b, VKA_ROLE_V_PROJ, (uint64_t)B * S_ext * I));
        /* Packed weights: W_Q, W_K, W_V are row blocks of one (3I,E) matrix. */
        int packed = c->packed_in_proj;
        matmul_args q = base, k = base, v = base;
        q.c = VKA_ROLE_QKV, q.M = B * L, q.N = I, q.K = E, q.lda = E, q.ldc = I, q.rows_per_batch = L,
        q.batch_stride = L;
        k.a = VKA_ROLE_KEY, k.w = packed ? VKA_ROLE_W_IN : VKA_ROLE_W_K, k.c = VKA_ROLE_K_PROJ, k.M = B * S, k.N = I,
        k.K = c->kdim, k.lda = c->kdim, k.w_offset = packed ? I * E : 0, k.bias_offset = I, k.ldc = I,
        k.rows_per_batch = S, k.batch_stride = S_ext;
        v.a = VKA_ROLE_VALUE, v.w = packed ? VKA_ROLE_W_IN : VKA_ROLE_W_V, v.c = VKA_ROLE_V_PROJ, v.M = B * S, v.N = I,
        v.K = c->vdim, v.lda = c->vdim, v.w_offset = packed ? 2 * I * E : 0, v.bias_offset = 2 * I, v.ldc = I,
        v.rows_per_batch = S, v.batch_stride = S_ext;
        VKA_TRY(add_matmul(b, &q));
        VKA_TRY(add_matmul(b, &k));
        VKA_TRY(add_matmul(b, &v));
        *out = (qkv_layout){.q = VKA_ROLE_QKV, .k = VKA_ROLE_K_PROJ, .v = VKA_ROLE_V_PROJ,
                            .q_offset = 0, .q_stride = I, .q_rows = L,
                            .k_offset = 0, .k_stride = I, .v_offset = 0, .v_stride = I, .kv_rows = S_ext};
    }
    return add_extra_key_copies(b, out);
fail:
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Attention                                                                                       */
/* ---------------------------------------------------------------------------------------------- */

static uint32_t mask_flags(const vka_problem *p)
{
    uint32_t f = 0;
    if (p->causal) f |= VKA_MASK_CAUSAL;
    if (p->key_padding_mask) f |= VKA_MASK_KEY_PADDING;
    if (p->valid_lens == VKA_VALID_LENS_PER_BATCH) f |= VKA_MASK_VALID_LENS_PER_BATCH;
    if (p->valid_lens == VKA_VALID_LENS_PER_QUERY) f |= VKA_MASK_VALID_LENS_PER_QUERY;
    if (p->attn_mask == VKA_ATTN_MASK_BOOL) f |= VKA_MASK_ATTN_BOOL;
    if (p->attn_mask == VKA_ATTN_MASK_FLOAT) f |= VKA_MASK_ATTN_FLOAT;
    if (p->attn_mask_per_head) f |= VKA_MASK_ATTN_PER_HEAD;
    return f;
}

/* Texel width of the attention kernels' Q/K/V reads: whole vec4s when the head dim allows. */
static uint32_t attention_vec(const vka_problem *p) { return p->cfg.D % 4 == 0 ? 4 : 1; }

/* The mask bindings every attention kernel takes, whole (they are small next to the scores). */
static vkattn_status bind_masks(builder *b, vka_bind *kpm, vka_bind *lens, vka_bind *mask)
{
    const vka_problem *p = b->p;
    vkattn_status status;
    VKA_TRY(bind_whole(b, kpm, p->key_padding_mask ? VKA_ROLE_KEY_PADDING_MASK : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    VKA_TRY(bind_whole(b, lens, p->valid_lens ? VKA_ROLE_VALID_LENS : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    VKA_TRY(bind_whole(b, mask, p->attn_mask ? VKA_ROLE_ATTN_MASK : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
fail:
    return status;
}

/* How the fused path cuts the keys: `parts` side by side, each visited in `chunks` dispatches of
 * chunk_len keys; the softmax states of `group_bh` heads x `group_i` queries at a time. */
typedef struct fused_cut {
    uint32_t parts, part_len, chunks, chunk_len;
    uint32_t group_bh, group_i;
} fused_cut;

static vkattn_status plan_fused_cut(builder *b, uint32_t tile_q, uint32_t tile_k, fused_cut *out)
{
    const vka_problem *p = b->p;
    vkattn_status status = VKATTN_OK;
    const uint32_t D = p->cfg.D, DV = D / attention_vec(p), BH = p->B * p->cfg.H_active;
    /* The most keys one invocation may visit: whole blocks within the budget, counting a carried
     * state's load, and one block for the boundary between real and extra keys. */
    uint64_t max_keys = UINT32_MAX;
    if (b->budget != UINT64_MAX) {
        uint64_t fixed = 3 * loop(DV) + 1, per_block = 3 * loop(DV) + 1;
        uint64_t blocks = b->budget > fixed ? (b->budget - fixed) / per_block : 0;
        if (blocks < 2)
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "head dim %u needs %llu loop trips per block of keys; this device's loop budget "
                                 "(%llu per invocation) leaves no room for one",
                                 D, (unsigned long long)per_block, (unsigned long long)b->budget);
        max_keys = min64((blocks - 1) * tile_k, UINT32_MAX / 2 / tile_k * tile_k);
    }
    fused_cut cut = {.parts = 1, .part_len = p->S_ext, .chunks = 1, .chunk_len = p->S_ext, .group_bh = BH,
                     .group_i = p->L};
    uint64_t pieces = ceil_div64(p->S_ext, max_keys);
    if (pieces > 1) {
        /* As many parts side by side as the state budget holds for one query tile; the rest in turn. */
        uint64_t state_budget = b->limits->state_budget_bytes ? b->limits->state_budget_bytes
                                                              : b->limits->max_storage_buffer_range;
        state_budget = min64(state_budget, b->limits->max_storage_buffer_range);
        uint64_t row_bytes = (uint64_t)D * 4;
        uint64_t rows_total = (uint64_t)BH * p->L;
        uint64_t max_parts = state_budget / (row_bytes * min64(rows_total, tile_q));
        if (max_parts == 0)
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "head dim %u: the softmax state of one query tile does not fit a binding", D);
        uint64_t parts = min64(pieces, max_parts);
        uint64_t part_len = ceil_div64(ceil_div64(p->S_ext, parts), tile_k) * tile_k;
        parts = ceil_div64(p->S_ext, part_len);
        uint64_t chunks = ceil_div64(part_len, max_keys);
        uint64_t chunk_len = min64(ceil_div64(ceil_div64(part_len, chunks), tile_k) * tile_k, max_keys);
        chunks = ceil_div64(part_len, chunk_len);
        /* Rows whose states fit the budget: whole heads when a head's L rows fit, else query tiles. */
        uint64_t rows = state_budget / (row_bytes * parts);
        cut.parts = (uint32_t)parts, cut.part_len = (uint32_t)part_len;
        cut.chunks = (uint32_t)chunks, cut.chunk_len = (uint32_t)chunk_len;
        if (rows >= p->L) {
            cut.group_bh = (uint32_t)min64(rows / p->L, BH);
        } else {
            cut.group_bh = 1;
            cut.group_i = (uint32_t)(rows / tile_q * tile_q);
        }
        if (cut.parts > 1 || cut.chunks > 1) {
            uint64_t states = (uint64_t)cut.parts * cut.group_bh * cut.group_i;
            VKA_TRY(reserve_workspace(b, VKA_ROLE_STATE_O, states * D));
            VKA_TRY(reserve_workspace(b, VKA_ROLE_STATE_LSE, states));
        }
    }
    *out = cut;
fail:
    return status;
}

static vkattn_status add_fused(builder *b, const qkv_layout *l)
{
    const vka_problem *p = b->p;
    const vka_profile *pr = b->profile;
    const uint32_t vec = attention_vec(p), D = p->cfg.D, DV = D / vec, BH = p->B * p->cfg.H_active;
    const uint32_t tile_q = vka_profile_fused_tile_q(pr, D), tile_k = pr->fused_tile_k;
    const int f16_out = b->plan->role_dtype[VKA_ROLE_CTX] == VKATTN_DTYPE_F16;
    vkattn_status status;
    fused_cut cut = {0};
    VKA_TRY(plan_fused_cut(b, tile_q, tile_k, &cut));
    b->plan->key_parts = cut.parts;
    b->plan->key_chunks = cut.chunks;
    const int split = cut.parts > 1 || cut.chunks > 1;

    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_FUSED, .kernel = VKA_KERNEL_FUSED,
                  .f16_out = f16_out, .barrier_before = 1, .binding_count = VKA_FUSED_BINDINGS};
    s.spec[VKA_SPEC_WG_SIZE] = pr->fused_wg;
    s.spec[VKA_SPEC_TILE_A] = tile_q;
    s.spec[VKA_SPEC_TILE_B] = tile_k;
    s.spec[VKA_SPEC_VEC] = vec;
    s.spec[VKA_SPEC_DV] = DV;
    s.spec[VKA_SPEC_ATTN_MASK] = p->attn_mask != VKA_ATTN_MASK_NONE;
    VKA_TRY(bind_whole(b, &s.bind[VKA_FUSED_Q], l->q, (uint8_t)vec));
    VKA_TRY(bind_whole(b, &s.bind[VKA_FUSED_K], l->k, (uint8_t)vec));
    VKA_TRY(bind_whole(b, &s.bind[VKA_FUSED_V], l->v, (uint8_t)vec));
    VKA_TRY(bind_whole(b, &s.bind[VKA_FUSED_CTX], VKA_ROLE_CTX, VKA_VIEW_BUFFER));
    VKA_TRY(bind_masks(b, &s.bind[VKA_FUSED_KEY_PADDING], &s.bind[VKA_FUSED_VALID_LENS], &s.bind[VKA_FUSED_ATTN_MASK]));
    VKA_TRY(bind_whole(b, &s.bind[VKA_FUSED_LSE_OUT], p->lse ? VKA_ROLE_LSE : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    VKA_TRY(bind_whole(b, &s.bind[VKA_FUSED_STATE_O], split ? VKA_ROLE_STATE_O : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    VKA_TRY(bind_whole(b, &s.bind[VKA_FUSED_STATE_LSE], split ? VKA_ROLE_STATE_LSE : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    const vka_fused_push base = {
        .L = p->L, .S = p->S, .S_ext = p->S_ext, .H = p->cfg.H_active,
        .q_offset = l->q_offset / vec, .q_stride = l->q_stride / vec, .q_rows = l->q_rows,
        .k_offset = l->k_offset / vec, .k_stride = l->k_stride / vec,
        .v_offset = l->v_offset / vec, .v_stride = l->v_stride / vec, .kv_rows = l->kv_rows,
        .ctx_stride = p->cfg.inner, .scale = 1.0f / sqrtf((float)D),
        .mask_flags = mask_flags(p), .mask_heads = p->cfg.H,
        .splits = cut.parts, .split_len = cut.part_len, .chunk_len = cut.chunk_len,
    };

    vka_step merge = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_FUSED, .kernel = VKA_KERNEL_MERGE,
                      .f16_out = f16_out, .barrier_before = 1, .binding_count = VKA_MERGE_BINDINGS};
    merge.spec[VKA_SPEC_WG_SIZE] = pr->fused_wg;
    merge.spec[VKA_SPEC_VEC] = vec;
    merge.spec[VKA_SPEC_DV] = DV;
    merge.bind[VKA_MERGE_STATE_O] = s.bind[VKA_FUSED_STATE_O];
    merge.bind[VKA_MERGE_STATE_LSE] = s.bind[VKA_FUSED_STATE_LSE];
    merge.bind[VKA_MERGE_CTX] = s.bind[VKA_FUSED_CTX];
    merge.bind[VKA_MERGE_LSE_OUT] = s.bind[VKA_FUSED_LSE_OUT];

    /* Row groups in turn (their states share the workspace); per group the key chunks in turn,
     * each over every part side by side; then the parts' merge. */
    for (uint32_t bh0 = 0; bh0 < BH; bh0 += cut.group_bh) {
        for (uint32_t i0 = 0; i0 < p->L; i0 += cut.group_i) {
            uint32_t bh_count = (uint32_t)min64(cut.group_bh, BH - bh0), i_count = (uint32_t)min64(cut.group_i, p->L - i0);
            for (uint32_t c = 0; c < cut.chunks; c++) {
                int store = c + 1 < cut.chunks || cut.parts > 1;
                s.push.fused = base;
                s.push.fused.bh_begin = bh0, s.push.fused.bh_count = bh_count;
                s.push.fused.i_begin = i0, s.push.fused.i_count = i_count;
                s.push.fused.chunk_begin = c * cut.chunk_len;
                s.push.fused.flags = (c > 0 ? VKA_FUSED_LOAD : 0) | (store ? VKA_FUSED_STORE : 0) |
                                     (p->lse && !store ? VKA_FUSED_LSE : 0);
                uint64_t invocations = (uint64_t)cut.parts * bh_count * ceil_div(i_count, tile_q);
                VKA_TRY(push_step(b, &s, invocations, pr->fused_wg));
            }
            if (cut.parts > 1) {
                merge.push.merge = (vka_merge_push){
                    .L = p->L, .H = p->cfg.H_active, .bh_begin = bh0, .bh_count = bh_count,
                    .i_begin = i0, .i_count = i_count, .splits = cut.parts, .ctx_stride = p->cfg.inner,
                    .has_lse = p->lse != 0,
                };
                VKA_TRY(push_step(b, &merge, (uint64_t)bh_count * i_count * DV, pr->fused_wg));
            }
        }
    }
fail:
    return status;
}

/* One chunk of score rows: heads [bh_begin, +bh_count), queries [i_begin, +i_count). */
typedef struct chunk {
    uint32_t bh_begin, bh_count, i_begin, i_count;
} chunk;

/* Softmax of `rows` rows in place: one pass when a row fits the loop budget, else per key range
 * a pass for its statistics and one that normalises it. */
static vkattn_status add_softmax(builder *b, vka_role probs, uint32_t rows)
{
    const vka_problem *p = b->p;
    const uint32_t wg = b->profile->softmax_wg, S = p->S_ext;
    const uint64_t tree = loop(log2_u32(wg)), per_wg = ceil_div64(S, wg);
    vkattn_status status;
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_SOFTMAX, .kernel = VKA_KERNEL_SOFTMAX,
                  .barrier_before = 1, .binding_count = VKA_SOFTMAX_BINDINGS};
    s.spec[VKA_SPEC_WG_SIZE] = wg;
    VKA_TRY(bind_whole(b, &s.bind[VKA_SOFTMAX_P], probs, VKA_VIEW_BUFFER));
    if (3 * loop(per_wg) + 2 * tree <= b->budget) {
        s.bind[VKA_SOFTMAX_STATS_BUF] = (vka_bind){.role = VKA_ROLE_NONE};
        s.push.softmax = (vka_softmax_push){.rows = rows, .S_ext = S, .chunks = 1, .chunk_len = S,
                                            .mode = VKA_SOFTMAX_ROW, .group_count = rows};
        return push_step(b, &s, (uint64_t)rows * wg, wg);
    }
    /* Strides per workgroup invocation in one key range (n), and ranges per row (chunks): the
     * stats pass needs 2 loop(n) + 2 tree trips, the normalise pass loop(chunks) + loop(n). */
    uint64_t n = b->budget > 2 * tree + 2 ? (b->budget - 2 * tree) / 2 - 1 : 0;
    uint64_t chunks = n ? ceil_div64(per_wg, n) : 0;
    if (n && loop(chunks) + loop(n) > b->budget) {
        n = (uint64_t)ceil(sqrt((double)per_wg));
        chunks = ceil_div64(per_wg, n);
    }
    if (!n || loop(chunks) + loop(n) > b->budget || 2 * loop(n) + 2 * tree > b->budget)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "a softmax row of %u keys needs more loop trips than this device's budget (%llu)", S,
                             (unsigned long long)b->budget);
    uint32_t chunk_len = (uint32_t)(n * wg);
    chunks = ceil_div64(S, chunk_len);
    VKA_TRY(reserve_workspace(b, VKA_ROLE_SOFTMAX_STATS, (uint64_t)rows * chunks * 3));
    VKA_TRY(bind_whole(b, &s.bind[VKA_SOFTMAX_STATS_BUF], VKA_ROLE_SOFTMAX_STATS, VKA_VIEW_BUFFER));
    uint64_t groups = (uint64_t)rows * chunks;
    if (groups > UINT32_MAX)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT, "softmax needs more than 2^32 workgroups");
    for (int pass = 0; pass < 2; pass++) {
        s.push.softmax = (vka_softmax_push){.rows = rows, .S_ext = S, .chunks = (uint32_t)chunks,
                                            .chunk_len = chunk_len,
                                            .mode = pass ? VKA_SOFTMAX_NORMALIZE : VKA_SOFTMAX_STATS,
                                            .group_count = (uint32_t)groups};
        VKA_TRY(push_step(b, &s, groups * wg, wg));
    }
fail:
    return status;
}

static vkattn_status add_chunk(builder *b, const qkv_layout *l, vka_role probs, const chunk *ch)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    const vka_profile *pr = b->profile;
    const uint32_t vec = attention_vec(p), DV = c->D / vec;
    vkattn_status status;

    if (loop(DV) > b->budget)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "head dim %u needs more loop trips than this device's loop budget (%llu)", c->D,
                             (unsigned long long)b->budget);
    vka_step scores = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_SCORES, .kernel = VKA_KERNEL_SCORES,
                       .barrier_before = 1, .binding_count = VKA_SCORES_BINDINGS};
    scores.spec[VKA_SPEC_WG_SIZE] = pr->scores_wg;
    scores.spec[VKA_SPEC_TILE_A] = pr->scores_tile_q;
    scores.spec[VKA_SPEC_TILE_B] = pr->scores_tile_k;
    scores.spec[VKA_SPEC_VEC] = vec;
    scores.spec[VKA_SPEC_DV] = DV;
    scores.spec[VKA_SPEC_ATTN_MASK] = p->attn_mask != VKA_ATTN_MASK_NONE;
    VKA_TRY(bind_whole(b, &scores.bind[VKA_SCORES_Q], l->q, (uint8_t)vec));
    VKA_TRY(bind_whole(b, &scores.bind[VKA_SCORES_K], l->k, (uint8_t)vec));
    VKA_TRY(bind_whole(b, &scores.bind[VKA_SCORES_P], probs, VKA_VIEW_BUFFER));
    VKA_TRY(bind_masks(b, &scores.bind[VKA_SCORES_KEY_PADDING], &scores.bind[VKA_SCORES_VALID_LENS],
                       &scores.bind[VKA_SCORES_ATTN_MASK]));
    uint32_t tiles_i = ceil_div(ch->i_count, pr->scores_tile_q), tiles_j = ceil_div(p->S_ext, pr->scores_tile_k);
    uint64_t invocations = (uint64_t)ch->bh_count * tiles_i * tiles_j;
    scores.push.scores = (vka_scores_push){
        .L = p->L, .S = p->S, .S_ext = p->S_ext, .H = c->H_active,
        .q_offset = l->q_offset / vec, .q_stride = l->q_stride / vec, .q_rows = l->q_rows,
        .k_offset = l->k_offset / vec, .k_stride = l->k_stride / vec, .kv_rows = l->kv_rows,
        .bh_begin = ch->bh_begin, .bh_count = ch->bh_count, .i_begin = ch->i_begin, .i_count = ch->i_count,
        .scale = 1.0f / sqrtf((float)c->D),
        .mask_flags = mask_flags(p), .mask_heads = c->H,
        .tiles_j = tiles_j, .tiles_i = tiles_i,
    };
    VKA_TRY(push_step(b, &scores, invocations, pr->scores_wg));

    VKA_TRY(add_softmax(b, probs, ch->bh_count * ch->i_count));

    if (p->weights == VKA_WEIGHTS_AVERAGED) {
        const uint32_t wg = 64;
        uint32_t b_begin = ch->bh_begin / c->H_active, b_end = (ch->bh_begin + ch->bh_count - 1) / c->H_active;
        uint64_t items = (uint64_t)(b_end - b_begin + 1) * ch->i_count * p->S_ext;
        vka_step avg = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_AVERAGE_HEADS,
                        .kernel = VKA_KERNEL_AVERAGE_HEADS, .barrier_before = 1,
                        .binding_count = VKA_AVERAGE_BINDINGS};
        avg.spec[VKA_SPEC_WG_SIZE] = wg;
        VKA_TRY(bind_whole(b, &avg.bind[VKA_AVERAGE_P], probs, VKA_VIEW_BUFFER));
        VKA_TRY(bind_whole(b, &avg.bind[VKA_AVERAGE_W], VKA_ROLE_WEIGHTS, VKA_VIEW_BUFFER));
        avg.push.average = (vka_average_push){
            .H = c->H_active, .L = p->L, .S_ext = p->S_ext,
            .bh_begin = ch->bh_begin, .bh_count = ch->bh_count, .i_begin = ch->i_begin, .i_count = ch->i_count,
            .b_begin = b_begin, .b_count = b_end - b_begin + 1,
            .inv_heads = 1.0f / (float)c->H_active, .group_count = (uint32_t)ceil_div64(items, wg),
        };
        VKA_TRY(push_step(b, &avg, items, wg));
    }

    /* P·V over key ranges that fit the loop budget, summed in order through an fp32 accumulator. */
    uint64_t range_len = min64(budget_left(b, 1), p->S_ext);
    uint32_t ranges = (uint32_t)ceil_div64(p->S_ext, range_len);
    vka_step pv = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_PV, .kernel = VKA_KERNEL_PV,
                   .f16_out = b->plan->role_dtype[VKA_ROLE_CTX] == VKATTN_DTYPE_F16, .barrier_before = 1,
                   .binding_count = VKA_PV_BINDINGS};
    pv.spec[VKA_SPEC_WG_SIZE] = pr->pv_wg;
    pv.spec[VKA_SPEC_TILE_A] = pr->pv_tile_q;
    pv.spec[VKA_SPEC_TILE_B] = pr->pv_tile_d;
    pv.spec[VKA_SPEC_VEC] = vec;
    pv.spec[VKA_SPEC_DV] = DV;
    if (ranges > 1) VKA_TRY(reserve_workspace(b, VKA_ROLE_CTX_ACC, (uint64_t)p->B * p->L * c->inner));
    VKA_TRY(bind_whole(b, &pv.bind[VKA_PV_P], probs, VKA_VIEW_SCALAR));
    VKA_TRY(bind_whole(b, &pv.bind[VKA_PV_V], l->v, (uint8_t)vec));
    VKA_TRY(bind_whole(b, &pv.bind[VKA_PV_CTX], VKA_ROLE_CTX, VKA_VIEW_BUFFER));
    VKA_TRY(bind_whole(b, &pv.bind[VKA_PV_ACC], ranges > 1 ? VKA_ROLE_CTX_ACC : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    uint32_t pv_tiles_i = ceil_div(ch->i_count, pr->pv_tile_q), tiles_d = ceil_div(DV, pr->pv_tile_d);
    uint64_t pv_invocations = (uint64_t)ch->bh_count * pv_tiles_i * tiles_d;
    for (uint32_t r = 0; r < ranges; r++) {
        uint32_t j0 = (uint32_t)(r * range_len);
        pv.push.pv = (vka_pv_push){
            .L = p->L, .S_ext = p->S_ext, .H = c->H_active,
            .v_offset = l->v_offset / vec, .v_stride = l->v_stride / vec, .kv_rows = l->kv_rows,
            .ctx_stride = c->inner,
            .bh_begin = ch->bh_begin, .bh_count = ch->bh_count, .i_begin = ch->i_begin, .i_count = ch->i_count,
            .j_begin = j0, .j_count = (uint32_t)min64(range_len, p->S_ext - j0),
            .acc_in = r > 0, .acc_out = r + 1 < ranges,
            .tiles_d = tiles_d, .tiles_i = pv_tiles_i,
        };
        VKA_TRY(push_step(b, &pv, pv_invocations, pr->pv_wg));
    }
    b->plan->chunks++;
    return VKATTN_OK;
fail:
    return status;
}

/* Splits the B·H·L score rows into chunks whose probability block fits the budget. */
static vkattn_status add_unfused(builder *b, const qkv_layout *l)
{
    const vka_problem *p = b->p;
    const uint32_t BH = p->B * p->cfg.H_active;
    const uint64_t row = p->S_ext; /* floats per score row */
    vkattn_status status;

    if (p->weights == VKA_WEIGHTS_PER_HEAD) {
        /* The caller's (B,H,L,S') weights tensor is the probability buffer: one chunk. */
        chunk all = {0, BH, 0, p->L};
        return add_chunk(b, l, VKA_ROLE_WEIGHTS, &all);
    }
    if (p->weights == VKA_WEIGHTS_AVERAGED) {
        vka_step zero = {.kind = VKA_STEP_ZERO, .stage = VKATTN_STAGE_AVERAGE_HEADS, .binding_count = 1,
                         .barrier_before = 0};
        VKA_TRY(bind_whole(b, &zero.bind[0], VKA_ROLE_WEIGHTS, VKA_VIEW_BUFFER));
        VKA_TRY(push_step(b, &zero, 0, 1));
    }

    uint64_t budget = b->limits->max_storage_buffer_range;
    if (b->limits->scores_budget_bytes && b->limits->scores_budget_bytes < budget) budget = b->limits->scores_budget_bytes;
    if (b->limits->max_texel_elements * 4 < budget) budget = b->limits->max_texel_elements * 4;
    if (row * 4 > budget)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "one row of %u scores (%llu bytes) exceeds the score buffer limit of %llu bytes", p->S_ext,
                             (unsigned long long)(row * 4), (unsigned long long)budget);
    uint64_t head_bytes = (uint64_t)p->L * row * 4;
    if (head_bytes <= budget) {
        uint64_t heads = budget / head_bytes;
        uint32_t per = heads < BH ? (uint32_t)heads : BH;
        VKA_TRY(reserve_workspace(b, VKA_ROLE_SCORES, (uint64_t)per * p->L * row));
        for (uint32_t bh = 0; bh < BH; bh += per) {
            chunk ch = {bh, BH - bh < per ? BH - bh : per, 0, p->L};
            VKA_TRY(add_chunk(b, l, VKA_ROLE_SCORES, &ch));
        }
    } else {
        uint32_t rows = (uint32_t)(budget / (row * 4));
        VKA_TRY(reserve_workspace(b, VKA_ROLE_SCORES, (uint64_t)rows * row));
        for (uint32_t bh = 0; bh < BH; bh++) {
            for (uint32_t i = 0; i < p->L; i += rows) {
                chunk ch = {bh, 1, i, p->L - i < rows ? p->L - i : rows};
                VKA_TRY(add_chunk(b, l, VKA_ROLE_SCORES, &ch));
            }
        }
    }
    return VKATTN_OK;
fail:
    return status;
}

/* Element types: caller tensors as given, weights and activations in the storage dtype, biases
 * and every softmax quantity in fp32. */
static void assign_dtypes(const vka_problem *p, vka_plan *plan)
{
    vkattn_dtype storage = p->cfg.storage;
    for (int r = 0; r < VKA_ROLE_COUNT; r++) plan->role_dtype[r] = VKATTN_DTYPE_F32;
    plan->role_dtype[VKA_ROLE_QUERY] = p->query_dtype;
    plan->role_dtype[VKA_ROLE_KEY] = p->key_dtype;
    plan->role_dtype[VKA_ROLE_VALUE] = p->value_dtype;
    plan->role_dtype[VKA_ROLE_OUTPUT] = p->output_dtype;
    plan->role_dtype[VKA_ROLE_KEY_PADDING_MASK] = VKATTN_DTYPE_BOOL;
    plan->role_dtype[VKA_ROLE_VALID_LENS] = VKATTN_DTYPE_I32;
    plan->role_dtype[VKA_ROLE_ATTN_MASK] =
        p->attn_mask == VKA_ATTN_MASK_BOOL ? VKATTN_DTYPE_BOOL : VKATTN_DTYPE_F32;
    const vka_role stored[] = {VKA_ROLE_W_IN,    VKA_ROLE_W_K,    VKA_ROLE_W_V,   VKA_ROLE_W_OUT,
                               VKA_ROLE_EXTRA_K, VKA_ROLE_EXTRA_V, VKA_ROLE_QKV,  VKA_ROLE_K_PROJ,
                               VKA_ROLE_V_PROJ,  VKA_ROLE_CTX};
    for (size_t i = 0; i < sizeof stored / sizeof stored[0]; i++) plan->role_dtype[stored[i]] = storage;
}

/* Bytes of every caller tensor and layer weight (the workspaces get theirs as they are reserved). */
static void assign_sizes(const vka_problem *p, vka_plan *plan)
{
    const vka_layer_config *c = &p->cfg;
    uint64_t elems[VKA_ROLE_COUNT] = {0};
    const uint64_t I = c->inner, kv = (uint64_t)p->B * p->S;
    elems[VKA_ROLE_QUERY] = vka_problem_query_elems(p);
    elems[VKA_ROLE_KEY] = p->self_attention ? elems[VKA_ROLE_QUERY] : kv * c->kdim;
    elems[VKA_ROLE_VALUE] = p->self_attention ? elems[VKA_ROLE_QUERY] : kv * c->vdim;
    elems[VKA_ROLE_KEY_PADDING_MASK] = p->key_padding_mask ? kv : 0;
    elems[VKA_ROLE_VALID_LENS] = vka_problem_valid_lens_elems(p);
    elems[VKA_ROLE_ATTN_MASK] = vka_problem_attn_mask_elems(p);
    elems[VKA_ROLE_OUTPUT] = vka_problem_output_elems(p);
    elems[VKA_ROLE_WEIGHTS] = vka_problem_weights_elems(p);
    elems[VKA_ROLE_LSE] = p->lse ? (uint64_t)p->B * c->H * p->L : 0;
    elems[VKA_ROLE_W_IN] = (c->packed_in_proj ? 3 : 1) * I * c->E;
    elems[VKA_ROLE_W_K] = c->packed_in_proj ? 0 : I * c->kdim;
    elems[VKA_ROLE_W_V] = c->packed_in_proj ? 0 : I * c->vdim;
    elems[VKA_ROLE_B_IN] = c->bias ? 3 * I : 0;
    elems[VKA_ROLE_W_OUT] = (uint64_t)c->E * I;
    elems[VKA_ROLE_B_OUT] = c->bias ? c->E : 0;
    elems[VKA_ROLE_EXTRA_K] = elems[VKA_ROLE_EXTRA_V] = (uint64_t)c->extra_keys * I;
    for (int r = 0; r < VKA_ROLE_COUNT; r++) plan->role_bytes[r] = elems[r] * vkattn_dtype_size(plan->role_dtype[r]);
}

vkattn_status vka_plan_build(const vka_problem *p, const vka_plan_limits *limits, vka_plan *plan, vkattn_error *error)
{
    builder b = {p, limits, limits->profile, plan, error, limits->loop_budget ? limits->loop_budget : UINT64_MAX};
    plan->step_count = 0;
    plan->copy_count = 0;
    plan->chunks = 0;
    plan->key_parts = plan->key_chunks = 0;
    plan->fused_qkv = 0;
    memset(plan->workspace_bytes, 0, sizeof plan->workspace_bytes);
    assign_dtypes(p, plan);
    assign_sizes(p, plan);
    plan->path = p->path != VKATTN_PATH_AUTO ? p->path
                 : p->weights != VKA_WEIGHTS_NONE ? VKATTN_PATH_UNFUSED
                                                  : VKATTN_PATH_FUSED;
    if (plan->path == VKATTN_PATH_FUSED && p->weights != VKA_WEIGHTS_NONE)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "attention weights need the unfused path (the fused kernel never forms them)");
    if (plan->path == VKATTN_PATH_UNFUSED && p->lse)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "the log-sum-exp output needs the fused path");
    if (plan->path != VKATTN_PATH_FUSED && plan->path != VKATTN_PATH_UNFUSED)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "the device plan serves the fused and unfused paths");

    vkattn_status status;
    qkv_layout l;
    VKA_TRY(reserve_workspace(&b, VKA_ROLE_CTX, (uint64_t)p->B * p->L * p->cfg.inner));
    VKA_TRY(add_input_projections(&b, &l));
    if (plan->path == VKATTN_PATH_FUSED) VKA_TRY(add_fused(&b, &l));
    else VKA_TRY(add_unfused(&b, &l));
    /* output (B·L, E) = ctx (B·L, I) · W_O (E, I)^T + b_O, W_O holding the active heads' columns */
    const uint32_t BL = p->B * p->L;
    matmul_args out = {.stage = VKATTN_STAGE_OUT_PROJECTION, .a = VKA_ROLE_CTX, .w = VKA_ROLE_W_OUT,
                       .bias = p->cfg.bias ? VKA_ROLE_B_OUT : VKA_ROLE_NONE, .c = VKA_ROLE_OUTPUT,
                       .M = BL, .N = p->cfg.E, .K = p->cfg.inner, .lda = p->cfg.inner, .ldc = p->cfg.E,
                       .rows_per_batch = BL, .batch_stride = BL, .barrier_before = 1};
    VKA_TRY(add_matmul(&b, &out));
    return VKATTN_OK;
fail:
    return status;
}

void vka_plan_free(vka_plan *plan)
{
    free(plan->steps);
    free(plan->copies);
    memset(plan, 0, sizeof *plan);
}

uint64_t vka_plan_workspace_total(const vka_plan *plan)
{
    uint64_t total = 0;
    for (int r = VKA_FIRST_WORKSPACE_ROLE; r < VKA_ROLE_COUNT; r++) total += plan->workspace_bytes[r];
    return total;
}
