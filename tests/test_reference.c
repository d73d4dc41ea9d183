/* The CPU reference against values computed by hand. Every GPU test trusts this path, so it is
 * checked here on cases small enough to follow on paper (tolerance 1e-6: float outputs of a
 * double computation).
 *
 * Most cases use E = H = 1 (head dim 1, scale 1/sqrt(1) = 1) with W_Q = W_K = W_V = W_O = 1 and no
 * biases, so q = k = v = x and the output is the context itself:
 *   x = (0, 1):  row 0 scores (0, 0) -> p = (1/2, 1/2)         -> ctx = 1/2
 *                row 1 scores (0, 1) -> p = (1, e)/(1 + e)     -> ctx = e/(1 + e)
 */
#include <math.h>

#include "problem/config.h"
#include "test_tree.h"
#include "test_util.h"

#define TOL 1e-6

static const float one = 1.0f, ones3[3] = {1, 1, 1};

static vkattn_layer_desc scalar_layer(void)
{
    vkattn_layer_desc d = {.embed_dim = 1, .num_heads = 1, .no_bias = 1};
    return d;
}

static vkattn_weights scalar_weights(void)
{
    vkattn_weights w = {.in_proj_weight = ones3, .out_proj_weight = &one};
    return w;
}

static const float x01[2] = {0.0f, 1.0f};

static void test_plain_softmax(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    float out[2], weights[4];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out, .attn_weights = weights};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double e = exp(1.0);
    CHECK_NEAR(out[0], 0.5, TOL);
    CHECK_NEAR(out[1], e / (1 + e), TOL);
    CHECK_NEAR(weights[0], 0.5, TOL);
    CHECK_NEAR(weights[1], 0.5, TOL);
    CHECK_NEAR(weights[2], 1 / (1 + e), TOL);
    CHECK_NEAR(weights[3], e / (1 + e), TOL);
}

static void test_causal(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    float out[2], weights[4];
    vkattn_host_forward_desc f = {
        .batch = 1, .query_len = 2, .query = x01, .output = out, .attn_weights = weights, .causal = 1};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double e = exp(1.0);
    CHECK_NEAR(out[0], 0.0, TOL); /* row 0 sees key 0 only, whose value is 0 */
    CHECK_NEAR(out[1], e / (1 + e), TOL);
    CHECK(weights[1] == 0.0f);
    CHECK_NEAR(weights[0], 1.0, TOL);
}

static void test_fully_masked_row(void)
{
    /* With out_proj.bias = 0.25, a row that attends to nothing outputs exactly the bias. */
    vkattn_layer_desc d = scalar_layer();
    d.no_bias = 0;
    float in_bias[3] = {0, 0, 0}, out_bias = 0.25f;
    vkattn_weights w = scalar_weights();
    w.in_proj_bias = in_bias, w.out_proj_bias = &out_bias;
    uint8_t kpm[2] = {1, 1};
    float out[2], weights[4];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out,
                                  .attn_weights = weights, .key_padding_mask = kpm};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK(out[0] == 0.25f && out[1] == 0.25f);
    for (int i = 0; i < 4; i++) CHECK(weights[i] == 0.0f);
}

static void test_valid_lens(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    int32_t lens[1] = {1};
    float out[2];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out, .valid_lens = lens};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], 0.0, TOL);
    CHECK_NEAR(out[1], 0.0, TOL);
    int32_t per_query[2] = {2, 0}; /* row 0 sees both keys, row 1 none */
    f.valid_lens = per_query, f.valid_lens_per_query = 1;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], 0.5, TOL);
    CHECK(out[1] == 0.0f);
}

static void test_float_and_bool_masks(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    /* Row 0: scores (0, 0) + (0, ln 3) -> p = (1/4, 3/4) -> ctx = 3/4. Row 1: key 1 blocked. */
    float mask[4] = {0.0f, logf(3.0f), 0.0f, -INFINITY};
    float out[2];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out, .attn_mask = mask};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], 0.75, TOL);
    CHECK_NEAR(out[1], 0.0, TOL);
    uint8_t bmask[4] = {1, 0, 0, 0}; /* row 0 may not see key 0 */
    f.attn_mask = bmask, f.attn_mask_dtype = VKATTN_DTYPE_BOOL;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], 1.0, TOL);
}

static void test_extra_keys(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    float out[2], weights[6];
    /* add_zero_attn: row 0 scores (0, 0, 0) -> ctx = (0 + 1 + 0)/3. */
    d.add_zero_attn = 1;
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out, .attn_weights = weights};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], 1.0 / 3.0, TOL);
    CHECK_NEAR(weights[2], 1.0 / 3.0, TOL);
    /* add_bias_kv with bias_k = 2, bias_v = -1: row 1 scores (0, 1, 2), values (0, 1, -1). */
    d.add_zero_attn = 0, d.add_bias_kv = 1;
    float bias_k = 2.0f, bias_v = -1.0f;
    w.bias_k = &bias_k, w.bias_v = &bias_v;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double e = exp(1.0), e2 = exp(2.0);
    CHECK_NEAR(out[1], (e - e2) / (1 + e + e2), TOL);
    /* The appended key is never masked: with every real key padded, row 1 sees bias_k only. */
    uint8_t kpm[2] = {1, 1};
    f.key_padding_mask = kpm;
    f.causal = 1;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], -1.0, TOL);
    CHECK_NEAR(out[1], -1.0, TOL);
}

static void test_two_heads_and_average(void)
{
    /* E = 2, H = 2: head 0 sees feature 0, head 1 feature 1. Identity projections; W_O swaps the
     * two features, so output = (ctx_1, ctx_0). */
    vkattn_layer_desc d = {.embed_dim = 2, .num_heads = 2, .no_bias = 1};
    float in_proj[12] = {1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1};
    float out_proj[4] = {0, 1, 1, 0};
    vkattn_weights w = {.in_proj_weight = in_proj, .out_proj_weight = out_proj};
    float x[4] = {0, 0, 1, 0}; /* head 0: x = (0, 1) as above; head 1: all zero -> uniform, ctx 0 */
    float out[4], avg[4];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x, .output = out, .attn_weights = avg,
                                  .average_weights = 1};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double e = exp(1.0);
    CHECK_NEAR(out[0], 0.0, TOL);
    CHECK_NEAR(out[1], 0.5, TOL);
    CHECK_NEAR(out[3], e / (1 + e), TOL);
    CHECK_NEAR(avg[2], (1 / (1 + e) + 0.5) / 2, TOL);
    CHECK_NEAR(avg[3], (e / (1 + e) + 0.5) / 2, TOL);
}

