/* The context: the device core (instance, device, queue, errors; device/device.h) and what the
 * library shares on top of it: a transfer lane with staging memory, the pipelines, the kernel
 * tuning and loop budget the plans use, a placeholder buffer, the validation messenger. */
#ifndef VKA_CONTEXT_H
#define VKA_CONTEXT_H

#include <stdatomic.h>

#include "common/list.h"
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
    atomic_int busy;            /* a call is inside (vka_enter): the threading rule, checked */
    /* The objects made from this context and not yet destroyed (their `link` members), so that
     * destroying the context destroys them too. */
    vka_link layers, tensors, submissions, caches;
    uint64_t layers_made;       /* layers created so far: the next one's serial number */
};

/* One call at a time per context: entry fails (VKATTN_ERROR_BUSY, no message: the message slot
 * belongs to the call inside) while another thread is in a call on the context or an object made
 * from it. One atomic exchange, no lock. */
static inline int vka_enter(vkattn_context *ctx)
{
    return atomic_exchange_explicit(&ctx->busy, 1, memory_order_acquire) == 0;
}
static inline void vka_leave(vkattn_context *ctx) { atomic_store_explicit(&ctx->busy, 0, memory_order_release); }

/* The body of a public entry point: `call` between vka_enter and vka_leave of `ctx`. */
#define VKA_GUARDED(ctx, call)                                                                     \
    do {                                                                                           \
        vkattn_context *guarded_ = (ctx);                                                          \
        if (!vka_enter(guarded_)) return VKATTN_ERROR_BUSY;                                        \
        vkattn_status guarded_status_ = (call);                                                    \
        vka_leave(guarded_);                                                                       \
        return guarded_status_;                                                                    \
    } while (0)

/* Creates a context whose fault injector is armed from the start (tests only). */
vkattn_status vka_context_create_with_faults(const vkattn_context_desc *desc, const vka_faults *faults,
                                             vkattn_context **out, vkattn_error *error);
/* The same for vkattn_context_create_external. */
struct vkattn_external_device;
vkattn_status vka_context_create_external_with_faults(const struct vkattn_external_device *device,
                                                      const vka_faults *faults, vkattn_context **out,
                                                      vkattn_error *error);
/* Re-arms (or disarms, with zeros) a context's fault injector and resets its counters. */
void vka_context_set_faults(vkattn_context *ctx, const vka_faults *faults);

#endif
