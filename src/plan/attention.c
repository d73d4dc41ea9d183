/* Attention: the fused path (flash attention over key parts and chunks, merged by log-sum-exp)
 * and the unfused one (scores, softmax, averaged weights, P·V). Both work on sets of query rows
 * (heads x queries) small enough that each set's slices of Q, K, V and ctx fit one binding, and
 * that each set's state or score block fits its budget. */
#include "plan/attention.h"

#include <math.h>
#include <string.h>

#include "common/error.h"

static uint32_t mask_flags(const vka_problem *p)
{
    uint32_t f = 0;
    if (p->causal) f |= VKA_MASK_CAUSAL;
    if (p->causal_end) f |= VKA_MASK_CAUSAL_END;
    if (p->key_padding_mask) f |= VKA_MASK_KEY_PADDING;
    if (p->valid_lens == VKA_VALID_LENS_PER_BATCH) f |= VKA_MASK_VALID_LENS_PER_BATCH;
    if (p->valid_lens == VKA_VALID_LENS_PER_QUERY) f |= VKA_MASK_VALID_LENS_PER_QUERY;
    if (p->attn_mask == VKA_ATTN_MASK_BOOL) f |= VKA_MASK_ATTN_BOOL;
    if (p->attn_mask == VKA_ATTN_MASK_FLOAT) f |= VKA_MASK_ATTN_FLOAT;
    if (p->attn_mask_per_head) f |= VKA_MASK_ATTN_PER_HEAD;
    return f;
}

uint32_t vka_attention_vec(const vka_problem *p) { return p->cfg.D % 4 == 0 ? 4 : 1; }

vkattn_status vka_bind_head_terms(vka_builder *b, vka_bind *out)
{
    const vka_layer_config *c = &b->p->cfg;
    return vka_bind_whole(b, out, c->alibi || c->sinks ? VKA_ROLE_HEAD_TERMS : VKA_ROLE_NONE, VKA_VIEW_BUFFER);
}

