/* A checkpoint's safetensors files (checkpoint.h): a lone file, or the shards of an index, their
 * headers merged into one list of tensors, each tensor's bytes read from the file that holds it. */
#define _POSIX_C_SOURCE 200809L /* open, fstat */
#define _FILE_OFFSET_BITS 64    /* files above 2 GiB where off_t would be 32 bits */

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/checked.h"
#include "common/error.h"
#include "io/checkpoint.h"
#include "io/io.h"
#include "io/json.h"

/* ---- the index ---------------------------------------------------------------------------------- */

static int compare_entry_names(const void *a, const void *b)
{
    const st_index_entry *x = a, *y = b;
    return vka_st_compare_bytes(x->name, x->name_len, y->name, y->name_len);
}

/* qsort's comparison of pointers to NUL-terminated names. */
static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A shard's name stays inside the index's folder: relative, without a ".." component. */
static bool shard_name_ok(const char *s, size_t len)
{
    if (len == 0 || memchr(s, '\0', len) || s[0] == '/') return false;
    for (size_t at = 0; at < len;) {
        const char *slash = memchr(s + at, '/', len - at);
        size_t end = slash ? (size_t)(slash - s) : len;
        if (end - at == 2 && s[at] == '.' && s[at + 1] == '.') return false;
        at = end + 1;
    }
    return true;
}

static vkattn_status add_entry(st_index *ix, size_t *capacity, vkattn_error *error)
{
    if (ix->count < *capacity) return VKATTN_OK;
    size_t grown = *capacity ? *capacity * 2 : 64, bytes;
    st_index_entry *bigger = NULL;
    if (vka_mul_size(grown, sizeof *bigger, &bytes)) bigger = realloc(ix->entries, bytes);
    if (!bigger)
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors index: cannot list %zu tensors", grown);
    ix->entries = bigger;
    *capacity = grown;
    return VKATTN_OK;
}

static vkattn_status parse_weight_map(vka_json *j, st_index *ix, size_t cap, size_t *used, vkattn_error *error)
{
    vkattn_status status;
    size_t capacity = 0;
    bool done;
    char quoted[ST_QUOTE], shard_quoted[ST_QUOTE];
    if (!vka_json_peek(j, '{')) return vka_json_fail(j, "\"weight_map\" must be an object");
    VKA_TRY(vka_json_expect(j, '{', "weight_map"));
    for (size_t i = 0;; i++) {
        char *name = ix->arena + *used;
        size_t name_len = 0, shard_len = 0;
        VKA_TRY(vka_json_member(j, i, &done, name, cap - *used, &name_len));
        if (done) break;
        *used += name_len;
        vka_io_quote(quoted, sizeof quoted, name, name_len);
        if (!vka_json_peek(j, '"'))
            return vka_json_fail(j, "tensor '%s' must map to a shard's file name (a string)", quoted);
        /* Each quoted string is at least 2 bytes longer than its decoded form: room for the NUL. */
        char *shard = ix->arena + *used;
        if (cap - *used < 2) return vka_json_fail(j, "the index's names outgrew the text");
        VKA_TRY(vka_json_string(j, shard, cap - *used - 1, &shard_len));
        shard[shard_len] = '\0';
        *used += shard_len + 1;
        if (!shard_name_ok(shard, shard_len))
            return vka_json_fail(j, "tensor '%s' maps to the shard '%s'; a shard is a file beside the index (not "
                                 "empty, not absolute, no '..')",
                                 quoted, vka_io_quote(shard_quoted, sizeof shard_quoted, shard, shard_len));
        VKA_TRY(add_entry(ix, &capacity, error));
        ix->entries[ix->count++] = (st_index_entry){.name = name, .name_len = name_len, .shard_name = shard};
    }
    if (ix->count == 0) return vka_json_fail(j, "\"weight_map\" lists no tensors");
    return VKATTN_OK;
fail:
    return status;
}

