/* vkattn bench --plot: GFLOP/s against sequence length as a hand-written SVG line chart.
 *
 * One series per (path, stage) — "total" being the whole forward — and, when the sweep varies them,
 * per E, H, B, mask, dtype and S. Stages without FLOPs (softmax, head averaging) have no GFLOP/s and
 * are left out. x is log2(L) with ticks at the L values present; y is linear from 0. The title
 * names the device and driver, so a lavapipe chart cannot pass for a GPU chart.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cli.h"

#define WIDTH 1120
#define MIN_HEIGHT 580
#define PLOT_LEFT 90
#define PLOT_TOP 100
#define PLOT_RIGHT (WIDTH - 330)
#define PLOT_HEIGHT 400
#define LEGEND_ROW 18
#define PEAK_DRAW_LIMIT 20.0 /* a peak further above the data than this would flatten it */

typedef struct plot_series {
    const bench_config *like; /* the group's configuration (L aside) */
    int stage;                /* a vkattn_stage, or -1 for the whole forward */
    uint32_t first, n;        /* its points, after sorting */
} plot_series;

typedef struct plot_point {
    uint32_t series;
    double l, gflops;
} plot_point;

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

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if ((unsigned char)*s >= 0x20) fputc(*s, f); /* XML 1.0 forbids most control characters */
        }
    }
}

static void series_label(const plot_series *s, const plot_varies *v, char *buf, size_t size)
{
    const bench_config *c = s->like;
    int n = snprintf(buf, size, "%s %s", vkattn_path_name(c->path),
                     s->stage < 0 ? "total" : vkattn_stage_name((vkattn_stage)s->stage));
    char more[160] = "";
    if (v->embed) snprintf(more + strlen(more), sizeof more - strlen(more), " E=%u", c->embed_dim);
    if (v->heads) snprintf(more + strlen(more), sizeof more - strlen(more), " H=%u", c->heads);
    if (v->batch) snprintf(more + strlen(more), sizeof more - strlen(more), " B=%u", c->batch);
    if (v->key_len) snprintf(more + strlen(more), sizeof more - strlen(more), " S=%u", c->key_len);
    if (v->mask) snprintf(more + strlen(more), sizeof more - strlen(more), " %s", bench_mask_name(c->mask));
    if (v->dtype) snprintf(more + strlen(more), sizeof more - strlen(more), " %s", vkattn_dtype_name(c->dtype));
    if (n >= 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, "%s", more);
}

/* A round step (1, 2 or 5 times a power of ten) giving about five intervals up to `top`. */
static double nice_step(double top)
{
    double raw = top / 5, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

/* Colours repeat after PALETTE_SIZE series; the repeats are dashed (dash_of) to stay distinguishable. */
static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                      "#e377c2", "#17becf", "#7f7f7f", "#bcbd22", "#393b79", "#ad494a"};
#define PALETTE_SIZE (sizeof palette / sizeof palette[0])

static const char *dash_of(uint32_t k) { return k / PALETTE_SIZE % 2 ? " stroke-dasharray=\"5,3\"" : ""; }

static void marker(FILE *f, vkattn_path path, double x, double y, const char *color)
{
    if (path == VKATTN_PATH_FUSED)
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"7\" height=\"7\" fill=\"%s\"/>", x - 3.5, y - 3.5, color);
    else fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.8\" fill=\"%s\"/>", x, y, color);
}

typedef struct plot_scale {
    double xmin, xmax, ytop;
} plot_scale;

static double px_x(const plot_scale *s, double l)
{
    return PLOT_LEFT + 15 + (log2(l) - s->xmin) / (s->xmax - s->xmin) * (PLOT_RIGHT - PLOT_LEFT - 30);
}

static double px_y(const plot_scale *s, double g) { return PLOT_TOP + PLOT_HEIGHT * (1 - g / s->ytop); }

static void write_axes(FILE *f, const plot_scale *sc, const plot_point *pts, uint32_t np, int cross)
{
    const int bottom = PLOT_TOP + PLOT_HEIGHT;
    double step = nice_step(sc->ytop);
    fprintf(f, "<g font-size=\"12\" fill=\"#333\">\n");
    for (int i = 0; i * step <= sc->ytop * (1 + 1e-9); i++) {
        double y = px_y(sc, i * step);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>", PLOT_LEFT, y, PLOT_RIGHT, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", PLOT_LEFT - 6, y + 4, i * step);
    }
    /* x ticks at the L values present, skipping labels that would collide with the previous one. */
    double *ls = malloc((np ? np : 1) * sizeof *ls);
    uint32_t nl = 0;
    for (uint32_t i = 0; ls && i < np; i++) ls[nl++] = pts[i].l;
    if (ls) {
        for (uint32_t i = 1; i < nl; i++) /* insertion sort: np is at most a few thousand */
            for (uint32_t j = i; j > 0 && ls[j - 1] > ls[j]; j--) {
                double t = ls[j];
                ls[j] = ls[j - 1], ls[j - 1] = t;
            }
        double last = -1e9;
        for (uint32_t i = 0; i < nl; i++) {
            if (i && ls[i] == ls[i - 1]) continue;
            double x = px_x(sc, ls[i]);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>", x, PLOT_TOP, x, bottom);
            if (x - last >= 38) {
                fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n", x, bottom + 18, ls[i]);
                last = x;
            }
        }
    }
    free(ls);
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#555\"/>\n", PLOT_LEFT,
            PLOT_TOP, PLOT_RIGHT - PLOT_LEFT, PLOT_HEIGHT);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"14\">%s length L (log2 scale)</text>\n",
            (PLOT_LEFT + PLOT_RIGHT) / 2, bottom + 42, cross ? "query" : "sequence");
    fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" text-anchor=\"middle\" font-size=\"14\">"
               "GFLOP/s (at the median GPU time)</text>\n</g>\n", PLOT_LEFT - 58, PLOT_TOP + PLOT_HEIGHT / 2);
}

