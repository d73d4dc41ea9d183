/* Decoding through the public API as the README's "Decoding" section shows it: a grouped-query
 * layer with RoPE, a paged KV cache, a ragged prefill of two sequences, then single-token steps;
 * every token's output checked against the CPU reference of one causal forward over its whole
 * sequence. Public API only, and no libm. */
#ifndef VKATTN_TINY_DECODE_H
#define VKATTN_TINY_DECODE_H

#include <stdio.h>
#include <string.h>

#include "vkattn.h"

/* Prompts of 5 and 2 tokens, then 4 steps: sequences of 9 and 6 tokens, E = 16, H = 4, H_kv = 2,
 * blocks of 4 tokens. max-abs <= 1e-5·max(1, max|ref|) and no validation message; prints one
 * line; returns 0 on a match, 1 otherwise. */
static int tiny_decode_check(const char *who)
{
    enum { E = 16, H = 4, KV = 2, EK = KV * E / H, T0 = 9, T1 = 6, STEPS = 4 };
    static float wq[E * E], wk[EK * E], wv[EK * E], wo[E * E], b_in[E + 2 * EK], b_out[E];
    static float x0[T0 * E], x1[T1 * E], y0[T0 * E], y1[T1 * E], ref[T0 * E], in[2 * 5 * E], out[2 * 5 * E];
    float *fill[] = {wq, wk, wv, wo, b_in, b_out, x0, x1};
    size_t sizes[] = {E * E, EK * E, EK * E, E * E, E + 2 * EK, E, T0 * E, T1 * E};
    unsigned seed = 777;
    for (size_t a = 0; a < sizeof fill / sizeof fill[0]; a++)
        for (size_t i = 0; i < sizes[a]; i++) {
            seed = seed * 1664525u + 1013904223u;
            fill[a][i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
        }
    vkattn_layer_desc desc = {.embed_dim = E, .num_heads = H, .num_kv_heads = KV, .rope_theta = 10000};
    vkattn_weights w = {.q_proj_weight = wq, .k_proj_weight = wk, .v_proj_weight = wv, .in_proj_bias = b_in,
                        .out_proj_weight = wo, .out_proj_bias = b_out};
    vkattn_error error = {0};
    vkattn_context *ctx = NULL;
    vkattn_layer *layer = NULL;
    vkattn_kv_cache *cache = NULL;
    vkattn_status status = vkattn_context_create(NULL, &ctx, &error);
    if (status != VKATTN_OK) {
        fprintf(stderr, "%s: vkattn_context_create: %s\n", who, error.message);
        return 1;
    }
    vkattn_kv_cache_desc cdesc = {.num_kv_heads = KV, .head_dim = E / H, .num_blocks = 8, .block_size = 4,
                                  .max_sequences = 2};
    if ((status = vkattn_layer_create(ctx, &desc, &w, &layer)) == VKATTN_OK)
        status = vkattn_kv_cache_create(ctx, &cdesc, &cache);
    /* the prompts: 5 tokens of sequence 0, then 2 of sequence 1, in one forward */
    uint32_t prompt[2] = {T0 - STEPS, T1 - STEPS};
    memcpy(in, x0, prompt[0] * E * sizeof(float));
    memcpy(in + prompt[0] * E, x1, prompt[1] * E * sizeof(float));
    vkattn_cached_forward_desc f = {.batch = 2, .new_tokens = prompt, .query = in, .output = out};
    if (status == VKATTN_OK) status = vkattn_forward_cached(layer, cache, &f);
    memcpy(y0, out, prompt[0] * E * sizeof(float));
    memcpy(y1, out + prompt[0] * E, prompt[1] * E * sizeof(float));
    f.new_tokens = NULL; /* one token per sequence */
    for (uint32_t s = 0; s < STEPS && status == VKATTN_OK; s++) {
        memcpy(in, x0 + (prompt[0] + s) * E, E * sizeof(float));
        memcpy(in + E, x1 + (prompt[1] + s) * E, E * sizeof(float));
        status = vkattn_forward_cached(layer, cache, &f);
        memcpy(y0 + (prompt[0] + s) * E, out, E * sizeof(float));
        memcpy(y1 + (prompt[1] + s) * E, out + E, E * sizeof(float));
    }
    if (status != VKATTN_OK) fprintf(stderr, "%s: %s\n", who, vkattn_context_last_error(ctx));
    uint32_t messages = vkattn_context_validation_messages(ctx);
    vkattn_context_destroy(ctx); /* takes the layer and the cache with it */
    if (status != VKATTN_OK) return 1;

    double max_err = 0, max_ref = 1;
    for (int s = 0; s < 2; s++) {
        vkattn_host_forward_desc r = {.batch = 1, .query_len = s ? T1 : T0, .query = s ? x1 : x0, .output = ref,
                                      .causal = 1};
        if (vkattn_reference_forward(&desc, &w, &r, &error) != VKATTN_OK) {
            fprintf(stderr, "%s: vkattn_reference_forward: %s\n", who, error.message);
            return 1;
        }
        const float *y = s ? y1 : y0;
        for (size_t i = 0; i < (size_t)(s ? T1 : T0) * E; i++) {
            double d = (double)y[i] - ref[i], a = ref[i];
            d = d < 0 ? -d : d;
            a = a < 0 ? -a : a;
            if (max_err == max_err && !(d <= max_err)) max_err = d; /* the first NaN sticks */
            if (a > max_ref) max_ref = a;
        }
    }
    int ok = max_err <= 1e-5 * max_ref && messages == 0;
    printf("%s: decoding through a KV cache: max-abs %.3g (tolerance %.3g), %u validation messages: %s\n", who, max_err,
           1e-5 * max_ref, messages, ok ? "OK" : "MISMATCH");
    return ok ? 0 : 1;
}

#endif
