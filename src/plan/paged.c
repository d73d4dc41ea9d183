/* A cached forward's own steps: appending the new tokens' K and V rows to the paged cache, and
 * attention of the new tokens over their sequences' cached keys (attn_paged), split into key
 * parts side by side (split-KV) where the loop budget needs it or the batch alone cannot fill the
 * device, merged by log-sum-exp (attn_merge, RAGGED). The projections, RoPE and the output
 * projection are the plain forward's, over the T new tokens as one batch item. */
#include "plan/paged.h"

#include <math.h>
#include <stdio.h>

#include "common/error.h"
#include "format/dtype.h"
#include "plan/attention.h"

/* Whether a cached forward takes `tokens` new tokens at once: its Q/K/V and context workspaces
 * within one allocation, the append's K and V heads, the attention's Q heads and context rows
 * within one binding each (the projections and RoPE cut their work, a row norm its Q's heads
 * whole: within Q's). A cached forward's Q, K and V are one buffer, Q's heads first. */
static int new_tokens_fit(const vka_builder *b, uint64_t tokens)
{
    const vka_layer_config *c = &b->p->cfg;
    const uint8_t vec = (uint8_t)vka_attention_vec(b->p);
    const uint64_t qkv_bytes = vka_elem_bytes(b, VKA_ROLE_QKV), ctx = (uint64_t)c->inner * vka_elem_bytes(b, VKA_ROLE_CTX);
    const uint64_t q = (uint64_t)c->H * c->D * qkv_bytes, kv = 2ull * c->H_kv * c->D * qkv_bytes;
    const uint64_t max_buffer = b->limits->max_buffer_bytes ? b->limits->max_buffer_bytes : UINT64_MAX;
    /* in whole 16-byte words; K's heads (after Q's) from the aligned start of a view before them */
    const uint64_t align = b->limits->texel_offset_alignment > 4 ? b->limits->texel_offset_alignment : 4;
    const uint64_t q_end = (tokens * q + 15) / 16 * 16, kv_end = (tokens * q % align + tokens * kv + 15) / 16 * 16;
    return tokens * (q + kv) <= max_buffer && tokens * ctx <= max_buffer &&
           vka_fits_binding(b, VKA_ROLE_QKV, vec, q_end) && vka_fits_binding(b, VKA_ROLE_QKV, VKA_VIEW_SCALAR, kv_end) &&
           vka_fits_binding(b, VKA_ROLE_CTX, VKA_VIEW_BUFFER, (tokens * ctx + 15) / 16 * 16);
}

vkattn_status vka_plan_new_tokens(vka_builder *b)
{
    const uint32_t T = b->p->L;
    if (new_tokens_fit(b, T)) return VKATTN_OK;
    uint32_t lo = 0, hi = T - 1; /* the most that fit */
    while (lo < hi) {
        uint32_t mid = hi - (hi - lo) / 2;
        if (new_tokens_fit(b, mid)) lo = mid;
        else hi = mid - 1;
    }
    const char *what = "their queries, keys and values and context rows do not fit one binding (or one allocation) "
                       "of this device";
    if (lo == 0)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "a cached forward of %u new tokens: %s, not even one token's (maxStorageBufferRange %llu "
                             "bytes, maxTexelBufferElements %llu)",
                             T, what, (unsigned long long)b->limits->max_storage_buffer_range,
                             (unsigned long long)b->limits->max_texel_elements);
    return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                         "a cached forward of %u new tokens: %s (maxStorageBufferRange %llu bytes, "
                         "maxTexelBufferElements %llu); feed them in chunks of at most %u tokens, a cached forward each",
                         T, what, (unsigned long long)b->limits->max_storage_buffer_range,
                         (unsigned long long)b->limits->max_texel_elements, lo);
}

