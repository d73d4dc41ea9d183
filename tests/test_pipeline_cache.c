/* The persistent pipeline cache: a file written by one context is loaded by the next and the
 * forward stays right; foreign, truncated, corrupt, empty and unreadable files, a directory as
 * the path and a path that cannot be written are notes, never failures, and a file that was not
 * used is never overwritten with anything but valid data; the data round-trips through the
 * caller; the file is replaced atomically. `faults` walks the failure points of loading and
 * saving (label faults). `measure` times context creation + first forward with and without the
 * file, each in a fresh process (not a ctest; docs/PERFORMANCE.md). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, setenv, fork, stat */

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/context.h" /* the device's VkPhysicalDeviceProperties; the fault injector */
#include "gpu_test.h"

static char dir[256]; /* this run's temporary directory */

/* ---- files ---------------------------------------------------------------------------------- */

static void path_in(char *dst, size_t cap, const char *name) { snprintf(dst, cap, "%s/%s", dir, name); }

static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    uint8_t *data = NULL;
    size_t cap = 0, used = 0;
    for (;;) {
        if (used == cap) {
            cap = cap ? 2 * cap : 4096;
            uint8_t *bigger = realloc(data, cap);
            if (!bigger) break;
            data = bigger;
        }
        size_t n = fread(data + used, 1, cap - used, f);
        used += n;
        if (n == 0) break;
    }
    fclose(f);
    *size = used;
    return data;
}

static void write_all(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    CHECK_MSG(f && fwrite(data, 1, size, f) == size, "cannot write %s", path);
    if (f) fclose(f);
}

