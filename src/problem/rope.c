/* Rotary frequencies: each type's formula as Hugging Face's rope utilities (modeling_rope_utils.py)
 * state it, evaluated in double. With d = rope_dim and base_i = theta^(2i/d), i < d/2. */
#include "problem/rope.h"

#include <math.h>

#include "common/error.h"

static const char *type_name(vkattn_rope_type t)
{
    static const char *names[] = {"default", "linear", "dynamic", "yarn", "longrope", "llama3", "table"};
    return (unsigned)t <= VKATTN_ROPE_TYPE_TABLE ? names[t] : "?";
}

#define T_(t) (1u << VKATTN_ROPE_TYPE_##t) /* a type's bit in a field's `used_by` */
#define VKA_PI 3.14159265358979323846

/* A finite float >= 0 (0 = unset), or `required` of its type: > 0. */
static vkattn_status check_float(const char *name, float v, int required, vkattn_rope_type t, vkattn_error *error)
{
    if (!isfinite(v) || v < 0.0f)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "rope_scaling.%s %g must be finite and > 0", name,
                             (double)v);
    if (required && v == 0.0f)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "rope_scaling.%s is required by rope type %s", name,
                             type_name(t));
    return VKATTN_OK;
}

/* `n` floats, finite and > 0 (factors) or >= 0 (a table of inverse frequencies). */
static vkattn_status check_list(const char *name, const float *v, uint32_t n, int positive, vkattn_rope_type t,
                                vkattn_error *error)
{
    if (!v)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope_scaling.%s is NULL; rope type %s needs rope_dim / 2 = %u floats", name, type_name(t), n);
    for (uint32_t i = 0; i < n; i++)
        if (!isfinite(v[i]) || v[i] < 0.0f || (positive && v[i] == 0.0f))
            return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "rope_scaling.%s[%u] is %g; it must be finite and %s",
                                 name, i, (double)v[i], positive ? "> 0" : ">= 0");
    return VKATTN_OK;
}