/* The mask bindings every attention kernel takes, whole (they are small next to the scores). */
static vkattn_status bind_masks(vka_builder *b, vka_bind *kpm, vka_bind *lens, vka_bind *mask)
{
    const vka_problem *p = b->p;
    vkattn_status status;
    VKA_TRY(vka_bind_whole(b, kpm, p->key_padding_mask ? VKA_ROLE_KEY_PADDING_MASK : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, lens, p->valid_lens ? VKA_ROLE_VALID_LENS : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, mask, p->attn_mask ? VKA_ROLE_ATTN_MASK : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
fail:
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Sets of query rows and their slices                                                            */
/* ---------------------------------------------------------------------------------------------- */

/* Heads bh in [bh_begin, +bh_count) (bh = b*H + h), queries i in [i_begin, +i_count). */
typedef struct row_set {
    uint32_t bh_begin, bh_count, i_begin, i_count;
} row_set;

/* How query rows are cut into sets: up to `heads` heads of one batch item (or whole items when heads
 * >= H) times up to `queries` queries (all L, unless heads is 1). */
typedef struct row_sets {
    uint32_t heads, queries;
} row_sets;

/* The next row set after `g` (g->bh_count == 0 starts); 0 when done. */
static int next_row_set(const vka_problem *p, row_sets gr, row_set *g)
{
    const uint32_t H = p->cfg.H_active, BH = p->B * H;
    if (g->bh_count) {
        if (g->i_begin + g->i_count < p->L) {
            g->i_begin += g->i_count;
            g->i_count = (uint32_t)vka_min64(gr.queries, p->L - g->i_begin);
            return 1;
        }
        g->bh_begin += g->bh_count;
        if (g->bh_begin >= BH) return 0;
    }
    g->i_begin = 0;
    g->i_count = (uint32_t)vka_min64(gr.queries, p->L);
    if (gr.heads >= H) /* whole batch items */
        g->bh_count = (uint32_t)vka_min64(gr.heads / H * H, BH - g->bh_begin);
    else /* heads of one item */
        g->bh_count = (uint32_t)vka_min64(gr.heads, H - g->bh_begin % H);
    return 1;
}

/* The slices one row set's dispatch binds, and the push offsets that go with them (texels for
 * Q/K/V, elements for ctx and its accumulator). */
typedef struct row_set_binds {
    vka_bind q, k, v, ctx, acc;
    uint32_t q_offset, k_offset, v_offset, ctx_offset, acc_offset;
} row_set_binds;

/* storage: 0 binds Q, K and V as texel views, else as storage buffers in vectors of that many
 * elements (attn_cm: 4, or 8 with VKA_FUSED_WIDE). */
static vkattn_status bind_row_set(vka_builder *b, const vka_qkv_layout *l, const row_set *g, vka_role acc,
                                uint32_t storage, row_set_binds *out)
{
    const vka_problem *p = b->p;
    const uint32_t H = p->cfg.H_active, vec = vka_attention_vec(p);
    const uint64_t D = p->cfg.D, I = p->cfg.inner;
    const uint64_t b0 = g->bh_begin / H, h0 = g->bh_begin % H;
    const uint64_t b1 = (g->bh_begin + g->bh_count - 1) / H, h1 = (g->bh_begin + g->bh_count - 1) % H;
    const uint64_t i0 = g->i_begin, i1 = g->i_begin + g->i_count - 1;
    vkattn_status status;
    uint64_t first, last, shift;
    first = l->q_offset + b0 * l->q_batch + h0 * l->q_head + i0 * l->q_row;
    last = l->q_offset + b1 * l->q_batch + h1 * l->q_head + i1 * l->q_row + D;
    if (storage) VKA_TRY(vka_bind_vectors(b, &out->q, l->q, storage, first, last - first, &shift));
    else VKA_TRY(vka_bind_elems(b, &out->q, l->q, (uint8_t)vec, first, last - first, &shift));
    out->q_offset = vka_slice_offset(l->q_offset, first, shift, vec);
    /* K and V: the K/V heads h / group the set's query heads read */
    const uint64_t G = p->cfg.group;
    for (int kv = 0; kv < 2; kv++) {
        uint64_t base = kv ? l->v_offset : l->k_offset;
        first = base + b0 * l->kv_batch + h0 / G * l->kv_head;
        last = base + b1 * l->kv_batch + h1 / G * l->kv_head + (uint64_t)(p->S_ext - 1) * l->kv_row + D;
        vka_bind *bind = kv ? &out->v : &out->k;
        const vka_role role = kv ? l->v : l->k;
        if (storage) VKA_TRY(vka_bind_vectors(b, bind, role, storage, first, last - first, &shift));
        else VKA_TRY(vka_bind_elems(b, bind, role, (uint8_t)vec, first, last - first, &shift));
        *(kv ? &out->v_offset : &out->k_offset) = vka_slice_offset(base, first, shift, vec);
    }
    /* ctx (B·L, I): row (b, i), the heads side by side */
    first = (b0 * p->L + i0) * I + h0 * D;
    last = (b1 * p->L + i1) * I + h1 * D + D;
    VKA_TRY(vka_bind_elems(b, &out->ctx, VKA_ROLE_CTX, VKA_VIEW_BUFFER, first, last - first, &shift));
    out->ctx_offset = vka_slice_offset(0, first, shift, 1);
    out->acc_offset = 0;
    if (acc != VKA_ROLE_NONE) {
        VKA_TRY(vka_bind_elems(b, &out->acc, acc, VKA_VIEW_BUFFER, first, last - first, &shift));
        out->acc_offset = vka_slice_offset(0, first, shift, 1);
    } else {
        VKA_TRY(vka_bind_whole(b, &out->acc, VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    }
fail:
    return status;
}

/* The largest row sets (halving heads, then queries in multiples of `tile_q`) whose slices
 * fit and whose rows fit `max_rows` (0 = any); `storage` as bind_row_set's. */
static vkattn_status choose_row_sets(vka_builder *b, const vka_qkv_layout *l, uint32_t tile_q, uint64_t max_rows,
                                     vka_role acc, uint32_t storage, row_sets *out)
{
    const vka_problem *p = b->p;
    row_sets gr = {p->B * p->cfg.H_active, p->L};
    if (max_rows && max_rows < (uint64_t)gr.heads * gr.queries) {
        if (max_rows >= p->L) gr.heads = (uint32_t)(max_rows / p->L);
        else gr.heads = 1, gr.queries = (uint32_t)max_rows;
    }
    vkattn_error quiet = {0}, *error = b->error;
    for (;;) {
        vkattn_status status = VKATTN_OK;
        if (!max_rows || (uint64_t)gr.heads * gr.queries <= max_rows) {
            b->error = &quiet; /* trying sizes: a slice that does not fit is not an error yet */
            row_set g = {0};
            row_set_binds gb;
            while (status == VKATTN_OK && next_row_set(p, gr, &g)) status = bind_row_set(b, l, &g, acc, storage, &gb);
            b->error = error;
            if (status == VKATTN_OK) break;
            if (status != VKATTN_ERROR_DEVICE_LIMIT) return vka_error_set(error, status, "%s", quiet.message);
        }
        if (gr.heads > 1) {
            gr.heads = (gr.heads + 1) / 2;
        } else if (gr.queries > tile_q) {
            gr.queries = gr.queries / 2 > tile_q ? gr.queries / 2 / tile_q * tile_q : tile_q;
        } else {
            return vka_error_set(error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "attention over one head and %u queries at a time still does not fit: %s", gr.queries,
                                 quiet.message[0] ? quiet.message : "too many rows for the workspace budget");
        }
    }
    *out = gr;
    return VKATTN_OK;
}

/* ---------------------------------------------------------------------------------------------- */
/* Fused                                                                                           */
/* ---------------------------------------------------------------------------------------------- */

/* The keys one fused invocation's rows (tile_q queries of one head) may see, from the first row's
 * first visible key: all S' keys, or fewer with a sliding window and causal rows. Rows i0 .. i1 =
 * i0 + tile_q - 1 sit at key indices qk = i + S - L and see keys from max(0, qk0 + 1 - W) (the
 * window) to min(S, qk1 + 1) (causal, aligned at the end as it is in every layer with a window),
 * at most W + tile_q - 1 of them. So a window of 4096 over 32768 keys plans (and costs) like 4096
 * keys: the kernel starts each invocation's parts at its first row's window. */
static uint64_t fused_key_span(const vka_problem *p, uint32_t tile_q)
{
    if (!p->cfg.window || !p->causal) return p->S_ext;
    uint64_t span = (uint64_t)p->cfg.window + tile_q - 1;
    return span < p->S_ext ? span : p->S_ext;
}

/* The most keys one fused invocation may visit: whole blocks within the budget, counting a
 * carried state's load and one block for the boundary between real and extra keys. */
static uint64_t fused_per_block(uint32_t DV, uint64_t stage)
{
    return 3 * vka_loop(DV) + 1 + (stage ? vka_loop(stage) : 0);
}

/* The key blocks one invocation may visit within the budget (UINT64_MAX: no budget) */
static uint64_t fused_budget_blocks(const vka_builder *b, uint32_t DV, uint64_t stage)
{
    if (b->budget == UINT64_MAX) return UINT64_MAX;
    uint64_t fixed = 3 * vka_loop(DV) + 1;
    return b->budget > fixed ? (b->budget - fixed) / fused_per_block(DV, stage) : 0;
}

vkattn_status vka_fused_max_keys(vka_builder *b, uint32_t DV, uint32_t tile_k, uint64_t stage, uint64_t *out)
{
    *out = UINT32_MAX / 2 / tile_k * tile_k;
    if (b->budget == UINT64_MAX) return VKATTN_OK;
    const uint64_t per_block = fused_per_block(DV, stage), blocks = fused_budget_blocks(b, DV, stage);
    if (blocks < 2)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "head dim %u needs %llu loop trips per block of keys; this device's loop budget (%llu per "
                             "invocation) leaves no room for one",
                             b->p->cfg.D, (unsigned long long)per_block, (unsigned long long)b->budget);
    *out = vka_min64((blocks - 1) * tile_k, *out);
    return VKATTN_OK;
}

/* attn_cm.comp's shape for this attention, or all zeros where attn_fused.comp runs it: under a
 * tuning with cm_attn_*, on a context that may run the cooperative-matrix kernels
 * (limits->matrix_shape), has subgroup shuffles (subgroup_sums: the softmax's lanes meet by them)
 * and has not seen attn_cm's self-test fail, for a layer with fp16 operands (precision F16), a
 * head dim of whole matrices, within the device's shared memory and workgroup size. */
typedef struct fused_cm_shape {
    uint32_t tile_q, tile_k, wg, row_lanes;
    uint32_t q_dims; /* Q's head dims staged per pass (through the space of two blocks of keys) */
    uint32_t stages; /* K/V blocks staged at once (1 or 2) */
    uint32_t row_frags; /* M-row matrices of query rows per subgroup */
    int matrix2; /* attn_cm2: the softmax in the matrices (P converts from accumulator to A: N = K) */
    int reg;     /* attn_cm's softmax on the score matrices' elements (REG_SOFTMAX): the tuning asks
                    and the device's accumulator layout is known (limits->matrix_rows) */
    int reg_p;   /* and P made into A matrices from those elements (REG_P): the tuning asks and an A
                    matrix's elements are the accumulator's places (matrix_rows.a_elements) */
} fused_cm_shape;

/* Whether attn_cm maps its key blocks first (VKA_FUSED_MAP): with an attn_mask, where the
 * workgroup's key span (of blocks of tile_k keys) fits one map and the loop budget leaves room for
 * the map's loops and two blocks. A longer span keeps the loop over every block, in one pass where
 * the budget allows, rather than parts of the map's length. */
static int fused_cm_maps(const vka_builder *b, uint32_t tile_k, uint64_t span)
{
    return b->p->attn_mask != VKA_ATTN_MASK_NONE && span <= (uint64_t)VKA_FUSED_CM_MAP_BLOCKS * tile_k &&
           (b->budget == UINT64_MAX || vka_fused_cm_loop_trips(3, 1) <= b->budget);
}

/* attn_cm's shape with `subgroups` subgroups of `row_frags` M-row matrices of query rows each
 * (attn_cm2: one) and blocks of `frags` N-key matrices, `stages` of them staged at once, or none
 * where it does not fit the device (a layer with an attn_mask counting the map's words) */
static fused_cm_shape fused_cm_tile(const vka_builder *b, uint32_t subgroups, uint32_t row_frags, uint32_t frags,
                                    uint32_t stages)
{
    const vka_tuning *t = b->tuning;
    const vkattn_matrix_shape ms = b->limits->matrix_shape;
    const uint32_t D = b->p->cfg.D, sg = b->limits->subgroup_size;
    const fused_cm_shape none = {0};
    const int matrix2 = b->limits->matrix2 && ms.n == ms.k;
    if (matrix2) row_frags = 1;
    fused_cm_shape s = {subgroups * row_frags * ms.m, frags * ms.n, subgroups * sg,
                        t->cm_attn_row_lanes ? t->cm_attn_row_lanes : 1};
    while (s.tile_k % ms.k) s.tile_k += ms.n; /* whole matrices of P (M x K) and of K^T (K x N) */
    s.row_frags = row_frags;
    if (s.row_lanes * row_frags * ms.m < sg) s.row_lanes = sg / (row_frags * ms.m); /* no lane idle in the softmax */
    /* a row's invocations meet by XOR shuffles: a power of two dividing the subgroup and the block */
    while (s.row_lanes > 1 && ((s.row_lanes & (s.row_lanes - 1)) || sg % s.row_lanes || s.tile_k % s.row_lanes))
        s.row_lanes >>= 1;
    s.matrix2 = matrix2;
    /* the softmax in registers stores P as an fp16 M x N matrix */
    s.reg = !s.matrix2 && t->cm_attn_reg_softmax && b->limits->matrix_rows.lanes && vka_matrix_f16_mn_listed(ms);
    /* P in registers: S's matrix c (keys c N..) is P's A matrix c (K = N, as the probe requires) */
    s.reg_p = s.reg && t->cm_attn_reg_p && b->limits->matrix_rows.a_elements && ms.n == ms.k;
    s.stages = stages;
    /* Q passes: halve the dims staged at once while a pass of every query row would need more
     * shared memory than the key blocks' (all stages'; whole matrices and texels, 16-byte aligned) */
    s.q_dims = D;
    while (s.q_dims % 2 == 0 && (s.q_dims / 2) % ms.k == 0 && (s.q_dims / 2) % 8 == 0 &&
           (uint64_t)s.tile_q * (s.q_dims + 8) > 2ull * stages * s.tile_k * (D + 8))
        s.q_dims /= 2;
    /* at most 64 keys a block (its non-finite-V bits are two words); attn_cm2 passes a fragment
     * one word of them, so its fragments must not straddle two */
    if (s.tile_k > 64 || (s.matrix2 && 32 % ms.n && s.tile_k > 32) ||
        vka_fused_cm_shared_bytes(s.tile_q, s.tile_k, D, s.q_dims, stages, s.reg ? ms.m * ms.n : 0,
                                  s.reg_p ? ms.m * ms.k : 0, b->p->attn_mask != VKA_ATTN_MASK_NONE) >
            b->limits->max_shared_bytes ||
        !vka_matrix_workgroup_fits(b->limits, s.wg))
        return none;
    return s;
}

static fused_cm_shape fused_cm_shape_for(const vka_builder *b)
{
    const vka_tuning *t = b->tuning;
    const vkattn_matrix_shape ms = b->limits->matrix_shape;
    const uint32_t D = b->p->cfg.D;
    const fused_cm_shape none = {0};
    if (!t->cm_attn_subgroups || !ms.m || !ms.n || !ms.k || b->limits->no_fused_cm || !b->limits->subgroup_sums ||
        b->p->cfg.precision != VKATTN_PRECISION_F16)
        return none;
    /* the staged rows are f16vec4: matrix offsets in whole texels, 16-byte aligned (Vulkan's rule
     * for cooperative-matrix loads) */
    if (D % ms.k || D % ms.n || D % 4 || ms.k % 8 || ms.n % 8) return none;
    /* The tuning's tile, else the largest smaller one that fits (fewer keys per block first, then
     * one staged block, then fewer query rows): a large head dim or a device with less shared
     * memory keeps the matrix kernel (on an H100 at D = 256 128 x 16 ran 16x faster than
     * attn_fused, which 128 x 32 fell back to, and with two staged blocks 2.12 ms against 2.26
     * for 128 x 32 with one). */
    const uint32_t key_frags = D >= t->cm_attn_wide_d ? t->cm_attn_key_frags : 1;
    const uint32_t row_frags = t->cm_attn_row_frags ? t->cm_attn_row_frags : 1;
    /* Where the device says how many compute units it has, fewer query rows while a tile leaves
     * fewer than two workgroups per unit (a prompt of 512 tokens of 32 heads made 128 workgroups
     * of 128 rows for an H100's 132 SMs; K and V are read once more per halving, little for such
     * short rows), down to half the tuning's subgroups: each invocation holds its share of a
     * block's K and V, which fewer subgroups grow (2 of 8 at D = 128 would spill registers) */
    const uint64_t two_waves = vka_two_waves(b->limits), heads = (uint64_t)b->p->B * b->p->cfg.H_active;
    const uint32_t fewest = t->cm_attn_subgroups / 2 ? t->cm_attn_subgroups / 2 : 1;
    fused_cm_shape fitting = none;
    for (uint32_t subgroups = t->cm_attn_subgroups; subgroups >= 1; subgroups /= 2) {
        fused_cm_shape s = none;
        for (uint32_t stages = t->cm_attn_stages ? t->cm_attn_stages : 1; stages >= 1 && !s.wg; stages--)
            for (uint32_t frags = key_frags; frags >= 1 && !s.wg; frags--) s = fused_cm_tile(b, subgroups, row_frags, frags, stages);
        if (!s.wg) continue;
        if (fitting.wg && subgroups < fewest) return fitting; /* the waves' narrowing stops here */
        fitting = s;
        if (heads * vka_ceil_div(b->p->L, s.tile_q) >= two_waves) return s;
    }
    return fitting;
}

uint64_t vka_fused_cm_shared_bytes(uint32_t tile_q, uint32_t tile_k, uint32_t D, uint32_t q_dims, uint32_t stages,
                                   uint32_t reg_frag, uint32_t p_frag, int mapped)
{
    /* attn_cm.comp: fp16 rows of D + 8 for K and V (per stage), in the same space Q's rows of
     * q_dims + 8 per pass; fp32 scores in rows of tile_k + 4 (the REG build: one accumulator's
     * reg_frag floats, its layout map); fp16 P in rows of tile_k + 8 (the REG_P build: one A
     * matrix's p_frag halves, its layout map); two floats per row; a word, three blocks'
     * bad-key bits (a word per 32 keys), and the attn_mask's map of the blocks (two bits a block;
     * a word each without a mask) */
    uint64_t kv = 2ull * stages * tile_k * (D + 8), q = (uint64_t)tile_q * (q_dims + 8);
    uint64_t scores = reg_frag ? reg_frag : (uint64_t)tile_q * (tile_k + 4);
    uint64_t p = p_frag ? p_frag : (uint64_t)tile_q * (tile_k + 8);
    uint64_t map = mapped ? 2ull * VKA_FUSED_CM_MAP_BLOCKS / 32 * 4 : 8;
    return (kv > q ? kv : q) * 2 + scores * 4 + p * 2 + (uint64_t)tile_q * 8 + 4 + 12ull * ((tile_k + 31) / 32) + map;
}

uint64_t vka_fused_cm_loop_trips(uint64_t blocks, int mapped)
{
    /* the key-block loop; with an attn_mask the map's pass, and next_visit's loop: a trip counted
     * for each call (one a visit, and the first) and each word it moves on */
    return vka_loop(blocks) + (mapped ? vka_loop(blocks) + blocks + 1 + vka_ceil_div(blocks, 32) : 0);
}

/* The most keys one attn_cm workgroup may visit: its loops count the key blocks, with one block
 * for the boundary between real and extra keys; mapping them, at most the map's blocks. */
static vkattn_status fused_cm_max_keys(vka_builder *b, uint32_t tile_k, int mapped, uint64_t *out)
{
    uint64_t blocks = mapped ? VKA_FUSED_CM_MAP_BLOCKS : UINT32_MAX / 2 / tile_k;
    if (b->budget != UINT64_MAX) {
        if (vka_fused_cm_loop_trips(3, mapped) > b->budget) /* two blocks at least */
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "this device's loop budget (%llu per invocation) leaves no room for a block of keys",
                                 (unsigned long long)b->budget);
        /* from about where the trips reach the budget, down to where they fit */
        blocks = vka_min64(blocks, mapped ? b->budget * 32 / 97 : b->budget);
        while (vka_fused_cm_loop_trips(blocks + 1, mapped) > b->budget) blocks--;
    }
    *out = blocks * tile_k;
    return VKATTN_OK;
}

vkattn_status vka_plan_fused(vka_builder *b, const vka_qkv_layout *l)
{
    const vka_problem *p = b->p;
    const vka_tuning *pr = b->tuning;
    const uint32_t vec = vka_attention_vec(p), D = p->cfg.D, DV = D / vec;
    const fused_cm_shape cm = fused_cm_shape_for(b);
    const uint32_t tile_q = cm.wg ? cm.tile_q : vka_tuning_fused_tile_q(pr, D);
    const uint32_t tile_k = cm.wg ? cm.tile_k : pr->fused_tile_k;
    const int f16_out = b->plan->role_dtype[VKA_ROLE_CTX] == VKATTN_DTYPE_F16;
    /* attn_fused_shared (the GPU tunings'), where a block's K and V fit in shared memory: a
     * workgroup shares fused_wg query tiles of one head, so its key range spans their rows */
    const uint32_t wg = cm.wg ? cm.wg : pr->fused_wg;
    const uint64_t stage_trips = vka_fused_stage_trips(tile_k, DV, wg);
    const uint64_t state_budget = vka_state_budget(b);
    const uint64_t row_bytes = (uint64_t)D * 4, rows_total = (uint64_t)p->B * p->cfg.H_active * p->L;
    /* (and where its staging loop leaves the budget two blocks and the state budget holds a part's
     * states for the workgroup's rows: else attn_fused's texel fetches) */
    const int shared_kv = !cm.wg && pr->fused_shared &&
                          vka_fused_shared_bytes(tile_k, DV, p->attn_mask != VKA_ATTN_MASK_NONE) <=
                              b->limits->max_shared_bytes &&
                          fused_budget_blocks(b, DV, stage_trips) >= 2 &&
                          row_bytes * vka_min64(rows_total, (uint64_t)tile_q * wg) <= state_budget;
    const uint32_t span_rows = shared_kv ? tile_q * wg : tile_q; /* the query rows of one key range */
    const uint64_t stage = shared_kv ? stage_trips : 0;
    vkattn_status status;

    /* Keys: parts side by side (as many as the state budget holds for one query tile), each
     * visited in chunks in turn when it is longer than one invocation may visit. */
    const uint64_t span = fused_key_span(p, span_rows);
    const int cm_map = cm.wg && fused_cm_maps(b, tile_k, span);
    uint64_t max_keys;
    if (cm.wg) VKA_TRY(fused_cm_max_keys(b, tile_k, cm_map, &max_keys));
    else VKA_TRY(vka_fused_max_keys(b, DV, tile_k, stage, &max_keys));
    uint64_t parts = 1, part_len = span, chunks = 1, chunk_len = span, max_rows = 0;
    uint64_t pieces = vka_ceil_div(span, max_keys);
    if (pieces > 1) {
        uint64_t max_parts = state_budget / (row_bytes * vka_min64(rows_total, span_rows));
        if (max_parts == 0)
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "head dim %u: the softmax state of one query tile does not fit a binding", D);
        /* no more parts than one merge invocation combines within the budget: the rest in chunks */
        max_parts = vka_min64(max_parts, vka_merge_max_parts(b));
        parts = vka_min64(pieces, max_parts);
        part_len = vka_ceil_div(vka_ceil_div(span, parts), tile_k) * tile_k;
        parts = vka_ceil_div(span, part_len);
        chunks = vka_ceil_div(part_len, max_keys);
        chunk_len = vka_min64(vka_ceil_div(vka_ceil_div(part_len, chunks), tile_k) * tile_k, max_keys);
        chunks = vka_ceil_div(part_len, chunk_len);
        max_rows = state_budget / (row_bytes * parts);
    }
    const int split = parts > 1 || chunks > 1;
    row_sets gr = {0};
    /* attn_cm's loads: 8 fp16 values at a time where Q, K and V all hold fp16 and every row of
     * theirs starts on a multiple of 8 elements (cm_attn_wide_loads), else texels of 4. (Today's
     * layouts start every row on a multiple of the head dim, a multiple of 8 for attn_cm: the
     * starts are checked so that a new layout cannot break the loads unseen.) */
    const vka_role roles[3] = {l->q, l->k, l->v};
    const uint64_t starts[9] = {l->q_offset, l->q_batch, l->q_head, l->q_row, l->k_offset,
                                l->v_offset, l->kv_batch, l->kv_head, l->kv_row};
    int wide = cm.wg && pr->cm_attn_wide_loads && D % 8 == 0 && cm.q_dims % 8 == 0;
    for (int r = 0; r < 3; r++) wide = wide && b->plan->role_dtype[roles[r]] == VKATTN_DTYPE_F16;
    for (int i = 0; i < 9; i++) wide = wide && starts[i] % 8 == 0;
    const uint32_t storage = !cm.wg ? 0 : wide ? 8 : 4;
    VKA_TRY(choose_row_sets(b, l, tile_q, max_rows, VKA_ROLE_NONE, storage, &gr));
    if (split) {
        uint64_t states = parts * gr.heads * gr.queries;
        VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_STATE_O, states * D));
        VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_STATE_LSE, states));
    }
    b->plan->key_parts = (uint32_t)parts;
    b->plan->key_chunks = (uint32_t)chunks;

    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_FUSED,
                  .kernel = cm.wg ? (cm.matrix2 ? VKA_KERNEL_FUSED_CM2 : VKA_KERNEL_FUSED_CM)
                            : shared_kv ? VKA_KERNEL_FUSED_SHARED
                                        : VKA_KERNEL_FUSED,
                  .f16_out = f16_out, .barrier_before = 1,
                  .binding_count = VKA_FUSED_BINDINGS};
    s.spec[VKA_SPEC_WG_SIZE] = wg;
    /* attn_cm: the next block fetched meanwhile where the head is small enough (two staged blocks
     * always fetch a block ahead: the flags say what the kernel does); Q, K and V read as storage
     * buffers of their roles' element types */
    const uint32_t cm_flags = !cm.wg ? 0
                              : (D <= pr->cm_attn_prefetch || cm.stages == 2 ? VKA_FUSED_PREFETCH : 0) |
                                    (cm.stages == 2 ? VKA_FUSED_TWO_STAGES : 0) |
                                    (b->plan->role_dtype[l->q] == VKATTN_DTYPE_F16 ? VKA_FUSED_Q_F16 : 0) |
                                    (b->plan->role_dtype[l->k] == VKATTN_DTYPE_F16 ? VKA_FUSED_K_F16 : 0) |
                                    (b->plan->role_dtype[l->v] == VKATTN_DTYPE_F16 ? VKA_FUSED_V_F16 : 0) |
                                    (wide ? VKA_FUSED_WIDE : 0) | (cm.reg ? VKA_FUSED_REG_SOFTMAX : 0) |
                                    (cm.reg_p ? VKA_FUSED_REG_P : 0) | (cm_map ? VKA_FUSED_MAP : 0);
    if (cm.wg) {
        s.spec[VKA_SPEC_MAT_M] = b->limits->matrix_shape.m;
        s.spec[VKA_SPEC_MAT_N] = b->limits->matrix_shape.n;
        s.spec[VKA_SPEC_MAT_K] = b->limits->matrix_shape.k;
        /* REG_SOFTMAX: a row's invocations and its elements' classes as the device lays them out */
        s.spec[VKA_SPEC_ROW_LANES] = cm.reg ? b->limits->matrix_rows.lanes : cm.row_lanes;
        s.spec[VKA_SPEC_ROW_RUN] = cm.reg ? b->limits->matrix_rows.run : 1;
        s.spec[VKA_SPEC_ROW_CLASSES] = cm.reg ? b->limits->matrix_rows.classes : 1;
        s.spec[VKA_SPEC_TILE_K] = cm.q_dims;
        s.spec[VKA_SPEC_ROW_FRAGS] = cm.row_frags;
        s.spec[VKA_SPEC_A_FROM_ACC] = cm.reg_p ? b->limits->matrix_rows.a_from_acc : 0;
    }
    s.spec[VKA_SPEC_TILE_A] = tile_q;
    s.spec[VKA_SPEC_TILE_B] = tile_k;
    s.spec[VKA_SPEC_VEC] = vec;
    s.spec[VKA_SPEC_DV] = DV;
    s.spec[VKA_SPEC_ATTN_MASK] = p->attn_mask != VKA_ATTN_MASK_NONE;
    s.spec[VKA_SPEC_VARIANT] = vka_variant_bits(&p->cfg);
    VKA_TRY(bind_masks(b, &s.bind[VKA_FUSED_KEY_PADDING], &s.bind[VKA_FUSED_VALID_LENS], &s.bind[VKA_FUSED_ATTN_MASK]));
    VKA_TRY(vka_bind_head_terms(b, &s.bind[VKA_FUSED_HEAD_TERMS]));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_FUSED_LSE_OUT], p->lse ? VKA_ROLE_LSE : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_FUSED_STATE_O], split ? VKA_ROLE_STATE_O : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_FUSED_STATE_LSE], split ? VKA_ROLE_STATE_LSE : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    vka_step merge = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_FUSED, .kernel = VKA_KERNEL_MERGE,
                      .f16_out = f16_out, .barrier_before = 1, .binding_count = VKA_MERGE_BINDINGS};
    merge.spec[VKA_SPEC_VEC] = vec;
    merge.spec[VKA_SPEC_DV] = DV;
    merge.bind[VKA_MERGE_STATE_O] = s.bind[VKA_FUSED_STATE_O];
    merge.bind[VKA_MERGE_STATE_LSE] = s.bind[VKA_FUSED_STATE_LSE];
    merge.bind[VKA_MERGE_LSE_OUT] = s.bind[VKA_FUSED_LSE_OUT];
    VKA_TRY(vka_bind_whole(b, &merge.bind[VKA_MERGE_META], VKA_ROLE_NONE, VKA_VIEW_BUFFER));

    /* Per row set (their states share the workspace): the key chunks in turn, each over every part
     * side by side; then the parts' merge. */
    row_set g = {0};
    while (next_row_set(p, gr, &g)) {
        row_set_binds gb;
        VKA_TRY(bind_row_set(b, l, &g, VKA_ROLE_NONE, storage, &gb));
        s.bind[VKA_FUSED_Q] = gb.q, s.bind[VKA_FUSED_K] = gb.k, s.bind[VKA_FUSED_V] = gb.v;
        s.bind[VKA_FUSED_CTX] = merge.bind[VKA_MERGE_CTX] = gb.ctx;
        for (uint32_t c = 0; c < chunks; c++) {
            int store = c + 1 < chunks || parts > 1;
            s.spec[VKA_SPEC_FLAGS] = (c > 0 ? VKA_FUSED_LOAD : 0) | (store ? VKA_FUSED_STORE : 0) | cm_flags;
            s.push.fused = (vka_fused_push){
                .L = p->L, .S = p->S, .S_ext = p->S_ext, .H = p->cfg.H_active,
                .bh_begin = g.bh_begin, .bh_count = g.bh_count, .i_begin = g.i_begin, .i_count = g.i_count,
                .q_offset = gb.q_offset, .q_batch = (uint32_t)(l->q_batch / vec),
                .q_head = (uint32_t)(l->q_head / vec), .q_row = (uint32_t)(l->q_row / vec),
                .k_offset = gb.k_offset, .v_offset = gb.v_offset, .kv_batch = (uint32_t)(l->kv_batch / vec),
                .kv_head = (uint32_t)(l->kv_head / vec), .kv_row = (uint32_t)(l->kv_row / vec),
                .kv_group = p->cfg.group,
                .ctx_offset = gb.ctx_offset, .ctx_stride = p->cfg.inner, .scale = p->cfg.scale,
                .mask_flags = mask_flags(p), .mask_heads = p->cfg.H,
                .parts = (uint32_t)parts, .part_len = (uint32_t)part_len,
                .chunk_begin = (uint32_t)(c * chunk_len), .chunk_len = (uint32_t)chunk_len,
                .has_lse = p->lse && !store, .softcap = p->cfg.softcap, .window = p->cfg.window,
            };
            /* an invocation per query tile, or a workgroup per query tile on cooperative matrices,
             * or per wg of them (attn_fused_shared) */
            uint64_t invocations = parts * g.bh_count *
                                   (cm.wg ? vka_ceil_div(g.i_count, tile_q) * wg
                                    : shared_kv ? vka_ceil_div(g.i_count, span_rows) * wg
                                                : vka_ceil_div(g.i_count, tile_q));
            VKA_TRY(vka_push_step(b, &s, invocations, wg));
        }
        if (parts > 1) {
            merge.push.merge = (vka_merge_push){
                .L = p->L, .H = p->cfg.H_active, .bh_begin = g.bh_begin, .bh_count = g.bh_count,
                .i_begin = g.i_begin, .i_count = g.i_count, .parts = (uint32_t)parts,
                .ctx_offset = gb.ctx_offset, .ctx_stride = p->cfg.inner, .has_lse = p->lse != 0,
            };
            VKA_TRY(vka_push_merge(b, &merge, (uint64_t)g.bh_count * g.i_count * DV));
        }
    }
