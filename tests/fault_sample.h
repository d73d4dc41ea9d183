/* Which failure points a fault walk fails: every point by default, or a sample named in the
 * environment, VKATTN_FAULT_STRIDE=k (every k-th point) and VKATTN_FAULT_FIRST=f (from point f,
 * counting from 1). tools/run-tests.sh walks every 5th point in two halves: stride 10 from point 1
 * under the sanitizers (leaks and memory errors on those error paths) and from point 6 in the plain
 * build (statuses, messages, validation, the context usable again), where it costs a quarter. */
#ifndef VKATTN_TEST_FAULT_SAMPLE_H
#define VKATTN_TEST_FAULT_SAMPLE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct fault_sample {
    uint64_t first, stride;
} fault_sample;

static inline uint64_t fault_sample_env(const char *name, uint64_t fallback)
{
    const char *text = getenv(name);
    if (!text || !*text) return fallback;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    /* a typo must not quietly walk another sample, or none; no walk has a million points */
    if (*text < '0' || *text > '9' || *end || v == 0 || v > 1000000) {
        fprintf(stderr, "%s=%s: not a whole number from 1 to 1000000\n", name, text);
        exit(2);
    }
    return v;
}

static inline fault_sample fault_sample_from_env(void)
{
    fault_sample s = {fault_sample_env("VKATTN_FAULT_FIRST", 1), fault_sample_env("VKATTN_FAULT_STRIDE", 1)};
    return s;
}

/* The wording the walks print after their counts when only a sample of the points failed. */
static inline const char *fault_sample_note(fault_sample s)
{
    return s.stride > 1 || s.first > 1 ? ", a sample of them failed (VKATTN_FAULT_STRIDE, VKATTN_FAULT_FIRST)" : "";
}

#endif
