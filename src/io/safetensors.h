/* The safetensors format: the header and where each tensor's bytes lie (safetensors.c); which of
 * them make an attention layer is weight_file.c's business.
 *
 *   0             8                        8 + N                                       size
 *   | N (u64 LE)  | JSON header (N bytes)  | byte buffer: every tensor's data, tiled     |
 *
 *   header: {"<name>": {"dtype": "F32", "shape": [3, 4], "data_offsets": [begin, end]}, ...,
 *            "__metadata__": {...}}
 *   data_offsets are [begin, end) relative to the byte buffer; data is little-endian, C order.
 *
 * A file is read through an st_source: the 8-byte length, then the header (at most
 * VKA_SAFETENSORS_MAX_HEADER_BYTES), then only the layer's tensors, each straight into its float
 * array (pread on a file, so a checkpoint of many gigabytes costs what its one layer costs).
 *
 * Checks happen in this order: the header's JSON and each entry (FORMAT), the byte buffer's tiling
 * and unique names (FORMAT) - over every tensor, so the file is checked as a whole although most of
 * it is never read -, finding the layer (NOT_FOUND when nothing carries the prefix; FORMAT for
 * several layers without a prefix, or mixed names), which tensors are present (NOT_FOUND for a
 * missing one), their dtypes and shapes (FORMAT), then reading and conversion to float32 (IO when
 * the file shrank or a read failed).
 */
#ifndef VKA_SAFETENSORS_H
#define VKA_SAFETENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "vkattn.h"

/* Tensor names are quoted in messages up to this many bytes. */
#define ST_QUOTE 96

/* Indices of the dtypes that load (st_tensor.dtype_index). */
enum { ST_F32 = 0, ST_F16 = 1, ST_BF16 = 2 };

typedef struct st_tensor {
    const char *name, *dtype;       /* in the header's arena, not NUL-terminated */
    size_t name_len, dtype_len;
    int dtype_index;                /* into k_st_dtypes; -1 for a dtype this reader does not know */
    uint32_t rank;
    uint64_t dims[VKATTN_MAX_RANK]; /* the first dims; attention tensors have at most 3 */
    size_t count;                   /* elements */
    uint64_t begin, end;
    uint32_t file;                  /* which file of a checkpoint holds it (checkpoint.h); 0 in a lone file */
} st_tensor;

typedef struct st_header {
    st_tensor *tensors;
    size_t count, capacity;
    char *arena; /* decoded names and dtypes; as large as the header, which always suffices */
    size_t arena_cap, arena_used;
} st_header;

/* The whole file in memory (vka_weight_file_parse*) or an open file read with pread
 * (vkattn_weight_file_open); bytes_read counts what the loader asked of it. */
typedef struct st_source {
    const uint8_t *data; /* the file in memory, or NULL */
    int fd;              /* else the open file */
    uint64_t size;
    uint64_t bytes_read;
} st_source;

/* Reads bytes [offset, offset + n), which the caller has checked lie inside the file's size. */
vkattn_status vka_st_source_read(st_source *s, uint64_t offset, void *dst, size_t n, vkattn_error *error);

/* Reads the 8-byte length and the header from `src`, parses every entry and checks that the
 * entries tile the byte buffer, which starts at *buffer_at. On failure `h` holds nothing. */
vkattn_status vka_st_header_read(st_source *src, st_header *h, uint64_t *buffer_at, vkattn_error *error);
void vka_st_header_free(st_header *h);

/* A dtype's bytes per element and name, by st_tensor.dtype_index (>= 0). */
size_t vka_st_dtype_size(int index);
const char *vka_st_dtype_name(int index);

static inline bool vka_st_name_is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* Names ordered by their bytes, then their length (memcmp's sign); qsort's comparison of pointers
 * to tensors by name. */
int vka_st_compare_bytes(const char *a, size_t na, const char *b, size_t nb);
int vka_st_compare_names(const void *a, const void *b);

/* A tensor's name, quoted for a message. */
const char *vka_st_quote_name(char buf[ST_QUOTE], const st_tensor *t);
/* "(3, 4)"; ranks above VKATTN_MAX_RANK end in ", ...". */
const char *vka_st_format_u64_dims(char *buf, size_t cap, const uint64_t *dims, uint32_t rank);
const char *vka_st_format_dims(char *buf, size_t cap, const st_tensor *t);

#endif
