/* The CPU reference. Deliberately the most boring code in the repository: every GPU result is
 * compared with it, so it follows the formula literally and keeps every intermediate in double.
 * Every sum runs in index order; a few sums run side by side (project_rows, dot_four), which only
 * lets their additions overlap: the results are the bits one loop per sum gives.
 *
 *   q = query W_Q^T + b_Q,  k = key W_K^T + b_K,  v = value W_V^T + b_V      (then extra keys)
 *   p_ij = softmax_j(scale q_i · k_j + mask_ij)       per head, masked keys excluded (skipped:
 *                                                      NaN in a masked key or value row stays out);
 *                                                      scale = vkattn_layer_desc.scale, else 1/sqrt(D)
 *   ctx_i = sum_j p_ij v_j,  output = ctx W_O^T + b_O
 *
 * With q/k norms (qk_norm) each head's D values, or a token's whole q or k row, become
 * x / sqrt(mean(x^2) + eps) * w (w: q_norm_weight or k_norm_weight, 1 + w with qk_norm_plus_one)
 * right after the projection.
 *
 * With RoPE q and k are then rotated, each head alike: pair (x1, x2) of dims (i, i + rope_dim/2)
 * (NeoX) or (2i, 2i+1) (GPT-J) becomes (x1 c - x2 s, x2 c + x1 s), c = f cos a, s = f sin a,
 * a = float(pos) * inv_freq_i in fp32 (the table of vka_rope_table for the forward's sequence
 * length, f its attention factor), pos = the token's index + the first position of its side
 * (vka_rope_first_positions: queries and keys end at the same position), or the caller's
 * positions (vkattn_host_forward_desc.positions, self-attention: token i is query i and key i);
 * cos and sin in double.
 *
 * k and v have H_kv heads (E_kv = H_kv·D columns); query head h reads K/V head h / (H / H_kv)
 * (grouped-query attention; H_kv = H is plain multi-head attention).
 *
 * With kv_cache_dtype (vkattn_host_forward_desc) k, after RoPE, and v are then rounded to float
 * and through the KV cache's storage (format/quant.h), as a cached forward's cache holds them.
 *
 * The variants (vkattn_layer_desc), with pos_i - pos_j = i - j + S - L (queries and keys end at the
 * same position), or the caller's positions:
 *   x_ij = scale q_i · k_j;  softcap c: x_ij = c tanh(x_ij / c);  ALiBi: x_ij += m_h (pos_j - pos_i)
 *   window W: key j < S masked when pos_i - pos_j >= W
 * Causal masks key j > i (top-left), or pos_j > pos_i in a layer with positions or at the caller's
 * positions.
 *   sink s_h: p_ij = exp(x_ij - M) / (exp(s_h - M) + sum_k exp(x_ik - M)), M = max(s_h, max_k x_ik)
 */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

#include "common/error.h"
#include "format/quant.h"
#include "problem/rope.h"

/* y0 = x0 W^T + b and y1 = x1 W^T + b (y1 NULL: one row), with W (out, in) a row range of a bigger
 * matrix. Each sum runs in index order, as the formula reads; eight of them (two rows, four
 * outputs) run side by side only so that their additions overlap: each gives the bits it would alone. */