fail:
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* Unfused                                                                                         */
/* ---------------------------------------------------------------------------------------------- */

/* Softmax of `rows` rows in place: one pass when a row fits the loop budget, else per key range
 * a pass for its statistics and one that normalises it. */
static vkattn_status add_softmax(vka_builder *b, vka_role probs, const row_set *g)
{
    const vka_problem *p = b->p;
    const uint32_t wg = b->tuning->softmax_wg, S = p->S_ext;
    uint32_t log2_wg = 0;
    while ((1u << log2_wg) < wg) log2_wg++;
    const uint64_t tree = vka_loop(log2_wg), per_wg = vka_ceil_div(S, wg);
    vkattn_status status;
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_SOFTMAX, .kernel = VKA_KERNEL_SOFTMAX,
                  .barrier_before = 1, .binding_count = VKA_SOFTMAX_BINDINGS};
    s.spec[VKA_SPEC_WG_SIZE] = wg;
    const uint32_t rows = g->bh_count * g->i_count;
    s.spec[VKA_SPEC_VARIANT] = vka_variant_bits(&p->cfg) & VKA_VARIANT_SINK;
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_SOFTMAX_P], probs, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_head_terms(b, &s.bind[VKA_SOFTMAX_HEAD_TERMS]));
    const vka_softmax_push heads = {.H = p->cfg.H_active, .bh_begin = g->bh_begin, .i_count = g->i_count};
    if (3 * vka_loop(per_wg) + 2 * tree <= b->budget) {
        VKA_TRY(vka_bind_whole(b, &s.bind[VKA_SOFTMAX_STATS_BUF], VKA_ROLE_NONE, VKA_VIEW_BUFFER));
        s.spec[VKA_SPEC_FLAGS] = VKA_SOFTMAX_ROW;
        s.push.softmax = heads;
        s.push.softmax.rows = rows, s.push.softmax.S_ext = S, s.push.softmax.ranges = 1;
        s.push.softmax.range_len = S, s.push.softmax.group_count = rows;
        return vka_push_step(b, &s, (uint64_t)rows * wg, wg);
    }
    /* n strides of the workgroup per key range and `ranges` ranges per row: the stats pass takes
     * 2 loop(n) + 2 tree trips, the normalise pass loop(ranges) + loop(n). */
    uint64_t n = b->budget > 2 * tree + 2 ? (b->budget - 2 * tree) / 2 - 1 : 0;
    uint64_t ranges = n ? vka_ceil_div(per_wg, n) : 0;
    if (n && vka_loop(ranges) + vka_loop(n) > b->budget) {
        n = (uint64_t)ceil(sqrt((double)per_wg));
        ranges = vka_ceil_div(per_wg, n);
    }
    if (!n || vka_loop(ranges) + vka_loop(n) > b->budget || 2 * vka_loop(n) + 2 * tree > b->budget)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "a softmax row of %u keys needs more loop trips than this device's budget (%llu)", S,
                             (unsigned long long)b->budget);
    uint32_t range_len = (uint32_t)(n * wg);
    ranges = vka_ceil_div(S, range_len);
    uint64_t groups = (uint64_t)rows * ranges;
    if (groups > UINT32_MAX)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT, "softmax needs more than 2^32 workgroups");
    VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_SOFTMAX_STATS, groups * 3));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_SOFTMAX_STATS_BUF], VKA_ROLE_SOFTMAX_STATS, VKA_VIEW_BUFFER));
    for (int pass = 0; pass < 2; pass++) {
        s.spec[VKA_SPEC_FLAGS] = pass ? VKA_SOFTMAX_NORMALIZE : VKA_SOFTMAX_STATS;
        s.push.softmax = heads;
        s.push.softmax.rows = rows, s.push.softmax.S_ext = S, s.push.softmax.ranges = (uint32_t)ranges;
        s.push.softmax.range_len = range_len, s.push.softmax.group_count = (uint32_t)groups;
        VKA_TRY(vka_push_step(b, &s, groups * wg, wg));
    }