static void write_titles(FILE *f, const bench_run_info *info, int peak_drawn, double max_gflops)
{
    char device[900], note[300];
    cli_describe_device(&info->device, device, sizeof device);
    fprintf(f, "<text x=\"20\" y=\"30\" font-size=\"18\" font-weight=\"bold\">vkattn bench: GFLOP/s against "
               "sequence length on ");
    xml_text(f, info->device.name);
    fprintf(f, "</text>\n<text x=\"20\" y=\"52\" font-size=\"13\">");
    xml_text(f, device);
    fprintf(f, "</text>\n");
    if (info->device.type == VKATTN_DEVICE_CPU)
        fprintf(f, "<text x=\"20\" y=\"70\" font-size=\"13\" fill=\"#c00000\">a CPU implementation of Vulkan "
                   "(software rasterizer): these are not GPU figures</text>\n");
    const double peak = info->peak.fp32_gflops;
    if (peak_drawn) snprintf(note, sizeof note, "dashed: measured fp32 peak %.1f GFLOP/s", peak);
    else if (peak > 0)
        snprintf(note, sizeof note, "measured fp32 peak %.1f GFLOP/s is off the scale (%.0fx the highest point)",
                 peak, max_gflops > 0 ? peak / max_gflops : INFINITY);
    else snprintf(note, sizeof note, "no measured peak");
    fprintf(f, "<text x=\"20\" y=\"88\" font-size=\"12\" fill=\"#555\">medians of GPU timestamps, at least %.2f s "
               "per configuration; ", info->min_time_s);
    xml_text(f, note);
    fprintf(f, "</text>\n");
}

/* The series and their points; returns 0 or 1 when out of memory. */
static int collect(const bench_result *results, uint32_t count, const plot_varies *v, plot_series **out_series,
                   uint32_t *out_ns, plot_point **out_points, uint32_t *out_np)
{
    const size_t cap = (size_t)count * (VKATTN_STAGE_COUNT + 1) + 1;
    plot_series *series = calloc(cap, sizeof *series);
    plot_point *pts = calloc(cap, sizeof *pts);
    uint32_t ns = 0, np = 0;
    if (!series || !pts) {
        free(series), free(pts);
        return 1;
    }
    for (uint32_t i = 0; i < count; i++) {
        const bench_result *r = &results[i];
        for (int s = -1; s < VKATTN_STAGE_COUNT; s++) {
            double g = s < 0 ? r->gflops : r->stages[s].gflops;
            double flops = s < 0 ? r->flops : r->stages[s].flops;
            if (s >= 0 && !r->stages[s].present) continue;
            if (!(flops > 0) || !isfinite(g) || g < 0 || r->config.query_len == 0) continue;
            uint32_t k = 0;
            while (k < ns && !(series[k].stage == s && same_group(series[k].like, &r->config, v))) k++;
            if (k == ns) series[ns++] = (plot_series){&r->config, s, 0, 0};
            pts[np++] = (plot_point){k, r->config.query_len, g};
        }
    }
    qsort(pts, np, sizeof *pts, point_order);
    for (uint32_t i = 0; i < np; i++) {
        if (series[pts[i].series].n++ == 0) series[pts[i].series].first = i;
    }
    *out_series = series, *out_ns = ns, *out_points = pts, *out_np = np;
    return 0;
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

static void write_legend(FILE *f, const plot_series *series, uint32_t ns, const plot_varies *v)
{
    char label[256], by[128] = "";
    const char *names[] = {"E", "H", "B", "S", "mask", "dtype"};
    const int on[] = {v->embed, v->heads, v->batch, v->key_len, v->mask, v->dtype};
    for (int i = 0; i < 6; i++)
        if (on[i]) snprintf(by + strlen(by), sizeof by - strlen(by), "%s%s", by[0] ? ", " : "", names[i]);
    int x = PLOT_RIGHT + 24, y = PLOT_TOP + 4;
    fprintf(f, "<g font-size=\"12\">\n<text x=\"%d\" y=\"%d\" font-weight=\"bold\">one line per path and stage"
               "</text>\n", x, y);
    if (by[0]) {
        y += LEGEND_ROW;
        fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">and per %s</text>\n", x, y, by);
    }
    y += LEGEND_ROW + 4;
    for (uint32_t k = 0; k < ns; k++, y += LEGEND_ROW) {
        const char *color = palette[k % PALETTE_SIZE];
        series_label(&series[k], v, label, sizeof label);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%s\"%s/>", x, y - 4,
                x + 26, y - 4, color, series[k].stage < 0 ? "2.5" : "1.5", dash_of(k));
        marker(f, series[k].like->path, x + 13, y - 4, color);
        fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 34, y);
        xml_text(f, label);
        fprintf(f, "</text>\n");
    }
    fprintf(f, "</g>\n");
}

