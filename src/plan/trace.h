/* A plan as text, for vkattn_forward_explain and `vkattn run --trace`. */
#ifndef VKA_TRACE_H
#define VKA_TRACE_H

#include "plan/plan.h"

/* Writes the problem's shapes and the plan's steps into `buf` (at most `cap` bytes, always
 * nul-terminated when cap > 0); returns the length the whole text needs. */
size_t vka_plan_describe(const vka_problem *p, const vka_plan *plan, uint32_t loop_budget, char *buf, size_t cap);

#endif
