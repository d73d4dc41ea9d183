/* PNG and SVG pictures through cairo (see canvas.h). Files are written through a stream callback,
 * not cairo's own file functions, so that a failed write keeps its errno ("No space left on
 * device") for the message. */
#define _POSIX_C_SOURCE 200809L
#include "canvas.h"

#include <cairo-svg.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define HALF_PI 1.57079632679489661923 /* M_PI is not C11 */

vkattn_status canvas_error(vkattn_error *error, vkattn_status status, const char *format, ...)
{
    if (!error) return status;
    error->status = status;
    va_list args;
    va_start(args, format);
    vsnprintf(error->message, sizeof error->message, format, args);
    va_end(args);
    return status;
}

static vkattn_status status_of(cairo_status_t s)
{
    switch (s) {
    case CAIRO_STATUS_SUCCESS: return VKATTN_OK;
    case CAIRO_STATUS_NO_MEMORY: return VKATTN_ERROR_OUT_OF_HOST_MEMORY;
    case CAIRO_STATUS_WRITE_ERROR:
    case CAIRO_STATUS_READ_ERROR:
    case CAIRO_STATUS_FILE_NOT_FOUND: return VKATTN_ERROR_IO;
    default: return VKATTN_ERROR_INVALID_ARGUMENT;
    }
}

canvas_format canvas_format_of(const char *path)
{
    size_t n = path ? strlen(path) : 0;
    if (n > 4 && strcasecmp(path + n - 4, ".png") == 0) return CANVAS_PNG;
    if (n > 4 && strcasecmp(path + n - 4, ".svg") == 0) return CANVAS_SVG;
    return CANVAS_NONE;
}

/* A partial file is removed after a failed write, but only a regular file (or one that did not
 * exist before): never a device such as /dev/full or a FIFO the caller pointed us at. */
static int removable(const char *path)
{
    struct stat st;
    return stat(path, &st) != 0 || S_ISREG(st.st_mode);
}

static cairo_status_t write_chunk(void *closure, const unsigned char *data, unsigned int length)
{
    canvas *c = closure;
    errno = 0;
    if (fwrite(data, 1, length, c->file) == length) return CAIRO_STATUS_SUCCESS;
    if (!c->write_errno) c->write_errno = errno ? errno : EIO;
    return CAIRO_STATUS_WRITE_ERROR;
}

/* Grey anti-aliasing (no colour fringes) and hinted metrics, the same on every surface so that
 * text measured on a scratch context has the widths it is drawn with. */
static void set_font_options(cairo_t *cr)
{
    cairo_font_options_t *o = cairo_font_options_create();
    cairo_font_options_set_antialias(o, CAIRO_ANTIALIAS_GRAY);
    cairo_font_options_set_hint_style(o, CAIRO_HINT_STYLE_SLIGHT);
    cairo_font_options_set_hint_metrics(o, CAIRO_HINT_METRICS_ON);
    cairo_set_font_options(cr, o);
    cairo_font_options_destroy(o);
}

vkattn_status canvas_open(canvas *c, canvas_format format, const char *path, uint32_t width, uint32_t height,
                          vkattn_error *error)
{
    memset(c, 0, sizeof *c);
    if ((format != CANVAS_PNG && format != CANVAS_SVG) || (path ? !*path : format == CANVAS_SVG))
        return canvas_error(error, VKATTN_ERROR_INVALID_ARGUMENT,
                            "a picture needs a PNG or SVG format and a file name");
    if (width < 1 || height < 1 || width > CANVAS_MAX_SIDE || height > CANVAS_MAX_SIDE ||
        (uint64_t)width * height > CANVAS_MAX_PIXELS)
        return canvas_error(error, VKATTN_ERROR_INVALID_ARGUMENT,
                            "a picture of %u x %u pixels is outside the limits (at most %u per side, %u pixels)",
                            width, height, CANVAS_MAX_SIDE, CANVAS_MAX_PIXELS);
    c->format = format, c->width = width, c->height = height, c->path = path;
    if (format == CANVAS_SVG) {
        c->may_remove = removable(path);
        if (!(c->file = fopen(path, "wb")))
            return canvas_error(error, VKATTN_ERROR_IO, "cannot create %s: %s", path, strerror(errno));
        c->surface = cairo_svg_surface_create_for_stream(write_chunk, c, width, height);
        cairo_svg_surface_set_document_unit(c->surface, CAIRO_SVG_UNIT_PX);
    } else {
        c->surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)width, (int)height);
    }
    c->cr = cairo_create(c->surface); /* a surface's error carries over into the context */
    cairo_status_t s = cairo_status(c->cr);
    if (s != CAIRO_STATUS_SUCCESS) {
        int remove_file = c->file && c->may_remove;
        canvas_destroy(c);
        if (remove_file) remove(path);
        return canvas_error(error, status_of(s), "creating a %u x %u picture: %s", width, height,
                            cairo_status_to_string(s));
    }
    set_font_options(c->cr);
    cairo_set_source_rgb(c->cr, 1, 1, 1);
    cairo_paint(c->cr);
    return VKATTN_OK;
}

vkattn_status canvas_open_measure(canvas *c, vkattn_error *error)
{
    return canvas_open(c, CANVAS_PNG, NULL, 1, 1, error);
}

/* Closes the file, keeping the first error's errno. */
static void close_file(canvas *c)
{
    if (!c->file) return;
    if ((fflush(c->file) != 0 || ferror(c->file)) && !c->write_errno) c->write_errno = errno ? errno : EIO;
    if (fclose(c->file) != 0 && !c->write_errno) c->write_errno = errno ? errno : EIO;
    c->file = NULL;
}

