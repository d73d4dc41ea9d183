/* Attention heatmaps (see heatmap.h for the picture's layout), drawn with cairo. */
#include "heatmap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARGIN 10          /* around the whole picture */
#define GAP 18             /* right of and below each block */
#define TICK 3             /* tick mark length */
#define TARGET_PANEL 256   /* default cell size: the longer panel side ends up 128..256 pixels */
#define MAX_DEFAULT_CELL 48
#define MIN_PANEL_SIDE 32  /* a default panel is never a thinner strip than this */
#define BAR_W 14
#define BAR_MIN_H 100
#define BAR_MAX_H 256
#define LABEL_BUF 96       /* HEATMAP_LABEL_CHARS characters of up to 4 bytes, and ".." */

static const char QUERY_TITLE[] = "query position";
static const char KEY_TITLE[] = "key position";
static const char LEGEND_TITLE[] = "weight";
static const char MASKED_LABEL[] = "masked";
static const char WIDEST_BAR_LABEL[] = "0.000888"; /* "%.3g" of a weight at its widest */

/* Viridis (matplotlib's perceptually uniform map) sampled at t = 0, 0.1, ..., 1; heatmap_colormap
 * interpolates linearly between these control points. */
static const uint8_t VIRIDIS[11][3] = {
    {68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},  {42, 120, 142}, {33, 145, 140},
    {34, 168, 132}, {68, 191, 112}, {122, 209, 81}, {189, 223, 38}, {253, 231, 37},
};

rgb_color heatmap_colormap(double t)
{
    if (!(t > 0)) t = 0; /* also NaN */
    if (t > 1) t = 1;
    double x = t * 10;
    int i = (int)x;
    if (i > 9) i = 9;
    double f = x - i;
    uint8_t c[3];
    for (int k = 0; k < 3; k++) c[k] = (uint8_t)lround(VIRIDIS[i][k] + f * (VIRIDIS[i + 1][k] - VIRIDIS[i][k]));
    return (rgb_color){c[0], c[1], c[2]};
}

rgb_color heatmap_mask_color(uint32_t x, uint32_t y)
{
    return (x + y) % 4 == 0 ? HEATMAP_MASK_DARK : HEATMAP_MASK_LIGHT;
}

/* ---------------------------------------------------------------------------------------------- */
/* Labels and ticks                                                                                */
/* ---------------------------------------------------------------------------------------------- */

/* The text drawn at tick position p: the number p, or the label cleaned and cut to
 * HEATMAP_LABEL_CHARS characters (canvas_clean_text). */
static void tick_text(const char *const *labels, uint32_t p, char *buf, size_t size)
{
    if (labels) canvas_clean_text(labels[p], HEATMAP_LABEL_CHARS, buf, size);
    else snprintf(buf, size, "%u", p);
}

/* Whole pixels `text` takes in the current font. */
static uint32_t text_width(cairo_t *cr, const char *text)
{
    return (uint32_t)ceil(canvas_text_width(cr, text));
}

/* One axis's ticks: which positions get one, and how much room their labels take. */
typedef struct axis_plan {
    int labels;      /* drawing the caller's labels */
    uint32_t step;   /* positions between ticks */
    uint32_t extent; /* label room perpendicular to the axis */
} axis_plan;

/* The smallest 1-2-5 step (1, 2, 5, 10, 20, ...; at most n) whose ticks lie at least `need` pixels
 * apart when `bin` positions share a cell of `cell` pixels. */
static uint32_t nice_step(uint32_t need, uint32_t bin, uint32_t cell, uint32_t n)
{
    double raw = (double)need * bin / cell, step = raw <= 1 ? 1 : canvas_nice_step(raw);
    return step >= n ? n : (uint32_t)step;
}

/* `across`: the axis runs left to right (keys), so numbers are written side by side along it and
 * labels are turned upright; otherwise (queries) every label is a line of its own. */
