/* Error statistics and the table of tolerances (see compare.h). */
#include "compare.h"

#include <math.h>
#include <stdio.h>

/* The only place these numbers are written. A block format's row is the error that format allows
 * against the exact reference (about 1e-4 and 3e-2 NMSE with N(0,1) inputs; README, "Decoding"). */
static const compare_tolerance k_tolerances[COMPARE_BOUND_COUNT] = {
    [COMPARE_F32] = {"f32 storage", 1e-4, 1e-9, 1e-4},
    [COMPARE_F16] = {"f16 storage", 1e-2, 2e-6, 1e-2},
    [COMPARE_Q8_0] = {"a q8_0 KV cache", 5e-2, 5e-4, 5e-2},
    [COMPARE_Q4_0] = {"a q4_0 KV cache", 5e-1, 5e-2, 5e-1},
    [COMPARE_STRICT] = {"strict fp32", 1e-5, 1e-10, 1e-5},
    [COMPARE_LARGE] = {"fp32, inputs x30", 1e-4, 1e-8, 1e-4},
};

compare_stats compare_arrays(const float *got, const float *want, size_t n)
{
    compare_stats s = {0};
    double err2 = 0, ref2 = 0;
    for (size_t i = 0; i < n; i++) {
        int fg = isfinite(got[i]), fw = isfinite(want[i]);
        if (!fg || !fw) {
            /* The same NaN or the same infinity on both sides agrees; anything else differs. */
            int same = !fg && !fw && (isnan(got[i]) ? isnan(want[i]) : got[i] == want[i]);
            if (!same && s.nonfinite++ == 0) s.nonfinite_at = i;
            continue;
        }
        double d = (double)got[i] - want[i];
        if (fabs(d) > s.max_abs) s.max_abs = fabs(d), s.max_abs_at = i;
        if (fabs(want[i]) > s.ref_max) s.ref_max = fabs(want[i]);
        s.compared++;
        err2 += d * d;
        ref2 += (double)want[i] * want[i];
    }
    s.nmse = ref2 > 0 ? err2 / ref2 : err2;
    return s;
}

const compare_tolerance *compare_tolerance_of(compare_bound bound)
{
    return &k_tolerances[bound < COMPARE_BOUND_COUNT ? bound : COMPARE_F32];
}

const compare_tolerance *compare_tolerance_for(vkattn_dtype dtype)
{
    switch (dtype) {
    case VKATTN_DTYPE_F16: return &k_tolerances[COMPARE_F16];
    case VKATTN_DTYPE_Q8_0: return &k_tolerances[COMPARE_Q8_0];
    case VKATTN_DTYPE_Q4_0: return &k_tolerances[COMPARE_Q4_0];
    default: return &k_tolerances[COMPARE_F32];
    }
}

double compare_abs_bound(const compare_tolerance *t, double ref_max)
{
    return t->max_abs * (ref_max > 1 ? ref_max : 1);
}

int compare_within(const compare_stats *e, const compare_tolerance *t)
{
    return e->nonfinite == 0 && e->max_abs <= compare_abs_bound(t, e->ref_max) && e->nmse <= t->nmse;
}

void compare_describe(char *buf, size_t size, const compare_tolerance *t, double ref_max)
{
    snprintf(buf, size, "tolerance for %s: max-abs %g x max(1, max|ref| %.3g) = %.3g, NMSE %g", t->name, t->max_abs,
             ref_max, compare_abs_bound(t, ref_max), t->nmse);
}
