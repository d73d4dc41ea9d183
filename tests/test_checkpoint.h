/* Writing a small safetensors checkpoint in BF16 for the tests that read one back as an
 * application would (test_models.c, test_cli_run.c): tensors of the model-family fixtures'
 * deterministic values (model_fixtures.h), under their Hugging Face names. */
#ifndef VKATTN_TEST_CHECKPOINT_H
#define VKATTN_TEST_CHECKPOINT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model_fixtures.h"

typedef struct ck_tensor {
    char name[192];
    uint32_t rank, dims[2];
    uint16_t *bits;
} ck_tensor;

typedef struct checkpoint {
    ck_tensor t[16];
    uint32_t count;
} checkpoint;

static inline size_t ck_elems(const ck_tensor *t) { return t->rank == 1 ? t->dims[0] : (size_t)t->dims[0] * t->dims[1]; }

/* Adds a (d0) or (d0, d1) tensor made by the fixtures' scheme (mf_fill_bf16). */
static inline void ck_add(checkpoint *ck, const char *name, mf_kind kind, uint32_t rank, uint32_t d0, uint32_t d1)
{
    ck_tensor *t = &ck->t[ck->count++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->rank = rank;
    t->dims[0] = d0;
    t->dims[1] = d1;
    t->bits = (uint16_t *)malloc(ck_elems(t) * sizeof *t->bits);
    mf_fill_bf16(name, kind, rank == 2 ? d1 : d0, t->bits, ck_elems(t));
}

/* Writes the file (header padded to 8 bytes, tensors in order); 1 on success. */
static inline int ck_write(const checkpoint *ck, const char *path)
{
    char header[8192];
    size_t used = 0, offset = 0;
    used += (size_t)snprintf(header + used, sizeof header - used, "{");
    for (uint32_t i = 0; i < ck->count; i++) {
        const ck_tensor *t = &ck->t[i];
        size_t bytes = ck_elems(t) * 2;
        char shape[48];
        if (t->rank == 1) snprintf(shape, sizeof shape, "[%u]", t->dims[0]);
        else snprintf(shape, sizeof shape, "[%u,%u]", t->dims[0], t->dims[1]);
        used += (size_t)snprintf(header + used, sizeof header - used,
                                 "%s\"%s\":{\"dtype\":\"BF16\",\"shape\":%s,\"data_offsets\":[%zu,%zu]}", i ? "," : "",
                                 t->name, shape, offset, offset + bytes);
        offset += bytes;
    }
    used += (size_t)snprintf(header + used, sizeof header - used, "}");
    while (used % 8) header[used++] = ' ';
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    uint8_t le[8];
    for (int b = 0; b < 8; b++) le[b] = (uint8_t)((uint64_t)used >> (8 * b));
    int ok = fwrite(le, 1, 8, f) == 8 && fwrite(header, 1, used, f) == used;
    /* each tensor's bytes little-endian, a buffer at a time (a write per value was a sixth of the
     * models test's time) */
    for (uint32_t i = 0; ok && i < ck->count; i++) {
        const ck_tensor *t = &ck->t[i];
        uint8_t buf[8192];
        for (size_t j = 0, n = ck_elems(t); ok && j < n;) {
            size_t k = 0;
            for (; k < sizeof buf / 2 && j < n; k++, j++)
                buf[2 * k] = (uint8_t)t->bits[j], buf[2 * k + 1] = (uint8_t)(t->bits[j] >> 8);
            ok = fwrite(buf, 1, 2 * k, f) == 2 * k;
        }
    }
    return (fclose(f) == 0) && ok;
}

static inline void ck_free(checkpoint *ck)
{
    for (uint32_t i = 0; i < ck->count; i++) free(ck->t[i].bits);
    ck->count = 0;
}

#endif
