/* The projections: Q, K and V into head-major workspaces, and the output projection. Each matmul
 * is cut into reduction parts within the loop budget and into blocks whose slices of A, W and C
 * fit one binding. */
#include "plan/matmul.h"

#include <string.h>

#include "common/error.h"
#include "problem/rope.h"

/* C(M,N) = A(M,K) · W(N,K)^T + bias(N), offsets and strides in elements. A row m at
 * a_offset + m * lda; C element (m, n) at c_index() (see vka_matmul_push in abi.h). */
typedef struct matmul_args {
    vkattn_stage stage;
    vka_role a, w, bias, c;
    uint32_t M, N, K;
    uint64_t a_offset, lda, w_offset, bias_offset;
    uint64_t c_offset, c_row, c_col_block, c_block, rows_per_batch, batch_stride;
    int barrier_before;
} matmul_args;

static uint64_t c_index(const matmul_args *m, uint64_t row, uint64_t col)
{
    return m->c_offset + row / m->rows_per_batch * m->batch_stride + row % m->rows_per_batch * m->c_row +
           col / m->c_col_block * m->c_block + col % m->c_col_block;
}

/* The register tile and workgroup of a matmul of M rows: the tuning's, or for a few rows (decoding
 * steps) only as many rows as there are, with narrow column tiles in small workgroups, so that the
 * weight, the whole cost, is read by many invocations spread over the device instead of a few
 * computing the same row 16 times. */
typedef struct matmul_shape {
    uint32_t tile_m, tile_n, wg;
} matmul_shape;

static matmul_shape shape_for(const vka_tuning *pr, uint32_t M)
{
    if (M >= pr->matmul_tile_m) return (matmul_shape){pr->matmul_tile_m, pr->matmul_tile_n, pr->matmul_wg};
    uint32_t rows = 1;
    while (rows < M) rows <<= 1;
    return (matmul_shape){rows, pr->matmul_skinny_tile_n, pr->matmul_skinny_wg};
}

typedef vka_matmul_cm_tile cm_shape;

static uint32_t round_up(uint32_t x, uint32_t unit) { return (x + unit - 1) / unit * unit; }

vka_matmul_cm_tile vka_matmul_cm_tile_for(const vka_tuning *t, const vka_plan_limits *limits, uint32_t M, uint32_t N)
{
    const vkattn_matrix_shape ms = limits->matrix_shape;
    const cm_shape none = {0};
    if (!t->cm_frags_m || !ms.m || !ms.n || !ms.k || M < t->cm_min_rows) return none;
    if (ms.k % 8) return none; /* the staged rows are f16vec4: matrix steps of whole texels, 16-byte aligned */
    const int narrow = ms.m < 16 && t->cm_frags_narrow;
    const uint32_t fm = narrow ? t->cm_frags_narrow : t->cm_frags_m, fn = narrow ? t->cm_frags_narrow : t->cm_frags_n;
    /* two staged blocks where they fit, else one, else half the subgroups across (half the tile's
     * columns), down to 2 across (2 x 2 subgroups sharing their staged blocks): a device with less
     * shared memory or smaller workgroups keeps a matrix tile (the coopmat class's 2 x 8 is 2 x 4 in
     * 32 KiB), while a tuning whose subgroups' own tiles are too large still takes the next kernel */
    const uint64_t two_waves = N ? vka_two_waves(limits) : 0;
    cm_shape fitting = none;
    for (uint32_t sgs_n = t->cm_subgroups_n; sgs_n >= 1; sgs_n = sgs_n > 2 ? sgs_n / 2 : 0) {
        cm_shape s = {2 * fm * ms.m, sgs_n * fn * ms.n, round_up(t->cm_ksteps * ms.k, 4),
                      2 * sgs_n * limits->subgroup_size, sgs_n, t->cm_stages};
        if (s.tile_k % ms.k) s.tile_k *= ms.k; /* whole matrix steps and whole texels of 4 */
        if (!vka_matrix_workgroup_fits(limits, s.wg)) continue;
        for (; s.stages >= 1; s.stages--)
            if (vka_matmul_cm_shared_bytes(s.tile_m, s.tile_n, s.tile_k, ms, sgs_n, s.stages) <= limits->max_shared_bytes)
                break;
        if (s.stages == 0) continue;
        fitting = s; /* narrower tiles: more workgroups */
        if ((uint64_t)((M + s.tile_m - 1) / s.tile_m) * ((N + s.tile_n - 1) / s.tile_n) >= two_waves) return s;
    }
    return fitting;
}

uint32_t vka_matmul_cm_flags(const vka_tuning *t, const vka_matmul_cm_tile *tile)
{
    /* two staged blocks fetch a block ahead in any case: the flags say what the kernel does */
    return (t->cm_prefetch || tile->stages == 2 ? VKA_MATMUL_PREFETCH : 0) |
           (tile->stages == 2 ? VKA_MATMUL_TWO_STAGES : 0);
}

uint64_t vka_matmul_sm_shared_bytes(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k)
{
    return ((uint64_t)tile_m + 4 + tile_n + 4) * tile_k * 4;
}

vka_matmul_cm_tile vka_matmul_sm_tile_for(const vka_tuning *t, const vka_plan_limits *limits, uint32_t M)
{
    const cm_shape none = {0};
    if (!t->sm_tile_m || !t->sm_tile_n || !t->sm_tile_k || M < t->sm_tile_m) return none;
    cm_shape s = {t->sm_tile_m, t->sm_tile_n, round_up(t->sm_tile_k, 4), t->sm_tile_m * t->sm_tile_n / 16};
    if (t->sm_tile_m % 4 || t->sm_tile_n % 4 ||
        vka_matmul_sm_shared_bytes(s.tile_m, s.tile_n, s.tile_k) > limits->max_shared_bytes ||
        (limits->max_workgroup_invocations && s.wg > limits->max_workgroup_invocations))
        return none;
    return s;
}

