/* What the PyTorch fixture tests (test_torch_fixtures.c, test_torch_gqa_fixtures.c) share: their
 * command line, TEST FIXTURES_DIR [cpu|gpu [CASE...]], and the walk over FIXTURES_DIR/cases.txt,
 * one case per line ('#' lines are comments), of which only the named cases run when some are
 * named. Each test parses a line into its own case struct. */
#ifndef VKATTN_TEST_FIXTURE_MANIFEST_H
#define VKATTN_TEST_FIXTURE_MANIFEST_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "gpu_test.h"
#include "test_util.h"

typedef struct fixture_manifest {
    const char *dir; /* FIXTURES_DIR */
    int gpu;         /* "gpu": the device paths too */
    int wanted;      /* how many CASE names were given (0 = all) */
    char **names;
    char path[1024]; /* of cases.txt, for messages */
    FILE *file;
    int cases; /* selected lines seen so far */
} fixture_manifest;

/* Reads the command line and opens the manifest; 0, or the process exit code after a message. */
static inline int fixture_manifest_open(fixture_manifest *m, int argc, char **argv)
{
    memset(m, 0, sizeof *m);
    if (argc < 2) {
        fprintf(stderr, "usage: %s FIXTURES_DIR [cpu|gpu [CASE...]]\n", argv[0]);
        return 2;
    }
    m->dir = argv[1];
    m->gpu = argc > 2 && strcmp(argv[2], "gpu") == 0;
    if (argc > 2 && !m->gpu && strcmp(argv[2], "cpu") != 0) {
        fprintf(stderr, "%s: expected cpu or gpu, got '%s'\n", argv[0], argv[2]);
        return 2;
    }
    m->wanted = argc > 3 ? argc - 3 : 0;
    m->names = argv + 3;
    snprintf(m->path, sizeof m->path, "%s/cases.txt", m->dir);
    if (!(m->file = fopen(m->path, "r"))) {
        fprintf(stderr, "cannot open %s\n", m->path);
        return 1;
    }
    return 0;
}

/* The next line that is not a comment, or NULL at the end. */
static inline const char *fixture_manifest_next(fixture_manifest *m, char *line, int cap)
{
    while (fgets(line, cap, m->file))
        if (line[0] != '#' && line[0] != '\n') return line;
    return NULL;
}

/* True if no case names were given, or `name` is one of them. */
static inline int fixture_manifest_selected(const fixture_manifest *m, const char *name)
{
    for (int i = 0; i < m->wanted; i++)
        if (strcmp(m->names[i], name) == 0) return 1;
    return m->wanted == 0;
}

/* Closes the manifest; it must have held cases, and every named one. */
static inline void fixture_manifest_close(fixture_manifest *m)
{
    fclose(m->file);
    CHECK_MSG(m->cases > 0, "no cases in %s", m->path);
    CHECK_MSG(m->wanted == 0 || m->cases == m->wanted, "%d of the %d named cases are in %s", m->cases, m->wanted,
              m->path);
}

static inline double fixture_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Reads DIR/NAME.SUFFIX.npy into *a; a failed read is a test failure naming the file. */
static inline int fixture_load_npy(const char *dir, const char *name, const char *suffix, vkattn_array *a)
{
    char path[1024];
    vkattn_error error = {0};
    snprintf(path, sizeof path, "%s/%s.%s.npy", dir, name, suffix);
    vkattn_status status = vkattn_npy_read(path, a, &error);
    CHECK_MSG(status == VKATTN_OK, "%s: %s: %s", path, vkattn_status_name(status), error.message);
    return status == VKATTN_OK;
}

/* One path's output against the fixture's: max-abs within tol * max(1, max|ref|), nothing
 * non-finite that the reference is not; prints a line either way. */
static inline void fixture_check_output(const char *name, const char *path, const float *out, const float *ref, size_t n,
                                        double tol)
{
    test_error e = test_compare(out, ref, n);
    double bound = tol * (e.ref_max > 1 ? e.ref_max : 1);
    CHECK_MSG(e.nonfinite == 0 && e.max_abs <= bound, "%s (%s): output max-abs %.3g > %.3g or %zu non-finite", name,
              path, e.max_abs, bound, e.nonfinite);
    printf("  %-26s %-8s output max-abs %.3g (|ref| <= %.3g)\n", name, path, e.max_abs, e.ref_max);
}

/* The main() every fixture test shares: each manifest line parsed by the test's read_case() into a
 * CASE_TYPE, loaded by case_data_load() into a case_data, run by run_cpu() and, with gpu, by
 * run_device(), then freed by case_data_free(); timed and counted. The test defines those and
 * `dir_g` (the fixture directory), and includes gpu_test.h. */
#define FIXTURE_MAIN(CASE_TYPE)                                                                    \
    int main(int argc, char **argv)                                                                \
    {                                                                                              \
        fixture_manifest m;                                                                        \
        int rc = fixture_manifest_open(&m, argc, argv);                                            \
        if (rc) return rc;                                                                         \
        dir_g = m.dir;                                                                             \
        vkattn_context *ctx = m.gpu ? gpu_test_context() : NULL;                                   \
        int ran = 0;                                                                               \
        char line[512];                                                                            \
        while (fixture_manifest_next(&m, line, sizeof line)) {                                     \
            CASE_TYPE c;                                                                           \
            int parsed = read_case(line, &c);                                                      \
            CHECK_MSG(parsed, "malformed line in %s: %s", m.path, line);                           \
            if (!parsed || !fixture_manifest_selected(&m, c.name)) continue;                       \
            int before = test_g.failures;                                                          \
            double start = fixture_seconds();                                                      \
            case_data d;                                                                           \
            if (case_data_load(&c, &d)) {                                                          \
                run_cpu(&c, &d);                                                                   \
                if (m.gpu) run_device(ctx, &c, &d);                                                \
                ran++;                                                                             \
            }                                                                                      \
            case_data_free(&d);                                                                    \
            printf("%-40s %6.1f s %s\n", c.name, fixture_seconds() - start,                        \
                   test_g.failures == before ? "ok" : "FAILED");                                   \
            fflush(stdout);                                                                        \
            m.cases++;                                                                             \
        }                                                                                          \
        fixture_manifest_close(&m);                                                                \
        CHECK_MSG(ran == m.cases, "%d of %d cases ran", ran, m.cases);                             \
        printf("%d cases ran\n", ran);                                                             \
        if (ctx) gpu_test_finish_context(ctx);                                                     \
        return test_finish();                                                                      \
    }

#endif
