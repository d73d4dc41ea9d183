/* libFuzzer target: the config.json reader (vka_model_config_parse) and every layer it describes,
 * which also drives the library's JSON number reader (src/io/json.c).
 *
 * Input: the bytes of a config.json. Invariants checked (a broken one is __builtin_trap):
 *   - a failed parse: the status is FORMAT, UNSUPPORTED or OUT_OF_HOST_MEMORY, the error holds it
 *     and a message, and *out is untouched;
 *   - each layer the config has (up to 64 of them, and one past the last): a failure is FORMAT,
 *     UNSUPPORTED or INVALID_ARGUMENT (only past the last layer) and leaves the description, the
 *     cache description and the prefix untouched; a success gives widths that agree (H_kv
 *     dividing H, D >= 1, rope_dim even and at most D, D even where RoPE rotates it whole), finite
 *     fields, factor lists that ASan sees read in full, and a prefix that names the layer.
 * Everything allocated is freed, so LeakSanitizer reports any leak in the reader.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "io/io.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_failure(vkattn_status status, const vkattn_error *error)
{
    CHECK(error->status == status);
    CHECK(memchr(error->message, '\0', sizeof error->message) != NULL && error->message[0] != '\0');
}

static void check_layer(const vkattn_model_config *config, uint32_t layer, uint32_t layers)
{
    vkattn_error error = {0};
    vkattn_layer_desc desc, before;
    memset(&desc, 0xA5, sizeof desc);
    before = desc;
    vkattn_kv_cache_desc cache = {.num_blocks = 7};
    char prefix[64] = "untouched";
    vkattn_status status = vkattn_model_config_layer(config, layer, &desc, &cache, prefix, sizeof prefix, &error);
    if (status != VKATTN_OK) {
        CHECK(status == VKATTN_ERROR_FORMAT || status == VKATTN_ERROR_UNSUPPORTED ||
              (status == VKATTN_ERROR_INVALID_ARGUMENT && layer >= layers));
        check_failure(status, &error);
        CHECK(memcmp(&desc, &before, sizeof desc) == 0 && cache.num_kv_heads == 0 && cache.head_dim == 0);
        CHECK(strcmp(prefix, "untouched") == 0);
        return;
    }
    CHECK(layer < layers);
    CHECK(desc.embed_dim >= 1 && desc.num_heads >= 1 && desc.num_kv_heads >= 1 && desc.head_dim >= 1);
    CHECK(desc.num_heads % desc.num_kv_heads == 0);
    CHECK(cache.num_kv_heads == desc.num_kv_heads && cache.head_dim == desc.head_dim && cache.num_blocks == 7);
    CHECK(desc.rope_dim % 2 == 0 && desc.rope_dim <= desc.head_dim);
    CHECK(desc.rope_theta == 0.0f || desc.rope_dim || desc.head_dim % 2 == 0); /* RoPE rotates pairs */
    CHECK(isfinite(desc.rope_theta) && desc.rope_theta >= 0.0f && isfinite(desc.scale) && desc.scale >= 0.0f);
    CHECK(isfinite(desc.softcap) && isfinite(desc.qk_norm_eps));
    const vkattn_rope_scaling *s = &desc.rope_scaling;
    CHECK((unsigned)s->type <= VKATTN_ROPE_TYPE_LLAMA3);
    CHECK(!s->short_factor == !s->long_factor && (s->type == VKATTN_ROPE_TYPE_LONGROPE) == (s->short_factor != NULL));
    if (s->short_factor) {
        uint32_t pairs = (desc.rope_dim ? desc.rope_dim : desc.head_dim) / 2;
        volatile float sum = 0;
        for (uint32_t i = 0; i < pairs; i++) sum += s->short_factor[i] + s->long_factor[i];
        (void)sum;
    }
    char want[32];
    snprintf(want, sizeof want, ".%u.self_attn.", layer);
    CHECK(strstr(prefix, want) != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vkattn_error error = {0};
    vkattn_model_config *const untouched = (vkattn_model_config *)&error;
    vkattn_model_config *config = untouched;
    vkattn_status status = vka_model_config_parse(data, size, &config, &error);
    if (status != VKATTN_OK) {
        CHECK(status == VKATTN_ERROR_FORMAT || status == VKATTN_ERROR_UNSUPPORTED ||
              status == VKATTN_ERROR_OUT_OF_HOST_MEMORY);
        check_failure(status, &error);
        CHECK(config == untouched);
        return 0;
    }
    CHECK(config != NULL && config != untouched);
    vkattn_model_info info;
    CHECK(vkattn_model_config_get_info(config, &info) == VKATTN_OK && info.model_type != NULL);
    uint32_t shown = info.num_layers < 64 ? info.num_layers : 64;
    for (uint32_t layer = 0; layer < shown; layer++) check_layer(config, layer, info.num_layers);
    check_layer(config, info.num_layers, info.num_layers);
    vkattn_model_config_destroy(config);
    return 0;
}