fail:
    return status;
}

/* Scores, softmax, averaged weights and P·V of one row set, its probabilities in `probs`. */
static vkattn_status add_chunk(vka_builder *b, const vka_qkv_layout *l, vka_role probs, const row_set *g,
                               uint32_t pv_ranges)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    const vka_tuning *pr = b->tuning;
    const uint32_t vec = vka_attention_vec(p), DV = c->D / vec;
    vkattn_status status;
    row_set_binds gb;
    VKA_TRY(bind_row_set(b, l, g, pv_ranges > 1 ? VKA_ROLE_CTX_ACC : VKA_ROLE_NONE, 0, &gb));

    vka_step scores = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_SCORES, .kernel = VKA_KERNEL_SCORES,
                       .barrier_before = 1, .binding_count = VKA_SCORES_BINDINGS};
    scores.spec[VKA_SPEC_WG_SIZE] = pr->scores_wg;
    scores.spec[VKA_SPEC_TILE_A] = pr->scores_tile_q;
    scores.spec[VKA_SPEC_TILE_B] = pr->scores_tile_k;
    scores.spec[VKA_SPEC_VEC] = vec;
    scores.spec[VKA_SPEC_DV] = DV;
    scores.spec[VKA_SPEC_ATTN_MASK] = p->attn_mask != VKA_ATTN_MASK_NONE;
    scores.spec[VKA_SPEC_VARIANT] = vka_variant_bits(c) & ~VKA_VARIANT_SINK; /* the softmax adds the sink */
    scores.bind[VKA_SCORES_Q] = gb.q, scores.bind[VKA_SCORES_K] = gb.k;
    VKA_TRY(vka_bind_head_terms(b, &scores.bind[VKA_SCORES_HEAD_TERMS]));
    VKA_TRY(vka_bind_whole(b, &scores.bind[VKA_SCORES_P], probs, VKA_VIEW_BUFFER));
    VKA_TRY(bind_masks(b, &scores.bind[VKA_SCORES_KEY_PADDING], &scores.bind[VKA_SCORES_VALID_LENS],
                       &scores.bind[VKA_SCORES_ATTN_MASK]));
    uint32_t tiles_i = (uint32_t)vka_ceil_div(g->i_count, pr->scores_tile_q);
    uint32_t tiles_j = (uint32_t)vka_ceil_div(p->S_ext, pr->scores_tile_k);
    scores.push.scores = (vka_scores_push){
        .L = p->L, .S = p->S, .S_ext = p->S_ext, .H = c->H_active,
        .q_offset = gb.q_offset, .q_batch = (uint32_t)(l->q_batch / vec), .q_head = (uint32_t)(l->q_head / vec),
        .q_row = (uint32_t)(l->q_row / vec),
        .k_offset = gb.k_offset, .kv_batch = (uint32_t)(l->kv_batch / vec), .kv_head = (uint32_t)(l->kv_head / vec),
        .kv_row = (uint32_t)(l->kv_row / vec), .kv_group = c->group,
        .bh_begin = g->bh_begin, .bh_count = g->bh_count, .i_begin = g->i_begin, .i_count = g->i_count,
        .scale = c->scale,
        .mask_flags = mask_flags(p), .mask_heads = c->H,
        .tiles_j = tiles_j, .tiles_i = tiles_i, .softcap = c->softcap, .window = c->window,
    };
    VKA_TRY(vka_push_step(b, &scores, (uint64_t)g->bh_count * tiles_i * tiles_j, pr->scores_wg));

    VKA_TRY(add_softmax(b, probs, g));

    if (p->weights == VKATTN_WEIGHTS_AVERAGED) {
        const uint32_t wg = 64;
        uint32_t b_begin = g->bh_begin / c->H_active, b_end = (g->bh_begin + g->bh_count - 1) / c->H_active;
        uint64_t items = (uint64_t)(b_end - b_begin + 1) * g->i_count * p->S_ext;
        vka_step avg = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_AVERAGE_HEADS,
                        .kernel = VKA_KERNEL_AVERAGE_HEADS, .barrier_before = 1,
                        .binding_count = VKA_AVERAGE_BINDINGS};
        avg.spec[VKA_SPEC_WG_SIZE] = wg;
        VKA_TRY(vka_bind_whole(b, &avg.bind[VKA_AVERAGE_P], probs, VKA_VIEW_BUFFER));
        VKA_TRY(vka_bind_whole(b, &avg.bind[VKA_AVERAGE_W], VKA_ROLE_WEIGHTS, VKA_VIEW_BUFFER));
        avg.push.average = (vka_average_push){
            .H = c->H_active, .L = p->L, .S_ext = p->S_ext,
            .bh_begin = g->bh_begin, .bh_count = g->bh_count, .i_begin = g->i_begin, .i_count = g->i_count,
            .b_begin = b_begin, .b_count = b_end - b_begin + 1,
            .inv_heads = 1.0f / (float)c->H_active, .group_count = (uint32_t)vka_ceil_div(items, wg),
        };
        VKA_TRY(vka_push_step(b, &avg, items, wg));
    }

    /* P·V over key ranges that fit the loop budget, summed in order through an fp32 accumulator. */
    vka_step pv = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_PV, .kernel = VKA_KERNEL_PV,
                   .f16_out = b->plan->role_dtype[VKA_ROLE_CTX] == VKATTN_DTYPE_F16, .barrier_before = 1,
                   .binding_count = VKA_PV_BINDINGS};
    pv.spec[VKA_SPEC_WG_SIZE] = pr->pv_wg;
    pv.spec[VKA_SPEC_TILE_A] = pr->pv_tile_q;
    pv.spec[VKA_SPEC_TILE_B] = pr->pv_tile_d;
    pv.spec[VKA_SPEC_VEC] = vec;
    pv.spec[VKA_SPEC_DV] = DV;
    VKA_TRY(vka_bind_whole(b, &pv.bind[VKA_PV_P], probs, VKA_VIEW_SCALAR));
    pv.bind[VKA_PV_V] = gb.v, pv.bind[VKA_PV_CTX] = gb.ctx, pv.bind[VKA_PV_ACC] = gb.acc;
    uint32_t pv_tiles_i = (uint32_t)vka_ceil_div(g->i_count, pr->pv_tile_q);
    uint32_t tiles_d = (uint32_t)vka_ceil_div(DV, pr->pv_tile_d);
    uint64_t range_len = vka_ceil_div(p->S_ext, pv_ranges);
    for (uint32_t r = 0; r < pv_ranges; r++) {
        uint64_t j0 = r * range_len;
        pv.spec[VKA_SPEC_FLAGS] = (r > 0 ? VKA_PV_ACC_IN : 0) | (r + 1 < pv_ranges ? VKA_PV_ACC_OUT : 0);
        pv.push.pv = (vka_pv_push){
            .L = p->L, .S_ext = p->S_ext, .H = c->H_active,
            .v_offset = gb.v_offset, .kv_batch = (uint32_t)(l->kv_batch / vec), .kv_head = (uint32_t)(l->kv_head / vec),
            .kv_row = (uint32_t)(l->kv_row / vec), .kv_group = c->group,
            .ctx_offset = gb.ctx_offset, .ctx_stride = c->inner, .acc_offset = gb.acc_offset,
            .bh_begin = g->bh_begin, .bh_count = g->bh_count, .i_begin = g->i_begin, .i_count = g->i_count,
            .j_begin = (uint32_t)j0, .j_count = (uint32_t)vka_min64(range_len, p->S_ext - j0),
            .tiles_d = tiles_d, .tiles_i = pv_tiles_i,
        };
        VKA_TRY(vka_push_step(b, &pv, (uint64_t)g->bh_count * pv_tiles_i * tiles_d, pr->pv_wg));
    }

    /* Per-head weights too big to be the probability buffer themselves: copy this row set's rows. */
    if (p->weights == VKATTN_WEIGHTS_PER_HEAD && probs != VKA_ROLE_WEIGHTS) {
        vka_step copy = {.kind = VKA_STEP_COPY, .stage = VKATTN_STAGE_SOFTMAX, .binding_count = 2,
                         .copy_first = b->plan->copy_count, .barrier_before = 1};
        copy.bind[0].role = probs, copy.bind[1].role = VKA_ROLE_WEIGHTS;
        for (uint32_t bh = g->bh_begin; bh < g->bh_begin + g->bh_count; bh++) {
            uint64_t rows_before = (uint64_t)(bh - g->bh_begin) * g->i_count;
            vka_copy region = {rows_before * p->S_ext, ((uint64_t)bh * p->L + g->i_begin) * p->S_ext,
                               (uint64_t)g->i_count * p->S_ext};
            VKA_TRY(vka_push_copy(b, &region));
            copy.copy_count++;
        }
        VKA_TRY(vka_push_step(b, &copy, 0, 1));
    }
    b->plan->chunks++;