/* Entries of `dir` besides "." and "..": a failed or skipped save must leave no temporary file. */
static int count_entries(const char *where)
{
    DIR *d = opendir(where);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

static void remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        for (struct dirent *e; d && (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char child[512];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            remove_tree(child);
        }
        if (d) closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

/* ---- contexts and the forward ---------------------------------------------------------------- */

static vkattn_context *open_ctx(vkattn_context_desc desc, vkattn_status expected)
{
    desc.validation = VKATTN_VALIDATION_ON;
    vkattn_context *ctx = NULL;
    vkattn_error error = {0};
    vkattn_status s = vkattn_context_create(&desc, &ctx, &error);
    CHECK_MSG(s == expected, "context create gave %s (%s), expected %s", vkattn_status_name(s), error.message,
              vkattn_status_name(expected));
    if (s != VKATTN_OK && s == expected) CHECK_MSG(error.message[0], "context create failed without a message");
    return ctx;
}

static vkattn_context *open_path(const char *path)
{
    return open_ctx((vkattn_context_desc){.pipeline_cache_path = path}, VKATTN_OK);
}

static vkattn_pipeline_cache_info cache_info(vkattn_context *ctx)
{
    vkattn_pipeline_cache_info info = {0};
    CHECK_STATUS(vkattn_context_pipeline_cache_info(ctx, &info), VKATTN_OK);
    return info;
}

/* Checks the cache's state and that its note contains `word`. */
#define CHECK_CACHE(ctx, want_state, word)                                                         \
    do {                                                                                           \
        vkattn_pipeline_cache_info i_ = cache_info(ctx);                                           \
        CHECK_MSG(i_.state == (want_state), "state %d, expected %d (note: %s)", (int)i_.state,     \
                  (int)(want_state), i_.note);                                                     \
        CHECK_MSG(strstr(i_.note, word) != NULL, "note \"%s\" lacks \"%s\"", i_.note, word);       \
    } while (0)

/* Tolerance of the GPU-vs-CPU table for fp32 rows: NMSE 1e-10, max-abs 1e-5 x max(1, max|ref|). */
static int matches_reference(const float *got, const float *want, size_t n, const char *what)
{
    test_error e = test_compare(got, want, n);
    double tol = 1e-5 * (e.ref_max > 1 ? e.ref_max : 1);
    int ok = e.nonfinite == 0 && e.nmse <= 1e-10 && e.max_abs <= tol;
    CHECK_MSG(ok, "%s: max-abs %.3g (tol %.3g), NMSE %.3g (tol 1e-10), %zu non-finite differ", what, e.max_abs, tol,
              e.nmse, e.nonfinite);
    return ok;
}

/* A tiny forward on the fused and the unfused path (with attention weights), so that a handful of
 * kernels are compiled, each checked against vkattn_reference_forward. 1 if all matched. */
static int forward_matches(vkattn_context *ctx, const char *what)
{
    enum { B = 2, L = 5, E = 16, H = 2 };
    vkattn_layer_desc d = {.embed_dim = E, .num_heads = H};
    test_weights tw;
    test_weights_make(&tw, &d, 11);
    float x[B * L * E], y[B * L * E], ref[B * L * E], w[B * H * L * L], wref[B * H * L * L];
    test_rng rng = test_rng_make(3);
    test_fill(&rng, x, B * L * E, 1.0f);
    vkattn_host_forward_desc f = {.batch = B, .query_len = L, .query = x, .output = ref, .causal = 1,
                                  .attn_weights = wref};
    int ok = 1;
    CHECK_STATUS(vkattn_reference_forward(&d, &tw.w, &f, NULL), VKATTN_OK);
    vkattn_layer *layer = NULL;
    vkattn_status s = vkattn_layer_create(ctx, &d, &tw.w, &layer);
    CHECK_MSG(s == VKATTN_OK, "%s: layer: %s", what, vkattn_context_last_error(ctx));
    for (int p = 0; p < 2 && layer; p++) {
        f.path = p ? VKATTN_PATH_UNFUSED : VKATTN_PATH_FUSED;
        f.output = y;
        f.attn_weights = p ? w : NULL;
        s = vkattn_forward_host(layer, &f);
        CHECK_MSG(s == VKATTN_OK, "%s: %s forward: %s", what, vkattn_path_name(f.path), vkattn_context_last_error(ctx));
        char name[96];
        snprintf(name, sizeof name, "%s, %s path", what, vkattn_path_name(f.path));
        ok &= s == VKATTN_OK && matches_reference(y, ref, B * L * E, name);
        if (p) ok &= matches_reference(w, wref, B * H * L * L, name);
    }
    vkattn_layer_destroy(layer);
    test_weights_free(&tw);
    return ok && layer;
}

/* Fails the test on any validation message, then destroys the context (which saves). */
static void finish(vkattn_context *ctx)
{
    if (ctx) gpu_test_finish_context(ctx);
}

/* ---- valid and foreign data ------------------------------------------------------------------ */

static const VkPhysicalDeviceProperties *props_of(vkattn_context *ctx) { return &ctx->dev.caps.props; }

/* 1 if the file at `path` passes every check for `props`. */
static int file_passes(const char *path, const VkPhysicalDeviceProperties *props)
{
    size_t size = 0;
    uint8_t *data = read_all(path, &size);
    char why[400] = "";
    int ok = data && vka_pipeline_cache_check(data, size, props, why, sizeof why);
    CHECK_MSG(ok, "%s: not a valid cache for this device: %s", path, data ? why : "cannot read it");
    free(data);
    return ok;
}

/* Rewrites vkattn's checksum after the Vulkan data was edited, so that only the edit shows. */
static void reseal(uint8_t *data, size_t size)
{
    const size_t h = VKA_PIPELINE_CACHE_HEADER_BYTES;
    uint64_t sum = vka_pipeline_cache_checksum(data + h, size - h);
    for (int i = 0; i < 8; i++) data[24 + i] = (uint8_t)(sum >> 8 * i);
}

static void test_round_trip(void)
{
    char path[320];
    path_in(path, sizeof path, "round_trip.bin");
    vkattn_context *a = open_path(path);
    if (!a) return;
    CHECK_CACHE(a, VKATTN_PIPELINE_CACHE_NEW_FILE, "does not exist yet");
    CHECK(cache_info(a).has_file == 1 && cache_info(a).pipelines == 0);
    forward_matches(a, "first context");
    CHECK(cache_info(a).pipelines > 0);
    size_t vk_bytes = 0;
    CHECK_STATUS(vkattn_context_pipeline_cache_data(a, NULL, &vk_bytes), VKATTN_OK);
    printf("  %u pipelines, %zu bytes of pipeline cache data (%zu of them the driver's)\n", cache_info(a).pipelines,
           vk_bytes, vk_bytes - VKA_PIPELINE_CACHE_HEADER_BYTES);
    finish(a);

    struct stat before, after;
    CHECK_MSG(stat(path, &before) == 0, "destroy did not write %s", path);
    vkattn_context *b = open_path(path);
    if (!b) return;
    CHECK(file_passes(path, props_of(b)));
    vkattn_pipeline_cache_info info = cache_info(b);
    CHECK_CACHE(b, VKATTN_PIPELINE_CACHE_LOADED, "loaded");
    CHECK_MSG(info.loaded_bytes == (size_t)before.st_size, "loaded %zu bytes of a %lld-byte file", info.loaded_bytes,
              (long long)before.st_size);
    forward_matches(b, "second context, cache loaded");
    finish(b);
    /* The same kernels again change nothing: the file is not rewritten (a rewrite is a new inode). */
    CHECK(stat(path, &after) == 0 && after.st_ino == before.st_ino && after.st_mtime == before.st_mtime);
    CHECK_MSG(count_entries(dir) == 1, "%d entries in %s, expected only the cache file", count_entries(dir), dir);
    unlink(path);
}

/* A valid file, written once by a context, and the device it is valid for. */
typedef struct valid_file {
    uint8_t *bytes;
    size_t size;
    VkPhysicalDeviceProperties props;
} valid_file;

static int write_valid_file(const char *path, valid_file *out)
{
    vkattn_context *ctx = open_path(path);
    if (!ctx) return 0;
    forward_matches(ctx, "writer");
    out->props = *props_of(ctx);
    finish(ctx);
    out->bytes = read_all(path, &out->size);
    CHECK(out->bytes && out->size >= VKA_PIPELINE_CACHE_HEADER_BYTES + 32);
    return out->bytes != NULL;
}

/* Writes an edited copy of a valid file: the next context ignores it, saying `word`, and still
 * computes right; its destroy then leaves a file that passes the checks again. */
/* A valid file edited: ignored with `word` in the note, the forward right; then the context wrote
 * a valid file over it, or (`kept`: it no longer starts with vkattn's magic, so it may be anyone's
 * file) left it exactly as it was, and an explicit save says so. */
static void check_edited(const valid_file *valid, const char *label, void (*edit)(uint8_t *, size_t *),
                         const char *word, int kept)
{
    char path[320];
    path_in(path, sizeof path, "edited.bin");
    size_t size = valid->size;
    uint8_t *data = malloc(size + 64); /* room to append */
    if (!data) return;
    memcpy(data, valid->bytes, size);
    edit(data, &size);
    write_all(path, data, size);
    vkattn_context *ctx = open_path(path);
    if (ctx) {
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_IGNORED, word);
        CHECK(cache_info(ctx).loaded_bytes == 0);
        printf("  %-22s %s\n", label, cache_info(ctx).note);
        forward_matches(ctx, label);
        if (kept) {
            CHECK_STATUS(vkattn_context_save_pipeline_cache(ctx), VKATTN_ERROR_IO);
            CHECK_MSG(strstr(vkattn_context_last_error(ctx), "not vkattn pipeline cache data: it is not written over"),
                      "%s", vkattn_context_last_error(ctx));
        }
        finish(ctx);
    }
    if (kept) {
        size_t after_size = 0;
        uint8_t *after = read_all(path, &after_size);
        CHECK_MSG(after && after_size == size && memcmp(after, data, size) == 0, "%s: the file was written over", label);
        free(after);
    } else {
        file_passes(path, &valid->props); /* the context wrote a valid file over the bad one */
    }
    free(data);
    unlink(path);
}

static void edit_vendor(uint8_t *d, size_t *n) { d[VKA_PIPELINE_CACHE_HEADER_BYTES + 8] ^= 0x01, reseal(d, *n); }
static void edit_device(uint8_t *d, size_t *n) { d[VKA_PIPELINE_CACHE_HEADER_BYTES + 12] ^= 0x80, reseal(d, *n); }
static void edit_uuid(uint8_t *d, size_t *n) { d[VKA_PIPELINE_CACHE_HEADER_BYTES + 16 + 15] ^= 0x40, reseal(d, *n); }
static void edit_header_version(uint8_t *d, size_t *n) { d[VKA_PIPELINE_CACHE_HEADER_BYTES + 4] = 2, reseal(d, *n); }
static void edit_header_size(uint8_t *d, size_t *n) { d[VKA_PIPELINE_CACHE_HEADER_BYTES] = 16, reseal(d, *n); }
static void edit_body_byte(uint8_t *d, size_t *n) { d[*n - 1] ^= 0x20; }
static void edit_truncate(uint8_t *d, size_t *n) { (void)d, *n -= 7; }
static void edit_append(uint8_t *d, size_t *n) { memset(d + *n, 0, 5), *n += 5; }
static void edit_magic(uint8_t *d, size_t *n) { (void)n, d[0] = 'X'; }
static void edit_format(uint8_t *d, size_t *n) { (void)n, d[8] = 9; }

static void test_foreign_and_corrupt(void)
{
    char path[320];
    path_in(path, sizeof path, "valid.bin");
    valid_file v = {0};
    if (!write_valid_file(path, &v)) return;
    check_edited(&v, "vendorID", edit_vendor, "made by another device", 0);
    check_edited(&v, "deviceID", edit_device, "made by another device", 0);
    check_edited(&v, "pipelineCacheUUID", edit_uuid, "made by another driver", 0);
    check_edited(&v, "headerVersion", edit_header_version, "headerVersion 2", 0);
    check_edited(&v, "headerSize", edit_header_size, "headerSize 16", 0);
    check_edited(&v, "a flipped data byte", edit_body_byte, "checksum", 0);
    check_edited(&v, "7 bytes cut off", edit_truncate, "truncated", 0);
    check_edited(&v, "5 bytes appended", edit_append, "corrupt: ", 0);
    check_edited(&v, "magic", edit_magic, "not vkattn pipeline cache data", 1);
    check_edited(&v, "format version", edit_format, "format version 9", 0);
    free(v.bytes);
    unlink(path);
}

/* A file that cannot be used: ignored with `word` in the note, the forward right, and, since this
 * context compiles nothing, left exactly as it was. */
static void check_unused_file(const char *label, const char *path, const char *word)
{
    size_t before_size = 0, after_size = 0;
    uint8_t *before = read_all(path, &before_size);
    vkattn_context *ctx = open_path(path);
    if (!ctx) {
        free(before);
        return;
    }
    CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_IGNORED, word);
    printf("  %-22s %s\n", label, cache_info(ctx).note);
    CHECK_STATUS(vkattn_context_save_pipeline_cache(ctx), VKATTN_OK); /* nothing compiled: nothing to write */
    finish(ctx);
    uint8_t *after = read_all(path, &after_size);
    CHECK_MSG(before_size == after_size && (!before_size || memcmp(before, after, before_size) == 0),
              "%s: the unused file changed", label);
    free(before), free(after);
}