/* The distinct shards (in name order), and the entries sorted by tensor name, refusing a name
 * listed twice. */
static vkattn_status list_shards(st_index *ix, vkattn_error *error)
{
    vkattn_status status = VKATTN_OK;
    ix->shards = malloc(ix->count * sizeof *ix->shards); /* count * sizeof(entry) fit already */
    if (!ix->shards)
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors index: cannot sort %zu tensors",
                             ix->count);
    for (size_t i = 0; i < ix->count; i++) ix->shards[i] = ix->entries[i].shard_name;
    qsort(ix->shards, ix->count, sizeof *ix->shards, compare_strings);
    for (size_t i = 0; i < ix->count; i++)
        if (i == 0 || strcmp(ix->shards[ix->shard_count - 1], ix->shards[i]) != 0)
            ix->shards[ix->shard_count++] = ix->shards[i];
    qsort(ix->entries, ix->count, sizeof *ix->entries, compare_entry_names);
    for (size_t i = 1; i < ix->count; i++)
        if (compare_entry_names(&ix->entries[i - 1], &ix->entries[i]) == 0) {
            char quoted[ST_QUOTE];
            status = vka_error_set(error, VKATTN_ERROR_FORMAT, "safetensors index: tensor '%s' is listed twice",
                                   vka_io_quote(quoted, sizeof quoted, ix->entries[i].name, ix->entries[i].name_len));
            break;
        }
    return status;
}

vkattn_status vka_st_index_parse(const uint8_t *text, size_t size, st_index *out, vkattn_error *error)
{
    vkattn_status status;
    vka_json j;
    bool done, map = false;
    size_t used = 0;
    st_index ix = {0};
    vka_json_init(&j, text, size, "safetensors index", error);
    VKA_TRY(vka_json_check_utf8(&j));
    /* Names are decoded into the arena, never longer than their quoted text: the text's size suffices. */
    ix.arena = malloc(size ? size : 1);
    if (!ix.arena) {
        status = vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors index: cannot allocate %zu bytes",
                               size);
        goto fail;
    }
    VKA_TRY(vka_json_expect(&j, '{', "the index"));
    for (size_t i = 0;; i++) {
        char *key = ix.arena + used; /* scratch: keys are forgotten */
        size_t len = 0;
        VKA_TRY(vka_json_member(&j, i, &done, key, size - used, &len));
        if (done) break;
        if (!vka_st_name_is(key, len, "weight_map")) {
            VKA_TRY(vka_json_skip(&j, 1)); /* "metadata": {"total_size": ...} and anything else */
            continue;
        }
        if (map) {
            status = vka_json_fail(&j, "\"weight_map\" appears twice");
            goto fail;
        }
        map = true;
        VKA_TRY(parse_weight_map(&j, &ix, size, &used, error));
    }
    VKA_TRY(vka_json_finish(&j));
    if (!map) {
        status = vka_error_set(error, VKATTN_ERROR_FORMAT,
                               "safetensors index: no \"weight_map\" (an index maps each tensor to its shard: "
                               "{\"weight_map\": {\"<tensor>\": \"<file>.safetensors\", ...}})");
        goto fail;
    }
    VKA_TRY(list_shards(&ix, error));
    *out = ix;
    return VKATTN_OK;
fail:
    vka_st_index_free(&ix);
    return status;
}

void vka_st_index_free(st_index *ix)
{
    free(ix->entries);
    free(ix->shards);
    free(ix->arena);
    memset(ix, 0, sizeof *ix);
}

/* ---- the files ---------------------------------------------------------------------------------- */

/* Opens a shard: the first time to read its header, again to read a tensor, when it must still
 * be the size its header was checked against. */
