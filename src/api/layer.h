/* The layer object: weights on the device (and on the host for the CPU path), the workspace a
 * forward needs, and the command buffer, fence and descriptor pool a forward records into. */
#ifndef VKA_LAYER_H
#define VKA_LAYER_H

#include "problem/args.h"
#include "problem/config.h"
#include "plan/plan.h"
#include "api/context.h"

struct vkattn_layer {
    vkattn_context *ctx;
    vka_child child;              /* in the context's list */
    uint64_t serial;              /* unique among the context's layers, never reused (a KV cache's owner) */
    vka_user *user;               /* the unfinished submission it is in, if any */
    vka_layer_config cfg;
    vkattn_layer_desc desc; /* resolved */

    float *host_block;      /* one allocation behind `host` (its own parts) */
    vkattn_weights host;    /* vkattn_layer_desc.host_weights: a canonical copy (in_proj_weight when packed,
                               else q/k/v), the caller's pointers, or no projection weights; sinks and
                               q/k norm weights always the layer's own */
    float *alibi_slopes;    /* H slopes in host_block (resolved: given or standard), NULL without ALiBi */
    uint8_t *head_active;   /* H entries, 1 = computed; the device weights hold only these heads */

    vka_buffer buffers[VKA_ROLE_COUNT]; /* the layer-owned roles: weights and workspace */

    vka_commands commands;        /* the forward's command buffer and fence */
    VkDescriptorPool descriptor_pool;
    uint32_t descriptor_sets;     /* sets the pool was made for */
    VkDescriptorSet *step_sets;   /* per plan step: its set (dispatch steps), made before recording */
    const vka_pipeline **step_pipelines; /* per plan step: its pipeline (dispatch steps) */
    uint32_t step_capacity;

    vka_plan plan;                /* reused across forwards */

    int timing;                   /* record a timestamp around every step */
    VkQueryPool query_pool;
    uint32_t query_capacity;
    vkattn_forward_stats stats;   /* of the last successful device forward */
    uint64_t *ticks;              /* its timestamps when timed: before step 0, then after each step */
    uint32_t ticks_capacity;
    vkattn_step_time *step_times; /* its steps' times when timed (stats.timed), step_time_count of them */
    uint32_t step_time_count, step_times_capacity;
    vkattn_tensor *host_io[VKA_ARG_COUNT]; /* vkattn_forward_host's device copies, by argument */
};


/* Whether the layer keeps its projection weights on the host (the CPU path, set_head_mask). */
int vka_layer_has_host_weights(const vkattn_layer *layer);

/* Runs a validated problem on the device with the given caller buffers (indexed by role): records
 * it into the layer's command buffer, submits and waits. */
vkattn_status vka_layer_run(vkattn_layer *layer, const vka_problem *p, vka_buffer *caller[VKA_ROLE_COUNT]);
/* Records it into `cmd` (begun, someone else's to submit); the layer's workspace and descriptor
 * sets are then in use until that submission completes. On failure nothing was recorded into
 * `cmd`. The forward's stats go to *stats, not to the layer: the caller sets layer->stats once
 * the whole recording or submission has succeeded. */
vkattn_status vka_layer_record(vkattn_layer *layer, const vka_problem *p, vka_buffer *caller[VKA_ROLE_COUNT],
                               VkCommandBuffer cmd, vkattn_forward_stats *stats);

#endif