static axis_plan plan_axis(cairo_t *cr, const heatmap_layout *l, const char *const *labels, uint32_t n,
                           uint32_t bin, uint32_t cell, int across)
{
    axis_plan a = {.labels = labels && bin == 1, .step = 1};
    uint32_t widest = 0;
    char buf[LABEL_BUF];
    for (uint32_t p = a.labels ? 0 : n - 1; p < n; p++) { /* as a number, n - 1 is the widest */
        tick_text(a.labels ? labels : NULL, p, buf, sizeof buf);
        uint32_t w = text_width(cr, buf);
        if (w > widest) widest = w;
    }
    /* Pixels needed between neighbouring ticks so that their labels do not touch. */
    uint32_t need = across && !a.labels ? widest + 6 : l->line_h;
    a.step = a.labels ? (need + cell - 1) / cell : nice_step(need, bin, cell, n);
    a.extent = across && !a.labels ? l->text_h : widest;
    return a;
}

/* "downsampled by averaging: one cell = R query x C key positions" */
static void downsample_note(const heatmap_layout *l, char *buf, size_t size)
{
    snprintf(buf, size, "downsampled by averaging: one cell = %u query x %u key positions", l->row_bin,
             l->col_bin);
}

/* ---------------------------------------------------------------------------------------------- */
/* Layout                                                                                          */
/* ---------------------------------------------------------------------------------------------- */

