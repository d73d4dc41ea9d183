/* An RGB image in host memory, a few drawing primitives, and PNG files through libpng.
 *
 * Pixels are 8-bit RGB, row-major, top row first; (0, 0) is the top-left corner. Every drawing call
 * clips to the image, so callers may pass coordinates partly or wholly outside it. Fallible calls
 * return a vkattn_status and, when `error` is not NULL, a message in it; they never abort and never
 * print. (The names avoid libpng's own png_image_* "simplified API".) */
#ifndef VKATTN_PNG_IMAGE_H
#define VKATTN_PNG_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "vkattn.h"

#define RGB_IMAGE_MAX_SIDE 32768u         /* pixels per side */
#define RGB_IMAGE_MAX_PIXELS (64u << 20)  /* width * height: 192 MiB of RGB */

typedef struct rgb_color {
    uint8_t r, g, b;
} rgb_color;

typedef struct rgb_image {
    uint32_t width, height;
    uint8_t *pixels; /* width * height * 3 bytes, owned by the image */
} rgb_image;

/* Fills *error (may be NULL) with `status` and a printf-style message; returns `status`. */
vkattn_status image_error(vkattn_error *error, vkattn_status status, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Allocates a width x height image filled with `background`. Sizes must be >= 1 and within
 * RGB_IMAGE_MAX_SIDE / RGB_IMAGE_MAX_PIXELS (VKATTN_ERROR_INVALID_ARGUMENT otherwise).
 * *out is written only on success. */
vkattn_status rgb_image_create(uint32_t width, uint32_t height, rgb_color background, rgb_image *out,
                               vkattn_error *error);
/* Frees the pixels and zeroes the struct; NULL and an already destroyed image are no-ops. */
void rgb_image_destroy(rgb_image *image);

/* The pixel at (x, y); black outside the image. */
rgb_color rgb_image_get(const rgb_image *image, int64_t x, int64_t y);
void rgb_image_set(rgb_image *image, int64_t x, int64_t y, rgb_color color);
/* A w x h rectangle with its top-left corner at (x, y). */
void rgb_image_fill_rect(rgb_image *image, int64_t x, int64_t y, int64_t w, int64_t h, rgb_color color);
/* The 1-pixel outline of a w x h rectangle at (x, y). */
void rgb_image_frame_rect(rgb_image *image, int64_t x, int64_t y, int64_t w, int64_t h, rgb_color color);
/* A straight line from (x0, y0) to (x1, y1), both ends included (Bresenham). */
void rgb_image_line(rgb_image *image, int64_t x0, int64_t y0, int64_t x1, int64_t y1, rgb_color color);

/* Draws `text` with the bitmap font, each font pixel as a scale x scale block (scale >= 1), the
 * first glyph's top-left at (x, y). Returns the width drawn in pixels. */
int64_t rgb_image_text(rgb_image *image, int64_t x, int64_t y, const char *text, int scale, rgb_color color);
/* Draws `text` turned 90 degrees counter-clockwise (read from bottom to top, glyph tops to the left)
 * at scale 1: the text starts at y = `bottom` and runs upwards; the glyphs' tops lie on column x.
 * Returns the length drawn in pixels. */
int64_t rgb_image_text_up(rgb_image *image, int64_t x, int64_t bottom, const char *text, rgb_color color);

/* Writes the image as an 8-bit RGB PNG. A failed write (the file cannot be created, a write error,
 * a full disk) returns VKATTN_ERROR_IO and removes the partial file if it is a regular file. */
vkattn_status rgb_image_write_png(const rgb_image *image, const char *path, vkattn_error *error);
/* Reads any PNG libpng reads (palette, grey, 16-bit, alpha, interlaced) converted to 8-bit RGB;
 * alpha is dropped. VKATTN_ERROR_IO if the file cannot be opened, VKATTN_ERROR_FORMAT if it is not a
 * valid PNG or is larger than RGB_IMAGE_MAX_SIDE / RGB_IMAGE_MAX_PIXELS. *out is written only on
 * success; free it with rgb_image_destroy. */
vkattn_status rgb_image_read_png(const char *path, rgb_image *out, vkattn_error *error);

#endif
