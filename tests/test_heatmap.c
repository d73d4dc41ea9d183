/* vkattn heatmap without a GPU: the bitmap font, the RGB image and its PNG round trip through
 * libpng (errors included), the heatmap renderer on a known pattern checked pixel by pixel after
 * reading the PNG back, downsampling, the command's errors, and (given the PyTorch fixture directory
 * as argv[1]) the masks a forward knows against PyTorch's zero weights, on the CPU path. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "bitmap_font.h"
#include "cli.h"
#include "forward_inputs.h"
#include "heatmap.h"
#include "png_image.h"

static char tmp_dir[64];

static void tmp_path(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", tmp_dir, name);
}

static int same_color(rgb_color a, rgb_color b)
{
    return a.r == b.r && a.g == b.g && a.b == b.b;
}

static int is_mask_color(rgb_color c)
{
    return same_color(c, HEATMAP_MASK_LIGHT) || same_color(c, HEATMAP_MASK_DARK);
}

/* Ink pixels of `text` as the font draws it. */
static int glyph_ink(const char *text)
{
    int ink = 0;
    char c;
    while ((c = bitmap_font_next(&text)))
        for (int y = 0; y < BITMAP_FONT_HEIGHT; y++)
            for (int x = 0; x < BITMAP_FONT_GLYPH_WIDTH; x++) ink += bitmap_font_pixel(c, x, y);
    return ink;
}

static int count_color(const rgb_image *img, int64_t x, int64_t y, int64_t w, int64_t h, rgb_color c)
{
    int n = 0;
    for (int64_t yy = y; yy < y + h; yy++)
        for (int64_t xx = x; xx < x + w; xx++) n += same_color(rgb_image_get(img, xx, yy), c);
    return n;
}

/* Runs a subcommand on a NULL-terminated argument list. */
static int run_cmd(int (*cmd)(int, char **), const char **args)
{
    int argc = 0;
    while (args[argc]) argc++;
    return cmd(argc, (char **)args);
}

/* ---------------------------------------------------------------------------------------------- */

static void test_font(void)
{
    /* Every printable glyph but the space has ink, and no two glyphs are the same. */
    for (int c = 0x21; c <= 0x7E; c++) {
        char s[2] = {(char)c, 0};
        CHECK_MSG(glyph_ink(s) > 0, "glyph '%c' is empty", c);
        for (int d = 0x21; d < c; d++) {
            int differ = 0;
            for (int y = 0; y < BITMAP_FONT_HEIGHT; y++)
                for (int x = 0; x < BITMAP_FONT_GLYPH_WIDTH; x++)
                    differ |= bitmap_font_pixel((char)c, x, y) != bitmap_font_pixel((char)d, x, y);
            CHECK_MSG(differ, "glyphs '%c' and '%c' are identical", c, d);
        }
    }
    CHECK(glyph_ink(" ") == 0);
    CHECK(bitmap_font_pixel('A', -1, 0) == 0 && bitmap_font_pixel('A', 5, 0) == 0 && bitmap_font_pixel('A', 0, 9) == 0);
    /* Non-ASCII: one '?' per UTF-8 sequence; control bytes give '?' too. */
    const char *s = "a\xc3\xa9" "b\xe6\x97\xa5\xe6\x9c\xac\t";
    char out[16];
    size_t n = 0;
    char c;
    while ((c = bitmap_font_next(&s)) && n < sizeof out - 1) out[n++] = c;
    out[n] = 0;
    CHECK_MSG(strcmp(out, "a?b???") == 0, "got \"%s\"", out);
    CHECK(bitmap_font_length("\x80\x80x", 0) == 2); /* stray continuation bytes: one '?' */
    CHECK(bitmap_font_text_width("") == 0);
    CHECK(bitmap_font_text_width("abc") == 3 * BITMAP_FONT_ADVANCE - 1);
    CHECK(bitmap_font_length("abcdef", 4) == 4);
}

