/* vkattn bench: the records a sweep produces and the writers that report them. */
#ifndef VKATTN_BENCH_H
#define VKATTN_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "cli.h"
#include "vkattn.h"

/* Mask settings a configuration can run with. */
typedef enum bench_mask {
    BENCH_MASK_NONE = 0,
    BENCH_MASK_CAUSAL = 1,
    BENCH_MASK_PADDING = 2,        /* key_padding_mask with the last quarter of the keys padded */
    BENCH_MASK_CAUSAL_PADDING = 3,
    BENCH_MASK_FLOAT_CAUSAL = 4    /* the causal mask as a float (L,S) attn_mask: -inf above the
                                      diagonal, as nn.Transformer.generate_square_subsequent_mask */
} bench_mask;

/* "none", "causal", "padding", "causal+padding", "float-causal" */
const char *bench_mask_name(bench_mask mask);

/* One configuration of a sweep. */
typedef struct bench_config {
    uint32_t batch, query_len, key_len; /* key_len == query_len: self-attention */
    uint32_t embed_dim, heads;
    bench_mask mask;
    vkattn_path path;                   /* UNFUSED or FUSED */
    vkattn_dtype dtype;                 /* layer storage: F32 or F16 */
    const uint8_t *head_mask;           /* NULL, or `heads` entries (1 = keep): --head-mask */
    uint32_t active_heads;              /* heads computed (= heads without a mask) */
} bench_config;

/* "B1_L1024_S1024_E512_H8_none_unfused_f32" (+ "_active6" for a pruned layer): the key --compare
 * matches configurations by. */
void bench_config_key(const bench_config *c, char *buf, size_t size);

/* Time statistics of one quantity over the repeats, in milliseconds. */
typedef struct bench_time {
    double median_ms, min_ms;
} bench_time;

typedef struct bench_stage_result {
    int present;                         /* this stage ran in this configuration */
    bench_time time;
    double flops, bytes;                 /* from vkattn_forward_cost */
    double gflops, gbs;                  /* at the median time */
    double roofline_pct;                 /* % of min(peak FLOP/s, intensity * peak bandwidth) */
} bench_stage_result;

typedef struct bench_result {
    bench_config config;
    vkattn_path path_ran;                /* what the layer reported */
    uint32_t repeats;                    /* timed forwards */
    uint32_t dispatches, submits;
    uint64_t workspace_bytes;
    bench_time gpu;                      /* whole forward, first to last timestamp */
    bench_time host;                     /* vkattn_forward wall time: record + submit + wait */
    bench_time host_overhead;            /* host minus GPU time, per forward */
    double flops, bytes, gflops, gbs, roofline_pct; /* whole forward, at the median GPU time */
    double cpu_ms;                       /* the CPU path, one run; < 0 when skipped */
    bench_stage_result stages[VKATTN_STAGE_COUNT];
} bench_result;

/* Everything a report needs besides the results. */
typedef struct bench_run_info {
    vkattn_device_info device;
    vkattn_peak peak;                    /* zeros when --no-peak */
    double min_time_s;
    const char *preset;                  /* NULL when shapes came from flags */
} bench_run_info;

/* Median and min of `n` >= 1 samples (sorts `v` in place). */
bench_time bench_stats(double *v, uint32_t n);

/* Each step's fastest GPU time over a configuration's timed forwards (vkattn_layer_last_step_times),
 * which `--trace` prints after timing it: where a stage has several steps (decoding's attention
 * and its merge), what each took. */
enum { BENCH_MAX_STEPS = 64 };
typedef struct bench_steps {
    uint32_t count, runs;                /* steps of the forward (the first BENCH_MAX_STEPS kept); forwards seen */
    vkattn_step_time best[BENCH_MAX_STEPS];
} bench_steps;
/* Takes the layer's last forward's step times into `s` (a forward of another step count starts it
 * again). */
void bench_steps_add(bench_steps *s, const vkattn_layer *layer);
/* "  step times (ms, fastest of N forwards[; what]): 1 matmul_cm 2.107, 2 attn_cm 2.154, ..." */
void bench_steps_print(FILE *out, const char *what, const bench_steps *s);

/* Per-stage GFLOP/s, GB/s and % of the roofline from times, costs and the peak (in place). */
void bench_derive(bench_result *r, const vkattn_peak *peak);

/* The device, tuning and peak lines every report opens with. */
void bench_print_device(FILE *out, const bench_run_info *info);
/* Human-readable table on `out`: one line per configuration, then one per stage. */
void bench_print_table(FILE *out, const bench_run_info *info, const bench_result *results, uint32_t count);
/* Machine-readable files; 0 on success, else a message on stderr and non-zero. */
int bench_write_json(const char *path, const bench_run_info *info, const bench_result *results, uint32_t count);
/* Adds vkattn_version, device, peak, min_time_s and preset to a JSON object; 0, or 1 when out of
 * memory. */
struct cJSON;
int bench_json_run_info(struct cJSON *root, const bench_run_info *info);
int bench_write_csv(const char *path, const bench_run_info *info, const bench_result *results, uint32_t count);
/* 1 if `path` names a plot bench_write_plot can write: it ends in .png or .svg (any case), which
 * chooses the format. */
int bench_plot_path_ok(const char *path);
#define BENCH_PLOT_NAMES "a file name ending in .png or .svg"
/* GFLOP/s against sequence length, one line per path and stage, titled with the device, drawn with
 * cairo as a PNG or an SVG file (bench_plot.h). */
int bench_write_plot(const char *path, const bench_run_info *info, const bench_result *results, uint32_t count);

/* What `vkattn bench` was asked for (cmd_bench.c's option table); zeros and empty lists mean the
 * preset's values. */
typedef struct bench_options {
    const char *preset, *device, *json, *csv, *plot, *head_mask;
    cli_list batch, len, kv_len, embed, heads, mask, path, dtype; /* dtype: vkattn_dtype values */
    double min_time_s, peak_seconds, cpu_max_gflop;
    uint32_t warmup, kv_heads, window;
    int no_cpu, no_peak, trace, no_mqa, no_window;
    int features; /* --features: decode steps with today's models' q/k norms and scaled RoPE against without */
    uint32_t stack; /* --stack N: decode steps of an N-layer stack, one submission per token against blocking */
} bench_options;

/* In the functions of cmd_bench.c and bench_decode.c that keep `int rc`, `vkattn_context *ctx` and a
 * `fail:` label: a call that failed (BENCH_TRY) or an allocation that did (BENCH_NEED) says so and
 * jumps there. */
#define BENCH_TRY(expr, what)                                                                      \
    do {                                                                                           \
        vkattn_status s_ = (expr);                                                                 \
        if (s_ != VKATTN_OK) {                                                                     \
            rc = cli_fail("bench", what, s_, vkattn_context_last_error(ctx));                      \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

#define BENCH_NEED(ptr)                                                                            \
    do {                                                                                           \
        if (!(ptr)) {                                                                              \
            rc = cli_fail("bench", "allocating host data", VKATTN_ERROR_OUT_OF_HOST_MEMORY, NULL); \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* `vkattn bench --preset decode` (bench_decode.c): decoding one token at a time through the paged KV
 * cache against context length, beside re-projecting the prefix. Runs on `out`; returns the exit
 * code. */
int bench_decode(FILE *out, const bench_options *o);

/* `vkattn bench --compare OLD.json NEW.json`: per-configuration speed ratios (old time / new time,
 * so > 1 means NEW is faster), whole forward and per stage, printed on `out`. Returns the exit code. */
int bench_compare(FILE *out, const char *old_path, const char *new_path);

#endif