static void test_bad_files(void)
{
    char path[320];
    path_in(path, sizeof path, "bad.bin");
    write_all(path, "", 0);
    check_unused_file("empty file", path, "empty");
    uint8_t garbage[1000];
    test_rng rng = test_rng_make(9);
    for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (uint8_t)(test_rng_float(&rng) * 127 + 128);
    write_all(path, garbage, sizeof garbage);
    check_unused_file("garbage", path, "not vkattn pipeline cache data");
    /* ... and one whose context compiles: another program's file (a mistyped path) is never
     * written over (it was replaced by the cache before an outside review) */
    vkattn_context *user = open_path(path);
    if (user) {
        CHECK_CACHE(user, VKATTN_PIPELINE_CACHE_IGNORED, "it is never written over");
        forward_matches(user, "garbage as the path");
        CHECK_STATUS(vkattn_context_save_pipeline_cache(user), VKATTN_ERROR_IO);
        finish(user);
    }
    size_t kept_size = 0;
    uint8_t *kept = read_all(path, &kept_size);
    CHECK_MSG(kept && kept_size == sizeof garbage && memcmp(kept, garbage, sizeof garbage) == 0,
              "another program's file was written over");
    free(kept);
    write_all(path, "VKATTNPC\x01\x00", 10);
    check_unused_file("10 bytes", path, "shorter than vkattn's 32-byte header");
    /* Larger than any sane cache: a sparse file, refused before anything is read. */
    FILE *f = fopen(path, "wb");
    if (f) fclose(f);
    CHECK(truncate(path, (off_t)VKA_PIPELINE_CACHE_MAX_BYTES + 1) == 0);
    vkattn_context *ctx = open_path(path);
    if (ctx) {
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_IGNORED, "256 MiB");
        forward_matches(ctx, "a 256 MiB file as the path"); /* a model's weights, say: never written over */
        finish(ctx);
    }
    struct stat big;
    CHECK(stat(path, &big) == 0 && (unsigned long long)big.st_size == VKA_PIPELINE_CACHE_MAX_BYTES + 1);
    unlink(path);

    /* A directory as the path: a note at creation; it is never written over. */
    char sub[320];
    path_in(sub, sizeof sub, "a_directory");
    CHECK(mkdir(sub, 0755) == 0);
    ctx = open_path(sub);
    if (ctx) {
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_IGNORED, "not a regular file");
        forward_matches(ctx, "directory as the path");
        vkattn_status s = vkattn_context_save_pipeline_cache(ctx);
        CHECK_STATUS(s, VKATTN_ERROR_IO);
        const char *msg = vkattn_context_last_error(ctx);
        CHECK_MSG(strstr(msg, sub) && strstr(msg, "not a regular file"), "message \"%s\"", msg);
        finish(ctx); /* tries again, silently */
    }
    struct stat st;
    CHECK(stat(sub, &st) == 0 && S_ISDIR(st.st_mode) && count_entries(sub) == 0);
    CHECK_MSG(count_entries(dir) == 1, "%d entries in %s: a temporary file was left", count_entries(dir), dir);
    rmdir(sub);

    /* A FIFO as the path (issue 18): opening it for reading used to wait for a writer forever. Now
     * it is a note, the forward runs, and the FIFO is neither read nor replaced by a file. The
     * alarm turns a hang back into a failure instead of a stuck test. */
    char fifo[320];
    path_in(fifo, sizeof fifo, "a_fifo");
    CHECK(mkfifo(fifo, 0644) == 0);
    alarm(120);
    ctx = open_path(fifo);
    alarm(0);
    if (ctx) {
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_IGNORED, "not a regular file");
        printf("  %-22s %s\n", "FIFO", cache_info(ctx).note);
        forward_matches(ctx, "FIFO as the path");
        CHECK_STATUS(vkattn_context_save_pipeline_cache(ctx), VKATTN_ERROR_IO);
        CHECK_MSG(strstr(vkattn_context_last_error(ctx), "not a regular file"), "message \"%s\"",
                  vkattn_context_last_error(ctx));
        finish(ctx);
    }
    CHECK(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK_MSG(count_entries(dir) == 1, "%d entries in %s: a temporary file was left", count_entries(dir), dir);
    unlink(fifo);

    /* A path whose directory does not exist: said at creation, not "written when the context saves". */
    path_in(path, sizeof path, "no_such_directory/cache.bin");
    ctx = open_path(path);
    if (ctx) {
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_IGNORED, "directory does not exist");
        printf("  %-22s %s\n", "missing directory", cache_info(ctx).note);
        forward_matches(ctx, "missing directory");
        CHECK_STATUS(vkattn_context_save_pipeline_cache(ctx), VKATTN_ERROR_IO);
        finish(ctx);
    }

    /* Unreadable: only where permissions bind (not as root, which the CI containers are). */
    path_in(path, sizeof path, "unreadable.bin");
    write_all(path, "VKATTNPC", 8);
    chmod(path, 0);
    FILE *probe = fopen(path, "rb");
    if (probe) {
        fclose(probe);
        printf("  unreadable file        skipped: permissions do not bind this user (root)\n");
    } else {
        check_unused_file("unreadable file", path, "cannot open it");
    }
    unlink(path);
}

