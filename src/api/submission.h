/* Submissions: forwards recorded into one command buffer and submitted without waiting. While a
 * submission is unfinished, the layers, tensors and KV caches it uses point at it (their `user`),
 * which is how every other call sees they are busy. */
#ifndef VKA_SUBMISSION_H
#define VKA_SUBMISSION_H

#include "problem/args.h"
#include "api/cached.h"
#include "api/context.h"

typedef struct vka_submitted_forward {
    vkattn_layer *layer;
    vka_args args;              /* a plain forward's (unused for a cached one) */
    vka_problem problem;
    vka_cached_forward *cached; /* a forward through a KV cache, committed at add (its own arguments); else NULL */
    vkattn_forward_stats stats; /* recorded at submit, given to the layer once the submit succeeded */
} vka_submitted_forward;

typedef enum vka_submission_state {
    VKA_SUBMISSION_OPEN = 0, /* taking forwards (maybe none yet) */
    VKA_SUBMISSION_RUNNING = 1 /* submitted, its fence not yet seen signalled */
} vka_submission_state;

struct vkattn_submission {
    vkattn_context *ctx;
    vka_child child; /* in the context's list */
    vka_user user;   /* what its layers and tensors name while it holds them */
    vka_commands commands;
    vka_submission_state state;
    int dropped; /* an object it used was destroyed before it was submitted: its forwards are gone,
                    and the next add or submit says so */
    vka_submitted_forward *forwards;
    uint32_t count, capacity;
};

#endif
