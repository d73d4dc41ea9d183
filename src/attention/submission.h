/* Submissions: forwards recorded into one command buffer and submitted without waiting. While a
 * submission is unfinished, the layers and tensors it uses point at it (their `submission`), which
 * is how every other call sees they are busy. */
#ifndef VKA_SUBMISSION_H
#define VKA_SUBMISSION_H

#include "attention/args.h"
#include "device/context.h"

typedef struct vka_submitted_forward {
    vkattn_layer *layer;
    vka_args args;
    vka_problem problem;
    vkattn_forward_stats stats; /* recorded at submit, given to the layer once the submit succeeded */
} vka_submitted_forward;

typedef enum vka_submission_state {
    VKA_SUBMISSION_OPEN = 0, /* taking forwards (maybe none yet) */
    VKA_SUBMISSION_RUNNING = 1 /* submitted, its fence not yet seen signalled */
} vka_submission_state;

struct vkattn_submission {
    vkattn_context *ctx;
    vka_link link; /* in ctx->submissions */
    vka_commands commands;
    vka_submission_state state;
    int dropped; /* an object it used was destroyed before it was submitted: its forwards are gone,
                    and the next add or submit says so */
    vka_submitted_forward *forwards;
    uint32_t count, capacity;
};

/* Makes sure nothing of `s` still runs or waits to run, for the destruction of an object it uses:
 * waits for it if submitted, drops its forwards (and remembers that) if not. Frees its layers and
 * tensors either way. */
void vka_submission_release(vkattn_submission *s);

#endif
