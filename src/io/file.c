/* Whole-file reads and writes, and the message helpers that name files and quote their contents. */
#define _POSIX_C_SOURCE 200809L /* fstat, fileno, lstat, mkstemp, fchmod, fsync */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/error.h"
#include "io/io.h"

/* Growth step when the size is unknown or the file grew while being read. */
#define VKA_READ_CHUNK ((size_t)1 << 16)

/* The file's size from seeking to its end, or 0 when the stream cannot tell. Only a hint: the
 * read loop below is what decides. */
static size_t size_hint(FILE *f)
{
    if (fseek(f, 0, SEEK_END) != 0) return 0;
    long end = ftell(f);
    if (fseek(f, 0, SEEK_SET) != 0 || end < 0) return 0;
    return (unsigned long)end > SIZE_MAX ? SIZE_MAX : (size_t)end;
}

static vkattn_status too_large(const char *path, size_t max_bytes, vkattn_error *error)
{
    return vka_error_set(error, VKATTN_ERROR_IO, "%s: file is larger than the %zu-byte limit for this reader",
                         path, max_bytes);
}

/* Makes room for at least one more byte after `used`, never beyond max_bytes + 1 (one byte past the
 * limit is how an oversized file is noticed). */
static vkattn_status grow(uint8_t **buf, size_t *cap, size_t used, size_t max_bytes, const char *path,
                          vkattn_error *error)
{
    if (used < *cap) return VKATTN_OK;
    size_t limit = max_bytes == SIZE_MAX ? SIZE_MAX : max_bytes + 1;
    size_t want;
    if (!vka_add_size(*cap, *cap > VKA_READ_CHUNK ? *cap : VKA_READ_CHUNK, &want) || want > limit) want = limit;
    if (want <= used) return too_large(path, max_bytes, error);
    uint8_t *bigger = realloc(*buf, want);
    if (!bigger)
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "%s: cannot allocate %zu bytes to read it",
                             path, want);
    *buf = bigger;
    *cap = want;
    return VKATTN_OK;
}

vkattn_status vka_read_stream(FILE *f, const char *path, size_t max_bytes, uint8_t **out_data, size_t *out_size,
                              vkattn_error *error)
{
    vkattn_status status = VKATTN_OK;
    uint8_t *buf = NULL;
    size_t cap = 0, used = 0;
    size_t hint = size_hint(f);
    if (hint > max_bytes) {
        status = too_large(path, max_bytes, error);
        goto fail;
    }
    /* One byte more than the hint, so that the read which finds the end needs no reallocation. */
    if (hint > 0 && vka_add_size(hint, 1, &cap)) {
        buf = malloc(cap);
        if (!buf) cap = 0;
    }
    for (;;) {
        VKA_TRY(grow(&buf, &cap, used, max_bytes, path, error));
        used += fread(buf + used, 1, cap - used, f);
        if (used > max_bytes) {
            status = too_large(path, max_bytes, error);
            goto fail;
        }
        if (used < cap) {
            /* A short count means end of file or an error. */
            if (ferror(f)) {
                status = vka_error_set(error, VKATTN_ERROR_IO, "%s: read failed after %zu bytes: %s", path, used,
                                       strerror(errno));
                goto fail;
            }
            break;
        }
    }
    *out_data = buf;
    *out_size = used;
    return VKATTN_OK;
fail:
    free(buf);
    return status;
}

vkattn_status vka_read_file(const char *path, size_t max_bytes, uint8_t **out_data, size_t *out_size,
                            vkattn_error *error)
{
    if (!path || !out_data || !out_size)
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "read_file: path or output is NULL");
    FILE *f = fopen(path, "rb");
    if (!f) return vka_error_set(error, VKATTN_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
    /* fopen takes a directory; its size hint would then read as a huge file */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        return vka_error_set(error, VKATTN_ERROR_IO, "%s: is a directory, not a file", path);
    }
    vkattn_status status = vka_read_stream(f, path, max_bytes, out_data, out_size, error);
    fclose(f);
    return status;
}

/* Writes all of `data` to `f` and closes it: 0, or the errno of what failed (*put: bytes written). */
static int put_all(FILE *f, const uint8_t *data, size_t size, size_t *put)
{
    *put = size ? fwrite(data, 1, size, f) : 0;
    int err = *put != size ? (errno ? errno : EIO) : 0;
    /* fclose flushes, so it can be the call that reports a full disk */
    if (fclose(f) != 0 && !err) err = errno ? errno : EIO;
    return err;
}