fail:
    return status;
}

vkattn_status vka_plan_unfused(vka_builder *b, const vka_qkv_layout *l)
{
    const vka_problem *p = b->p;
    const uint64_t row = p->S_ext; /* floats per score row */
    vkattn_status status;

    if (vka_loop(p->cfg.D / vka_attention_vec(p)) > b->budget)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "head dim %u needs more loop trips than this device's loop budget (%llu)", p->cfg.D,
                             (unsigned long long)b->budget);
    if (p->weights == VKATTN_WEIGHTS_AVERAGED) {
        vka_step zero = {.kind = VKA_STEP_ZERO, .stage = VKATTN_STAGE_AVERAGE_HEADS, .binding_count = 1};
        VKA_TRY(vka_bind_whole(b, &zero.bind[0], VKA_ROLE_WEIGHTS, VKA_VIEW_BUFFER));
        VKA_TRY(vka_push_step(b, &zero, 0, 1));
    }
    uint64_t range_len = vka_min64(vka_budget_left(b, 1), p->S_ext);
    uint32_t pv_ranges = (uint32_t)vka_ceil_div(p->S_ext, range_len);
    vka_role acc = pv_ranges > 1 ? VKA_ROLE_CTX_ACC : VKA_ROLE_NONE;
    if (acc != VKA_ROLE_NONE) VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_CTX_ACC, (uint64_t)p->B * p->L * p->cfg.inner));
    /* Per-head weights that fit one binding are the probability buffer themselves when one row set
     * takes every row; otherwise sets of score rows in the score workspace, within its budget,
     * each set's rows copied into the weights. */
    row_sets gr = {0};
    vka_role probs = VKA_ROLE_SCORES;
    if (p->weights == VKATTN_WEIGHTS_PER_HEAD &&
        vka_fits_binding(b, VKA_ROLE_WEIGHTS, VKA_VIEW_SCALAR, b->plan->role_bytes[VKA_ROLE_WEIGHTS])) {
        VKA_TRY(choose_row_sets(b, l, b->tuning->scores_tile_q, 0, acc, 0, &gr));
        if (gr.heads == p->B * p->cfg.H_active && gr.queries == p->L) probs = VKA_ROLE_WEIGHTS;
    }
    if (probs == VKA_ROLE_SCORES) {
        uint64_t budget = b->limits->max_storage_buffer_range;
        if (b->limits->scores_budget_bytes && b->limits->scores_budget_bytes < budget)
            budget = b->limits->scores_budget_bytes;
        if (b->limits->max_texel_elements * 4 < budget) budget = b->limits->max_texel_elements * 4;
        if (row * 4 > budget)
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "one row of %u scores (%llu bytes) exceeds the score buffer limit of %llu bytes",
                                 p->S_ext, (unsigned long long)(row * 4), (unsigned long long)budget);
        VKA_TRY(choose_row_sets(b, l, b->tuning->scores_tile_q, budget / (row * 4), acc, 0, &gr));
        VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_SCORES, (uint64_t)gr.heads * gr.queries * row));
    }
    row_set g = {0};
    while (next_row_set(p, gr, &g)) VKA_TRY(add_chunk(b, l, probs, &g, pv_ranges));
