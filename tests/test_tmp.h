/* Scratch files and captured output for the tests that drive the CLI's code: a private temporary
 * directory (under $TMPDIR, else /tmp) that the test removes at its end, and stdout (optionally
 * stderr too) redirected into a buffer while a call runs. */
#ifndef VKATTN_TEST_TMP_H
#define VKATTN_TEST_TMP_H

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One per executable, like test_g in test_util.h. */
static char test_tmp_dir[64];

/* Makes $TMPDIR/vkattn_<name>_XXXXXX (or under /tmp); 0 on success, else a message and 1. */
static inline int test_tmp_make(const char *name)
{
    const char *env = getenv("TMPDIR");
    const char *base = env && *env && strlen(env) + strlen(name) + 16 < sizeof test_tmp_dir ? env : "/tmp";
    snprintf(test_tmp_dir, sizeof test_tmp_dir, "%s/vkattn_%s_XXXXXX", base, name);
    if (mkdtemp(test_tmp_dir)) return 0;
    perror("mkdtemp");
    return 1;
}

/* The path of `name` inside the directory. */
static inline void test_tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", test_tmp_dir, name);
}

/* Removes the directory with what a test left in it (a check that failed part way, or files
 * no later check reads: it is the test's own folder, so nothing is left in /tmp). */
static inline void test_tmp_remove(void)
{
    DIR *d = opendir(test_tmp_dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        char path[sizeof test_tmp_dir + 256];
        snprintf(path, sizeof path, "%s/%s", test_tmp_dir, e->d_name);
        if (unlink(path) != 0) rmdir(path); /* an emptied folder of the test's */
    }
    if (d) closedir(d);
    rmdir(test_tmp_dir);
}

/* A redirection of stdout (and stderr) into a file of the directory, between begin and end. */
typedef struct test_capture {
    int saved_out, saved_err; /* -1: not redirected */
    char path[300];
} test_capture;

/* Sends stdout, and stderr too when `with_stderr`, to a file until test_capture_end. Exits the test
 * when the redirection cannot be made (nothing after it could be trusted). */
static inline void test_capture_begin(test_capture *c, int with_stderr)
{
    test_tmp_path(c->path, sizeof c->path, "captured.txt");
    fflush(stdout), fflush(stderr);
    c->saved_out = dup(1);
    c->saved_err = with_stderr ? dup(2) : -1;
    int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || c->saved_out < 0 || (with_stderr && c->saved_err < 0)) {
        perror("test_capture_begin");
        exit(1);
    }
    dup2(fd, 1);
    if (with_stderr) dup2(fd, 2);
    close(fd);
}

/* Restores the streams and reads what was written into buf (NUL-terminated, cut to size - 1
 * bytes); returns its length. The file is removed. */
static inline size_t test_capture_end(test_capture *c, char *buf, size_t size)
{
    fflush(stdout), fflush(stderr);
    dup2(c->saved_out, 1), close(c->saved_out);
    if (c->saved_err >= 0) dup2(c->saved_err, 2), close(c->saved_err);
    FILE *f = fopen(c->path, "rb");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    remove(c->path);
    return n;
}

#endif