/* matmul_vec: the matrix-vector product of up to this many rows (decoding steps) */
#define VEC_MAX_ROWS 8

vka_matmul_cm_tile vka_matmul_vec_tile_for(const vka_tuning *t, const vka_plan_limits *limits, uint32_t M)
{
    const cm_shape none = {0};
    if (!t->vec_wg || !t->vec_tile_n || !limits->subgroup_sums || M > VEC_MAX_ROWS) return none;
    uint32_t rows = 1;
    while (rows < M) rows <<= 1;
    cm_shape s = {rows, t->vec_tile_n, 0, t->vec_wg};
    /* the sums' shared memory: a float per output per subgroup of at least 4 lanes */
    if (s.wg % 4 || s.wg < rows * s.tile_n || (uint64_t)rows * s.tile_n * (s.wg / 4) * 4 > limits->max_shared_bytes ||
        (limits->max_workgroup_invocations && s.wg > limits->max_workgroup_invocations))
        return none;
    return s;
}

/* Whether the reduction and every row of A and W start on a whole texel of `vec` elements. */
static int whole_texels(const matmul_args *m, uint32_t vec)
{
    return m->K % vec == 0 && m->lda % vec == 0 && m->a_offset % vec == 0 && m->w_offset % vec == 0;
}

/* The kernel for a layer's matmul, its tile (wg 0 for matmul.comp, whose shape is shape_for's)
 * and its texels' elements (vec: 4 where the rows allow, else 1; 8 for matmul_vec_storage, and for
 * matmul_cm with cm_wide_loads where A and W hold fp16), in order of preference: matmul_cm for a
 * layer with fp16 operands (precision F16, resolved from the storage by default), matmul_sm,
 * matmul_vec (matmul_vec_storage where the tuning asks and the rows start on 8-element texels). */
typedef struct matmul_choice {
    vka_kernel kernel;
    cm_shape tile;
    uint32_t vec;
} matmul_choice;

static matmul_choice matmul_choice_for(const vka_builder *b, const matmul_args *m)
{
    const uint32_t vec = whole_texels(m, 4) ? 4 : 1;
    cm_shape t = {0};
    if (b->p->cfg.precision == VKATTN_PRECISION_F16 && (t = vka_matmul_cm_tile_for(b->tuning, b->limits, m->M, m->N)).wg) {
        const int halves = b->plan->role_dtype[m->a] == VKATTN_DTYPE_F16 && b->plan->role_dtype[m->w] == VKATTN_DTYPE_F16;
        return (matmul_choice){VKA_KERNEL_MATMUL_CM, t, b->tuning->cm_wide_loads && halves && whole_texels(m, 8) ? 8 : vec};
    }
    if ((t = vka_matmul_sm_tile_for(b->tuning, b->limits, m->M)).wg)
        return (matmul_choice){VKA_KERNEL_MATMUL_SM, t, vec};
    if ((t = vka_matmul_vec_tile_for(b->tuning, b->limits, m->M)).wg)
        return b->tuning->vec_storage && whole_texels(m, 8) ? (matmul_choice){VKA_KERNEL_MATMUL_VEC_STORAGE, t, 8}
                                                             : (matmul_choice){VKA_KERNEL_MATMUL_VEC, t, vec};
    return (matmul_choice){VKA_KERNEL_MATMUL, t, vec};
}

uint64_t vka_matmul_cm_shared_bytes(uint32_t tile_m, uint32_t tile_n, uint32_t tile_k, vkattn_matrix_shape ms,
                                    uint32_t subgroups_n, uint32_t stages)
{
    /* matmul_cm.comp: fp16 rows of TILE_K + 8 for A's and B's tiles (per stage), an fp32
     * accumulator per subgroup */
    return (uint64_t)stages * (tile_m + tile_n) * (tile_k + 8) * 2 + 2ull * subgroups_n * ms.m * ms.n * 4;
}

/* Whether matmul_cm may store its accumulators whole into C (VKA_MATMUL_DIRECT) for a block of
 * mc x nc of C at element c_shift of its binding, rows in batch items of rpb apart by bs: the
 * tuning asks, the part is the first (no ACCUMULATE), every tile is whole, a matrix's rows stay in
 * one batch item and its columns in one block of C's, and where each of its rows starts is a
 * multiple of 16 bytes (the store's rule; the binding's start is, where the device aligns storage
 * bindings to 16); an fp16 C needs the fp16 M x N matrix it converts to listed. */
static int matmul_cm_direct(const vka_builder *b, const matmul_args *m, matmul_shape sh, uint32_t mc, uint32_t nc,
                            uint64_t rpb, uint64_t bs, uint64_t c_shift, int first_part, int f16_out)
{
    const vkattn_matrix_shape ms = b->limits->matrix_shape;
    const uint64_t unit = f16_out ? 8 : 4; /* elements in 16 bytes */
    const int col_blocks = m->c_col_block < nc;
    return b->tuning->cm_direct && first_part && ms.m && ms.n && (!f16_out || vka_matrix_f16_mn_listed(ms)) &&
           b->limits->storage_offset_alignment && b->limits->storage_offset_alignment % 16 == 0 &&
           mc % sh.tile_m == 0 && nc % sh.tile_n == 0 && rpb % ms.m == 0 && (!col_blocks || m->c_col_block % ms.n == 0) &&
           c_shift % unit == 0 && m->c_row % unit == 0 && (ms.n * (f16_out ? 2 : 4)) % 16 == 0 &&
           (!col_blocks || m->c_block % unit == 0) && (bs == 0 || bs % unit == 0);
}

