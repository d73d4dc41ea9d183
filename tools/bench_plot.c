/* vkattn bench --plot: GFLOP/s against sequence length, drawn with cairo into a PNG or an SVG file
 * (see bench_plot.h for what the chart shows). */
#include "bench_plot.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define PLOT_LEFT 90
#define PLOT_TOP 100
#define PLOT_RIGHT (BENCH_PLOT_WIDTH - 330)
#define PLOT_HEIGHT 400
#define LEGEND_ROW 18
#define TICK_LABEL_GAP 38    /* pixels between the x tick labels drawn */
#define PEAK_DRAW_LIMIT 20.0 /* a peak further above the data than this would flatten it */

static const rgb_color INK = {0, 0, 0}, TEXT = {0x33, 0x33, 0x33}, GRID = {0xe4, 0xe4, 0xe4},
                       FRAME = {0x55, 0x55, 0x55}, WARNING = {0xc0, 0x00, 0x00}, WHITE = {255, 255, 255};

/* Colours repeat after PALETTE_SIZE series; the repeats are dashed to stay distinguishable. */
static const rgb_color palette[] = {{0x1f, 0x77, 0xb4}, {0xd6, 0x27, 0x28}, {0x2c, 0xa0, 0x2c}, {0xff, 0x7f, 0x0e},
                                    {0x94, 0x67, 0xbd}, {0x8c, 0x56, 0x4b}, {0xe3, 0x77, 0xc2}, {0x17, 0xbe, 0xcf},
                                    {0x7f, 0x7f, 0x7f}, {0xbc, 0xbd, 0x22}, {0x39, 0x3b, 0x79}, {0xad, 0x49, 0x4a}};
#define PALETTE_SIZE (sizeof palette / sizeof palette[0])

/* ---------------------------------------------------------------------------------------------- */
/* What the chart shows                                                                            */
/* ---------------------------------------------------------------------------------------------- */

/* Which fields besides L vary across the sweep: those split series and appear in labels. */
typedef struct plot_varies {
    int embed, heads, batch, mask, dtype, key_len;
} plot_varies;

static int same_group(const bench_config *a, const bench_config *b, const plot_varies *v)
{
    return a->path == b->path && a->embed_dim == b->embed_dim && a->heads == b->heads && a->batch == b->batch &&
           a->mask == b->mask && a->dtype == b->dtype && (!v->key_len || a->key_len == b->key_len);
}

static int point_order(const void *pa, const void *pb)
{
    const plot_point *a = pa, *b = pb;
    if (a->series != b->series) return a->series < b->series ? -1 : 1;
    return (a->l > b->l) - (a->l < b->l);
}

static void find_varies(const bench_result *results, uint32_t count, plot_varies *v)
{
    memset(v, 0, sizeof *v);
    for (uint32_t i = 1; i < count; i++) {
        const bench_config *a = &results[0].config, *b = &results[i].config;
        v->embed |= a->embed_dim != b->embed_dim;
        v->heads |= a->heads != b->heads;
        v->batch |= a->batch != b->batch;
        v->mask |= a->mask != b->mask;
        v->dtype |= a->dtype != b->dtype;
    }
    for (uint32_t i = 0; i < count; i++) v->key_len |= results[i].config.key_len != results[i].config.query_len;
}