/* An existing regular file of the caller's is replaced whole: the bytes go to a temporary file
 * beside it, with its mode, flushed to the disk and renamed over it once all are written, so a
 * failed write leaves it as it was. Returns -1 where no temporary file can be made there (a
 * folder that is not writable), else 0 or the errno of what failed; *put counts the bytes written,
 * *step says what failed. */
static int replace_regular(const char *path, const struct stat *st, const uint8_t *data, size_t size, size_t *put,
                           const char **step)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + 8);
    if (!tmp) return -1;
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".XXXXXX", 8);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        free(tmp);
        return -1;
    }
    int err = fchmod(fd, st->st_mode & 07777) != 0 ? errno : 0;
    for (*put = 0; !err && *put < size;) {
        ssize_t got = write(fd, data + *put, size - *put);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) err = got < 0 ? errno : EIO;
        else *put += (size_t)got;
    }
    if (!err && fsync(fd) != 0) err = errno;
    if (close(fd) != 0 && !err) err = errno;
    *step = "write failed";
    if (!err && rename(tmp, path) != 0) err = errno, *step = "cannot rename the written copy over it";
    if (err) unlink(tmp);
    free(tmp);
    return err;
}

vkattn_status vka_write_file(const char *path, const uint8_t *data, size_t size, vkattn_error *error)
{
    if (!path || (!data && size))
        return vka_error_set(error, VKATTN_ERROR_INVALID_ARGUMENT, "write_file: path or data is NULL");
    struct stat st;
    size_t put = 0;
    /* Replaced by a renamed copy only where that is what writing it would do: a regular file (not
     * a link, one name) the caller owns and may write; any other is written in place, so that its
     * permissions refuse what they refuse and its owner stays. */
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid == geteuid() &&
        access(path, W_OK) == 0) {
        const char *step = "";
        int err = replace_regular(path, &st, data, size, &put, &step);
        if (err > 0)
            return vka_error_set(error, VKATTN_ERROR_IO, "%s: %s after %zu of %zu bytes: %s (the file is as it was)", path,
                                 step, put, size, strerror(err));
        if (err == 0) return VKATTN_OK;
    }
    /* A new file, another's, a link, or a folder without room for a copy: written in place. */
    FILE *f = fopen(path, "wb");
    if (!f) return vka_error_set(error, VKATTN_ERROR_IO, "%s: cannot create: %s", path, strerror(errno));
    /* a torn regular file is removed; a device or a pipe is not ours to remove (/dev/full) */
    const int regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    int err = put_all(f, data, size, &put);
    if (err) {
        if (regular) remove(path);
        return vka_error_set(error, VKATTN_ERROR_IO, "%s: write failed after %zu of %zu bytes: %s", path, put, size,
                             strerror(err));
    }
    return VKATTN_OK;
}

void vka_io_error_in_file(vkattn_error *error, const char *path)
{
    if (!error || error->status == VKATTN_OK || !path) return;
    const size_t n = strlen(path); /* a message that names the file already (cannot open) keeps its one name */
    if (strncmp(error->message, path, n) == 0 && error->message[n] == ':') return;
    char message[sizeof error->message];
    memcpy(message, error->message, sizeof message);
    message[sizeof message - 1] = '\0';
    vka_error_set(error, error->status, "%s: %s", path, message);
}

const char *vka_io_quote(char *dst, size_t cap, const void *src, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = src;
    size_t out = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = s[i];
        size_t need = (c >= 0x20 && c < 0x7F && c != '\\') ? 1 : (c == '\\' ? 2 : 4);
        /* Keep room for "..." and the terminator. */
        if (out + need + 4 > cap) {
            memcpy(dst + out, "...", 4);
            return dst;
        }
        if (need == 1) {
            dst[out++] = (char)c;
        } else if (need == 2) {
            dst[out++] = '\\';
            dst[out++] = '\\';
        } else {
            dst[out++] = '\\';
            dst[out++] = 'x';
            dst[out++] = hex[c >> 4];
            dst[out++] = hex[c & 15];
        }
    }
    dst[out] = '\0';
    return dst;
}