vkattn_status canvas_finish(canvas *c, vkattn_error *error)
{
    cairo_status_t s = cairo_status(c->cr);
    if (s == CAIRO_STATUS_SUCCESS && c->format == CANVAS_SVG) {
        cairo_surface_finish(c->surface); /* the rest of the document goes out now */
        s = cairo_surface_status(c->surface);
    } else if (s == CAIRO_STATUS_SUCCESS && c->path) {
        c->may_remove = removable(c->path);
        if (!(c->file = fopen(c->path, "wb")))
            return canvas_error(error, VKATTN_ERROR_IO, "cannot create %s: %s", c->path, strerror(errno));
        cairo_surface_flush(c->surface);
        s = cairo_surface_write_to_png_stream(c->surface, write_chunk, c);
    }
    close_file(c); /* buffered bytes reach the file only now, so a full disk may show up only here */
    if (s == CAIRO_STATUS_SUCCESS && !c->write_errno) return VKATTN_OK;
    if (c->path && c->may_remove) remove(c->path);
    if (c->write_errno)
        return canvas_error(error, VKATTN_ERROR_IO, "writing %s: %s", c->path, strerror(c->write_errno));
    return canvas_error(error, status_of(s), "drawing %s: %s", c->path ? c->path : "a picture",
                        cairo_status_to_string(s));
}

void canvas_destroy(canvas *c)
{
    if (!c) return;
    if (c->cr) cairo_destroy(c->cr);
    if (c->surface) cairo_surface_destroy(c->surface); /* an SVG surface still writes its end here */
    if (c->file) fclose(c->file);
    memset(c, 0, sizeof *c);
}

/* ---------------------------------------------------------------------------------------------- */
/* Text                                                                                            */
/* ---------------------------------------------------------------------------------------------- */

/* Bytes in the valid UTF-8 sequence at s, or 0 if none starts there (overlong forms, surrogates
 * and values past U+10FFFF are not valid). A NUL byte ends any sequence, so s is never overread. */
static size_t utf8_length(const unsigned char *s)
{
    const unsigned c = s[0];
    const size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n <= 1) return n;
    uint32_t cp = c & (0x7Fu >> n);
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    static const uint32_t smallest[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < smallest[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

size_t canvas_clean_text(const char *text, size_t max_chars, char *buf, size_t size)
{
    const unsigned char *s = (const unsigned char *)(text ? text : "");
    size_t total = 0;
    for (const unsigned char *p = s; *p; total++) {
        size_t n = utf8_length(p);
        p += n ? n : 1;
    }
    size_t keep = max_chars && total > max_chars ? (max_chars > 2 ? max_chars - 2 : 0) : total;
    size_t at = 0, chars = 0;
    for (; *s && chars < keep; chars++) {
        size_t n = utf8_length(s);
        int plain = n > 1 || (n == 1 && *s >= 0x20 && *s != 0x7F);
        if (at + (plain ? n : 1) + 3 > size) break; /* room for ".." and the NUL */
        if (plain) memcpy(buf + at, s, n);
        else buf[at] = '?';
        at += plain ? n : 1;
        s += n ? n : 1;
    }
    if (chars < total) buf[at++] = '.', buf[at++] = '.', chars += 2;
    buf[at] = '\0';
    return chars;
}

void canvas_font(cairo_t *cr, double size, int bold)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

canvas_metrics canvas_font_metrics(cairo_t *cr)
{
    cairo_font_extents_t f;
    cairo_text_extents_t h;
    cairo_font_extents(cr, &f);
    cairo_text_extents(cr, "H", &h);
    canvas_metrics m = {f.ascent, f.descent, -h.y_bearing};
    return m;
}

double canvas_text_width(cairo_t *cr, const char *text)
{
    char buf[CANVAS_TEXT_MAX];
    cairo_text_extents_t e;
    canvas_clean_text(text, 0, buf, sizeof buf);
    cairo_text_extents(cr, buf, &e);
    return e.x_advance;
}

void canvas_text(cairo_t *cr, double x, double y, const char *text, canvas_align align)
{
    char buf[CANVAS_TEXT_MAX];
    cairo_text_extents_t e;
    canvas_clean_text(text, 0, buf, sizeof buf);
    cairo_text_extents(cr, buf, &e);
    double shift = align == CANVAS_CENTER ? e.x_advance / 2 : align == CANVAS_RIGHT ? e.x_advance : 0;
    cairo_move_to(cr, x - shift, y);
    cairo_show_text(cr, buf);
    cairo_new_path(cr); /* show_text leaves a current point behind */
}

void canvas_text_up(cairo_t *cr, double x, double y, const char *text, canvas_align align)
{
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, -HALF_PI);
    canvas_text(cr, 0, 0, text, align);
    cairo_restore(cr);
}

void canvas_line(cairo_t *cr, double x0, double y0, double x1, double y1, double width)
{
    cairo_set_line_width(cr, width);
    cairo_move_to(cr, x0, y0);
    cairo_line_to(cr, x1, y1);
    cairo_stroke(cr);
}

void canvas_set_color(cairo_t *cr, rgb_color c)
{
    cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0);
}

double canvas_nice_step(double raw)
{
    const double mag = pow(10, floor(log10(raw))), mantissa[3] = {1, 2, 5};
    for (int k = 0; k < 3; k++)
        if (mantissa[k] * mag >= raw) return mantissa[k] * mag;
    return 10 * mag;
}