/* A path in a directory that cannot be written: a note at creation, VKATTN_ERROR_IO from an
 * explicit save, nothing from destroy, and the valid file that is there stays as it was. */
static void test_unwritable(void)
{
    char blocker[320], path[360];
    path_in(blocker, sizeof blocker, "not_a_directory");
    write_all(blocker, "x", 1);
    snprintf(path, sizeof path, "%s/cache.bin", blocker); /* its "directory" is a regular file */
    vkattn_context *ctx = open_path(path);
    if (ctx) {
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_IGNORED, "Not a directory");
        forward_matches(ctx, "unwritable path");
        CHECK_STATUS(vkattn_context_save_pipeline_cache(ctx), VKATTN_ERROR_IO);
        const char *msg = vkattn_context_last_error(ctx);
        CHECK_MSG(strstr(msg, path) && strstr(msg, "temporary file"), "message \"%s\"", msg);
        CHECK(forward_matches(ctx, "after the failed save")); /* the context goes on */
        finish(ctx);
    }
    unlink(blocker);

    /* A read-only directory holding a valid file from an earlier run (binds only without root). */
    char ro[320];
    path_in(ro, sizeof ro, "read_only");
    mkdir(ro, 0755);
    snprintf(path, sizeof path, "%s/cache.bin", ro);
    ctx = open_path(path);
    if (ctx) forward_matches(ctx, "writer"), finish(ctx);
    size_t before_size = 0, after_size = 0;
    uint8_t *before = read_all(path, &before_size);
    chmod(ro, 0555);
    if (access(ro, W_OK) == 0) {
        printf("  read-only directory    skipped: permissions do not bind this user (root)\n");
    } else if (before) {
        /* Foreign data, so that this context's save wants to replace it. */
        before[VKA_PIPELINE_CACHE_HEADER_BYTES + 8] ^= 1;
        reseal(before, before_size);
        chmod(ro, 0755), write_all(path, before, before_size), chmod(ro, 0555);
        ctx = open_path(path);
        if (ctx) {
            CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_IGNORED, "another device");
            forward_matches(ctx, "read-only directory");
            CHECK_STATUS(vkattn_context_save_pipeline_cache(ctx), VKATTN_ERROR_IO);
            finish(ctx);
        }
        uint8_t *after = read_all(path, &after_size);
        CHECK(after && after_size == before_size && memcmp(before, after, before_size) == 0);
        CHECK(count_entries(ro) == 1);
        free(after);
    }
    chmod(ro, 0755);
    free(before);
    remove_tree(ro);
}