/* One dispatch: rows [m0, m0 + mc) and columns [n0, n0 + nc) of C, reduction texels [k0, k0 + kc).
 * n0 is a multiple of c_col_block; the rows are whole batch items of C's row mapping or stay
 * inside one (then they are addressed as one plain block). With `emit` 0 it only checks that
 * the slices fit. */
static vkattn_status matmul_block(vka_builder *b, const matmul_args *m, uint32_t vec, uint32_t m0, uint32_t mc,
                                  uint32_t n0, uint32_t nc, uint32_t k0, uint32_t kc, int first_part, int barrier,
                                  int emit)
{
    matmul_shape sh = shape_for(b->tuning, m->M);
    const matmul_choice ch = matmul_choice_for(b, m);
    vkattn_status status;
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = m->stage, .kernel = ch.kernel,
                  .f16_out = b->plan->role_dtype[m->c] == VKATTN_DTYPE_F16, .barrier_before = barrier,
                  .binding_count = VKA_MATMUL_BINDINGS};
    if (ch.tile.wg) /* a workgroup per tile of C (matmul_vec's invocations striding the reduction) */
        sh = (matmul_shape){ch.tile.tile_m, ch.tile.tile_n, ch.tile.wg};
    if (ch.kernel == VKA_KERNEL_MATMUL_CM) {
        s.spec[VKA_SPEC_MAT_M] = b->limits->matrix_shape.m;
        s.spec[VKA_SPEC_MAT_N] = b->limits->matrix_shape.n;
        s.spec[VKA_SPEC_MAT_K] = b->limits->matrix_shape.k;
        s.spec[VKA_SPEC_SUBGROUPS_N] = ch.tile.subgroups_n;
    }
    if (ch.kernel == VKA_KERNEL_MATMUL_CM || ch.kernel == VKA_KERNEL_MATMUL_SM) s.spec[VKA_SPEC_TILE_K] = ch.tile.tile_k;
    s.spec[VKA_SPEC_WG_SIZE] = sh.wg;
    s.spec[VKA_SPEC_TILE_A] = sh.tile_m;
    s.spec[VKA_SPEC_TILE_B] = sh.tile_n;
    s.spec[VKA_SPEC_VEC] = vec;
    s.spec[VKA_SPEC_FLAGS] = first_part ? 0 : VKA_MATMUL_ACCUMULATE;
    if (ch.kernel == VKA_KERNEL_MATMUL_CM) s.spec[VKA_SPEC_FLAGS] |= vka_matmul_cm_flags(b->tuning, &ch.tile);
    uint64_t rpb = m->rows_per_batch, bs = m->batch_stride;
    if (m0 % rpb != 0 || mc % rpb != 0) rpb = mc, bs = 0; /* inside one batch item: a plain block */
    uint64_t c_first = c_index(m, m0, n0), c_last = c_index(m, (uint64_t)m0 + mc - 1, (uint64_t)n0 + nc - 1);
    uint64_t a_shift, w_shift, c_shift, bias_shift = 0;
    const uint64_t a_first = m->a_offset + (uint64_t)m0 * m->lda, a_count = (uint64_t)(mc - 1) * m->lda + m->K;
    const uint64_t w_first = m->w_offset + (uint64_t)n0 * m->K, w_count = (uint64_t)nc * m->K;
    if (ch.kernel == VKA_KERNEL_MATMUL_CM || ch.kernel == VKA_KERNEL_MATMUL_VEC_STORAGE) {
        /* storage buffers: a GPU's load path (see matmul_cm.comp), in vectors of 4 or 8 elements */
        const uint32_t width = vec == 8 ? 8 : 4;
        VKA_TRY(vka_bind_vectors(b, &s.bind[VKA_MATMUL_A], m->a, width, a_first, a_count, &a_shift));
        VKA_TRY(vka_bind_vectors(b, &s.bind[VKA_MATMUL_B], m->w, width, w_first, w_count, &w_shift));
        if (b->plan->role_dtype[m->a] == VKATTN_DTYPE_F16) s.spec[VKA_SPEC_FLAGS] |= VKA_MATMUL_A_F16;
        if (b->plan->role_dtype[m->w] == VKATTN_DTYPE_F16) s.spec[VKA_SPEC_FLAGS] |= VKA_MATMUL_B_F16;
    } else {
        VKA_TRY(vka_bind_elems(b, &s.bind[VKA_MATMUL_A], m->a, (uint8_t)vec, a_first, a_count, &a_shift));
        VKA_TRY(vka_bind_elems(b, &s.bind[VKA_MATMUL_B], m->w, (uint8_t)vec, w_first, w_count, &w_shift));
    }
    if (m->bias != VKA_ROLE_NONE)
        VKA_TRY(vka_bind_elems(b, &s.bind[VKA_MATMUL_BIAS], m->bias, VKA_VIEW_SCALAR, m->bias_offset + n0, nc,
                               &bias_shift));
    else
        VKA_TRY(vka_bind_whole(b, &s.bind[VKA_MATMUL_BIAS], VKA_ROLE_NONE, VKA_VIEW_SCALAR));
    VKA_TRY(vka_bind_elems(b, &s.bind[VKA_MATMUL_C], m->c, VKA_VIEW_BUFFER, c_first, c_last - c_first + 1, &c_shift));
    if (ch.kernel == VKA_KERNEL_MATMUL_CM && matmul_cm_direct(b, m, sh, mc, nc, rpb, bs, c_shift, first_part, s.f16_out))
        s.spec[VKA_SPEC_FLAGS] |= VKA_MATMUL_DIRECT;
    if (!emit) return VKATTN_OK;
    uint32_t tiles_m = (uint32_t)vka_ceil_div(mc, sh.tile_m), tiles_n = (uint32_t)vka_ceil_div(nc, sh.tile_n);
    s.push.matmul = (vka_matmul_push){
        .M = mc, .N = nc, .K = kc,
        .a_offset = (uint32_t)(a_shift / vec) + k0, .lda = (uint32_t)(m->lda / vec),
        .b_offset = (uint32_t)(w_shift / vec) + k0, .ldb = m->K / vec,
        .bias_offset = (uint32_t)bias_shift,
        .c_offset = (uint32_t)c_shift, .c_row = (uint32_t)m->c_row,
        .c_col_block = (uint32_t)m->c_col_block, .c_block = (uint32_t)m->c_block,
        .rows_per_batch = (uint32_t)rpb, .batch_stride = (uint32_t)bs,
        .has_bias = m->bias != VKA_ROLE_NONE && first_part,
        .tiles_n = tiles_n,
        .group_rows = ch.kernel == VKA_KERNEL_MATMUL_CM   ? b->tuning->cm_group_rows
                      : ch.kernel == VKA_KERNEL_MATMUL_SM ? b->tuning->sm_group_rows
                                                          : 0,
    };
    /* invocations: a workgroup per tile, or (matmul.comp) one */
    return vka_push_step(b, &s, (uint64_t)tiles_m * tiles_n * (ch.tile.wg ? ch.tile.wg : 1), sh.wg);