static void test_scale_and_cross(void)
{
    /* E = 4, H = 1 (D = 4, scale 1/2), one query against two keys of kdim 1, vdim 1:
     * W_Q = 1 (identity, 4x4), W_K maps k to (k,k,k,k), W_V maps v to (v,0,0,0).
     * q = (1,1,1,1), keys 0 and 1: scores (0, 4/2 = 2) -> p = (1, e^2)/(1 + e^2). */
    vkattn_layer_desc d = {.embed_dim = 4, .num_heads = 1, .kdim = 1, .vdim = 1, .no_bias = 1};
    float wq[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    float wk[4] = {1, 1, 1, 1}, wv[4] = {1, 0, 0, 0};
    float wo[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    vkattn_weights w = {.q_proj_weight = wq, .k_proj_weight = wk, .v_proj_weight = wv, .out_proj_weight = wo};
    float q[4] = {1, 1, 1, 1}, k[2] = {0, 1}, v[2] = {3, 5}, out[4];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 1, .key_len = 2, .query = q, .key = k, .value = v,
                                  .output = out};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double e2 = exp(2.0);
    CHECK_NEAR(out[0], (3 + 5 * e2) / (1 + e2), TOL);
    CHECK_NEAR(out[1], 0.0, TOL);
}

static void test_nan_propagates(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    float x[2] = {NAN, 1.0f}, out[2];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x, .output = out};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK(isnan(out[0]) && isnan(out[1])); /* the NaN key reaches every row */
}

static void test_errors(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    float out[2];
    vkattn_error err = {0};
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out};

    vkattn_layer_desc bad = {.embed_dim = 10, .num_heads = 3};
    CHECK_STATUS(vkattn_reference_forward(&bad, &w, &f, &err), VKATTN_ERROR_HEADS);
    CHECK(strstr(err.message, "not divisible") != NULL);
    CHECK_STATUS(vkattn_reference_forward(NULL, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_reference_forward(&d, NULL, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_reference_forward(&d, &w, NULL, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_host_forward_desc g = f;
    g.batch = 0;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &g, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    float nan_mask[4] = {0, NAN, 0, 0};
    g = f, g.attn_mask = nan_mask;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &g, &err), VKATTN_ERROR_NON_FINITE);
    CHECK(strstr(err.message, "element 1") != NULL);
    float inf_mask[4] = {0, 0, INFINITY, 0};
    g.attn_mask = inf_mask;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &g, &err), VKATTN_ERROR_NON_FINITE);
    g.attn_mask_dtype = VKATTN_DTYPE_I32;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &g, &err), VKATTN_ERROR_DTYPE);
    vkattn_layer_desc with_bias = d;
    with_bias.no_bias = 0;
    CHECK_STATUS(vkattn_reference_forward(&with_bias, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "in_proj_bias") != NULL);
    vkattn_weights both = w;
    both.q_proj_weight = ones3;
    CHECK_STATUS(vkattn_reference_forward(&d, &both, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_layer_desc huge = {.embed_dim = 70000, .num_heads = 1, .no_bias = 1};
    CHECK_STATUS(vkattn_reference_forward(&huge, &w, &f, &err), VKATTN_ERROR_SIZE_OVERFLOW);
}

/* Grouped-query attention against plain multi-head attention: a layer with H_kv K/V heads must
 * equal the MHA layer whose W_K, W_V, their biases and bias_k/bias_v are the GQA ones repeated
 * per query head (PyTorch's repeat_interleave: head h gets K/V head h / (H / H_kv)). The MHA side
 * runs the reference's H_kv = H code, so this checks the grouping against a known answer, not
 * against itself; the same doubles are summed in the same order, so the match is exact. */
static void check_gqa_vs_repeated(uint32_t H_kv, uint32_t kdim, uint32_t vdim, int self)
{
    enum { B = 2, L = 5, S = 7, E = 12, H = 6, D = E / H };
    const uint32_t G = H / H_kv, Ek = H_kv * D, kd = kdim ? kdim : E, vd = vdim ? vdim : E, Skeys = self ? L : S;
    test_rng rng = test_rng_make(77 + H_kv + kdim);
    float wq[E * E], wo[E * E], bo[E], wk[E * 16], wv[E * 16], b_in[3 * E], bk[E], bv[E];
    float wk_rep[E * 16], wv_rep[E * 16], b_rep[3 * E], bk_rep[E], bv_rep[E];
    test_fill(&rng, wq, E * E, 0.5f), test_fill(&rng, wo, E * E, 0.5f), test_fill(&rng, bo, E, 0.1f);
    test_fill(&rng, wk, Ek * kd, 0.5f), test_fill(&rng, wv, Ek * vd, 0.5f);
    test_fill(&rng, b_in, E + 2 * Ek, 0.1f), test_fill(&rng, bk, Ek, 0.5f), test_fill(&rng, bv, Ek, 0.5f);
    memcpy(b_rep, b_in, E * sizeof(float));
    for (uint32_t h = 0; h < H; h++) {
        uint32_t k = h / G;
        memcpy(wk_rep + h * D * kd, wk + k * D * kd, D * kd * sizeof(float));
        memcpy(wv_rep + h * D * vd, wv + k * D * vd, D * vd * sizeof(float));
        memcpy(b_rep + E + h * D, b_in + E + k * D, D * sizeof(float));
        memcpy(b_rep + 2 * E + h * D, b_in + E + Ek + k * D, D * sizeof(float));
        memcpy(bk_rep + h * D, bk + k * D, D * sizeof(float));
        memcpy(bv_rep + h * D, bv + k * D, D * sizeof(float));
    }
    float query[B * L * E], key[B * S * 16], value[B * S * 16];
    test_fill(&rng, query, B * L * E, 1.0f), test_fill(&rng, key, B * S * kd, 1.0f), test_fill(&rng, value, B * S * vd, 1.0f);
    uint8_t kpm[B * S];
    for (uint32_t i = 0; i < B * Skeys; i++) kpm[i] = i % 3 == 1;

    vkattn_layer_desc gqa = {.embed_dim = E, .num_heads = H, .num_kv_heads = H_kv, .kdim = kdim, .vdim = vdim,
                             .add_bias_kv = 1, .add_zero_attn = 1};
    vkattn_layer_desc mha = gqa;
    mha.num_kv_heads = 0;
    vkattn_weights wg = {.q_proj_weight = wq, .k_proj_weight = wk, .v_proj_weight = wv, .in_proj_bias = b_in,
                         .out_proj_weight = wo, .out_proj_bias = bo, .bias_k = bk, .bias_v = bv};
    vkattn_weights wm = {.q_proj_weight = wq, .k_proj_weight = wk_rep, .v_proj_weight = wv_rep, .in_proj_bias = b_rep,
                         .out_proj_weight = wo, .out_proj_bias = bo, .bias_k = bk_rep, .bias_v = bv_rep};
    enum { SX = S + 2 };
    float out_g[B * L * E], out_m[B * L * E], w_g[B * H * L * SX], w_m[B * H * L * SX];
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .key_len = self ? 0 : S, .query = query,
                                  .key = self ? NULL : key, .value = self ? NULL : value, .causal = self,
                                  .key_padding_mask = kpm};
    vkattn_host_forward_desc fg = f, fm = f;
    fg.output = out_g, fg.attn_weights = w_g, fm.output = out_m, fm.attn_weights = w_m;
    vkattn_error err = {0};
    CHECK_STATUS(vkattn_reference_forward(&gqa, &wg, &fg, &err), VKATTN_OK);
    CHECK_STATUS(vkattn_reference_forward(&mha, &wm, &fm, &err), VKATTN_OK);
    const size_t n_w = (size_t)B * H * L * (Skeys + 2);
    CHECK_MSG(memcmp(out_g, out_m, sizeof out_g) == 0, "H_kv %u kdim %u: GQA output differs from repeated MHA", H_kv,
              kdim);
    CHECK_MSG(memcmp(w_g, w_m, n_w * sizeof(float)) == 0, "H_kv %u kdim %u: GQA weights differ from repeated MHA",
              H_kv, kdim);
    /* The grouping matters: K/V head h % H_kv (a wrong mapping) gives another answer. */
    if (H_kv > 1 && H_kv < H) {
        for (uint32_t h = 0; h < H; h++) {
            uint32_t k = h % H_kv;
            memcpy(wk_rep + h * D * kd, wk + k * D * kd, D * kd * sizeof(float));
        }
        CHECK_STATUS(vkattn_reference_forward(&mha, &wm, &fm, &err), VKATTN_OK);
        CHECK(memcmp(out_g, out_m, sizeof out_g) != 0);
    }
}

