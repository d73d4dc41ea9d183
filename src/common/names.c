/* Names of the public enums (statuses, paths, stages) and the version, from the same tables as the
 * enums themselves. The dtypes' names and sizes are in format/dtype.c. */
#include "vkattn.h"

#include <stdint.h>

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