fail:
    return status;
}

/* Walks the blocks of rows mc and columns nc (and the reduction parts when emitting). Blocks
 * after the first wait for it: slices of C may overlap in their byte ranges, and later parts of
 * a reduction read what earlier ones wrote. */
static vkattn_status matmul_blocks(vka_builder *b, const matmul_args *m, uint32_t vec, uint32_t mc, uint32_t nc,
                                   uint32_t kc, int emit)
{
    const uint32_t K = m->K / vec;
    vkattn_status status = VKATTN_OK;
    int barrier = m->barrier_before;
    for (uint32_t m0 = 0; m0 < m->M;) {
        uint32_t rows = (uint32_t)vka_min64(mc, m->M - m0);
        if (rows % m->rows_per_batch != 0) /* a part of one batch item must not cross into the next */
            rows = (uint32_t)vka_min64(rows, m->rows_per_batch - m0 % m->rows_per_batch);
        for (uint32_t n0 = 0; n0 < m->N; n0 += nc) {
            uint32_t cols = (uint32_t)vka_min64(nc, m->N - n0);
            for (uint32_t k0 = 0; k0 < K; k0 += kc) {
                VKA_TRY(matmul_block(b, m, vec, m0, rows, n0, cols, k0, (uint32_t)vka_min64(kc, K - k0), k0 == 0,
                                     barrier, emit));
                barrier = 1;
                if (!emit) break; /* the parts bind the same slices */
            }
        }
        m0 += rows;
    }
fail:
    return status;
}

/* A matmul, cut to fit: reductions into parts within the loop budget, and, where a slice of A, W
 * or C would not fit one binding, into smaller blocks: columns first (whole column blocks, so a
 * head-major C keeps whole heads together), then rows (whole batch items where they fit). */
static vkattn_status add_matmul(vka_builder *b, const matmul_args *m)
{
    const vka_tuning *pr = b->tuning;
    const matmul_choice ch = matmul_choice_for(b, m);
    const uint32_t vec = ch.vec, K = m->K / vec;
    uint64_t part = vka_budget_left(b, 1); /* blocks of the reduction one part may take */
    if (part == 0) return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT, "the loop budget is too small for a matmul");
    /* A block is a texel (matmul.comp), TILE_K / vec texels (matmul_cm, matmul_sm) or a texel per
     * invocation (matmul_vec, matmul_vec_storage). */
    const int strided = ch.kernel == VKA_KERNEL_MATMUL_VEC || ch.kernel == VKA_KERNEL_MATMUL_VEC_STORAGE;
    uint64_t block = strided ? ch.tile.wg : ch.tile.wg ? ch.tile.tile_k / vec : 1;
    uint32_t kc = (uint32_t)vka_min64(part > UINT64_MAX / block ? UINT64_MAX : part * block, K);
    uint32_t n_unit = m->c_col_block < m->N ? (uint32_t)m->c_col_block : pr->matmul_tile_n;
    uint32_t nc = m->N, mc = m->M;
    vkattn_error quiet = {0};
    vkattn_error *error = b->error;
    for (;;) {
        b->error = &quiet; /* trying sizes: a slice that does not fit is not an error yet */
        vkattn_status status = matmul_blocks(b, m, vec, mc, nc, kc, 0);
        b->error = error;
        if (status == VKATTN_OK) break;
        if (status != VKATTN_ERROR_DEVICE_LIMIT) return vka_error_set(error, status, "%s", quiet.message);
        if (nc > n_unit) {
            nc = (uint32_t)vka_ceil_div(nc / 2, n_unit) * n_unit;
            if (nc >= m->N) nc = (uint32_t)((m->N - 1) / n_unit * n_unit);
        } else if (mc > pr->matmul_tile_m) {
            uint32_t half = mc / 2;
            mc = half >= m->rows_per_batch ? (uint32_t)(half / m->rows_per_batch * m->rows_per_batch)
                                           : (half > pr->matmul_tile_m ? half / pr->matmul_tile_m * pr->matmul_tile_m
                                                                       : pr->matmul_tile_m);
        } else {
            return vka_error_set(error, VKATTN_ERROR_DEVICE_LIMIT, "%s: %s", vkattn_stage_name(m->stage), quiet.message);
        }
    }
    return matmul_blocks(b, m, vec, mc, nc, kc, 1);
}