vkattn_status vka_rope_scaling_check(const vkattn_layer_desc *desc, uint32_t dim, vkattn_error *error)
{
    const vkattn_rope_scaling *s = &desc->rope_scaling;
    const vkattn_rope_type t = s->type;
    vkattn_status status;
    if ((unsigned)t > VKATTN_ROPE_TYPE_TABLE)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "rope_scaling.type %d is not a vkattn_rope_type", (int)t);
    /* Each field and the types that read it: a field the type does not read is a contradiction,
     * not something to ignore. */
    const struct {
        const char *name;
        int set;
        unsigned used_by;
    } fields[] = {
        {"factor", s->factor != 0.0f, T_(LINEAR) | T_(DYNAMIC) | T_(YARN) | T_(LONGROPE) | T_(LLAMA3)},
        {"original_max_position_embeddings", s->original_max_position_embeddings != 0, T_(YARN) | T_(LONGROPE) | T_(LLAMA3)},
        {"max_position_embeddings", s->max_position_embeddings != 0, T_(DYNAMIC) | T_(YARN) | T_(LONGROPE)},
        {"low_freq_factor", s->low_freq_factor != 0.0f, T_(LLAMA3)},
        {"high_freq_factor", s->high_freq_factor != 0.0f, T_(LLAMA3)},
        {"beta_fast", s->beta_fast != 0.0f, T_(YARN)},
        {"beta_slow", s->beta_slow != 0.0f, T_(YARN)},
        {"mscale", s->mscale != 0.0f, T_(YARN)},
        {"mscale_all_dim", s->mscale_all_dim != 0.0f, T_(YARN)},
        {"no_truncate", s->no_truncate != 0, T_(YARN)},
        {"attention_factor", s->attention_factor != 0.0f, T_(YARN) | T_(LONGROPE) | T_(TABLE)},
        {"short_factor", s->short_factor != NULL, T_(LONGROPE)},
        {"long_factor", s->long_factor != NULL, T_(LONGROPE)},
        {"inv_freq", s->inv_freq != NULL, T_(TABLE)},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (fields[i].set && !(fields[i].used_by & (1u << t)))
            return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                                 "rope_scaling.%s is set but rope type %s does not use it", fields[i].name, type_name(t));
    int needs_factor = t == VKATTN_ROPE_TYPE_LINEAR || t == VKATTN_ROPE_TYPE_DYNAMIC || t == VKATTN_ROPE_TYPE_LLAMA3;
    VKA_TRY(check_float("factor", s->factor, needs_factor, t, error));
    VKA_TRY(check_float("low_freq_factor", s->low_freq_factor, t == VKATTN_ROPE_TYPE_LLAMA3, t, error));
    VKA_TRY(check_float("high_freq_factor", s->high_freq_factor, t == VKATTN_ROPE_TYPE_LLAMA3, t, error));
    VKA_TRY(check_float("beta_fast", s->beta_fast, 0, t, error));
    VKA_TRY(check_float("beta_slow", s->beta_slow, 0, t, error));
    VKA_TRY(check_float("mscale", s->mscale, 0, t, error));
    VKA_TRY(check_float("mscale_all_dim", s->mscale_all_dim, 0, t, error));
    VKA_TRY(check_float("attention_factor", s->attention_factor, 0, t, error));
    if ((t == VKATTN_ROPE_TYPE_YARN || t == VKATTN_ROPE_TYPE_LONGROPE || t == VKATTN_ROPE_TYPE_LLAMA3) &&
        s->original_max_position_embeddings == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope_scaling.original_max_position_embeddings is required by rope type %s", type_name(t));
    if (t == VKATTN_ROPE_TYPE_DYNAMIC && s->max_position_embeddings == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope_scaling.max_position_embeddings is required by rope type dynamic");
    if ((t == VKATTN_ROPE_TYPE_YARN || t == VKATTN_ROPE_TYPE_LONGROPE) && s->factor == 0.0f &&
        s->max_position_embeddings == 0)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope type %s needs rope_scaling.factor, or max_position_embeddings to take it as "
                             "max_position_embeddings / original_max_position_embeddings",
                             type_name(t));
    if (t == VKATTN_ROPE_TYPE_DYNAMIC && dim <= 2)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope type dynamic needs rope_dim > 2 (its base grows by a power d / (d - 2)); rope_dim is %u", dim);
    if (t == VKATTN_ROPE_TYPE_LLAMA3 && !(s->low_freq_factor < s->high_freq_factor))
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope_scaling.low_freq_factor %g must be below high_freq_factor %g (llama3)",
                             (double)s->low_freq_factor, (double)s->high_freq_factor);
    if (t == VKATTN_ROPE_TYPE_LONGROPE) {
        VKA_TRY(check_list("short_factor", s->short_factor, dim / 2, 1, t, error));
        VKA_TRY(check_list("long_factor", s->long_factor, dim / 2, 1, t, error));
    }
    if (t == VKATTN_ROPE_TYPE_TABLE) VKA_TRY(check_list("inv_freq", s->inv_freq, dim / 2, 0, t, error));
    if (t != VKATTN_ROPE_TYPE_TABLE && t != VKATTN_ROPE_TYPE_DEFAULT && desc->rope_theta == 0.0f)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT,
                             "rope type %s scales theta's frequencies but rope_theta is 0 (RoPE off)", type_name(t));
    return VKATTN_OK;
fail:
    return status;
}

/* factor, or max_position_embeddings / original_max_position_embeddings when 0 (YaRN, LongRoPE). */
static double factor_of(const vkattn_rope_scaling *s)
{
    if (s->factor > 0.0f) return s->factor;
    return (double)s->max_position_embeddings / (double)s->original_max_position_embeddings;
}

/* YaRN's 0.1 mscale ln(factor) + 1, or 1 for factor <= 1. */
static double yarn_mscale(double factor, double mscale)
{
    return factor <= 1.0 ? 1.0 : 0.1 * mscale * log(factor) + 1.0;
}

