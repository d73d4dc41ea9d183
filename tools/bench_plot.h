/* vkattn bench --plot: the chart's content, computed apart from its drawing (bench_plot_draw), so
 * that tests can check what a picture hides from them: the series and their labels, the notes, the
 * ticks, and where each point lands.
 *
 * One series per (path, stage) — "total" being the whole forward — and, when the sweep varies them,
 * per E, H, B, mask, dtype and S. Stages without FLOPs (softmax, head averaging) have no GFLOP/s and
 * are left out. x is log2(L) with ticks at the L values present; y is linear from 0. The title
 * names the device and driver, so a lavapipe chart cannot pass for a GPU chart.
 */
#ifndef VKATTN_BENCH_PLOT_H
#define VKATTN_BENCH_PLOT_H

#include <cairo.h>
#include <stdint.h>

#include "bench.h"
#include "canvas.h"

#define BENCH_PLOT_WIDTH 1120
#define BENCH_PLOT_MIN_HEIGHT 580
#define BENCH_PLOT_TEXT 320 /* bytes of one label or line of text */

typedef struct plot_series {
    const bench_config *like;      /* the group's configuration (L aside), inside the results */
    int stage;                     /* a vkattn_stage, or -1 for the whole forward */
    uint32_t first, n;             /* its points in bench_plot.points, sorted by L */
    char label[BENCH_PLOT_TEXT];   /* "unfused total", "fused fused E=64 S=128" */
    rgb_color color;
    int dashed;                    /* colours repeat after 12 series; the repeats are dashed */
} plot_series;

typedef struct plot_point {
    uint32_t series;
    double l, gflops;
} plot_point;

typedef struct plot_tick {
    double l;
    int labelled;                  /* the tick has its number (when it does not crowd the last one) */
} plot_tick;

typedef struct bench_plot {
    uint32_t width, height;        /* pixels (PNG) or px units (SVG) */
    uint32_t left, top, right, bottom; /* the plot area's frame */
    plot_series *series;
    plot_point *points;
    plot_tick *ticks;              /* x ticks: each L present, ascending */
    uint32_t ns, np, nticks;
    double xmin, xmax;             /* the x axis, in log2 L */
    double ytop, ystep;            /* the y axis: 0..ytop GFLOP/s, a grid line every ystep */
    double peak;                   /* measured fp32 peak GFLOP/s; 0 = not measured */
    int peak_drawn;                /* near enough to the data to be drawn as a dashed line */
    char title[BENCH_PLOT_TEXT];   /* "vkattn bench: GFLOP/s against sequence length on DEVICE" */
    char device[BENCH_PLOT_TEXT];  /* the device, its type, Vulkan version and driver */
    char cpu_note[BENCH_PLOT_TEXT]; /* "... these are not GPU figures" on a CPU device, else "" */
    char note[BENCH_PLOT_TEXT];    /* timing, and the peak: drawn, or off the scale, or none */
    char legend[2][BENCH_PLOT_TEXT]; /* "one line per path and stage", "and per E, S" (or "") */
    char xlabel[BENCH_PLOT_TEXT];  /* "sequence length L (log2 scale)", or query length when S varies */
} bench_plot;

/* Builds the chart of `count` results (which must outlive it). 0, or 1 when out of memory. */
int bench_plot_build(const bench_run_info *info, const bench_result *results, uint32_t count, bench_plot *out);
void bench_plot_free(bench_plot *plot);
/* Where L and a GFLOP/s figure land on the picture. */
double bench_plot_x(const bench_plot *plot, double l);
double bench_plot_y(const bench_plot *plot, double gflops);
/* The centre of series k's marker in the legend. */
void bench_plot_legend_at(const bench_plot *plot, uint32_t k, double *x, double *y);
/* Draws the chart onto a white width x height surface. */
void bench_plot_draw(cairo_t *cr, const bench_plot *plot);

#endif
