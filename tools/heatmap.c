/* Attention heatmaps (see heatmap.h for the picture's layout). */
#include "heatmap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitmap_font.h"

#define MARGIN 10          /* around the whole picture */
#define GAP 18             /* right of and below each block */
#define TICK 3             /* tick mark length */
#define CAP_H 7            /* capital height: text is centred on a tick by its capitals */
#define TARGET_PANEL 256   /* default cell size: the longer panel side ends up 128..256 pixels */
#define MAX_DEFAULT_CELL 48
#define MIN_PANEL_SIDE 32  /* a default panel is never a thinner strip than this */
#define BAR_W 14
#define BAR_MIN_H 100
#define BAR_MAX_H 256
#define LEGEND_LABEL_CHARS 9 /* "%.3g" of a weight: "0.000123", "1.23e-05" */
#define LABEL_BUF 64

static const char QUERY_TITLE[] = "query position";
static const char KEY_TITLE[] = "key position";
static const char LEGEND_TITLE[] = "weight";
static const char MASKED_LABEL[] = "masked";

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

/* The text drawn at tick position p: the number p, or the label cut to HEATMAP_LABEL_CHARS glyphs
 * (the last two replaced by ".."), already reduced to the glyphs the font draws. */
static void tick_text(const char *const *labels, uint32_t p, char *buf, size_t size)
{
    if (!labels) {
        snprintf(buf, size, "%u", p);
        return;
    }
    const char *s = labels[p] ? labels[p] : "";
    size_t total = bitmap_font_length(s, HEATMAP_LABEL_CHARS + 1), n = 0;
    size_t keep = total > HEATMAP_LABEL_CHARS ? HEATMAP_LABEL_CHARS - 2 : total;
    char c;
    while (n < keep && n + 3 < size && (c = bitmap_font_next(&s))) buf[n++] = c;
    if (total > HEATMAP_LABEL_CHARS) buf[n++] = '.', buf[n++] = '.';
    buf[n] = '\0';
}

static uint32_t text_width(const char *text)
{
    return (uint32_t)bitmap_font_text_width(text);
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
    const uint32_t mantissa[3] = {1, 2, 5};
    for (uint64_t scale = 1; scale < n; scale *= 10)
        for (int k = 0; k < 3; k++) {
            uint64_t step = mantissa[k] * scale;
            if (step >= n) return n;
            if (step * cell >= (uint64_t)need * bin) return (uint32_t)step;
        }
    return n;
}

/* `across`: the axis runs left to right (keys), so numbers are written side by side along it and
 * labels are turned upright; otherwise (queries) every label is a line of its own. */
static axis_plan plan_axis(const char *const *labels, uint32_t n, uint32_t bin, uint32_t cell, int across)
{
    axis_plan a = {.labels = labels && bin == 1, .step = 1};
    uint32_t widest = 0;
    char buf[LABEL_BUF];
    for (uint32_t p = a.labels ? 0 : n - 1; p < n; p++) { /* as a number, n - 1 is the widest */
        tick_text(a.labels ? labels : NULL, p, buf, sizeof buf);
        if (text_width(buf) > widest) widest = text_width(buf);
    }
    /* Pixels needed between neighbouring ticks so that their labels do not touch. */
    uint32_t need = across && !a.labels ? widest + 6 : BITMAP_FONT_LINE + 1;
    a.step = a.labels ? (need + cell - 1) / cell : nice_step(need, bin, cell, n);
    a.extent = across && !a.labels ? BITMAP_FONT_HEIGHT : widest;
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
    uint32_t r = (uint32_t)ceil(sqrt((double)n));
    while ((uint64_t)r * r < n) r++;
    while (r > 1 && (uint64_t)(r - 1) * (r - 1) >= n) r--;
    return r;
}

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
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
static void plan_block(const heatmap_desc *d, heatmap_layout *l)
{
    axis_plan rows = plan_axis(d->query_labels, d->query_len, l->row_bin, l->cell_h, 0);
    axis_plan cols = plan_axis(d->key_labels, d->key_len, l->col_bin, l->cell_w, 1);
    l->row_labels = rows.labels, l->row_step = rows.step, l->ylabel_w = rows.extent;
    l->col_labels = cols.labels, l->col_step = cols.step, l->xlabel_h = cols.extent;
    char title[32];
    snprintf(title, sizeof title, "head %u", d->heads);
    l->panel_dx = BITMAP_FONT_HEIGHT + 4 + l->ylabel_w + 3 + TICK + 1;
    l->panel_dy = BITMAP_FONT_LINE + 4;
    uint32_t below = 1 + TICK + 2 + l->xlabel_h + 4 + BITMAP_FONT_LINE;
    uint32_t wide = max_u32(l->panel_w, max_u32(text_width(KEY_TITLE), text_width(title)));
    l->block_w = l->panel_dx + wide + GAP;
    l->block_h = l->panel_dy + max_u32(l->panel_h + below, text_width(QUERY_TITLE)) + GAP;
}