/* Appends printf-style text to the string in buf. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void append(char *buf, size_t size, const char *format, ...)
{
    size_t n = strlen(buf);
    if (n + 1 >= size) return;
    va_list args;
    va_start(args, format);
    vsnprintf(buf + n, size - n, format, args);
    va_end(args);
}

static void series_label(plot_series *s, const plot_varies *v)
{
    const bench_config *c = s->like;
    char *buf = s->label;
    const size_t size = sizeof s->label;
    snprintf(buf, size, "%s %s", vkattn_path_name(c->path),
             s->stage < 0 ? "total" : vkattn_stage_name((vkattn_stage)s->stage));
    if (v->embed) append(buf, size, " E=%u", c->embed_dim);
    if (v->heads) append(buf, size, " H=%u", c->heads);
    if (v->batch) append(buf, size, " B=%u", c->batch);
    if (v->key_len) append(buf, size, " S=%u", c->key_len);
    if (v->mask) append(buf, size, " %s", bench_mask_name(c->mask));
    if (v->dtype) append(buf, size, " %s", vkattn_dtype_name(c->dtype));
}

/* The series and their points, in order; 0, or 1 when out of memory. */
static int collect(const bench_result *results, uint32_t count, const plot_varies *v, bench_plot *p)
{
    const size_t cap = (size_t)count * (VKATTN_STAGE_COUNT + 1) + 1;
    p->series = calloc(cap, sizeof *p->series);
    p->points = calloc(cap, sizeof *p->points);
    if (!p->series || !p->points) return 1;
    for (uint32_t i = 0; i < count; i++) {
        const bench_result *r = &results[i];
        for (int s = -1; s < VKATTN_STAGE_COUNT; s++) {
            double g = s < 0 ? r->gflops : r->stages[s].gflops;
            double flops = s < 0 ? r->flops : r->stages[s].flops;
            if (s >= 0 && !r->stages[s].present) continue;
            if (!(flops > 0) || !isfinite(g) || g < 0 || r->config.query_len == 0) continue;
            uint32_t k = 0;
            while (k < p->ns && !(p->series[k].stage == s && same_group(p->series[k].like, &r->config, v))) k++;
            if (k == p->ns) {
                plot_series *n = &p->series[p->ns++];
                n->like = &r->config, n->stage = s;
                n->color = palette[k % PALETTE_SIZE], n->dashed = k / PALETTE_SIZE % 2;
                series_label(n, v);
            }
            p->points[p->np++] = (plot_point){k, r->config.query_len, g};
        }
    }
    qsort(p->points, p->np, sizeof *p->points, point_order);
    for (uint32_t i = 0; i < p->np; i++)
        if (p->series[p->points[i].series].n++ == 0) p->series[p->points[i].series].first = i;
    return 0;
}

/* The axes' ranges and the peak line. */
static void scale(const bench_run_info *info, bench_plot *p)
{
    double max_g = 0;
    p->xmin = INFINITY, p->xmax = -INFINITY;
    for (uint32_t i = 0; i < p->np; i++) {
        p->xmin = fmin(p->xmin, log2(p->points[i].l));
        p->xmax = fmax(p->xmax, log2(p->points[i].l));
        max_g = fmax(max_g, p->points[i].gflops);
    }
    if (p->np == 0) p->xmin = 0, p->xmax = 1;
    if (p->xmax - p->xmin < 1e-9) p->xmin -= 0.5, p->xmax += 0.5;
    p->peak = info->peak.fp32_gflops > 0 ? info->peak.fp32_gflops : 0;
    p->peak_drawn = p->peak > 0 && max_g > 0 && p->peak <= PEAK_DRAW_LIMIT * max_g;
    double top = fmax(max_g, p->peak_drawn ? p->peak : 0) * 1.08;
    if (!(top > 0)) top = 1;
    p->ystep = canvas_nice_step(top / 5); /* about five intervals */
    p->ytop = ceil(top / p->ystep) * p->ystep;
    char peak_note[200];
    if (p->peak_drawn) snprintf(peak_note, sizeof peak_note, "dashed: measured fp32 peak %.1f GFLOP/s", p->peak);
    else if (p->peak > 0)
        snprintf(peak_note, sizeof peak_note, "measured fp32 peak %.1f GFLOP/s is off the scale (%.0fx the highest "
                 "point)", p->peak, max_g > 0 ? p->peak / max_g : INFINITY);
    else snprintf(peak_note, sizeof peak_note, "no measured peak");
    snprintf(p->note, sizeof p->note, "medians of GPU timestamps, at least %.2f s per configuration; %s",
             info->min_time_s, peak_note);
}