static void project_rows(const double *x0, const double *x1, size_t in, const float *W, const float *b, size_t out,
                         double *y0, double *y1)
{
    if (!y1) x1 = x0; /* summed again, not stored */
    size_t o = 0;
    for (; o + 4 <= out; o += 4) {
        const float *w0 = W + o * in, *w1 = w0 + in, *w2 = w1 + in, *w3 = w2 + in;
        double a0 = b ? b[o] : 0.0, a1 = b ? b[o + 1] : 0.0, a2 = b ? b[o + 2] : 0.0, a3 = b ? b[o + 3] : 0.0;
        double c0 = a0, c1 = a1, c2 = a2, c3 = a3;
        for (size_t i = 0; i < in; i++) {
            a0 += x0[i] * w0[i], c0 += x1[i] * w0[i];
            a1 += x0[i] * w1[i], c1 += x1[i] * w1[i];
            a2 += x0[i] * w2[i], c2 += x1[i] * w2[i];
            a3 += x0[i] * w3[i], c3 += x1[i] * w3[i];
        }
        y0[o] = a0, y0[o + 1] = a1, y0[o + 2] = a2, y0[o + 3] = a3;
        if (y1) y1[o] = c0, y1[o + 1] = c1, y1[o + 2] = c2, y1[o + 3] = c3;
    }
    for (; o < out; o++) {
        double a = b ? b[o] : 0.0, c = a;
        for (size_t i = 0; i < in; i++) a += x0[i] * W[o * in + i], c += x1[i] * W[o * in + i];
        y0[o] = a;
        if (y1) y1[o] = c;
    }
}

/* y (rows, out) = x (rows, in) W^T + b; `wide` holds 2 * in doubles (two rows of x, widened exactly). */
static void linear(const float *x, size_t rows, size_t in, const float *W, const float *b, size_t out, double *y,
                   double *wide)
{
    for (size_t r = 0; r < rows; r += 2) {
        int two = r + 1 < rows;
        for (size_t i = 0; i < (two ? 2 : 1) * in; i++) wide[i] = x[r * in + i];
        project_rows(wide, wide + in, in, W, b, out, y + r * out, two ? y + (r + 1) * out : NULL);
    }
}

/* dots[t] = a . b_t over n values for four rows b_t, each summed in index order (the bits one loop
 * per row would give; side by side only so that the additions overlap). */
static void dot_four(const double *a, const double *const b[4], size_t n, double dots[4])
{
    double d0 = 0.0, d1 = 0.0, d2 = 0.0, d3 = 0.0;
    for (size_t e = 0; e < n; e++) {
        d0 += a[e] * b[0][e];
        d1 += a[e] * b[1][e];
        d2 += a[e] * b[2][e];
        d3 += a[e] * b[3][e];
    }
    dots[0] = d0, dots[1] = d1, dots[2] = d2, dots[3] = d3;
}

/* The W_Q/W_K/W_V rows and biases, wherever the user gave them. */
typedef struct in_proj {
    const float *Wq, *Wk, *Wv;
    const float *bq, *bk, *bv;
} in_proj;

static in_proj split_in_proj(const vka_layer_config *c, const vkattn_weights *w)
{
    in_proj ip = {w->q_proj_weight, w->k_proj_weight, w->v_proj_weight, NULL, NULL, NULL};
    size_t E = c->E, E_q = c->E_q, E_kv = c->E_kv; /* in_proj_weight (E_q + 2 E_kv, E), in_proj_bias (E_q + 2 E_kv) */
    if (w->in_proj_weight) {
        ip.Wq = w->in_proj_weight;
        ip.Wk = w->in_proj_weight + E_q * E;
        ip.Wv = w->in_proj_weight + E_q * E + E_kv * E;
    }
    if (w->in_proj_bias) {
        ip.bq = w->in_proj_bias;
        ip.bk = w->in_proj_bias + E_q;
        ip.bv = w->in_proj_bias + E_q + E_kv;
    }
    return ip;
}

/* Rotates `rows` rows of `heads` heads of D dims (row r, head h at x + r*stride + h*D); row r of
 * each batch item of `per_batch` rows is at position offset + r % per_batch, or positions[r]. */