static vkattn_status check_desc(const heatmap_desc *d, vkattn_error *error)
{
    if (!d || !d->weights || !d->heads || !d->query_len || !d->key_len)
        return image_error(error, VKATTN_ERROR_INVALID_ARGUMENT,
                           "a heatmap needs weights and at least one head, query and key");
    if (d->cell > HEATMAP_MAX_CELL_PX)
        return image_error(error, VKATTN_ERROR_INVALID_ARGUMENT, "cells of %u pixels are larger than the limit %u",
                           d->cell, HEATMAP_MAX_CELL_PX);
    return VKATTN_OK;
}

vkattn_status heatmap_layout_compute(const heatmap_desc *d, heatmap_layout *out, vkattn_error *error)
{
    vkattn_status status = check_desc(d, error);
    if (status != VKATTN_OK) return status;
    heatmap_layout l = {.heads = d->heads};
    plan_cells(d, &l);
    plan_block(d, &l);
    l.heads_per_row = d->heads_per_row ? (d->heads_per_row < d->heads ? d->heads_per_row : d->heads)
                                       : ceil_sqrt(d->heads);
    l.grid_rows = (d->heads + l.heads_per_row - 1) / l.heads_per_row;

    char note[160];
    downsample_note(&l, note, sizeof note);
    int downsampled = l.row_bin > 1 || l.col_bin > 1;
    uint32_t title_w = max_u32(d->title ? text_width(d->title) : 0, downsampled ? text_width(note) : 0);
    l.title_x = MARGIN, l.title_y = MARGIN;
    l.title_lines = (uint32_t)(d->title != NULL) + (uint32_t)downsampled;
    l.grid_x = MARGIN;
    l.grid_y = MARGIN + l.title_lines * BITMAP_FONT_LINE + (l.title_lines ? 8 : 0);

    uint64_t legend_x = l.grid_x + (uint64_t)l.heads_per_row * l.block_w;
    l.bar_w = BAR_W;
    l.bar_h = l.panel_h < BAR_MIN_H ? BAR_MIN_H : l.panel_h > BAR_MAX_H ? BAR_MAX_H : l.panel_h;
    l.bar_y = l.grid_y + l.panel_dy;
    l.swatch_size = BAR_W;
    l.swatch_y = l.bar_y + l.bar_h + 14;
    uint32_t legend_w = max_u32(BAR_W + TICK + 3 + LEGEND_LABEL_CHARS * BITMAP_FONT_ADVANCE,
                                BAR_W + 5 + text_width(MASKED_LABEL));
    uint64_t width = legend_x + legend_w + MARGIN;
    if (width < (uint64_t)2 * MARGIN + title_w) width = (uint64_t)2 * MARGIN + title_w;
    uint64_t height = l.grid_y + (uint64_t)l.grid_rows * l.block_h;
    if (height < (uint64_t)l.swatch_y + l.swatch_size + 2 * MARGIN) height = (uint64_t)l.swatch_y + l.swatch_size + 2 * MARGIN;
    if (width > RGB_IMAGE_MAX_SIDE || height > RGB_IMAGE_MAX_SIDE || width * height > RGB_IMAGE_MAX_PIXELS)
        return image_error(error, VKATTN_ERROR_INVALID_ARGUMENT,
                           "the picture would be %llu x %llu pixels, over the limit (%u per side, %u pixels); "
                           "ask for smaller cells or another number of heads per row",
                           (unsigned long long)width, (unsigned long long)height, RGB_IMAGE_MAX_SIDE,
                           RGB_IMAGE_MAX_PIXELS);
    l.bar_x = l.swatch_x = (uint32_t)legend_x;
    l.width = (uint32_t)width, l.height = (uint32_t)height;
    *out = l;
    return VKATTN_OK;
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
        return image_error(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "allocating %zu heatmap cells", cells);
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

static void fill_masked(rgb_image *img, uint32_t x, uint32_t y, uint32_t w, uint32_t h)
{
    for (uint32_t yy = y; yy < y + h; yy++)
        for (uint32_t xx = x; xx < x + w; xx++) rgb_image_set(img, xx, yy, heatmap_mask_color(xx, yy));
}

static void draw_cells(rgb_image *img, const heatmap_layout *l, const binned *b, uint32_t head, double scale_max)
{
    uint32_t px, py;
    heatmap_panel_origin(l, head, &px, &py);
    for (uint32_t r = 0; r < l->rows; r++)
        for (uint32_t c = 0; c < l->cols; c++) {
            size_t k = ((size_t)head * l->rows + r) * l->cols + c;
            uint32_t x = px + c * l->cell_w, y = py + r * l->cell_h;
            if (!b->visible[k]) fill_masked(img, x, y, l->cell_w, l->cell_h);
            else rgb_image_fill_rect(img, x, y, l->cell_w, l->cell_h, heatmap_colormap(b->mean[k] / scale_max));
        }
    rgb_image_frame_rect(img, (int64_t)px - 1, (int64_t)py - 1, l->panel_w + 2, l->panel_h + 2, HEATMAP_INK);
}

/* Ticks and tick labels on the left (queries) and below (keys) of one panel. */
static void draw_ticks(rgb_image *img, const heatmap_desc *d, const heatmap_layout *l, uint32_t head)
{
    uint32_t px, py;
    heatmap_panel_origin(l, head, &px, &py);
    char buf[LABEL_BUF];
    for (uint32_t p = 0; p < d->query_len; p += l->row_step) {
        int64_t y = py + (int64_t)(p / l->row_bin) * l->cell_h + l->cell_h / 2;
        rgb_image_line(img, (int64_t)px - 1 - TICK, y, (int64_t)px - 2, y, HEATMAP_INK);
        tick_text(l->row_labels ? d->query_labels : NULL, p, buf, sizeof buf);
        rgb_image_text(img, (int64_t)px - 1 - TICK - 3 - text_width(buf), y - CAP_H / 2, buf, 1, HEATMAP_INK);
    }
    int64_t below = (int64_t)py + l->panel_h + 1;
    for (uint32_t p = 0; p < d->key_len; p += l->col_step) {
        int64_t x = px + (int64_t)(p / l->col_bin) * l->cell_w + l->cell_w / 2;
        rgb_image_line(img, x, below, x, below + TICK - 1, HEATMAP_INK);
        tick_text(l->col_labels ? d->key_labels : NULL, p, buf, sizeof buf);
        int64_t w = text_width(buf);
        if (l->col_labels) rgb_image_text_up(img, x - CAP_H / 2, below + TICK + 2 + w - 1, buf, HEATMAP_INK);
        else rgb_image_text(img, x - w / 2, below + TICK + 2, buf, 1, HEATMAP_INK);
    }
}

/* The panel title above, the axis titles left and below. */
static void draw_titles(rgb_image *img, const heatmap_layout *l, uint32_t head)
{
    uint32_t px, py;
    heatmap_panel_origin(l, head, &px, &py);
    char title[32];
    snprintf(title, sizeof title, "head %u", head + 1);
    int64_t w = text_width(title);
    rgb_image_text(img, px + ((int64_t)l->panel_w - w) / 2, (int64_t)py - 1 - 3 - BITMAP_FONT_HEIGHT, title, 1,
                   HEATMAP_INK);
    w = text_width(KEY_TITLE);
    int64_t x = l->panel_w >= w ? px + ((int64_t)l->panel_w - w) / 2 : px;
    rgb_image_text(img, x, (int64_t)py + l->panel_h + 1 + TICK + 2 + l->xlabel_h + 4, KEY_TITLE, 1, HEATMAP_INK);
    w = text_width(QUERY_TITLE);
    int64_t bottom = l->panel_h >= w ? py + ((int64_t)l->panel_h + w) / 2 : py + w - 1;
    rgb_image_text_up(img, (int64_t)px - l->panel_dx, bottom, QUERY_TITLE, HEATMAP_INK);
}

/* Colour-bar ticks at a 1-2-5 step (about five of them), and the maximum at the top. */
static void draw_bar_ticks(rgb_image *img, const heatmap_layout *l, double scale_max)
{
    double raw = scale_max / 4, mag = pow(10, floor(log10(raw))), step = 10 * mag;
    const double mantissa[3] = {1, 2, 5};
    for (int k = 2; k >= 0; k--)
        if (mantissa[k] * mag >= raw) step = mantissa[k] * mag;
    int64_t x = l->bar_x + l->bar_w + 1, top = l->bar_y;
    char buf[LABEL_BUF];
    for (int k = 0; k * step <= scale_max * (1 + 1e-9); k++) {
        double v = k * step;
        int64_t y = l->bar_y + (l->bar_h - 1) - (int64_t)lround(v / scale_max * (l->bar_h - 1));
        if (y - top < BITMAP_FONT_LINE) continue; /* leave the top for the maximum */
        rgb_image_line(img, x, y, x + TICK - 1, y, HEATMAP_INK);
        snprintf(buf, sizeof buf, "%.3g", v);
        rgb_image_text(img, x + TICK + 4, y - CAP_H / 2, buf, 1, HEATMAP_INK);
    }
    rgb_image_line(img, x, top, x + TICK - 1, top, HEATMAP_INK);
    snprintf(buf, sizeof buf, "%.3g", scale_max);
    rgb_image_text(img, x + TICK + 4, top - CAP_H / 2, buf, 1, HEATMAP_INK);
}

static void draw_legend(rgb_image *img, const heatmap_layout *l, double scale_max)
{
    rgb_image_text(img, l->bar_x, (int64_t)l->bar_y - 1 - 3 - BITMAP_FONT_HEIGHT, LEGEND_TITLE, 1, HEATMAP_INK);
    for (uint32_t y = 0; y < l->bar_h; y++)
        rgb_image_fill_rect(img, l->bar_x, l->bar_y + y, l->bar_w, 1,
                            heatmap_colormap((double)(l->bar_h - 1 - y) / (l->bar_h - 1)));
    rgb_image_frame_rect(img, (int64_t)l->bar_x - 1, (int64_t)l->bar_y - 1, l->bar_w + 2, l->bar_h + 2, HEATMAP_INK);
    draw_bar_ticks(img, l, scale_max);
    fill_masked(img, l->swatch_x, l->swatch_y, l->swatch_size, l->swatch_size);
    rgb_image_frame_rect(img, (int64_t)l->swatch_x - 1, (int64_t)l->swatch_y - 1, l->swatch_size + 2,
                         l->swatch_size + 2, HEATMAP_INK);
    rgb_image_text(img, l->swatch_x + l->swatch_size + 5, l->swatch_y + (l->swatch_size - CAP_H) / 2, MASKED_LABEL, 1,
                   HEATMAP_INK);
}

vkattn_status heatmap_render(const heatmap_desc *d, rgb_image *image, heatmap_layout *layout, vkattn_error *error)
{
    heatmap_layout l;
    binned b = {0};
    rgb_image img = {0};
    vkattn_status status;
    if ((status = heatmap_layout_compute(d, &l, error)) != VKATTN_OK ||
        (status = bin_weights(d, &l, &b, error)) != VKATTN_OK ||
        (status = rgb_image_create(l.width, l.height, HEATMAP_BACKGROUND, &img, error)) != VKATTN_OK)
        goto done;
    double scale_max = d->scale_one || !(b.max > 0) ? 1.0 : b.max;
    int64_t y = l.title_y;
    if (d->title) rgb_image_text(&img, l.title_x, y, d->title, 1, HEATMAP_INK), y += BITMAP_FONT_LINE;
    if (l.row_bin > 1 || l.col_bin > 1) {
        char note[160];
        downsample_note(&l, note, sizeof note);
        rgb_image_text(&img, l.title_x, y, note, 1, HEATMAP_INK);
    }
    for (uint32_t h = 0; h < d->heads; h++) {
        draw_cells(&img, &l, &b, h, scale_max);
        draw_ticks(&img, d, &l, h);
        draw_titles(&img, &l, h);
    }
    draw_legend(&img, &l, scale_max);
    *image = img;
    img.pixels = NULL;
    if (layout) *layout = l;
done:
    free(b.mean), free(b.visible);
    rgb_image_destroy(&img);
    return status;
}

vkattn_status heatmap_write_png(const heatmap_desc *d, const char *path, heatmap_layout *layout, vkattn_error *error)
{
    rgb_image img = {0};
    heatmap_layout l;
    vkattn_status status = heatmap_render(d, &img, &l, error);
    if (status == VKATTN_OK) status = rgb_image_write_png(&img, path, error);
    if (status == VKATTN_OK && layout) *layout = l;
    rgb_image_destroy(&img);
    return status;
}