/* Puts the extra keys and values (bias_k, the zero key) after each head's S projected ones: one
 * copy step for K and one for V, a region per (batch item, head) from the layer's head-major
 * (H', extra, D) rows. The barrier before each copy is needed: validation (rightly) counts a
 * dispatch's storage writes as covering its whole binding. */
static vkattn_status add_extra_key_copies(vka_builder *b, const vka_qkv_layout *l)
{
    const vka_problem *p = b->p;
    const uint32_t D = p->cfg.D, extra = p->cfg.extra_keys, H = p->cfg.inner_kv / p->cfg.D; /* K/V heads */
    vkattn_status status = VKATTN_OK;
    if (extra == 0) return VKATTN_OK;
    for (int kv = 0; kv < 2; kv++) {
        vka_step s = {.kind = VKA_STEP_COPY, .stage = VKATTN_STAGE_QKV_PROJECTION, .binding_count = 2,
                      .copy_first = b->plan->copy_count, .barrier_before = 1};
        s.bind[0].role = kv ? VKA_ROLE_EXTRA_V : VKA_ROLE_EXTRA_K;
        s.bind[1].role = kv ? l->v : l->k;
        uint64_t offset = kv ? l->v_offset : l->k_offset;
        for (uint32_t batch = 0; batch < p->B; batch++) {
            for (uint32_t h = 0; h < H; h++) {
                uint64_t at = offset + batch * l->kv_batch + h * l->kv_head + (uint64_t)p->S * l->kv_row;
                VKA_TRY(vka_push_copy(b, &(vka_copy){(uint64_t)h * extra * D, at, (uint64_t)extra * D}));
                s.copy_count++;
            }
        }
        VKA_TRY(vka_push_step(b, &s, 0, 1));
    }
fail:
    return status;
}

vkattn_status vka_plan_input_projections(vka_builder *b, vka_qkv_layout *out)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    /* E: the query's features; I = H'·D: the projected width (all heads, or the active ones);
     * Ik = Hk·D: the projected K/V width (Hk = H' / group, the K/V heads those heads read). */
    const uint64_t E = c->E, I = c->inner, H = c->H_active, D = c->D, B = p->B, L = p->L, S = p->S, Sx = p->S_ext;
    const uint64_t Ik = c->inner_kv, Hk = Ik / D;
    const matmul_args base = {.stage = VKATTN_STAGE_QKV_PROJECTION, .a = VKA_ROLE_QUERY, .w = VKA_ROLE_W_IN,
                              .bias = c->bias ? VKA_ROLE_B_IN : VKA_ROLE_NONE, .c_row = D, .c_col_block = D};
    vkattn_status status;
    b->plan->qkv_one_matmul = p->self_attention;
    if (b->plan->qkv_one_matmul) {
        /* One matmul, one buffer (B, H' + 2 Hk, S', D): the Q heads, then the K heads, then the V
         * heads, S' rows per head. */
        const uint64_t heads = H + 2 * Hk;
        VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_QKV, B * heads * Sx * D));
        matmul_args m = base;
        m.c = VKA_ROLE_QKV, m.M = (uint32_t)(B * L), m.N = (uint32_t)(I + 2 * Ik), m.K = (uint32_t)E, m.lda = E;
        m.rows_per_batch = L, m.batch_stride = heads * Sx * D, m.c_block = Sx * D;
        VKA_TRY(add_matmul(b, &m));
        *out = (vka_qkv_layout){.q = VKA_ROLE_QKV, .k = VKA_ROLE_QKV, .v = VKA_ROLE_QKV,
                                .q_offset = 0, .q_batch = heads * Sx * D, .q_head = Sx * D, .q_row = D,
                                .k_offset = H * Sx * D, .v_offset = (H + Hk) * Sx * D,
                                .kv_batch = heads * Sx * D, .kv_head = Sx * D, .kv_row = D};
    } else {
        /* Q (B, H', L, D), K and V (B, Hk, S', D). Packed weights: W_Q, W_K, W_V are row blocks of
         * one (I + 2 Ik, E) matrix, and the bias is always (I + 2 Ik). */
        VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_QKV, B * H * L * D));
        VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_K_PROJ, B * Hk * Sx * D));
        VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_V_PROJ, B * Hk * Sx * D));
        int packed = c->packed_in_proj;
        matmul_args q = base, k = base, v = base;
        q.c = VKA_ROLE_QKV, q.M = (uint32_t)(B * L), q.N = (uint32_t)I, q.K = (uint32_t)E, q.lda = E;
        q.rows_per_batch = L, q.batch_stride = H * L * D, q.c_block = L * D;
        k.a = VKA_ROLE_KEY, k.w = packed ? VKA_ROLE_W_IN : VKA_ROLE_W_K, k.c = VKA_ROLE_K_PROJ;
        k.M = (uint32_t)(B * S), k.N = (uint32_t)Ik, k.K = c->kdim, k.lda = c->kdim, k.w_offset = packed ? I * E : 0;
        k.bias_offset = I, k.rows_per_batch = S, k.batch_stride = Hk * Sx * D, k.c_block = Sx * D;
        v = k;
        v.a = VKA_ROLE_VALUE, v.w = packed ? VKA_ROLE_W_IN : VKA_ROLE_W_V, v.c = VKA_ROLE_V_PROJ;
        v.K = c->vdim, v.lda = c->vdim, v.w_offset = packed ? (I + Ik) * E : 0, v.bias_offset = I + Ik;
        VKA_TRY(add_matmul(b, &q));
        VKA_TRY(add_matmul(b, &k));
        VKA_TRY(add_matmul(b, &v));
        *out = (vka_qkv_layout){.q = VKA_ROLE_QKV, .k = VKA_ROLE_K_PROJ, .v = VKA_ROLE_V_PROJ,
                                .q_offset = 0, .q_batch = H * L * D, .q_head = L * D, .q_row = D,
                                .k_offset = 0, .v_offset = 0, .kv_batch = Hk * Sx * D, .kv_head = Sx * D, .kv_row = D};
    }
    return add_extra_key_copies(b, out);
