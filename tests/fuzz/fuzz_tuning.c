/* libFuzzer target: tuning strings (vka_tuning_parse: VKATTN_TUNING and vkattn_context_desc.tuning).
 *
 * Input: the bytes of a tuning string (up to the first NUL), parsed for a made-up device with
 * 16 x 16 x 16 cooperative matrices (whose class is "coopmat"). Invariants checked (a broken one
 * is __builtin_trap):
 *   - failure: a reason, NUL-terminated, within its buffer;
 *   - success: the tuning is a class's row with at most the fields the string names changed
 *     (vka_tuning_changes counts no more than the string's commas + 1), `named` says whether the
 *     string began with a name;
 *   - round trip: "NAME:" + the changes vka_tuning_changes writes parses to a tuning with the same
 *     changes, and the name alone to the class's row (no changes).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/tuning.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vkattn_device_info device = {.type = VKATTN_DEVICE_DISCRETE_GPU, .subgroup_size = 32, .subgroup_size_min = 32,
                                 .subgroup_size_max = 32, .max_workgroup_invocations = 1024,
                                 .max_shared_memory_bytes = 49152, .cooperative_matrix = 1,
                                 .cooperative_matrix_shape_count = 1, .cooperative_matrix_shapes = {{16, 16, 16}},
                                 .cooperative_matrix_usable = 1};
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    vka_tuning t;
    int named = -1;
    char why[600];
    memset(why, 0x5A, sizeof why);
    if (vka_tuning_parse(&device, text, &t, &named, why, sizeof why)) {
        CHECK(memchr(why, 0, sizeof why) != NULL && why[0] != 0);
        free(text);
        return 0;
    }
    CHECK(named == (text[0] != 0 && text[0] != ':'));
    const vka_tuning *base = vka_tuning_for(&device, t.name);
    CHECK(base != NULL && base->why == t.why);
    char changes[1024];
    size_t n = vka_tuning_changes(&t, &device, changes, sizeof changes);
    size_t commas = 0;
    for (const char *c = text; *c; c++) commas += *c == ',';
    CHECK(n <= commas + 1 && (n == 0 || strchr(text, ':') != NULL));
    /* the round trip */
    char again[1100];
    snprintf(again, sizeof again, "%s%s%s", t.name, n ? ":" : "", changes);
    vka_tuning u;
    int named2 = 0;
    char changes2[1024];
    CHECK(vka_tuning_parse(&device, again, &u, &named2, why, sizeof why) == 0 && named2 == 1 && u.name == t.name);
    CHECK(vka_tuning_changes(&u, &device, changes2, sizeof changes2) == n && strcmp(changes2, changes) == 0);
    CHECK(vka_tuning_parse(&device, t.name, &u, &named2, why, sizeof why) == 0 && u.name == base->name);
    CHECK(vka_tuning_changes(&u, &device, changes2, sizeof changes2) == 0);
    free(text);
    return 0;
}