/* x ticks at the L values present, labelled unless a label would crowd the previous one. */
static int make_ticks(bench_plot *p)
{
    p->ticks = calloc(p->np ? p->np : 1, sizeof *p->ticks);
    double *ls = malloc((p->np ? p->np : 1) * sizeof *ls);
    if (!p->ticks || !ls) {
        free(ls);
        return 1;
    }
    for (uint32_t i = 0; i < p->np; i++) ls[i] = p->points[i].l;
    qsort(ls, p->np, sizeof *ls, cli_compare_doubles);
    double last = -1e9;
    for (uint32_t i = 0; i < p->np; i++) {
        if (i && ls[i] == ls[i - 1]) continue;
        double x = bench_plot_x(p, ls[i]);
        plot_tick *t = &p->ticks[p->nticks++];
        t->l = ls[i], t->labelled = x - last >= TICK_LABEL_GAP;
        if (t->labelled) last = x;
    }
    free(ls);
    return 0;
}

static void describe(const bench_run_info *info, const plot_varies *v, bench_plot *p)
{
    snprintf(p->title, sizeof p->title, "vkattn bench: GFLOP/s against sequence length on %s", info->device.name);
    cli_describe_device(&info->device, p->device, sizeof p->device);
    snprintf(p->cpu_note, sizeof p->cpu_note, "%s", info->device.type == VKATTN_DEVICE_CPU ?
             "a CPU implementation of Vulkan (software rasterizer): these are not GPU figures" : "");
    snprintf(p->legend[0], sizeof p->legend[0], "one line per path and stage");
    const char *names[] = {"E", "H", "B", "S", "mask", "dtype"};
    const int on[] = {v->embed, v->heads, v->batch, v->key_len, v->mask, v->dtype};
    for (int i = 0; i < 6; i++)
        if (on[i]) append(p->legend[1], sizeof p->legend[1], p->legend[1][0] ? ", %s" : "and per %s", names[i]);
    snprintf(p->xlabel, sizeof p->xlabel, "%s length L (log2 scale)", v->key_len ? "query" : "sequence");
}

int bench_plot_build(const bench_run_info *info, const bench_result *results, uint32_t count, bench_plot *out)
{
    bench_plot p;
    memset(&p, 0, sizeof p);
    plot_varies v;
    find_varies(results, count, &v);
    if (collect(results, count, &v, &p)) {
        bench_plot_free(&p);
        return 1;
    }
    scale(info, &p);
    if (make_ticks(&p)) {
        bench_plot_free(&p);
        return 1;
    }
    describe(info, &v, &p);
    p.width = BENCH_PLOT_WIDTH;
    p.left = PLOT_LEFT, p.top = PLOT_TOP, p.right = PLOT_RIGHT, p.bottom = PLOT_TOP + PLOT_HEIGHT;
    p.height = PLOT_TOP + (p.ns + 3) * LEGEND_ROW + 20;
    if (p.height < BENCH_PLOT_MIN_HEIGHT) p.height = BENCH_PLOT_MIN_HEIGHT;
    *out = p;
    return 0;
}

void bench_plot_free(bench_plot *p)
{
    free(p->series), free(p->points), free(p->ticks);
    memset(p, 0, sizeof *p);
}

double bench_plot_x(const bench_plot *p, double l)
{
    return PLOT_LEFT + 15 + (log2(l) - p->xmin) / (p->xmax - p->xmin) * (PLOT_RIGHT - PLOT_LEFT - 30);
}

double bench_plot_y(const bench_plot *p, double g)
{
    return PLOT_TOP + PLOT_HEIGHT * (1 - g / p->ytop);
}

/* The legend: two heading lines (the second may be empty), then one row per series. */
static double legend_row_y(const bench_plot *p, uint32_t k)
{
    return PLOT_TOP + 4 + (p->legend[1][0] ? LEGEND_ROW : 0) + LEGEND_ROW + 4 + (double)k * LEGEND_ROW;
}

void bench_plot_legend_at(const bench_plot *p, uint32_t k, double *x, double *y)
{
    *x = PLOT_RIGHT + 24 + 13;
    *y = legend_row_y(p, k) - 4;
}

