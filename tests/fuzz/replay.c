/* Runs a fuzz target's LLVMFuzzerTestOneInput over files, without libFuzzer: the regression test
 * every build gets (ctest label cpu), so that seeds and the inputs of fixed crashes stay tested
 * with any compiler.
 *
 * usage: replay_<target> PATH...   each PATH is a file or a directory; a directory's regular files
 * are run in name order (names starting with '.' are skipped, so .gitkeep is not an input; a
 * directory that does not exist counts as empty, but finding no input at all fails). A broken
 * invariant traps, and a parser bug may crash or, under VKATTN_SANITIZE, be reported by a
 * sanitizer: either way the test fails.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads a whole file; the buffer is exactly `size` bytes (at least 1 allocated), so a parser that
 * reads past the input is caught by ASan builds as it would be under libFuzzer. */
static int read_file(const char *path, uint8_t **out, size_t *out_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t cap = 4096, size = 0;
    uint8_t *buf = malloc(cap);
    for (size_t got = 1; buf && got;) {
        if (size == cap) {
            uint8_t *bigger = realloc(buf, cap *= 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
        }
        got = fread(buf + size, 1, cap - size, f);
        size += got;
    }
    int ok = buf && !ferror(f);
    fclose(f);
    if (!ok) {
        free(buf);
        return 0;
    }
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact) {
        free(buf);
        return 0;
    }
    memcpy(exact, buf, size);
    free(buf);
    *out = exact;
    *out_size = size;
    return 1;
}

static int run_file(const char *path)
{
    uint8_t *data;
    size_t size;
    if (!read_file(path, &data, &size)) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        return 0;
    }
    /* Named before the run, so that a crash shows which input did it. */
    printf("replay: %s (%zu bytes)\n", path, size);
    fflush(stdout);
    LLVMFuzzerTestOneInput(data, size);
    free(data);
    return 1;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file in `dir`; returns the count, or -1 on an error. */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    char **names = NULL;
    size_t count = 0, cap = 0;
    long ran = 0;
    for (struct dirent *e; ran >= 0 && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (count == cap) {
            char **bigger = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
            if (!bigger) {
                ran = -1;
                break;
            }
            names = bigger;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(names[count] = malloc(len))) {
            ran = -1;
            break;
        }
        snprintf(names[count++], len, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (count) qsort(names, count, sizeof *names, compare_names);
    for (size_t i = 0; i < count; i++) {
        struct stat st;
        if (ran >= 0 && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) ran = run_file(names[i]) ? ran + 1 : -1;
        free(names[i]);
    }
    free(names);
    return ran;
}

int main(int argc, char **argv)
{
    long total = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;
        long ran = stat(argv[i], &st) == 0 && S_ISREG(st.st_mode) ? (run_file(argv[i]) ? 1 : -1) : run_dir(argv[i]);
        if (ran < 0) {
            fprintf(stderr, "replay: cannot read %s\n", argv[i]);
            return 1;
        }
        total += ran;
    }
    if (total == 0) { /* a mistyped or moved corpus path must not pass as "nothing failed" */
        fprintf(stderr, "replay: no inputs found in the given paths\n");
        return 1;
    }
    printf("replay: %ld inputs ran without a failure\n", total);
    return 0;
}