static uint32_t ceil_sqrt(uint32_t n)
{
    uint32_t r = 1;
    while ((uint64_t)r * r < n) r++;
    return r;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

/* Text heights, from the fonts the picture is drawn in. */
static void plan_text(cairo_t *cr, heatmap_layout *l)
{
    canvas_font(cr, HEATMAP_TITLE_PX, 0);
    canvas_metrics t = canvas_font_metrics(cr);
    l->title_line_h = (uint32_t)ceil(t.ascent + t.descent) + 2;
    canvas_font(cr, HEATMAP_TEXT_PX, 0);
    canvas_metrics m = canvas_font_metrics(cr);
    l->text_h = (uint32_t)ceil(m.ascent + m.descent);
    l->line_h = l->text_h + 2;
}

/* Cells, their size, and the panel. */
static void plan_cells(const heatmap_desc *d, heatmap_layout *l)
{
    l->row_bin = (d->query_len + HEATMAP_MAX_CELLS - 1) / HEATMAP_MAX_CELLS;
    l->col_bin = (d->key_len + HEATMAP_MAX_CELLS - 1) / HEATMAP_MAX_CELLS;
    l->rows = (d->query_len + l->row_bin - 1) / l->row_bin;
    l->cols = (d->key_len + l->col_bin - 1) / l->col_bin;
    if (d->cell) {
        l->cell_w = l->cell_h = d->cell;
    } else {
        uint32_t cell = TARGET_PANEL / max_u32(l->rows, l->cols);
        cell = cell < 1 ? 1 : cell > MAX_DEFAULT_CELL ? MAX_DEFAULT_CELL : cell;
        l->cell_w = l->cell_h = cell;
        if (l->rows * cell < MIN_PANEL_SIDE) l->cell_h = (MIN_PANEL_SIDE + l->rows - 1) / l->rows;
        if (l->cols * cell < MIN_PANEL_SIDE) l->cell_w = (MIN_PANEL_SIDE + l->cols - 1) / l->cols;
    }
    l->panel_w = l->cols * l->cell_w;
    l->panel_h = l->rows * l->cell_h;
}

/* One head's block: the panel with its title, ticks, tick labels and axis titles. */
static void plan_block(cairo_t *cr, const heatmap_desc *d, heatmap_layout *l)
{
    axis_plan rows = plan_axis(cr, l, d->query_labels, d->query_len, l->row_bin, l->cell_h, 0);
    axis_plan cols = plan_axis(cr, l, d->key_labels, d->key_len, l->col_bin, l->cell_w, 1);
    l->row_labels = rows.labels, l->row_step = rows.step, l->ylabel_w = rows.extent;
    l->col_labels = cols.labels, l->col_step = cols.step, l->xlabel_h = cols.extent;
    char title[32];
    snprintf(title, sizeof title, "head %u", d->heads);
    canvas_font(cr, HEATMAP_TEXT_PX, 1);
    uint32_t title_w = text_width(cr, title);
    canvas_font(cr, HEATMAP_TEXT_PX, 0);
    l->panel_dx = l->text_h + 4 + l->ylabel_w + 3 + TICK + 1;
    l->panel_dy = l->line_h + 4;
    uint32_t below = 1 + TICK + 2 + l->xlabel_h + 4 + l->line_h;
    uint32_t wide = max_u32(l->panel_w, max_u32(text_width(cr, KEY_TITLE), title_w));
    l->block_w = l->panel_dx + wide + GAP;
    l->block_h = l->panel_dy + max_u32(l->panel_h + below, text_width(cr, QUERY_TITLE)) + GAP;
}

/* The title lines, the grid's place, the legend, and the picture's size. */
static vkattn_status plan_page(cairo_t *cr, const heatmap_desc *d, heatmap_layout *l, vkattn_error *error)
{
    l->heads_per_row = d->heads_per_row ? (d->heads_per_row < d->heads ? d->heads_per_row : d->heads)
                                        : ceil_sqrt(d->heads);
    l->grid_rows = (d->heads + l->heads_per_row - 1) / l->heads_per_row;
    char note[160];
    downsample_note(l, note, sizeof note);
    int downsampled = l->row_bin > 1 || l->col_bin > 1;
    canvas_font(cr, HEATMAP_TITLE_PX, 0);
    uint32_t title_w = max_u32(d->title ? text_width(cr, d->title) : 0, downsampled ? text_width(cr, note) : 0);
    canvas_font(cr, HEATMAP_TEXT_PX, 0);
    l->title_x = MARGIN, l->title_y = MARGIN;
    l->title_lines = (uint32_t)(d->title != NULL) + (uint32_t)downsampled;
    l->grid_x = MARGIN;
    l->grid_y = MARGIN + l->title_lines * l->title_line_h + (l->title_lines ? 8 : 0);

    uint64_t legend_x = l->grid_x + (uint64_t)l->heads_per_row * l->block_w;
    l->bar_w = BAR_W;
    l->bar_h = l->panel_h < BAR_MIN_H ? BAR_MIN_H : l->panel_h > BAR_MAX_H ? BAR_MAX_H : l->panel_h;
    l->bar_y = l->grid_y + l->panel_dy;
    l->swatch_size = BAR_W;
    l->swatch_y = l->bar_y + l->bar_h + 14;
    uint32_t legend_w = max_u32(BAR_W + 1 + TICK + 4 + text_width(cr, WIDEST_BAR_LABEL),
                                max_u32(BAR_W + 5 + text_width(cr, MASKED_LABEL), text_width(cr, LEGEND_TITLE)));
    uint64_t width = legend_x + legend_w + MARGIN;
    if (width < (uint64_t)2 * MARGIN + title_w) width = (uint64_t)2 * MARGIN + title_w;
    uint64_t height = l->grid_y + (uint64_t)l->grid_rows * l->block_h;
    if (height < (uint64_t)l->swatch_y + l->swatch_size + 2 * MARGIN)
        height = (uint64_t)l->swatch_y + l->swatch_size + 2 * MARGIN;
    if (width > CANVAS_MAX_SIDE || height > CANVAS_MAX_SIDE || width * height > CANVAS_MAX_PIXELS)
        return canvas_error(error, VKATTN_ERROR_INVALID_ARGUMENT,
                            "the picture would be %llu x %llu pixels, over the limit (%u per side, %u pixels); "
                            "ask for smaller cells or another number of heads per row",
                            (unsigned long long)width, (unsigned long long)height, CANVAS_MAX_SIDE,
                            CANVAS_MAX_PIXELS);
    l->bar_x = l->swatch_x = (uint32_t)legend_x;
    l->width = (uint32_t)width, l->height = (uint32_t)height;
    return VKATTN_OK;
}

static vkattn_status check_desc(const heatmap_desc *d, vkattn_error *error)
{
    if (!d || !d->weights || !d->heads || !d->query_len || !d->key_len)
        return canvas_error(error, VKATTN_ERROR_INVALID_ARGUMENT,
                            "a heatmap needs weights and at least one head, query and key");
    if (d->cell > HEATMAP_MAX_CELL_PX)
        return canvas_error(error, VKATTN_ERROR_INVALID_ARGUMENT, "cells of %u pixels are larger than the limit %u",
                            d->cell, HEATMAP_MAX_CELL_PX);
    return VKATTN_OK;
}

vkattn_status heatmap_layout_compute(const heatmap_desc *d, heatmap_layout *out, vkattn_error *error)
{
    vkattn_status status = check_desc(d, error);
    canvas m;
    if (status != VKATTN_OK || (status = canvas_open_measure(&m, error)) != VKATTN_OK) return status;
    heatmap_layout l = {.heads = d->heads};
    plan_text(m.cr, &l);
    plan_cells(d, &l);
    plan_block(m.cr, d, &l);
    status = plan_page(m.cr, d, &l, error);
    canvas_destroy(&m);
    if (status == VKATTN_OK) *out = l;
    return status;
}

void heatmap_panel_origin(const heatmap_layout *l, uint32_t head, uint32_t *x, uint32_t *y)
{
    *x = l->grid_x + (head % l->heads_per_row) * l->block_w + l->panel_dx;
    *y = l->grid_y + (head / l->heads_per_row) * l->block_h + l->panel_dy;
}

void heatmap_cell_center(const heatmap_layout *l, uint32_t head, uint32_t row, uint32_t col, uint32_t *x,
                         uint32_t *y)
{
    heatmap_panel_origin(l, head, x, y);
    *x += col * l->cell_w + l->cell_w / 2;
    *y += row * l->cell_h + l->cell_h / 2;
}

/* ---------------------------------------------------------------------------------------------- */
/* Rendering                                                                                       */
/* ---------------------------------------------------------------------------------------------- */

/* Per cell: the mean of its visible weights, and how many there were (0 = the cell is masked). */
typedef struct binned {
    double *mean;
    uint32_t *visible;
    double max; /* the largest mean of a visible cell; 0 if none */
} binned;

static vkattn_status bin_weights(const heatmap_desc *d, const heatmap_layout *l, binned *out, vkattn_error *error)
{
    size_t cells = (size_t)l->heads * l->rows * l->cols;
    binned b = {calloc(cells, sizeof(double)), calloc(cells, sizeof(uint32_t)), 0};
    if (!b.mean || !b.visible) {
        free(b.mean), free(b.visible);
        return canvas_error(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "allocating %zu heatmap cells", cells);
    }
    for (uint32_t h = 0; h < d->heads; h++)
        for (uint32_t i = 0; i < d->query_len; i++) {
            size_t row = (size_t)h * d->query_len + i;
            size_t cell_row = ((size_t)h * l->rows + i / l->row_bin) * l->cols;
            for (uint32_t j = 0; j < d->key_len; j++) {
                float w = d->weights[row * d->key_len + j];
                if (!isfinite(w) || (d->masked && d->masked[row * d->key_len + j])) continue;
                b.mean[cell_row + j / l->col_bin] += w;
                b.visible[cell_row + j / l->col_bin]++;
            }
        }
    for (size_t c = 0; c < cells; c++) {
        if (!b.visible[c]) continue;
        b.mean[c] /= b.visible[c];
        if (b.mean[c] > b.max) b.max = b.mean[c];
    }
    *out = b;
    return VKATTN_OK;
}

/* What every drawing step needs. */
typedef struct pen {
    cairo_t *cr;
    const heatmap_layout *l;
    canvas_metrics m;        /* of HEATMAP_TEXT_PX text */
    cairo_pattern_t *hatch;
} pen;

static uint32_t pixel_of(rgb_color c)
{
    return 0xFF000000u | (uint32_t)c.r << 16 | (uint32_t)c.g << 8 | c.b; /* cairo's native-endian xRGB */
}

/* The masked hatch as a repeating 4 x 4 tile in image coordinates (heatmap_mask_color), so the
 * lines run on across neighbouring cells and every pixel is exactly one of the two greys. A failed
 * allocation leaves the pattern in an error state, which cairo carries into the drawing's status. */
static cairo_pattern_t *hatch_pattern(void)
{
    cairo_surface_t *tile = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 4, 4);
    if (cairo_surface_status(tile) == CAIRO_STATUS_SUCCESS) {
        cairo_surface_flush(tile);
        unsigned char *data = cairo_image_surface_get_data(tile);
        int stride = cairo_image_surface_get_stride(tile);
        for (uint32_t y = 0; y < 4; y++)
            for (uint32_t x = 0; x < 4; x++) ((uint32_t *)(data + y * stride))[x] = pixel_of(heatmap_mask_color(x, y));
        cairo_surface_mark_dirty(tile);
    }
    cairo_pattern_t *p = cairo_pattern_create_for_surface(tile);
    cairo_surface_destroy(tile);
    cairo_pattern_set_extend(p, CAIRO_EXTEND_REPEAT);
    cairo_pattern_set_filter(p, CAIRO_FILTER_NEAREST);
    return p;
}

