/* File readers and writers: .npy arrays and safetensors weights.
 *
 * vkattn_npy_read reads a whole file with vka_read_file and hands the bytes to a parser that works
 * on memory only. vkattn_weight_file_open reads a safetensors file piece by piece (the header,
 * then only the layer's tensors) through the same code that vka_weight_file_parse* runs on a file
 * held in memory; the memory parsers are what the tests and fuzz targets call. Parsers trust nothing in their input: every length, offset and shape
 * product is checked, and every failure is VKATTN_ERROR_FORMAT with a message that names the field
 * (VKATTN_ERROR_NOT_FOUND when a well-formed weight file lacks a tensor the layer needs;
 * VKATTN_ERROR_OUT_OF_HOST_MEMORY when an allocation fails). Messages from the memory parsers do not
 * know the file name; the public calls prefix it ("path: npy header: ...").
 *
 * Decisions that callers can see:
 *   - .npy: bytes after the array data are an error (numpy never writes them). Header whitespace and
 *     a trailing comma in the dict or shape tuple are accepted, as Python accepts them; unknown keys,
 *     duplicate keys and a rank-1 shape without its comma ("(3)" is not a tuple) are not.
 *     |b1 values other than 0 and 1 load as 1; vka_npy_encode writes BOOL arrays as 0/1 too.
 *     Dimensions of 0 are accepted (bytes = 0, data still points to a valid allocation).
 *   - safetensors: follows the format's own rules: the tensors' data_offsets must tile the byte
 *     buffer exactly (no holes, no overlap, no trailing bytes), names are unique, the header is at
 *     most 100,000,000 bytes of UTF-8 JSON, nested at most VKA_JSON_MAX_DEPTH deep. Tensors that are
 *     not part of the attention layer are checked for consistent offsets and then ignored, whatever
 *     their dtype. See weight_file.c for how a name prefix is found, checkpoint.h for a checkpoint in
 *     shards (its index and their agreement).
 */
#ifndef VKA_IO_H
#define VKA_IO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vkattn.h"

/* The largest file vkattn_npy_read reads whole (and vkattn_weight_file_open when the file is a
 * pipe, not a regular file): 4 GiB (less where size_t is 32 bits wide). */
#if SIZE_MAX > 0xFFFFFFFFu
#define VKA_IO_MAX_FILE_BYTES ((size_t)4 << 30)
#else
#define VKA_IO_MAX_FILE_BYTES ((size_t)0xFFFFFFFFu - 1)
#endif

/* The largest safetensors JSON header accepted (the same limit as the reference implementation). */
#define VKA_SAFETENSORS_MAX_HEADER_BYTES ((uint64_t)100000000u)

/* ---- whole files (file.c) ---------------------------------------------------------------------- */

/* Reads the whole file at `path` into a new buffer (*out_data, freed by the caller with free();
 * never NULL on success, even for an empty file). Files larger than `max_bytes` are refused with
 * VKATTN_ERROR_IO before they are read in full; open and read errors are VKATTN_ERROR_IO. */
vkattn_status vka_read_file(const char *path, size_t max_bytes, uint8_t **out_data, size_t *out_size,
                            vkattn_error *error);
/* vka_read_file's reading, from a stream already open (a pipe, say); `path` names it in messages.
 * The caller closes `f`. */
vkattn_status vka_read_stream(FILE *f, const char *path, size_t max_bytes, uint8_t **out_data, size_t *out_size,
                              vkattn_error *error);
/* Writes `size` bytes to `path`, replacing the file. An existing regular file that the caller
 * owns and may write is written as a copy beside it, flushed and renamed over it, so a failed
 * write leaves it as it was; any other (a new file, another's, a link, one in a folder without
 * room for the copy) is written in place and, if regular, removed when the write fails; a device
 * or a pipe is written and never removed. */
vkattn_status vka_write_file(const char *path, const uint8_t *data, size_t size, vkattn_error *error);

/* If `error` holds a failure, rewrites its message as "<path>: <message>". */
void vka_io_error_in_file(vkattn_error *error, const char *path);
/* Writes `len` bytes of untrusted text to `dst` (capacity `cap`, at least 8) as printable ASCII:
 * other bytes become \xNN, and text that does not fit ends in "...". Returns dst. */
const char *vka_io_quote(char *dst, size_t cap, const void *src, size_t len);

/* ---- .npy (npy.c) ------------------------------------------------------------------------------ */

/* Parses a whole .npy file held in memory. The rules are vkattn_npy_read's; on success *out holds
 * a new allocation (free it with vkattn_array_free), on failure *out is untouched. */
vkattn_status vka_npy_parse(const uint8_t *data, size_t size, vkattn_array *out, vkattn_error *error);
/* Encodes `array` as a version 1.0 .npy file in a new buffer (freed by the caller with free()):
 * F32 as <f4, F16 as <f2, BOOL as |b1 (0/1), I32 as <i4; the data starts at a multiple of 64 bytes.
 * A NULL or inconsistent array (bytes != product(dims) * dtype size) is VKATTN_ERROR_INVALID_ARGUMENT. */
vkattn_status vka_npy_encode(const vkattn_array *array, uint8_t **out_data, size_t *out_size,
                             vkattn_error *error);

/* ---- safetensors (safetensors.c) --------------------------------------------------------------- */

/* Parses a whole safetensors file held in memory; the rules are vkattn_weight_file_open's with the
 * layer `prefix` (NULL or "": the only layer). The result copies what it needs: `data` may be freed
 * afterwards. Its info counts the bytes the parser touched as bytes_read. */
vkattn_status vka_weight_file_parse_prefix(const uint8_t *data, size_t size, const char *prefix,
                                           vkattn_weight_file **out, vkattn_error *error);
/* vka_weight_file_parse_prefix(data, size, NULL, out, error). */
vkattn_status vka_weight_file_parse(const uint8_t *data, size_t size, vkattn_weight_file **out,
                                    vkattn_error *error);

/* ---- a model's config.json (model_config.c) ----------------------------------------------------- */

/* vkattn_model_config_open on a config held in memory (tests, fuzzing). */
vkattn_status vka_model_config_parse(const uint8_t *data, size_t size, vkattn_model_config **out, vkattn_error *error);

#endif
