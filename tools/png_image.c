/* RGB images, drawing, and PNG through libpng (see png_image.h). libpng reports errors by calling an
 * error function that must not return; ours records the message and longjmps back to the setjmp in
 * the function that owns the libpng objects, which frees everything and returns a status. */
#define _POSIX_C_SOURCE 200809L
#include "png_image.h"

#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bitmap_font.h"

vkattn_status image_error(vkattn_error *error, vkattn_status status, const char *format, ...)
{
    if (!error) return status;
    error->status = status;
    va_list args;
    va_start(args, format);
    vsnprintf(error->message, sizeof error->message, format, args);
    va_end(args);
    return status;
}

vkattn_status rgb_image_create(uint32_t width, uint32_t height, rgb_color background, rgb_image *out,
                               vkattn_error *error)
{
    if (width < 1 || height < 1 || width > RGB_IMAGE_MAX_SIDE || height > RGB_IMAGE_MAX_SIDE ||
        (uint64_t)width * height > RGB_IMAGE_MAX_PIXELS)
        return image_error(error, VKATTN_ERROR_INVALID_ARGUMENT,
                           "an image of %u x %u pixels is outside the limits (at most %u per side, %u pixels)",
                           width, height, RGB_IMAGE_MAX_SIDE, RGB_IMAGE_MAX_PIXELS);
    size_t count = (size_t)width * height;
    uint8_t *pixels = malloc(count * 3);
    if (!pixels)
        return image_error(error, VKATTN_ERROR_OUT_OF_HOST_MEMORY, "allocating a %u x %u image", width, height);
    for (size_t i = 0; i < count; i++) {
        pixels[3 * i] = background.r;
        pixels[3 * i + 1] = background.g;
        pixels[3 * i + 2] = background.b;
    }
    out->width = width;
    out->height = height;
    out->pixels = pixels;
    return VKATTN_OK;
}

void rgb_image_destroy(rgb_image *image)
{
    if (!image) return;
    free(image->pixels);
    memset(image, 0, sizeof *image);
}

static int inside(const rgb_image *image, int64_t x, int64_t y)
{
    return image->pixels && x >= 0 && y >= 0 && x < (int64_t)image->width && y < (int64_t)image->height;
}

rgb_color rgb_image_get(const rgb_image *image, int64_t x, int64_t y)
{
    rgb_color c = {0, 0, 0};
    if (!inside(image, x, y)) return c;
    const uint8_t *p = image->pixels + ((size_t)y * image->width + (size_t)x) * 3;
    c.r = p[0], c.g = p[1], c.b = p[2];
    return c;
}

void rgb_image_set(rgb_image *image, int64_t x, int64_t y, rgb_color color)
{
    if (!inside(image, x, y)) return;
    uint8_t *p = image->pixels + ((size_t)y * image->width + (size_t)x) * 3;
    p[0] = color.r, p[1] = color.g, p[2] = color.b;
}

void rgb_image_fill_rect(rgb_image *image, int64_t x, int64_t y, int64_t w, int64_t h, rgb_color color)
{
    int64_t x0 = x < 0 ? 0 : x, y0 = y < 0 ? 0 : y;
    int64_t x1 = x + w > (int64_t)image->width ? (int64_t)image->width : x + w;
    int64_t y1 = y + h > (int64_t)image->height ? (int64_t)image->height : y + h;
    for (int64_t yy = y0; yy < y1; yy++)
        for (int64_t xx = x0; xx < x1; xx++) rgb_image_set(image, xx, yy, color);
}

void rgb_image_frame_rect(rgb_image *image, int64_t x, int64_t y, int64_t w, int64_t h, rgb_color color)
{
    if (w < 1 || h < 1) return;
    rgb_image_fill_rect(image, x, y, w, 1, color);
    rgb_image_fill_rect(image, x, y + h - 1, w, 1, color);
    rgb_image_fill_rect(image, x, y, 1, h, color);
    rgb_image_fill_rect(image, x + w - 1, y, 1, h, color);
}

