/* The plan as text (vkattn_forward_explain): the shapes a textbook traces through multi-head
 * attention, then each step as the plan holds it, so what is printed is what runs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan/trace.h"

#include "problem/rope.h"

static void put_bytes(vka_text *t, uint64_t bytes)
{
    if (bytes >= (1u << 20)) vka_text_put(t, "%.1f MiB", bytes / 1048576.0);
    else if (bytes >= 1024) vka_text_put(t, "%.1f KiB", bytes / 1024.0);
    else vka_text_put(t, "%llu B", (unsigned long long)bytes);
}

static void put_step(vka_text *t, const vka_plan *plan, uint32_t k)
{
    const vka_step *s = &plan->steps[k];
    vka_text_put(t, "  %3u %-15s ", k + 1, vkattn_stage_name(s->stage));
    if (s->kind == VKA_STEP_ZERO) {
        vka_text_put(t, "fill %s with zeros\n", vka_role_name(s->bind[0].role));
        return;
    }
    if (s->kind == VKA_STEP_WRITE) {
        vka_text_put(t, "write %u words to %s\n", s->copy_count, vka_role_name(s->bind[0].role));
        return;
    }
    if (s->kind == VKA_STEP_COPY) {
        vka_text_put(t, "copy %u regions %s -> %s\n", s->copy_count, vka_role_name(s->bind[0].role),
            vka_role_name(s->bind[1].role));
        return;
    }
    vka_text_put(t, "%-13s ", vka_step_name(s));
    vka_step_describe(t, s);
    vka_text_put(t, "\n        binds:");
    for (uint32_t i = 0; i < s->binding_count; i++) {
        const vka_bind *b = &s->bind[i];
        char slot[32] = "?";
        if (b->role == VKA_ROLE_NONE) continue;
        vka_kernel_slot_name(vka_kernel_get(s->kernel), i, slot, sizeof slot);
        int slot_len = (int)strcspn(slot, "_"); /* the kernel's name for it, "Ctx_" as "Ctx" */
        vka_text_put(t, " %.*s=%s", slot_len, slot, vka_role_name(b->role));
        if (b->offset || b->range < ((plan->role_bytes[b->role] + 15) / 16 * 16))
            vka_text_put(t, "[%llu+%llu B]", (unsigned long long)b->offset, (unsigned long long)b->range);
    }
    vka_text_put(t, "\n        grid %u x %u x %u workgroups of %u; %llu loop trips per invocation\n", s->groups[0], s->groups[1],
        s->groups[2], s->spec[VKA_SPEC_WG_SIZE], (unsigned long long)vka_step_loop_trips(s));
}

