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
#include "plan/steps.h"

struct vkattn_context {
    vka_device dev;
    VkDebugUtilsMessengerEXT messenger;
    vka_transfer transfer;      /* host <-> device copies for memory the host cannot map */
    vka_pipeline_cache pipelines;
    const vka_tuning *tuning; /* kernel shapes for this device (src/device/tuning.c): tuning_own, or a
                                 class's row after a failed cooperative-matrix self-test */
    vka_tuning tuning_own;    /* the tuning asked for, with the fields a tuning string set */
    int tuning_forced;        /* asked for by name (desc->tuning or VKATTN_TUNING) or with fields set, not
                                 the device's class alone */
    uint32_t loop_budget;       /* loop trips per invocation the plan keeps to, 0 = unlimited */
    uint64_t state_budget_bytes; /* the fused key parts' softmax states at most: 0 = 64 MiB. Tests
                                    lower it (internal API) so that parts are visited in chunks
                                    that carry the state, which only huge shapes need otherwise */
    uint64_t binding_bytes;      /* the storage bindings' range at most: 0 = the device's. Tests lower
                                    it (internal API) so that small matmuls bind slices of their
                                    operands, which only huge layers need otherwise */
    vka_buffer dummy;           /* bound to descriptor slots a dispatch does not use */
    int attn_cm_verdict;        /* attn_cm's self-tests (vka_context_plan): 0 none run yet, 1 passed,
                                   -1 one failed (attn_fused runs the attention) */
    uint64_t attn_cm_checked[16]; /* the builds of attn_cm whose self-test passed (vka_attn_cm_variant;
                                     the oldest replaced when full: tested again if planned again) */
    uint32_t attn_cm_checked_count;
    int validation_enabled;
    uint32_t validation_messages;
    int creating_device;          /* inside vkCreateDevice: vka_validation_message_ignored applies */
    atomic_int busy;            /* a call is inside (vka_enter): the threading rule, checked */
    vka_link children;          /* the objects made from it and not yet destroyed (vka_child) */
    uint64_t layers_made;       /* layers created so far: the next one's serial number */
};

/* An object made from a context (a layer, tensor, KV cache or submission). The context keeps them
 * in one list and, when it goes, destroys what is left, newest first: each object's destroy first
 * releases whatever still uses it (vka_user), so the order is never wrong. */
typedef struct vka_child {
    vka_link link;
    void (*destroy)(struct vka_child *self);
} vka_child;

/* Links `child` into the context's list, with the function that destroys the object around it. */
void vka_context_adopt(vkattn_context *ctx, vka_child *child, void (*destroy)(vka_child *self));
/* Unlinks it (every destroy does; a no-op for a child never adopted). */
static inline void vka_child_forget(vka_child *child) { vka_list_remove(&child->link); }

/* Whoever holds objects until work of theirs on the device has finished (an unfinished
 * submission). While an object names its user, other calls on it are refused (VKATTN_ERROR_BUSY);
 * `release` makes the user let go of everything it holds: wait for that work, or drop it;
 * `writes` says whether work it holds and has not run writes any byte of a tensor (whose values
 * then do not exist yet). */
typedef struct vka_user {
    void (*release)(struct vka_user *self);
    int (*writes)(const struct vka_user *self, const struct vkattn_tensor *t);
} vka_user;

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

/* The device facts the context's plans are built with. */
vka_plan_limits vka_context_plan_limits(const vkattn_context *ctx);
/* Builds the plan of `p` on this context (into `plan`, as vka_plan_build). A plan that takes a
 * build of attn_cm (or attn_cm2) not yet tested on this context runs its self-test
 * (api/coopmat_check.h, vka_attn_cm_variant) first: where attn_cm2's
 * fails, the context leaves VK_NV_cooperative_matrix2 alone from then on and plans again on
 * attn_cm, which is tested in turn; where attn_cm's fails, it keeps attn_fused for the attention
 * from then on. The device's note says what failed. */
vkattn_status vka_context_plan(vkattn_context *ctx, const vka_problem *p, vka_plan *plan);

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