/* ---- the data through the caller, the environment variable, arguments ------------------------- */

static void test_data_round_trip(void)
{
    vkattn_context *a = open_ctx((vkattn_context_desc){0}, VKATTN_OK);
    if (!a) return;
    CHECK_CACHE(a, VKATTN_PIPELINE_CACHE_NONE, "none");
    CHECK(cache_info(a).has_file == 0);
    forward_matches(a, "data writer");
    size_t size = 0;
    CHECK_STATUS(vkattn_context_pipeline_cache_data(a, NULL, &size), VKATTN_OK);
    CHECK(size >= VKA_PIPELINE_CACHE_HEADER_BYTES + 32);
    uint8_t *data = malloc(size + 16);
    size_t small = size - 1;
    CHECK_STATUS(vkattn_context_pipeline_cache_data(a, data, &small), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(small == size - 1 && strstr(vkattn_context_last_error(a), "needs"));
    CHECK_STATUS(vkattn_context_pipeline_cache_data(a, data, NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    size_t got = size + 16;
    CHECK_STATUS(vkattn_context_pipeline_cache_data(a, data, &got), VKATTN_OK);
    CHECK(got == size && memcmp(data, "VKATTNPC", 8) == 0);
    CHECK(vka_pipeline_cache_check(data, got, props_of(a), (char[200]){0}, 200));
    CHECK_STATUS(vkattn_context_save_pipeline_cache(a), VKATTN_OK); /* no file: nothing to do */
    finish(a);

    vkattn_context_desc with_data = {.pipeline_cache_data = data, .pipeline_cache_size = got};
    vkattn_context *b = open_ctx(with_data, VKATTN_OK);
    if (b) {
        CHECK_CACHE(b, VKATTN_PIPELINE_CACHE_LOADED, "pipeline_cache_data");
        CHECK(cache_info(b).loaded_bytes == got && cache_info(b).has_file == 0);
        forward_matches(b, "data reader");
        finish(b);
    }
    data[VKA_PIPELINE_CACHE_HEADER_BYTES + 16] ^= 1;
    reseal(data, got);
    b = open_ctx(with_data, VKATTN_OK);
    if (b) {
        CHECK_CACHE(b, VKATTN_PIPELINE_CACHE_IGNORED, "ignored pipeline_cache_data: made by another driver");
        forward_matches(b, "foreign data");
        finish(b);
    }
    with_data.pipeline_cache_size = 20;
    b = open_ctx(with_data, VKATTN_OK);
    if (b) {
        CHECK_CACHE(b, VKATTN_PIPELINE_CACHE_IGNORED, "truncated");
        finish(b);
    }
    free(data);
    CHECK_MSG(count_entries(dir) == 0, "the data path wrote files");
}

static void test_arguments_and_environment(void)
{
    char path[320], env_path[320];
    path_in(path, sizeof path, "desc.bin");
    path_in(env_path, sizeof env_path, "env.bin");
    uint8_t blob[64] = {0};
    open_ctx((vkattn_context_desc){.pipeline_cache_path = path, .pipeline_cache_data = blob, .pipeline_cache_size = 64},
             VKATTN_ERROR_INVALID_ARGUMENT);
    open_ctx((vkattn_context_desc){.pipeline_cache_data = blob}, VKATTN_ERROR_INVALID_ARGUMENT);
    open_ctx((vkattn_context_desc){.pipeline_cache_size = 64}, VKATTN_ERROR_INVALID_ARGUMENT);
    vkattn_pipeline_cache_info info;
    CHECK_STATUS(vkattn_context_pipeline_cache_info(NULL, &info), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(vkattn_context_save_pipeline_cache(NULL), VKATTN_ERROR_INVALID_ARGUMENT);
    size_t size;
    CHECK_STATUS(vkattn_context_pipeline_cache_data(NULL, NULL, &size), VKATTN_ERROR_INVALID_ARGUMENT);

    /* VKATTN_PIPELINE_CACHE names the file when the desc gives neither path nor data. */
    setenv("VKATTN_PIPELINE_CACHE", env_path, 1);
    vkattn_context *ctx = open_ctx((vkattn_context_desc){0}, VKATTN_OK);
    if (ctx) {
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_NEW_FILE, env_path);
        forward_matches(ctx, "env");
        finish(ctx);
    }
    CHECK_MSG(access(env_path, F_OK) == 0, "the context did not write VKATTN_PIPELINE_CACHE's file");
    ctx = open_path(path); /* the desc's path wins */
    if (ctx) {
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_NEW_FILE, path);
        finish(ctx);
    }
    ctx = open_ctx((vkattn_context_desc){.pipeline_cache_data = blob, .pipeline_cache_size = 64}, VKATTN_OK);
    if (ctx) { /* data wins */
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_IGNORED, "pipeline_cache_data");
        finish(ctx);
    }
    setenv("VKATTN_PIPELINE_CACHE", "", 1);
    ctx = open_ctx((vkattn_context_desc){0}, VKATTN_OK);
    if (ctx) {
        CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_NONE, "none");
        finish(ctx);
    }
    unsetenv("VKATTN_PIPELINE_CACHE");
    CHECK_MSG(access(path, F_OK) != 0, "a context that compiled nothing wrote %s", path);
    unlink(env_path);
}

