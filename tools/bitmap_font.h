/* A small bitmap font for the CLI's images: printable ASCII, 5x9 glyphs (7 rows of capital height
 * plus 2 rows of descenders) on a 6-pixel advance. Bytes outside printable ASCII are drawn as '?':
 * one '?' per UTF-8 sequence (a lead byte with its continuation bytes) and per control byte. */
#ifndef VKATTN_BITMAP_FONT_H
#define VKATTN_BITMAP_FONT_H

#include <stddef.h>

#define BITMAP_FONT_GLYPH_WIDTH 5  /* pixels a glyph may set, from the pen position */
#define BITMAP_FONT_HEIGHT 9       /* rows 0..6 capital height, 7..8 descenders */
#define BITMAP_FONT_ADVANCE 6      /* pen step per character: glyph width + 1 pixel of spacing */
#define BITMAP_FONT_LINE 11        /* baseline-to-baseline distance for stacked lines */

/* The next character to draw from *text, advancing *text past it (past a whole UTF-8 sequence for
 * non-ASCII bytes, which give '?'); 0 at the end of the string. */
char bitmap_font_next(const char **text);

/* 1 if pixel (x, y) of the glyph for `c` is set, 0 if not or if (x, y) lies outside the 5x9 box.
 * Characters outside printable ASCII give the '?' glyph. */
int bitmap_font_pixel(char c, int x, int y);

/* Characters bitmap_font_next would draw for `text` (at most `max_chars` counted; 0 = no limit). */
size_t bitmap_font_length(const char *text, size_t max_chars);

/* Width in pixels of `text` drawn at scale 1: characters * BITMAP_FONT_ADVANCE - 1 (0 when empty). */
size_t bitmap_font_text_width(const char *text);

#endif