size_t vka_plan_describe(const vka_problem *p, const vka_plan *plan, uint32_t loop_budget, char *buf, size_t cap)
{
    vka_text t = {buf, cap, 0};
    if (cap) buf[0] = '\0';
    const vka_layer_config *c = &p->cfg;
    const uint32_t B = p->B, L = p->L, S = p->S, Sx = p->S_ext, E = c->E, H = c->H_active, D = c->D;
    vka_text_put(&t, "plan: %s path, B=%u L=%u S=%u S'=%u E=%u H=%u", vkattn_path_name(plan->path), B, L, S, Sx, E, c->H);
    if (H < c->H) vka_text_put(&t, " (%u computed)", H);
    if (c->group > 1) vka_text_put(&t, " H_kv=%u (%u query heads per K/V head)", c->H_kv, c->group);
    vka_text_put(&t, " D=%u%s, %s storage", D, c->E_q != E ? " (H*D != E)" : "", vkattn_dtype_name(c->storage));
    if (c->scale != (float)(1.0 / sqrt((double)D))) vka_text_put(&t, ", scale %g", (double)c->scale);
    vka_text_put(&t, "\n");
    if (p->cache.seqs) /* a cached forward's L = S are its new tokens; its keys come from the cache */
        vka_text_put(&t,
                     "  cache: %u sequence%s, %u new token%s in all (at most %u in one), keys from the cache's %s "
                     "blocks of %u, up to %u per sequence\n",
                     p->cache.seqs, p->cache.seqs == 1 ? "" : "s", L, L == 1 ? "" : "s", p->cache.max_new,
                     vkattn_dtype_name(p->cache.dtype), p->cache.block_size, p->cache.max_len);
    vka_text_put(&t, "  q: query (%u, %u, %u) x W_Q^T -> (%u, %u, %u, %u) per head\n", B, L, E, B, H, L, D);
    vka_text_put(&t, "  k, v: %s (%u, %u, %u) x W_K^T, W_V^T -> (%u, %u, %u, %u) per %shead", p->self_attention ? "query" : "key",
        B, S, p->self_attention ? E : c->kdim, B, c->inner_kv / D, Sx, D, c->group > 1 ? "K/V " : "");
    if (c->extra_keys) vka_text_put(&t, ", %u extra key%s after each head's %u", c->extra_keys, c->extra_keys > 1 ? "s" : "", S);
    vka_text_put(&t, plan->qkv_one_matmul ? " [one Q/K/V matmul]\n" : "\n");
    if (c->qk_norm)
        vka_text_put(&t, "  qk norm: q and k RMS-normalized over %s (eps %g%s) before RoPE\n",
            c->qk_norm == VKATTN_QK_NORM_ROW ? "the whole row" : "each head", (double)c->qk_norm_eps,
            c->qk_norm_plus_one ? ", weights 1 + w" : "");
    if (c->rope_dim) {
        static const char *const types[] = {"", ", linear", ", dynamic", ", yarn", ", longrope", ", llama3", ", a table"};
        vka_text_put(&t, "  rope: q and k rotated in place, %u of %u dims per head (%s pairs), theta %g%s, ",
            c->rope_dim, D, c->rope_style == VKATTN_ROPE_GPTJ ? "gptj" : "neox", (double)c->rope_theta,
            types[c->rope_scaling.type]);
        if (p->cache.seqs) vka_text_put(&t, "positions from the sequence table");
        else vka_text_put(&t, "positions from %u", p->rope_offset);
        if (c->rope_attention != 1.0f) vka_text_put(&t, ", cos and sin x %g", (double)c->rope_attention);
        if (vka_rope_table_varies(&c->rope_scaling, vka_rope_seq_len(p)))
            vka_text_put(&t, ", the table of length %llu", (unsigned long long)vka_rope_seq_len(p));
        vka_text_put(&t, "\n");
    }
    if (vka_variant_bits(c)) {
        vka_text_put(&t, "  variants:");
        if (c->window) vka_text_put(&t, " window %u (a query sees no key %u or more positions before it)", c->window, c->window);
        if (c->softcap > 0) vka_text_put(&t, " softcap %g", (double)c->softcap);
        if (c->alibi) vka_text_put(&t, " alibi");
        if (c->sinks) vka_text_put(&t, " sinks");
        vka_text_put(&t, "\n");
    }
    if (plan->path == VKATTN_PATH_UNFUSED) {
        char scaled[48];
        if (c->scale == (float)(1.0 / sqrt((double)D))) snprintf(scaled, sizeof scaled, "q k^T / sqrt(%u)", D);
        else snprintf(scaled, sizeof scaled, "%g q k^T", (double)c->scale);
        vka_text_put(&t, "  weights: softmax(%s + mask) (%u, %u, %u, %u), in %u group%s of rows\n", scaled, B, H, L, Sx,
            plan->chunks, plan->chunks == 1 ? "" : "s");
    }
    else
        vka_text_put(&t, "  weights: never formed; keys in %u part%s side by side x %u chunk%s in turn", plan->key_parts,
            plan->key_parts == 1 ? "" : "s", plan->key_chunks, plan->key_chunks == 1 ? "" : "s");
    if (plan->path != VKATTN_PATH_UNFUSED && loop_budget) vka_text_put(&t, " (loop budget %u trips)\n", loop_budget);
    else if (plan->path != VKATTN_PATH_UNFUSED) vka_text_put(&t, " (no loop budget)\n");
    vka_text_put(&t, "  ctx: weights x v -> (%u, %u, %u) heads side by side\n", B, L, H * D);
    vka_text_put(&t, "  out: ctx x W_O^T%s -> (%u, %u, %u)\n", c->bias ? " + b_O" : "", B, L, E);
    vka_text_put(&t, "  workspace:");
    for (int r = VKA_FIRST_WORKSPACE_ROLE; r < VKA_ROLE_COUNT; r++) {
        if (!plan->workspace_bytes[r]) continue;
        vka_text_put(&t, " %s ", vka_role_name((vka_role)r));
        put_bytes(&t, plan->workspace_bytes[r]);
    }
    vka_text_put(&t, " = ");
    put_bytes(&t, vka_plan_workspace_total(plan));
    vka_text_put(&t, "\nsteps (%u):\n", plan->step_count);
    for (uint32_t k = 0; k < plan->step_count; k++) put_step(&t, plan, k);
    return t.len;
}
