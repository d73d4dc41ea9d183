/* A checkpoint's safetensors files (checkpoint.c): one file, or the shards that a Hugging Face
 * index names; which file holds each tensor and reading its bytes. Finding a layer among the
 * tensors is weight_file.c's business, the format of each file safetensors.c's.
 *
 *   model.safetensors.index.json   {"metadata": {...},
 *                                   "weight_map": {"<tensor>": "model-00001-of-00004.safetensors", ...}}
 *
 * Opening an index parses it (the caller reads it, at most VKA_SAFETENSORS_MAX_HEADER_BYTES), then each shard's
 * 8-byte length and header, each checked as a lone file's is, closing the shard again (a 405B
 * model has 191 of them). The shards' headers say what they hold, as transformers reads them: the
 * index only names the files (a stale entry, or a tensor it leaves out, does not matter), but a
 * tensor in two shards is FORMAT. A shard is opened again when one of the layer's tensors is read
 * from it and must still have its size (IO).
 * Shard names are relative to the index's folder: no absolute path, no ".." (FORMAT; links are
 * followed, as Hugging Face's cache needs them). Messages name the shard
 * ("model-00002-of-00004.safetensors: safetensors: ..."); vkattn_weight_file_open puts the
 * index's path before them.
 */
#ifndef VKA_CHECKPOINT_H
#define VKA_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "io/safetensors.h"
#include "vkattn.h"

typedef struct st_file {
    st_source src;      /* a shard's fd is -1 while it is closed */
    uint64_t buffer_at; /* where its byte buffer starts */
    char *path;         /* a shard's path, to open it again; NULL for a lone file (src stays the caller's) */
    char *name;         /* a shard's name in the index, for messages */
} st_file;

typedef struct st_checkpoint {
    st_header header;     /* every tensor of every file; st_tensor.file says which */
    st_file *files;
    size_t file_count;
    st_header *shard_headers; /* a sharded checkpoint's own headers (their arenas hold the names) */
} st_checkpoint;

/* A lone safetensors file read through `src` (in memory, or an fd the caller keeps open and
 * closes): its header, read and checked. */
vkattn_status vka_st_checkpoint_lone(st_checkpoint *ck, st_source src, vkattn_error *error);
/* The shards that the index `text`, read from `path`, names, their headers read and checked;
 * their names are relative to path's folder. */
vkattn_status vka_st_checkpoint_index(st_checkpoint *ck, const char *path, const uint8_t *text, size_t size,
                                      vkattn_error *error);
/* Reads tensor t's bytes (end - begin, checked against the file when its header was read) into dst. */
vkattn_status vka_st_checkpoint_read(st_checkpoint *ck, const st_tensor *t, void *dst, vkattn_error *error);
/* The files' sizes summed, and the bytes read from them so far (lengths, headers, tensors). */
uint64_t vka_st_checkpoint_size(const st_checkpoint *ck);
uint64_t vka_st_checkpoint_bytes_read(const st_checkpoint *ck);
/* Closes the shards and frees everything; leaves a lone file's source to its owner. */
void vka_st_checkpoint_close(st_checkpoint *ck);

/* An index's weight_map, parsed (vka_st_index_parse): each tensor's name and its shard. */
typedef struct st_index_entry {
    const char *name;       /* in the arena, not NUL-terminated */
    size_t name_len;
    const char *shard_name; /* NUL-terminated, in the arena */
} st_index_entry;

typedef struct st_index {
    st_index_entry *entries; /* sorted by name, names unique */
    size_t count;
    const char **shards;     /* distinct shard names, NUL-terminated, in the arena, sorted */
    size_t shard_count;
    char *arena;
} st_index;

/* Parses an index held in memory (the fuzz target calls it): a JSON object with a "weight_map"
 * object of at least one tensor, each mapped to a shard name (non-empty, no NUL, relative, no ".."
 * component); "metadata" and other keys are skipped. FORMAT on anything else, duplicate tensor
 * names included. On failure `out` holds nothing. */
vkattn_status vka_st_index_parse(const uint8_t *text, size_t size, st_index *out, vkattn_error *error);
void vka_st_index_free(st_index *ix);

#endif