vkattn_status vka_plan_kv_append(vka_builder *b, const vka_qkv_layout *l)
{
    const vka_problem *p = b->p;
    const vka_layer_config *c = &p->cfg;
    const uint32_t T = p->L;
    const int quant = vka_dtype_is_block(p->cache.dtype);
    vkattn_status status;
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_QKV_PROJECTION,
                  .kernel = quant ? VKA_KERNEL_APPEND_QUANT : VKA_KERNEL_APPEND,
                  .f16_out = p->cache.dtype == VKATTN_DTYPE_F16, .barrier_before = 1,
                  .binding_count = VKA_APPEND_BINDINGS};
    s.spec[VKA_SPEC_WG_SIZE] = 64;
    s.spec[VKA_SPEC_FLAGS] = p->cache.dtype == VKATTN_DTYPE_Q4_0 ? VKA_KV_Q4_0 : 0;
    /* the source: K's heads and V's after them, not Q's (a long prefill's Q/K/V may exceed one
     * binding where K and V fit) */
    uint64_t shift;
    const uint64_t kv_span = l->v_offset - l->k_offset + (uint64_t)c->H_kv * l->kv_head;
    VKA_TRY(vka_bind_elems(b, &s.bind[VKA_APPEND_SRC], l->k, VKA_VIEW_SCALAR, l->k_offset, kv_span, &shift));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_APPEND_META], VKA_ROLE_CACHE_META, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_APPEND_K], VKA_ROLE_CACHE_K, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_APPEND_V], VKA_ROLE_CACHE_V, VKA_VIEW_BUFFER));
    /* an invocation per element, or per block of 32 of a block format */
    uint64_t count = (uint64_t)T * c->H_kv * c->D / (quant ? VKA_QUANT_VALUES : 1);
    s.push.append = (vka_append_push){
        .H_kv = c->H_kv, .D = c->D, .k_offset = (uint32_t)shift,
        .v_offset = (uint32_t)(shift + l->v_offset - l->k_offset),
        .head_stride = (uint32_t)l->kv_head, .row_stride = (uint32_t)l->kv_row,
        .slot_offset = p->cache.positions_at + T, .block_size = p->cache.block_size, .count = (uint32_t)count,
    };
    return vka_push_step(b, &s, count, s.spec[VKA_SPEC_WG_SIZE]);
fail:
    return status;
}

static uint32_t pow2_at_least(uint32_t x)
{
    uint32_t n = 1;
    while (n < x && n < (1u << 31)) n <<= 1;
    return n;
}