static vkattn_status open_shard(st_file *f, bool again, vkattn_error *error)
{
    /* O_NONBLOCK: a FIFO in a shard's place must not block the open before it is refused below
     * (reads from a regular file ignore it) */
    int fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return vka_error_set(error, VKATTN_ERROR_IO, "%s: cannot open: %s", f->name, strerror(errno));
    struct stat st;
    vkattn_status status = VKATTN_OK;
    if (fstat(fd, &st) != 0)
        status = vka_error_set(error, VKATTN_ERROR_IO, "%s: cannot stat: %s", f->name, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        status = vka_error_set(error, VKATTN_ERROR_IO, "%s: not a regular file (a shard is read at offsets)", f->name);
    else if (again && (uint64_t)st.st_size != f->src.size)
        status = vka_error_set(error, VKATTN_ERROR_IO,
                               "%s: was %llu bytes when its header was read, now %llu (did it change meanwhile?)",
                               f->name, (unsigned long long)f->src.size, (unsigned long long)st.st_size);
    if (status != VKATTN_OK) {
        close(fd);
        return status;
    }
    f->src.fd = fd;
    f->src.size = (uint64_t)st.st_size;
    return VKATTN_OK;
}

vkattn_status vka_st_checkpoint_lone(st_checkpoint *ck, st_source src, vkattn_error *error)
{
    memset(ck, 0, sizeof *ck);
    ck->files = calloc(1, sizeof *ck->files);
    if (!ck->files) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors: cannot allocate a file");
    ck->file_count = 1;
    ck->files[0].src = src;
    vkattn_status status = vka_st_header_read(&ck->files[0].src, &ck->header, &ck->files[0].buffer_at, error);
    if (status != VKATTN_OK) vka_st_checkpoint_close(ck);
    return status;
}

/* Every tensor of every shard, in one list. */
static vkattn_status merge_headers(st_checkpoint *ck, vkattn_error *error)
{
    size_t total = 0, bytes;
    for (size_t s = 0; s < ck->file_count; s++)
        if (!vka_add_size(total, ck->shard_headers[s].count, &total)) total = SIZE_MAX;
    if (!vka_mul_size(total ? total : 1, sizeof *ck->header.tensors, &bytes) || !(ck->header.tensors = malloc(bytes)))
        return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors index: cannot list %zu tensors", total);
    for (size_t s = 0; s < ck->file_count; s++)
        for (size_t i = 0; i < ck->shard_headers[s].count; i++) {
            st_tensor *t = &ck->header.tensors[ck->header.count++];
            *t = ck->shard_headers[s].tensors[i];
            t->file = (uint32_t)s;
        }
    ck->header.capacity = total;
    return VKATTN_OK;
}

/* The shards' headers say what they hold, as transformers reads them (the index only names the
 * files: a stale entry, or a tensor it leaves out, is no fault of a layer's); a tensor in two
 * shards would be two different values under one name. */
static vkattn_status check_unique(const st_checkpoint *ck, vkattn_error *error)
{
    size_t n = ck->header.count;
    const st_tensor **sorted = malloc((n ? n : 1) * sizeof *sorted); /* n * sizeof(st_tensor) fit already */
    if (!sorted) return vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors index: cannot sort %zu tensors", n);
    for (size_t i = 0; i < n; i++) sorted[i] = &ck->header.tensors[i];
    qsort(sorted, n, sizeof *sorted, vka_st_compare_names);
    vkattn_status status = VKATTN_OK;
    for (size_t i = 1; i < n && status == VKATTN_OK; i++)
        if (vka_st_compare_names(&sorted[i - 1], &sorted[i]) == 0) {
            char name[ST_QUOTE];
            const char *a = ck->files[sorted[i - 1]->file].name, *b = ck->files[sorted[i]->file].name;
            status = vka_error_set(error, VKATTN_ERROR_FORMAT, "'%s' is in both %s and %s; a tensor lies in one shard",
                                   vka_st_quote_name(name, sorted[i]), strcmp(a, b) < 0 ? a : b, strcmp(a, b) < 0 ? b : a);
        }
    free(sorted);
    return status;
}

/* A shard's path: its name after the index's folder. */
static char *shard_path(const char *index_path, const char *name)
{
    const char *slash = strrchr(index_path, '/');
    size_t dir = slash ? (size_t)(slash - index_path) + 1 : 0, len = strlen(name);
    char *path = malloc(dir + len + 1);
    if (!path) return NULL;
    memcpy(path, index_path, dir);
    memcpy(path + dir, name, len + 1);
    return path;
}

vkattn_status vka_st_checkpoint_index(st_checkpoint *ck, const char *path, const uint8_t *text, size_t size,
                                      vkattn_error *error)
{
    vkattn_status status;
    st_index ix = {0};
    memset(ck, 0, sizeof *ck);
    VKA_TRY(vka_st_index_parse(text, size, &ix, error));
    ck->files = calloc(ix.shard_count, sizeof *ck->files);
    ck->shard_headers = calloc(ix.shard_count, sizeof *ck->shard_headers);
    if (!ck->files || !ck->shard_headers) {
        status = vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors index: cannot list %zu shards",
                               ix.shard_count);
        goto fail;
    }
    for (size_t s = 0; s < ix.shard_count; s++) {
        st_file *f = &ck->files[ck->file_count++];
        f->src.fd = -1;
        f->path = shard_path(path, ix.shards[s]);
        f->name = malloc(strlen(ix.shards[s]) + 1);
        if (!f->path || !f->name) {
            status = vka_error_set(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "safetensors index: cannot name a shard");
            goto fail;
        }
        strcpy(f->name, ix.shards[s]);
        VKA_TRY(open_shard(f, false, error));
        status = vka_st_header_read(&f->src, &ck->shard_headers[s], &f->buffer_at, error);
        close(f->src.fd); /* opened again if the layer has a tensor in it */
        f->src.fd = -1;
        if (status != VKATTN_OK) {
            vka_io_error_in_file(error, f->name);
            goto fail;
        }
    }
    VKA_TRY(merge_headers(ck, error));
    VKA_TRY(check_unique(ck, error));
    vka_st_index_free(&ix);
    return VKATTN_OK;
fail:
    vka_st_index_free(&ix);
    vka_st_checkpoint_close(ck);
    return status;
}

