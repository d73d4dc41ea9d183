/* The plan as text (vkattn_forward_explain): the shapes a textbook traces through multi-head
 * attention, then each step as the plan holds it, so what is printed is what runs. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "attention/layer.h"
#include "attention/trace.h"

/* Appends printf-style text, counting what would not fit. */
typedef struct text {
    char *buf;
    size_t cap, len;
} text;

static void put(text *t, const char *fmt, ...) VKA_PRINTF(2, 3);
static void put(text *t, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    size_t room = t->len < t->cap ? t->cap - t->len : 0;
    int n = vsnprintf(room ? t->buf + t->len : NULL, room, fmt, args);
    va_end(args);
    if (n > 0) t->len += (size_t)n;
}

static const char *kernel_name(vka_kernel k)
{
    const vka_kernel_info *info = vka_kernel_get(k);
    return info ? info->spirv : "?";
}

static void put_bytes(text *t, uint64_t bytes)
{
    if (bytes >= (1u << 20)) put(t, "%.1f MiB", bytes / 1048576.0);
    else if (bytes >= 1024) put(t, "%.1f KiB", bytes / 1024.0);
    else put(t, "%llu B", (unsigned long long)bytes);
}

/* " (q8_0)" or " (q4_0)": the block format a KV_QUANT build reads or writes (VKA_SPEC_FLAGS). */
static const char *quant_name(const vka_step *s)
{
    return (s->spec[VKA_SPEC_FLAGS] & VKA_KV_Q4_0) ? " (q4_0)" : " (q8_0)";
}

/* What a step is about: its shape parameters, from its push constants. */
static void put_step_shape(text *t, const vka_step *s)
{
    switch (s->kernel) {
    case VKA_KERNEL_MATMUL: {
        const vka_matmul_push *m = &s->push.matmul;
        put(t, "C(%u, %u) = A·W^T over %u texels%s", m->M, m->N, m->K,
            (s->spec[VKA_SPEC_FLAGS] & VKA_MATMUL_ACCUMULATE) ? ", added to C" : "");
        break;
    }
    case VKA_KERNEL_SCORES: {
        const vka_scores_push *c = &s->push.scores;
        put(t, "scores of (batch, head) pairs %u..%u x queries %u..%u x %u keys", c->bh_begin, c->bh_begin + c->bh_count - 1,
            c->i_begin, c->i_begin + c->i_count - 1, c->S_ext);
        break;
    }
    case VKA_KERNEL_SOFTMAX: {
        const vka_softmax_push *c = &s->push.softmax;
        static const char *const mode[] = {"rows", "range statistics", "normalise by range"};
        put(t, "%u rows of %u keys, %s (%u ranges)", c->rows, c->S_ext, mode[s->spec[VKA_SPEC_FLAGS] % 3], c->chunks);
        break;
    }
    case VKA_KERNEL_PV: {
        const vka_pv_push *c = &s->push.pv;
        put(t, "P·V of (batch, head) pairs %u..%u x queries %u..%u, keys %u..%u%s%s", c->bh_begin, c->bh_begin + c->bh_count - 1,
            c->i_begin, c->i_begin + c->i_count - 1, c->j_begin, c->j_begin + c->j_count - 1,
            (s->spec[VKA_SPEC_FLAGS] & VKA_PV_ACC_IN) ? " + accumulator" : "",
            (s->spec[VKA_SPEC_FLAGS] & VKA_PV_ACC_OUT) ? " -> accumulator" : "");
        break;
    }
    case VKA_KERNEL_FUSED: {
        const vka_fused_push *c = &s->push.fused;
        put(t, "(batch, head) pairs %u..%u x queries %u..%u, keys: %u part%s of %u, chunk at %u of %u keys%s%s", c->bh_begin,
            c->bh_begin + c->bh_count - 1, c->i_begin, c->i_begin + c->i_count - 1, c->splits, c->splits > 1 ? "s" : "",
            c->split_len, c->chunk_begin, c->chunk_len, (s->spec[VKA_SPEC_FLAGS] & VKA_FUSED_LOAD) ? ", carried in" : "",
            (s->spec[VKA_SPEC_FLAGS] & VKA_FUSED_STORE) ? ", state out" : "");
        break;
    }
    case VKA_KERNEL_MERGE: {
        const vka_merge_push *c = &s->push.merge;
        put(t, "merge %u parts of (batch, head) pairs %u..%u x queries %u..%u by log-sum-exp", c->splits, c->bh_begin,
            c->bh_begin + c->bh_count - 1, c->i_begin, c->i_begin + c->i_count - 1);
        break;
    }
    case VKA_KERNEL_AVERAGE_HEADS: put(t, "average over heads"); break;
    case VKA_KERNEL_ROPE: {
        const vka_rope_push *c = &s->push.rope;
        put(t, "RoPE (%s) of %u pairs x %u rows x %u heads per batch item, positions %u..%u",
            c->gptj ? "gptj" : "neox", c->pairs, c->rows, c->heads, c->pos_offset, c->pos_offset + c->rows - 1);
        break;
    }
    case VKA_KERNEL_PAGED:
    case VKA_KERNEL_PAGED_QUANT: {
        const vka_paged_push *c = &s->push.paged;
        put(t, "%u sequences x %u heads (%u per K/V head) x new tokens %u..%u over the paged cache%s, keys: %u "
            "part%s of %u%s", c->seqs, c->H, c->kv_group, c->i_begin, c->i_begin + c->i_count - 1,
            s->kernel == VKA_KERNEL_PAGED ? "" : quant_name(s), c->splits, c->splits > 1 ? "s" : "", c->split_len,
            (s->spec[VKA_SPEC_FLAGS] & VKA_FUSED_STORE) ? ", state out" : "");
        break;
    }
    case VKA_KERNEL_APPEND:
    case VKA_KERNEL_APPEND_QUANT: {
        const vka_append_push *c = &s->push.append;
        uint32_t per_token = c->H_kv * (s->kernel == VKA_KERNEL_APPEND ? c->D : c->D / VKA_QUANT_VALUES);
        put(t, "append %u tokens x %u K/V heads to the cache's blocks of %u%s", c->count / per_token, c->H_kv,
            c->block_size, s->kernel == VKA_KERNEL_APPEND ? "" : quant_name(s));
        break;
    }
    default: break;
    }
}

