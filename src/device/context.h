/* The context: the device core (instance, device, queue, errors; device/device.h) and what the
 * library shares on top of it: a transfer lane with staging memory, the pipelines, the kernel
 * tuning and loop budget the plans use, a placeholder buffer, the validation messenger. */
#ifndef VKA_CONTEXT_H
#define VKA_CONTEXT_H

#include "device/device.h"
#include "device/tuning.h"
#include "memory/buffer.h"
#include "memory/transfer.h"
#include "pipeline/pipeline_cache.h"

struct vkattn_context {
    vka_device dev;
    VkDebugUtilsMessengerEXT messenger;
    vka_transfer transfer;      /* host <-> device copies for memory the host cannot map */
    vka_pipeline_cache pipelines;
    const vka_tuning *tuning; /* kernel shapes for this device (src/device/tuning.c) */
    uint32_t loop_budget;       /* loop trips per invocation the plan keeps to, 0 = unlimited */
    vka_buffer dummy;           /* bound to descriptor slots a dispatch does not use */
    int validation_enabled;
    uint32_t validation_messages;
};

/* Creates a context whose fault injector is armed from the start (tests only). */
vkattn_status vka_context_create_with_faults(const vkattn_context_desc *desc, const vka_faults *faults,
                                             vkattn_context **out, vkattn_error *error);
/* Re-arms (or disarms, with zeros) a context's fault injector and resets its counters. */
void vka_context_set_faults(vkattn_context *ctx, const vka_faults *faults);

#endif