/* ---- atomic replacement ------------------------------------------------------------------------ */

typedef struct saver {
    vkattn_context *ctx;
    int rounds, failures;
} saver;

/* Saves again and again; each round forgets what the file holds, so each one really writes. */
static void *save_loop(void *arg)
{
    saver *s = arg;
    for (int i = 0; i < s->rounds; i++) {
        s->ctx->pipelines.dirty = 1;
        s->ctx->pipelines.file_known = 0;
        s->failures += vkattn_context_save_pipeline_cache(s->ctx) != VKATTN_OK;
    }
    return NULL;
}

/* Two contexts save one path in a loop from two threads while this one reads it: every read must
 * see a whole, valid file. */
static void test_concurrent_saves(void)
{
    char path[320];
    path_in(path, sizeof path, "shared.bin");
    saver s[2] = {{open_path(path), 300, 0}, {open_path(path), 300, 0}};
    if (!s[0].ctx || !s[1].ctx) {
        finish(s[0].ctx), finish(s[1].ctx);
        return;
    }
    forward_matches(s[0].ctx, "saver 1");
    forward_matches(s[1].ctx, "saver 2");
    CHECK_STATUS(vkattn_context_save_pipeline_cache(s[0].ctx), VKATTN_OK);
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, save_loop, &s[i]);
    int reads = 0, bad = 0;
    char why[400];
    for (; reads < 2000; reads++) {
        size_t size = 0;
        uint8_t *data = read_all(path, &size);
        if (!data || !vka_pipeline_cache_check(data, size, props_of(s[0].ctx), why, sizeof why)) {
            if (!bad++) fprintf(stderr, "read %d: %s\n", reads, data ? why : "no file");
        }
        free(data);
    }
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    CHECK_MSG(bad == 0, "%d of %d reads saw a torn or missing file", bad, reads);
    CHECK(s[0].failures == 0 && s[1].failures == 0);
    printf("  2 x %d saves, %d reads: every read whole\n", s[0].rounds, reads);
    finish(s[0].ctx), finish(s[1].ctx);
    CHECK_MSG(count_entries(dir) == 1, "%d entries in %s: temporary files were left", count_entries(dir), dir);
    unlink(path);
}

/* ---- failure injection (label faults) --------------------------------------------------------- */

static vkattn_context *open_with_faults(const vkattn_context_desc *desc, const vka_faults *faults, vkattn_status *s)
{
    vkattn_context *ctx = NULL;
    *s = vka_context_create_with_faults(desc, faults, &ctx, NULL);
    return ctx;
}

/* Context creation that loads a valid file (or the same data from memory): each host allocation
 * and Vulkan call failed in turn gives the right status, no context and no leak. */
static void walk_load(const char *label, const vkattn_context_desc *desc)
{
    vkattn_status s;
    vkattn_context *ctx = open_with_faults(desc, NULL, &s);
    CHECK_STATUS(s, VKATTN_OK);
    if (!ctx) return;
    CHECK_CACHE(ctx, VKATTN_PIPELINE_CACHE_LOADED, "loaded");
    uint64_t host = ctx->dev.faults.host_calls, vk = ctx->dev.faults.vk_calls;
    vkattn_context_destroy(ctx);
    int bad = 0;
    for (uint64_t n = 1; n <= host + vk; n++) {
        vka_faults f = {0};
        if (n <= host) f.host_fail_at = n;
        else f.vk_fail_at = n - host;
        ctx = open_with_faults(desc, &f, &s);
        vkattn_status want = n <= host ? VKATTN_ERROR_OUT_OF_HOST_MEMORY : VKATTN_ERROR_OUT_OF_DEVICE_MEMORY;
        if (s != want || ctx)
            bad++, fprintf(stderr, "%s: fault at point %llu gave %s\n", label, (unsigned long long)n,
                           vkattn_status_name(s));
        vkattn_context_destroy(ctx);
    }
    CHECK_MSG(bad == 0, "%s: %d failure points misbehaved", label, bad);
    printf("  %-26s %3llu host allocation points, %3llu Vulkan call points\n", label, (unsigned long long)host,
           (unsigned long long)vk);
}