static void rope_rotate(const vka_layer_config *c, const float *inv_freq, double *x, size_t rows, size_t per_batch,
                        size_t stride, size_t heads, uint32_t offset, const uint32_t *positions)
{
    const size_t half = c->rope_dim / 2;
    for (size_t r = 0; r < rows; r++) {
        uint32_t pos = positions ? positions[r] : offset + (uint32_t)(r % per_batch);
        for (size_t h = 0; h < heads; h++) {
            double *head = x + r * stride + h * c->D;
            for (size_t i = 0; i < half; i++) {
                float angle = (float)pos * inv_freq[i];
                size_t i1 = c->rope_style == VKATTN_ROPE_GPTJ ? 2 * i : i;
                size_t i2 = c->rope_style == VKATTN_ROPE_GPTJ ? 2 * i + 1 : i + half;
                double x1 = head[i1], x2 = head[i2];
                double cs = c->rope_attention * cos((double)angle), sn = c->rope_attention * sin((double)angle);
                head[i1] = x1 * cs - x2 * sn;
                head[i2] = x2 * cs + x1 * sn;
            }
        }
    }
}

/* RMS-normalizes `rows` rows of `width` values (row r at x + r*width) in groups of `n` values
 * with weights w (n of them), 1 + w with plus_one. */
static void rms_norm(double *x, size_t rows, size_t width, size_t n, const float *w, int plus_one, double eps)
{
    for (size_t r = 0; r < rows; r++) {
        for (size_t g = 0; g < width; g += n) {
            double *v = x + r * width + g, sum = 0.0;
            for (size_t i = 0; i < n; i++) sum += v[i] * v[i];
            double inv = 1.0 / sqrt(sum / (double)n + eps);
            for (size_t i = 0; i < n; i++) v[i] *= inv * (plus_one ? 1.0 + (double)w[i] : (double)w[i]);
        }
    }
}

/* What a KV cache of `dtype` holds of the S real rows of each batch item of x (B, S', Ek): each
 * value rounded to float, then stored and loaded in the cache's dtype (32 values at a time: a
 * block of a block format, as each head's row starts a block when D % 32 == 0). */
static void round_as_cache(vkattn_dtype dtype, double *x, size_t B, size_t S, size_t Sx, size_t Ek)
{
    if (dtype == VKATTN_DTYPE_F32) return;
    for (size_t b = 0; b < B; b++) {
        for (size_t j = 0; j < S; j++) {
            double *row = x + (b * Sx + j) * Ek;
            for (size_t e = 0; e < Ek; e += VKA_QUANT_BLOCK) {
                float part[VKA_QUANT_BLOCK];
                size_t n = Ek - e < VKA_QUANT_BLOCK ? Ek - e : VKA_QUANT_BLOCK;
                for (size_t i = 0; i < n; i++) part[i] = (float)row[e + i];
                vka_dtype_round_trip(dtype, part, n); /* n is 32 for a block format (args.c checked D) */
                for (size_t i = 0; i < n; i++) row[e + i] = part[i];
            }
        }
    }
}

/* The position of query i (`query`) or key j of batch b: the caller's, or relative ones where the
 * queries and the keys end at the same position. */
static int64_t position(const vka_problem *p, const vka_host_arrays *d, size_t b, size_t i, int query)
{
    if (d->positions) return d->positions[b * p->L + i];
    return (int64_t)i + (query ? (int64_t)p->S - (int64_t)p->L : 0);
}

/* True if query i of batch b, head h may not attend to key j (< S); *add gets a float mask term. */
static int masked(const vka_problem *p, const vka_host_arrays *d, size_t b, size_t h, size_t i, size_t j,
                  double *add)
{
    *add = 0.0;
    const int64_t pos_i = position(p, d, b, i, 1), pos_j = position(p, d, b, j, 0);
    if (p->causal && (p->causal_end || d->positions ? pos_j > pos_i : j > i)) return 1;
    if (p->cfg.window && pos_i - pos_j >= (int64_t)p->cfg.window) return 1;
    const uint8_t *kpm = d->in[VKA_ARG_KEY_PADDING_MASK];
    const int32_t *lens = d->in[VKA_ARG_VALID_LENS];
    const void *mask = d->in[VKA_ARG_ATTN_MASK];
    if (p->key_padding_mask && kpm[b * p->S + j]) return 1;
    if (p->valid_lens) {
        int32_t len = p->valid_lens == VKA_VALID_LENS_PER_QUERY ? lens[b * p->L + i] : lens[b];
        if ((int64_t)j >= (int64_t)len) return 1;
    }
    if (p->attn_mask) {
        size_t idx = i * p->S + j;
        if (p->attn_mask_per_head) idx += (b * p->cfg.H + h) * (size_t)p->L * p->S;
        if (p->attn_mask == VKA_ATTN_MASK_BOOL) return ((const uint8_t *)mask)[idx] != 0;
        *add = ((const float *)mask)[idx];
    }
    return 0;
}