fail:
    return status;
}

/* ---------------------------------------------------------------------------------------------- */
/* The kernels' loop models (what each kernel's header says its loops cost per invocation) and    */
/* their descriptions                                                                             */
/* ---------------------------------------------------------------------------------------------- */

static uint32_t log2_u32(uint32_t x)
{
    uint32_t n = 0;
    while (x > 1) x >>= 1, n++;
    return n;
}

/* attn_fused.comp over `keys` keys per invocation: blocks of TILE_B (one more where the real keys
 * end and the extra ones begin), three DV loops per block, a DV loop to clear, one to load a
 * carried state, one to store. */
uint64_t vka_fused_loop_trips(uint32_t DV, uint32_t tile_k, uint64_t keys, int load, uint64_t stage)
{
    uint64_t blocks = vka_ceil_div(keys, tile_k) + 1;
    return vka_loop(DV) * (2 + (load != 0)) + vka_loop(blocks) +
           blocks * (3 * vka_loop(DV) + (stage ? vka_loop(stage) : 0));
}

/* attn_fused_shared: a block's K and V texels, and with an attn_mask a texel of votes */
uint64_t vka_fused_shared_bytes(uint32_t tile_k, uint32_t DV, int masked)
{
    return 2 * (uint64_t)tile_k * DV * 16 + (masked ? 16 : 0);
}

