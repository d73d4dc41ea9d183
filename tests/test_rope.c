/* Tests for the rotary frequencies (src/problem/rope.c): each rope type's table and attention
 * factor against values computed independently in float64 (fixtures/make_rope_tables.py, from
 * Hugging Face's rope utilities), which tables change with the sequence length, and the checks
 * that refuse a scaling's missing or contradictory fields. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "problem/config.h"
#include "problem/rope.h"
#include "test_util.h"

typedef struct rope_case {
    const char *name;
    double theta;
    uint32_t dim;
    vkattn_rope_scaling scaling;
    uint32_t seq_len; /* the sequence the table is for (0: the layer's own) */
    double attention_factor;
    double inv_freq[128];
} rope_case;

#include "fixtures/rope_tables.h"

/* Each value within one float rounding of the float64 reference (the C side also computes in
 * double, then rounds once; its libm's pow may differ from Python's in the last double bit). */
static void test_tables(void)
{
    for (size_t c = 0; c < sizeof k_rope_cases / sizeof k_rope_cases[0]; c++) {
        const rope_case *r = &k_rope_cases[c];
        float got[128];
        vka_rope_table(&r->scaling, (float)r->theta, r->dim, r->seq_len, got);
        double worst = 0.0;
        for (uint32_t i = 0; i < r->dim / 2; i++) {
            double err = fabs((double)got[i] - r->inv_freq[i]) / r->inv_freq[i];
            worst = err > worst ? err : worst;
        }
        CHECK_MSG(worst <= 6.0e-8, "%s: worst relative error %.3g (float rounding is 6e-8)", r->name, worst);
        float factor = vka_rope_attention_factor(&r->scaling);
        CHECK_MSG(fabs((double)factor - r->attention_factor) <= 6.0e-8 * r->attention_factor,
                  "%s: attention factor %.9g, expected %.9g", r->name, (double)factor, r->attention_factor);
        printf("  %-22s %3u dims, worst %.2g, attention factor %.6f\n", r->name, r->dim, worst, (double)factor);
    }
    /* The layer's own table (seq_len 0) is the short one of LongRoPE and theta's for dynamic. */
    const rope_case *dyn_short = &k_rope_cases[2], *dyn_long = &k_rope_cases[3];
    CHECK(strcmp(dyn_short->name, "dynamic_short") == 0 && strcmp(dyn_long->name, "dynamic_long") == 0);
    CHECK(!vka_rope_table_varies(&dyn_long->scaling, 4096) && vka_rope_table_varies(&dyn_long->scaling, 4097));
    float own[64], at_max[64];
    vka_rope_table(&dyn_long->scaling, 10000.0f, 128, 0, own);
    vka_rope_table(&dyn_long->scaling, 10000.0f, 128, 4096, at_max);
    CHECK(memcmp(own, at_max, sizeof own) == 0 && own[1] == (float)dyn_short->inv_freq[1]);
    vkattn_rope_scaling yarn = {.type = VKATTN_ROPE_TYPE_YARN, .factor = 4, .original_max_position_embeddings = 4096};
    CHECK(!vka_rope_table_varies(&yarn, 1u << 30));
}

/* A layer description whose RoPE scaling is refused, and the word the message must hold. */
static void test_refused(void)
{
    static const float ones[64] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                   1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                   1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const float with_zero[64] = {1, 0};
    static const float with_nan[4] = {1, NAN, 1, 1};
    static const struct {
        const char *name;
        float theta;
        vkattn_rope_scaling s;
        const char *needle;
    } rows[] = {
        {"unknown type", 10000, {.type = (vkattn_rope_type)9}, "not a vkattn_rope_type"},
        {"linear without factor", 10000, {.type = VKATTN_ROPE_TYPE_LINEAR}, "factor is required"},
        {"negative factor", 10000, {.type = VKATTN_ROPE_TYPE_LINEAR, .factor = -2}, "factor -2 must be finite"},
        {"factor on default", 10000, {.factor = 2}, "factor is set but rope type default"},
        {"dynamic without max", 10000, {.type = VKATTN_ROPE_TYPE_DYNAMIC, .factor = 2}, "max_position_embeddings is required"},
        {"yarn without original", 10000, {.type = VKATTN_ROPE_TYPE_YARN, .factor = 4}, "original_max_position_embeddings is required"},
        {"yarn without a factor", 10000, {.type = VKATTN_ROPE_TYPE_YARN, .original_max_position_embeddings = 4096},
         "needs rope_scaling.factor, or max_position_embeddings"},
        {"llama3 low >= high", 10000,
         {.type = VKATTN_ROPE_TYPE_LLAMA3, .factor = 8, .low_freq_factor = 4, .high_freq_factor = 1,
          .original_max_position_embeddings = 8192},
         "low_freq_factor 4 must be below"},
        {"llama3 with betas", 10000,
         {.type = VKATTN_ROPE_TYPE_LLAMA3, .factor = 8, .low_freq_factor = 1, .high_freq_factor = 4,
          .original_max_position_embeddings = 8192, .beta_fast = 32},
         "beta_fast is set but rope type llama3"},
        {"longrope without lists", 10000, {.type = VKATTN_ROPE_TYPE_LONGROPE, .factor = 2, .original_max_position_embeddings = 4096},
         "short_factor is NULL"},
        {"longrope zero factor", 10000,
         {.type = VKATTN_ROPE_TYPE_LONGROPE, .factor = 2, .original_max_position_embeddings = 4096, .short_factor = with_zero,
          .long_factor = ones},
         "short_factor[1] is 0"},
        {"table NaN", 0, {.type = VKATTN_ROPE_TYPE_TABLE, .inv_freq = with_nan}, "inv_freq[1] is nan"},
        {"scaling without theta", 0, {.type = VKATTN_ROPE_TYPE_LINEAR, .factor = 2}, "rope_scaling is set but RoPE is off"},
        {"mscale NaN", 10000,
         {.type = VKATTN_ROPE_TYPE_YARN, .factor = 4, .original_max_position_embeddings = 4096, .mscale = NAN},
         "mscale nan must be finite"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        vkattn_layer_desc d = {.embed_dim = 64, .num_heads = 8, .rope_theta = rows[i].theta, .rope_scaling = rows[i].s};
        vka_layer_config cfg;
        vkattn_error err = {0};
        vkattn_status status = vka_layer_config_from_desc(&d, &cfg, &err);
        CHECK_MSG(status == VKATTN_ERROR_INVALID_ARGUMENT, "%s: %s (%s)", rows[i].name, vkattn_status_name(status),
                  err.message);
        CHECK_MSG(strstr(err.message, rows[i].needle) != NULL, "%s: message '%s' lacks '%s'", rows[i].name,
                  err.message, rows[i].needle);
    }
    /* A table of frequencies turns RoPE on by itself; its attention factor defaults to 1. */
    vkattn_layer_desc d = {.embed_dim = 64, .num_heads = 8, .rope_scaling = {.type = VKATTN_ROPE_TYPE_TABLE, .inv_freq = ones}};
    vka_layer_config cfg;
    vkattn_error err = {0};
    CHECK(vka_layer_config_from_desc(&d, &cfg, &err) == VKATTN_OK && cfg.rope_dim == 8 && cfg.rope_attention == 1.0f);
}

int main(void)
{
    RUN_TEST(test_tables);
    RUN_TEST(test_refused);
    return test_finish();
}
