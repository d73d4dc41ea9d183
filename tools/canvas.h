/* The CLI's pictures through cairo: one drawing code, written as a PNG or an SVG file.
 *
 * A canvas is a cairo context on a white background, on either an RGB image (written as an 8-bit RGB
 * PNG by canvas_finish, or kept in memory) or an SVG document streamed to its file. User space is
 * in pixels, (0, 0) the top-left corner. Text uses cairo's toy text API in the system's sans-serif
 * font (DejaVu Sans on Debian: fonts-dejavu-core), anti-aliased in grey; every string is cleaned
 * first (canvas_clean_text), because cairo answers invalid UTF-8 by putting the whole context into
 * an error state. Fallible calls return a vkattn_status and, when `error` is not NULL, a message in
 * it; they never abort and never print. */
#ifndef VKATTN_CANVAS_H
#define VKATTN_CANVAS_H

#include <cairo.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vkattn.h"

#define CANVAS_MAX_SIDE 32767u          /* cairo's limit on an image side */
#define CANVAS_MAX_PIXELS (64u << 20)   /* width * height of an image: 256 MiB at 4 bytes a pixel */
#define CANVAS_TEXT_MAX 1024            /* bytes of one string drawn; longer ones are cut */

typedef struct rgb_color {
    uint8_t r, g, b;
} rgb_color;

typedef enum canvas_format {
    CANVAS_NONE = 0,
    CANVAS_PNG,
    CANVAS_SVG
} canvas_format;

/* The format a file name asks for by its extension, ".png" or ".svg" in any case; CANVAS_NONE for
 * any other name (and for a bare ".png"). */
canvas_format canvas_format_of(const char *path);

typedef struct canvas {
    cairo_surface_t *surface;
    cairo_t *cr;             /* draw with this */
    canvas_format format;
    uint32_t width, height;
    const char *path;        /* NULL: an image kept in memory (PNG format only) */
    FILE *file;              /* the SVG document's file while it is written */
    int may_remove;          /* the file was not there before, or is a regular file */
    int write_errno;         /* the first failed write's errno */
} canvas;

/* Fills *error (may be NULL) with `status` and a printf-style message; returns `status`. */
vkattn_status canvas_error(vkattn_error *error, vkattn_status status, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Starts a width x height picture in `format`, to be written to `path` (NULL: kept in memory, PNG
 * only). An SVG file is created here (VKATTN_ERROR_IO if it cannot be), a PNG file by
 * canvas_finish. Images must be within CANVAS_MAX_SIDE and CANVAS_MAX_PIXELS
 * (VKATTN_ERROR_INVALID_ARGUMENT). The canvas must not move in memory until canvas_destroy (cairo
 * holds its address for the SVG stream). On failure the canvas is left empty (destroying it is a
 * no-op). */
vkattn_status canvas_open(canvas *c, canvas_format format, const char *path, uint32_t width, uint32_t height,
                          vkattn_error *error);
/* Ends the drawing and writes the file: the PNG, or the rest of the SVG document. A drawing error
 * or a failed write (a full disk shows up here) returns its status and removes the partial file
 * when it is a regular file (never a device such as /dev/full). */
vkattn_status canvas_finish(canvas *c, vkattn_error *error);
/* Frees everything; a file still open (canvas_finish not called) is closed, not removed. NULL and an
 * empty canvas are no-ops. */
void canvas_destroy(canvas *c);

/* A scratch context for measuring text before the picture's size is known (canvas_destroy it). */
vkattn_status canvas_open_measure(canvas *c, vkattn_error *error);

/* Copies `text` into `buf` (size >= 4) as valid UTF-8 without control characters: each byte that does
 * not start a valid UTF-8 sequence, and each control character, becomes '?'. With max_chars > 0 a
 * text of more than max_chars characters is cut to max_chars - 2 of them plus "..". Returns the
 * number of characters copied. */
size_t canvas_clean_text(const char *text, size_t max_chars, char *buf, size_t size);

typedef enum canvas_align {
    CANVAS_LEFT = 0,   /* the text starts at the point */
    CANVAS_CENTER,
    CANVAS_RIGHT       /* the text ends at the point */
} canvas_align;

/* The sans-serif font at `size` pixels, bold or not. */
void canvas_font(cairo_t *cr, double size, int bold);
/* The current font's ascent, descent and capital height (of "H"), in pixels. */
typedef struct canvas_metrics {
    double ascent, descent, cap;
} canvas_metrics;
canvas_metrics canvas_font_metrics(cairo_t *cr);
/* The advance width of the cleaned `text` in the current font. */
double canvas_text_width(cairo_t *cr, const char *text);
/* Draws the cleaned `text` with its baseline at y, aligned on x, in the current source colour. */
void canvas_text(cairo_t *cr, double x, double y, const char *text, canvas_align align);
/* The same turned 90 degrees counter-clockwise (read from bottom to top, glyph tops to the left):
 * the baseline runs up column x, and `align` places the text's start (LEFT), middle or end at y. */
void canvas_text_up(cairo_t *cr, double x, double y, const char *text, canvas_align align);

/* A line from (x0, y0) to (x1, y1), `width` pixels wide, in the current source colour. */
void canvas_line(cairo_t *cr, double x0, double y0, double x1, double y1, double width);
void canvas_set_color(cairo_t *cr, rgb_color color);

/* The smallest 1, 2 or 5 times a power of ten that is at least `raw` (> 0): an axis step. */
double canvas_nice_step(double raw);

#endif