/* The 1-pixel outline along the edge of the w x h pixels at (x, y). */
static void frame(cairo_t *cr, double x, double y, double w, double h)
{
    cairo_set_line_width(cr, 1);
    cairo_rectangle(cr, x + 0.5, y + 0.5, w - 1, h - 1);
    cairo_stroke(cr);
}

/* 1-pixel lines along whole pixels, both ends included. */
static void hline(cairo_t *cr, double x0, double x1, double y) { canvas_line(cr, x0, y + 0.5, x1 + 1, y + 0.5, 1); }
static void vline(cairo_t *cr, double x, double y0, double y1) { canvas_line(cr, x + 0.5, y0, x + 0.5, y1 + 1, 1); }

static void fill_hatched(const pen *p, double x, double y, double w, double h)
{
    cairo_set_source(p->cr, p->hatch);
    cairo_rectangle(p->cr, x, y, w, h);
    cairo_fill(p->cr);
}

/* One panel's cells: an image of one pixel per cell, scaled up without smoothing, over the hatch,
 * which masked cells (transparent in the image) let through. */
static void draw_cells(const pen *p, const binned *b, uint32_t head, double scale_max)
{
    const heatmap_layout *l = p->l;
    cairo_t *cr = p->cr;
    uint32_t px, py;
    heatmap_panel_origin(l, head, &px, &py);
    fill_hatched(p, px, py, l->panel_w, l->panel_h);
    cairo_surface_t *cells = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)l->cols, (int)l->rows);
    if (cairo_surface_status(cells) == CAIRO_STATUS_SUCCESS) {
        cairo_surface_flush(cells);
        unsigned char *data = cairo_image_surface_get_data(cells);
        int stride = cairo_image_surface_get_stride(cells);
        for (uint32_t r = 0; r < l->rows; r++)
            for (uint32_t c = 0; c < l->cols; c++) {
                size_t k = ((size_t)head * l->rows + r) * l->cols + c;
                ((uint32_t *)(data + (size_t)r * stride))[c] =
                    b->visible[k] ? pixel_of(heatmap_colormap(b->mean[k] / scale_max)) : 0;
            }
        cairo_surface_mark_dirty(cells);
    }
    cairo_save(cr);
    cairo_translate(cr, px, py);
    cairo_scale(cr, l->cell_w, l->cell_h);
    cairo_set_source_surface(cr, cells, 0, 0);
    cairo_pattern_set_filter(cairo_get_source(cr), CAIRO_FILTER_NEAREST);
    cairo_rectangle(cr, 0, 0, l->cols, l->rows);
    cairo_fill(cr);
    cairo_restore(cr);
    cairo_surface_destroy(cells);
    canvas_set_color(cr, HEATMAP_INK);
    frame(cr, (double)px - 1, (double)py - 1, l->panel_w + 2, l->panel_h + 2);
}