static void test_gqa_equals_repeated_mha(void)
{
    check_gqa_vs_repeated(1, 0, 0, 1);  /* multi-query, self-attention, causal */
    check_gqa_vs_repeated(2, 0, 0, 0);  /* packed weights (kdim = vdim = E) given as q/k/v_proj_weight */
    check_gqa_vs_repeated(3, 16, 5, 0); /* cross-attention, kdim and vdim differ */
    check_gqa_vs_repeated(6, 16, 5, 0); /* H_kv = H */
}

/* num_kv_heads = H is plain multi-head attention: the very same result as num_kv_heads = 0, with
 * in_proj_weight (which grouped layers refuse). */
static void test_gqa_kv_heads_equal_heads(void)
{
    enum { B = 2, L = 4, E = 8, H = 4 };
    test_rng rng = test_rng_make(5);
    float w_in[3 * E * E], b_in[3 * E], wo[E * E], bo[E], query[B * L * E], out0[B * L * E], out1[B * L * E];
    test_fill(&rng, w_in, 3 * E * E, 0.5f), test_fill(&rng, b_in, 3 * E, 0.1f);
    test_fill(&rng, wo, E * E, 0.5f), test_fill(&rng, bo, E, 0.1f), test_fill(&rng, query, B * L * E, 1.0f);
    vkattn_weights w = {.in_proj_weight = w_in, .in_proj_bias = b_in, .out_proj_weight = wo, .out_proj_bias = bo};
    vkattn_layer_desc d0 = {.embed_dim = E, .num_heads = H}, d1 = {.embed_dim = E, .num_heads = H, .num_kv_heads = H};
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .query = query, .causal = 1, .output = out0};
    CHECK_STATUS(vkattn_reference_forward(&d0, &w, &f, NULL), VKATTN_OK);
    f.output = out1;
    CHECK_STATUS(vkattn_reference_forward(&d1, &w, &f, NULL), VKATTN_OK);
    CHECK(memcmp(out0, out1, sizeof out0) == 0);
    /* Grouped layers: H % H_kv must be 0, and in_proj_weight cannot hold them. */
    vkattn_error err = {0};
    vkattn_layer_desc bad = {.embed_dim = E, .num_heads = H, .num_kv_heads = 3};
    CHECK_STATUS(vkattn_reference_forward(&bad, &w, &f, &err), VKATTN_ERROR_HEADS);
    CHECK(strstr(err.message, "num_kv_heads") != NULL);
    vkattn_layer_desc grouped = {.embed_dim = E, .num_heads = H, .num_kv_heads = 2};
    CHECK_STATUS(vkattn_reference_forward(&grouped, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "k_proj_weight") != NULL);
    /* The cost model: K and V are projected, and read, for the H_kv heads only. */
    vkattn_cost c0, c1;
    CHECK_STATUS(vkattn_forward_cost(&d0, 3, 10, 20, VKATTN_PATH_FUSED, VKATTN_WEIGHTS_NONE, &c0), VKATTN_OK);
    CHECK_STATUS(vkattn_forward_cost(&grouped, 3, 10, 20, VKATTN_PATH_FUSED, VKATTN_WEIGHTS_NONE, &c1), VKATTN_OK);
    CHECK(c0.flops[VKATTN_STAGE_QKV_PROJECTION] == 2.0 * 3 * (10 * E * E + 2 * 20 * E * E));
    CHECK(c1.flops[VKATTN_STAGE_QKV_PROJECTION] == 2.0 * 3 * (10 * E * E + 2 * 20 * E * (E / 2)));
    CHECK(c1.flops[VKATTN_STAGE_FUSED] == c0.flops[VKATTN_STAGE_FUSED]);
    CHECK(c1.bytes[VKATTN_STAGE_FUSED] < c0.bytes[VKATTN_STAGE_FUSED]);
}