/* Softmax of one row in place; returns the row's log-sum-exp. Masked entries are -inf. A row with
 * no unmasked key becomes all zeros (log-sum-exp -inf, or the sink); a NaN anywhere makes the whole
 * row NaN (IEEE propagation, never hidden). `sink` (-inf = none) joins the denominator only. */
static double softmax_row(double *s, size_t n, double sink)
{
    double m = sink;
    int any_nan = 0;
    for (size_t j = 0; j < n; j++) {
        if (isnan(s[j])) any_nan = 1;
        else if (s[j] > m) m = s[j];
    }
    if (any_nan || m == INFINITY) {
        for (size_t j = 0; j < n; j++) s[j] = NAN;
        return NAN;
    }
    if (m == -INFINITY) {
        for (size_t j = 0; j < n; j++) s[j] = 0.0;
        return -INFINITY;
    }
    double sum = exp(sink - m);
    for (size_t j = 0; j < n; j++) {
        s[j] = exp(s[j] - m);
        sum += s[j];
    }
    for (size_t j = 0; j < n; j++) s[j] /= sum;
    return m + log(sum);
}

vkattn_status vka_reference_run(const vka_problem *p, const vkattn_weights *w, const float *alibi_slopes,
                                const vka_host_arrays *d, const uint8_t *head_mask, vkattn_error *error)
{
    const vka_layer_config *c = &p->cfg;
    const size_t B = p->B, L = p->L, S = p->S, Sx = p->S_ext, E = c->E, Eq = c->E_q, H = c->H, D = c->D;
    const size_t Ek = c->E_kv, G = c->group; /* k and v rows are Ek wide; head h reads K/V head h / G */
    const float *query = d->in[VKA_ARG_QUERY], *key = d->in[VKA_ARG_KEY], *value = d->in[VKA_ARG_VALUE];
    float *output = d->out[VKA_ARG_OUTPUT], *weights = d->out[VKA_ARG_WEIGHTS], *lse_out = d->out[VKA_ARG_LSE];
    in_proj ip = split_in_proj(c, w);

    double *q = malloc(B * L * Eq * sizeof *q);
    double *k = malloc(B * Sx * Ek * sizeof *k); /* (B, S', E_kv): rows S.. are the extra keys */
    double *v = malloc(B * Sx * Ek * sizeof *v);
    double *ctx = calloc(B * L * Eq, sizeof *ctx);
    double *row = malloc(Sx * sizeof *row);
    unsigned char *seen = malloc(Sx); /* which keys the current query row may attend to */
    size_t *keys = malloc(Sx * sizeof *keys); /* the keys it may attend to, in order */
    size_t widest = E > c->kdim ? E : c->kdim;
    double *wide = malloc(2 * (widest > c->vdim ? widest : c->vdim) * sizeof *wide); /* two input rows in double */
    double *out = malloc(2 * E * sizeof *out); /* two output rows */
    double *avg = malloc(L * Sx * sizeof *avg); /* one batch item's head-averaged weights */
    if (!q || !k || !v || !ctx || !row || !seen || !keys || !wide || !out || !avg) {
        free(q), free(k), free(v), free(ctx), free(row), free(seen), free(keys), free(wide), free(out), free(avg);
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "CPU path: out of memory for B=%zu L=%zu S=%zu E=%zu",
                             B, L, S, E);
    }

    linear(query, B * L, E, ip.Wq, ip.bq, Eq, q, wide);
    for (size_t b = 0; b < B; b++) {
        /* Project this batch's keys and values, then append bias_k/bias_v and the zero key. */
        linear(key + b * S * c->kdim, S, c->kdim, ip.Wk, ip.bk, Ek, k + b * Sx * Ek, wide);
        linear(value + b * S * c->vdim, S, c->vdim, ip.Wv, ip.bv, Ek, v + b * Sx * Ek, wide);
        size_t j = S;
        if (c->bias_kv) {
            for (size_t e = 0; e < Ek; e++) k[(b * Sx + j) * Ek + e] = w->bias_k[e];
            for (size_t e = 0; e < Ek; e++) v[(b * Sx + j) * Ek + e] = w->bias_v[e];
            j++;
        }
        if (c->zero_attn) {
            for (size_t e = 0; e < Ek; e++) k[(b * Sx + j) * Ek + e] = 0.0;
            for (size_t e = 0; e < Ek; e++) v[(b * Sx + j) * Ek + e] = 0.0;
        }
    }

    if (c->qk_norm) {
        size_t nq = vka_qk_norm_width(c, 0), nk = vka_qk_norm_width(c, 1);
        rms_norm(q, B * L, Eq, nq, w->q_norm_weight, c->qk_norm_plus_one, c->qk_norm_eps);
        for (size_t b = 0; b < B; b++) /* the S keys: a layer with norms has no extra keys */
            rms_norm(k + b * Sx * Ek, S, Ek, nk, w->k_norm_weight, c->qk_norm_plus_one, c->qk_norm_eps);
    }
    if (c->rope_dim) {
        float *inv_freq = malloc(c->rope_dim / 2 * sizeof *inv_freq);
        if (!inv_freq) {
            free(q), free(k), free(v), free(ctx), free(row), free(seen), free(keys), free(wide), free(out), free(avg);
            return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "CPU path: out of memory for the RoPE table");
        }
        vka_rope_table(&c->rope_scaling, c->rope_theta, c->rope_dim, vka_rope_seq_len(p), inv_freq);
        uint32_t q_first, k_first;
        vka_rope_first_positions(p, &q_first, &k_first);
        rope_rotate(c, inv_freq, q, B * L, L, Eq, H, q_first, d->positions);
        rope_rotate(c, inv_freq, k, B * Sx, Sx, Ek, c->H_kv, k_first, d->positions); /* S' = S: no extra keys with RoPE */
        free(inv_freq);
    }
    round_as_cache(p->kv_round, k, B, S, Sx, Ek);
    round_as_cache(p->kv_round, v, B, S, Sx, Ek);

    const double scale = c->scale;
    for (size_t b = 0; b < B; b++) {
        for (size_t x = 0; x < L * Sx; x++) avg[x] = 0.0;
        for (size_t h = 0; h < H; h++) {
            if (head_mask && !head_mask[h]) continue; /* pruned: its context stays zero */
            for (size_t i = 0; i < L; i++) {
                const double *qi = q + (b * L + i) * Eq + h * D;
                size_t n = 0; /* the keys seen; row[j] holds a seen key's mask term until its score */
                for (size_t j = 0; j < Sx; j++) {
                    double add = 0.0;
                    seen[j] = !(j < S && masked(p, d, b, h, i, j, &add)) && add != -INFINITY;
                    row[j] = seen[j] ? add : -INFINITY;
                    if (seen[j]) keys[n++] = j;
                }
                for (size_t t = 0; t < n; t += 4) { /* four keys' dot products at a time; a short last
                                                       group repeats its first key */
                    const double *kt[4];
                    double dots[4];
                    for (size_t u = 0; u < 4; u++) kt[u] = k + (b * Sx + keys[t + u < n ? t + u : t]) * Ek + h / G * D;
                    dot_four(qi, kt, D, dots);
                    for (size_t u = 0; u < 4 && t + u < n; u++) {
                        size_t j = keys[t + u];
                        double x = dots[u] * scale;
                        if (c->softcap > 0.0f) x = c->softcap * tanh(x / c->softcap);
                        if (c->alibi) x += alibi_slopes[h] * (double)(position(p, d, b, j, 0) - position(p, d, b, i, 1));
                        row[j] = x + row[j];
                    }
                }
                double lse = softmax_row(row, Sx, w->sinks ? (double)w->sinks[h] : -INFINITY);
                if (lse_out) lse_out[(b * H + h) * L + i] = (float)lse;
                double *ci = ctx + (b * L + i) * Eq + h * D;
                for (size_t j = 0; j < Sx; j++) {
                    if (!seen[j]) continue; /* a masked key never contributes, whatever its row holds */
                    const double *vj = v + (b * Sx + j) * Ek + h / G * D;
                    for (size_t e = 0; e < D; e++) ci[e] += row[j] * vj[e];
                }
                if (weights && p->weights == VKATTN_WEIGHTS_PER_HEAD)
                    for (size_t j = 0; j < Sx; j++) weights[((b * H + h) * L + i) * Sx + j] = (float)row[j];
                for (size_t j = 0; j < Sx; j++) avg[i * Sx + j] += row[j];
            }
        }
        if (weights && p->weights == VKATTN_WEIGHTS_AVERAGED)
            for (size_t x = 0; x < L * Sx; x++) weights[b * L * Sx + x] = (float)(avg[x] / H);
    }

    for (size_t r = 0; r < B * L; r += 2) {
        size_t rows = r + 1 < B * L ? 2 : 1;
        project_rows(ctx + r * Eq, ctx + (r + rows - 1) * Eq, Eq, w->out_proj_weight, w->out_proj_bias, E, out,
                     rows == 2 ? out + E : NULL);
        for (size_t o = 0; o < rows * E; o++) output[r * E + o] = (float)out[o];
    }

    free(q), free(k), free(v), free(ctx), free(row), free(seen), free(keys), free(wide), free(out), free(avg);
    return VKATTN_OK;
}