vkattn_status vka_plan_paged(vka_builder *b, const vka_qkv_layout *l)
{
    const vka_problem *p = b->p;
    const vka_cache_problem *cp = &p->cache;
    const vka_layer_config *c = &p->cfg;
    const vka_tuning *pr = b->tuning;
    const uint32_t vec = vka_attention_vec(p), D = c->D, DV = D / vec, group = c->group;
    /* A block format's fetch (kv_quant.glsl) is several times a texel fetch's code, and lavapipe's
     * compile time grows faster than the unrolled key tile: the kv_cache quant_accuracy tests took
     * 37 s cold with tiles of 16 keys, 18 s with 8, and decode steps (D = 128, 2000 keys) ran as fast. */
    const int quant = vka_dtype_is_block(cp->dtype);
    /* The LANES build: a workgroup of `lanes` per row tile, a group of `key_lanes` per key (as many
     * of the tuning's as divide the head's texels), lanes / key_lanes keys per block; its row tile
     * holds up to 8 rows (a decoding step's whole GQA group: K/V read once per K/V head). */
    uint32_t lanes = pr->paged_lanes && b->limits->subgroup_sums ? pr->paged_lanes : 0;
    /* a key's lanes meet by XOR shuffles: a power of two within the 4 lanes every subgroup has
     * (subgroup_sums), dividing the head's texels and the workgroup */
    uint32_t key_lanes = 1;
    while (key_lanes * 2 <= pr->paged_lanes_group && key_lanes * 2 <= 4) key_lanes *= 2;
    while (key_lanes > 1 && (DV % key_lanes || lanes % key_lanes)) key_lanes >>= 1;
    const uint32_t tile_k = lanes ? lanes / key_lanes : quant && pr->fused_tile_k > 8 ? 8 : pr->fused_tile_k;
    /* rows of one (sequence, K/V head): its group's heads times its new tokens; no wider than that */
    uint32_t tile_a = lanes ? 8 : vka_tuning_fused_tile_q(pr, D);
    if (tile_a > pow2_at_least(group * cp->max_new)) tile_a = pow2_at_least(group * cp->max_new);
    const int f16_out = b->plan->role_dtype[VKA_ROLE_CTX] == VKATTN_DTYPE_F16;
    vkattn_status status;

    /* Key parts: what the loop budget needs, or what the caller asked for, or (0) enough to give
     * the device about paged_per_unit invocations per compute unit (paged_target where the device
     * does not say), in parts of at least paged_min_part keys. */
    uint64_t max_keys;
    if (lanes) { /* blocks + 1 trips (vka_paged_lanes_trips) */
        uint64_t blocks = b->budget == UINT64_MAX ? UINT32_MAX / 2 / tile_k : b->budget > 1 ? b->budget - 1 : 0;
        if (blocks == 0)
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "this device's loop budget (%llu per invocation) leaves no room for a block of %u "
                                 "keys", (unsigned long long)b->budget, tile_k);
        max_keys = blocks * tile_k;
    } else {
        VKA_TRY(vka_fused_max_keys(b, DV, tile_k, 0, &max_keys));
    }
    /* The keys one invocation's rows can see: every key of the longest sequence, or with a sliding
     * window those from its first row's window start to its last row's position, at most
     * W + (queries in a tile) - 1. Parts start at that window start (attn_paged), so decoding with a
     * window of W plans and costs like a sequence of W keys, however long the sequence. */
    uint64_t span = cp->max_len;
    if (c->window) span = vka_min64(span, (uint64_t)c->window + vka_min64(cp->max_new, tile_a) - 1);
    /* With a mask among the new tokens a row may see any of them, and each sits at a position
     * from the sequence's old length on: from the least window start of a tile's rows to the
     * sequence's end is at most W - 1 + (new tokens) keys. */
    if (c->window && cp->tree) span = vka_min64(cp->max_len, (uint64_t)c->window + cp->max_new - 1);
    uint64_t needed = vka_ceil_div(span, max_keys), parts = cp->parts;
    /* Split parts keep each row's state (its D floats a part) within the state budget. */
    const uint64_t state_budget = vka_state_budget(b);
    const uint64_t seq_part_bytes = (uint64_t)c->H * D * 4; /* one part's states of a sequence's query */
    const uint64_t part_bytes = cp->seqs * seq_part_bytes;   /* ... of every sequence's */
    const uint64_t parts_fit = state_budget / part_bytes;
    uint64_t work = (uint64_t)cp->seqs * c->H_kv * vka_ceil_div((uint64_t)group * cp->max_new, tile_a);
    if (parts == 0) { /* a target of invocations, or of workgroups for the LANES build */
        const uint64_t per_unit = lanes ? pr->paged_lanes_per_unit : pr->paged_per_unit;
        uint64_t target = b->limits->compute_units ? (uint64_t)b->limits->compute_units * per_unit
                                                   : pr->paged_target / (lanes ? lanes : 1);
        parts = vka_ceil_div(target, work);
        parts = vka_min64(parts, vka_ceil_div(span, pr->paged_min_part));
        parts = vka_min64(parts, vka_merge_max_parts(b));
        /* no more parts than the state budget holds: more would refuse what fewer run */
        parts = vka_min64(parts, parts_fit ? parts_fit : 1);
    }
    if (parts < needed) parts = needed;
    /* a part holds a block of keys at least: more parts asked for than the span has blocks are fewer */
    parts = vka_min64(parts, vka_ceil_div(span, tile_k));
    if (parts < 1) parts = 1;
    /* attn_merge combines a row's parts in one invocation (no chunks here to carry the rest) */
    if (parts > vka_merge_max_parts(b) && cp->parts >= needed)
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "kv_splits %llu over %llu keys: more key parts than one merge combines (%llu)",
                             (unsigned long long)cp->parts, (unsigned long long)span,
                             (unsigned long long)vka_merge_max_parts(b));
    if (parts > vka_merge_max_parts(b))
        return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                             "%llu keys at head dim %u need %llu key parts at this device's loop budget (%llu per "
                             "invocation), more than one merge combines (%llu)",
                             (unsigned long long)span, D, (unsigned long long)parts, (unsigned long long)b->budget,
                             (unsigned long long)vka_merge_max_parts(b));
    uint64_t part_len = vka_ceil_div(vka_ceil_div(span, parts), tile_k) * tile_k;
    parts = vka_ceil_div(span, part_len);

    /* The parts' states of every row at once when they fit the state budget, else the new tokens
     * in sets (a long prompt's chunk), one dispatch each: each set's states reuse the workspace. */
    uint64_t i_count = cp->max_new;
    if (parts > 1) {
        const uint64_t per_query = parts * part_bytes;
        i_count = vka_min64(state_budget / per_query, cp->max_new);
        if (i_count == 0) {
            /* the remedy the caller has, where one would fit: fewer parts asked, or fewer sequences */
            const uint64_t seq_bytes = needed * seq_part_bytes; /* one sequence at the parts it needs */
            char remedy[112];
            if (cp->parts && parts > needed && parts_fit >= needed)
                snprintf(remedy, sizeof remedy, "ask for kv_splits of at most %llu", (unsigned long long)parts_fit);
            else if (cp->seqs > 1 && seq_bytes <= state_budget)
                snprintf(remedy, sizeof remedy, "run at most %llu sequences per forward",
                         (unsigned long long)(state_budget / seq_bytes));
            else
                snprintf(remedy, sizeof remedy, "these keys need %llu key parts at this device's loop budget",
                         (unsigned long long)needed);
            return vka_error_set(b->error, VKATTN_ERROR_DEVICE_LIMIT,
                                 "split-KV states of %u sequences x %llu key parts (%llu bytes per query) exceed the "
                                 "state budget of %llu bytes: %s",
                                 cp->seqs, (unsigned long long)parts, (unsigned long long)per_query,
                                 (unsigned long long)state_budget, remedy);
        }
        uint64_t states = parts * cp->seqs * c->H * i_count;
        VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_STATE_O, states * D));
        VKA_TRY(vka_reserve_workspace(b, VKA_ROLE_STATE_LSE, states));
    }
    b->plan->key_parts = (uint32_t)parts;
    b->plan->key_chunks = 1;

    /* A block format's pools are read as uint words, addressed in bytes (abi.h); its D is whole
     * blocks, so vec = 4 and a texel of Q meets 4 values of one block. */
    const uint8_t pool_view = quant ? VKA_VIEW_SCALAR : (uint8_t)vec;
    /* The next block fetched ahead doubles the fetched rows' registers: only where they are few
     * (at most 16 texels per invocation, D = 128 with 4 lanes per key; attn_cm stops at D = 128
     * alike). A block format's texel is held as 3 words (scale, quant word and the next) until used. */
    const uint32_t fetched = lanes ? tile_k * vka_ceil_div(DV, lanes) + DV / key_lanes : 0;
    const int prefetch = lanes && pr->paged_lanes_prefetch && fetched <= 16;
    /* The LANES builds read the cache from storage buffers where the tuning says so: a block
     * format's words, an fp16 or fp32 cache's texels of 4 values (a head dim of a multiple of 4;
     * others have texels of one) */
    const int storage = lanes && (quant || vec == 4) && pr->paged_lanes_storage;
    /* ... an fp16 one's K rows 8 halves per 16-byte load where each key lane's share is an even
     * count of texels (its loads interleaved as the texels are; rows start on multiples of 8) */
    const int wide_k = storage && cp->dtype == VKATTN_DTYPE_F16 && DV % (2 * key_lanes) == 0;
    /* ... and its V rows so, by sets of DV / 2 lanes (a row's loads) each adding some of a block's
     * keys, where such sets fill the workgroup and share the block's keys evenly */
    const uint32_t row_loads = DV / 2, sets = storage && row_loads && lanes % row_loads == 0 ? lanes / row_loads : 0;
    const int wide_v = storage && cp->dtype == VKATTN_DTYPE_F16 && DV % 2 == 0 && sets && tile_k % sets == 0 &&
                       vka_paged_lanes_shared_bytes(tile_a, DV, tile_k, 0, sets) <= b->limits->max_shared_bytes;
    /* The row tile's queries staged in shared memory (TILE_A x DV texels beside the block's scores,
     * in the place where V's sets sum at the end) where the tuning says so and they fit */
    const int q_shared = lanes && pr->paged_lanes_q_shared &&
                         vka_paged_lanes_shared_bytes(tile_a, DV, tile_k, 1, wide_v ? sets : 0) <=
                             b->limits->max_shared_bytes;
    const vka_kernel kernel = quant     ? (storage ? VKA_KERNEL_PAGED_QUANT_LANES_STORAGE
                                           : lanes ? VKA_KERNEL_PAGED_QUANT_LANES
                                                   : VKA_KERNEL_PAGED_QUANT)
                              : storage ? VKA_KERNEL_PAGED_LANES_STORAGE
                              : lanes   ? VKA_KERNEL_PAGED_LANES
                                        : VKA_KERNEL_PAGED;
    const uint32_t wg = lanes ? lanes : pr->paged_wg, per_item = lanes ? lanes : 1; /* invocations per row tile */
    vka_step s = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_FUSED, .kernel = kernel, .f16_out = f16_out,
                  .barrier_before = 1, .binding_count = VKA_PAGED_BINDINGS};
    s.spec[VKA_SPEC_WG_SIZE] = wg;
    s.spec[VKA_SPEC_TILE_A] = tile_a;
    s.spec[VKA_SPEC_TILE_B] = lanes ? key_lanes : tile_k;
    s.spec[VKA_SPEC_VEC] = vec;
    s.spec[VKA_SPEC_DV] = DV;
    s.spec[VKA_SPEC_FLAGS] = (parts > 1 ? VKA_FUSED_STORE : 0) | (cp->dtype == VKATTN_DTYPE_Q4_0 ? VKA_KV_Q4_0 : 0) |
                             (cp->tree ? VKA_PAGED_TREE : 0) |
                             (prefetch ? VKA_PAGED_PREFETCH : 0) |
                             (storage && cp->dtype == VKATTN_DTYPE_F16 ? VKA_PAGED_POOL_F16 : 0) |
                             (wide_k ? VKA_PAGED_WIDE_K : 0) | (wide_v ? VKA_PAGED_WIDE_V : 0) |
                             (q_shared ? VKA_PAGED_Q_SHARED : 0);
    s.spec[VKA_SPEC_VARIANT] = vka_variant_bits(c);
    VKA_TRY(vka_bind_head_terms(b, &s.bind[VKA_PAGED_HEAD_TERMS]));
    /* Q's heads only (they come first), not K's and V's after them */
    uint64_t q_shift;
    VKA_TRY(vka_bind_elems(b, &s.bind[VKA_PAGED_Q], l->q, (uint8_t)vec, l->q_offset, (uint64_t)c->H * l->q_head,
                           &q_shift));
    if (q_shift != 0)
        return vka_error_set(b->error, VKATTN_ERROR_VULKAN, "internal: the paged forward's Q is not at its start");
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_PAGED_K], VKA_ROLE_CACHE_K, storage ? VKA_VIEW_BUFFER : pool_view));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_PAGED_V], VKA_ROLE_CACHE_V, storage ? VKA_VIEW_BUFFER : pool_view));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_PAGED_CTX], VKA_ROLE_CTX, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_PAGED_META], VKA_ROLE_CACHE_META, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_PAGED_STATE_O], parts > 1 ? VKA_ROLE_STATE_O : VKA_ROLE_NONE, VKA_VIEW_BUFFER));
    VKA_TRY(vka_bind_whole(b, &s.bind[VKA_PAGED_STATE_LSE], parts > 1 ? VKA_ROLE_STATE_LSE : VKA_ROLE_NONE,
                           VKA_VIEW_BUFFER));
    vka_step merge = {.kind = VKA_STEP_DISPATCH, .stage = VKATTN_STAGE_FUSED, .kernel = VKA_KERNEL_MERGE,
                      .f16_out = f16_out, .barrier_before = 1, .binding_count = VKA_MERGE_BINDINGS};
    merge.spec[VKA_SPEC_VEC] = vec;
    merge.spec[VKA_SPEC_DV] = DV;
    merge.spec[VKA_SPEC_FLAGS] = VKA_MERGE_RAGGED;
    merge.bind[VKA_MERGE_STATE_O] = s.bind[VKA_PAGED_STATE_O];
    merge.bind[VKA_MERGE_STATE_LSE] = s.bind[VKA_PAGED_STATE_LSE];
    merge.bind[VKA_MERGE_CTX] = s.bind[VKA_PAGED_CTX];
    merge.bind[VKA_MERGE_META] = s.bind[VKA_PAGED_META];
    VKA_TRY(vka_bind_whole(b, &merge.bind[VKA_MERGE_LSE_OUT], VKA_ROLE_NONE, VKA_VIEW_BUFFER));

    /* Pools: token slots of block_size rows per K/V head, H_kv heads per block (abi.h); a row is
     * D / vec texels, or D / 32 blocks' bytes. */
    const uint32_t row = quant ? (uint32_t)vka_dtype_bytes(cp->dtype, D) : D / vec, head = cp->block_size * row;
    b->plan->query_sets = 0;
    for (uint64_t i0 = 0; i0 < cp->max_new; i0 += i_count) {
        uint32_t ic = (uint32_t)vka_min64(i_count, cp->max_new - i0);
        uint32_t tiles = (uint32_t)vka_ceil_div((uint64_t)group * ic, tile_a);
        s.push.paged = (vka_paged_push){
            .seqs = cp->seqs, .H = c->H, .kv_group = group, .i_begin = (uint32_t)i0, .i_count = ic,
            .q_head = (uint32_t)(l->q_head / vec), .q_row = (uint32_t)(l->q_row / vec),
            .block_stride = c->H_kv * head, .kv_head = head, .kv_row = row, .block_size = cp->block_size,
            .ctx_stride = c->inner, .scale = c->scale,
            .parts = (uint32_t)parts, .part_len = (uint32_t)part_len, .tiles = tiles,
            .softcap = c->softcap, .window = c->window, .pos_offset = cp->positions_at,
        };
        VKA_TRY(vka_push_step(b, &s, parts * cp->seqs * c->H_kv * tiles * per_item, wg));
        if (parts > 1) {
            merge.push.merge = (vka_merge_push){
                .L = 0, .H = c->H, .bh_begin = 0, .bh_count = cp->seqs * c->H, .i_begin = (uint32_t)i0,
                .i_count = ic, .parts = (uint32_t)parts, .ctx_offset = 0, .ctx_stride = c->inner, .has_lse = 0,
            };
            VKA_TRY(vka_push_merge(b, &merge, (uint64_t)cp->seqs * c->H * ic * DV));
        }
        b->plan->query_sets++;
    }