static void put_step(text *t, const vka_plan *plan, uint32_t k)
{
    const vka_step *s = &plan->steps[k];
    put(t, "  %3u %-15s ", k + 1, vkattn_stage_name(s->stage));
    if (s->kind == VKA_STEP_ZERO) {
        put(t, "fill %s with zeros\n", vka_role_name(s->bind[0].role));
        return;
    }
    if (s->kind == VKA_STEP_COPY) {
        put(t, "copy %u regions %s -> %s\n", s->copy_count, vka_role_name(s->bind[0].role),
            vka_role_name(s->bind[1].role));
        return;
    }
    put(t, "%-13s ", kernel_name(s->kernel));
    put_step_shape(t, s);
    put(t, "\n        binds:");
    const char *const *slots = vka_kernel_get(s->kernel)->slot_names;
    for (uint32_t i = 0; i < s->binding_count; i++) {
        const vka_bind *b = &s->bind[i];
        if (b->role == VKA_ROLE_NONE) continue;
        int slot_len = (int)strcspn(slots[i], "_"); /* the kernel's name for it, "Ctx_" as "Ctx" */
        put(t, " %.*s=%s", slot_len, slots[i], vka_role_name(b->role));
        if (b->offset || b->range < ((plan->role_bytes[b->role] + 15) / 16 * 16))
            put(t, "[%llu+%llu B]", (unsigned long long)b->offset, (unsigned long long)b->range);
    }
    put(t, "\n        grid %u x %u x %u workgroups of %u; %llu loop trips per invocation\n", s->groups[0], s->groups[1],
        s->groups[2], s->spec[VKA_SPEC_WG_SIZE], (unsigned long long)vka_step_loop_trips(s));
}