void rgb_image_line(rgb_image *image, int64_t x0, int64_t y0, int64_t x1, int64_t y1, rgb_color color)
{
    int64_t dx = x1 > x0 ? x1 - x0 : x0 - x1, sx = x0 < x1 ? 1 : -1;
    int64_t dy = y1 > y0 ? y0 - y1 : y1 - y0, sy = y0 < y1 ? 1 : -1;
    int64_t err = dx + dy;
    for (;;) {
        rgb_image_set(image, x0, y0, color);
        if (x0 == x1 && y0 == y1) break;
        int64_t e2 = 2 * err;
        if (e2 >= dy) err += dy, x0 += sx;
        if (e2 <= dx) err += dx, y0 += sy;
    }
}

int64_t rgb_image_text(rgb_image *image, int64_t x, int64_t y, const char *text, int scale, rgb_color color)
{
    if (scale < 1) scale = 1;
    int64_t pen = x;
    char c;
    while ((c = bitmap_font_next(&text))) {
        for (int gy = 0; gy < BITMAP_FONT_HEIGHT; gy++)
            for (int gx = 0; gx < BITMAP_FONT_GLYPH_WIDTH; gx++)
                if (bitmap_font_pixel(c, gx, gy))
                    rgb_image_fill_rect(image, pen + gx * scale, y + gy * scale, scale, scale, color);
        pen += BITMAP_FONT_ADVANCE * scale;
    }
    return pen == x ? 0 : pen - x - scale;
}

int64_t rgb_image_text_up(rgb_image *image, int64_t x, int64_t bottom, const char *text, rgb_color color)
{
    int64_t pen = 0;
    char c;
    while ((c = bitmap_font_next(&text))) {
        /* Turning counter-clockwise maps the glyph's rightward axis to upward and its downward
         * axis to rightward. */
        for (int gy = 0; gy < BITMAP_FONT_HEIGHT; gy++)
            for (int gx = 0; gx < BITMAP_FONT_GLYPH_WIDTH; gx++)
                if (bitmap_font_pixel(c, gx, gy)) rgb_image_set(image, x + gy, bottom - (pen + gx), color);
        pen += BITMAP_FONT_ADVANCE;
    }
    return pen ? pen - 1 : 0;
}

/* ---------------------------------------------------------------------------------------------- */
/* PNG                                                                                             */
/* ---------------------------------------------------------------------------------------------- */

/* Where libpng's error function leaves its message (libpng's error pointer). */
typedef struct png_failure {
    vkattn_status status; /* what a libpng error means here; preset by the caller */
    char message[256];
} png_failure;

static void on_png_error(png_structp png, png_const_charp message)
{
    png_failure *failure = png_get_error_ptr(png);
    snprintf(failure->message, sizeof failure->message, "%s", message ? message : "libpng error");
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp message)
{
    (void)png, (void)message; /* warnings (e.g. a benign ancillary chunk) do not stop anything */
}

