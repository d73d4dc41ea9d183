/* One small forward through the public API, checked against the CPU reference: what every program
 * that links vkattn from outside runs (tests/consumer, tests/symbols) to show that the library it
 * got works. Public API only, and no libm: a program linking libvkattn.so needs nothing else. */
#ifndef VKATTN_TINY_FORWARD_H
#define VKATTN_TINY_FORWARD_H

#include <stdio.h>

#include "vkattn.h"

/* Self-attention, causal, B = 2, L = 7, E = 16, H = 2, on the default device (VKATTN_DEVICE may
 * name one), against vkattn_reference_forward: max-abs <= 1e-5·max(1, max|ref|), and no
 * validation message when the layer is on. Prints one line; returns 0 on a match, 1 otherwise. */
static int tiny_forward_check(const char *who)
{
    enum { B = 2, L = 7, E = 16, H = 2 };
    static float in_w[3 * E * E], in_b[3 * E], out_w[E * E], out_b[E], x[B * L * E], y[B * L * E], ref[B * L * E];
    float *fill[] = {in_w, in_b, out_w, out_b, x};
    size_t sizes[] = {3 * E * E, 3 * E, E * E, E, B * L * E};
    unsigned seed = 12345;
    for (size_t a = 0; a < sizeof fill / sizeof fill[0]; a++)
        for (size_t i = 0; i < sizes[a]; i++) {
            seed = seed * 1664525u + 1013904223u;
            fill[a][i] = (float)(seed >> 8) / (float)(1u << 24) - 0.5f;
        }

    vkattn_layer_desc desc = {.embed_dim = E, .num_heads = H};
    vkattn_weights w = {.in_proj_weight = in_w, .in_proj_bias = in_b, .out_proj_weight = out_w, .out_proj_bias = out_b};
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .query = x, .output = y, .causal = 1};
    vkattn_error error = {0};
    vkattn_context *ctx = NULL;
    vkattn_layer *layer = NULL;
    vkattn_status status = vkattn_context_create(NULL, &ctx, &error);
    if (status != VKATTN_OK) {
        fprintf(stderr, "%s: vkattn_context_create: %s\n", who, error.message);
        return 1;
    }
    vkattn_device_info info;
    vkattn_context_device(ctx, &info);
    if ((status = vkattn_layer_create(ctx, &desc, &w, &layer)) == VKATTN_OK)
        status = vkattn_forward_host(layer, &f);
    if (status != VKATTN_OK) fprintf(stderr, "%s: %s\n", who, vkattn_context_last_error(ctx));
    uint32_t messages = vkattn_context_validation_messages(ctx);
    vkattn_layer_destroy(layer);
    vkattn_context_destroy(ctx);
    if (status != VKATTN_OK) return 1;

    f.output = ref;
    if (vkattn_reference_forward(&desc, &w, &f, &error) != VKATTN_OK) {
        fprintf(stderr, "%s: vkattn_reference_forward: %s\n", who, error.message);
        return 1;
    }
    double max_err = 0, max_ref = 1;
    for (size_t i = 0; i < B * L * E; i++) {
        double d = (double)y[i] - ref[i], r = ref[i];
        d = d < 0 ? -d : d;
        r = r < 0 ? -r : r;
        if (max_err == max_err && !(d <= max_err)) max_err = d; /* the first NaN sticks */
        if (r > max_ref) max_ref = r;
    }
    int ok = max_err <= 1e-5 * max_ref && messages == 0;
    printf("%s: vkattn %s on %s: max-abs %.3g (tolerance %.3g), %u validation messages: %s\n", who,
           vkattn_version_string(), info.name, max_err, 1e-5 * max_ref, messages, ok ? "OK" : "MISMATCH");
    return ok ? 0 : 1;
}

#endif