fail:
    return status;
}

vkattn_status vka_plan_output_projection(vka_builder *b)
{
    const vka_problem *p = b->p;
    const uint32_t BL = p->B * p->L, E = p->cfg.E, I = p->cfg.inner;
    /* output (B·L, E) = ctx (B·L, I) · W_O (E, I)^T + b_O, W_O holding the active heads' columns */
    matmul_args out = {.stage = VKATTN_STAGE_OUT_PROJECTION, .a = VKA_ROLE_CTX, .w = VKA_ROLE_W_OUT,
                       .bias = p->cfg.bias ? VKA_ROLE_B_OUT : VKA_ROLE_NONE, .c = VKA_ROLE_OUTPUT,
                       .M = BL, .N = E, .K = I, .lda = I,
                       .c_row = E, .c_col_block = E, .rows_per_batch = BL, .batch_stride = (uint64_t)BL * E,
                       .barrier_before = 1};
    return add_matmul(b, &out);
}

/* Where a rope step's rows are: `heads` heads of `rows` rows per batch item of B, from element
 * `offset` of `role`; heads from `k_first` on are K's (their norm weights follow Q's). */
typedef struct rope_rows {
    vka_role role;
    uint64_t offset, batch_stride, head_stride, heads, rows;
    uint32_t first_position;
    int positions_in_meta;
    uint64_t k_first;
} rope_rows;

/* Whether a rope step over `items` batch items of `heads` heads binds within one binding (with room
 * for a slice's alignment). */
static int rope_part_fits(const vka_builder *b, const rope_rows *r, uint64_t items, uint64_t heads)
{
    const uint64_t elems = (items - 1) * r->batch_stride + heads * r->head_stride;
    return vka_fits_binding(b, r->role, VKA_VIEW_BUFFER,
                            elems * vka_elem_bytes(b, r->role) + b->limits->storage_offset_alignment + 16);
}

/* The rope steps (with the q/k norm when the layer has one): the rows' batch items and heads in
 * parts that each fit one binding (a head's rows are one span per batch item, so a part binds only
 * its spans); a row norm takes a row's heads whole, and a part of one item and one head (or one
 * row's heads) that does not fit is refused (DEVICE_LIMIT). Each part waits for the projection
 * (and orders the writes to one buffer: parts' bindings may share their aligned edges). A row norm
 * is a step of Q's heads or of K's, never both. */
static vkattn_status add_rope(vka_builder *b, const rope_rows *r, vka_role table)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    const uint32_t pairs = c->rope_dim / 2;
    const int row = c->qk_norm == VKATTN_QK_NORM_ROW, head = c->qk_norm == VKATTN_QK_NORM_HEAD;
    vkattn_status status;
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_QKV_PROJECTION, .kernel = VKA_KERNEL_ROPE,
                  .f16_out = b->plan->role_dtype[r->role] == VKATTN_DTYPE_F16, .barrier_before = 1,
                  .binding_count = VKA_ROPE_BINDINGS};
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_ROPE_FREQ], pairs ? table : VKA_ROLE_NONE, VKA_VIEW_SCALAR));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_ROPE_META], r->positions_in_meta ? VKA_ROLE_CACHE_META : VKA_ROLE_NONE,
                           VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_ROPE_NORM_W], c->qk_norm ? VKA_ROLE_QK_NORM : VKA_ROLE_NONE,
                           VKA_VIEW_BUFFER));
    s.spec[VKA_SPEC_FLAGS] = (r->positions_in_meta ? VKA_ROPE_POSITIONS : 0) | (head ? VKA_ROPE_NORM : 0) |
                             (row ? VKA_ROPE_NORM_ROW : 0);
    /* A row norm: a workgroup per row, wide enough to keep each invocation's share small. */
    uint32_t wg = 64;
    while (row && wg < 256 && r->heads * c->D > 16 * (uint64_t)wg) wg *= 2;
    s.spec[VKA_SPEC_WG_SIZE] = wg;
    /* Parts: all batch items and heads where they fit one binding, else fewer heads (a row norm
     * takes its row's heads whole), else one item at a time. */
    uint64_t items = p->B, part = r->heads;
    for (;;) {
        while (!row && part > 1 && !rope_part_fits(b, r, items, part)) part = (part + 1) / 2;
        if (items == 1 || rope_part_fits(b, r, items, part)) break;
        items = 1, part = r->heads;
    }
    for (uint64_t b0 = 0; b0 < p->B; b0 += items) {
        const uint64_t n = vka_min64(items, p->B - b0);
        for (uint64_t h0 = 0; h0 < r->heads; h0 += part) {
            const uint64_t heads = vka_min64(part, r->heads - h0), kf = h0 >= r->k_first ? 0 : r->k_first - h0;
            uint64_t shift;
            VKA_TRY(vka_bind_elems(b, &s.bind[VKA_ROPE_X], r->role, VKA_VIEW_BUFFER,
                                   r->offset + b0 * r->batch_stride + h0 * r->head_stride,
                                   (n - 1) * r->batch_stride + heads * r->head_stride, &shift));
            const uint64_t count = row ? n * r->rows : n * heads * r->rows * (head ? 1 : pairs);
            s.push.rope = (vka_rope_push){
                .offset = (uint32_t)shift, .batch_stride = (uint32_t)r->batch_stride,
                .head_stride = (uint32_t)r->head_stride, .row_stride = c->D, .heads = (uint32_t)heads,
                .rows = (uint32_t)r->rows, .pairs = pairs, .pos_offset = r->first_position,
                .gptj = c->rope_style == VKATTN_ROPE_GPTJ, .count = (uint32_t)count, .dim = c->D,
                .norm_offset = kf == 0 ? vka_qk_norm_width(c, 0) : 0, .k_first = (uint32_t)kf,
                .k_offset = vka_qk_norm_width(c, 0), .eps = c->qk_norm_eps, .factor = pairs ? c->rope_attention : 1.0f,
            };
            /* the norm's loops grow with the head dim (a row norm's with its heads per lane): a
             * budget too small for them is the layer's limit, not the planner's */
            const uint64_t trips = vka_rope_trips(&s);
            if (trips > b->budget)
                return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                     "the q/k norm over %s of %llu values needs %llu loop trips; this device's loop "
                                     "budget (%llu per invocation) is smaller",
                                     row ? "a row" : "a head", (unsigned long long)(row ? heads * c->D : c->D),
                                     (unsigned long long)trips, (unsigned long long)b->budget);
            VKA_TRY(vka_push_step(b, &s, row ? count * wg : count, wg));
        }
    }