/* RoPE by hand. E = D = 4, one head, W_Q = W_K = W_V = W_O = I, no biases, theta 100 (inv_freq
 * 1 and 0.1 for rope_dim 4). Queries x = (e0, e0) at positions 0 and 1, keys (e0, k1) at 0 and 1,
 * so score(i, j) = (R(i) e0) . (R(j) k_j) / 2 = e0 . R(j - i) k_j / 2. R(d) rotates pair
 * (x1, x2) by d * inv_freq: e0 is x1 of the first pair; k1 is that pair's x2 (e2 for NeoX pairs
 * (0, 2), e1 for GPT-J pairs (0, 1)), and e0 . R(d) x2 = -sin(d). Scores: row 0 (1/2, -sin(1)/2),
 * row 1 (cos(1)/2, 0). */
static void check_rope_by_hand(vkattn_rope_style style, uint32_t second_key)
{
    static float in_proj[12 * 4], eye[16];
    for (int i = 0; i < 16; i++) eye[i] = i % 5 == 0;
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < 16; i++) in_proj[b * 16 + i] = eye[i];
    vkattn_layer_desc d = {.embed_dim = 4, .num_heads = 1, .no_bias = 1, .rope_theta = 100, .rope_style = style};
    vkattn_weights w = {.in_proj_weight = in_proj, .out_proj_weight = eye};
    float q[8] = {1, 0, 0, 0, 1, 0, 0, 0}, k[8] = {1, 0, 0, 0, 0, 0, 0, 0}, out[8], weights[4];
    k[4 + second_key] = 1;
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .key_len = 2, .query = q, .key = k,
                                  .output = out, .attn_weights = weights};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double s[2][2] = {{0.5, -sin(1.0) / 2}, {cos(1.0) / 2, 0.0}};
    for (int i = 0; i < 2; i++) {
        double z = exp(s[i][0]) + exp(s[i][1]);
        CHECK_NEAR(weights[i * 2 + 0], exp(s[i][0]) / z, TOL);
        CHECK_NEAR(weights[i * 2 + 1], exp(s[i][1]) / z, TOL);
    }
    /* The same chunk at positions 1000 and 1001: only differences of positions count. */
    f.rope_offset = 1000;
    float shifted[4];
    f.attn_weights = shifted;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    for (int i = 0; i < 4; i++) CHECK_NEAR(shifted[i], weights[i], 1e-5);
}

static void test_rope_by_hand(void)
{
    check_rope_by_hand(VKATTN_ROPE_NEOX, 2);
    check_rope_by_hand(VKATTN_ROPE_GPTJ, 1);
}

/* rope_dim 2 of D = 4 (NeoX): dims 2 and 3 pass unchanged, so queries and keys along e2 give
 * scores 1/2 everywhere (uniform weights), and e0 against e1 keys is rotated within pair (0, 1):
 * e0 . R(d) e1 = -sin(d). */
static void test_rope_partial_by_hand(void)
{
    static float in_proj[12 * 4], eye[16];
    for (int i = 0; i < 16; i++) eye[i] = i % 5 == 0;
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < 16; i++) in_proj[b * 16 + i] = eye[i];
    vkattn_layer_desc d = {.embed_dim = 4, .num_heads = 1, .no_bias = 1, .rope_theta = 100, .rope_dim = 2};
    vkattn_weights w = {.in_proj_weight = in_proj, .out_proj_weight = eye};
    float q[8] = {0, 0, 1, 0, 0, 0, 1, 0}, k[8] = {0, 0, 1, 0, 0, 0, 1, 0}, out[8], weights[4];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .key_len = 2, .query = q, .key = k,
                                  .output = out, .attn_weights = weights};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    for (int i = 0; i < 4; i++) CHECK_NEAR(weights[i], 0.5, TOL);
    float q2[8] = {1, 0, 0, 0, 1, 0, 0, 0}, k2[8] = {1, 0, 0, 0, 0, 1, 0, 0};
    f.query = q2, f.key = k2;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double s1 = -sin(1.0) / 2, s2 = cos(1.0) / 2; /* (0,1): d = 1; (1,0): d = -1 */
    CHECK_NEAR(weights[0], exp(0.5) / (exp(0.5) + exp(s1)), TOL);
    CHECK_NEAR(weights[2], exp(s2) / (exp(s2) + 1.0), TOL);
}

