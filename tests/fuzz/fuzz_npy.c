/* libFuzzer target: the .npy parser (vka_npy_parse), and a round trip through vka_npy_encode.
 *
 * Input: the bytes of a .npy file. Invariants checked (a broken one is __builtin_trap):
 *   - failure: the status is FORMAT (or OUT_OF_HOST_MEMORY), the error holds that status and a
 *     message, and *out is untouched;
 *   - success: dtype and rank are in range, bytes == product(dims) * dtype size, the data is that
 *     large (ASan sees every byte read), BOOL values are 0/1, and the parser never produced more
 *     stored bytes than the file holds;
 *   - round trip: encode succeeds, puts the data at a multiple of 64 bytes, and parsing the encoded
 *     file gives the same array; encoding that array again gives the same bytes; encoding it with
 *     a wrong byte count, rank or dtype is refused.
 * Everything allocated is freed, so LeakSanitizer reports any leak in the parser.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/io.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A pattern the parser must leave alone when it fails. */
static void poison(vkattn_array *a) { memset(a, 0xA5, sizeof *a); }

static int is_poisoned(const vkattn_array *a)
{
    vkattn_array p;
    poison(&p);
    return memcmp(a, &p, sizeof p) == 0;
}

static void check_failure(vkattn_status status, const vkattn_error *error, const vkattn_array *a)
{
    CHECK(status == VKATTN_ERROR_FORMAT || status == VKATTN_ERROR_OUT_OF_HOST_MEMORY);
    CHECK(error->status == status);
    CHECK(memchr(error->message, '\0', sizeof error->message) != NULL);
    CHECK(error->message[0] != '\0');
    CHECK(is_poisoned(a));
}

/* Checks a parsed array against its own description; touches every data byte. */
static void check_array(const vkattn_array *a, size_t file_size)
{
    CHECK((unsigned)a->dtype <= VKATTN_DTYPE_I32);
    CHECK(a->rank <= VKATTN_MAX_RANK);
    CHECK(a->data != NULL);
    size_t count = 1;
    for (uint32_t i = 0; i < a->rank; i++) CHECK(!__builtin_mul_overflow(count, (size_t)a->dims[i], &count));
    size_t bytes;
    CHECK(!__builtin_mul_overflow(count, vkattn_dtype_size(a->dtype), &bytes));
    CHECK(a->bytes == bytes);
    /* Every loaded element came from at least one stored byte (|b1 is the 1:1 case). */
    CHECK(count <= file_size);
    const volatile uint8_t *p = a->data;
    uint8_t sum = 0;
    for (size_t i = 0; i < a->bytes; i++) {
        uint8_t v = p[i];
        if (a->dtype == VKATTN_DTYPE_BOOL) CHECK(v <= 1);
        sum ^= v;
    }
    (void)sum;
}

static void round_trip(const vkattn_array *a)
{
    vkattn_error error = {0};
    uint8_t *file = NULL, *again = NULL;
    size_t file_size = 0, again_size = 0;
    CHECK(vka_npy_encode(a, &file, &file_size, &error) == VKATTN_OK);
    CHECK(file_size >= a->bytes && (file_size - a->bytes) % 64 == 0);

    vkattn_array b;
    poison(&b);
    CHECK(vka_npy_parse(file, file_size, &b, &error) == VKATTN_OK);
    CHECK(b.dtype == a->dtype && b.rank == a->rank && b.bytes == a->bytes);
    CHECK(memcmp(b.dims, a->dims, a->rank * sizeof a->dims[0]) == 0);
    CHECK(a->bytes == 0 || memcmp(b.data, a->data, a->bytes) == 0);

    CHECK(vka_npy_encode(&b, &again, &again_size, &error) == VKATTN_OK);
    CHECK(again_size == file_size && memcmp(again, file, file_size) == 0);
    vkattn_array_free(&b);
    free(again);
    free(file);
}

/* vka_npy_encode refuses an array that does not describe itself, and leaves the outputs alone. */
static void check_encode_refuses(const vkattn_array *a)
{
    vkattn_array bad[3] = {*a, *a, *a};
    bad[0].bytes += 1;
    bad[1].rank = VKATTN_MAX_RANK + 1;
    bad[2].dtype = (vkattn_dtype)(VKATTN_DTYPE_I32 + 1);
    for (int i = 0; i < 3; i++) {
        vkattn_error error = {0};
        uint8_t *file = (uint8_t *)&error;
        size_t file_size = 12345;
        vkattn_status status = vka_npy_encode(&bad[i], &file, &file_size, &error);
        CHECK(status == VKATTN_ERROR_INVALID_ARGUMENT && error.status == status);
        CHECK(file == (uint8_t *)&error && file_size == 12345);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vkattn_error error = {0};
    vkattn_array a;
    poison(&a);
    vkattn_status status = vka_npy_parse(data, size, &a, &error);
    if (status != VKATTN_OK) {
        check_failure(status, &error, &a);
        return 0;
    }
    check_array(&a, size);
    round_trip(&a);
    check_encode_refuses(&a);
    vkattn_array_free(&a);
    return 0;
}
