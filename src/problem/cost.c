/* The cost model: FLOPs and minimum bytes of each stage, the one formula the benchmark and the
 * tests share. */
#include <string.h>

#include "common/error.h"
#include "problem/args.h"

vkattn_status vkattn_forward_cost(const vkattn_layer_desc *d, uint32_t batch, uint32_t query_len, uint32_t key_len,
                                  vkattn_path path, vkattn_weights_kind weights, vkattn_cost *out)
{
    vka_layer_config cfg;
    if (!out || !batch || !query_len || (unsigned)path > VKATTN_PATH_CPU || (unsigned)weights > VKATTN_WEIGHTS_AVERAGED ||
        vka_layer_config_from_desc(d, &cfg, NULL) != VKATTN_OK)
        return VKATTN_ERROR_INVALID_ARGUMENT;
    const int self = key_len == 0;
    const double B = batch, L = query_len, S = self ? query_len : key_len;
    /* I: the projected width of the computed heads; Ik: of the K/V heads they read (I / group
     * with grouped-query attention, where K and V are projected once per K/V head). */
    const double E = cfg.E, H = cfg.H_active, D = cfg.D, I = cfg.inner, kdim = cfg.kdim, vdim = cfg.vdim;
    const double Ik = cfg.inner_kv;
    const double S_ext = S + cfg.extra_keys;
    const double a = cfg.storage == VKATTN_DTYPE_F16 ? 2.0 : 4.0; /* activation and weight element */
    const double f32 = 4.0;                                       /* scores are always fp32 */

    vkattn_cost c;
    memset(&c, 0, sizeof c);
    c.flops[VKATTN_STAGE_QKV_PROJECTION] = 2.0 * B * (L * E * I + S * kdim * Ik + S * vdim * Ik);
    c.flops[VKATTN_STAGE_OUT_PROJECTION] = 2.0 * B * L * I * E;
    double inputs = self ? B * L * E : B * L * E + B * S * kdim + B * S * vdim;
    c.bytes[VKATTN_STAGE_QKV_PROJECTION] =
        a * (inputs + I * E + Ik * kdim + Ik * vdim + I + 2 * Ik) + a * (B * L * I + 2 * B * S * Ik);
    c.bytes[VKATTN_STAGE_OUT_PROJECTION] = a * (B * L * I + E * I + E + B * L * E);
    if (cfg.rope_dim) { /* RoPE, planned with the projections: 6 FLOPs per rotated pair, read and written in place */
        const double rotated = B * (L * H + S * (Ik / D)) * cfg.rope_dim;
        c.flops[VKATTN_STAGE_QKV_PROJECTION] += 3.0 * rotated;
        c.bytes[VKATTN_STAGE_QKV_PROJECTION] += 2.0 * a * rotated;
    }
    if (cfg.qk_norm) { /* the q/k norms, in the same step: 4 FLOPs per value (square, add, two scalings), read twice */
        const double normed = B * (L * I + S * Ik);
        c.flops[VKATTN_STAGE_QKV_PROJECTION] += 4.0 * normed;
        c.bytes[VKATTN_STAGE_QKV_PROJECTION] += (cfg.rope_dim ? 1.0 : 3.0) * a * normed;
    }

    const double attention = 4.0 * B * H * L * S * D;
    const double q_k = a * (B * L * I + B * S * Ik), v = a * B * S * Ik, ctx = a * B * L * I;
    const double probs = f32 * B * H * L * S_ext;
    if (vka_resolve_path(path, weights) == VKATTN_PATH_FUSED) {
        c.flops[VKATTN_STAGE_FUSED] = attention;
        c.bytes[VKATTN_STAGE_FUSED] = q_k + v + ctx;
    } else {
        c.flops[VKATTN_STAGE_SCORES] = attention / 2;
        c.flops[VKATTN_STAGE_PV] = attention / 2;
        c.bytes[VKATTN_STAGE_SCORES] = q_k + probs;
        c.bytes[VKATTN_STAGE_SOFTMAX] = 2 * probs;
        c.bytes[VKATTN_STAGE_PV] = probs + v + ctx;
        if (weights == VKATTN_WEIGHTS_AVERAGED) c.bytes[VKATTN_STAGE_AVERAGE_HEADS] = probs + 2 * f32 * B * L * S_ext;
    }
    for (int s = 0; s < VKATTN_STAGE_COUNT; s++) {
        c.total_flops += c.flops[s];
        c.total_bytes += c.bytes[s];
    }
    *out = c;
    return VKATTN_OK;
}