/* rope_theta 0 is no RoPE, bit for bit, whatever rope_dim and rope_style say. */
static void test_rope_theta_zero_is_off(void)
{
    enum { B = 2, L = 6, E = 16, H = 2 };
    test_rng rng = test_rng_make(91);
    float in_proj[3 * E * E], b_in[3 * E], wo[E * E], bo[E], x[B * L * E], a[B * L * E], b[B * L * E];
    test_fill(&rng, in_proj, 3 * E * E, 0.5f), test_fill(&rng, b_in, 3 * E, 0.1f);
    test_fill(&rng, wo, E * E, 0.5f), test_fill(&rng, bo, E, 0.1f), test_fill(&rng, x, B * L * E, 1.0f);
    vkattn_weights w = {.in_proj_weight = in_proj, .in_proj_bias = b_in, .out_proj_weight = wo, .out_proj_bias = bo};
    vkattn_layer_desc plain = {.embed_dim = E, .num_heads = H};
    vkattn_layer_desc off = {.embed_dim = E, .num_heads = H, .rope_dim = 4, .rope_style = VKATTN_ROPE_GPTJ};
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .query = x, .output = a, .causal = 1};
    CHECK_STATUS(vkattn_reference_forward(&plain, &w, &f, NULL), VKATTN_OK);
    f.output = b, f.rope_offset = 77;
    CHECK_STATUS(vkattn_reference_forward(&off, &w, &f, NULL), VKATTN_OK);
    CHECK(memcmp(a, b, sizeof a) == 0);
    /* and RoPE on changes the output, so the comparison above could fail */
    off.rope_theta = 10000;
    CHECK_STATUS(vkattn_reference_forward(&off, &w, &f, NULL), VKATTN_OK);
    CHECK(memcmp(a, b, sizeof a) != 0);
}

/* The RoPE relative-position property: with the same vector at every position, the score of
 * query i and key j depends on i - j only (and not on rope_offset). Scores are recovered as
 * log(weight) + lse of the row (two runs: weights and lse cannot be asked for together). */
static void check_rope_relative(vkattn_rope_style style, uint32_t rope_dim, uint32_t offset)
{
    enum { L = 9, E = 16, H = 2, D = E / H };
    test_rng rng = test_rng_make(92 + style);
    float in_proj[3 * E * E], wo[E * E], row[E], x[L * E], out[L * E], weights[H * L * L], lse[H * L];
    test_fill(&rng, in_proj, 3 * E * E, 0.5f), test_fill(&rng, wo, E * E, 0.5f), test_fill(&rng, row, E, 1.0f);
    for (int i = 0; i < L; i++) memcpy(x + i * E, row, sizeof row);
    vkattn_weights w = {.in_proj_weight = in_proj, .out_proj_weight = wo};
    vkattn_layer_desc d = {.embed_dim = E, .num_heads = H, .no_bias = 1, .rope_theta = 10000, .rope_dim = rope_dim,
                           .rope_style = style};
    vkattn_host_forward_desc f = {.batch = 1, .query_len = L, .query = x, .output = out, .attn_weights = weights,
                                  .rope_offset = offset};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    f.attn_weights = NULL, f.lse = lse;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double spread = 0, varies = 0;
    for (int h = 0; h < H; h++) {
        for (int delta = -(L - 1); delta < L; delta++) {
            double first = NAN;
            for (int i = 0; i < L; i++) {
                int j = i - delta;
                if (j < 0 || j >= L) continue;
                double s = log(weights[(h * L + i) * L + j]) + lse[h * L + i];
                if (isnan(first)) first = s;
                spread = fmax(spread, fabs(s - first));
            }
        }
        varies = fmax(varies, fabs(log(weights[h * L * L + 0]) - log(weights[h * L * L + 1])));
    }
    CHECK_MSG(spread <= 1e-5, "RoPE scores vary along a diagonal by %.3g", spread);
    CHECK_MSG(varies > 1e-3, "RoPE scores do not depend on i - j at all (%.3g): the test tests nothing", varies);
}

static void test_rope_relative_positions(void)
{
    check_rope_relative(VKATTN_ROPE_NEOX, 0, 0);
    check_rope_relative(VKATTN_ROPE_GPTJ, 4, 0);
    /* Past a few thousand the fp32 angle float(pos) * inv_freq is itself rounded by up to
     * ulp(pos)/2 (Hugging Face computes it the same way), and the property holds less tightly:
     * 1.4e-5 at offset 10000, 2.2e-4 at 100000. */
    check_rope_relative(VKATTN_ROPE_NEOX, 0, 1000);
}

/* Decoding without a cache: the last token as the query with every token so far as key/value,
 * and the last 3 tokens with a mask that hides later keys (a chunk), give the last rows of one
 * causal forward over all tokens: queries and keys end at the same RoPE position. GQA, NeoX and
 * GPT-J. Without that alignment (the query at position 0) the rows differ by about 0.1. */
static void check_rope_decode(vkattn_rope_style style)
{
    enum { T = 8, E = 16, H = 4, KV = 2, D = E / H, C = 3 };
    test_rng rng = test_rng_make(44 + style);
    float wq[E * E], wk[KV * D * E], wv[KV * D * E], wo[E * E], x[T * E], full[T * E], last[E], chunk[C * E];
    test_fill(&rng, wq, E * E, 0.5f), test_fill(&rng, wk, KV * D * E, 0.5f), test_fill(&rng, wv, KV * D * E, 0.5f);
    test_fill(&rng, wo, E * E, 0.5f), test_fill(&rng, x, T * E, 1.0f);
    vkattn_weights w = {.q_proj_weight = wq, .k_proj_weight = wk, .v_proj_weight = wv, .out_proj_weight = wo};
    vkattn_layer_desc d = {.embed_dim = E, .num_heads = H, .num_kv_heads = KV, .no_bias = 1, .rope_theta = 10000,
                           .rope_style = style};
    vkattn_host_forward_desc f = {.batch = 1, .query_len = T, .query = x, .output = full, .causal = 1};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    vkattn_host_forward_desc step = {.batch = 1, .query_len = 1, .key_len = T, .query = x + (T - 1) * E,
                                     .key = x, .value = x, .output = last};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &step, NULL), VKATTN_OK);
    uint8_t later[C * T]; /* chunk row i (token T - C + i) may not see keys after it */
    for (int i = 0; i < C; i++)
        for (int j = 0; j < T; j++) later[i * T + j] = j > T - C + i;
    vkattn_host_forward_desc part = {.batch = 1, .query_len = C, .key_len = T, .query = x + (T - C) * E, .key = x,
                                     .value = x, .output = chunk, .attn_mask = later,
                                     .attn_mask_dtype = VKATTN_DTYPE_BOOL};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &part, NULL), VKATTN_OK);
    double last_err = 0, chunk_err = 0;
    for (int e = 0; e < E; e++) last_err = fmax(last_err, fabs(last[e] - full[(T - 1) * E + e]));
    for (int e = 0; e < C * E; e++) chunk_err = fmax(chunk_err, fabs(chunk[e] - full[(T - C) * E + e]));
    CHECK_MSG(last_err <= 1e-6 && chunk_err <= 1e-6, "decode step %.3g, chunk %.3g from the causal forward's rows",
              last_err, chunk_err);
}