void vka_host_arrays_of(const vka_args *args, vka_host_arrays *out)
{
    out->positions = args->positions;
    for (int i = 0; i < VKA_ARG_COUNT; i++) {
        const vka_arg_value *v = &args->v[i];
        out->in[i] = vka_arg_get((vka_arg)i)->output ? NULL : v->host;
        out->out[i] = vka_arg_get((vka_arg)i)->output ? (float *)v->host : NULL;
    }
}

vkattn_status vkattn_reference_forward(const vkattn_layer_desc *layer, const vkattn_weights *weights,
                                       const vkattn_host_forward_desc *desc, vkattn_error *error)
{
    vka_layer_config cfg;
    vka_args args;
    vka_problem p;
    vkattn_status status = vka_layer_config_resolve(layer, weights, &cfg, error);
    if (status == VKATTN_OK) status = vka_args_from_host(&cfg, desc, &args, error);
    if (status == VKATTN_OK) status = vka_args_check(&cfg, &args, &p, error);
    if (status != VKATTN_OK) return status;
    vka_host_arrays arrays;
    vka_host_arrays_of(&args, &arrays);
    float *slopes = NULL;
    if (cfg.alibi && !(slopes = malloc(cfg.H * sizeof *slopes)))
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "CPU path: out of memory for the ALiBi slopes");
    if (slopes) vka_alibi_slopes(cfg.H, layer->alibi_slopes, slopes);
    status = vka_reference_run(&p, weights, slopes, &arrays, layer->head_mask, error);
    free(slopes);
    return status;
}