/* Encodes `image` into `file`. Everything libpng allocates is freed before returning. */
static vkattn_status encode_png(const rgb_image *image, FILE *file, png_failure *failure)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, failure, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        snprintf(failure->message, sizeof failure->message, "out of host memory creating the libpng writer");
        return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    }
    /* png and info are not assigned after setjmp, so they keep their values after a longjmp. */
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return failure->status;
    }
    png_init_io(png, file);
    png_set_IHDR(png, info, image->width, image->height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (uint32_t y = 0; y < image->height; y++) png_write_row(png, image->pixels + (size_t)y * image->width * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    return VKATTN_OK;
}

/* A partial file is removed after a failed write, but only a regular file (or one that did not
 * exist before): never a device such as /dev/full or a FIFO the caller pointed us at. */
static int removable(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}

vkattn_status rgb_image_write_png(const rgb_image *image, const char *path, vkattn_error *error)
{
    if (!image || !image->pixels || !path || !*path)
        return image_error(error, VKATTN_ERROR_INVALID_ARGUMENT, "writing a PNG needs an image and a path");
    int may_remove = removable(path);
    FILE *file = fopen(path, "wb");
    if (!file) return image_error(error, VKATTN_ERROR_IO, "cannot create %s: %s", path, strerror(errno));
    png_failure failure = {.status = VKATTN_ERROR_IO};
    vkattn_status status = encode_png(image, file, &failure);
    /* Buffered bytes reach the file only at fclose, so a full disk may show up only here. */
    if (fflush(file) != 0 || ferror(file)) {
        if (status == VKATTN_OK) snprintf(failure.message, sizeof failure.message, "%s", strerror(errno));
        if (status == VKATTN_OK) status = VKATTN_ERROR_IO;
    }
    if (fclose(file) != 0 && status == VKATTN_OK) {
        snprintf(failure.message, sizeof failure.message, "%s", strerror(errno));
        status = VKATTN_ERROR_IO;
    }
    if (status == VKATTN_OK) return VKATTN_OK;
    if (may_remove) remove(path);
    return image_error(error, status, "writing %s: %s", path, failure.message);
}

/* Decodes the rest of a PNG whose 8 signature bytes were already read from `file`. */
static vkattn_status decode_png(FILE *file, rgb_image *out, png_failure *failure)
{
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, failure, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        snprintf(failure->message, sizeof failure->message, "out of host memory creating the libpng reader");
        return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    }
    /* Assigned after setjmp and used after a longjmp, hence volatile (C11 7.13.2.1). */
    uint8_t *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        free(pixels);
        free(rows);
        return failure->status;
    }
    png_init_io(png, file);
    png_set_sig_bytes(png, 8);
    png_set_user_limits(png, RGB_IMAGE_MAX_SIDE, RGB_IMAGE_MAX_SIDE);
    png_read_info(png, info);
    png_set_expand(png);      /* palette -> RGB, grey < 8 bits -> 8 bits, tRNS -> alpha */
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    if ((uint64_t)w * h > RGB_IMAGE_MAX_PIXELS || png_get_rowbytes(png, info) != (size_t)w * 3)
        png_error(png, "image too large or not 8-bit RGB after conversion");
    pixels = malloc((size_t)w * h * 3);
    rows = malloc((size_t)h * sizeof(png_bytep));
    if (!pixels || !rows) {
        failure->status = VKATTN_ERROR_OUT_OF_HOST_MEMORY;
        png_error(png, "out of host memory for the pixels");
    }
    for (uint32_t y = 0; y < h; y++) rows[y] = pixels + (size_t)y * w * 3;
    png_read_image(png, rows);
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    out->width = w, out->height = h, out->pixels = pixels;
    return VKATTN_OK;
}

vkattn_status rgb_image_read_png(const char *path, rgb_image *out, vkattn_error *error)
{
    if (!path || !out) return image_error(error, VKATTN_ERROR_INVALID_ARGUMENT, "reading a PNG needs a path");
    FILE *file = fopen(path, "rb");
    if (!file) return image_error(error, VKATTN_ERROR_IO, "cannot open %s: %s", path, strerror(errno));
    unsigned char signature[8];
    if (fread(signature, 1, sizeof signature, file) != sizeof signature || png_sig_cmp(signature, 0, 8)) {
        fclose(file);
        return image_error(error, VKATTN_ERROR_FORMAT, "%s is not a PNG file", path);
    }
    png_failure failure = {.status = VKATTN_ERROR_FORMAT};
    rgb_image image = {0};
    vkattn_status status = decode_png(file, &image, &failure);
    fclose(file);
    if (status != VKATTN_OK) return image_error(error, status, "reading %s: %s", path, failure.message);
    *out = image;
    return VKATTN_OK;
}
