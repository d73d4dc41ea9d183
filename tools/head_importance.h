/* Head importance by ablation: how much the layer's output changes when one head alone is pruned.
 * Shared by `vkattn heads` and its test (which checks that device and CPU figures agree). */
#ifndef VKATTN_HEAD_IMPORTANCE_H
#define VKATTN_HEAD_IMPORTANCE_H

#include <stdint.h>

#include "vkattn.h"

typedef struct head_score {
    uint32_t head;  /* 0-based */
    int active;     /* 0: already pruned by the starting mask (not measured) */
    int alone;      /* the only active head: removing it leaves no attention to compare (not measured) */
    double rel_l2;  /* ||y without head - y||_2 / ||y||_2; 0 when not measured */
    double max_abs; /* max |y without head - y|; 0 when not measured */
} head_score;

/* A forward to repeat: a layer on the device, or (layer == NULL) the CPU reference of `desc`. */
typedef struct head_runner {
    vkattn_layer *layer;
    vkattn_layer_desc desc;          /* for the CPU path; desc.head_mask is the starting mask */
    const vkattn_weights *weights;   /* for the CPU path */
    vkattn_host_forward_desc forward; /* inputs; output is set by the functions below */
    size_t out_elems;
} head_runner;

/* One forward with `keep` (H entries, 1 = keep) into `out`. */
vkattn_status head_runner_forward(head_runner *r, const uint8_t *keep, float *out, vkattn_error *error);

/* Scores every head: output with all of the starting mask's heads, then with each active head
 * removed in turn. `scores` holds H entries. */
vkattn_status head_importance_measure(head_runner *r, const uint8_t *start, head_score *scores, vkattn_error *error);

/* Relative L2 and max-abs difference of two outputs. */
void head_compare(const float *a, const float *ref, size_t n, double *rel_l2, double *max_abs);

/* Sorts scores by rel_l2, most important first (inactive heads last). */
void head_scores_rank(head_score *scores, uint32_t H);

#endif
