/* Names and sizes of the public enums, from the same tables as the enums themselves. */
#include "vkattn.h"

#include <stdint.h>

#include "io/quant.h"

#define VKA_STRINGIFY_(x) #x
#define VKA_STRINGIFY(x) VKA_STRINGIFY_(x)

unsigned vkattn_version_number(void) { return VKATTN_VERSION_NUMBER; }

const char *vkattn_version_string(void)
{
    return VKA_STRINGIFY(VKATTN_VERSION_MAJOR) "." VKA_STRINGIFY(VKATTN_VERSION_MINOR) "." VKA_STRINGIFY(
        VKATTN_VERSION_PATCH);
}

const char *vkattn_status_string(vkattn_status status)
{
    switch (status) {
#define VKA_STATUS_TEXT_(name, value, text)                                                       \
    case name: return text;
        VKATTN_STATUS_LIST(VKA_STATUS_TEXT_)
#undef VKA_STATUS_TEXT_
    }
    return "unknown status";
}

const char *vkattn_status_name(vkattn_status status)
{
    switch (status) {
#define VKA_STATUS_NAME_(name, value, text)                                                       \
    case name: return #name;
        VKATTN_STATUS_LIST(VKA_STATUS_NAME_)
#undef VKA_STATUS_NAME_
    }
    return "VKATTN_UNKNOWN";
}

size_t vkattn_dtype_size(vkattn_dtype dtype)
{
    switch (dtype) {
    case VKATTN_DTYPE_F32: return 4;
    case VKATTN_DTYPE_F16: return 2;
    case VKATTN_DTYPE_BOOL: return 1;
    case VKATTN_DTYPE_I32: return 4;
    case VKATTN_DTYPE_Q8_0:
    case VKATTN_DTYPE_Q4_0: return 0; /* block formats: vkattn_dtype_row_size */
    }
    return 0;
}

size_t vkattn_dtype_row_size(vkattn_dtype dtype, size_t count)
{
    uint64_t bytes = vka_dtype_bytes(dtype, count);
    return bytes <= SIZE_MAX ? (size_t)bytes : 0;
}

const char *vkattn_dtype_name(vkattn_dtype dtype)
{
    switch (dtype) {
    case VKATTN_DTYPE_F32: return "f32";
    case VKATTN_DTYPE_F16: return "f16";
    case VKATTN_DTYPE_BOOL: return "bool";
    case VKATTN_DTYPE_I32: return "i32";
    case VKATTN_DTYPE_Q8_0: return "q8_0";
    case VKATTN_DTYPE_Q4_0: return "q4_0";
    }
    return "unknown";
}

const char *vkattn_path_name(vkattn_path path)
{
    switch (path) {
    case VKATTN_PATH_AUTO: return "auto";
    case VKATTN_PATH_UNFUSED: return "unfused";
    case VKATTN_PATH_FUSED: return "fused";
    case VKATTN_PATH_CPU: return "cpu";
    }
    return "unknown";
}

const char *vkattn_stage_name(vkattn_stage stage)
{
    static const char *const names[VKATTN_STAGE_COUNT] = {
        [VKATTN_STAGE_QKV_PROJECTION] = "qkv_projection", [VKATTN_STAGE_SCORES] = "scores",
        [VKATTN_STAGE_SOFTMAX] = "softmax",               [VKATTN_STAGE_AVERAGE_HEADS] = "average_heads",
        [VKATTN_STAGE_PV] = "pv",                         [VKATTN_STAGE_OUT_PROJECTION] = "out_projection",
        [VKATTN_STAGE_FUSED] = "fused",
    };
    return (unsigned)stage < VKATTN_STAGE_COUNT ? names[stage] : "unknown";
}