/* ---------------------------------------------------------------------------------------------- */
/* Drawing                                                                                         */
/* ---------------------------------------------------------------------------------------------- */

/* The middle of the pixel row or column that holds v: a 1-pixel line there is sharp in a PNG. */
static double sharp(double v)
{
    return floor(v) + 0.5;
}

static void text(cairo_t *cr, double x, double y, const char *s, double size, int bold, rgb_color color,
                 canvas_align align)
{
    canvas_font(cr, size, bold);
    canvas_set_color(cr, color);
    canvas_text(cr, x, y, s, align);
}

/* Fused points are squares, unfused ones circles. */
static void marker(cairo_t *cr, vkattn_path path, double x, double y, rgb_color color)
{
    canvas_set_color(cr, color);
    if (path == VKATTN_PATH_FUSED) cairo_rectangle(cr, x - 3.5, y - 3.5, 7, 7);
    else cairo_arc(cr, x, y, 3.8, 0, 6.283185307179586);
    cairo_fill(cr);
}

static void series_stroke(cairo_t *cr, const plot_series *s)
{
    static const double dash[2] = {5, 3};
    canvas_set_color(cr, s->color);
    cairo_set_line_width(cr, s->stage < 0 ? 2.5 : 1.5);
    cairo_set_dash(cr, dash, s->dashed ? 2 : 0, 0);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
}

static void draw_titles(cairo_t *cr, const bench_plot *p)
{
    text(cr, 20, 30, p->title, 18, 1, INK, CANVAS_LEFT);
    text(cr, 20, 52, p->device, 13, 0, INK, CANVAS_LEFT);
    if (p->cpu_note[0]) text(cr, 20, 70, p->cpu_note, 13, 0, WARNING, CANVAS_LEFT);
    text(cr, 20, 88, p->note, 12, 0, FRAME, CANVAS_LEFT);
}

static void draw_axes(cairo_t *cr, const bench_plot *p)
{
    const double bottom = PLOT_TOP + PLOT_HEIGHT;
    char buf[64];
    for (int i = 0; i * p->ystep <= p->ytop * (1 + 1e-9); i++) {
        double y = bench_plot_y(p, i * p->ystep);
        canvas_set_color(cr, GRID);
        canvas_line(cr, PLOT_LEFT, sharp(y), PLOT_RIGHT, sharp(y), 1);
        snprintf(buf, sizeof buf, "%g", i * p->ystep);
        text(cr, PLOT_LEFT - 6, round(y + 4), buf, 12, 0, TEXT, CANVAS_RIGHT);
    }
    for (uint32_t i = 0; i < p->nticks; i++) {
        double x = bench_plot_x(p, p->ticks[i].l);
        canvas_set_color(cr, GRID);
        canvas_line(cr, sharp(x), PLOT_TOP, sharp(x), bottom, 1);
        snprintf(buf, sizeof buf, "%.0f", p->ticks[i].l);
        if (p->ticks[i].labelled) text(cr, x, bottom + 18, buf, 12, 0, TEXT, CANVAS_CENTER);
    }
    canvas_set_color(cr, FRAME);
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, PLOT_LEFT + 0.5, PLOT_TOP + 0.5, PLOT_RIGHT - PLOT_LEFT, PLOT_HEIGHT);
    cairo_stroke(cr);
    text(cr, (PLOT_LEFT + PLOT_RIGHT) / 2.0, bottom + 42, p->xlabel, 14, 0, TEXT, CANVAS_CENTER);
    canvas_font(cr, 14, 0);
    canvas_text_up(cr, PLOT_LEFT - 52, PLOT_TOP + PLOT_HEIGHT / 2.0, "GFLOP/s (at the median GPU time)", CANVAS_CENTER);
    if (p->np == 0)
        text(cr, (PLOT_LEFT + PLOT_RIGHT) / 2.0, PLOT_TOP + PLOT_HEIGHT / 2.0, "no data with FLOPs to plot", 16, 0,
             INK, CANVAS_CENTER);
}