/* Saving after a forward: each point of vkattn_context_save_pipeline_cache failed in turn (and
 * every Vulkan call point also as device loss) gives its status with a message, leaves no file
 * and no temporary file, and the next save succeeds (or, after device loss, says DEVICE_LOST).
 * Then the same points fail inside vkattn_context_destroy's own save: no leak, no torn file. */
static void walk_save(void)
{
    char path[320];
    path_in(path, sizeof path, "faults.bin");
    vkattn_context_desc desc = {.pipeline_cache_path = path};
    vkattn_status s;
    vkattn_context *ctx = open_with_faults(&desc, NULL, &s);
    if (!ctx) return;
    forward_matches(ctx, "counting");
    vka_context_set_faults(ctx, NULL);
    CHECK_STATUS(vkattn_context_save_pipeline_cache(ctx), VKATTN_OK);
    uint64_t host = ctx->dev.faults.host_calls, vk = ctx->dev.faults.vk_calls;
    gpu_test_finish_context(ctx);
    int bad = 0;
    for (int kind = 0; kind < 4; kind++) {
        uint64_t points = kind == 0 ? host : vk;
        for (uint64_t n = 1; kind < 3 && n <= points; n++) {
            unlink(path);
            if (!(ctx = open_with_faults(&desc, NULL, &s))) continue;
            vka_context_set_faults(ctx, NULL);
            forward_matches(ctx, "save walk");
            vka_faults f = {0};
            if (kind == 0) f.host_fail_at = n;
            else f.vk_fail_at = n, f.vk_result = kind == 2 ? VK_ERROR_DEVICE_LOST : 0;
            vka_context_set_faults(ctx, &f);
            vkattn_status want = kind == 0 ? VKATTN_ERROR_OUT_OF_HOST_MEMORY
                                 : kind == 1 ? VKATTN_ERROR_OUT_OF_DEVICE_MEMORY
                                             : VKATTN_ERROR_DEVICE_LOST;
            s = vkattn_context_save_pipeline_cache(ctx);
            bad += s != want || !*vkattn_context_last_error(ctx) || access(path, F_OK) == 0 || count_entries(dir) != 0;
            if (s != want)
                fprintf(stderr, "save: fault %d at %llu gave %s\n", kind, (unsigned long long)n, vkattn_status_name(s));
            vka_context_set_faults(ctx, NULL);
            s = vkattn_context_save_pipeline_cache(ctx);
            bad += s != (kind == 2 ? VKATTN_ERROR_DEVICE_LOST : VKATTN_OK);
            if (kind != 2) bad += !file_passes(path, props_of(ctx));
            gpu_test_finish_context(ctx);
        }
        /* kind 3: the failure inside destroy's save, which cannot report it. */
        for (uint64_t n = 1; kind == 3 && n <= host + vk; n++) {
            unlink(path);
            if (!(ctx = open_with_faults(&desc, NULL, &s))) continue;
            vka_context_set_faults(ctx, NULL);
            forward_matches(ctx, "destroy walk");
            vka_faults f = {0};
            if (n <= host) f.host_fail_at = n;
            else f.vk_fail_at = n - host;
            vka_context_set_faults(ctx, &f);
            bad += vkattn_context_validation_messages(ctx) != 0;
            vkattn_context_destroy(ctx);
            bad += access(path, F_OK) == 0 || count_entries(dir) != 0; /* every point fails before the rename */
        }
    }
    CHECK_MSG(bad == 0, "save: %d failure points misbehaved", bad);
    printf("  %-26s %3llu host allocation points, %3llu Vulkan call points (also as device loss, and inside destroy)\n",
           "save after a forward", (unsigned long long)host, (unsigned long long)vk);
    unlink(path);
}

static void test_faults(void)
{
    char path[320];
    path_in(path, sizeof path, "load.bin");
    vkattn_context *ctx = open_path(path);
    if (!ctx) return;
    forward_matches(ctx, "writer");
    size_t size = 0;
    vkattn_context_pipeline_cache_data(ctx, NULL, &size);
    uint8_t *data = malloc(size);
    vkattn_context_pipeline_cache_data(ctx, data, &size);
    finish(ctx);
    walk_load("create, loading a file", &(vkattn_context_desc){.pipeline_cache_path = path});
    vkattn_context_desc with_data = {.pipeline_cache_data = data, .pipeline_cache_size = size};
    walk_load("create, loading data", &with_data);
    free(data);
    unlink(path);
    walk_save();
}

/* ---- measure: context creation + first forward, without and with the file --------------------- */

typedef struct measure_case {
    const char *name;
    uint32_t length, embed, heads;
    vkattn_path path;
} measure_case;

