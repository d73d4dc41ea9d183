/* vkattn heatmap without a GPU: the drawing layer (text cleaning, PNG and SVG files through cairo,
 * write errors included, anti-aliased text), the heatmap renderer on a known pattern checked pixel by
 * pixel after reading the PNG back through cairo, where the text lands, downsampling, the
 * command's errors, and (given the PyTorch fixture directory as argv[1]) the masks a forward knows
 * against PyTorch's zero weights, on the CPU path. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <sys/stat.h>
#include <fontconfig/fontconfig.h>
#include <unistd.h>

#include "test_tmp.h"
#include "test_util.h"

#include "canvas.h"
#include "cli.h"
#include "forward_inputs.h"
#include "heatmap.h"

static int same_color(rgb_color a, rgb_color b)
{
    return a.r == b.r && a.g == b.g && a.b == b.b;
}

static int is_mask_color(rgb_color c)
{
    return same_color(c, HEATMAP_MASK_LIGHT) || same_color(c, HEATMAP_MASK_DARK);
}

/* The pixel at (x, y) of a cairo RGB24 or ARGB32 image; black outside it (or without one). */
static rgb_color pixel(cairo_surface_t *img, int64_t x, int64_t y)
{
    rgb_color c = {0, 0, 0};
    if (!img || cairo_surface_status(img) != CAIRO_STATUS_SUCCESS || x < 0 || y < 0 ||
        x >= cairo_image_surface_get_width(img) || y >= cairo_image_surface_get_height(img))
        return c;
    const unsigned char *row = cairo_image_surface_get_data(img) + y * cairo_image_surface_get_stride(img);
    uint32_t v = ((const uint32_t *)row)[x];
    c.r = (uint8_t)(v >> 16), c.g = (uint8_t)(v >> 8), c.b = (uint8_t)v;
    return c;
}

static int count_color(cairo_surface_t *img, int64_t x, int64_t y, int64_t w, int64_t h, rgb_color c)
{
    int n = 0;
    for (int64_t yy = y; yy < y + h; yy++)
        for (int64_t xx = x; xx < x + w; xx++) n += same_color(pixel(img, xx, yy), c);
    return n;
}

/* Text pixels in a box of a black-on-white picture: dark ones (the strokes) and the greys between
 * black and white that anti-aliasing puts at their edges. */
typedef struct ink {
    int dark, grey;
    double mean_x; /* of the dark pixels */
} ink;

static ink ink_in(cairo_surface_t *img, int64_t x, int64_t y, int64_t w, int64_t h)
{
    ink k = {0, 0, 0};
    for (int64_t yy = y; yy < y + h; yy++)
        for (int64_t xx = x; xx < x + w; xx++) {
            rgb_color c = pixel(img, xx, yy);
            if (c.r != c.g || c.g != c.b) continue;
            if (c.r < 96) k.dark++, k.mean_x += (double)xx;
            else if (c.r < 255) k.grey++;
        }
    if (k.dark) k.mean_x /= k.dark;
    return k;
}

/* Reads a PNG back through cairo (cairo_surface_destroy it); checks that it is 8-bit RGB first. */
static cairo_surface_t *load_png(const char *path)
{
    unsigned char head[26] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(head, 1, sizeof head, f) : 0;
    if (f) fclose(f);
    CHECK_MSG(n == sizeof head && memcmp(head, "\x89PNG\r\n\x1a\n", 8) == 0, "%s is not a PNG", path);
    CHECK_MSG(head[24] == 8 && head[25] == 2, "%s: bit depth %u, colour type %u, not 8-bit RGB", path, head[24],
              head[25]);
    cairo_surface_t *img = cairo_image_surface_create_from_png(path);
    CHECK_MSG(cairo_surface_status(img) == CAIRO_STATUS_SUCCESS, "%s: %s", path,
              cairo_status_to_string(cairo_surface_status(img)));
    cairo_surface_flush(img);
    return img;
}

/* The picture heatmap_write_png writes, read back (*img is set only on success). */
static vkattn_status render(const heatmap_desc *d, cairo_surface_t **img, heatmap_layout *layout)
{
    char path[300];
    test_tmp_path(path, sizeof path, "render.png");
    vkattn_status s = heatmap_write_png(d, path, layout, NULL);
    if (s == VKATTN_OK) *img = load_png(path);
    remove(path);
    return s;
}

static uint32_t width_of(cairo_surface_t *img)
{
    return (uint32_t)cairo_image_surface_get_width(img);
}

static uint32_t height_of(cairo_surface_t *img)
{
    return (uint32_t)cairo_image_surface_get_height(img);
}

/* The width of `text` in the heatmap's fonts. */
static double measured(const char *text, double size, int bold)
{
    canvas m;
    if (canvas_open_measure(&m, NULL) != VKATTN_OK) return 0;
    canvas_font(m.cr, size, bold);
    double w = canvas_text_width(m.cr, text);
    canvas_destroy(&m);
    return w;
}

/* Runs a subcommand on a NULL-terminated argument list. */
static int run_cmd(int (*cmd)(int, char **), const char **args)
{
    int argc = 0;
    while (args[argc]) argc++;
    return cmd(argc, (char **)args);
}