fail:
    return status;
}

/* The q/k norms and RoPE, after the projections: one step over Q's and K's heads where they share a
 * layout (a cached forward's new tokens, self-attention), else one each. The rotary table is the
 * layer's own unless the forward's sequence needs another (problem/rope.h): that one is written
 * into the workspace first. */
vkattn_status vka_plan_rope(vka_builder *b, const vka_qkv_layout *l)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    const uint64_t D = c->D, Hq = c->inner / D, Hk = c->inner_kv / D;
    vkattn_status status;
    if (c->rope_dim == 0 && c->qk_norm == VKATTN_QK_NORM_NONE) return VKATTN_OK;
    vka_role table = VKA_ROLE_ROPE_FREQ;
    uint64_t seq_len = vka_rope_seq_len(p);
    if (c->rope_dim && vka_rope_table_varies(&c->rope_scaling, seq_len)) {
        float freq[VKA_ROPE_TABLE_MAX];
        if (c->rope_dim / 2 > VKA_ROPE_TABLE_MAX)
            return vka_error_set(b->error, VKATTN_ERROR_UNSUPPORTED,
                                 "a RoPE table of %u frequencies that changes with the sequence length: at most %u",
                                 c->rope_dim / 2, VKA_ROPE_TABLE_MAX);
        vka_rope_table(&c->rope_scaling, c->rope_theta, c->rope_dim, seq_len, freq);
        table = VKA_ROLE_ROPE_TABLE;
        VKA_TRY(vka_reserve_workspace(b, table, c->rope_dim / 2));
        VKA_TRY(vka_push_write(b, VKATTN_STAGE_QKV_PROJECTION, table, freq, c->rope_dim / 2));
    }
    /* Positions are aligned at the end (vka_rope_first_positions); a cached forward's are in meta. */
    uint32_t q_first = p->cache.seqs ? p->cache.positions_at : 0, k_first = q_first;
    if (!p->cache.seqs) vka_rope_first_positions(p, &q_first, &k_first);
    const int in_meta = p->cache.seqs != 0;
    rope_rows q = {l->q, l->q_offset, l->q_batch, l->q_head, Hq, p->L, q_first, in_meta, Hq};
    rope_rows k = {l->k, l->k_offset, l->kv_batch, l->kv_head, Hk, p->S, k_first, in_meta, 0};
    const int shared = l->q == l->k && l->q_batch == l->kv_batch && l->q_head == l->kv_head && p->L == p->S &&
                       q_first == k_first && l->k_offset == l->q_offset + Hq * l->q_head;
    if (shared && c->qk_norm != VKATTN_QK_NORM_ROW) { /* Q's heads then K's, (B, H + 2 H_kv, L, D) */
        q.heads += Hk;
        return add_rope(b, &q, table);
    }
    VKA_TRY(add_rope(b, &q, table));
    VKA_TRY(add_rope(b, &k, table));
fail:
    return status;
}

/* matmul: one loop over the reduction's texels (the register tile's loops are unrolled). */
uint64_t vka_matmul_trips(const vka_step *s) { return vka_loop(s->push.matmul.K); }

void vka_matmul_describe(vka_text *t, const vka_step *s)
{
    const vka_matmul_push *m = &s->push.matmul;
    vka_text_put(t, "C(%u, %u) = A·W^T over %u texels%s", m->M, m->N, m->K,
                 (s->spec[VKA_SPEC_FLAGS] & VKA_MATMUL_ACCUMULATE) ? ", added to C" : "");
}

/* matmul_cm: one loop over the reduction's blocks of TILE_K elements (staging, the matrix steps and
 * the epilogue are unrolled). */