size_t vka_plan_describe(const vka_problem *p, const vka_plan *plan, uint32_t loop_budget, char *buf, size_t cap)
{
    text t = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    const vka_layer_config *c = &p->cfg;
    const uint32_t B = p->B, L = p->L, S = p->S, Sx = p->S_ext, E = c->E, H = c->H_active, D = c->D;
    put(&t, "plan: %s path, B=%u L=%u S=%u S'=%u E=%u H=%u", vkattn_path_name(plan->path), B, L, S, Sx, E, c->H);
    if (H < c->H) put(&t, " (%u computed)", H);
    if (c->group > 1) put(&t, " H_kv=%u (%u query heads per K/V head)", c->H_kv, c->group);
    put(&t, " D=%u, %s storage\n", D, vkattn_dtype_name(c->storage));
    put(&t, "  q: query (%u, %u, %u) x W_Q^T -> (%u, %u, %u, %u) per head\n", B, L, E, B, H, L, D);
    put(&t, "  k, v: %s (%u, %u, %u) x W_K^T, W_V^T -> (%u, %u, %u, %u) per %shead", p->self_attention ? "query" : "key",
        B, S, p->self_attention ? E : c->kdim, B, c->inner_kv / D, Sx, D, c->group > 1 ? "K/V " : "");
    if (c->extra_keys) put(&t, ", %u extra key%s after each head's %u", c->extra_keys, c->extra_keys > 1 ? "s" : "", S);
    put(&t, plan->qkv_one_matmul ? " [one Q/K/V matmul]\n" : "\n");
    if (c->rope_dim)
        put(&t, "  rope: q and k rotated in place, %u of %u dims per head (%s pairs), theta %g, positions from %u\n",
            c->rope_dim, D, c->rope_style == VKATTN_ROPE_GPTJ ? "gptj" : "neox", (double)c->rope_theta, p->rope_offset);
    if (vka_variant_bits(c)) {
        put(&t, "  variants:");
        if (c->window) put(&t, " window %u (a query sees no key %u or more positions before it)", c->window, c->window);
        if (c->softcap > 0) put(&t, " softcap %g", (double)c->softcap);
        if (c->alibi) put(&t, " alibi");
        if (c->sinks) put(&t, " sinks");
        put(&t, "\n");
    }
    if (plan->path == VKATTN_PATH_UNFUSED)
        put(&t, "  weights: softmax(q k^T / sqrt(%u) + mask) (%u, %u, %u, %u), in %u group%s of rows\n", D, B, H, L, Sx,
            plan->chunks, plan->chunks == 1 ? "" : "s");
    else
        put(&t, "  weights: never formed; keys in %u part%s side by side x %u chunk%s in turn", plan->key_parts,
            plan->key_parts == 1 ? "" : "s", plan->key_chunks, plan->key_chunks == 1 ? "" : "s");
    if (plan->path != VKATTN_PATH_UNFUSED && loop_budget) put(&t, " (loop budget %u trips)\n", loop_budget);
    else if (plan->path != VKATTN_PATH_UNFUSED) put(&t, " (no loop budget)\n");
    put(&t, "  ctx: weights x v -> (%u, %u, %u) heads side by side\n", B, L, H * D);
    put(&t, "  out: ctx x W_O^T + b_O -> (%u, %u, %u)\n", B, L, E);
    put(&t, "  workspace:");
    for (int r = VKA_FIRST_WORKSPACE_ROLE; r < VKA_ROLE_COUNT; r++) {
        if (!plan->workspace_bytes[r]) continue;
        put(&t, " %s ", vka_role_name((vka_role)r));
        put_bytes(&t, plan->workspace_bytes[r]);
    }
    put(&t, " = ");
    put_bytes(&t, vka_plan_workspace_total(plan));
    put(&t, "\nsteps (%u):\n", plan->step_count);
    for (uint32_t k = 0; k < plan->step_count; k++) put_step(&t, plan, k);
    return t.len;
}