/* Each series: a polyline through its points (sorted by L) and a marker on each. */
static void write_series(FILE *f, const plot_series *series, uint32_t ns, const plot_point *pts,
                         const plot_scale *sc, const plot_varies *v)
{
    char label[256];
    for (uint32_t k = 0; k < ns; k++) {
        const plot_series *s = &series[k];
        const char *color = palette[k % PALETTE_SIZE];
        series_label(s, v, label, sizeof label);
        fprintf(f, "<g><title>");
        xml_text(f, label);
        fprintf(f, "</title>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s points=\"", color,
                s->stage < 0 ? "2.5" : "1.5", dash_of(k));
        for (uint32_t i = s->first; i < s->first + s->n; i++)
            fprintf(f, "%s%.1f,%.1f", i == s->first ? "" : " ", px_x(sc, pts[i].l), px_y(sc, pts[i].gflops));
        fprintf(f, "\"/>\n");
        for (uint32_t i = s->first; i < s->first + s->n; i++)
            marker(f, s->like->path, px_x(sc, pts[i].l), px_y(sc, pts[i].gflops), color);
        fprintf(f, "\n</g>\n");
    }
}

int bench_plot_path_ok(const char *path)
{
    size_t n = strlen(path);
    if (n <= 4 || path[n - 4] != '.') return 0;
    const char *ext = path + n - 3;
    return (ext[0] | 0x20) == 's' && (ext[1] | 0x20) == 'v' && (ext[2] | 0x20) == 'g';
}

int bench_write_plot(const char *path, const bench_run_info *info, const bench_result *results, uint32_t count)
{
    if (!bench_plot_path_ok(path)) {
        fprintf(stderr, "vkattn bench: --plot %s: only .svg is supported (give a file name ending in .svg)\n", path);
        return 1;
    }
    plot_varies v;
    plot_series *series;
    plot_point *pts;
    uint32_t ns, np;
    find_varies(results, count, &v);
    if (collect(results, count, &v, &series, &ns, &pts, &np)) {
        fprintf(stderr, "vkattn bench: out of memory for the plot\n");
        return 1;
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "vkattn bench: cannot create the plot file %s\n", path);
        free(series), free(pts);
        return 1;
    }

    plot_scale sc = {INFINITY, -INFINITY, 0};
    double max_g = 0;
    for (uint32_t i = 0; i < np; i++) {
        sc.xmin = fmin(sc.xmin, log2(pts[i].l));
        sc.xmax = fmax(sc.xmax, log2(pts[i].l));
        max_g = fmax(max_g, pts[i].gflops);
    }
    if (np == 0) sc.xmin = 0, sc.xmax = 1;
    if (sc.xmax - sc.xmin < 1e-9) sc.xmin -= 0.5, sc.xmax += 0.5;
    const double peak = info->peak.fp32_gflops;
    const int peak_drawn = peak > 0 && max_g > 0 && peak <= PEAK_DRAW_LIMIT * max_g;
    double top = fmax(max_g, peak_drawn ? peak : 0) * 1.08;
    if (!(top > 0)) top = 1;
    const double step = nice_step(top);
    sc.ytop = ceil(top / step) * step;

    int height = PLOT_TOP + (int)(ns + 3) * LEGEND_ROW + 20;
    if (height < MIN_HEIGHT) height = MIN_HEIGHT;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            WIDTH, height, WIDTH, height);
    write_titles(f, info, peak_drawn, max_g);
    write_axes(f, &sc, pts, np, v.key_len);
    if (np == 0)
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" font-size=\"16\">no data with FLOPs to plot"
                   "</text>\n", (PLOT_LEFT + PLOT_RIGHT) / 2, PLOT_TOP + PLOT_HEIGHT / 2);
    write_series(f, series, ns, pts, &sc, &v);
    if (peak_drawn)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\" stroke-dasharray=\"6,4\"/>"
                   "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" stroke=\"white\" stroke-width=\"3\" "
                   "paint-order=\"stroke\">measured fp32 peak %.1f GFLOP/s</text>\n",
                PLOT_LEFT, px_y(&sc, peak), PLOT_RIGHT, px_y(&sc, peak), PLOT_LEFT + 6, px_y(&sc, peak) - 5, peak);
    write_legend(f, series, ns, &v);
    fprintf(f, "</svg>\n");
    free(series), free(pts);
    int bad = ferror(f);
    if (fclose(f) != 0) bad = 1;
    if (bad) fprintf(stderr, "vkattn bench: writing the plot file %s failed\n", path);
    return bad;
}