static void test_rope_decode_positions(void)
{
    check_rope_decode(VKATTN_ROPE_NEOX);
    check_rope_decode(VKATTN_ROPE_GPTJ);
}

static void test_rope_errors(void)
{
    float q[8] = {0}, out[8];
    static float in_proj[12 * 4], eye[16];
    vkattn_weights w = {.in_proj_weight = in_proj, .out_proj_weight = eye};
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = q, .output = out};
    vkattn_error err = {0};
    vkattn_layer_desc d = {.embed_dim = 4, .num_heads = 1, .no_bias = 1, .rope_theta = 10000, .rope_dim = 3};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "rope_dim 3") != NULL);
    d.rope_dim = 6;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    d.rope_dim = 0, d.rope_theta = -1;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    d.rope_theta = INFINITY;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    d.rope_theta = 10000, d.rope_style = (vkattn_rope_style)2;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    d.rope_style = VKATTN_ROPE_NEOX, d.add_zero_attn = 1;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_UNSUPPORTED);
    CHECK(strstr(err.message, "add_zero_attn") != NULL);
    f.rope_offset = UINT32_MAX; /* position UINT32_MAX + 1 for the second token */
    d.add_zero_attn = 0;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "rope_offset") != NULL);
    f.rope_offset = UINT32_MAX - 1;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_OK);
}

/* The variants by hand, on the scalar layer (q = k = v = x, scores x_i x_j). */
static const float x012[3] = {0.0f, 1.0f, 2.0f};

static void test_window_by_hand(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    float out[3], weights[9];
    d.window = 2;
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 3, .query = x012, .output = out, .attn_weights = weights,
                                  .causal = 1};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double e = exp(1.0), e2 = exp(2.0), e4 = exp(4.0);
    CHECK_NEAR(out[0], 0.0, TOL);
    CHECK_NEAR(out[1], e / (1 + e), TOL);                   /* keys 0, 1: scores (0, 1) */
    CHECK_NEAR(out[2], (e2 + 2 * e4) / (e2 + e4), TOL);     /* keys 1, 2 (key 0 is 2 before): (2, 4) */
    CHECK(weights[6] == 0.0f);
    /* Without causal the keys after the query stay visible: row 0 sees all three (scores 0). */
    f.causal = 0;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], 1.0, TOL);
    CHECK_NEAR(out[2], (e2 + 2 * e4) / (e2 + e4), TOL);
    /* One query with the three tokens as keys: it sits at position 2 and sees keys 1 and 2. */
    const float one_q = 2.0f;
    f = (vkattn_host_forward_desc){.batch = 1, .query_len = 1, .key_len = 3, .query = &one_q, .key = x012,
                                   .output = out};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], (e2 + 2 * e4) / (e2 + e4), TOL);
    d.window = 1; /* the query's own key only */
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], 2.0, TOL);
}

static void test_softcap_by_hand(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    float out[2];
    d.softcap = 0.5f;
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double t = exp(0.5 * tanh(2.0)); /* row 1: scores (0, 1) -> (0, 0.5 tanh(1 / 0.5)) */
    CHECK_NEAR(out[0], 0.5, TOL);
    CHECK_NEAR(out[1], t / (1 + t), TOL);
}

static void test_sinks_by_hand(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    const float sink = logf(2.0f);
    w.sinks = &sink;
    float out[2], weights[4], lse[2];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out, .attn_weights = weights,
                                  .causal = 1};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double e = exp(1.0);
    CHECK_NEAR(weights[0], 1.0 / 3.0, TOL); /* row 0: key 0 (score 0) against the sink: 1 / (2 + 1) */
    CHECK_NEAR(weights[2], 1.0 / (3 + e), TOL);
    CHECK_NEAR(weights[3], e / (3 + e), TOL);
    CHECK_NEAR(out[1], e / (3 + e), TOL);
    f.attn_weights = NULL, f.lse = lse;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(lse[0], log(3.0), TOL);
    CHECK_NEAR(lse[1], log(3.0 + e), TOL);
    /* every key masked: a zero context, and the lse is the sink's */
    uint8_t kpm[2] = {1, 1};
    f.key_padding_mask = kpm;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK(out[0] == 0.0f && out[1] == 0.0f);
    CHECK_NEAR(lse[0], log(2.0), TOL);
}

static void test_alibi_by_hand(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    float out[2];
    d.alibi = 1; /* H = 1: m = 2^-8 */
    const double m = 1.0 / 256;
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double e = exp(1.0);
    CHECK_NEAR(out[0], exp(m) / (1 + exp(m)), TOL); /* row 0: (0, 0 + m (1 - 0)) */
    CHECK_NEAR(out[1], e / (exp(-m) + e), TOL);      /* row 1: (0 + m (0 - 1), 1) */
    const float slope = 0.5f;
    d.alibi_slopes = &slope;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[1], e / (exp(-0.5) + e), TOL);
    /* One query (x = 1) over keys (0, 1): at position 1, as the last row above. */
    f = (vkattn_host_forward_desc){.batch = 1, .query_len = 1, .key_len = 2, .query = &x01[1], .key = x01,
                                   .output = out};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[0], e / (exp(-0.5) + e), TOL);
}