/* run_cmd with stdout and stderr captured (then echoed); checks that they hold `text`. */
static int run_said(int (*cmd)(int, char **), const char **args, const char *text)
{
    static char out[1 << 14];
    test_capture c;
    test_capture_begin(&c, 1);
    int rc = run_cmd(cmd, args);
    test_capture_end(&c, out, sizeof out);
    fputs(out, stdout);
    CHECK_MSG(strstr(out, text) != NULL, "the output lacks \"%s\"", text);
    return rc;
}

/* ---------------------------------------------------------------------------------------------- */
/* The drawing layer                                                                               */
/* ---------------------------------------------------------------------------------------------- */

static void test_clean_text(void)
{
    char buf[64];
    /* Valid UTF-8 passes; each invalid byte and each control character becomes '?'. */
    CHECK(canvas_clean_text("a\xc3\xa9" "b\xe6\x97\xa5", 0, buf, sizeof buf) == 4);
    CHECK(strcmp(buf, "a\xc3\xa9" "b\xe6\x97\xa5") == 0);
    canvas_clean_text("x\ty\x80\xc3z\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80!", 0, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "x?y?" "?z?????????" "!") == 0, "got \"%s\"", buf); /* surrogate, overlong, > U+10FFFF */
    /* Cut to max_chars characters, not bytes: 14 of them and "..". */
    CHECK(canvas_clean_text("\xe2\x80\xa6\xe2\x80\xa6" "abcdefghijklmnopq", 16, buf, sizeof buf) == 16);
    CHECK_MSG(strcmp(buf, "\xe2\x80\xa6\xe2\x80\xa6" "abcdefghijkl..") == 0, "got \"%s\"", buf);
    CHECK(canvas_clean_text("abcdefghijklmnop", 16, buf, sizeof buf) == 16 && strcmp(buf, "abcdefghijklmnop") == 0);
    /* A small buffer cuts too, and still ends in "..". */
    canvas_clean_text("abcdefghij", 0, buf, 8);
    CHECK_MSG(strcmp(buf, "abcde..") == 0, "got \"%s\"", buf);
    CHECK(canvas_clean_text(NULL, 0, buf, sizeof buf) == 0 && buf[0] == '\0');
    CHECK(canvas_format_of("a.png") == CANVAS_PNG && canvas_format_of("dir/B.PNG") == CANVAS_PNG);
    CHECK(canvas_format_of("a.svg") == CANVAS_SVG && canvas_format_of("a.SvG") == CANVAS_SVG);
    CHECK(canvas_format_of(".png") == CANVAS_NONE && canvas_format_of("a.svgz") == CANVAS_NONE);
    CHECK(canvas_format_of("png") == CANVAS_NONE && canvas_format_of("a.gif") == CANVAS_NONE);
    CHECK(canvas_format_of(NULL) == CANVAS_NONE);
}

/* Rectangles at whole pixels come back exactly; text is anti-aliased; invalid UTF-8 draws as '?'
 * instead of breaking the context. */
