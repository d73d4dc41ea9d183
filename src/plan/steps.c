/* The step list (steps.h): each kernel's loop model and description through the table its rows
 * in kernel_list.h make, and what a plan needs beside its steps. */
#include "plan/steps.h"

#include <stdlib.h>
#include <string.h>

typedef struct kernel_functions {
    uint64_t (*trips)(const vka_step *step);
    void (*describe)(vka_text *t, const vka_step *step);
} kernel_functions;

static const kernel_functions functions[VKA_KERNEL_COUNT] = {
#define VKA_KERNEL(id, spirv, source, defines, f16_out, push, slots, trips, describe)                             \
    [VKA_KERNEL_##id] = {trips, describe},
#include "pipeline/kernel_list.h"
#undef VKA_KERNEL
};

uint64_t vka_step_loop_trips(const vka_step *s)
{
    return s->kind == VKA_STEP_DISPATCH && (unsigned)s->kernel < VKA_KERNEL_COUNT ? functions[s->kernel].trips(s) : 0;
}

void vka_step_describe(vka_text *t, const vka_step *s)
{
    if (s->kind == VKA_STEP_DISPATCH && (unsigned)s->kernel < VKA_KERNEL_COUNT) functions[s->kernel].describe(t, s);
}

const char *vka_step_name(const vka_step *s)
{
    if (s->kind == VKA_STEP_ZERO) return "fill";
    if (s->kind == VKA_STEP_COPY) return "copy";
    if (s->kind == VKA_STEP_WRITE) return "write";
    const vka_kernel_info *info = vka_kernel_get(s->kernel);
    return info ? info->spirv : "?";
}

/* The peak microkernels are not planned: they have neither. */
uint64_t vka_untimed_trips(const vka_step *step)
{
    (void)step;
    return 0;
}

void vka_untimed_describe(vka_text *t, const vka_step *step) { (void)t, (void)step; }

int vka_fold_groups(uint64_t total, const uint32_t max[3], uint32_t out[3])
{
    uint64_t x = total < max[0] ? total : max[0];
    if (x == 0) return 0;
    uint64_t rest = vka_ceil_div(total, x);
    uint64_t y = rest < max[1] ? rest : max[1];
    uint64_t z = vka_ceil_div(rest, y);
    if (z > max[2]) return 0;
    out[0] = (uint32_t)x, out[1] = (uint32_t)y, out[2] = (uint32_t)z;
    return 1;
}

void vka_plan_free(vka_plan *plan)
{
    free(plan->steps);
    free(plan->copies);
    free(plan->words);
    memset(plan, 0, sizeof *plan);
}

uint64_t vka_plan_workspace_total(const vka_plan *plan)
{
    uint64_t total = 0;
    for (int r = VKA_FIRST_WORKSPACE_ROLE; r < VKA_ROLE_COUNT; r++) total += plan->workspace_bytes[r];
    return total;
}