/* The standard slopes: BLOOM's and Hugging Face's build_alibi_tensor. */
static void test_alibi_slopes(void)
{
    float s[12];
    vka_alibi_slopes(8, NULL, s);
    for (int h = 0; h < 8; h++) CHECK_NEAR(s[h], pow(2.0, -(h + 1)), 1e-9);
    vka_alibi_slopes(6, NULL, s); /* 4 heads' 2^-2, 2^-4, 2^-6, 2^-8, then 8 heads' odd ones 2^-1, 2^-3 */
    const double six[6] = {0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125};
    for (int h = 0; h < 6; h++) CHECK_NEAR(s[h], six[h], 1e-9);
    vka_alibi_slopes(12, NULL, s); /* 8 heads' 2^-1 .. 2^-8, then 16 heads' 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5 */
    for (int h = 0; h < 8; h++) CHECK_NEAR(s[h], pow(2.0, -(h + 1)), 1e-9);
    for (int k = 0; k < 4; k++) CHECK_NEAR(s[8 + k], pow(2.0, -(2 * k + 1) / 2.0), 1e-7);
    vka_alibi_slopes(1, NULL, s);
    CHECK_NEAR(s[0], 1.0 / 256, 1e-12);
}

static void test_variant_errors(void)
{
    float q[8] = {0}, out[8];
    static float in_proj[12 * 4], eye[16], bias_kv[4];
    vkattn_weights w = {.in_proj_weight = in_proj, .out_proj_weight = eye};
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = q, .output = out};
    vkattn_error err = {0};
    vkattn_layer_desc d = {.embed_dim = 4, .num_heads = 2, .no_bias = 1, .softcap = -1};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "softcap") != NULL);
    d.softcap = NAN;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    d.softcap = 0, d.alibi = 1, d.rope_theta = 10000;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "alibi") != NULL && strstr(err.message, "rope_theta") != NULL);
    const float slopes[2] = {0.5f, NAN};
    d.rope_theta = 0, d.alibi_slopes = slopes;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_NON_FINITE);
    CHECK(strstr(err.message, "alibi_slopes[1]") != NULL);
    d.alibi = 0;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    d.alibi_slopes = NULL, d.alibi = 1, d.add_zero_attn = 1;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_UNSUPPORTED);
    CHECK(strstr(err.message, "add_zero_attn") != NULL);
    d.alibi = 0, d.add_zero_attn = 0, d.window = 3, d.add_bias_kv = 1;
    w.bias_k = w.bias_v = bias_kv;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_UNSUPPORTED);
    CHECK(strstr(err.message, "window") != NULL && strstr(err.message, "add_bias_kv") != NULL);
    d.add_bias_kv = 0, w.bias_k = w.bias_v = NULL;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_OK);
    const float sinks[2] = {1.0f, INFINITY};
    w.sinks = sinks;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_NON_FINITE);
    CHECK(strstr(err.message, "sinks[1]") != NULL);
}

/* Positions by hand: one query at position 5 over keys at 0 and 3 with ALiBi (m = 2^-8) sees the
 * biases m (0 - 5) and m (3 - 5); the keys' order and indices do not matter, only positions. */
static void test_positions_by_hand(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    d.alibi = 1;
    const double m = 1.0 / 256;
    const float x[3] = {0.0f, 1.0f, 1.0f}; /* token 2 (x = 1) is the query, at position 5 */
    const uint32_t pos[3] = {0, 3, 5};
    const uint8_t mask[9] = {0, 1, 1, 1, 0, 1, 0, 0, 1}; /* row 2 sees tokens 0 and 1 only */
    float out[3];
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 3, .query = x, .output = out, .attn_mask = mask,
                                  .attn_mask_dtype = VKATTN_DTYPE_BOOL, .positions = pos};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    double p0 = exp(0 - 5 * m), p1 = exp(1 - 2 * m);
    CHECK_NEAR(out[2], p1 / (p0 + p1), TOL);
    /* causal by position: with positions (5, 3, 0) token 0 sees all three, token 2 only itself */
    const uint32_t back[3] = {5, 3, 0};
    f.attn_mask = NULL, f.positions = back, f.causal = 1;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, NULL), VKATTN_OK);
    CHECK_NEAR(out[2], 1.0, TOL);
    CHECK_NEAR(out[0], (exp(-2 * m) + exp(-5 * m)) / (1 + exp(-2 * m) + exp(-5 * m)), TOL); /* scores 0, biases */
}

/* A random layer of width 8 (2 heads of 4) with RoPE, or ALiBi, and a window of `window`. */
typedef struct small_layer {
    vkattn_layer_desc d;
    vkattn_weights w;
    float in[3 * 8 * 8], bias[3 * 8], out_w[8 * 8], out_b[8];
} small_layer;

static void small_layer_make(small_layer *s, int alibi, uint32_t window, unsigned long long seed)
{
    test_rng rng = test_rng_make(seed);
    test_fill(&rng, s->in, sizeof s->in / sizeof(float), 0.6f), test_fill(&rng, s->bias, 3 * 8, 0.1f);
    test_fill(&rng, s->out_w, 8 * 8, 0.6f), test_fill(&rng, s->out_b, 8, 0.1f);
    s->d = (vkattn_layer_desc){.embed_dim = 8, .num_heads = 2, .window = window};
    if (alibi) s->d.alibi = 1;
    else s->d.rope_theta = 100.0f;
    s->w = (vkattn_weights){.in_proj_weight = s->in, .in_proj_bias = s->bias, .out_proj_weight = s->out_w,
                            .out_proj_bias = s->out_b};
}

/* Positions equal to the indices change nothing, bit for bit; then a token tree: the history and
 * the tree as one forward, tree tokens at their depths and the tree's mask, gives each tree token
 * what a causal forward over the history and its root-to-token path gives its last token. */
