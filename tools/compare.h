/* A result against its reference: the error statistics and the one table of named tolerances that
 * the CLI (run --check, demo) and the tests (tests/gpu_test.h, test_gpu_vs_cpu.c) apply. Public
 * API only, and no other file of tools/: the tests compile it on its own. */
#ifndef VKATTN_COMPARE_H
#define VKATTN_COMPARE_H

#include <stddef.h>

#include "vkattn.h"

/* `got` against `want`, over the elements finite on both sides: max |got - want|, and
 * NMSE = sum (got - want)^2 / sum want^2. */
typedef struct compare_stats {
    double max_abs;
    size_t max_abs_at;   /* flat index of the largest difference */
    double nmse;
    double ref_max;      /* max |want| over the compared elements */
    size_t compared;     /* elements finite on both sides */
    size_t nonfinite;    /* elements where got and want are not the same non-finite value: one finite and
                            one not, NaN against inf, or infinities of opposite signs */
    size_t nonfinite_at; /* flat index of the first of those */
} compare_stats;
compare_stats compare_arrays(const float *got, const float *want, size_t n);

/* A row of the table: within it when max-abs <= max_abs * max(1, ref_max), NMSE <= nmse and no
 * non-finite value differs. `weights` is the tests' absolute max-abs bound on attention weights
 * (probabilities, at most 1); the CLI checks weights against the row itself. */
typedef enum compare_bound {
    COMPARE_F32,       /* run --check and demo, f32 storage: a few ulp of the outputs' scale */
    COMPARE_F16,       /* f16 storage (CLI and GPU tests): Q, K, V and the context rounded to 11 bits */
    COMPARE_Q8_0,      /* run --check through a Q8_0 KV cache, against the exact reference */
    COMPARE_Q4_0,      /* the same, Q4_0 */
    COMPARE_STRICT,    /* the GPU-vs-CPU tests' fp32 rows */
    COMPARE_LARGE,     /* the GPU-vs-CPU tests' rows with inputs x30 */
    COMPARE_BOUND_COUNT
} compare_bound;

typedef struct compare_tolerance {
    const char *name; /* "f32 storage", "a q8_0 KV cache" */
    double max_abs, nmse, weights;
} compare_tolerance;

const compare_tolerance *compare_tolerance_of(compare_bound bound);
/* The CLI's row for the dtype that bounds its error (F32, F16, Q8_0 or Q4_0; anything else: F32). */
const compare_tolerance *compare_tolerance_for(vkattn_dtype dtype);
/* max_abs * max(1, ref_max) */
double compare_abs_bound(const compare_tolerance *t, double ref_max);
/* 1 if `e` is within `t`, else 0. */
int compare_within(const compare_stats *e, const compare_tolerance *t);
/* "tolerance for f32 storage: max-abs 1e-04 x max(1, max|ref| 0.93) = 0.0001, NMSE 1e-09" */
void compare_describe(char *buf, size_t size, const compare_tolerance *t, double ref_max);

#endif