/* Each series: a line through its points (sorted by L), then a marker on each. */
static void draw_series(cairo_t *cr, const bench_plot *p)
{
    for (uint32_t k = 0; k < p->ns; k++) {
        const plot_series *s = &p->series[k];
        for (uint32_t i = s->first; i < s->first + s->n; i++)
            cairo_line_to(cr, bench_plot_x(p, p->points[i].l), bench_plot_y(p, p->points[i].gflops));
        series_stroke(cr, s);
        for (uint32_t i = s->first; i < s->first + s->n; i++)
            marker(cr, s->like->path, bench_plot_x(p, p->points[i].l), bench_plot_y(p, p->points[i].gflops),
                   s->color);
    }
}

/* The peak as a dashed line, labelled in black on a white halo so that series under it stay legible. */
static void draw_peak(cairo_t *cr, const bench_plot *p)
{
    static const double dash[2] = {6, 4};
    const double y = sharp(bench_plot_y(p, p->peak));
    canvas_set_color(cr, INK);
    cairo_set_dash(cr, dash, 2, 0);
    canvas_line(cr, PLOT_LEFT, y, PLOT_RIGHT, y, 1);
    cairo_set_dash(cr, NULL, 0, 0);
    char label[80];
    snprintf(label, sizeof label, "measured fp32 peak %.1f GFLOP/s", p->peak); /* plain ASCII */
    canvas_font(cr, 11, 0);
    cairo_move_to(cr, PLOT_LEFT + 6, round(y - 5));
    cairo_text_path(cr, label);
    canvas_set_color(cr, WHITE);
    cairo_set_line_width(cr, 3);
    cairo_stroke_preserve(cr);
    canvas_set_color(cr, INK);
    cairo_fill(cr);
}

static void draw_legend(cairo_t *cr, const bench_plot *p)
{
    const double x = PLOT_RIGHT + 24;
    text(cr, x, PLOT_TOP + 4, p->legend[0], 12, 1, INK, CANVAS_LEFT);
    if (p->legend[1][0]) text(cr, x, PLOT_TOP + 4 + LEGEND_ROW, p->legend[1], 12, 1, INK, CANVAS_LEFT);
    for (uint32_t k = 0; k < p->ns; k++) {
        const plot_series *s = &p->series[k];
        const double y = legend_row_y(p, k);
        cairo_move_to(cr, x, y - 4);
        cairo_line_to(cr, x + 26, y - 4);
        series_stroke(cr, s);
        marker(cr, s->like->path, x + 13, y - 4, s->color);
        text(cr, x + 34, y, s->label, 12, 0, INK, CANVAS_LEFT);
    }
}

void bench_plot_draw(cairo_t *cr, const bench_plot *p)
{
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    draw_titles(cr, p);
    draw_axes(cr, p);
    draw_series(cr, p);
    if (p->peak_drawn) draw_peak(cr, p);
    draw_legend(cr, p);
}

/* ---------------------------------------------------------------------------------------------- */

int bench_plot_path_ok(const char *path)
{
    return canvas_format_of(path) != CANVAS_NONE;
}

int bench_write_plot(const char *path, const bench_run_info *info, const bench_result *results, uint32_t count)
{
    canvas_format format = canvas_format_of(path);
    if (format == CANVAS_NONE) {
        fprintf(stderr, "vkattn bench: --plot %s: give %s (the format)\n", path, BENCH_PLOT_NAMES);
        return 1;
    }
    bench_plot plot;
    if (bench_plot_build(info, results, count, &plot)) {
        fprintf(stderr, "vkattn bench: out of memory for the plot\n");
        return 1;
    }
    canvas c;
    vkattn_error error = {0};
    vkattn_status status = canvas_open(&c, format, path, plot.width, plot.height, &error);
    if (status == VKATTN_OK) {
        bench_plot_draw(c.cr, &plot);
        status = canvas_finish(&c, &error);
    }
    canvas_destroy(&c);
    bench_plot_free(&plot);
    if (status != VKATTN_OK) fprintf(stderr, "vkattn bench: the plot: %s\n", error.message);
    return status != VKATTN_OK;
}