uint64_t vka_fused_stage_trips(uint32_t tile_k, uint32_t DV, uint32_t wg)
{
    return vka_ceil_div((uint64_t)tile_k * DV, wg);
}

/* attn_fused and attn_fused_shared (its staging loop besides) */
uint64_t vka_fused_trips(const vka_step *s)
{
    const vka_fused_push *f = &s->push.fused;
    const uint32_t DV = s->spec[VKA_SPEC_DV], tile_k = s->spec[VKA_SPEC_TILE_B];
    return vka_fused_loop_trips(DV, tile_k, vka_min64(f->chunk_len, f->part_len),
                                (s->spec[VKA_SPEC_FLAGS] & VKA_FUSED_LOAD) != 0,
                                s->kernel == VKA_KERNEL_FUSED_SHARED
                                    ? vka_fused_stage_trips(tile_k, DV, s->spec[VKA_SPEC_WG_SIZE])
                                    : 0);
}

/* attn_cm.comp: one loop, the key blocks (one more where the real keys end and the extra ones
 * begin); the rest is unrolled. */
uint64_t vka_fused_cm_trips(const vka_step *s)
{
    const vka_fused_push *f = &s->push.fused;
    return vka_fused_cm_loop_trips(vka_ceil_div(vka_min64(f->chunk_len, f->part_len), s->spec[VKA_SPEC_TILE_B]) + 1,
                                   (s->spec[VKA_SPEC_FLAGS] & VKA_FUSED_MAP) != 0);
}

uint64_t vka_scores_trips(const vka_step *s) { return vka_loop(s->spec[VKA_SPEC_DV]); }

uint64_t vka_softmax_trips(const vka_step *s)
{
    const vka_softmax_push *pc = &s->push.softmax;
    uint32_t wg = s->spec[VKA_SPEC_WG_SIZE];
    uint64_t n = vka_ceil_div(pc->range_len, wg), tree = vka_loop(log2_u32(wg));
    switch (s->spec[VKA_SPEC_FLAGS]) {
    case VKA_SOFTMAX_STATS: return 2 * vka_loop(n) + 2 * tree;
    case VKA_SOFTMAX_NORMALIZE: return vka_loop(pc->ranges) + vka_loop(n);
    default: return 3 * vka_loop(n) + 2 * tree;
    }
}

uint64_t vka_pv_trips(const vka_step *s) { return vka_loop(s->push.pv.j_count); }
uint64_t vka_merge_trips(const vka_step *s)
{
    const uint32_t lanes = s->spec[VKA_SPEC_TILE_B] ? s->spec[VKA_SPEC_TILE_B] : 1;
    return 2 * vka_loop(vka_ceil_div(s->push.merge.parts, lanes)) + (lanes > 1 ? 2 * vka_loop(lanes) : 0);
}