/* Ticks and tick labels on the left (queries) and below (keys) of one panel; text is centred on
 * its tick by its capitals. */
static void draw_ticks(const pen *p, const heatmap_desc *d, uint32_t head)
{
    const heatmap_layout *l = p->l;
    cairo_t *cr = p->cr;
    uint32_t px, py;
    heatmap_panel_origin(l, head, &px, &py);
    char buf[LABEL_BUF];
    canvas_set_color(cr, HEATMAP_INK);
    for (uint32_t q = 0; q < d->query_len; q += l->row_step) {
        double y = py + (double)(q / l->row_bin) * l->cell_h + l->cell_h / 2;
        hline(cr, (double)px - 1 - TICK, (double)px - 2, y);
        tick_text(l->row_labels ? d->query_labels : NULL, q, buf, sizeof buf);
        canvas_text(cr, (double)px - 1 - TICK - 3, round(y + 0.5 + p->m.cap / 2), buf, CANVAS_RIGHT);
    }
    double below = (double)py + l->panel_h + 1;
    for (uint32_t k = 0; k < d->key_len; k += l->col_step) {
        double x = px + (double)(k / l->col_bin) * l->cell_w + l->cell_w / 2;
        vline(cr, x, below, below + TICK - 1);
        tick_text(l->col_labels ? d->key_labels : NULL, k, buf, sizeof buf);
        if (l->col_labels) canvas_text_up(cr, round(x + 0.5 + p->m.cap / 2), below + TICK + 2, buf, CANVAS_RIGHT);
        else canvas_text(cr, x + 0.5, below + TICK + 2 + round(p->m.ascent), buf, CANVAS_CENTER);
    }
}