/* In this (fresh) process: context creation, layer creation and the first forward, in ms. */
static double first_forward_ms(const measure_case *c, const char *cache_path, size_t *cache_bytes)
{
    double t0 = test_now_s();
    vkattn_context_desc desc = {.pipeline_cache_path = cache_path, .validation = VKATTN_VALIDATION_OFF};
    vkattn_context *ctx = NULL;
    if (vkattn_context_create(&desc, &ctx, NULL) != VKATTN_OK) return -1;
    vkattn_layer_desc d = {.embed_dim = c->embed, .num_heads = c->heads};
    test_weights tw;
    test_weights_make(&tw, &d, 1);
    size_t n = (size_t)c->length * c->embed;
    float *x = calloc(n, sizeof *x), *y = malloc(n * sizeof *y);
    vkattn_layer *layer = NULL;
    vkattn_host_forward_desc f = {.batch = 1, .query_len = c->length, .query = x, .output = y, .path = c->path};
    int ok = x && y && vkattn_layer_create(ctx, &d, &tw.w, &layer) == VKATTN_OK &&
             vkattn_forward_host(layer, &f) == VKATTN_OK;
    double ms = (test_now_s() - t0) * 1e3;
    vkattn_context_pipeline_cache_data(ctx, NULL, cache_bytes);
    vkattn_layer_destroy(layer);
    vkattn_context_destroy(ctx); /* writes the file on the cold run; not timed */
    free(x), free(y);
    test_weights_free(&tw);
    return ok ? ms : -1;
}

/* Runs first_forward_ms in a child process, so each run starts with nothing compiled in memory. */
static double in_child(const measure_case *c, const char *cache_path, size_t *cache_bytes)
{
    int fds[2];
    if (pipe(fds) != 0) return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        double r[2];
        size_t bytes = 0;
        r[0] = first_forward_ms(c, cache_path, &bytes);
        r[1] = (double)bytes;
        _exit(write(fds[1], r, sizeof r) == sizeof r ? 0 : 1);
    }
    close(fds[1]);
    double r[2] = {-1, 0};
    if (pid < 0 || read(fds[0], r, sizeof r) != sizeof r) r[0] = -1;
    close(fds[0]);
    if (pid > 0) waitpid(pid, NULL, 0);
    *cache_bytes = (size_t)r[1];
    return r[0];
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Usage: test_pipeline_cache measure [REPEATS]. Run with MESA_SHADER_CACHE_DISABLE=true, or
 * Mesa's own disk cache makes every run warm. Cold: no file (each run deletes it first); warm: the
 * file the cold run just wrote. Cold and warm alternate, so both see the same machine load. */
static int measure(int repeats)
{
    const measure_case cases[] = {
        {"default demo shape, fused", 128, 256, 8, VKATTN_PATH_FUSED},
        {"default demo shape, unfused", 128, 256, 8, VKATTN_PATH_UNFUSED},
        {"D = 128, fused", 128, 512, 4, VKATTN_PATH_FUSED},
        {"D = 128, unfused", 128, 512, 4, VKATTN_PATH_UNFUSED},
    };
    const char *mesa = getenv("MESA_SHADER_CACHE_DISABLE");
    printf("MESA_SHADER_CACHE_DISABLE=%s, median of %d runs, each in a new process\n",
           mesa ? mesa : "(unset: Mesa's own disk cache is on)", repeats);
    printf("%-30s %10s %10s %9s %s\n", "case (B = 1, L = S = 128)", "cold ms", "warm ms", "warm/cold",
           "cache data bytes");
    char path[320];
    path_in(path, sizeof path, "measure.bin");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double cold[32], warm[32];
        size_t bytes = 0;
        int n = 0;
        for (; n < repeats && n < 32; n++) {
            unlink(path);
            cold[n] = in_child(&cases[i], path, &bytes);
            warm[n] = in_child(&cases[i], path, &bytes);
            if (cold[n] < 0 || warm[n] < 0) return fprintf(stderr, "%s: a run failed\n", cases[i].name), 1;
        }
        qsort(cold, (size_t)n, sizeof *cold, compare_doubles);
        qsort(warm, (size_t)n, sizeof *warm, compare_doubles);
        printf("%-30s %10.1f %10.1f %9.2f %zu\n", cases[i].name, cold[n / 2], warm[n / 2],
               warm[n / 2] / cold[n / 2], bytes);
        fflush(stdout);
    }
    unlink(path);
    /* Only now does this process load the driver: each child above started without it. */
    vkattn_context *ctx = NULL;
    vkattn_device_info info = {0};
    if (vkattn_context_create(&(vkattn_context_desc){.validation = VKATTN_VALIDATION_OFF}, &ctx, NULL) == VKATTN_OK)
        vkattn_context_device(ctx, &info);
    vkattn_context_destroy(ctx);
    printf("device: %s (%s %s)\n", info.name, info.driver_name, info.driver_info);
    return 0;
}

/* Usage: test_pipeline_cache [faults | measure [REPEATS]] (no argument: every test but the
 * fault walks). */
int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/vkattn_pipeline_cache_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return fprintf(stderr, "cannot create a temporary directory\n"), 1;
    int rc;
    if (!strcmp(mode, "measure")) {
        rc = measure(argc > 2 ? atoi(argv[2]) : 5);
    } else {
        gpu_test_pin_drivers();
        if (!strcmp(mode, "faults")) {
            RUN_TEST(test_faults);
        } else {
            RUN_TEST(test_round_trip);
            RUN_TEST(test_foreign_and_corrupt);
            RUN_TEST(test_bad_files);
            RUN_TEST(test_unwritable);
            RUN_TEST(test_data_round_trip);
            RUN_TEST(test_arguments_and_environment);
            RUN_TEST(test_concurrent_saves);
        }
        rc = test_finish();
    }
    remove_tree(dir);
    return rc;
}