fail:
    return status;
}

uint64_t vka_paged_lanes_shared_bytes(uint32_t tile_a, uint32_t DV, uint32_t keys, int q_shared, uint32_t sets)
{
    uint64_t queries = q_shared ? (uint64_t)tile_a * DV : 1, sums = sets ? (uint64_t)sets * tile_a * DV : 1;
    return (uint64_t)tile_a * keys * 4 + 16 * (queries > sums ? queries : sums);
}

/* attn_paged: attn_fused's loops over its part's keys, without a carried state's load (the block
 * formats' build dequantizes as it fetches, in the same loops). */
uint64_t vka_paged_trips(const vka_step *s)
{
    return vka_fused_loop_trips(s->spec[VKA_SPEC_DV], s->spec[VKA_SPEC_TILE_B], s->push.paged.part_len, 0, 0);
}

/* attn_paged's LANES build: the key-block loop over blocks of WG_SIZE / TILE_B keys; the rest is
 * unrolled. */
uint64_t vka_paged_lanes_trips(const vka_step *s)
{
    const uint64_t keys = s->spec[VKA_SPEC_WG_SIZE] / s->spec[VKA_SPEC_TILE_B];
    return vka_loop(vka_ceil_div(s->push.paged.part_len, keys));
}

/* kv_append has no loops (the quantizing build's are unrolled). */
uint64_t vka_append_trips(const vka_step *s)
{
    (void)s;
    return 0;
}