static void test_canvas_png(void)
{
    char path[300];
    test_tmp_path(path, sizeof path, "canvas.png");
    canvas c;
    CHECK_STATUS(canvas_open(&c, CANVAS_PNG, path, 37, 23, NULL), VKATTN_OK);
    canvas_set_color(c.cr, (rgb_color){12, 34, 56});
    cairo_rectangle(c.cr, 3, 4, 10, 5);
    cairo_fill(c.cr);
    canvas_font(c.cr, 11, 0);
    canvas_set_color(c.cr, (rgb_color){0, 0, 0});
    canvas_text(c.cr, 16, 15, "Hi \xff", CANVAS_LEFT);
    CHECK_STATUS(canvas_finish(&c, NULL), VKATTN_OK);
    canvas_destroy(&c);
    canvas_destroy(&c); /* twice is fine */
    canvas_destroy(NULL);
    cairo_surface_t *img = load_png(path);
    CHECK(width_of(img) == 37 && height_of(img) == 23);
    CHECK(count_color(img, 0, 0, 37, 23, (rgb_color){12, 34, 56}) == 50);
    CHECK(same_color(pixel(img, 0, 0), (rgb_color){255, 255, 255})); /* the background */
    ink k = ink_in(img, 16, 0, 21, 23);
    CHECK_MSG(k.dark > 10 && k.grey > 5, "text: %d dark, %d grey pixels", k.dark, k.grey);
    cairo_surface_destroy(img);
    remove(path);

    vkattn_error e = {0};
    CHECK_STATUS(canvas_open(&c, CANVAS_PNG, path, 0, 5, &e), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(canvas_open(&c, CANVAS_PNG, path, CANVAS_MAX_SIDE, CANVAS_MAX_SIDE, &e),
                 VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(c.cr == NULL && strstr(e.message, "pixels") != NULL);
    CHECK_STATUS(canvas_open(&c, CANVAS_NONE, path, 5, 5, &e), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(canvas_open(&c, CANVAS_SVG, NULL, 5, 5, &e), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(canvas_open(&c, CANVAS_PNG, "", 5, 5, &e), VKATTN_ERROR_INVALID_ARGUMENT);
}

/* Writes a w x h PNG of noise (which does not compress) to `path`. */
static vkattn_status write_noise_png(const char *path, int w, int h, vkattn_error *e)
{
    canvas c;
    vkattn_status s = canvas_open(&c, CANVAS_PNG, path, (uint32_t)w, (uint32_t)h, e);
    if (s != VKATTN_OK) return s;
    cairo_surface_flush(c.surface);
    unsigned char *data = cairo_image_surface_get_data(c.surface);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            ((uint32_t *)(data + y * cairo_image_surface_get_stride(c.surface)))[x] =
                (uint32_t)((y * w + x) * 2654435761u) >> 8;
    cairo_surface_mark_dirty(c.surface);
    s = canvas_finish(&c, e);
    canvas_destroy(&c);
    return s;
}

static void test_canvas_write_errors(void)
{
    vkattn_error e = {0};
    CHECK_STATUS(write_noise_png("/nonexistent-dir/x.png", 4, 4, &e), VKATTN_ERROR_IO);
    CHECK(strstr(e.message, "/nonexistent-dir/x.png") != NULL);
    CHECK_STATUS(write_noise_png(test_tmp_dir, 4, 4, &e), VKATTN_ERROR_IO); /* a directory */
    canvas c;
    CHECK_STATUS(canvas_open(&c, CANVAS_SVG, "/nonexistent-dir/x.svg", 4, 4, &e), VKATTN_ERROR_IO);
    /* A full disk: a big PNG overflows the stdio buffer while cairo writes; a tiny one fails only
     * when the file is flushed. Both keep the errno's text, and /dev/full must survive. */
    struct stat st;
    if (stat("/dev/full", &st) == 0) {
        CHECK_STATUS(write_noise_png("/dev/full", 600, 600, &e), VKATTN_ERROR_IO);
        CHECK_MSG(strstr(e.message, "No space") && strstr(e.message, "/dev/full"), "%s", e.message);
        CHECK_STATUS(write_noise_png("/dev/full", 2, 2, &e), VKATTN_ERROR_IO);
        CHECK_MSG(strstr(e.message, "No space") != NULL, "%s", e.message);
        CHECK_STATUS(canvas_open(&c, CANVAS_SVG, "/dev/full", 40, 40, &e), VKATTN_OK);
        canvas_text(c.cr, 2, 20, "svg", CANVAS_LEFT);
        CHECK_STATUS(canvas_finish(&c, &e), VKATTN_ERROR_IO);
        canvas_destroy(&c);
        CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
    }
}

/* ---------------------------------------------------------------------------------------------- */

enum { KP_H = 2, KP_L = 8, KP_S = 8 };

/* Head 1: causal, all weight on key 0. Head 2: causal, uniform over the visible keys 0..i. */
static void known_pattern(float *w, uint8_t *masked)
{
    for (int h = 0; h < KP_H; h++)
        for (int i = 0; i < KP_L; i++)
            for (int j = 0; j < KP_S; j++) {
                size_t k = ((size_t)h * KP_L + i) * KP_S + j;
                masked[k] = j > i;
                w[k] = masked[k] ? 0.0f : h == 0 ? (j == 0 ? 1.0f : 0.0f) : 1.0f / (float)(i + 1);
            }
}

static rgb_color cell_pixel(cairo_surface_t *img, const heatmap_layout *l, uint32_t h, uint32_t r, uint32_t c)
{
    uint32_t x, y;
    heatmap_cell_center(l, h, r, c, &x, &y);
    return pixel(img, x, y);
}

/* The title, "head 2" centred over the second panel, a label left of each row's tick. */
static void check_known_text(cairo_surface_t *img, const heatmap_layout *l, const char *title)
{
    int64_t title_w = (int64_t)measured(title, HEATMAP_TITLE_PX, 0);
    ink k = ink_in(img, l->title_x, l->title_y, title_w + 1, l->title_line_h);
    CHECK_MSG(k.dark > 3 * (int)strlen(title) && k.grey > (int)strlen(title), "title: %d dark, %d grey pixels",
              k.dark, k.grey);
    k = ink_in(img, l->title_x + title_w + 2, l->title_y, l->width - l->title_x - title_w - 2, l->title_line_h);
    CHECK_MSG(k.dark == 0 && k.grey == 0, "ink right of the title");
    uint32_t px, py;
    heatmap_panel_origin(l, 1, &px, &py);
    k = ink_in(img, px, (int64_t)py - l->panel_dy, l->panel_w, l->panel_dy - 1);
    CHECK_MSG(k.dark > 20 && fabs(k.mean_x - (px + l->panel_w / 2.0)) < 4, "\"head 2\": %d dark pixels around x %.1f",
              k.dark, k.mean_x);
    heatmap_panel_origin(l, 0, &px, &py);
    for (uint32_t r = 0; r < l->rows; r += l->row_step) {
        uint32_t x, y;
        heatmap_cell_center(l, 0, r, 0, &x, &y);
        k = ink_in(img, (int64_t)px - l->ylabel_w - 8, (int64_t)y - l->line_h / 2, l->ylabel_w + 2, l->line_h);
        CHECK_MSG(k.dark > 0, "no label at row %u", r);
    }
}

static void check_known_pixels(cairo_surface_t *img, const heatmap_layout *l, const char *title)
{
    rgb_color top = heatmap_colormap(1.0), bottom = heatmap_colormap(0.0);
    CHECK(same_color(cell_pixel(img, l, 0, 3, 0), top));    /* the max weight */
    CHECK(same_color(cell_pixel(img, l, 0, 7, 0), top));
    CHECK(same_color(cell_pixel(img, l, 0, 3, 1), bottom)); /* a zero weight: dark, not masked */
    CHECK(!is_mask_color(bottom));
    CHECK(is_mask_color(cell_pixel(img, l, 0, 0, 5)));     /* masked: hatched, both greys, nothing else */
    uint32_t x, y;
    heatmap_cell_center(l, 0, 0, 5, &x, &y);
    int64_t x0 = x - l->cell_w / 2, y0 = y - l->cell_h / 2;
    int dark = count_color(img, x0, y0, l->cell_w, l->cell_h, HEATMAP_MASK_DARK);
    int light = count_color(img, x0, y0, l->cell_w, l->cell_h, HEATMAP_MASK_LIGHT);
    CHECK(dark > 0 && light > 0 && dark + light == (int)(l->cell_w * l->cell_h));
    CHECK(same_color(pixel(img, x0, y0), heatmap_mask_color((uint32_t)x0, (uint32_t)y0)));
    /* Every pixel of a visible cell has the cell's colour: no smoothing between cells. */
    heatmap_cell_center(l, 1, 3, 1, &x, &y);
    CHECK(count_color(img, x - l->cell_w / 2, y - l->cell_h / 2, l->cell_w, l->cell_h, heatmap_colormap(0.25)) ==
          (int)(l->cell_w * l->cell_h)); /* uniform 1/4, scale 0..1 */
    CHECK(same_color(cell_pixel(img, l, 1, 7, 7), heatmap_colormap(0.125)));
    CHECK(same_color(cell_pixel(img, l, 1, 0, 0), top));
    CHECK(is_mask_color(cell_pixel(img, l, 1, 2, 6)));
    /* Panel frames in ink, just outside the cells. */
    uint32_t px, py;
    heatmap_panel_origin(l, 0, &px, &py);
    CHECK(same_color(pixel(img, px - 1, py + 3), HEATMAP_INK) && same_color(pixel(img, px + 3, py - 1), HEATMAP_INK));
    /* The legend: the bar runs from the minimum colour at the bottom to the maximum at the top, and
     * the masked swatch is hatched. */
    CHECK(same_color(pixel(img, l->bar_x + l->bar_w / 2, l->bar_y), top));
    CHECK(same_color(pixel(img, l->bar_x + l->bar_w / 2, l->bar_y + l->bar_h - 1), bottom));
    CHECK(is_mask_color(pixel(img, l->swatch_x + l->swatch_size / 2, l->swatch_y + l->swatch_size / 2)));
    check_known_text(img, l, title);
}

static void test_known_pattern(void)
{
    float w[KP_H * KP_L * KP_S];
    uint8_t masked[KP_H * KP_L * KP_S];
    known_pattern(w, masked);
    const char *title = "known pattern: causal, head 1 on key 0, head 2 uniform";
    heatmap_desc d = {.heads = KP_H, .query_len = KP_L, .key_len = KP_S, .weights = w, .masked = masked,
                      .title = title};
    heatmap_layout expected, got;
    CHECK_STATUS(heatmap_layout_compute(&d, &expected, NULL), VKATTN_OK);
    CHECK(expected.heads_per_row == 2 && expected.grid_rows == 1 && expected.rows == 8 && expected.cols == 8);
    CHECK(expected.row_bin == 1 && expected.col_bin == 1 && expected.title_lines == 1);
    CHECK(expected.panel_w >= 128 && expected.panel_w <= 256 && expected.cell_w == expected.cell_h);
    CHECK(expected.text_h >= 10 && expected.text_h <= 20); /* 11-pixel text */
    char path[300];
    test_tmp_path(path, sizeof path, "known.png");
    CHECK_STATUS(heatmap_write_png(&d, path, &got, NULL), VKATTN_OK);
    CHECK(memcmp(&got, &expected, sizeof got) == 0);
    cairo_surface_t *img = load_png(path);
    CHECK(width_of(img) == expected.width && height_of(img) == expected.height);
    check_known_pixels(img, &expected, title);
    cairo_surface_destroy(img);

    /* Bigger cells, one head per row, token labels (one not ASCII): the same colours at the new places. */
    const char *tokens[KP_S] = {"<s>", "the", "cat", "sat", "on", "the", "mat", "\xe2\x80\xa6"};
    d.cell = 30, d.heads_per_row = 1, d.query_labels = tokens, d.key_labels = tokens;
    CHECK_STATUS(heatmap_write_png(&d, path, &got, NULL), VKATTN_OK);
    CHECK(got.cell_w == 30 && got.heads_per_row == 1 && got.grid_rows == 2 && got.row_labels && got.col_labels);
    CHECK(got.row_step == 1 && got.col_step == 1); /* 30-pixel cells leave room for every label */
    img = load_png(path);
    CHECK(width_of(img) == got.width && height_of(img) == got.height);
    check_known_pixels(img, &got, title);
    cairo_surface_destroy(img);
    remove(path);

    /* --scale-one with a smaller maximum: 0.5 is the middle colour, not the top one. */
    for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) w[k] *= 0.5f;
    d.scale_one = 1;
    img = NULL;
    CHECK_STATUS(render(&d, &img, &got), VKATTN_OK);
    CHECK(same_color(cell_pixel(img, &got, 0, 3, 0), heatmap_colormap(0.5)));
    if (img) cairo_surface_destroy(img);
}

static void test_downsampling(void)
{
    enum { N = 2100 };
    float *w = calloc((size_t)N * N, sizeof(float));
    uint8_t *masked = calloc((size_t)N * N, 1);
    if (!w || !masked) {
        CHECK_MSG(0, "out of memory");
        free(w), free(masked);
        return;
    }
    /* 2100 positions -> 3 per cell, 700 cells. Cell (0,0): nine ones, mean 1. Cell (1,1): eight
     * visible 0.5 and one masked: mean 0.5. Cell (2,2): all nine masked. */
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            w[(size_t)i * N + j] = 1.0f;
            w[(size_t)(3 + i) * N + 3 + j] = 0.5f;
            masked[(size_t)(6 + i) * N + 6 + j] = 1;
        }
    masked[(size_t)4 * N + 4] = 1, w[(size_t)4 * N + 4] = 123.0f; /* masked: ignored */
    heatmap_desc d = {.heads = 1, .query_len = N, .key_len = N, .weights = w, .masked = masked, .title = "long"};
    cairo_surface_t *img = NULL;
    heatmap_layout l;
    CHECK_STATUS(render(&d, &img, &l), VKATTN_OK);
    CHECK(l.row_bin == 3 && l.col_bin == 3 && l.rows == 700 && l.cols == 700 && l.cell_w == 1);
    CHECK(l.title_lines == 2); /* the title says it is downsampled */
    if (img) {
        CHECK(width_of(img) == l.width && height_of(img) == l.height);
        CHECK(same_color(cell_pixel(img, &l, 0, 0, 0), heatmap_colormap(1.0)));
        CHECK(same_color(cell_pixel(img, &l, 0, 1, 1), heatmap_colormap(0.5)));
        CHECK(is_mask_color(cell_pixel(img, &l, 0, 2, 2)));
        CHECK(same_color(cell_pixel(img, &l, 0, 0, 1), heatmap_colormap(0.0)));
        CHECK(ink_in(img, l.title_x, l.title_y + l.title_line_h, l.width, l.title_line_h).dark > 0);
        cairo_surface_destroy(img);
    }
    free(w), free(masked);
}

static void test_layout_errors(void)
{
    float w[4] = {0};
    heatmap_desc d = {.heads = 1, .query_len = 2, .key_len = 2, .weights = w};
    heatmap_layout l;
    vkattn_error e = {0};
    d.heads = 0;
    CHECK_STATUS(heatmap_layout_compute(&d, &l, &e), VKATTN_ERROR_INVALID_ARGUMENT);
    d.heads = 1, d.weights = NULL;
    CHECK_STATUS(heatmap_layout_compute(&d, &l, &e), VKATTN_ERROR_INVALID_ARGUMENT);
    d.weights = w, d.cell = HEATMAP_MAX_CELL_PX + 1;
    CHECK_STATUS(heatmap_layout_compute(&d, &l, &e), VKATTN_ERROR_INVALID_ARGUMENT);
    /* 4096 heads of 256-pixel cells in one row: far over the image limits, refused before drawing. */
    d.cell = HEATMAP_MAX_CELL_PX, d.heads = 4096, d.heads_per_row = 4096;
    CHECK_STATUS(heatmap_layout_compute(&d, &l, &e), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(e.message, "pixels") != NULL);
    /* NaN and negative weights: drawn as masked and as the bottom colour. */
    float odd[4] = {NAN, -1.0f, 0.5f, 1.0f};
    heatmap_desc o = {.heads = 1, .query_len = 2, .key_len = 2, .weights = odd};
    cairo_surface_t *img = NULL;
    CHECK_STATUS(render(&o, &img, &l), VKATTN_OK);
    if (img) {
        CHECK(is_mask_color(cell_pixel(img, &l, 0, 0, 0)));
        CHECK(same_color(cell_pixel(img, &l, 0, 0, 1), heatmap_colormap(0.0)));
        CHECK(same_color(cell_pixel(img, &l, 0, 1, 1), heatmap_colormap(1.0)));
        cairo_surface_destroy(img);
    }
}

/* ---------------------------------------------------------------------------------------------- */

static int write_npy(const char *path, uint32_t rank, const uint32_t *dims, float *data)
{
    vkattn_array a = {.dtype = VKATTN_DTYPE_F32, .rank = rank, .data = data, .bytes = sizeof(float)};
    for (uint32_t i = 0; i < rank; i++) a.dims[i] = dims[i], a.bytes *= dims[i];
    return vkattn_npy_write(path, &a, NULL) == VKATTN_OK;
}

static void test_command(void)
{
    /* (B,H,L,S) = (2,2,8,8): the known pattern twice; and an (H,L,S) file and a bad rank-2 file. */
    float w[2 * KP_H * KP_L * KP_S];
    uint8_t masked[KP_H * KP_L * KP_S];
    known_pattern(w, masked);
    memcpy(w + KP_H * KP_L * KP_S, w, sizeof w / 2);
    char w4[300], w3[300], w2[300], out[300], bad_out[320], tokens[300], short_tokens[300];
    test_tmp_path(w4, sizeof w4, "w4.npy"), test_tmp_path(w3, sizeof w3, "w3.npy");
    test_tmp_path(w2, sizeof w2, "w2.npy");
    test_tmp_path(out, sizeof out, "cmd.png"), test_tmp_path(tokens, sizeof tokens, "tokens.txt");
    test_tmp_path(short_tokens, sizeof short_tokens, "short.txt");
    snprintf(bad_out, sizeof bad_out, "%s/no-such-dir/x.png", test_tmp_dir);
    uint32_t d4[4] = {2, KP_H, KP_L, KP_S};
    CHECK(write_npy(w4, 4, d4, w) && write_npy(w3, 3, d4 + 1, w) && write_npy(w2, 2, d4 + 2, w));
    FILE *f = fopen(tokens, "w");
    if (f) fputs("<s>\nthe\ncat\r\nsat\non\nthe\nmat\n\xe2\x80\xa6", f), fclose(f); /* no final newline */
    f = fopen(short_tokens, "w");
    if (f) fputs("a\nb\n", f), fclose(f);

    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, NULL}) == 0);
    cairo_surface_t *img = load_png(out);
    CHECK(width_of(img) > 200 && height_of(img) > 200);
    cairo_surface_destroy(img);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w3, "--out", out, "--tokens", tokens, "--zeros-masked",
                                                "--cell", "20", "--heads-per-row", "1", "--scale-one", NULL}) == 0);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--batch-index", "1", "--out", out,
                                                "--query-tokens", tokens, "--key-tokens", tokens, NULL}) == 0);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--help", NULL}) == 0);
    /* Errors: each a clear message and a non-zero exit code. */
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", bad_out, NULL}) == 1);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w2, "--out", out, NULL}) == 1);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--batch-index", "2", "--out", out, NULL}) == 2);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w3, "--batch-index", "1", "--out", out, NULL}) == 2);
    uint32_t empty[4] = {0, KP_H, KP_L, KP_S}; /* numpy writes empty arrays: nothing to draw, the file's fault */
    char w0[300], said0[700];
    test_tmp_path(w0, sizeof w0, "w0.npy");
    CHECK(write_npy(w0, 4, empty, w));
    snprintf(said0, sizeof said0, "vkattn heatmap: %s has shape (0, 2, 8, 8), which holds no attention weights", w0);
    CHECK(run_said(cmd_heatmap, (const char *[]){"--from-npy", w0, "--out", out, NULL}, said0) == 1);
    remove(w0);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, NULL}) == 2);                     /* no --out */
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--out", out, NULL}) == 2);                         /* no input */
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--causal", NULL}) == 2);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--tokens", short_tokens, NULL}) == 1);
    CHECK(run_cmd(cmd_heatmap,
                  (const char *[]){"--from-npy", w4, "--out", out, "--tokens", "/no/such/file", NULL}) == 1);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", "/no/such.npy", "--out", out, NULL}) == 1);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--cell", "0", NULL}) == 2);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--bogus", NULL}) == 2);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--weights", "w.safetensors", "--heads", "2", "--query", "q.npy",
                                                "--path", "fused", "--out", out, NULL}) == 2);
    /* The picture is PNG whatever the name: another extension is refused before anything runs; the
     * extension's case does not matter. A directory as the token file is named so. */
    char svg[300], upper[300], text[700];
    test_tmp_path(svg, sizeof svg, "cmd.svg"), test_tmp_path(upper, sizeof upper, "cmd.PNG");
    snprintf(text, sizeof text, "vkattn heatmap: --out %s: heatmap writes PNG only; give a file name ending in .png",
             svg);
    CHECK(run_said(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", svg, NULL}, text) == 2);
    CHECK_MSG(access(svg, F_OK) != 0, "%s was written", svg);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", upper, NULL}) == 0);
    snprintf(text, sizeof text, "vkattn heatmap: the token file %s: is a directory, not a file\n", test_tmp_dir);
    CHECK(run_said(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--tokens", test_tmp_dir, NULL},
                   text) == 1);
    remove(w4), remove(w3), remove(w2), remove(out), remove(tokens), remove(short_tokens), remove(upper);
}

/* The mask rules on hand-built inputs (no files): valid lengths per item and per query, a float
 * mask with -inf, a per-head bool mask, the key padding mask, causal, and an appended zero key. */
static void test_mask_rules(void)
{
    enum { B = 2, H = 2, L = 3, S = 4 };
    int32_t lens[B] = {2, 4}, lens_per_query[B * L] = {1, 2, 3, 0, 4, 4};
    float fmask[L * S] = {0, -INFINITY, 0, 0, 0, 0, -1e9f, 0, 0, 0, 0, INFINITY * 0.0f};
    uint8_t kpm[B * S] = {0, 0, 0, 1, 0, 0, 0, 0}, bmask[B * H * L * S] = {0};
    bmask[((1 * H + 1) * L + 2) * S + 0] = 7; /* batch 1, head 2, query 2, key 0; any nonzero is true */
    forward_inputs in = {.B = B, .H = H, .L = L, .S = S, .S_ext = S + 1};
    in.valid_lens = (vkattn_array){.dtype = VKATTN_DTYPE_I32, .rank = 1, .dims = {B}, .data = lens};
    CHECK(!forward_inputs_masked(&in, 0, 0, 0, 1) && forward_inputs_masked(&in, 0, 0, 0, 2));
    CHECK(!forward_inputs_masked(&in, 1, 1, 2, 3));
    CHECK(!forward_inputs_masked(&in, 0, 0, 0, S)); /* the zero key is never masked */
    in.valid_lens.data = lens_per_query, in.desc.valid_lens_per_query = 1;
    CHECK(!forward_inputs_masked(&in, 0, 0, 0, 0) && forward_inputs_masked(&in, 0, 0, 0, 1));
    CHECK(!forward_inputs_masked(&in, 0, 1, 2, 2) && forward_inputs_masked(&in, 0, 1, 2, 3));
    CHECK(forward_inputs_masked(&in, 1, 0, 0, 0)); /* a valid length of 0 masks every key */
    in.valid_lens.data = NULL;
    in.attn_mask = (vkattn_array){.dtype = VKATTN_DTYPE_F32, .rank = 2, .dims = {L, S}, .data = fmask};
    CHECK(forward_inputs_masked(&in, 1, 1, 0, 1));  /* -inf */
    CHECK(!forward_inputs_masked(&in, 0, 0, 1, 2)); /* -1e9 only lowers the score */
    CHECK(!forward_inputs_masked(&in, 0, 0, 2, 3)); /* NaN is not -inf (the library refuses it anyway) */
    in.attn_mask = (vkattn_array){.dtype = VKATTN_DTYPE_BOOL, .rank = 3, .dims = {B * H, L, S}, .data = bmask};
    in.desc.attn_mask_per_head = 1;
    CHECK(forward_inputs_masked(&in, 1, 1, 2, 0) && !forward_inputs_masked(&in, 1, 0, 2, 0));
    CHECK(!forward_inputs_masked(&in, 0, 1, 2, 0));
    in.attn_mask.data = NULL;
    in.key_padding_mask = (vkattn_array){.dtype = VKATTN_DTYPE_BOOL, .rank = 2, .dims = {B, S}, .data = kpm};
    CHECK(forward_inputs_masked(&in, 0, 1, 0, 3) && !forward_inputs_masked(&in, 1, 1, 0, 3));
    in.key_padding_mask.data = NULL, in.desc.causal = 1;
    CHECK(forward_inputs_masked(&in, 0, 0, 1, 2) && !forward_inputs_masked(&in, 0, 0, 1, 1));
    CHECK(!forward_inputs_masked(&in, 0, 0, 0, S));
}

/* ---------------------------------------------------------------------------------------------- */
/* With the PyTorch fixtures: what a forward calls masked is exactly where PyTorch's weights are 0. */

typedef struct fixture_case {
    char name[64], attn_mask[8], weights[8];
    unsigned heads, zero_attn, causal, has_key, has_kpm, per_head;
} fixture_case;

typedef struct fixture_paths {
    char weights[512], query[512], key[512], value[512], kpm[512], mask[512], torch[512];
} fixture_paths;

static forward_options fixture_options(const char *dir, const fixture_case *c, fixture_paths *p)
{
    snprintf(p->weights, sizeof p->weights, "%s/%s.safetensors", dir, c->name);
    snprintf(p->query, sizeof p->query, "%s/%s.query.npy", dir, c->name);
    snprintf(p->key, sizeof p->key, "%s/%s.key.npy", dir, c->name);
    snprintf(p->value, sizeof p->value, "%s/%s.value.npy", dir, c->name);
    snprintf(p->kpm, sizeof p->kpm, "%s/%s.kpm.npy", dir, c->name);
    snprintf(p->mask, sizeof p->mask, "%s/%s.attn_mask.npy", dir, c->name);
    snprintf(p->torch, sizeof p->torch, "%s/%s.weights.npy", dir, c->name);
    forward_options o = {.weights = p->weights, .heads = c->heads, .query = p->query, .causal = (int)c->causal,
                         .add_zero_attn = (int)c->zero_attn, .cpu = 1};
    if (c->has_key) o.key = p->key, o.value = p->value;
    if (c->has_kpm) o.key_padding_mask = p->kpm;
    if (strcmp(c->attn_mask, "none") != 0) o.attn_mask = p->mask;
    return o;
}

/* Returns the fixture's batch size. */
static uint32_t check_fixture_masks(const char *dir, const fixture_case *c)
{
    fixture_paths p;
    forward_options o = fixture_options(dir, c, &p);
    forward_inputs in = {0};
    vkattn_array torch = {0};
    CHECK_MSG(forward_inputs_load("test", &o, &in) == 0, "%s", c->name);
    CHECK_STATUS(vkattn_npy_read(p.torch, &torch, NULL), VKATTN_OK);
    /* scaled_x30's peaked softmax underflows some visible weights to exactly 0 in float32, so there
     * only "masked implies zero" holds. */
    int peaked = strstr(c->name, "scaled") != NULL;
    if (torch.rank == 4 && torch.dims[0] == in.B && torch.dims[3] == in.S_ext) {
        const float *w = torch.data;
        size_t masked_nonzero = 0, visible_zero = 0;
        for (uint32_t b = 0; b < in.B; b++)
            for (uint32_t h = 0; h < in.H; h++)
                for (uint32_t i = 0; i < in.L; i++)
                    for (uint32_t j = 0; j < in.S_ext; j++, w++) {
                        int masked = forward_inputs_masked(&in, b, h, i, j);
                        masked_nonzero += masked && *w != 0.0f;
                        visible_zero += !masked && *w == 0.0f;
                    }
        CHECK_MSG(masked_nonzero == 0, "%s: %zu masked weights are not 0", c->name, masked_nonzero);
        CHECK_MSG(peaked || visible_zero == 0, "%s: %zu visible weights are 0", c->name, visible_zero);
    } else {
        CHECK_MSG(0, "%s: unexpected torch weights shape", c->name);
    }
    uint32_t batch = in.B;
    vkattn_array_free(&torch);
    forward_inputs_free(&in);
    return batch;
}

/* The command's forward mode on the CPU path draws the same picture as PyTorch's weights with
 * --zeros-masked (below the title line, which names the source; colours within 2 levels). */
static void check_fixture_picture(const char *dir, const fixture_case *c, uint32_t batch)
{
    fixture_paths p;
    (void)fixture_options(dir, c, &p);
    char a[300], b[300], heads[16], item[16];
    test_tmp_path(a, sizeof a, "forward.png"), test_tmp_path(b, sizeof b, "torch.png");
    snprintf(heads, sizeof heads, "%u", c->heads);
    snprintf(item, sizeof item, "%u", batch ? batch - 1 : 0); /* the last batch item */
    const char *args[32] = {"--weights", p.weights, "--heads", heads, "--query", p.query,
                            "--cpu", "--batch-index", item, "--out", a};
    int n = 11;
    if (c->has_key) args[n++] = "--key", args[n++] = p.key, args[n++] = "--value", args[n++] = p.value;
    if (c->has_kpm) args[n++] = "--key-padding-mask", args[n++] = p.kpm;
    if (strcmp(c->attn_mask, "none") != 0) args[n++] = "--attn-mask", args[n++] = p.mask;
    if (c->causal) args[n++] = "--causal";
    if (c->zero_attn) args[n++] = "--add-zero-attn";
    CHECK(run_cmd(cmd_heatmap, args) == 0);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", p.torch, "--zeros-masked", "--batch-index", item,
                                                "--out", b, NULL}) == 0);
    cairo_surface_t *x = load_png(a), *y = load_png(b);
    /* The titles differ, and so may the widths they give the pictures; from the grid on (the
     * layout of any one-line title says where that starts), the rest must agree. */
    float one = 1;
    heatmap_desc probe = {.heads = 1, .query_len = 1, .key_len = 1, .weights = &one, .title = "t"};
    heatmap_layout l = {0};
    CHECK_STATUS(heatmap_layout_compute(&probe, &l, NULL), VKATTN_OK);
    CHECK(height_of(x) == height_of(y) && l.grid_y > 0);
    size_t differ = 0;
    uint32_t width = width_of(x) < width_of(y) ? width_of(x) : width_of(y);
    for (uint32_t row = l.grid_y; row < height_of(x) && row < height_of(y); row++)
        for (uint32_t col = 0; col < width; col++) {
            rgb_color u = pixel(x, col, row), v = pixel(y, col, row);
            differ += abs(u.r - v.r) > 2 || abs(u.g - v.g) > 2 || abs(u.b - v.b) > 2;
        }
    CHECK_MSG(differ == 0, "%s: %zu pixels differ", c->name, differ);
    cairo_surface_destroy(x), cairo_surface_destroy(y);
    remove(a), remove(b);
}

