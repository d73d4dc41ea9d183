/* Attention heatmaps: one panel per head in a grid, query positions down, key positions across,
 * one colour scale shared by every head, masked positions hatched in grey, drawn with cairo
 * (canvas.h) into a PNG file by heatmap_write_png.
 *
 * Picture layout (all sizes in pixels; heatmap_layout holds the numbers):
 *
 *   +--------------------------------------------------------------------------+
 *   | overall title                          (a second line when downsampled)  |
 *   |            head 1                      head 2               weight       |
 *   |  q    0 +----------+             0 +----------+            +--+ 0.9      |
 *   |  u    1 |  panel   |             1 |  panel   |            |  | ...      |
 *   |  e  ... | rows x   |           ... |          |            |  | 0        |
 *   |  r      | cols     |               |          |            +--+          |
 *   |  y      +----------+               +----------+            [//] masked   |
 *   |          0  2  4  6                 0  2  4  6                           |
 *   |          key position               key position                         |
 *   |            head 3                     ...                                |
 *   +--------------------------------------------------------------------------+
 *
 * Each block (one head) is block_w x block_h; block k sits at grid_x + (k % heads_per_row) * block_w,
 * grid_y + (k / heads_per_row) * block_h, and its panel at (panel_dx, panel_dy) inside the block.
 */
#ifndef VKATTN_HEATMAP_H
#define VKATTN_HEATMAP_H

#include <cairo.h>
#include <stdint.h>

#include "canvas.h"

#define HEATMAP_MAX_CELLS 1024u  /* cells per panel axis; longer axes are downsampled by averaging */
#define HEATMAP_MAX_CELL_PX 256u /* --cell limit */
#define HEATMAP_LABEL_CHARS 16u  /* token labels longer than this are cut */
#define HEATMAP_TEXT_PX 11.0     /* font size of labels, axis and panel titles and the legend */
#define HEATMAP_TITLE_PX 12.0    /* font size of the overall title lines */

typedef struct heatmap_desc {
    uint32_t heads, query_len, key_len; /* H, L, S: panels, and the rows and columns of each (>= 1) */
    const float *weights;               /* (H, L, S), required; non-finite values are drawn as masked */
    const uint8_t *masked;              /* NULL = nothing masked; else (H, L, S), nonzero = masked */
    const char *const *query_labels;    /* NULL = position numbers; else L labels for the rows */
    const char *const *key_labels;      /* NULL = position numbers; else S labels for the columns */
    uint32_t heads_per_row;             /* 0 = ceil(sqrt(H)); more than H means H */
    uint32_t cell;                      /* pixels per cell side; 0 = panels of about 128..256 pixels
                                           (cells of at least 1 pixel, and a panel at least 32 pixels
                                           thick even for L = 1) */
    int scale_one;                      /* 0 = colour scale 0..max weight; 1 = 0..1 */
    const char *title;                  /* the overall title; NULL = none */
} heatmap_desc;

typedef struct heatmap_layout {
    uint32_t width, height;          /* the image */
    uint32_t rows, cols;             /* cells per panel */
    uint32_t row_bin, col_bin;       /* query / key positions averaged into one cell (1 = none) */
    uint32_t cell_w, cell_h;         /* pixels per cell across and down (equal unless one axis is
                                        so short that square cells would make a thin strip) */
    uint32_t panel_w, panel_h;       /* cols * cell_w, rows * cell_h */
    uint32_t heads, heads_per_row, grid_rows;
    uint32_t grid_x, grid_y;         /* the first block's top-left corner */
    uint32_t block_w, block_h;
    uint32_t panel_dx, panel_dy;     /* the panel's top-left corner inside its block */
    uint32_t ylabel_w, xlabel_h;     /* room for the tick labels left of / below a panel */
    int row_labels, col_labels;      /* tick labels are the caller's labels, not numbers */
    uint32_t row_step, col_step;     /* positions between ticks (labels: cells between ticks) */
    uint32_t text_h, line_h;         /* HEATMAP_TEXT_PX text: ascent + descent, and a line's pitch */
    uint32_t title_x, title_y, title_lines, title_line_h; /* title_y: the top of the first line */
    uint32_t bar_x, bar_y, bar_w, bar_h;     /* the colour bar: bottom row = 0, top row = the maximum */
    uint32_t swatch_x, swatch_y, swatch_size; /* the "masked" legend entry */
} heatmap_layout;

/* Text, ticks and frames (text is anti-aliased: its edges are greys); the background is white. */
#define HEATMAP_BACKGROUND ((rgb_color){255, 255, 255})
#define HEATMAP_INK ((rgb_color){0, 0, 0})
/* Masked cells: light grey with dark grey diagonal lines, (x + y) % 4 == 0 dark, in image
 * coordinates so the hatching runs on across neighbouring cells. No viridis colour is grey. */
#define HEATMAP_MASK_LIGHT ((rgb_color){204, 204, 204})
#define HEATMAP_MASK_DARK ((rgb_color){128, 128, 128})

/* Viridis-like colour for t in [0, 1] (clamped): dark purple at 0, yellow at 1. */
rgb_color heatmap_colormap(double t);
/* The masked hatch colour at image pixel (x, y). */
rgb_color heatmap_mask_color(uint32_t x, uint32_t y);

/* Computes the picture's geometry (text measured in the font it is drawn in).
 * VKATTN_ERROR_INVALID_ARGUMENT for zero sizes, a missing weights pointer or a picture larger than
 * CANVAS_MAX_SIDE / CANVAS_MAX_PIXELS. */
vkattn_status heatmap_layout_compute(const heatmap_desc *desc, heatmap_layout *out, vkattn_error *error);
/* The top-left pixel of `head`'s panel (0-based head). */
void heatmap_panel_origin(const heatmap_layout *layout, uint32_t head, uint32_t *x, uint32_t *y);
/* The centre pixel of cell (row, col) of `head`'s panel; row and col count cells, not positions. */
void heatmap_cell_center(const heatmap_layout *layout, uint32_t head, uint32_t row, uint32_t col, uint32_t *x,
                         uint32_t *y);

/* Renders and writes the picture as an 8-bit RGB PNG (whatever the file name); `layout` (may be
 * NULL) receives the geometry. A failed write is VKATTN_ERROR_IO, and the partial file is removed
 * (canvas_finish). */
vkattn_status heatmap_write_png(const heatmap_desc *desc, const char *path, heatmap_layout *layout,
                                vkattn_error *error);

#endif