/* The panel title above, the axis titles left and below. */
static void draw_titles(const pen *p, uint32_t head)
{
    const heatmap_layout *l = p->l;
    cairo_t *cr = p->cr;
    uint32_t px, py;
    heatmap_panel_origin(l, head, &px, &py);
    char title[32];
    snprintf(title, sizeof title, "head %u", head + 1);
    canvas_set_color(cr, HEATMAP_INK);
    canvas_font(cr, HEATMAP_TEXT_PX, 1);
    canvas_text(cr, px + l->panel_w / 2.0, (double)py - 1 - 3 - round(p->m.descent), title, CANVAS_CENTER);
    canvas_font(cr, HEATMAP_TEXT_PX, 0);
    double baseline = (double)py + l->panel_h + 1 + TICK + 2 + l->xlabel_h + 4 + round(p->m.ascent);
    if (l->panel_w >= canvas_text_width(cr, KEY_TITLE))
        canvas_text(cr, px + l->panel_w / 2.0, baseline, KEY_TITLE, CANVAS_CENTER);
    else canvas_text(cr, px, baseline, KEY_TITLE, CANVAS_LEFT);
    double x = (double)px - l->panel_dx + round(p->m.ascent); /* the glyphs' tops at the block's left edge */
    if (l->panel_h >= canvas_text_width(cr, QUERY_TITLE))
        canvas_text_up(cr, x, py + l->panel_h / 2.0, QUERY_TITLE, CANVAS_CENTER);
    else canvas_text_up(cr, x, py, QUERY_TITLE, CANVAS_RIGHT);
}

/* Colour-bar ticks at a 1-2-5 step (about five of them), and the maximum at the top. */
static void draw_bar_ticks(const pen *p, double scale_max)
{
    const heatmap_layout *l = p->l;
    cairo_t *cr = p->cr;
    double step = canvas_nice_step(scale_max / 4), x = l->bar_x + l->bar_w + 1, top = l->bar_y;
    char buf[LABEL_BUF];
    for (int k = 0; k * step <= scale_max * (1 + 1e-9); k++) {
        double v = k * step;
        double y = l->bar_y + (l->bar_h - 1) - (double)lround(v / scale_max * (l->bar_h - 1));
        if (y - top < l->line_h) continue; /* leave the top for the maximum */
        hline(cr, x, x + TICK - 1, y);
        snprintf(buf, sizeof buf, "%.3g", v);
        canvas_text(cr, x + TICK + 4, round(y + 0.5 + p->m.cap / 2), buf, CANVAS_LEFT);
    }
    hline(cr, x, x + TICK - 1, top);
    snprintf(buf, sizeof buf, "%.3g", scale_max);
    canvas_text(cr, x + TICK + 4, round(top + 0.5 + p->m.cap / 2), buf, CANVAS_LEFT);
}