static void check_tree_on_cpu(int alibi, uint32_t window, const int *parents, uint32_t n)
{
    enum { P = 5, MAXN = 8, S_MAX = P + MAXN, E = 8 };
    small_layer s;
    small_layer_make(&s, alibi, window, 40 + (unsigned)alibi * 3 + window);
    const uint32_t S = P + n;
    float x[S_MAX * E], out[S_MAX * E], plain[S_MAX * E], seq[S_MAX * E], path_out[S_MAX * E];
    uint8_t mask[S_MAX * S_MAX];
    uint32_t pos[S_MAX], index[S_MAX], path[MAXN];
    test_rng rng = test_rng_make(9);
    test_fill(&rng, x, (size_t)S * E, 1.0f);
    for (uint32_t i = 0; i < S; i++) index[i] = i;
    vkattn_error err = {0};
    vkattn_host_forward_desc f = {.batch = 1, .query_len = S, .query = x, .output = plain, .causal = 1};
    CHECK_STATUS(vkattn_reference_forward(&s.d, &s.w, &f, &err), VKATTN_OK);
    f.output = out, f.positions = index;
    CHECK_STATUS(vkattn_reference_forward(&s.d, &s.w, &f, &err), VKATTN_OK);
    CHECK_MSG(memcmp(out, plain, (size_t)S * E * sizeof(float)) == 0, "positions equal to the indices changed the output");

    tree_reference(parents, P, n, mask, pos);
    f = (vkattn_host_forward_desc){.batch = 1, .query_len = S, .query = x, .output = out, .attn_mask = mask,
                                   .attn_mask_dtype = VKATTN_DTYPE_BOOL, .positions = pos};
    CHECK_STATUS(vkattn_reference_forward(&s.d, &s.w, &f, &err), VKATTN_OK);
    double worst = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t len = tree_path(parents, i, path);
        memcpy(seq, x, (size_t)P * E * sizeof(float));
        for (uint32_t k = 0; k < len; k++) memcpy(seq + (P + k) * E, x + (P + path[k]) * E, E * sizeof(float));
        vkattn_host_forward_desc g = {.batch = 1, .query_len = P + len, .query = seq, .output = path_out, .causal = 1};
        CHECK_STATUS(vkattn_reference_forward(&s.d, &s.w, &g, &err), VKATTN_OK);
        for (uint32_t e = 0; e < E; e++) {
            double diff = fabs((double)out[(P + i) * E + e] - path_out[(P + len - 1) * E + e]);
            worst = diff > worst ? diff : worst;
        }
    }
    printf("  %s, window %u, %u tree tokens: worst |tree - path| %.1e\n", alibi ? "alibi" : "rope", window, n, worst);
    CHECK_MSG(worst <= 1e-6, "a tree token differs from its path's last token by %.3e", worst);
}

static void test_tree_on_cpu(void)
{
    const int tree[7] = {-1, 0, 0, 1, 1, 2, 5};     /* a root, two children, ... in order */
    const int shuffled[6] = {3, -1, 1, 1, 0, 4};    /* parents after their children */
    const int roots[4] = {-1, -1, 0, 1};            /* two roots: two chains */
    check_tree_on_cpu(0, 0, tree, 7);
    check_tree_on_cpu(0, 3, tree, 7);
    check_tree_on_cpu(1, 0, shuffled, 6);
    check_tree_on_cpu(1, 4, roots, 4);
    check_tree_on_cpu(0, 0, shuffled, 6);
}

static void test_positions_errors(void)
{
    vkattn_layer_desc d = scalar_layer();
    vkattn_weights w = scalar_weights();
    float out[2];
    const uint32_t pos[2] = {0, 1}, huge[2] = {0, 1u << 31};
    vkattn_host_forward_desc f = {.batch = 1, .query_len = 2, .query = x01, .output = out, .positions = huge};
    vkattn_error err = {0};
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "positions[1]") != NULL);
    f.positions = pos, f.key = x01, f.key_len = 2;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(err.message, "self-attention") != NULL);
    /* positions replace rope_offset, which lengthened a DYNAMIC or LONGROPE table without moving a
     * token (an outside review) */
    f.key = NULL, f.key_len = 0, f.rope_offset = 3;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(err.message, "give rope_offset 0 (it is 3)") != NULL, "%s", err.message);
    f.rope_offset = 0;
    CHECK_STATUS(vkattn_reference_forward(&d, &w, &f, &err), VKATTN_OK);
}

static void test_status_names(void)
{
    CHECK(strcmp(vkattn_status_name(VKATTN_ERROR_SHAPE), "VKATTN_ERROR_SHAPE") == 0);
    CHECK(strcmp(vkattn_status_string(VKATTN_OK), "success") == 0);
    CHECK(strcmp(vkattn_status_name((vkattn_status)999), "VKATTN_UNKNOWN") == 0);
    for (int s = 0; s <= VKATTN_ERROR_NOT_FOUND; s++) CHECK(strlen(vkattn_status_string((vkattn_status)s)) > 0);
    CHECK(vkattn_version_number() == VKATTN_VERSION_NUMBER);
    CHECK(strcmp(vkattn_path_name(VKATTN_PATH_FUSED), "fused") == 0);
}

int main(void)
{
    RUN_TEST(test_plain_softmax);
    RUN_TEST(test_causal);
    RUN_TEST(test_fully_masked_row);
    RUN_TEST(test_valid_lens);
    RUN_TEST(test_float_and_bool_masks);
    RUN_TEST(test_extra_keys);
    RUN_TEST(test_two_heads_and_average);
    RUN_TEST(test_scale_and_cross);
    RUN_TEST(test_nan_propagates);
    RUN_TEST(test_errors);
    RUN_TEST(test_gqa_equals_repeated_mha);
    RUN_TEST(test_gqa_kv_heads_equal_heads);
    RUN_TEST(test_rope_by_hand);
    RUN_TEST(test_rope_partial_by_hand);
    RUN_TEST(test_rope_theta_zero_is_off);
    RUN_TEST(test_rope_relative_positions);
    RUN_TEST(test_rope_decode_positions);
    RUN_TEST(test_rope_errors);
    RUN_TEST(test_window_by_hand);
    RUN_TEST(test_softcap_by_hand);
    RUN_TEST(test_sinks_by_hand);
    RUN_TEST(test_alibi_by_hand);
    RUN_TEST(test_alibi_slopes);
    RUN_TEST(test_variant_errors);
    RUN_TEST(test_positions_by_hand);
    RUN_TEST(test_tree_on_cpu);
    RUN_TEST(test_positions_errors);
    RUN_TEST(test_status_names);
    return test_finish();
}