static void test_fixtures(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/cases.txt", dir);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return;
    char line[256];
    int masked_cases = 0;
    while (fgets(line, sizeof line, f)) {
        fixture_case c;
        if (line[0] == '#' || sscanf(line, "%63s %u %u %u %u %u %7s %u %7s", c.name, &c.heads, &c.zero_attn,
                                     &c.causal, &c.has_key, &c.has_kpm, c.attn_mask, &c.per_head, c.weights) != 9)
            continue;
        if (strcmp(c.weights, "head") != 0) continue;
        uint32_t batch = check_fixture_masks(dir, &c);
        if (!strstr(c.name, "scaled")) check_fixture_picture(dir, &c, batch); /* see check_fixture_masks */
        masked_cases += c.causal || c.has_kpm || strcmp(c.attn_mask, "none") != 0;
    }
    fclose(f);
    CHECK_MSG(masked_cases >= 3, "only %d fixture cases with masks and per-head weights", masked_cases);
}

int main(int argc, char **argv)
{
    if (test_tmp_make("heatmap")) return 1;
    RUN_TEST(test_clean_text);
    RUN_TEST(test_canvas_png);
    RUN_TEST(test_canvas_write_errors);
    RUN_TEST(test_known_pattern);
    RUN_TEST(test_downsampling);
    RUN_TEST(test_layout_errors);
    RUN_TEST(test_command);
    RUN_TEST(test_mask_rules);
    if (argc > 1) {
        int before = test_g.failures;
        test_fixtures(argv[1]);
        printf("%-48s %s\n", "test_fixtures", test_g.failures == before ? "ok" : "FAILED");
    } else {
        printf("%-48s skipped (no fixture directory given)\n", "test_fixtures");
    }
    test_tmp_remove();
    /* cairo's font caches and fontconfig's configuration live until exit: released here, or
     * LeakSanitizer reports them. */
    cairo_debug_reset_static_data();
    FcFini();
    return test_finish();
}