uint64_t vka_matmul_cm_trips(const vka_step *s)
{
    return vka_loop(vka_ceil_div(s->push.matmul.K, s->spec[VKA_SPEC_TILE_K] / s->spec[VKA_SPEC_VEC]));
}

/* The tiles' order where it is grouped (VKA_TILE_ROW) and there is more than one group's rows. */
static void describe_group_rows(vka_text *t, const vka_step *s)
{
    const vka_matmul_push *c = &s->push.matmul;
    const uint32_t tiles_m = c->M ? (c->M + s->spec[VKA_SPEC_TILE_A] - 1) / s->spec[VKA_SPEC_TILE_A] : 0;
    if (c->group_rows > 1 && tiles_m > 1 && c->tiles_n > 1)
        vka_text_put(t, ", its tiles in groups of %u rows", c->group_rows < tiles_m ? c->group_rows : tiles_m);
}

void vka_matmul_cm_describe(vka_text *t, const vka_step *s)
{
    vka_matmul_describe(t, s);
    vka_text_put(t,
                 " on cooperative matrices (%ux%u tiles, %u-element blocks, %ux%ux%u matrices in %u subgroups, fp16 "
                 "operands%s%s%s%s)",
                 s->spec[VKA_SPEC_TILE_A], s->spec[VKA_SPEC_TILE_B], s->spec[VKA_SPEC_TILE_K], s->spec[VKA_SPEC_MAT_M],
                 s->spec[VKA_SPEC_MAT_N], s->spec[VKA_SPEC_MAT_K], 2 * s->spec[VKA_SPEC_SUBGROUPS_N],
                 s->spec[VKA_SPEC_VEC] == 8 ? " in 16-byte loads of 8" : "",
                 s->spec[VKA_SPEC_FLAGS] & VKA_MATMUL_PREFETCH ? ", the next block fetched meanwhile" : "",
                 s->spec[VKA_SPEC_FLAGS] & VKA_MATMUL_TWO_STAGES ? ", two staged blocks" : "",
                 s->spec[VKA_SPEC_FLAGS] & VKA_MATMUL_DIRECT ? ", accumulators stored whole into C" : "");
    describe_group_rows(t, s);
}

/* matmul_sm: one loop over the reduction's blocks of TILE_K elements, as matmul_cm. */
uint64_t vka_matmul_sm_trips(const vka_step *s) { return vka_matmul_cm_trips(s); }

void vka_matmul_sm_describe(vka_text *t, const vka_step *s)
{
    vka_matmul_describe(t, s);
    vka_text_put(t, " in shared-memory tiles (%ux%u tiles, %u-element blocks, fp32)", s->spec[VKA_SPEC_TILE_A],
                 s->spec[VKA_SPEC_TILE_B], s->spec[VKA_SPEC_TILE_K]);
    describe_group_rows(t, s);
}

/* matmul_vec: the reduction strided over the workgroup (the subgroups' sums are unrolled). */
uint64_t vka_matmul_vec_trips(const vka_step *s)
{
    return vka_loop(vka_ceil_div(s->push.matmul.K, s->spec[VKA_SPEC_WG_SIZE]));
}

void vka_matmul_vec_describe(vka_text *t, const vka_step *s)
{
    vka_matmul_describe(t, s);
    vka_text_put(t, " as matrix-vector products (%u rows x %u columns per workgroup of %u, %s, subgroup sums)",
                 s->spec[VKA_SPEC_TILE_A], s->spec[VKA_SPEC_TILE_B], s->spec[VKA_SPEC_WG_SIZE],
                 s->kernel == VKA_KERNEL_MATMUL_VEC_STORAGE ? "8-element texels from storage buffers, 16 bytes a load"
                                                             : "texel fetches");
}

/* rope: no loops for a rotation alone; each head's norm two passes over its D values; a row's two
 * strided passes over the row and the reduction's tree between them. */
uint64_t vka_rope_trips(const vka_step *s)
{
    const vka_rope_push *c = &s->push.rope;
    const uint32_t flags = s->spec[VKA_SPEC_FLAGS];
    if (flags & VKA_ROPE_NORM) return 2 * vka_loop(c->dim);
    if (!(flags & VKA_ROPE_NORM_ROW)) return 0;
    uint32_t wg = s->spec[VKA_SPEC_WG_SIZE], t = 0;
    while ((1u << t) < wg) t++;
    return 2 * vka_loop(vka_ceil_div((uint64_t)c->heads * c->dim, wg)) + vka_loop(t);
}

void vka_rope_describe(vka_text *t, const vka_step *s)
{
    const vka_rope_push *c = &s->push.rope;
    if (s->spec[VKA_SPEC_FLAGS] & (VKA_ROPE_NORM | VKA_ROPE_NORM_ROW))
        vka_text_put(t, "RMS norm over %u dims (eps %g), then ",
                     s->spec[VKA_SPEC_FLAGS] & VKA_ROPE_NORM ? c->dim : c->heads * c->dim, (double)c->eps);
    vka_text_put(t, "RoPE (%s) of %u pairs x %u rows x %u heads per batch item, ", c->gptj ? "gptj" : "neox", c->pairs,
                 c->rows, c->heads);
    if (s->spec[VKA_SPEC_FLAGS] & VKA_ROPE_POSITIONS) /* a cached forward's: each token's, from the sequence table */
        vka_text_put(t, "positions from the sequence table");
    else vka_text_put(t, "positions %u..%u", c->pos_offset, c->pos_offset + c->rows - 1);
    if (c->factor != 1.0f) vka_text_put(t, ", cos and sin x %g", (double)c->factor);
}