float vka_rope_attention_factor(const vkattn_rope_scaling *s)
{
    if (s->attention_factor > 0.0f) return s->attention_factor;
    double factor = factor_of(s);
    switch (s->type) {
    case VKATTN_ROPE_TYPE_YARN:
        if (s->mscale > 0.0f && s->mscale_all_dim > 0.0f)
            return (float)(yarn_mscale(factor, s->mscale) / yarn_mscale(factor, s->mscale_all_dim));
        return (float)yarn_mscale(factor, 1.0);
    case VKATTN_ROPE_TYPE_LONGROPE:
        if (factor <= 1.0) return 1.0f;
        return (float)sqrt(1.0 + log(factor) / log((double)s->original_max_position_embeddings));
    default: return 1.0f;
    }
}

int vka_rope_table_varies(const vkattn_rope_scaling *s, uint64_t seq_len)
{
    if (s->type == VKATTN_ROPE_TYPE_DYNAMIC) return seq_len > s->max_position_embeddings;
    if (s->type == VKATTN_ROPE_TYPE_LONGROPE) return seq_len > s->original_max_position_embeddings;
    return 0;
}

/* The dimension whose wavelength makes `rotations` turns in `positions` positions (YaRN). */
static double yarn_correction_dim(double rotations, double d, double theta, double positions)
{
    return d * log(positions / (rotations * 2.0 * VKA_PI)) / (2.0 * log(theta));
}

void vka_rope_table(const vkattn_rope_scaling *s, float rope_theta, uint32_t dim, uint64_t seq_len, float *out)
{
    const uint32_t half = dim / 2;
    const double d = dim, factor = factor_of(s);
    double theta = rope_theta;
    if (s->type == VKATTN_ROPE_TYPE_DYNAMIC && vka_rope_table_varies(s, seq_len)) {
        /* NTK-aware: theta grows with the sequence past max_position_embeddings. */
        double m = s->max_position_embeddings;
        theta *= pow(factor * (double)seq_len / m - (factor - 1.0), d / (d - 2.0));
    }
    double low = 0.0, high = 0.0; /* YaRN's ramp */
    if (s->type == VKATTN_ROPE_TYPE_YARN) {
        double fast = s->beta_fast > 0.0f ? s->beta_fast : 32.0, slow = s->beta_slow > 0.0f ? s->beta_slow : 1.0;
        double original = s->original_max_position_embeddings;
        low = yarn_correction_dim(fast, d, theta, original);
        high = yarn_correction_dim(slow, d, theta, original);
        if (!s->no_truncate) {
            low = floor(low);
            high = ceil(high);
        }
        low = low > 0.0 ? low : 0.0;
        high = high < d - 1.0 ? high : d - 1.0;
        if (low == high) high += 0.001; /* as the reference does, against a zero-width ramp */
    }
    const float *ext = NULL; /* LongRoPE's factors */
    if (s->type == VKATTN_ROPE_TYPE_LONGROPE) ext = vka_rope_table_varies(s, seq_len) ? s->long_factor : s->short_factor;
    const double original = s->original_max_position_embeddings;
    for (uint32_t i = 0; i < half; i++) {
        double base_i = pow(theta, 2.0 * i / d), f = 1.0 / base_i;
        switch (s->type) {
        case VKATTN_ROPE_TYPE_LINEAR: f /= factor; break;
        case VKATTN_ROPE_TYPE_YARN: {
            double ramp = ((double)i - low) / (high - low);
            ramp = ramp < 0.0 ? 0.0 : ramp > 1.0 ? 1.0 : ramp; /* 0: extrapolate (keep), 1: interpolate */
            f = f / factor * ramp + f * (1.0 - ramp);
            break;
        }
        case VKATTN_ROPE_TYPE_LONGROPE: f = 1.0 / ((double)ext[i] * base_i); break;
        case VKATTN_ROPE_TYPE_LLAMA3: {
            double wavelen = 2.0 * VKA_PI / f;
            double low_wavelen = original / s->low_freq_factor, high_wavelen = original / s->high_freq_factor;
            if (wavelen > low_wavelen) f /= factor;
            else if (!(wavelen < high_wavelen)) {
                double smooth = (original / wavelen - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
                f = (1.0 - smooth) * f / factor + smooth * f;
            }
            break;
        }
        case VKATTN_ROPE_TYPE_TABLE: f = s->inv_freq[i]; break;
        default: break;
        }
        out[i] = (float)f;
    }
}