vkattn_status vka_st_checkpoint_read(st_checkpoint *ck, const st_tensor *t, void *dst, vkattn_error *error)
{
    st_file *f = &ck->files[t->file];
    vkattn_status status = VKATTN_OK;
    if (f->path && f->src.fd < 0) status = open_shard(f, true, error);
    if (status == VKATTN_OK) status = vka_st_source_read(&f->src, f->buffer_at + t->begin, dst, (size_t)(t->end - t->begin), error);
    if (status != VKATTN_OK && f->name) vka_io_error_in_file(error, f->name);
    return status;
}

uint64_t vka_st_checkpoint_size(const st_checkpoint *ck)
{
    uint64_t total = 0;
    for (size_t s = 0; s < ck->file_count; s++) total += ck->files[s].src.size;
    return total;
}

uint64_t vka_st_checkpoint_bytes_read(const st_checkpoint *ck)
{
    uint64_t total = 0;
    for (size_t s = 0; s < ck->file_count; s++) total += ck->files[s].src.bytes_read;
    return total;
}

void vka_st_checkpoint_close(st_checkpoint *ck)
{
    for (size_t s = 0; s < ck->file_count; s++) {
        st_file *f = &ck->files[s];
        if (f->path && f->src.fd >= 0) close(f->src.fd); /* a lone file's source is its owner's */
        free(f->path);
        free(f->name);
    }
    if (ck->shard_headers)
        for (size_t s = 0; s < ck->file_count; s++) vka_st_header_free(&ck->shard_headers[s]);
    vka_st_header_free(&ck->header);
    free(ck->shard_headers);
    free(ck->files);
    memset(ck, 0, sizeof *ck);
}