static void test_drawing(void)
{
    rgb_image img = {0};
    rgb_color white = {255, 255, 255}, red = {255, 0, 0}, blue = {0, 0, 255};
    CHECK_STATUS(rgb_image_create(40, 30, white, &img, NULL), VKATTN_OK);
    rgb_image_fill_rect(&img, -5, -5, 10, 10, red); /* clipped to 5 x 5 */
    CHECK(count_color(&img, 0, 0, 40, 30, red) == 25);
    rgb_image_line(&img, 0, 29, 39, 29, blue);
    CHECK(count_color(&img, 0, 29, 40, 1, blue) == 40);
    rgb_image_line(&img, 10, 10, 14, 14, blue); /* diagonal: 5 pixels, both ends */
    CHECK(same_color(rgb_image_get(&img, 10, 10), blue) && same_color(rgb_image_get(&img, 14, 14), blue));
    CHECK(same_color(rgb_image_get(&img, -1, 0), (rgb_color){0, 0, 0}));
    rgb_image_fill_rect(&img, 0, 0, 40, 30, white);
    CHECK(rgb_image_text(&img, 2, 2, "Hi!", 1, red) == 3 * BITMAP_FONT_ADVANCE - 1);
    CHECK(count_color(&img, 0, 0, 40, 30, red) == glyph_ink("Hi!"));
    rgb_image_fill_rect(&img, 0, 0, 40, 30, white);
    rgb_image_text(&img, 1, 1, "T", 2, red);
    CHECK(count_color(&img, 0, 0, 40, 30, red) == 4 * glyph_ink("T"));
    /* Upright text: glyph pixel (gx, gy) lands at (x + gy, bottom - gx). */
    rgb_image_fill_rect(&img, 0, 0, 40, 30, white);
    rgb_image_text_up(&img, 5, 20, "L", blue);
    int agree = 1;
    for (int gy = 0; gy < BITMAP_FONT_HEIGHT; gy++)
        for (int gx = 0; gx < BITMAP_FONT_GLYPH_WIDTH; gx++)
            agree &= bitmap_font_pixel('L', gx, gy) == same_color(rgb_image_get(&img, 5 + gy, 20 - gx), blue);
    CHECK(agree);
    rgb_image_destroy(&img);
    rgb_image_destroy(&img); /* twice is fine */
    rgb_image_destroy(NULL);
    vkattn_error e = {0};
    CHECK_STATUS(rgb_image_create(0, 5, white, &img, &e), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(rgb_image_create(RGB_IMAGE_MAX_SIDE, RGB_IMAGE_MAX_SIDE, white, &img, &e),
                 VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK(img.pixels == NULL);
}

static void test_png_round_trip(void)
{
    rgb_image img = {0}, back = {0};
    CHECK_STATUS(rgb_image_create(37, 23, (rgb_color){0, 0, 0}, &img, NULL), VKATTN_OK);
    for (size_t i = 0; i < (size_t)37 * 23 * 3; i++) img.pixels[i] = (uint8_t)(i * 7 + i / 5);
    char path[128];
    tmp_path(path, sizeof path, "round.png");
    CHECK_STATUS(rgb_image_write_png(&img, path, NULL), VKATTN_OK);
    CHECK_STATUS(rgb_image_read_png(path, &back, NULL), VKATTN_OK);
    CHECK(back.width == 37 && back.height == 23);
    CHECK(back.pixels && memcmp(back.pixels, img.pixels, (size_t)37 * 23 * 3) == 0);
    rgb_image_destroy(&back);

    /* A truncated PNG is a FORMAT error (libpng longjmps out of the middle of decoding). */
    FILE *f = fopen(path, "rb");
    unsigned char buf[4096];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f) fclose(f);
    char cut[128];
    tmp_path(cut, sizeof cut, "cut.png");
    f = fopen(cut, "wb");
    if (f) fwrite(buf, 1, n / 2, f), fclose(f);
    vkattn_error e = {0};
    CHECK_STATUS(rgb_image_read_png(cut, &back, &e), VKATTN_ERROR_FORMAT);
    CHECK(back.pixels == NULL && strstr(e.message, "cut.png"));
    /* Not a PNG at all; a missing file. */
    f = fopen(cut, "wb");
    if (f) fputs("GIF89a, not a PNG", f), fclose(f);
    CHECK_STATUS(rgb_image_read_png(cut, &back, &e), VKATTN_ERROR_FORMAT);
    tmp_path(cut, sizeof cut, "missing.png");
    CHECK_STATUS(rgb_image_read_png(cut, &back, &e), VKATTN_ERROR_IO);
    remove(path);
    tmp_path(path, sizeof path, "cut.png");
    remove(path);
    rgb_image_destroy(&img);
}

static void test_png_write_errors(void)
{
    rgb_image img = {0};
    CHECK_STATUS(rgb_image_create(600, 600, (rgb_color){1, 2, 3}, &img, NULL), VKATTN_OK);
    vkattn_error e = {0};
    CHECK_STATUS(rgb_image_write_png(&img, "/nonexistent-dir/x.png", &e), VKATTN_ERROR_IO);
    CHECK(strstr(e.message, "/nonexistent-dir/x.png") != NULL);
    CHECK_STATUS(rgb_image_write_png(&img, "", &e), VKATTN_ERROR_INVALID_ARGUMENT);
    CHECK_STATUS(rgb_image_write_png(&img, tmp_dir, &e), VKATTN_ERROR_IO); /* a directory */
    /* A full disk: noise that does not compress overflows the stdio buffer inside libpng's writes
     * (the longjmp path); a tiny image fails only when fclose flushes. /dev/full must survive. */
    struct stat st;
    if (stat("/dev/full", &st) == 0) {
        for (size_t i = 0; i < (size_t)600 * 600 * 3; i++) img.pixels[i] = (uint8_t)((i * 2654435761u) >> 13);
        CHECK_STATUS(rgb_image_write_png(&img, "/dev/full", &e), VKATTN_ERROR_IO);
        CHECK_MSG(strstr(e.message, "Write Error") != NULL, "%s", e.message); /* libpng's own error */
        rgb_image tiny = {0};
        CHECK_STATUS(rgb_image_create(2, 2, (rgb_color){9, 9, 9}, &tiny, NULL), VKATTN_OK);
        CHECK_STATUS(rgb_image_write_png(&tiny, "/dev/full", &e), VKATTN_ERROR_IO);
        CHECK_MSG(strstr(e.message, "No space") != NULL, "%s", e.message); /* ENOSPC from fflush */
        rgb_image_destroy(&tiny);
        CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
    }
    rgb_image_destroy(&img);
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

static rgb_color cell_pixel(const rgb_image *img, const heatmap_layout *l, uint32_t h, uint32_t r, uint32_t c)
{
    uint32_t x, y;
    heatmap_cell_center(l, h, r, c, &x, &y);
    return rgb_image_get(img, x, y);
}

static void check_known_pixels(const rgb_image *img, const heatmap_layout *l, const char *title)
{
    rgb_color top = heatmap_colormap(1.0), bottom = heatmap_colormap(0.0);
    CHECK(same_color(cell_pixel(img, l, 0, 3, 0), top));    /* the max weight */
    CHECK(same_color(cell_pixel(img, l, 0, 7, 0), top));
    CHECK(same_color(cell_pixel(img, l, 0, 3, 1), bottom)); /* a zero weight: dark, not masked */
    CHECK(!is_mask_color(bottom));
    CHECK(is_mask_color(cell_pixel(img, l, 0, 0, 5)));     /* masked: hatched, both greys present */
    uint32_t x, y;
    heatmap_cell_center(l, 0, 0, 5, &x, &y);
    int64_t x0 = x - l->cell_w / 2, y0 = y - l->cell_h / 2;
    CHECK(count_color(img, x0, y0, l->cell_w, l->cell_h, HEATMAP_MASK_DARK) > 0);
    CHECK(count_color(img, x0, y0, l->cell_w, l->cell_h, HEATMAP_MASK_LIGHT) > 0);
    CHECK(same_color(cell_pixel(img, l, 1, 3, 1), heatmap_colormap(0.25))); /* uniform 1/4, scale 0..1 */
    CHECK(same_color(cell_pixel(img, l, 1, 7, 7), heatmap_colormap(0.125)));
    CHECK(same_color(cell_pixel(img, l, 1, 0, 0), top));
    CHECK(is_mask_color(cell_pixel(img, l, 1, 2, 6)));
    /* The legend: the bar runs from the minimum colour at the bottom to the maximum at the top, and
     * the masked swatch is hatched. */
    CHECK(same_color(rgb_image_get(img, l->bar_x + l->bar_w / 2, l->bar_y), top));
    CHECK(same_color(rgb_image_get(img, l->bar_x + l->bar_w / 2, l->bar_y + l->bar_h - 1), bottom));
    CHECK(is_mask_color(rgb_image_get(img, l->swatch_x + l->swatch_size / 2, l->swatch_y + l->swatch_size / 2)));
    /* Text: exactly the title's glyph pixels in the title line; "head 2" above the second panel. */
    int ink = count_color(img, l->title_x, l->title_y, (int64_t)bitmap_font_text_width(title), BITMAP_FONT_HEIGHT,
                          HEATMAP_INK);
    CHECK_MSG(ink == glyph_ink(title), "title ink %d, expected %d", ink, glyph_ink(title));
    uint32_t px, py;
    heatmap_panel_origin(l, 1, &px, &py);
    CHECK(count_color(img, px, py - 1 - 3 - BITMAP_FONT_HEIGHT, l->panel_w, BITMAP_FONT_HEIGHT, HEATMAP_INK) ==
          glyph_ink("head 2"));
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
    char path[128];
    tmp_path(path, sizeof path, "known.png");
    CHECK_STATUS(heatmap_write_png(&d, path, &got, NULL), VKATTN_OK);
    CHECK(memcmp(&got, &expected, sizeof got) == 0);
    rgb_image img = {0};
    CHECK_STATUS(rgb_image_read_png(path, &img, NULL), VKATTN_OK);
    CHECK(img.width == expected.width && img.height == expected.height);
    if (img.pixels) check_known_pixels(&img, &expected, title);
    rgb_image_destroy(&img);

    /* Bigger cells, one head per row, token labels: the same colours at the new places. */
    const char *tokens[KP_S] = {"<s>", "the", "cat", "sat", "on", "the", "mat", "\xe2\x80\xa6"};
    d.cell = 30, d.heads_per_row = 1, d.query_labels = tokens, d.key_labels = tokens;
    CHECK_STATUS(heatmap_write_png(&d, path, &got, NULL), VKATTN_OK);
    CHECK(got.cell_w == 30 && got.heads_per_row == 1 && got.grid_rows == 2 && got.row_labels && got.col_labels);
    CHECK_STATUS(rgb_image_read_png(path, &img, NULL), VKATTN_OK);
    CHECK(img.width == got.width && img.height == got.height);
    if (img.pixels) check_known_pixels(&img, &got, title);
    rgb_image_destroy(&img);
    remove(path);

    /* --scale-one with a smaller maximum: 0.5 is the middle colour, not the top one. */
    for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) w[k] *= 0.5f;
    d.scale_one = 1;
    CHECK_STATUS(heatmap_render(&d, &img, &got, NULL), VKATTN_OK);
    if (img.pixels) CHECK(same_color(cell_pixel(&img, &got, 0, 3, 0), heatmap_colormap(0.5)));
    rgb_image_destroy(&img);
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
    rgb_image img = {0};
    heatmap_layout l;
    CHECK_STATUS(heatmap_render(&d, &img, &l, NULL), VKATTN_OK);
    CHECK(l.row_bin == 3 && l.col_bin == 3 && l.rows == 700 && l.cols == 700 && l.cell_w == 1);
    CHECK(l.title_lines == 2); /* the title says it is downsampled */
    if (img.pixels) {
        CHECK(same_color(cell_pixel(&img, &l, 0, 0, 0), heatmap_colormap(1.0)));
        CHECK(same_color(cell_pixel(&img, &l, 0, 1, 1), heatmap_colormap(0.5)));
        CHECK(is_mask_color(cell_pixel(&img, &l, 0, 2, 2)));
        CHECK(same_color(cell_pixel(&img, &l, 0, 0, 1), heatmap_colormap(0.0)));
        CHECK(count_color(&img, l.title_x, l.title_y + BITMAP_FONT_LINE, l.width, BITMAP_FONT_HEIGHT, HEATMAP_INK) > 0);
    }
    rgb_image_destroy(&img);
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
    rgb_image img = {0};
    CHECK_STATUS(heatmap_render(&o, &img, &l, NULL), VKATTN_OK);
    if (img.pixels) {
        CHECK(is_mask_color(cell_pixel(&img, &l, 0, 0, 0)));
        CHECK(same_color(cell_pixel(&img, &l, 0, 0, 1), heatmap_colormap(0.0)));
        CHECK(same_color(cell_pixel(&img, &l, 0, 1, 1), heatmap_colormap(1.0)));
    }
    rgb_image_destroy(&img);
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
    char w4[128], w3[128], w2[128], out[128], bad_out[160], tokens[128], short_tokens[128];
    tmp_path(w4, sizeof w4, "w4.npy"), tmp_path(w3, sizeof w3, "w3.npy"), tmp_path(w2, sizeof w2, "w2.npy");
    tmp_path(out, sizeof out, "cmd.png"), tmp_path(tokens, sizeof tokens, "tokens.txt");
    tmp_path(short_tokens, sizeof short_tokens, "short.txt");
    snprintf(bad_out, sizeof bad_out, "%s/no-such-dir/x.png", tmp_dir);
    uint32_t d4[4] = {2, KP_H, KP_L, KP_S};
    CHECK(write_npy(w4, 4, d4, w) && write_npy(w3, 3, d4 + 1, w) && write_npy(w2, 2, d4 + 2, w));
    FILE *f = fopen(tokens, "w");
    if (f) fputs("<s>\nthe\ncat\r\nsat\non\nthe\nmat\n\xe2\x80\xa6", f), fclose(f); /* no final newline */
    f = fopen(short_tokens, "w");
    if (f) fputs("a\nb\n", f), fclose(f);

    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, NULL}) == 0);
    rgb_image img = {0};
    CHECK_STATUS(rgb_image_read_png(out, &img, NULL), VKATTN_OK);
    CHECK(img.width > 200 && img.height > 200);
    rgb_image_destroy(&img);
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
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, NULL}) == 2);                     /* no --out */
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--out", out, NULL}) == 2);                         /* no input */
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--causal", NULL}) == 2);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--tokens", short_tokens, NULL}) == 1);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--tokens", "/no/such/file", NULL}) == 1);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", "/no/such.npy", "--out", out, NULL}) == 1);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--cell", "0", NULL}) == 2);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--from-npy", w4, "--out", out, "--bogus", NULL}) == 2);
    CHECK(run_cmd(cmd_heatmap, (const char *[]){"--weights", "w.safetensors", "--heads", "2", "--query", "q.npy",
                                                "--path", "fused", "--out", out, NULL}) == 2);
    remove(w4), remove(w3), remove(w2), remove(out), remove(tokens), remove(short_tokens);
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
    char a[128], b[128], heads[16], item[16];
    tmp_path(a, sizeof a, "forward.png"), tmp_path(b, sizeof b, "torch.png");
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
    rgb_image x = {0}, y = {0};
    CHECK_STATUS(rgb_image_read_png(a, &x, NULL), VKATTN_OK);
    CHECK_STATUS(rgb_image_read_png(b, &y, NULL), VKATTN_OK);
    /* The titles differ, and so may the widths they give the pictures; the rest must agree. */
    CHECK(x.height == y.height);
    size_t differ = 0;
    uint32_t width = x.width < y.width ? x.width : y.width;
    for (uint32_t row = 10 + BITMAP_FONT_LINE; x.pixels && y.pixels && row < x.height && row < y.height; row++)
        for (uint32_t col = 0; col < width; col++) {
            rgb_color u = rgb_image_get(&x, col, row), v = rgb_image_get(&y, col, row);
            differ += abs(u.r - v.r) > 2 || abs(u.g - v.g) > 2 || abs(u.b - v.b) > 2;
        }
    CHECK_MSG(differ == 0, "%s: %zu pixels differ", c->name, differ);
    rgb_image_destroy(&x), rgb_image_destroy(&y);
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
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/vkattn_heatmap_XXXXXX");
    const char *env = getenv("TMPDIR");
    if (env && strlen(env) + 30 < sizeof tmp_dir) snprintf(tmp_dir, sizeof tmp_dir, "%s/vkattn_heatmap_XXXXXX", env);
    if (!mkdtemp(tmp_dir)) {
        perror("mkdtemp");
        return 1;
    }
    RUN_TEST(test_font);
    RUN_TEST(test_drawing);
    RUN_TEST(test_png_round_trip);
    RUN_TEST(test_png_write_errors);
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
    rmdir(tmp_dir);
    return test_finish();
}