static void draw_legend(const pen *p, double scale_max)
{
    const heatmap_layout *l = p->l;
    cairo_t *cr = p->cr;
    canvas_set_color(cr, HEATMAP_INK);
    canvas_text(cr, l->bar_x, (double)l->bar_y - 1 - 3 - round(p->m.descent), LEGEND_TITLE, CANVAS_LEFT);
    for (uint32_t y = 0; y < l->bar_h; y++) {
        canvas_set_color(cr, heatmap_colormap((double)(l->bar_h - 1 - y) / (l->bar_h - 1)));
        cairo_rectangle(cr, l->bar_x, l->bar_y + y, l->bar_w, 1);
        cairo_fill(cr);
    }
    canvas_set_color(cr, HEATMAP_INK);
    frame(cr, (double)l->bar_x - 1, (double)l->bar_y - 1, l->bar_w + 2, l->bar_h + 2);
    draw_bar_ticks(p, scale_max);
    fill_hatched(p, l->swatch_x, l->swatch_y, l->swatch_size, l->swatch_size);
    canvas_set_color(cr, HEATMAP_INK);
    frame(cr, (double)l->swatch_x - 1, (double)l->swatch_y - 1, l->swatch_size + 2, l->swatch_size + 2);
    canvas_text(cr, l->swatch_x + l->swatch_size + 5, l->swatch_y + round((l->swatch_size + p->m.cap) / 2),
                MASKED_LABEL, CANVAS_LEFT);
}

/* The whole picture onto `cr`, whose size is the layout's. */
static vkattn_status draw(const heatmap_desc *d, const heatmap_layout *l, cairo_t *cr, vkattn_error *error)
{
    binned b = {0};
    vkattn_status status = bin_weights(d, l, &b, error);
    if (status != VKATTN_OK) return status;
    double scale_max = d->scale_one || !(b.max > 0) ? 1.0 : b.max;
    canvas_set_color(cr, HEATMAP_INK);
    canvas_font(cr, HEATMAP_TITLE_PX, 0);
    double y = l->title_y + round(canvas_font_metrics(cr).ascent);
    if (d->title) canvas_text(cr, l->title_x, y, d->title, CANVAS_LEFT), y += l->title_line_h;
    if (l->row_bin > 1 || l->col_bin > 1) {
        char note[160];
        downsample_note(l, note, sizeof note);
        canvas_text(cr, l->title_x, y, note, CANVAS_LEFT);
    }
    canvas_font(cr, HEATMAP_TEXT_PX, 0);
    pen p = {cr, l, canvas_font_metrics(cr), hatch_pattern()};
    for (uint32_t h = 0; h < d->heads; h++) {
        draw_cells(&p, &b, h, scale_max);
        draw_ticks(&p, d, h);
        draw_titles(&p, h);
    }
    draw_legend(&p, scale_max);
    cairo_pattern_destroy(p.hatch);
    free(b.mean), free(b.visible);
    return VKATTN_OK;
}

vkattn_status heatmap_write_png(const heatmap_desc *d, const char *path, heatmap_layout *layout, vkattn_error *error)
{
    heatmap_layout l;
    canvas c = {0};
    vkattn_status status;
    if ((status = heatmap_layout_compute(d, &l, error)) == VKATTN_OK &&
        (status = canvas_open(&c, CANVAS_PNG, path, l.width, l.height, error)) == VKATTN_OK &&
        (status = draw(d, &l, c.cr, error)) == VKATTN_OK &&
        (status = canvas_finish(&c, error)) == VKATTN_OK && layout)
        *layout = l;
    canvas_destroy(&c);
    return status;
}