/* " (q8_0)" or " (q4_0)": the block format a KV_QUANT build reads or writes (VKA_SPEC_FLAGS). */
static const char *quant_name(const vka_step *s)
{
    if (s->kernel != VKA_KERNEL_PAGED_QUANT && s->kernel != VKA_KERNEL_PAGED_QUANT_LANES &&
        s->kernel != VKA_KERNEL_PAGED_QUANT_LANES_STORAGE && s->kernel != VKA_KERNEL_APPEND_QUANT)
        return "";
    return (s->spec[VKA_SPEC_FLAGS] & VKA_KV_Q4_0) ? " (q4_0)" : " (q8_0)";
}

void vka_paged_describe(vka_text *t, const vka_step *s)
{
    const vka_paged_push *c = &s->push.paged;
    vka_text_put(t, "%u sequences x %u heads (%u per K/V head) x new tokens %u..%u over the paged cache%s%s, keys: %u "
                 "part%s of %u%s", c->seqs, c->H, c->kv_group, c->i_begin, c->i_begin + c->i_count - 1, quant_name(s),
                 (s->spec[VKA_SPEC_FLAGS] & VKA_PAGED_TREE) ? ", masked among the new tokens" : "", c->parts,
                 c->parts > 1 ? "s" : "", c->part_len, (s->spec[VKA_SPEC_FLAGS] & VKA_FUSED_STORE) ? ", state out" : "");
    const int storage = s->kernel == VKA_KERNEL_PAGED_LANES_STORAGE || s->kernel == VKA_KERNEL_PAGED_QUANT_LANES_STORAGE;
    if (s->kernel == VKA_KERNEL_PAGED_LANES || s->kernel == VKA_KERNEL_PAGED_QUANT_LANES || storage)
        vka_text_put(t, "; %u rows per workgroup of %u, %u per key%s%s%s", s->spec[VKA_SPEC_TILE_A],
                     s->spec[VKA_SPEC_WG_SIZE], s->spec[VKA_SPEC_TILE_B],
                     (s->spec[VKA_SPEC_FLAGS] & VKA_PAGED_PREFETCH) ? ", the next block fetched meanwhile" : "",
                     (s->spec[VKA_SPEC_FLAGS] & VKA_PAGED_Q_SHARED) ? ", queries staged in shared memory" : "",
                     storage ? ", K and V rows from storage buffers" : "");
    const uint32_t wide = s->spec[VKA_SPEC_FLAGS] & (VKA_PAGED_WIDE_K | VKA_PAGED_WIDE_V);
    if (storage && wide)
        vka_text_put(t, " (%s 8 per 16-byte load)", wide == (VKA_PAGED_WIDE_K | VKA_PAGED_WIDE_V) ? "K and V"
                                                    : wide == VKA_PAGED_WIDE_K                       ? "K"
                                                                                                     : "V");
}

void vka_append_describe(vka_text *t, const vka_step *s)
{
    const vka_append_push *c = &s->push.append;
    uint32_t per_token = c->H_kv * (s->kernel == VKA_KERNEL_APPEND ? c->D : c->D / VKA_QUANT_VALUES);
    vka_text_put(t, "append %u tokens x %u K/V heads to the cache's blocks of %u%s", c->count / per_token, c->H_kv,
                 c->block_size, quant_name(s));
}
