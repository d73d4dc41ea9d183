/* A tiny test harness shared by every test executable: checks that count failures and keep going,
 * so one run reports every broken case. Each executable returns non-zero if any check failed. */
#ifndef VKATTN_TEST_UTIL_H
#define VKATTN_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vkattn.h"

typedef struct test_state {
    int checks;
    int failures;
} test_state;

/* One per executable: test files are separate programs, so this is not library state. */
static test_state test_g;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        test_g.checks++;                                                                           \
        if (!(cond)) {                                                                             \
            test_g.failures++;                                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        test_g.checks++;                                                                           \
        if (!(cond)) {                                                                             \
            test_g.failures++;                                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond);               \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* Checks that `expr` returns `expected`; prints both names otherwise. */
#define CHECK_STATUS(expr, expected)                                                               \
    do {                                                                                           \
        vkattn_status got_ = (expr);                                                               \
        test_g.checks++;                                                                           \
        if (got_ != (expected)) {                                                                  \
            test_g.failures++;                                                                     \
            fprintf(stderr, "%s:%d: %s returned %s, expected %s\n", __FILE__, __LINE__, #expr,     \
                    vkattn_status_name(got_), vkattn_status_name(expected));                      \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        test_g.checks++;                                                                           \
        if (!(fabs(a_ - b_) <= (tol))) {                                                           \
            test_g.failures++;                                                                     \
            fprintf(stderr, "%s:%d: %s = %.9g, expected %.9g (tol %g)\n", __FILE__, __LINE__, #a,  \
                    a_, b_, (double)(tol));                                                        \
        }                                                                                          \
    } while (0)

#define RUN_TEST(fn)                                                                               \
    do {                                                                                           \
        int before_ = test_g.failures;                                                             \
        fn();                                                                                      \
        printf("%-48s %s\n", #fn, test_g.failures == before_ ? "ok" : "FAILED");                   \
    } while (0)

/* RUN_TEST for a test function with arguments. */
#define RUN_TEST_WITH(fn, ...)                                                                     \
    do {                                                                                           \
        int before_ = test_g.failures;                                                             \
        fn(__VA_ARGS__);                                                                           \
        printf("%-48s %s\n", #fn, test_g.failures == before_ ? "ok" : "FAILED");                   \
    } while (0)

/* Seconds (C11's wall clock), for the time lines tests print. */
/* How many times `needle` occurs in `text` (a plan's text: its steps of one kernel). */
static inline unsigned test_count_text(const char *text, const char *needle)
{
    unsigned n = 0;
    for (const char *at = text; (at = strstr(at, needle)) != NULL; at++) n++;
    return n;
}

static inline double test_now_s(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Prints the summary and gives main's return value. */
static inline int test_finish(void)
{
    printf("%d checks, %d failures\n", test_g.checks, test_g.failures);
    return test_g.failures ? 1 : 0;
}

/* Deterministic pseudo-random numbers (xorshift64*), uniform in [-1, 1). */
typedef struct test_rng {
    unsigned long long state;
} test_rng;

static inline test_rng test_rng_make(unsigned long long seed)
{
    test_rng r = {seed * 0x9E3779B97F4A7C15ull + 1};
    return r;
}

static inline float test_rng_float(test_rng *r)
{
    r->state ^= r->state >> 12;
    r->state ^= r->state << 25;
    r->state ^= r->state >> 27;
    unsigned long long x = r->state * 0x2545F4914F6CDD1Dull;
    return (float)((double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static inline void test_fill(test_rng *r, float *x, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) x[i] = test_rng_float(r) * scale;
}

#endif