vkattn_status vka_push_merge(vka_builder *b, const vka_step *merge, uint64_t texels)
{
    /* part lanes: the tuning's, a power of two within the workgroup, each with a part at least, and
     * within the loop budget (one lane always is: vka_merge_max_parts) */
    const uint32_t wg = b->tuning->fused_wg;
    vka_step s = *merge;
    s.spec[VKA_SPEC_WG_SIZE] = wg;
    s.spec[VKA_SPEC_TILE_B] = 1;
    for (uint32_t lanes = 2; lanes <= b->tuning->merge_lanes && lanes <= wg && wg % lanes == 0 &&
                             lanes <= merge->push.merge.parts;
         lanes *= 2) {
        vka_step wider = s;
        wider.spec[VKA_SPEC_TILE_B] = lanes;
        if (vka_merge_trips(&wider) > b->budget) break;
        s = wider;
    }
    const uint32_t lanes = s.spec[VKA_SPEC_TILE_B];
    return vka_push_step(b, &s, vka_ceil_div(texels, wg / lanes) * wg, wg);
}

uint64_t vka_merge_max_parts(const vka_builder *b)
{
    if (b->budget == UINT64_MAX) return UINT64_MAX;
    return b->budget / 2 > 1 ? b->budget / 2 - 1 : 1; /* 2 (parts + 1) trips within the budget */
}
uint64_t vka_state_budget(const vka_builder *b)
{
    const uint64_t range = b->limits->max_storage_buffer_range;
    return b->limits->state_budget_bytes ? vka_min64(b->limits->state_budget_bytes, range) : range;
}
uint64_t vka_average_trips(const vka_step *s) { return vka_loop(s->push.average.H); }

void vka_scores_describe(vka_text *t, const vka_step *s)
{
    const vka_scores_push *c = &s->push.scores;
    vka_text_put(t, "scores of (batch, head) pairs %u..%u x queries %u..%u x %u keys", c->bh_begin,
                 c->bh_begin + c->bh_count - 1, c->i_begin, c->i_begin + c->i_count - 1, c->S_ext);
}

void vka_softmax_describe(vka_text *t, const vka_step *s)
{
    const vka_softmax_push *c = &s->push.softmax;
    static const char *const mode[] = {"rows", "range statistics", "normalise by range"};
    vka_text_put(t, "%u rows of %u keys, %s (%u ranges)", c->rows, c->S_ext, mode[s->spec[VKA_SPEC_FLAGS] % 3],
                 c->ranges);
}

void vka_pv_describe(vka_text *t, const vka_step *s)
{
    const vka_pv_push *c = &s->push.pv;
    vka_text_put(t, "P·V of (batch, head) pairs %u..%u x queries %u..%u, keys %u..%u%s%s", c->bh_begin,
                 c->bh_begin + c->bh_count - 1, c->i_begin, c->i_begin + c->i_count - 1, c->j_begin,
                 c->j_begin + c->j_count - 1, (s->spec[VKA_SPEC_FLAGS] & VKA_PV_ACC_IN) ? " + accumulator" : "",
                 (s->spec[VKA_SPEC_FLAGS] & VKA_PV_ACC_OUT) ? " -> accumulator" : "");
}

void vka_fused_describe(vka_text *t, const vka_step *s)
{
    const vka_fused_push *c = &s->push.fused;
    vka_text_put(t, "(batch, head) pairs %u..%u x queries %u..%u, keys: %u part%s of %u, chunk at %u of %u keys%s%s",
                 c->bh_begin, c->bh_begin + c->bh_count - 1, c->i_begin, c->i_begin + c->i_count - 1, c->parts,
                 c->parts > 1 ? "s" : "", c->part_len, c->chunk_begin, c->chunk_len,
                 (s->spec[VKA_SPEC_FLAGS] & VKA_FUSED_LOAD) ? ", carried in" : "",
                 (s->spec[VKA_SPEC_FLAGS] & VKA_FUSED_STORE) ? ", state out" : "");
    if (s->kernel == VKA_KERNEL_FUSED_SHARED)
        vka_text_put(t, "; K and V staged in shared memory %u keys at a time by workgroups of %u query rows",
                     s->spec[VKA_SPEC_TILE_B], s->spec[VKA_SPEC_WG_SIZE] * s->spec[VKA_SPEC_TILE_A]);
}

void vka_fused_cm_describe(vka_text *t, const vka_step *s)
{
    vka_fused_describe(t, s);
    vka_text_put(t, "; on cooperative matrices (%u query rows x %u-key blocks per workgroup, %ux%ux%u matrices, fp16 "
                    "operands, ",
                 s->spec[VKA_SPEC_TILE_A], s->spec[VKA_SPEC_TILE_B], s->spec[VKA_SPEC_MAT_M], s->spec[VKA_SPEC_MAT_N],
                 s->spec[VKA_SPEC_MAT_K]);
    const uint32_t flags = s->spec[VKA_SPEC_FLAGS];
    if (s->kernel == VKA_KERNEL_FUSED_CM2) vka_text_put(t, "the softmax in the matrices");
    else if (flags & VKA_FUSED_REG_SOFTMAX)
        vka_text_put(t, "the softmax on the matrices' elements in registers, a row in %u invocation%s (element e's "
                        "row class (e / %u) %% %u)",
                     s->spec[VKA_SPEC_ROW_LANES], s->spec[VKA_SPEC_ROW_LANES] == 1 ? "" : "s", s->spec[VKA_SPEC_ROW_RUN],
                     s->spec[VKA_SPEC_ROW_CLASSES]);
    else vka_text_put(t, "%u invocation%s per row's softmax", s->spec[VKA_SPEC_ROW_LANES],
                      s->spec[VKA_SPEC_ROW_LANES] == 1 ? "" : "s");
    if (flags & VKA_FUSED_REG_P) { /* A's elements, each from the accumulator's element at its place */
        const uint32_t subgroups = s->spec[VKA_SPEC_TILE_A] / (s->spec[VKA_SPEC_ROW_FRAGS] * s->spec[VKA_SPEC_MAT_M]);
        const uint32_t elements = s->spec[VKA_SPEC_MAT_M] * s->spec[VKA_SPEC_MAT_N] /
                                  (s->spec[VKA_SPEC_WG_SIZE] / (subgroups ? subgroups : 1));
        vka_text_put(t, ", P made into A matrices in registers (from accumulator elements");
        for (uint32_t e = 0; e < elements && e < 8; e++)
            vka_text_put(t, "%c%u", e ? ',' : ' ', VKA_A_FROM_ACC(s->spec[VKA_SPEC_A_FROM_ACC], e));
        vka_text_put(t, ")");
    }
    if (s->spec[VKA_SPEC_ROW_FRAGS] > 1)
        vka_text_put(t, ", %u row matrices per subgroup", s->spec[VKA_SPEC_ROW_FRAGS]);
    if (flags & VKA_FUSED_MAP) vka_text_put(t, ", the attn_mask's key blocks mapped first: those it hides skipped");
    vka_text_put(t, "%s%s%s)", flags & VKA_FUSED_PREFETCH ? ", the next block fetched meanwhile" : "",
                 flags & VKA_FUSED_TWO_STAGES ? ", two staged blocks" : "", flags & VKA_FUSED_WIDE ? ", 16-byte loads of 8" : "");
}

void vka_merge_describe(vka_text *t, const vka_step *s)
{
    const vka_merge_push *c = &s->push.merge;
    vka_text_put(t, "merge %u parts of (batch, head) pairs %u..%u x queries %u..%u by log-sum-exp", c->parts,
                 c->bh_begin, c->bh_begin + c->bh_count - 1, c->i_begin, c->i_begin + c->i_count - 1);
    if (s->spec[VKA_SPEC_TILE_B] > 1) vka_text_put(t, " (%u lanes per texel)", s->spec[VKA_SPEC_TILE_B]);
}

void vka_average_describe(vka_text *t, const vka_step *s)
{
    (void)s;
    vka_text_put(t, "average over heads");
}
